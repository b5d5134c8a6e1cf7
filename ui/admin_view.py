"""The Admin page's parts (server administrators only): users and their project memberships, the
server settings (OIDC role rules, allowed API-key variable names, endpoint hosts), the audit log.

Every change goes through the guarded store, which refuses it to anyone but an admin and writes
the audit log. The page's session-state keys are the constants of :class:`ui.state.Admin`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Final

import pandas as pd
import streamlit as st

from evalcore.errors import ConfigError, EvalcoreError
from evalcore.store import ROLE_LABELS, ROLES, ProjectRecord, Store, UserRecord
from ui.render import md_escape, show_error
from ui.state import Admin as K
from ui.state import key

NO_ROLE: Final = "(not a member)"
AUDIT_ACTIONS: Final = (
    "sign_in",
    "sign_in_failed",
    "user_added",
    "role_changed",
    "membership_changed",
    "user_disabled",
    "password_reset",
    "endpoint_changed",
    "setting_changed",
    "deleted",
    "export",
    "project_exported",
    "project_imported",
)
OIDC_COLUMNS: Final = ("match", "value", "role", "project")


def _flash(level: str, text: str) -> None:
    st.session_state[K.FLASH] = (level, text)


def show_flash() -> None:
    flash = st.session_state.pop(K.FLASH, None)
    if flash:
        level, text = flash
        (st.success if level == "success" else st.error)(md_escape(text))


def _attempt(action: Callable[[], Any], done: str) -> bool:
    """Run one change; flash ``done`` or the error's message. Whether it worked."""
    try:
        action()
    except EvalcoreError as exc:
        _flash("error", str(exc))
        return False
    _flash("success", done)
    return True


# --- users ----------------------------------------------------------------------------------------


def users_table(users: Sequence[UserRecord]) -> pd.DataFrame:
    """One row per account: role, where it comes from, its state and its projects."""
    return pd.DataFrame(
        [
            {
                "name": u.name,
                "role": ROLE_LABELS.get(u.role, u.role),  # type: ignore[call-overload]
                "email": u.email or "",
                "source": u.source,
                "state": "disabled" if u.disabled else "locked" if u.is_locked() else "active",
                "last sign-in": ""
                if u.last_sign_in_at is None
                else f"{u.last_sign_in_at:%Y-%m-%d %H:%M}",
                "projects": ", ".join(f"{m.project_name} ({m.role})" for m in u.memberships),
            }
            for u in users
        ],
        columns=["name", "role", "email", "source", "state", "last sign-in", "projects"],
    )


def add_user_form(store: Store) -> None:
    """A new local account: name, optional e-mail, role, and the password typed twice."""
    with st.form(K.ADD, clear_on_submit=True):
        c1, c2, c3 = st.columns(3)
        name = c1.text_input("New user's name", key=K.ADD_NAME, max_chars=200)
        email = c2.text_input("E-mail (optional)", key=K.ADD_EMAIL)
        role = c3.selectbox(
            "Role", ROLES, format_func=lambda r: ROLE_LABELS[r], key=K.ADD_ROLE, index=1
        )
        c1, c2 = st.columns(2)
        password = c1.text_input("Password", type="password", key=K.ADD_PASSWORD)
        again = c2.text_input("Password again", type="password", key=K.ADD_PASSWORD2)
        added = st.form_submit_button("Add user", type="primary")
    if not added:
        return
    if password != again:
        _flash("error", "The two passwords differ; the user was not added.")
    else:
        _attempt(
            lambda: store.add_user(name, role=role, password=password, email=email.strip() or None),
            f"Added {name.strip()!r} as {ROLE_LABELS[role].lower()}.",
        )
    st.rerun()


def _role_editor(store: Store, user: UserRecord) -> None:
    c1, c2 = st.columns([2, 1], vertical_alignment="bottom")
    role = c1.selectbox(
        f"{user.name}'s role in every project",
        ROLES,
        index=ROLES.index(user.role) if user.role in ROLES else 1,  # type: ignore[arg-type]
        format_func=lambda r: ROLE_LABELS[r],
        key=key(K.ROLE, user.id),
    )
    if c2.button("Save role", key=key(K.ROLE_SAVE, user.id)):
        if _attempt(
            lambda: store.set_role(user.name, role),
            f"{user.name} is now {ROLE_LABELS[role].lower()}.",
        ):
            st.session_state.pop(key(K.ROLE, user.id), None)
        st.rerun()


