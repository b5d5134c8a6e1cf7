"""AppTest helpers: start the real app.py router as a given user, on a fresh database."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def app_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'app.sqlite'}"
    monkeypatch.setenv("EVALCORE_DATABASE_URL", url)
    return url


@pytest.fixture
def open_app(app_db: str) -> Callable[..., AppTest]:
    def _open(role: str = "engineer", user: str = "eve", page: str | None = None) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=120)
        at.session_state["user"] = user
        at.session_state["role"] = role
        at.run()
        if page is not None:
            at.switch_page(f"pages/{page}.py")
            at.run()
        assert not at.exception, at.exception
        return at

    return _open
