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
USER: Final = "user"
ROLE: Final = "role"
PROJECT_ID: Final = "project_id"
# the Annotate page (Home sets ANN_DATASET / ANN_CRITERION to open a queue)
ANN_DATASET: Final = "ann_dataset"
ANN_CRITERION: Final = "ann_criterion"
ANN_OPENED: Final = "ann_opened"  # queues ensure_queue has run for in this session
ANN_POSITION: Final = "ann_position"  # {(dataset, criterion, annotator): queue position shown}
ANN_SHOWN: Final = "ann_shown"  # (queue, position, item id, monotonic time it was first shown)
ANN_NOTICE: Final = "ann_notice"  # (level, text) shown once above the item
# the Datasets page
DS_NOTICE: Final = "ds_notice"  # (level, text) shown once after a save


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