def _membership_editor(store: Store, user: UserRecord, projects: Sequence[ProjectRecord]) -> None:
    if user.role == "admin":
        st.caption("An admin administers every project; memberships do not apply.")
        return
    held = {m.project_id: m.role for m in user.memberships}
    options: list[str] = [NO_ROLE, *ROLES[1:]]
    chosen: dict[int, str] = {}
    columns = st.columns(3)
    for number, project in enumerate(projects):
        current = held.get(project.id, NO_ROLE)
        chosen[project.id] = columns[number % 3].selectbox(
            project.name,
            options,
            index=options.index(current) if current in options else 0,
            format_func=lambda r: r if r == NO_ROLE else ROLE_LABELS[r],  # type: ignore[index]
            key=key(K.MEMBERSHIP, user.id, project.id),
        )
    if st.button("Save memberships", key=key(K.MEMBERSHIP_SAVE, user.id)):
        changed = {p: r for p, r in chosen.items() if r != held.get(p, NO_ROLE)}

        def save() -> None:
            for project_id, role in changed.items():
                store.set_membership(
                    user.name,
                    project_id,
                    None if role == NO_ROLE else role,  # type: ignore[arg-type]
                )

        if _attempt(save, f"{user.name}'s memberships saved ({len(changed)} changed)."):
            for project in projects:
                st.session_state.pop(key(K.MEMBERSHIP, user.id, project.id), None)
        st.rerun()


def _access_editor(store: Store, user: UserRecord, me: str) -> None:
    c1, c2 = st.columns(2)
    if user.disabled:
        if c1.button("Enable account", key=key(K.DISABLE, user.id)):
            _attempt(
                lambda: store.disable_user(user.name, False), f"{user.name} may sign in again."
            )
            st.rerun()
    elif user.name == me:
        c1.caption("You cannot disable your own account.")
    elif c1.button("Disable account", key=key(K.DISABLE, user.id)):
        _attempt(lambda: store.disable_user(user.name, True), f"{user.name} can no longer sign in.")
        st.rerun()
    with c2.form(key(K.RESET, user.id), clear_on_submit=True):
        password = st.text_input(
            "New password", type="password", key=key(K.RESET_PASSWORD, user.id)
        )
        again = st.text_input(
            "New password again", type="password", key=key(K.RESET_PASSWORD2, user.id)
        )
        reset = st.form_submit_button("Reset password")
    if reset:
        if password != again:
            _flash("error", "The two passwords differ; the password was not changed.")
        else:
            _attempt(
                lambda: store.reset_password(user.name, password),
                f"{user.name}'s password was reset.",
            )
        st.rerun()


def users_section(store: Store, me: str) -> None:
    users = store.list_users()
    st.dataframe(users_table(users), hide_index=True, key=K.USERS_TABLE, width="stretch")
    st.markdown("**Add a user**")
    add_user_form(store)
    if not users:
        return
    st.markdown("**Change a user**")
    by_name = {u.name: u for u in users}
    if st.session_state.get(K.USER) not in by_name:
        st.session_state[K.USER] = users[0].name
    chosen = by_name[st.selectbox("User", list(by_name), key=K.USER)]
    _role_editor(store, chosen)
    _membership_editor(store, chosen, store.list_projects())
    _access_editor(store, chosen, me)


