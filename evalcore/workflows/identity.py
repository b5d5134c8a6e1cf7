"""Signing in and out, and what the caller may open: the router's and the sign-in page's workflow.

- :func:`sign_in` (a name and a password) and :func:`oidc_sign_in` (the identity provider's claims)
  open a server-side session and return the :class:`Session` a page keeps; :func:`sign_out` ends it
  on the server. :func:`single_user_session` is the session of single-user mode (no account, no
  OIDC, loopback only), checked again at every call like any other.
- :func:`hand_off` and :func:`redeem` carry a signed-in session from the page to the browser's
  ``HttpOnly`` cookie through a one-time code (the token never reaches the page).
- :func:`visit` answers, for the caller as the database has them now, which projects they see,
  their role in the chosen one and the pages they may open; :func:`open_page` is the same check a
  page makes before it draws anything (a hand-typed address included).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from evalcore.errors import EvalcoreError, PermissionDeniedError, SessionEndedError, SignInError
from evalcore.store import ROLE_LABELS, ROLE_PERMISSIONS, Actor, Permission, ProjectRecord
from evalcore.workflows._server import Server
from evalcore.workflows._session import Caller, Session, caller

__all__ = [
    "PAGES",
    "PAGES_WITHOUT_PROJECT",
    "PAGE_NEEDS",
    "REFUSED",
    "UNKNOWN_CODE",
    "Visitor",
    "hand_off",
    "may_open",
    "oidc_sign_in",
    "open_page",
    "redeem",
    "sign_in",
    "sign_out",
    "single_user_session",
    "visit",
]

#: What opening each page needs in the current project ("server": a server administrator), in the
#: order the navigation lists them.
PageNeed = Permission | Literal["server"]
PAGE_NEEDS: Final[dict[str, PageNeed]] = {
    "home": "open",
    "annotate": "annotate",
    "datasets": "manage",
    "judge": "manage",
    "calibrate": "read",
    "reports": "read",
    "settings": "admin",
    "admin": "server",
}
PAGES: Final = tuple(PAGE_NEEDS)
#: Pages a member of no project may still use: Home (which says so) and Calibrate, whose upload
#: mode reads a file and saves nothing.
PAGES_WITHOUT_PROJECT: Final = frozenset({"home", "calibrate"})

REFUSED: Final = "This page is not available to your role."
UNKNOWN_CODE: Final = "This sign-in hand-off is unknown, used or expired: sign in again."


def may_open(actor: Actor, page: str, project_id: int | None) -> bool:
    """Whether ``actor`` may open ``page`` in the project (``None``: the actor has no project).

    >>> ana = Actor(name="ana", role="annotator", memberships={1: "annotator"})
    >>> may_open(ana, "annotate", 1), may_open(ana, "calibrate", 1), may_open(ana, "home", None)
    (True, False, True)
    """
    need = PAGE_NEEDS[page]
    if need == "server":
        return actor.is_admin
    if project_id is None:
        # no project: Home says so, an admin may create one, and a file can still be calibrated
        # (the upload mode saves nothing) by those whose role reads calibrations
        if page == "calibrate":
            return "read" in ROLE_PERMISSIONS[actor.role]
        return page == "home" or (page == "datasets" and actor.is_admin)
    return actor.can(need, project_id)


@dataclass(frozen=True)
class Visitor:
    """The caller as the router and a page see them now."""

    name: str
    single_user: bool
    is_admin: bool
    projects: tuple[ProjectRecord, ...]
    project: ProjectRecord | None
    role_label: str | None
    pages: tuple[str, ...]
    permissions: frozenset[str]

    def can(self, permission: Permission) -> bool:
        """Whether the caller has ``permission`` in the current project."""
        return permission in self.permissions


def _visitor(who: Caller, project_id: int | None) -> Visitor:
    actor = who.actor
    projects = tuple(who.store.list_projects())  # only those the actor belongs to
    by_id = {p.id: p for p in projects}
    project = by_id.get(project_id) if project_id is not None else None
    if project is None and projects:
        project = projects[0]
    pid = None if project is None else project.id
    role = None if pid is None else actor.role_in(pid)
    return Visitor(
        name=actor.name,
        single_user=actor.kind == "single_user",
        is_admin=actor.is_admin,
        projects=projects,
        project=project,
        role_label=None if role is None else ROLE_LABELS[role],
        pages=tuple(p for p in PAGES if may_open(actor, p, pid)),
        permissions=frozenset(ROLE_PERMISSIONS[role]) if role else frozenset(),
    )


def visit(session: Session, project_id: int | None = None) -> Visitor:
    """Who the caller is now, the projects they see, the current one (``project_id`` when they
    belong to it, else their first) and the pages they may open there."""
    return _visitor(caller(session), project_id)


def open_page(session: Session, page: str, project_id: int | None = None) -> Visitor:
    """:func:`visit`, refused with :class:`PermissionDeniedError` when the caller may not open
    ``page`` in the current project."""
    if page not in PAGE_NEEDS:
        raise PermissionDeniedError(f"There is no page {page!r}.")
    found = visit(session, project_id)
    if page not in found.pages:
        raise PermissionDeniedError(REFUSED)
    return found


def single_user_session(server: Server) -> Session | None:
    """The session of single-user mode when the server is in it (no account, no OIDC, loopback),
    else ``None``: everyone signs in."""
    return Session(server) if server.single_user() else None


def sign_in(server: Server, name: str, password: str, *, client: str | None = None) -> Session:
    """Check a name and password and open a session (:class:`~evalcore.errors.SignInError` with
    one message for a wrong name and a wrong password)."""
    actor = server.store.sign_in(name, password, client=client)
    return Session(server, server.store.open_session(actor.name, method="password", client=client))


def oidc_sign_in(
    server: Server, claims: Mapping[str, Any], *, client: str | None = None
) -> Session:
    """Sign in the person the identity provider vouched for (the ID token's ``claims``: the
    account is found by issuer and subject, or by a verified address, never by a display name),
    with the role the server's OIDC rules give, and open a session."""
    actor = server.store.oidc_sign_in(claims)
    return Session(server, server.store.open_session(actor.name, method="oidc", client=client))


