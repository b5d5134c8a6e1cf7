"""Who the user is, as the pages see it: the sign-in page, the sidebar's name and sign-out, and
:func:`require`, the check each page makes before it draws anything.

Every decision is the workflow layer's (:mod:`evalcore.workflows.identity`), made against the
database at the moment of the call; this module only keeps the session's token and draws.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from typing import Any

import streamlit as st

from evalcore.errors import ConfigError, EvalcoreError, SessionEndedError, SignInError
from evalcore.workflows import Session, oidc_providers
from evalcore.workflows import identity as flow
from evalcore.workflows.identity import Visitor
from ui import resources
from ui.render import md_escape, show_error
from ui.state import Annotate, App
from ui.widgets import callback, note, session_ended, show_note

#: Whether the router (app.py) is running this script run, on this thread.
_ROUTER = threading.local()


@contextlib.contextmanager
def routed() -> Iterator[None]:
    """While the router runs a page (a page run alone, as Streamlit's legacy multipage mode and
    AppTest's reruns do, draws the sidebar itself in :func:`require`)."""
    _ROUTER.active = True
    try:
        yield
    finally:
        _ROUTER.active = False


def _client() -> str | None:
    try:
        found = st.context.ip_address
    except Exception:  # no request context
        return None
    return found if isinstance(found, str) else None  # AppTest has a mock here


def _begin(session: Session) -> None:
    """Start a signed-in browser session (everything an earlier user left in it goes), and have
    the page hand it to the browser's cookie."""
    for name in list(st.session_state.keys()):
        del st.session_state[name]
    st.session_state[App.TOKEN] = session.token
    with contextlib.suppress(SessionEndedError):
        st.session_state[App.HANDOFF] = flow.hand_off(session)


def _post(path: str, body: str) -> None:
    """Have the page post ``body`` to the server's own ``path`` (same origin, with the header the
    routes want; ``path`` and ``body`` are the app's own: a path and a hand-off code); the answer's
    cookie is the browser's business, so nothing waits for it."""
    path_js, body_js = (json.dumps(v).replace("<", "\\u003c") for v in (path, body))  # no </script>
    call = f"fetch({path_js}, {{method: 'POST', credentials: 'same-origin', body: {body_js}, "
    call += "headers: {'X-Evalcore': '1'}})"
    st.html(f"<script>{call}</script>", unsafe_allow_javascript=True)


def _oidc_return() -> None:
    """After the identity provider's sign-in: open a session for its claims (once per session)."""
    if st.session_state.get(App.OIDC_TRIED) or not resources.server().oidc:
        return
    try:
        claims: dict[str, Any] = dict(st.user.to_dict())
    except Exception:  # st.user needs an [auth] section
        return
    if not claims.get("is_logged_in"):
        return
    st.session_state[App.OIDC_TRIED] = True
    try:
        _begin(flow.oidc_sign_in(resources.server(), claims, client=_client()))
    except SignInError as exc:
        note("error", str(exc))
    else:
        st.session_state[App.OIDC_TRIED] = True  # _begin emptied the session: mark it again


def current() -> Session | None:
    """The caller's session, or ``None`` when someone must sign in first. Nothing about the user
    comes from the address: an old ``?user=…&role=…`` has those parameters removed."""
    for param in ("user", "role"):
        if param in st.query_params:
            del st.query_params[param]
    found = resources.session()
    if found is None:
        _oidc_return()
        found = resources.session()
    return found


def visit(session: Session) -> Visitor | None:
    """Who the caller is now and what they may open; ``None`` (and the sign-in page next) when
    their session is over."""
    try:
        found = flow.visit(session, resources.project_id())
    except SessionEndedError as exc:
        session_ended(exc)
        st.session_state[App.DROPPED] = session.token
        return None
    if found.project is not None:
        st.session_state[App.PROJECT_ID] = found.project.id
    return found


# --- pages ---------------------------------------------------------------------------------------


def sign_in_page() -> None:
    """The sign-in form (name and password) and, with OIDC configured, a button per provider."""
    st.title("evalcore")
    st.markdown("Calibrate your LLM judge against people. Sign in to start.")
    st.session_state.pop(App.ENDED, None)
    if st.session_state.pop(App.SIGNED_OUT, None):
        _post("/auth/sign-out", "")
    show_note()
    with st.form(App.SIGN_IN, clear_on_submit=True):
        name = st.text_input("Name", key=App.SIGN_IN_NAME, max_chars=200)
        password = st.text_input("Password", type="password", key=App.SIGN_IN_PASSWORD)
        submitted = st.form_submit_button("Sign in", type="primary")
    if submitted:
        if not name.strip() or not password:
            st.error("Enter your name and your password.")
        else:
            try:
                session = flow.sign_in(resources.server(), name.strip(), password, client=_client())
            except SignInError as exc:
                show_error(exc)
            else:
                _begin(session)
                st.rerun()
    for provider in oidc_providers(resources.secrets()):
        label = "your organisation's account" if provider is None else provider
        st.button(
            f"Sign in with {label}",
            key=f"{App.SIGN_IN_OIDC}.{provider or 'default'}",
            on_click=st.login,
            args=() if provider is None else (provider,),
        )


def refusal_page(message: str) -> None:
    """What a server that must not serve anyone shows instead of the app."""
    st.title("evalcore")
    st.error(md_escape(message), icon=":material/lock:")


def config_error_page(exc: ConfigError) -> None:
    st.title("evalcore")
    show_error(exc)


@callback
def _sign_out() -> None:
    session = resources.session()
    opened = st.session_state.get(Annotate.OPENED) or ()
    oidc = st.session_state.get(App.OIDC_TRIED)
    if session is not None:
        flow.sign_out(session, release=[(d, c) for d, c in opened])
    for name in list(st.session_state.keys()):
        del st.session_state[name]
    note("info", "You signed out.")
    st.session_state[App.DROPPED] = resources.cookie()  # this tab saw it when it connected
    st.session_state[App.SIGNED_OUT] = True
    if oidc:
        st.session_state[App.OIDC_TRIED] = True  # the provider's cookie is not used again here
        st.logout()


def sidebar(visitor: Visitor) -> None:
    """The project picker (when there are several), who is signed in, and the sign-out button."""
    with st.sidebar:
        if code := st.session_state.pop(App.HANDOFF, None):
            _post("/auth/session", code)
        if len(visitor.projects) > 1 and visitor.project is not None:
            by_id = {p.id: p.name for p in visitor.projects}
            st.session_state[App.PROJECT_PICKER] = visitor.project.id
            st.selectbox(
                "Project",
                list(by_id),
                format_func=by_id.__getitem__,
                key=App.PROJECT_PICKER,
                on_change=lambda: st.session_state.update(
                    {App.PROJECT_ID: st.session_state[App.PROJECT_PICKER]}
                ),
            )
        if visitor.single_user:
            st.caption("single-user mode: no sign-in")
            return
        role = visitor.role_label or "no project"
        st.caption(f"Signed in as **{md_escape(visitor.name)}** · {role}")
        st.button("Sign out", key=App.SIGN_OUT, type="tertiary", on_click=_sign_out)


def require(page: str) -> tuple[Session, Visitor]:
    """Stop the page unless the caller may open it in the current project (asked of the workflow
    layer now, whatever the navigation shows); the session and who they are."""
    session = current()
    if session is None:  # a page run without the router (``streamlit run pages/x.py``)
        refusal = resources.server().refusal()
        if refusal is not None:
            refusal_page(refusal)
        else:
            sign_in_page()
        st.stop()
    try:
        visitor = flow.open_page(session, page, resources.project_id())
    except SessionEndedError as exc:
        session_ended(exc)
        st.rerun()
    except EvalcoreError as exc:
        if not getattr(_ROUTER, "active", False):  # no router: who is signed in, even here
            with contextlib.suppress(EvalcoreError):
                sidebar(flow.visit(session, resources.project_id()))
        show_error(exc)
        st.stop()
    if visitor.project is not None:
        st.session_state[App.PROJECT_ID] = visitor.project.id
    if not getattr(_ROUTER, "active", False):  # no router in this run: draw what it draws
        sidebar(visitor)
        show_note()
    if visitor.project is None and page not in flow.PAGES_WITHOUT_PROJECT and not visitor.is_admin:
        st.info("You are not a member of any project yet; an admin can add you to one.")
        st.stop()
    return session, visitor


def project_or_stop(visitor: Visitor) -> Any:
    """The current project, or a hint and a stop when there is none."""
    if visitor.project is None:
        if visitor.is_admin:
            st.info("There is no project yet. Create one on the Datasets page.")
        else:
            st.info("You are not a member of any project yet; an admin can add you to one.")
        st.stop()
    return visitor.project
