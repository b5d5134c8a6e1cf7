"""Judge page (arrives with its issue)."""

import streamlit as st

st.title("Judge")
st.info("Coming soon.")
