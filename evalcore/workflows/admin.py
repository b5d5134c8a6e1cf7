"""Running the server: accounts and their project memberships, the sign-in rules of single sign-on,
the API-key variable names and endpoint hosts allowed, and the audit log. For server admins only.

Every function checks the caller against the database first and refuses anyone who is not a server
admin at that moment (:func:`~evalcore.workflows._session.require_admin`); every change then goes
through the store acting as that admin, which checks it again and writes the audit log.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pandas as pd

from evalcore.errors import ConfigError
from evalcore.store import (
    OIDC_MATCHES,
    ROLE_LABELS,
    ROLES,
    ProjectRecord,
    Role,
    UserRecord,
    check_oidc_rules,
)
from evalcore.words import plural
from evalcore.workflows._session import Caller, Session, caller, require_admin

__all__ = [
    "AUDIT_ACTIONS",
    "MEMBER_ROLES",
    "NO_ROLE",
    "OIDC_COLUMNS",
    "OIDC_MATCHES",
    "ROLES",
    "ROLE_LABELS",
    "Audit",
    "ServerSettings",
    "Users",
    "add_user",
    "audit",
    "audit_text",
    "oidc_rules_frame",
    "oidc_rules_from",
    "reset_password",
    "save_memberships",
    "save_server_settings",
    "server_settings",
    "set_disabled",
    "set_role",
    "users",
    "users_table",
]

#: The choice "not a member of this project" in a membership picker.
NO_ROLE: Final = "(not a member)"
#: The roles a membership can give (an admin's role is server-wide, never a membership).
MEMBER_ROLES: Final[tuple[Role, ...]] = tuple(r for r in ROLES if r != "admin")
#: The actions the audit log records, for its filter.
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
#: The columns of the OIDC rules table.
OIDC_COLUMNS: Final = ("match", "value", "role", "project")
#: How many audit entries the page shows.
AUDIT_LIMIT: Final = 500

PASSWORDS_DIFFER: Final = "The two passwords differ"


def _admin(session: Session) -> Caller:
    who = caller(session)
    require_admin(who)
    return who


# --- users ----------------------------------------------------------------------------------------


def users_table(found: Sequence[UserRecord]) -> pd.DataFrame:
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
            for u in found
        ],
        columns=["name", "role", "email", "source", "state", "last sign-in", "projects"],
    )


@dataclass(frozen=True)
class Users:
    """The accounts, as a table and as records, the projects memberships can name, and the caller."""

    table: pd.DataFrame
    records: tuple[UserRecord, ...]
    projects: tuple[ProjectRecord, ...]
    me: str

    def user(self, name: str) -> UserRecord | None:
        return next((u for u in self.records if u.name == name), None)

    def membership(self, user: UserRecord, project_id: int) -> str:
        """The user's role in a project, or :data:`NO_ROLE`."""
        held = {m.project_id: m.role for m in user.memberships}
        return held.get(project_id, NO_ROLE)

    def may_disable(self, user: UserRecord) -> bool:
        """An admin may not disable their own account (someone must be able to sign in)."""
        return user.name != self.me


def users(session: Session) -> Users:
    """Every account and every project (server admins only)."""
    who = _admin(session)
    found = tuple(who.store.list_users())
    return Users(users_table(found), found, tuple(who.store.list_projects()), who.name)


def _same(password: str, again: str, what: str) -> None:
    if password != again:
        raise ConfigError(f"{PASSWORDS_DIFFER}; {what}.")


def add_user(
    session: Session,
    name: str,
    *,
    role: Role,
    password: str,
    again: str,
    email: str | None = None,
) -> str:
    """Add a local account (the password typed twice); returns what was done, in words."""
    who = _admin(session)
    _same(password, again, "the user was not added")
    who.store.add_user(name, role=role, password=password, email=(email or "").strip() or None)
    return f"Added {name.strip()!r} as {ROLE_LABELS[role].lower()}."


def set_role(session: Session, name: str, role: Role) -> str:
    """Give a user ``role`` in every project (``admin``: the whole server)."""
    _admin(session).store.set_role(name, role)
    return f"{name} is now {ROLE_LABELS[role].lower()}."


def save_memberships(session: Session, name: str, roles: Mapping[int, str]) -> str:
    """Set a user's role in each project of ``roles`` (:data:`NO_ROLE` removes them); only the
    projects whose role changes are written."""
    who = _admin(session)
    user = who.store.get_user(name)
    held = {m.project_id: m.role for m in user.memberships}
    changed = {p: r for p, r in roles.items() if r != held.get(p, NO_ROLE)}
    for project_id, role in changed.items():
        if role != NO_ROLE and role not in MEMBER_ROLES:
            raise ConfigError(f"A membership role is one of {', '.join(MEMBER_ROLES)}.")
        who.store.set_membership(name, project_id, None if role == NO_ROLE else role)  # type: ignore[arg-type]
    return f"{name}'s memberships saved ({plural(len(changed), 'change')})."


def set_disabled(session: Session, name: str, disabled: bool) -> str:
    """Disable an account (its sessions end at their next call) or enable it again."""
    who = _admin(session)
    if disabled and name == who.name:
        raise ConfigError("You cannot disable your own account.")
    who.store.disable_user(name, disabled)
    return f"{name} can no longer sign in." if disabled else f"{name} may sign in again."


def reset_password(session: Session, name: str, password: str, again: str) -> str:
    """Give a user a new password (typed twice); it also lifts a lock from failed sign-ins."""
    who = _admin(session)
    _same(password, again, "the password was not changed")
    who.store.reset_password(name, password)
    return f"{name}'s password was reset."


# --- server settings ------------------------------------------------------------------------------


def oidc_rules_frame(rules: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The OIDC rules as an editable table (an empty project cell: every project)."""
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


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


@dataclass(frozen=True)
class ServerSettings:
    """The server's sign-in rules and endpoint policy as the forms show them."""

    oidc_rules: pd.DataFrame
    key_names: str
    hosts: str


def _text_list(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "\n".join(str(v) for v in value or ())


def server_settings(session: Session) -> ServerSettings:
    """The stored settings (a :class:`ConfigError` when a stored value cannot be read)."""
    who = _admin(session)
    return ServerSettings(
        oidc_rules_frame(who.store.get_server_setting("oidc_rules", None) or []),
        _text_list(who.store.get_server_setting("allowed_key_names", None)),
        _text_list(who.store.get_server_setting("endpoint_hosts", None)),
    )


def save_server_settings(
    session: Session, oidc_rules: pd.DataFrame, key_names: str, hosts: str
) -> str:
    """Check and save the OIDC rules, the allowed key variable names (one a line) and the endpoint
    hosts (one a line; none: any host). The rules are checked before anything is written."""
    who = _admin(session)
    rules = check_oidc_rules(oidc_rules_from(oidc_rules))
    who.store.set_oidc_rules(rules)
    who.store.set_server_setting("allowed_key_names", _lines(key_names))
    who.store.set_server_setting("endpoint_hosts", _lines(hosts))
    return "Server settings saved."


# --- the audit log ---------------------------------------------------------------------------------


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


@dataclass(frozen=True)
class Audit:
    """The newest entries of the audit log (one action's, or every action's), as text."""

    entries: int
    text: str


def audit(session: Session, action: str | None = None) -> Audit:
    """The newest :data:`AUDIT_LIMIT` entries, newest first; only ``action``'s when given."""
    frame = _admin(session).store.audit_log(limit=AUDIT_LIMIT, action=action)
    return Audit(len(frame), audit_text(frame))
