"""Process-wide resources the pages share: the store, the background judge worker, the project.

Caching sits here, at the boundary: one :class:`~evalcore.store.Store` and one
:class:`~evalcore.runs.RunWorker` per database URL and server process (``st.cache_resource``). The
first open of an empty database seeds the demo project (``EVALCORE_NO_DEMO=1`` starts empty).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import streamlit as st

from evalcore.demo.seed import ensure_demo
from evalcore.runs import RunWorker
from evalcore.store import DATABASE_URL_ENV, ProjectRecord, Store, default_database_url
from ui import state


def database_url() -> str:
    return os.environ.get(DATABASE_URL_ENV) or default_database_url()


@st.cache_resource(show_spinner="Opening the database…")
def _store(url: str) -> Store:
    store = Store.open(url)
    ensure_demo(store)
    return store


def get_store() -> Store:
    """The store of this server's database (opened, migrated and seeded once per process)."""
    return _store(database_url())


def _secrets() -> Mapping[str, Any]:
    """Streamlit secrets as a plain mapping (empty without a secrets file). Kept in memory only."""
    try:
        return {str(k): v for k, v in st.secrets.items()}
    except Exception:  # no secrets.toml: keys come from the environment
        return {}


@st.cache_resource(show_spinner=False)
def _worker(url: str) -> RunWorker:
    worker = RunWorker(_store(url), secrets=_secrets())
    worker.resume_stale()
    return worker


def get_worker() -> RunWorker:
    """The background worker that carries out judge runs in this server process."""
    return _worker(database_url())


def current_project(*, sidebar: bool = True) -> ProjectRecord | None:
    """The project the user works in (chosen in the sidebar; the first one by default)."""
    projects = get_store().list_projects()
    if not projects:
        return None
    by_id = {p.id: p for p in projects}
    chosen = st.session_state.get(state.PROJECT_ID)
    if chosen not in by_id:
        chosen = projects[0].id
    if sidebar and len(projects) > 1:
        chosen = st.sidebar.selectbox(
            "Project",
            list(by_id),
            index=list(by_id).index(chosen),
            format_func=lambda i: by_id[i].name,
            key="project_picker",
        )
    st.session_state[state.PROJECT_ID] = chosen
    return by_id[chosen]


def require_project() -> ProjectRecord:
    """The current project, or a hint and a stop when there is none (the router shows the picker)."""
    project = current_project(sidebar=False)
    if project is None:
        st.info("There is no project yet. Create one on the Datasets page.")
        st.stop()
    return project  # type: ignore[return-value]
