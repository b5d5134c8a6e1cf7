"""Fixtures of the workflow tests: a real server (store, worker, memo) and a session per role.

Everything runs as a page would: a :class:`~evalcore.workflows.Session` holds the token of a real
server-side session, and every workflow call checks it against the database. ``backend`` runs a
test on SQLite and, with ``EVALCORE_TEST_POSTGRES_URL`` set, on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from evalcore.errors import PermissionDeniedError, SessionEndedError
from evalcore.store import Store
from evalcore.workflows import Server, Session
from tests.store.conftest import (  # noqa: F401  (fixtures, found by name)
    _pg_template,
    _sqlite_template,
    backend,
    store_url,
)

PASSWORD = "a long workflow password"


@pytest.fixture
def server(store_url: str) -> Iterator[Server]:  # noqa: F811  (the fixture imported above)
    opened = Server(store=Store.open(store_url), secrets={})
    try:
        yield opened
    finally:
        opened.close()


@dataclass
class People:
    """Sessions of each kind of caller of one project (``project``) and of another one."""

    server: Server
    project: int
    other_project: int
    _refusals: dict[str, Session] = field(default_factory=dict)

    def session(self, name: str) -> Session:
        return Session(self.server, self.server.store.open_session(name, method="password"))

    def engineer(self) -> Session:
        return self.session("eve")

    def admin(self) -> Session:
        return self.session("root")

    def refusals(self) -> dict[str, Session]:
        """A viewer, an annotator, an engineer of another project, a user disabled after signing
        in, and a session that was signed out: each refused by every command of a page that
        needs ``manage`` (made once; each is checked again at every call)."""
        if not self._refusals:
            store = self.server.store
            disabled = self.session("dan")
            store.disable_user("dan")
            ended = self.session("eve")
            store.end_session(ended.token or "")
            self._refusals.update(
                viewer=self.session("vic"),
                annotator=self.session("ana"),
                outsider=self.session("oscar"),
                disabled=disabled,
                ended=ended,
            )
        return self._refusals


@pytest.fixture
def people(server: Server) -> People:
    store = server.store
    project = store.create_project("wf", settings={"annotators_per_item": 1})
    other = store.create_project("elsewhere")
    store.add_user("root", role="admin", password=PASSWORD)
    for name, role in (("eve", "engineer"), ("dan", "engineer"), ("vic", "viewer"),
                       ("ana", "annotator")):  # fmt: skip
        store.add_user(name, role=role, password=PASSWORD, projects=[project.id])  # type: ignore[arg-type]
    store.add_user("oscar", role="engineer", password=PASSWORD, projects=[other.id])
    return People(server, project.id, other.id)


def assert_refused(people: People, command: Callable[[Session], object]) -> None:
    """``command`` is refused for each session of :meth:`People.refusals`: a permission error for
    those who may not, a session error for a disabled user and a signed-out session."""
    for who, session in people.refusals().items():
        wanted = SessionEndedError if who in ("disabled", "ended") else PermissionDeniedError
        with pytest.raises(wanted):
            command(session)
