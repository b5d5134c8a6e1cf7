"""Fixtures of the judge tests: the fake OpenAI-compatible server and clients of the real SDK.

Every judge test talks HTTP to :class:`evalcore.testing.FakeOpenAI` on 127.0.0.1 through the real
``openai`` client; nothing of evalcore is mocked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from openai import AsyncOpenAI

from evalcore.judge import (
    JudgeItem,
    JudgeRunner,
    JudgeTemplate,
    OutputSpec,
    RunSettings,
)
from evalcore.labels import LIKERT_5, PAIRWISE
from evalcore.testing import FakeOpenAI

#: Fast retry settings for tests: waits of a few milliseconds, never a wall-clock assertion.
FAST = RunSettings(concurrency=4, backoff_base=0.01, backoff_max=0.05, timeout=5.0)


@pytest.fixture
def fake(fake_server: Callable[..., FakeOpenAI]) -> FakeOpenAI:
    """A fake server with default behaviour (labels from ``expect=`` markers)."""
    return fake_server()


def client_factory_for(server: FakeOpenAI, key: str = "test-key") -> Callable[[], AsyncOpenAI]:
    return lambda: AsyncOpenAI(base_url=server.base_url, api_key=key, max_retries=0, timeout=10)


@pytest.fixture
def make_runner() -> Callable[..., JudgeRunner]:
    def make(
        server: FakeOpenAI,
        template: JudgeTemplate,
        settings: RunSettings = FAST,
        **kwargs: Any,
    ) -> JudgeRunner:
        kwargs.setdefault("model", "fake-judge")
        return JudgeRunner(client_factory_for(server), template, settings=settings, **kwargs)

    return make


@pytest.fixture
def likert() -> JudgeTemplate:
    return JudgeTemplate(
        name="fluency",
        criterion="fluency",
        scale=LIKERT_5,
        system="You judge how fluent a response is.",
        user="Response: {{ response }}\nmarker expect={{ gold }}",
    )


@pytest.fixture
def likert_json(likert: JudgeTemplate) -> JudgeTemplate:
    from dataclasses import replace

    return replace(likert, output=OutputSpec(structured=True))


@pytest.fixture
def pairwise() -> JudgeTemplate:
    return JudgeTemplate(
        name="preference",
        criterion="preference",
        scale=PAIRWISE,
        system="Compare two responses.",
        user="[A]\n{{ response_a }}\n[B]\n{{ response_b }}\nWhich is better?",
    )


@pytest.fixture
def make_items() -> Callable[..., list[JudgeItem]]:
    """Items whose expected label is 1..5 in turn (the fake server answers the ``expect=`` marker)."""

    def make(n: int, prefix: str = "item") -> list[JudgeItem]:
        return [
            JudgeItem(f"{prefix}-{i}", {"response": f"text {i}", "gold": 1 + i % 5})
            for i in range(n)
        ]

    return make
