"""Fixtures of the built-in metric tests: the registry restored (``fake_server`` is in tests/conftest.py).

Every LLM metric is run over real HTTP against :class:`evalcore.testing.FakeOpenAI` through the real
``openai`` client (see ``helpers.route`` for how the fake recognises the metric or step asking);
nothing of evalcore is mocked.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evalcore.judge.builtins import (
    builtin_names,
    list_metrics,
    register_builtins,
    unregister_metric,
)


@pytest.fixture(autouse=True)
def _registry_is_restored() -> Iterator[None]:
    """Tests may register their own metrics; afterwards the registry holds the built-ins again."""
    yield
    for spec in list_metrics():
        if spec.name not in builtin_names():
            unregister_metric(spec.name)
    register_builtins()
