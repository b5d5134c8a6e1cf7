"""Session-state keys, their defaults, and who the user is.

Every key a page keeps in ``st.session_state`` is named here, so that pages and tests agree on them.
Identity lives in the session and in the URL (``?user=ana&role=annotator``) so that a refresh or a new
browser tab keeps it. Until the teams issue adds login, the role is chosen by the user; pages re-check it
on the server (``require_role``), not just by hiding navigation entries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

import streamlit as st

Role = Literal["annotator", "engineer", "manager"]

ROLES: Final[tuple[Role, ...]] = ("annotator", "engineer", "manager")
ROLE_LABELS: Final[dict[Role, str]] = {
    "annotator": "Annotator",
    "engineer": "Prompt engineer",
    "manager": "Manager",
}

# --- session-state keys --------------------------------------------------------------------------
# One convention for every page: a key is "<page>.<name>", declared once as a Final constant on the
# page's class below (widget keys and a page's own values alike). Keys made of parts (an item id, a
# metric name) come from ``key(Page.PREFIX, part, ...)``. Nothing outside this module spells a key.


def key(prefix: str, *parts: object) -> str:
    """A key made of parts under a page's prefix: ``key("calibrate", "heat", 3) == "calibrate.heat.3"``."""
    return ".".join((prefix, *(str(p) for p in parts)))


class App:
    """Who the user is and the current project (shared by every page)."""

    PREFIX: Final = "app"
    USER: Final = "app.user"
    ROLE: Final = "app.role"
    PROJECT_ID: Final = "app.project_id"


class Annotate:
    """The Annotate page (Home sets DATASET / CRITERION to open a queue)."""

    PREFIX: Final = "annotate"
    DATASET: Final = "annotate.dataset"
    CRITERION: Final = "annotate.criterion"
    OPENED: Final = "annotate.opened"  # queues ensure_queue has run for in this session
    POSITION: Final = "annotate.position"  # {(dataset, criterion, annotator): queue position shown}
    SHOWN: Final = "annotate.shown"  # (queue, position, item id, monotonic time first shown)
    NOTICE: Final = "annotate.notice"  # (level, text) shown once above the item


class Datasets:
    """The Datasets page."""

    PREFIX: Final = "datasets"
    NOTICE: Final = "datasets.notice"  # (level, text) shown once after a save


class Judge:
    """The Judge page."""

    PREFIX: Final = "judge"


class Calibrate:
    """The Calibrate page."""

    PREFIX: Final = "calibrate"


class Reports:
    """The Reports page."""

    PREFIX: Final = "reports"


class Settings:
    """The Settings page."""

    PREFIX: Final = "settings"


class Home:
    """The Home page."""

    PREFIX: Final = "home"


# The names the pages used before the per-page classes; kept until every caller uses the classes.
USER: Final = App.USER
ROLE: Final = App.ROLE
PROJECT_ID: Final = App.PROJECT_ID
ANN_DATASET: Final = Annotate.DATASET
ANN_CRITERION: Final = Annotate.CRITERION
ANN_OPENED: Final = Annotate.OPENED
ANN_POSITION: Final = Annotate.POSITION
ANN_SHOWN: Final = Annotate.SHOWN
ANN_NOTICE: Final = Annotate.NOTICE
DS_NOTICE: Final = Datasets.NOTICE


@dataclass(frozen=True)
class Identity:
    name: str
    role: Role


def _query(name: str) -> str | None:
    value = st.query_params.get(name)
    return value.strip() if isinstance(value, str) and value.strip() else None


def current_identity() -> Identity | None:
    """The user of this session, restored from the session or the URL; ``None`` until chosen."""
    name = st.session_state.get(USER) or _query("user")
    role = st.session_state.get(ROLE) or _query("role")
    if not name or role not in ROLES:
        return None
    st.session_state[USER] = name
    st.session_state[ROLE] = role
    # keep the URL in step, so the identity survives a refresh or a copied link
    if st.query_params.get("user") != name:
        st.query_params["user"] = name
    if st.query_params.get("role") != role:
        st.query_params["role"] = role
    return Identity(name=name, role=role)  # type: ignore[arg-type]


def set_identity(name: str, role: Role) -> None:
    st.session_state[USER] = name.strip()
    st.session_state[ROLE] = role
    st.query_params["user"] = name.strip()
    st.query_params["role"] = role


def clear_identity() -> None:
    for key in (USER, ROLE):
        st.session_state.pop(key, None)
    for key in ("user", "role"):
        if key in st.query_params:
            del st.query_params[key]


def require_role(*allowed: Role) -> Identity:
    """Stop the page unless the session's role is one of ``allowed`` (enforced on the server)."""
    who = current_identity()
    if who is None or who.role not in allowed:
        st.error("This page is not available to your role.")
        st.stop()
    return who  # type: ignore[return-value]
