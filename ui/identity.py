"""Sign-in (a name and a role, until the teams issue adds login) and the identity sidebar."""

from __future__ import annotations

import streamlit as st

from ui import state
from ui.render import md_escape


def sign_in_page() -> None:
    st.title("evalcore")
    st.markdown(
        "Calibrate your LLM judge against people. Choose your name and role to start; they stay in "
        "this browser tab's address, so a refresh keeps you where you were."
    )
    with st.form(state.App.SIGN_IN):
        name = st.text_input("Your name", key=state.App.SIGN_IN_NAME, max_chars=64)
        role = st.radio(
            "Role",
            state.ROLES,
            format_func=lambda r: state.ROLE_LABELS[r],
            key=state.App.SIGN_IN_ROLE,
            horizontal=True,
        )
        submitted = st.form_submit_button("Continue", type="primary")
    if submitted:
        if not name.strip():
            st.error("Enter a name.")
            return
        state.set_identity(name, role)
        st.rerun()


def identity_sidebar(who: state.Identity) -> None:
    with st.sidebar:
        st.caption(f"Signed in as **{md_escape(who.name)}** · {state.ROLE_LABELS[who.role]}")
        if st.button("Sign out", key=state.App.SIGN_OUT, type="tertiary"):
            state.clear_identity()
            st.rerun()
