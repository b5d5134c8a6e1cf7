"""Reports page (arrives with its issue)."""

import streamlit as st

st.title("Reports")
st.info("Coming soon.")
