"""Fixtures of the built-in metric tests: started fake servers, and the registry restored.

Every LLM metric is run over real HTTP against :class:`evalcore.testing.FakeOpenAI` through the real
``openai`` client (see ``helpers.route`` for how the fake recognises the metric or step asking);
nothing of evalcore is mocked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalcore.judge import CACHE_DIR_ENV
from evalcore.judge.builtins import (
    builtin_names,
    list_metrics,
    register_builtins,
    unregister_metric,
)
from evalcore.testing import FakeOpenAI


@pytest.fixture(autouse=True)
def reply_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The command line's shared reply cache lives in this test's own folder, never the user's."""
    folder = tmp_path / "reply-cache"
    monkeypatch.setenv(CACHE_DIR_ENV, str(folder))
    return folder


@pytest.fixture
def fake_server() -> Iterator[Callable[..., FakeOpenAI]]:
    """A factory of started fake servers; each is stopped after the test."""
    started: list[FakeOpenAI] = []

    def make(*args: Any, **kwargs: Any) -> FakeOpenAI:
        server = FakeOpenAI(*args, **kwargs).start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


@pytest.fixture(autouse=True)
def _registry_is_restored() -> Iterator[None]:
    """Tests may register their own metrics; afterwards the registry holds the built-ins again."""
    yield
    for spec in list_metrics():
        if spec.name not in builtin_names():
            unregister_metric(spec.name)
    register_builtins()
