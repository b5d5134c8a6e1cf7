"""Annotate page (arrives with its issue)."""

import streamlit as st

st.title("Annotate")
st.info("Coming soon.")
