"""The Datasets, Settings and Admin workflows without Streamlit: a real SQLite store with the demo
project, and a session for each kind of caller (the commands must refuse all but the right ones, at
the moment of the call)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evalcore.demo.seed import seed_demo
from evalcore.errors import PermissionDeniedError, SessionEndedError
from evalcore.store import Store
from evalcore.workflows import Server, Session

PASSWORD = "a long test password"


@pytest.fixture(scope="session")
def demo_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("workflows") / "demo.sqlite"
    store = Store.open(f"sqlite:///{path}")
    seed_demo(store)
    with store.engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    return path


@dataclass
class People:
    """A server over a copy of the demo database, its project, and a session per caller."""

    server: Server
    project_id: int
    other_project_id: int
    sessions: dict[str, Session]

    @property
    def store(self) -> Store:
        return self.server.store

    def __getitem__(self, who: str) -> Session:
        return self.sessions[who]


#: Who is who: (name, role, member of the demo project).
CALLERS = {
    "admin": ("ada", "admin"),
    "engineer": ("eve", "engineer"),
    "project_admin": ("pat", "engineer"),  # an admin of the demo project only
    "viewer": ("vic", "viewer"),
    "annotator": ("ann", "annotator"),
    "outsider": ("oscar", "engineer"),  # an engineer of another project
    "disabled": ("dan", "engineer"),  # disabled after signing in
    "ended": ("ed", "engineer"),  # signed out
}
#: The callers every command of a project's data refuses.
REFUSED = ("viewer", "annotator", "outsider", "disabled", "ended")


@pytest.fixture
def people(demo_file: Path, tmp_path: Path) -> Iterator[People]:
    target = tmp_path / "app.sqlite"
    shutil.copyfile(demo_file, target)
    store = Store.open(f"sqlite:///{target}")
    project = store.list_projects()[0]
    other = store.create_project("Other")
    store.add_user("root", role="admin")  # someone stays an admin
    sessions: dict[str, Session] = {}
    server = Server(store)
    for kind, (name, role) in CALLERS.items():
        member = other.id if kind == "outsider" else project.id
        # no password: the sessions are opened directly (hashing one costs a second on a busy machine)
        store.add_user(name, role=role, projects=[member])  # type: ignore[arg-type]
        if kind == "project_admin":
            store.set_membership(name, project.id, "admin")
        sessions[kind] = Session(server, store.open_session(name, method="password"))
    store.disable_user("dan")
    store.end_session(sessions["ended"].token or "")
    yield People(server, project.id, other.id, sessions)
    server.close()


def refused(call: Callable[[Session], Any], people: People, who: tuple[str, ...] = REFUSED) -> None:
    """Each caller of ``who`` is refused by ``call``: no permission, or a session that is over."""
    for kind in who:
        with pytest.raises((PermissionDeniedError, SessionEndedError)):
            call(people[kind])