# --- server settings ------------------------------------------------------------------------------


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def oidc_rules_frame(rules: Sequence[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(
        [{c: r.get(c) or "" for c in OIDC_COLUMNS} for r in rules], columns=list(OIDC_COLUMNS)
    )


def oidc_rules_from(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The edited table as rules (empty rows dropped, an empty project meaning every project)."""
    rules = []
    for row in frame.fillna("").to_dict("records"):
        if not any(str(row.get(c) or "").strip() for c in OIDC_COLUMNS):
            continue
        rules.append(
            {
                "match": str(row.get("match") or "").strip(),
                "value": str(row.get("value") or "").strip(),
                "role": str(row.get("role") or "").strip(),
                "project": str(row.get("project") or "").strip() or None,
            }
        )
    return rules


def settings_section(store: Store) -> None:
    st.markdown("**Sign-in with OIDC: who gets which role**")
    st.caption(
        "Each rule matches an e-mail address, a domain or a group claim and gives a role, in one "
        "project or (no project) in every project. The most privileged matching role wins."
    )
    rules = store.get_server_setting("oidc_rules", None) or []
    edited = st.data_editor(
        oidc_rules_frame(rules),
        key=K.OIDC_RULES,
        num_rows="dynamic",
        hide_index=True,
        column_config={
            "match": st.column_config.SelectboxColumn(
                "match", options=["email", "domain", "group"]
            ),
            "value": st.column_config.TextColumn("value"),
            "role": st.column_config.SelectboxColumn("role", options=list(ROLES)),
            "project": st.column_config.TextColumn("project (empty: every project)"),
        },
    )
    st.markdown("**Endpoints**")
    c1, c2 = st.columns(2)
    names = c1.text_area(
        "Allowed API-key variable names, one a line",
        value="\n".join(store.get_server_setting("allowed_key_names", None) or []),
        key=K.KEY_NAMES,
        help="Names ending in _API_KEY are allowed already; evalcore's own, database and cloud "
        "credential variables never are.",
    )
    hosts = c2.text_area(
        "Hosts endpoint base URLs may name, one a line (empty: any host)",
        value="\n".join(store.get_server_setting("endpoint_hosts", None) or []),
        key=K.HOSTS,
        help="api.openai.com, or .example.com for every subdomain of example.com.",
    )
    if st.button("Save server settings", key=K.SETTINGS_SAVE, type="primary"):

        def save() -> None:
            store.set_oidc_rules(oidc_rules_from(pd.DataFrame(edited)))
            store.set_server_setting("allowed_key_names", _lines(names))
            store.set_server_setting("endpoint_hosts", _lines(hosts))

        if _attempt(save, "Server settings saved."):
            for widget in (K.OIDC_RULES, K.KEY_NAMES, K.HOSTS):
                st.session_state.pop(widget, None)
        st.rerun()


# --- the audit log --------------------------------------------------------------------------------


def audit_text(frame: pd.DataFrame) -> str:
    """The audit log as plain lines: when, who, what, on what, where, and the details."""
    lines = []
    for row in frame.to_dict("records"):
        at = row.get("at")
        when = at.strftime("%Y-%m-%d %H:%M:%S") if hasattr(at, "strftime") else str(at)
        detail = row.get("detail")
        parts = [
            when,
            str(row.get("actor") or "-"),
            str(row.get("action") or ""),
            str(row.get("target") or ""),
        ]
        project = row.get("project_id")
        if project is not None and not pd.isna(project):
            parts.append(f"project {int(project)}")
        if detail:
            parts.append(json.dumps(detail, sort_keys=True, default=str))
        lines.append("  ".join(p for p in parts if p))
    return "\n".join(lines)


def audit_section(store: Store) -> None:
    action = st.selectbox(
        "Action",
        [None, *AUDIT_ACTIONS],
        format_func=lambda a: a or "every action",
        key=K.AUDIT_ACTION,
    )
    frame = store.audit_log(limit=500, action=action)
    if frame.empty:
        st.info("Nothing recorded yet for this choice.")
        return
    st.caption(f"The latest {len(frame)} entries, newest first.")
    with st.container(key=K.AUDIT_LOG):
        st.code(audit_text(frame), language=None, wrap_lines=True)


def admin_page(store: Store, me: str) -> None:
    """The whole Admin page."""
    show_flash()
    users, settings, audit = st.tabs(["Users", "Server settings", "Audit log"])
    with users:
        users_section(store, me)
    with settings:
        try:
            settings_section(store)
        except ConfigError as exc:  # a stored setting this version cannot read
            show_error(exc)
    with audit:
        audit_section(store)
