"""AppTest helpers: start the real app.py router as a given user, on a fresh database.

Modules that test against the demo project override ``app_db`` with ``demo_db`` (a copy of a demo
database seeded once per session). ``open_app(role=…, user=…)`` creates the account (a member of
every project there is) and signs the session in the way the sign-in form does: by putting the
token of a new server-side session in the browser session. The app then asks the database who it
belongs to, as it does for everyone.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from streamlit import config
from streamlit.testing.v1 import AppTest

from evalcore.demo.seed import ensure_demo, seed_demo
from evalcore.errors import NotFoundError
from evalcore.store import Store
from ui.state import App

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def app_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'app.sqlite'}"
    monkeypatch.setenv("EVALCORE_DATABASE_URL", url)
    return url


@pytest.fixture(scope="session")
def demo_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.sqlite"
    store = Store.open(f"sqlite:///{path}")
    seed_demo(store)
    with store.engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")  # one self-contained file to copy
    store.close()
    return path


@pytest.fixture
def demo_db(demo_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The seeded demo database, copied for each test."""
    target = tmp_path / "app.sqlite"
    shutil.copyfile(demo_file, target)
    url = f"sqlite:///{target}"
    monkeypatch.setenv("EVALCORE_DATABASE_URL", url)
    return url


@pytest.fixture
def demo(demo_db: str) -> Iterator[Store]:
    store = Store.open(demo_db)
    yield store
    store.close()


#: The password of every account the page tests create.
PASSWORD = "a long test password"


def ensure_account(user: str, role: str) -> None:
    """Make ``user`` an account with ``role``, a member of every project the database has now
    (the demo is seeded first, as the app would on its first open)."""
    with Store.open(os.environ["EVALCORE_DATABASE_URL"]) as store:
        ensure_demo(store)
        try:
            store.get_user(user)
        except NotFoundError:
            store.add_user(user, role=role, password=PASSWORD)  # type: ignore[arg-type]
        else:
            store.set_role(user, role)  # type: ignore[arg-type]
        if role != "admin":
            held = {m.project_id for m in store.get_user(user).memberships}
            for project in store.list_projects():
                if project.id not in held:
                    store.set_membership(user, project.id, role)  # type: ignore[arg-type]


def sign_in(at: AppTest, user: str = "eve", role: str = "engineer") -> AppTest:
    """Sign the session of ``at`` in as ``user`` (the account is made when it is missing)."""
    ensure_account(user, role)
    with Store.open(os.environ["EVALCORE_DATABASE_URL"]) as store:
        at.session_state[App.TOKEN] = store.open_session(user, method="password")
    return at


@pytest.fixture
def single_user() -> Iterator[None]:
    """The server listens on loopback only (the app then needs no sign-in while it has no
    account); the option is put back afterwards."""
    saved = config.get_option("server.address")
    config.set_option("server.address", "127.0.0.1")
    try:
        yield
    finally:
        config.set_option("server.address", saved)


@pytest.fixture
def single_user_app(app_db: str, single_user: None) -> Callable[..., AppTest]:
    """Open the app in single-user mode (no account, loopback), on a page or Home."""

    def _open(page: str | None = None) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=120).run()
        if page is not None:
            at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, at.exception
        return at

    return _open


@pytest.fixture
def open_app(app_db: str) -> Callable[..., AppTest]:
    def _open(role: str = "engineer", user: str = "eve", page: str | None = None) -> AppTest:
        at = sign_in(AppTest.from_file(APP, default_timeout=120), user, role)
        at.run()
        if page is not None:
            at.switch_page(f"pages/{page}.py")
            at.run()
        assert not at.exception, at.exception
        return at

    return _open
