"""Fixtures shared by the whole suite.

- ``shared_datasets``: the real public data in ``../shared/datasets``; tests that use it skip when the
  folder is absent (a user's fresh clone has none).
- ``postgres_url``: a PostgreSQL server for the storage tests. ``.ci/run`` starts a throw-away cluster and
  exports ``EVALCORE_TEST_POSTGRES_URL``; without it the PostgreSQL variants skip with the reason.
- ``chromium_path``: Debian's chromium for the browser tests; they skip when it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
