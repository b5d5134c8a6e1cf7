"""optimize() against the scripted judge of FakeOpenAI, through the real openai client.

The scripted judge answers an item right with probability 0.6 by default, 0.95 when the prompt
states a rule about its class or shows an example of it, and 0.99 when the prompt names the item
itself (what a candidate that only fits dev does). Nothing of evalcore is mocked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from openai import AsyncOpenAI

from evalcore.improve import (
    ImproveProgress,
    OptimizeReport,
    OptimizeSettings,
    candidate_template_toml,
    estimate_optimize,
    optimize,
)
from evalcore.judge import JudgeItem, JudgeTemplate, MemoryCache
from evalcore.labels import PASS_FAIL
from evalcore.testing import FakeOpenAI, Scripted, truth_marker

OPTIMIZER = "fake-optimizer"
_MARK = re.compile(r"<<item ([A-Za-z0-9_.\-]+) truth=")


@pytest.fixture
def start() -> JudgeTemplate:
    return JudgeTemplate(
        "grounded",
        "groundedness",
        PASS_FAIL,
        "You check whether a reply is supported by its source.",
        'Reply to grade:\n{{ response }}\n\nAnswer as JSON: {"reason": "...", "label": "pass or fail"}',
    )


def _items(n: int = 100) -> tuple[list[JudgeItem], dict[str, str], dict[str, str]]:
    items, human, comments = [], {}, {}
    for i in range(n):
        label = "pass" if i % 2 == 0 else "fail"
        item_id = f"i{i:03d}"
        text = f"The reply number {i} about topic {i % 7}. {truth_marker(item_id, label)}"
        items.append(JudgeItem(item_id, {"response": text}))
        human[item_id] = label
        if i % 5 == 0:
            comments[item_id] = f"annotator note on {item_id}"
    return items, human, comments


def _factory(server: FakeOpenAI) -> Callable[[], AsyncOpenAI]:
    return lambda: AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=10)


@pytest.fixture
def serve() -> Iterator[Callable[..., FakeOpenAI]]:
    started: list[FakeOpenAI] = []

    def make(**scripted: Any) -> FakeOpenAI:
        server = FakeOpenAI(reply=Scripted(optimizer_model=OPTIMIZER, **scripted)).start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


def _run(
    server: FakeOpenAI, start: JudgeTemplate, settings: OptimizeSettings, **kw: Any
) -> OptimizeReport:
    items, human, comments = _items(kw.pop("n", 100))
    return optimize(
        items,
        human,
        start,
        judge_client=_factory(server),
        model="fake-judge",
        optimizer_client=_factory(server),
        optimizer_model=OPTIMIZER,
        settings=settings,
        comments=comments,
        **kw,
    )


def test_the_optimiser_finds_a_version_better_on_test_and_no_test_item_leaks(
    serve: Callable[..., FakeOpenAI], start: JudgeTemplate
) -> None:
    server = serve(optimizer_modes=("rules",))
    phases: list[tuple[str, int]] = []

    def progress(p: ImproveProgress) -> None:
        phases.append((p.phase, server.count))

    settings = OptimizeSettings(fewshot_candidates=3, rewrites=2, finalists=2)
    report = _run(server, start, settings, progress=progress, cache=MemoryCache())

    assert report.stopped is None
    assert report.best is not None
    best = next(f for f in report.finalists if f.candidate is report.best)
    assert best.beats_start
    assert best.difference is not None
    assert best.difference > 0
    assert best.difference_interval is not None
    assert best.difference_interval[0] > 0
    assert best.test is not None
    assert report.start_test.test is not None
    assert best.test > report.start_test.test
    assert best.mcnemar_p is not None
    assert best.mcnemar_p < 0.05
    assert {c.candidate.kind for c in report.candidates} == {"fewshot", "rewrite"}

    # the discipline: nothing before the test phase, and no optimiser prompt, shows a test item
    test_ids = set(report.split.test)
    searched = max(count for phase, count in phases if phase != "test")
    requests = server.requests
    for request in requests[:searched]:
        assert not test_ids & set(_MARK.findall(request.prompt))
    optimiser_prompts = [r for r in requests if r.body.get("model") == OPTIMIZER]
    assert len(optimiser_prompts) == 2
    for request in optimiser_prompts:
        assert not test_ids & set(_MARK.findall(request.prompt))
    # ...and the test phase did judge them (the check above could fail)
    assert test_ids <= {i for r in requests[searched:] for i in _MARK.findall(r.prompt)}
    # few-shot examples come from dev items only
    for result in report.candidates:
        assert set(result.candidate.examples) <= set(report.split.dev)

    data = report.to_dict()
    assert set(data["split"]["dev"]) == set(report.split.dev)
    assert data["best"] == report.best.id
    assert all("dev" in c and "kind" in c for c in data["candidates"])
    toml = candidate_template_toml(report.best, report)
    assert JudgeTemplate.load_toml(toml) == report.best.template
    assert "split 'default'" in toml


def test_a_candidate_that_only_fits_dev_is_not_offered(
    serve: Callable[..., FakeOpenAI], start: JudgeTemplate
) -> None:
    server = serve(optimizer_modes=("overfit",))
    settings = OptimizeSettings(fewshot_candidates=0, rewrites=1, finalists=1)
    report = _run(server, start, settings)
    (candidate,) = report.candidates
    assert candidate.candidate.kind == "rewrite"
    start_dev = report.start.dev["accuracy_balanced"]
    assert start_dev is not None
    assert (candidate.dev["accuracy_balanced"] or 0) > start_dev  # it looks better on dev
    (final,) = report.finalists
    assert final.difference == pytest.approx(0.0)  # the same answers on items it never saw
    assert not final.beats_start
    assert report.best is None
    with pytest.raises(Exception, match="did not beat"):
        candidate_template_toml(candidate.candidate, report)


def test_the_request_cap_stops_the_run(
    serve: Callable[..., FakeOpenAI], start: JudgeTemplate
) -> None:
    server = serve()
    settings = OptimizeSettings(fewshot_candidates=6, rewrites=0, max_requests=150)
    report = _run(server, start, settings)
    assert report.stopped == "budget"
    assert report.requests <= 150
    assert server.count == report.requests
    assert report.finalists == []
    assert report.best is None
    assert len(report.candidates) == 1  # the start (60 dev items) and one candidate fit in 150


def test_the_dollar_cap_stops_the_run(
    serve: Callable[..., FakeOpenAI], start: JudgeTemplate
) -> None:
    server = serve()
    prices = {"fake-judge": (1000.0, 1000.0)}
    settings = OptimizeSettings(fewshot_candidates=2, rewrites=0, budget_usd=0.01)
    report = _run(server, start, settings, prices=prices)
    assert report.stopped == "budget"
    assert report.cost <= 0.01
    assert server.count == 0  # even the start's dev run would cost more


def test_a_cancelled_optimisation_resumes_from_the_cache(
    serve: Callable[..., FakeOpenAI], start: JudgeTemplate
) -> None:
    server = serve(optimizer_modes=("rules",))
    settings = OptimizeSettings(fewshot_candidates=2, rewrites=1, finalists=1)
    full = _run(server, start, settings, cache=MemoryCache())
    cache = MemoryCache()
    steps: list[int] = []
    first = _run(
        server,
        start,
        settings,
        cache=cache,
        progress=lambda p: steps.append(p.done),
        should_stop=lambda: len(steps) >= 2,
    )
    assert first.stopped == "cancelled"
    assert first.best is None
    assert first.finalists == []
    resumed = _run(server, start, settings, cache=cache)
    assert resumed.stopped is None
    assert first.requests + resumed.requests == full.requests
    assert 0 < resumed.requests < full.requests
    again = _run(server, start, settings, cache=cache)
    assert again.requests == 0  # answered from the cache
    assert again.best is not None
    assert full.best is not None
    assert again.best.template == full.best.template
    # the same figures as the uninterrupted run (only what was spent differs)
    assert again.to_dict()["finalists"] == full.to_dict()["finalists"]
    assert [c.dev for c in again.candidates] == [c.dev for c in full.candidates]


def test_manual_candidates_are_judged_the_same_way(
    serve: Callable[..., FakeOpenAI], start: JudgeTemplate
) -> None:
    server = serve()
    manual = JudgeTemplate(
        "grounded",
        "groundedness",
        PASS_FAIL,
        start.system
        + "\nRULE fail: any unsupported claim fails.\nRULE pass: all claims supported.",
        start.user,
    )
    settings = OptimizeSettings(fewshot_candidates=0, rewrites=0, finalists=1)
    report = _run(server, start, settings, manual=[manual])
    (candidate,) = report.candidates
    assert candidate.candidate.kind == "manual"
    assert report.best is not None
    assert report.best.template == manual


def test_the_estimate_counts_every_request(start: JudgeTemplate) -> None:
    items, human, _ = _items(100)
    settings = OptimizeSettings(fewshot_candidates=3, rewrites=2, finalists=2)
    requests, tokens_in, tokens_out, cost = estimate_optimize(
        items,
        human,
        start,
        model="fake-judge",
        optimizer_model=OPTIMIZER,
        settings=settings,
        prices={"fake-judge": (1.0, 2.0), OPTIMIZER: (1.0, 2.0)},
    )
    # 60 dev items for the start and 5 candidates, 40 test items for the start and 2 finalists,
    # and 2 optimiser requests
    assert requests == 6 * 60 + 3 * 40 + 2
    assert tokens_in > 0
    assert tokens_out > 0
    assert cost is not None
    assert cost > 0


def test_optimiser_replies_that_do_not_parse_are_skipped_and_counted(
    serve: Callable[..., FakeOpenAI], start: JudgeTemplate
) -> None:
    server = serve()
    scripted = server.reply

    def reply(request: dict[str, Any]) -> Any:
        if request.get("model") == OPTIMIZER:
            return "I would rather not answer in JSON."
        return scripted(request)

    server.reply = reply
    settings = OptimizeSettings(fewshot_candidates=1, rewrites=2, finalists=1)
    report = _run(server, start, settings)
    assert report.rewrites_skipped == 2
    assert [c.candidate.kind for c in report.candidates] == ["fewshot"]
    assert report.stopped is None
