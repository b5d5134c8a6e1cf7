"""Fixtures shared by the whole suite.

- ``shared_datasets``: the real public data in ``../shared/datasets``; tests that use it skip when the
  folder is absent (a user's fresh clone has none).
- ``postgres_url``: a PostgreSQL server for the storage tests. ``.ci/run`` starts a throw-away cluster and
  exports ``EVALCORE_TEST_POSTGRES_URL``; without it the PostgreSQL variants skip with the reason.
- ``chromium_path``: Debian's chromium for the browser tests; they skip when it is absent.
- ``fake_server``: a factory of started :class:`evalcore.testing.FakeOpenAI` servers, stopped after
  the test; judge code is tested over real HTTP through the real ``openai`` client.
- ``reply_cache_dir`` (every test): the command line's shared reply cache lives in the test's own
  folder, never in the user's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalcore.judge import CACHE_DIR_ENV
from evalcore.testing import FakeOpenAI

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATASETS = ROOT.parent / "shared" / "datasets"
CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="session")
def project_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    if not SHARED_DATASETS.is_dir():
        pytest.skip(f"optional real-data test: {SHARED_DATASETS} is absent")
    return SHARED_DATASETS


@pytest.fixture(scope="session")
def postgres_url() -> str:
    url = os.environ.get("EVALCORE_TEST_POSTGRES_URL")
    if not url:
        pytest.skip(
            "no PostgreSQL server: set EVALCORE_TEST_POSTGRES_URL (bash .ci/run starts one) to run the "
            "PostgreSQL variant of the storage tests"
        )
    return url


@pytest.fixture(scope="session")
def chromium_path() -> str:
    if not CHROMIUM.exists():
        pytest.skip("browser test: /usr/bin/chromium is absent (apt-get install -y chromium)")
    return str(CHROMIUM)


@pytest.fixture(autouse=True)
def _no_real_api_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may reach a real provider: real keys are removed from every test's environment."""
    for name in ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def reply_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The command line's shared reply cache lives in this test's own folder, never the user's."""
    folder = tmp_path / "reply-cache"
    monkeypatch.setenv(CACHE_DIR_ENV, str(folder))
    return folder


@pytest.fixture
def fake_server() -> Iterator[Callable[..., FakeOpenAI]]:
    """A factory of started fake servers; every one is stopped after the test."""
    started: list[FakeOpenAI] = []

    def make(*args: Any, **kwargs: Any) -> FakeOpenAI:
        server = FakeOpenAI(*args, **kwargs).start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()
