"""Process-wide resources the pages share: the store, the background judge worker, the project.

The store and the worker themselves are cached in :mod:`ui.cache` (one of each per database URL and
server process); this module picks the database and the current project. The first open of an empty
database seeds the demo project (``EVALCORE_NO_DEMO=1`` starts empty).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator

import streamlit as st

from evalcore.errors import EvalcoreError, PermissionDeniedError
from evalcore.runs import RunWorker
from evalcore.store import DATABASE_URL_ENV, Actor, ProjectRecord, Store, default_database_url
from ui import cache, state


def database_url() -> str:
    return os.environ.get(DATABASE_URL_ENV) or default_database_url()


def plain_store() -> Store:
    """The trusted store of this server's database (opened, migrated and seeded once per process):
    for signing in and for the background worker, never for a page's own calls."""
    return cache.store(database_url())


#: How old (seconds) the session's actor may be when a fragment or a callback uses it.
FRAGMENT_RELOAD_S = 5.0

#: The actor ``app.py`` loaded for the run under way on this thread (see :func:`routed`).
_RUN = threading.local()


@contextlib.contextmanager
def routed(actor: Actor) -> Iterator[None]:
    """While the router runs a page: the page acts for ``actor`` (loaded in this very run)."""
    _RUN.actor = actor
    try:
        yield
    finally:
        _RUN.actor = None


def routed_actor() -> Actor | None:
    """The actor the router loaded in this run, or None when a page runs without the router."""
    return getattr(_RUN, "actor", None)


def get_store() -> Store:
    """The store as the signed-in user sees it: every call is checked against their role in the
    project it touches (``store.acting_as``). Using it counts as activity for the idle timeout.

    The actor is the one loaded in this run; a fragment's rerun or a callback uses the one kept in
    the session, loaded again when it is older than :data:`FRAGMENT_RELOAD_S` (so a disabled
    account stops a fragment within seconds)."""
    ss = st.session_state
    actor = routed_actor() or ss.get(state.App.ACTOR)
    if not isinstance(actor, Actor):
        raise PermissionDeniedError("Sign in first.")
    if routed_actor() is None and actor.kind == "user":
        loaded = ss.get(state.App.ACTOR_AT)
        if not isinstance(loaded, float) or time.monotonic() - loaded > FRAGMENT_RELOAD_S:
            try:
                actor = plain_store().actor_for(actor.name)
            except EvalcoreError as exc:  # disabled or removed: the next full run signs out
                ss.pop(state.App.ACTOR, None)
                raise PermissionDeniedError(str(exc)) from None
            ss[state.App.ACTOR] = actor
            ss[state.App.ACTOR_AT] = time.monotonic()
    if actor.kind == "user":
        st.session_state[state.App.LAST_ACTIVE] = time.time()
    return plain_store().acting_as(actor)


def get_worker() -> RunWorker:
    """The background worker that carries out judge runs in this server process."""
    return cache.worker(database_url())


def current_project(*, sidebar: bool = True) -> ProjectRecord | None:
    """The project the user works in (chosen in the sidebar; the first one by default)."""
    projects = get_store().list_projects()  # only the actor's projects
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
        actor = st.session_state.get(state.App.ACTOR)
        if isinstance(actor, Actor) and not actor.is_admin:
            st.info("You are not a member of any project yet; an admin can add you to one.")
        else:
            st.info("There is no project yet. Create one on the Datasets page.")
        st.stop()
    return project  # type: ignore[return-value]


def record_export(target: str, project_id: int) -> None:
    """A download button's callback: the export goes into the audit log as the signed-in user's."""
    try:
        get_store().audit("export", target=target, project_id=project_id)
    except EvalcoreError as exc:
        st.toast(f"The export was not recorded in the audit log: {exc}")