def hand_off(session: Session) -> str:
    """A one-time code (single use, valid for a minute) that :func:`redeem` turns back into this
    signed-in session: what a page gives the browser so that the server can put the token into
    an ``HttpOnly`` cookie. Refused (:class:`SessionEndedError`) when the session is over, and
    for single-user mode, which has no token to keep."""
    caller(session)
    if session.token is None:
        raise SessionEndedError("Single-user mode has no session to keep: nobody signs in.")
    return session.server.handoffs.issue(session.token)


def redeem(server: Server, code: str) -> Session:
    """The session a :func:`hand_off` code stands for, checked against the database now; an
    unknown, used or expired code is refused (:class:`~evalcore.errors.SignInError`), and so is a
    session that ended meanwhile (:class:`SessionEndedError`)."""
    token = server.handoffs.redeem(code) if code else None
    if token is None:
        raise SignInError(UNKNOWN_CODE)
    session = Session(server, token)
    caller(session)
    return session


def sign_out(session: Session, *, release: Iterable[tuple[int, int]] = ()) -> None:
    """End the session on the server, after giving back the open items of the queues the caller
    opened (``release``: dataset and criterion ids). A session that is already over is left as is."""
    if session.token is None:
        return
    try:
        who = caller(session)
    except SessionEndedError:
        return
    for dataset_id, criterion_id in release:
        try:
            who.store.release_claims(dataset_id, criterion_id, who.name)
        except EvalcoreError:
            continue  # the claims run out on their own after the lease
    session.server.store.end_session(session.token)


def projects_of(session: Session) -> Sequence[ProjectRecord]:
    """The projects the caller belongs to (an admin: every project)."""
    return caller(session).store.list_projects()
