"""One runner interface: :class:`JudgeRunner` and :class:`MetricRunner` (template, pipeline and
function metrics) offer the same :class:`Runner` protocol and share one worker loop, one id check and
one reply cache, against the fake server through the real ``openai`` client."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from evalcore.errors import ConfigError
from evalcore.judge import (
    JudgeItem,
    JudgeRunner,
    JudgeTemplate,
    MemorySink,
    Runner,
    SqliteCache,
    normalise_base_url,
)
from evalcore.judge.builtins import MetricRunner, get_metric, run_pipeline
from evalcore.labels import LIKERT_5
from evalcore.testing import FakeOpenAI
from tests.builtins.helpers import FAST, client_for, route
from tests.builtins.test_builtin_ragas import DECOMPOSE, FACTUAL, VERIFY, _fc_items

QA = [
    JudgeItem(
        f"q{n}",
        {
            "prompt": f"Q{n}?",
            "response": f"Answer {n}.",
            "reference": f"Answer {n}.",
            "context": "c",
        },
    )
    for n in range(3)
]


PLAIN = JudgeTemplate("plain", "coherence", LIKERT_5, "", "Rate {{ response }}")


def _runners(server: FakeOpenAI) -> list[Runner]:
    return [
        JudgeRunner(client_for(server), PLAIN, settings=FAST, model="m"),
        MetricRunner("coherence", client_for(server), settings=FAST, model="m"),
        MetricRunner("factual_correctness", client_for(server), settings=FAST, model="m"),
        MetricRunner("f1_score", settings=FAST),
    ]


def test_every_runner_offers_the_one_interface(fake_server: Callable[..., FakeOpenAI]) -> None:
    server = fake_server(route({"": '{"reason": "fine", "score": 4}'}))
    for runner in _runners(server):
        assert isinstance(runner, Runner)
        prepared = runner.prepare(QA)
        assert [i.item_id for i in prepared] == ["q0", "q1", "q2"]
        assert runner.estimate(prepared).n_units == 3
        runner.close()


@pytest.mark.parametrize("index", [0, 1, 2, 3])
def test_every_runner_refuses_an_item_id_given_twice(
    fake_server: Callable[..., FakeOpenAI], index: int
) -> None:
    server = fake_server()
    runner = _runners(server)[index]
    twice = [QA[0], QA[1], JudgeItem("q0", dict(QA[2].fields))]
    with pytest.raises(ConfigError, match="'q0' appears twice"):
        runner.run_sync(twice, MemorySink())
    assert server.count == 0


def test_a_pipeline_needs_a_model_and_sends_it(fake_server: Callable[..., FakeOpenAI]) -> None:
    server = fake_server(FACTUAL)
    pipeline = get_metric("factual_correctness").pipeline
    assert pipeline is not None
    with pytest.raises(ConfigError, match="no model"):
        asyncio.run(run_pipeline(pipeline, client_for(server), _fc_items(1), settings=FAST))
    asyncio.run(run_pipeline(pipeline, client_for(server), _fc_items(1), settings=FAST, model="m"))
    assert {r.body["model"] for r in server.requests} == {"m"}


def test_a_pipeline_shares_the_file_cache_and_keys_it_by_endpoint(
    fake_server: Callable[..., FakeOpenAI], tmp_path: Path
) -> None:
    first, second = fake_server(FACTUAL), fake_server(FACTUAL)
    items = _fc_items(2)
    with SqliteCache(tmp_path / "replies.sqlite") as cache:
        for server in (first, first, second):
            runner = MetricRunner(
                "factual_correctness", client_for(server), settings=FAST, model="m"
            )
            runner.run_sync(items, MemorySink(), cache)
    # 2 items: 2 response decompositions and verifications, 1 reference decomposition and 1
    # verification shared by both = 6 requests per endpoint; the second run on `first` sent none
    assert (first.count, second.count) == (6, 6)
    assert first.requests_matching(DECOMPOSE) or first.requests_matching(VERIFY)


def test_a_metric_runner_names_the_endpoint_of_its_keys(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    server = fake_server()
    runner = MetricRunner(
        "coherence", client_for(server), settings=FAST, model="m", endpoint="http://Proxy/v1/"
    )
    inner = runner._runner
    assert inner is not None
    assert inner.endpoint == "http://proxy/v1"
    own = MetricRunner("coherence", client_for(server), settings=FAST, model="m")._runner
    assert own is not None
    assert own.endpoint == normalise_base_url(server.base_url)
