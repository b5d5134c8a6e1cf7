"""Datasets page (arrives with its issue)."""

import streamlit as st

st.title("Datasets")
st.info("Coming soon.")
