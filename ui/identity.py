"""Who the user is: sign-in (a local account or OIDC), single-user mode, the idle timeout, sign-out,
and the check every page makes before it draws anything.

The session keeps only the signed-in name and how they signed in (:class:`ui.state.App`). On every
run :func:`resolve` loads that user's role and memberships from the database again, so a role
change or a disabled account takes effect at once. Nothing about the user comes from the URL: an
old ``?user=…&role=…`` address has those parameters removed and ignored.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from typing import Any

import streamlit as st

from evalcore.errors import ConfigError, EvalcoreError, SignInError
from evalcore.store import ROLE_LABELS, Actor, Store
from ui import access, cache
from ui.render import md_escape, show_error
from ui.resources import current_project, plain_store, routed_actor
from ui.state import Annotate, App

#: The name the one user of single-user mode acts under.
SINGLE_USER = "admin"


def oidc_configured() -> bool:
    """Whether ``.streamlit/secrets.toml`` has an ``[auth]`` section (sign-in with ``st.login``)."""
    return access.oidc_configured(cache.secrets())


def single_user_mode(store: Store) -> bool:
    """No account, no OIDC, and a server that listens on loopback only: one trusted person."""
    return (
        store.count_users() == 0
        and not oidc_configured()
        and access.is_loopback(st.get_option("server.address"))
    )


def start_refusal(store: Store) -> str | None:
    """Why this server must not serve anyone (no account, no OIDC, not on loopback), or None."""
    return access.start_refusal(
        st.get_option("server.address"), store.count_users(), oidc_configured()
    )


def _drop_identity_params() -> None:
    for param in ("user", "role"):
        if param in st.query_params:
            del st.query_params[param]


def _oidc_user() -> dict[str, Any]:
    try:
        return dict(st.user.to_dict())
    except Exception:  # st.user needs an [auth] section
        return {}


def _groups(claims: Mapping[str, Any]) -> tuple[str, ...]:
    raw = claims.get("groups") or claims.get("roles") or ()
    if isinstance(raw, str):
        return tuple(g.strip() for g in raw.split(",") if g.strip())
    return tuple(str(g) for g in raw) if isinstance(raw, list | tuple) else ()


def _begin(actor: Actor, method: str) -> None:
    """Start a signed-in session (everything an earlier user left in it goes)."""
    ss = st.session_state
    for name in list(ss.keys()):
        del ss[name]
    ss[App.USER] = actor.name
    ss[App.METHOD] = method
    ss[App.LAST_ACTIVE] = time.time()
    ss[App.ACTOR] = actor
    ss[App.ACTOR_AT] = time.monotonic()


def _oidc_return(store: Store) -> Actor | None:
    """After ``st.login``: the account the identity provider's e-mail maps to (once per session)."""
    ss = st.session_state
    claims = _oidc_user()
    if not claims.get("is_logged_in") or not claims.get("email") or ss.get(App.OIDC_TRIED):
        return None
    ss[App.OIDC_TRIED] = True
    name = claims.get("name")
    try:
        actor = store.oidc_sign_in(
            str(claims["email"]), groups=_groups(claims), name=str(name) if name else None
        )
    except SignInError as exc:
        ss[App.NOTE] = ("error", str(exc))
        return None
    _begin(actor, "oidc")
    return actor


def resolve(store: Store) -> Actor | None:
    """The user this run acts for, reloaded from ``store`` (the plain store); None until someone
    signs in. Signs the session out when it has been idle too long or the account is gone."""
    _drop_identity_params()
    ss = st.session_state
    if single_user_mode(store):
        actor = Actor.single_user(SINGLE_USER)
        ss[App.ACTOR] = actor
        ss[App.ACTOR_AT] = time.monotonic()
        return actor
    name = ss.get(App.USER)
    if not name and oidc_configured():
        found = _oidc_return(store)
        if found is not None:
            return found
    if not name:
        ss.pop(App.ACTOR, None)
        return None
    minutes = access.idle_minutes()
    last = ss.get(App.LAST_ACTIVE)
    if isinstance(last, int | float) and time.time() - last > minutes * 60:
        sign_out(f"You were signed out after {minutes:g} minutes without activity.", "info")
        return None
    try:
        actor = store.actor_for(str(name))
    except SignInError as exc:
        sign_out(str(exc), "warning")
        return None
    ss[App.LAST_ACTIVE] = time.time()
    ss[App.ACTOR] = actor
    ss[App.ACTOR_AT] = time.monotonic()
    return actor


