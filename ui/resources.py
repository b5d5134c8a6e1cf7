"""What every page shares: the server (one per database and process) and the caller's session.

The :class:`~evalcore.workflows.Server` is kept in ``st.cache_resource``. The browser keeps the token
of a server-side session in an ``HttpOnly`` cookie (set by ``ui/serving.py``), read here at each run,
so a reload, a second tab or a restarted browser stays signed in; the Streamlit session keeps the
token it signed in with itself (the only one AppTest has, as it has no cookies). Every workflow call
checks the token against the database, so nothing here decides who may do what.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from evalcore.workflows import SESSION_COOKIE, Server, Session, database_url
from evalcore.workflows.identity import single_user_session
from ui.state import App


def secrets() -> Mapping[str, Any]:
    """Streamlit secrets as a plain mapping (empty without a secrets file). Kept in memory only."""
    try:
        return {str(k): v for k, v in st.secrets.items()}
    except Exception:  # no secrets.toml: keys come from the environment
        return {}


def _address() -> str | None:
    return st.get_option("server.address")  # type: ignore[no-any-return]


@st.cache_resource(show_spinner="Opening the database…")
def _server(url: str) -> Server:
    return Server.open(url, secrets=secrets(), address=_address)


def server() -> Server:
    """This process's server for the configured database (opened, migrated and seeded once)."""
    return _server(database_url())


def cookie() -> str | None:
    """The session token of the browser's cookie, as it was when this tab connected."""
    try:
        found = st.context.cookies.get(SESSION_COOKIE)
    except Exception:  # no request context
        return None
    return found if isinstance(found, str) and found else None  # AppTest has a mock here


def session() -> Session | None:
    """The caller: the signed-in session this browser session holds, else the cookie's (unless it
    ended here), else single-user mode's, or ``None`` when someone must sign in."""
    token = st.session_state.get(App.TOKEN)
    if isinstance(token, str) and token:
        return Session(server(), token)
    kept = cookie()
    if kept and st.session_state.get(App.ENDED):  # a call found it over: never use it again
        st.session_state[App.DROPPED] = kept
    if kept and kept != st.session_state.get(App.DROPPED):
        return Session(server(), kept)
    return single_user_session(server())


def project_id() -> int | None:
    """The project chosen in the sidebar (the workflow layer falls back to the first one)."""
    chosen = st.session_state.get(App.PROJECT_ID)
    return chosen if isinstance(chosen, int) else None
