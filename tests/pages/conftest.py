"""AppTest helpers: start the real app.py router as a given user, on a fresh database.

Modules that test against the demo project override ``app_db`` with ``demo_db`` (a copy of a demo
database seeded once per session).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from evalcore.demo.seed import seed_demo
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


@pytest.fixture
def open_app(app_db: str) -> Callable[..., AppTest]:
    def _open(role: str = "engineer", user: str = "eve", page: str | None = None) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=120)
        at.session_state[App.USER] = user
        at.session_state[App.ROLE] = role
        at.run()
        if page is not None:
            at.switch_page(f"pages/{page}.py")
            at.run()
        assert not at.exception, at.exception
        return at

    return _open