def _release(store: Store, actor: Actor) -> None:
    """Hand back the items of every queue the user opened in this session that they hold."""
    release = getattr(store, "release_claims", None)
    if release is None:
        return
    for opened in st.session_state.get(Annotate.OPENED) or ():
        _url, dataset_id, criterion_id, annotator = opened
        if annotator == actor.name:
            with contextlib.suppress(EvalcoreError):  # else the claims expire on their own
                release(dataset_id, criterion_id, annotator)


def sign_out(note: str | None = None, level: str = "info") -> None:
    """End the session: release the user's queue items, forget everything the session kept, and
    sign out of the identity provider too after an OIDC sign-in (``st.logout`` starts afresh)."""
    ss = st.session_state
    actor = ss.get(App.ACTOR)
    method = ss.get(App.METHOD)
    if isinstance(actor, Actor) and actor.kind == "user":
        _release(plain_store(), actor)
    for name in list(ss.keys()):
        del ss[name]
    if note:
        ss[App.NOTE] = (level, note)
    if method == "oidc":
        ss[App.OIDC_TRIED] = True  # the provider's cookie is not used again in this session
        st.logout()


def _sign_out_clicked() -> None:
    sign_out("You signed out.")


def _show_note() -> None:
    note = st.session_state.pop(App.NOTE, None)
    if note:
        level, text = note
        show = {"error": st.error, "warning": st.warning}.get(level, st.info)
        show(md_escape(text))


def sign_in_page() -> None:
    """The sign-in form (name and password) and, with OIDC configured, a button per provider."""
    st.title("evalcore")
    st.markdown("Calibrate your LLM judge against people. Sign in to start.")
    _show_note()
    with st.form(App.SIGN_IN, clear_on_submit=True):
        name = st.text_input("Name", key=App.SIGN_IN_NAME, max_chars=200)
        password = st.text_input("Password", type="password", key=App.SIGN_IN_PASSWORD)
        submitted = st.form_submit_button("Sign in", type="primary")
    if submitted:
        if not name.strip() or not password:
            st.error("Enter your name and your password.")
        else:
            try:
                actor = plain_store().sign_in(name.strip(), password)
            except SignInError as exc:
                show_error(exc)
            else:
                _begin(actor, "password")
                st.rerun()
    for provider in access.oidc_providers(cache.secrets()):
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


def identity_sidebar(actor: Actor, project_id: int | None) -> None:
    """Who is signed in, in which role, and the sign-out button."""
    with st.sidebar:
        if actor.kind == "single_user":
            st.caption("single-user mode: no sign-in")
            return
        role = actor.role_in(project_id) if project_id is not None else None
        shown = ROLE_LABELS[role] if role else "no project"
        st.caption(f"Signed in as **{md_escape(actor.name)}** · {shown}")
        st.button("Sign out", key=App.SIGN_OUT, type="tertiary", on_click=_sign_out_clicked)


def current_actor() -> Actor:
    """The actor of this run: the one the router loaded, or, for a page run without the router
    (a legacy multipage run), loaded here with the sidebar drawn as the router would; the sign-in
    form and a stop when nobody is signed in."""
    actor = routed_actor()
    if actor is not None:
        return actor
    store = plain_store()
    actor = resolve(store)
    if actor is None:
        refusal = start_refusal(store)
        if refusal is not None:
            refusal_page(refusal)
        else:
            sign_in_page()
        st.stop()
    project = current_project()
    identity_sidebar(actor, None if project is None else project.id)  # type: ignore[union-attr]
    return actor  # type: ignore[return-value]


def require(page: str) -> Actor:
    """Stop the page unless the actor may open it in the current project (checked on the server,
    whatever the navigation shows); returns the actor."""
    actor = current_actor()
    project = current_project(sidebar=False)
    if not access.may_open(actor, page, None if project is None else project.id):
        st.error(access.REFUSED)
        st.stop()
    return actor
