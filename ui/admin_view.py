"""The Admin page's parts: users and their memberships, server settings, the audit log.

Everything shown comes from :mod:`evalcore.workflows.admin`, and every change is one call there,
made in a guarded callback: the caller is checked as a server admin at the moment of the click.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from evalcore.workflows import Session
from evalcore.workflows import admin as flow
from evalcore.workflows.admin import ROLE_LABELS, ROLES, Users
from ui.state import Admin as K
from ui.state import key
from ui.widgets import attempt, callback, note, run_command, show_note


def _role_text(role: str) -> str:
    return role if role == flow.NO_ROLE else ROLE_LABELS[role]  # type: ignore[index]


def _value(name: str) -> Any:
    return st.session_state.get(name)


# --- users ----------------------------------------------------------------------------------------


def _add_user_form(session: Session) -> None:
    with st.form(K.ADD, clear_on_submit=True):
        c1, c2, c3 = st.columns(3)
        c1.text_input("New user's name", key=K.ADD_NAME, max_chars=200)
        c2.text_input("E-mail (optional)", key=K.ADD_EMAIL)
        c3.selectbox("Role", ROLES, format_func=ROLE_LABELS.__getitem__, key=K.ADD_ROLE, index=1)
        c1, c2 = st.columns(2)
        c1.text_input("Password", type="password", key=K.ADD_PASSWORD)
        c2.text_input("Password again", type="password", key=K.ADD_PASSWORD2)
        st.form_submit_button(
            "Add user",
            type="primary",
            on_click=run_command,
            args=(flow.add_user, session),
            kwargs={"role": K.ADD_ROLE, "password": K.ADD_PASSWORD, "again": K.ADD_PASSWORD2,
                    "email": K.ADD_EMAIL, "name": K.ADD_NAME},
        )  # fmt: skip


def _role_editor(session: Session, user: Any) -> None:
    c1, c2 = st.columns([2, 1], vertical_alignment="bottom")
    c1.selectbox(
        f"{user.name}'s role in every project",
        ROLES,
        index=ROLES.index(user.role) if user.role in ROLES else 1,
        format_func=ROLE_LABELS.__getitem__,
        key=key(K.ROLE, user.id),
    )
    c2.button("Save role", key=key(K.ROLE_SAVE, user.id), on_click=run_command,
              args=(flow.set_role, session, user.name),
              kwargs={"role": key(K.ROLE, user.id), "forget": (key(K.ROLE, user.id),)})  # fmt: skip


@callback
def _save_memberships(session: Session, name: str, user_id: int, projects: list[int]) -> None:
    widgets = {p: key(K.MEMBERSHIP, user_id, p) for p in projects}
    note(
        "success", flow.save_memberships(session, name, {p: _value(w) for p, w in widgets.items()})
    )
    for widget in widgets.values():
        st.session_state.pop(widget, None)


def _membership_editor(session: Session, found: Users, user: Any) -> None:
    if user.role == "admin":
        st.caption("An admin administers every project; memberships do not apply.")
        return
    options = [flow.NO_ROLE, *flow.MEMBER_ROLES]
    columns = st.columns(3)
    for number, project in enumerate(found.projects):
        current = found.membership(user, project.id)
        columns[number % 3].selectbox(
            project.name,
            options,
            index=options.index(current) if current in options else 0,
            format_func=_role_text,
            key=key(K.MEMBERSHIP, user.id, project.id),
        )
    st.button("Save memberships", key=key(K.MEMBERSHIP_SAVE, user.id), on_click=_save_memberships,
              args=(session, user.name, user.id, [p.id for p in found.projects]))  # fmt: skip


def _access_editor(session: Session, found: Users, user: Any) -> None:
    c1, c2 = st.columns(2)
    if not found.may_disable(user):
        c1.caption("You cannot disable your own account.")
    else:
        c1.button(
            "Enable account" if user.disabled else "Disable account",
            key=key(K.DISABLE, user.id),
            on_click=run_command,
            args=(flow.set_disabled, session, user.name, not user.disabled),
        )
    with c2.form(key(K.RESET, user.id), clear_on_submit=True):
        st.text_input("New password", type="password", key=key(K.RESET_PASSWORD, user.id))
        st.text_input("New password again", type="password", key=key(K.RESET_PASSWORD2, user.id))
        st.form_submit_button("Reset password", on_click=run_command,
                              args=(flow.reset_password, session, user.name),
                              kwargs={"password": key(K.RESET_PASSWORD, user.id),
                                      "again": key(K.RESET_PASSWORD2, user.id)})  # fmt: skip


def users_section(session: Session) -> None:
    found = flow.users(session)
    st.dataframe(found.table, hide_index=True, key=K.USERS_TABLE, width="stretch")
    st.markdown("**Add a user**")
    _add_user_form(session)
    if not found.records:
        return
    st.markdown("**Change a user**")
    names = [u.name for u in found.records]
    if _value(K.USER) not in names:
        st.session_state[K.USER] = names[0]
    user = found.user(st.selectbox("User", names, key=K.USER))
    _role_editor(session, user)
    _membership_editor(session, found, user)
    _access_editor(session, found, user)


# --- server settings ------------------------------------------------------------------------------


def settings_section(session: Session) -> None:
    found = attempt(lambda: flow.server_settings(session), title="A stored setting is unreadable")
    if found is None:
        return
    st.markdown("**Sign-in with OIDC: who gets which role**")
    st.caption(
        "Each rule matches an e-mail address, a domain or a group claim and gives a role, in one "
        "project or (no project) in every project. The most privileged matching role wins."
    )
    rules = st.data_editor(
        found.oidc_rules,
        key=K.OIDC_RULES,
        num_rows="dynamic",
        hide_index=True,
        column_config={
            "match": st.column_config.SelectboxColumn("match", options=list(flow.OIDC_MATCHES)),
            "value": st.column_config.TextColumn("value"),
            "role": st.column_config.SelectboxColumn("role", options=list(ROLES)),
            "project": st.column_config.TextColumn("project (empty: every project)"),
        },
    )
    st.markdown("**Endpoints**")
    c1, c2 = st.columns(2)
    names = c1.text_area(
        "Allowed API-key variable names, one a line",
        value=found.key_names,
        key=K.KEY_NAMES,
        help="Names ending in _API_KEY are allowed already; evalcore's own, database and cloud "
        "credential variables never are.",
    )
    hosts = c2.text_area(
        "Hosts endpoint base URLs may name, one a line (empty: any host)",
        value=found.hosts,
        key=K.HOSTS,
        help="api.openai.com, or .example.com for every subdomain of example.com.",
    )
    if st.button("Save server settings", key=K.SETTINGS_SAVE, type="primary"):
        done = attempt(
            lambda: flow.save_server_settings(session, pd.DataFrame(rules), names, hosts),
            title="The server settings were not saved",
        )
        if done:
            note("success", done)
            for widget in (K.OIDC_RULES, K.KEY_NAMES, K.HOSTS):
                st.session_state.pop(widget, None)
            st.rerun()


# --- the audit log --------------------------------------------------------------------------------


def audit_section(session: Session) -> None:
    action = st.selectbox(
        "Action",
        [None, *flow.AUDIT_ACTIONS],
        format_func=lambda a: a or "every action",
        key=K.AUDIT_ACTION,
    )
    found = flow.audit(session, action)
    if not found.entries:
        st.info("Nothing recorded yet for this choice.")
        return
    st.caption(f"The latest {found.entries} entries, newest first.")
    with st.container(key=K.AUDIT_LOG):
        st.code(found.text, language=None, wrap_lines=True)


def admin_page(session: Session) -> None:
    """The whole Admin page."""
    show_note()
    users, settings, log = st.tabs(["Users", "Server settings", "Audit log"])
    with users:
        users_section(session)
    with settings:
        settings_section(session)
    with log:
        audit_section(session)
