"""Process-wide resources the pages share: the store, the background judge worker, the project.

The store and the worker themselves are cached in :mod:`ui.cache` (one of each per database URL and
server process); this module picks the database and the current project. The first open of an empty
database seeds the demo project (``EVALCORE_NO_DEMO=1`` starts empty).
"""

from __future__ import annotations

import os

import streamlit as st

from evalcore.runs import RunWorker
from evalcore.store import DATABASE_URL_ENV, ProjectRecord, Store, default_database_url
from ui import cache, state


def database_url() -> str:
    return os.environ.get(DATABASE_URL_ENV) or default_database_url()


def get_store() -> Store:
    """The store of this server's database (opened, migrated and seeded once per process)."""
    return cache.store(database_url())


def get_worker() -> RunWorker:
    """The background worker that carries out judge runs in this server process."""
    return cache.worker(database_url())


def current_project(*, sidebar: bool = True) -> ProjectRecord | None:
    """The project the user works in (chosen in the sidebar; the first one by default)."""
    projects = get_store().list_projects()
    if not projects:
        return None
    by_id = {p.id: p for p in projects}
    chosen = st.session_state.get(state.App.PROJECT_ID)
    if chosen not in by_id:
        chosen = projects[0].id
    if sidebar and len(projects) > 1:
        chosen = st.sidebar.selectbox(
            "Project",
            list(by_id),
            index=list(by_id).index(chosen),
            format_func=lambda i: by_id[i].name,
            key=state.App.PROJECT_PICKER,
        )
    st.session_state[state.App.PROJECT_ID] = chosen
    return by_id[chosen]


def require_project() -> ProjectRecord:
    """The current project, or a hint and a stop when there is none (the router shows the picker)."""
    project = current_project(sidebar=False)
    if project is None:
        st.info("There is no project yet. Create one on the Datasets page.")
        st.stop()
    return project  # type: ignore[return-value]
