"""Settings page (arrives with its issue)."""

import streamlit as st

st.title("Settings")
st.info("Coming soon.")
