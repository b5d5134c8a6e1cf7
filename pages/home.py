"""Home: where to start, for each role."""

import streamlit as st

from ui import state

who = state.require_role(*state.ROLES)
st.title("evalcore")
st.markdown("Know whether your LLM judge agrees with people before you trust it.")
