"""The dashboard's HTTP server pieces, used by ``ui/launch.py`` (what ``evalcore serve`` runs).

- :class:`HostCheck`, a middleware that refuses (403, plain text) every request and websocket whose
  ``Host`` the server must not answer (:func:`evalcore.workflows.allowed_hosts`: in single-user mode
  the loopback names only), before Streamlit sees it; it also renews the session cookie's lifetime
  on each page load, and clears it on Streamlit's ``/auth/logout`` (an OIDC sign-out).
- :data:`ROUTES`: ``POST /auth/session`` redeems a one-time hand-off code for the session cookie
  (``HttpOnly; SameSite=Strict``), ``POST /auth/sign-out`` ends the cookie's session and clears it.
  Both want the ``X-Evalcore`` header, which a form on another site cannot send.
- :func:`use_router_mode`: Streamlit treats a ``pages/`` folder beside the main script as a legacy
  multipage app until ``st.navigation`` ran once; this sets the class attribute Streamlit itself
  sets then (``tests/test_serve.py`` fails loudly when a release renames it).
"""

from __future__ import annotations

import functools
from http.cookies import SimpleCookie
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from evalcore.errors import SignInError
from evalcore.workflows import (
    SESSION_COOKIE,
    Session,
    allowed_hosts,
    cookie_seconds,
    host_allowed,
    host_refusal,
)
from evalcore.workflows import identity as flow

HEADER = "x-evalcore"  # what the page's script sends with its posts
_STREAMLIT = ("/_stcore/", "/static/", "/media/", "/component/", "/auth/")


@functools.cache
def _allowed() -> frozenset[str] | None:
    import streamlit as st

    return allowed_hosts(st.get_option("server.address"))


def _cookie(token: str, *, secure: bool, max_age: int | None = None) -> str:
    jar: SimpleCookie = SimpleCookie()
    jar[SESSION_COOKIE] = token
    jar[SESSION_COOKIE].update({"httponly": True, "samesite": "Strict", "path": "/"})
    jar[SESSION_COOKIE]["max-age"] = cookie_seconds() if max_age is None else max_age
    if secure:
        jar[SESSION_COOKIE]["secure"] = True
    return jar[SESSION_COOKIE].OutputString()


def _secure(scope: dict[str, Any], headers: dict[bytes, bytes]) -> bool:
    return scope.get("scheme") in ("https", "wss") or headers.get(b"x-forwarded-proto") == b"https"


class HostCheck:
    """Refuse a request to a Host this server must not answer; renew the cookie on a page load."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or ())
        host = headers.get(b"host", b"").decode("latin-1")
        allowed = _allowed()
        if allowed is not None and not host_allowed(host, allowed):
            if scope["type"] == "websocket":  # closed before the handshake: a 403 response
                return await send({"type": "websocket.close", "code": 1008})
            refused = PlainTextResponse(host_refusal(host, allowed) + "\n", status_code=403)
            return await refused(scope, receive, send)
        token = Request(scope).cookies.get(SESSION_COOKIE) if scope["type"] == "http" else None
        if scope["type"] == "http" and scope["path"] == "/auth/logout":  # st.logout (OIDC)
            token, max_age = "", 0  # the session was ended by the sign-out: the cookie goes too
        elif not token or scope["method"] != "GET" or scope["path"].startswith(_STREAMLIT):
            return await self.app(scope, receive, send)
        else:
            max_age = None
        secure = _secure(scope, headers)
        renewed = _cookie(token, secure=secure, max_age=max_age).encode("latin-1")

        async def renewing(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message["headers"], (b"set-cookie", renewed)]}
            await send(message)

        return await self.app(scope, receive, renewing)


def _refused(request: Request) -> Response | None:
    """A post without the page's header, or from another origin (cross-site forgery)."""
    origin = request.headers.get("origin")
    same = origin is None or origin.partition("://")[2] == request.headers.get("host")
    if request.headers.get(HEADER) != "1" or not same:
        return PlainTextResponse("refused: not posted by the evalcore page\n", status_code=403)
    return None


def _server() -> Any:
    from ui import resources

    return resources.server()


async def _body(request: Request) -> str:
    return (await request.body())[:200].decode("ascii", errors="replace").strip()


async def session_route(request: Request) -> Response:
    """Redeem a hand-off code (the body) for the session cookie."""
    if (refused := _refused(request)) is not None:
        return refused
    code = await _body(request)
    try:
        session = await run_in_threadpool(lambda: flow.redeem(_server(), code))
    except SignInError as exc:
        return PlainTextResponse(f"{exc}\n", status_code=403)
    response = Response(status_code=204)
    response.headers.append("set-cookie", _cookie(session.token or "", secure=_is_https(request)))
    response.headers["cache-control"] = "no-store"
    return response


async def sign_out_route(request: Request) -> Response:
    """End the cookie's session on the server (if it is still open) and clear the cookie."""
    if (refused := _refused(request)) is not None:
        return refused
    token = request.cookies.get(SESSION_COOKIE)
    if token:
        await run_in_threadpool(lambda: flow.sign_out(Session(_server(), token)))
    response = Response(status_code=204)
    response.headers.append("set-cookie", _cookie("", secure=_is_https(request), max_age=0))
    return response


def _is_https(request: Request) -> bool:
    return _secure(request.scope, dict(request.scope.get("headers") or ()))


ROUTES = [
    Route("/auth/session", session_route, methods=["POST"]),
    Route("/auth/sign-out", sign_out_route, methods=["POST"]),
]


def use_router_mode() -> None:
    """Run every request through ``app.py``'s ``st.navigation``, from the first one on."""
    from streamlit.runtime.pages_manager import PagesManager

    if not hasattr(PagesManager, "uses_pages_directory"):  # pragma: no cover - a new Streamlit
        raise RuntimeError(
            "this Streamlit release has no PagesManager.uses_pages_directory; rename pages/ so "
            "that Streamlit does not see a legacy pages folder (see ui/serving.py)"
        )
    PagesManager.uses_pages_directory = False
