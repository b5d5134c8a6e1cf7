"""Who a workflow call is made for, checked against the database at the moment of the call.

A page holds a :class:`Session`: the server and the token of a signed-in session (or no token in
single-user mode). Every workflow function starts with :func:`caller`, which asks the database who
the token belongs to now: a disabled or removed account, a changed password, a session that was idle
too long or signed out, all end here with :class:`~evalcore.errors.SessionEndedError`; a changed role
or membership is simply what the rebuilt actor has. Nothing about the user is remembered between
calls, so a page, a fragment rerun and a widget callback are checked alike.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from evalcore.errors import PermissionDeniedError, SessionEndedError
from evalcore.store import Actor, Permission
from evalcore.workflows._server import Server, idle_minutes

if TYPE_CHECKING:
    from evalcore.store import GuardedStore

__all__ = [
    "HANDOFF_SECONDS",
    "SESSION_COOKIE",
    "SINGLE_USER",
    "Caller",
    "HandOffs",
    "Session",
    "caller",
]

#: The cookie that carries a signed-in browser's session token (``HttpOnly``, ``SameSite=Strict``).
SESSION_COOKIE: Final = "evalcore_session"

#: How long a hand-off code may wait for the browser to redeem it.
HANDOFF_SECONDS: Final = 60.0

#: The name the one user of single-user mode acts under.
SINGLE_USER = "admin"

NO_LONGER_SINGLE = "This server now has user accounts, so everyone signs in. Sign in to go on."


@dataclass(frozen=True)
class Session:
    """The caller as a page holds it: the server, and a signed-in session's token (``None``: the
    single user of a loopback server without accounts)."""

    server: Server = field(compare=False, repr=False)
    token: str | None = field(default=None, repr=False)

    @property
    def is_single_user(self) -> bool:
        return self.token is None


@dataclass(frozen=True)
class Caller:
    """A checked caller: the actor as the database has them now, and the store acting for them."""

    actor: Actor
    store: GuardedStore
    server: Server

    @property
    def name(self) -> str:
        return self.actor.name


class HandOffs:
    """One-time codes that hand a session's token from the page to the browser's cookie.

    The script that signed someone in cannot set a cookie; it asks for a code (random, single-use,
    valid for ``ttl`` seconds), the page posts the code to the server's own route, and the route
    redeems it for the token and sets the cookie. The token itself never reaches the page. Kept in
    memory: a code outlives neither its ``ttl`` nor the process.
    """

    def __init__(
        self, ttl: float = HANDOFF_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl = ttl
        self._clock = clock
        self._codes: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def issue(self, token: str) -> str:
        """A new code for ``token``."""
        code = secrets.token_urlsafe(32)
        with self._lock:
            now = self._clock()
            self._codes = {c: v for c, v in self._codes.items() if v[1] > now}  # drop stale ones
            self._codes[code] = (token, now + self.ttl)
        return code

    def redeem(self, code: str) -> str | None:
        """The token of ``code``, once; ``None`` for an unknown, used or expired code."""
        with self._lock:
            found = self._codes.pop(code, None)
        if found is None or found[1] <= self._clock():
            return None
        return found[0]


def caller(session: Session, *, anywhere: Permission | None = None) -> Caller:
    """Check ``session`` against the database now (see the module); raises
    :class:`~evalcore.errors.SessionEndedError` when it is over, and
    :class:`~evalcore.errors.PermissionDeniedError` when ``anywhere`` names a permission that
    none of the caller's projects gives them."""
    server = session.server
    if session.token is None:
        if not server.single_user():
            raise SessionEndedError(NO_LONGER_SINGLE)
        actor = Actor.single_user(SINGLE_USER)
    else:
        actor = server.store.session_actor(session.token, idle_s=idle_minutes() * 60.0)
    if anywhere is not None and not actor.can_anywhere(anywhere):
        raise PermissionDeniedError(
            f"You may not do this: it needs the {anywhere!r} permission in some project."
        )
    return Caller(actor=actor, store=server.store.acting_as(actor), server=server)


def require_admin(who: Caller) -> None:
    """Refuse unless the caller administers the server."""
    if not who.actor.is_admin:
        raise PermissionDeniedError("You may not do this: only an admin may do it.")
