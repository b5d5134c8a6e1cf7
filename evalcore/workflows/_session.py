"""Who a workflow call is made for, checked against the database at the moment of the call.

A page holds a :class:`Session`: the server and the token of a signed-in session (or no token in
single-user mode). Every workflow function starts with :func:`caller`, which asks the database who
the token belongs to now: a disabled or removed account, a changed password, a session that was idle
too long or signed out, all end here with :class:`~evalcore.errors.SessionEndedError`; a changed role
or membership is simply what the rebuilt actor has. Nothing about the user is remembered between
calls, so a page, a fragment rerun and a widget callback are checked alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evalcore.errors import PermissionDeniedError, SessionEndedError
from evalcore.store import Actor, Permission
from evalcore.workflows._server import Server, idle_minutes

if TYPE_CHECKING:
    from evalcore.store import GuardedStore

__all__ = ["SINGLE_USER", "Caller", "Session", "caller"]

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
