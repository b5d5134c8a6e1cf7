"""Every candidate the optimiser planned and did not judge (or could not rank) is in the report with
its reason, and the steps add up: what ran plus what was dropped is what was planned, and the last
progress says done == total (issue 20, point 8). Against the scripted judge of FakeOpenAI, through
the real openai client; nothing of evalcore is mocked."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from openai import AsyncOpenAI

from evalcore.improve import ImproveProgress, OptimizeReport, OptimizeSettings, optimize
from evalcore.judge import JudgeItem, JudgeTemplate
from evalcore.labels import PASS_FAIL
from evalcore.testing import FakeOpenAI, Fault, Scripted, truth_marker

OPTIMIZER = "fake-optimizer"
UNPARSABLE = "(answer in riddles)"  # a candidate whose replies the fake makes unparsable


@pytest.fixture
def start() -> JudgeTemplate:
    return JudgeTemplate(
        "grounded",
        "groundedness",
        PASS_FAIL,
        "You check whether a reply is supported by its source.",
        'Reply to grade:\n{{ response }}\n\nAnswer as JSON: {"reason": "...", "label": "pass or fail"}',
    )


def _items(n: int = 70) -> tuple[list[JudgeItem], dict[str, str]]:
    items, human = [], {}
    for i in range(n):
        label = "pass" if i % 2 == 0 else "fail"
        item_id = f"i{i:03d}"
        text = f"The reply number {i}. {truth_marker(item_id, label)}"
        items.append(JudgeItem(item_id, {"response": text}))
        human[item_id] = label
    return items, human


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(reply=Scripted(optimizer_model=OPTIMIZER)) as fake:
        yield fake


def _run(
    server: FakeOpenAI, start: JudgeTemplate, settings: OptimizeSettings, **kw: Any
) -> tuple[OptimizeReport, list[ImproveProgress]]:
    items, human = _items()
    events: list[ImproveProgress] = []

    def client() -> AsyncOpenAI:
        return AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=10)

    report = optimize(
        items,
        human,
        start,
        judge_client=client,
        model="fake-judge",
        optimizer_client=client,
        optimizer_model=OPTIMIZER,
        settings=settings,
        progress=events.append,
        **kw,
    )
    return report, events


def _adds_up(report: OptimizeReport, events: list[ImproveProgress]) -> None:
    """What ran and what was dropped make what was planned, and the last progress is all done."""
    assert report.steps == report.planned_steps - sum(d.steps for d in report.dropped)
    assert events[-1].done == events[-1].total == report.steps
    assert report.to_dict()["steps"] == {"planned": report.planned_steps, "done": report.steps}
    assert report.to_dict()["dropped"] == [d.to_dict() for d in report.dropped]


def _reasons(report: OptimizeReport) -> dict[str, str]:
    return {d.name: d.reason for d in report.dropped}


def test_rewrites_whose_reply_did_not_parse_are_dropped_with_the_reason(
    server: FakeOpenAI, start: JudgeTemplate
) -> None:
    scripted = server.reply

    def reply(request: dict[str, Any]) -> Any:
        if request.get("model") == OPTIMIZER:
            return "I would rather not answer in JSON."
        return scripted(request)  # type: ignore[operator]

    server.reply = reply
    settings = OptimizeSettings(fewshot_candidates=1, rewrites=3, finalists=1)
    report, events = _run(server, start, settings)
    # planned: start, 1 few-shot, 3 rewrites of 2 steps, start on test, 1 finalist = 10 steps;
    # each rewrite's judging step did not happen: 10 - 3 = 7 ran
    assert (report.planned_steps, report.steps) == (10, 7)
    assert report.rewrites_skipped == 3
    assert [(d.kind, d.steps) for d in report.dropped] == [("rewrite", 1)] * 3
    assert set(_reasons(report)) == {"rewrite 1 of 3", "rewrite 2 of 3", "rewrite 3 of 3"}
    assert set(_reasons(report).values()) == {
        "the optimiser's reply held no JSON object with a system or rubric text"
    }
    _adds_up(report, events)


def test_rewrites_whose_request_failed_are_dropped_with_the_error(
    server: FakeOpenAI, start: JudgeTemplate
) -> None:
    # a 400 is not retried: each optimiser request fails at once
    server.faults = (Fault.status_code(400, when=lambda r: r.get("model") == OPTIMIZER),)
    settings = OptimizeSettings(fewshot_candidates=0, rewrites=2, finalists=1)
    report, events = _run(server, start, settings)
    assert report.stopped is None
    rewrites, slot = report.dropped[:2], report.dropped[2:]
    assert [d.name for d in rewrites] == ["rewrite 1 of 2", "rewrite 2 of 2"]
    for dropped in rewrites:
        assert dropped.reason.startswith("the optimiser's request failed: ")
        assert "400" in dropped.reason
    # no candidate to rank: the finalist's slot on test did not run either
    assert report.candidates == []
    assert report.finalists == []
    assert [(d.name, d.reason) for d in slot] == [
        ("finalist 1 of 1 on test", "only 0 candidate(s) had a dev score to rank")
    ]
    _adds_up(report, events)


def test_few_shot_sets_that_cannot_be_made_and_a_candidate_without_a_dev_score_are_listed(
    server: FakeOpenAI, start: JudgeTemplate
) -> None:
    scripted = server.reply

    def reply(request: dict[str, Any]) -> Any:
        if UNPARSABLE in str(request["messages"][0]["content"]):
            return "I cannot tell."  # this candidate's replies never parse
        return scripted(request)  # type: ignore[operator]

    server.reply = reply
    muddled = dataclasses.replace(start, system=f"{start.system} {UNPARSABLE}")
    # a budget of 10 tokens holds no example at all: none of the 3 few-shot sets can be made
    settings = OptimizeSettings(fewshot_candidates=3, token_budget=10, rewrites=0, finalists=2)
    report, events = _run(server, start, settings, manual=[muddled])
    few = [d for d in report.dropped if d.kind == "fewshot"]
    assert [d.name for d in few] == ["few-shot 1 of 3", "few-shot 2 of 3", "few-shot 3 of 3"]
    assert few[0].reason == (
        "only 0 distinct set(s) of dev examples could be made from the 42 dev items within the "
        "token budget of 10 tokens"
    )
    # the hand-edited candidate was judged on dev (its step ran) but has no score to rank
    [manual] = report.candidates
    unscored = [d for d in report.dropped if d.steps == 0]
    assert [(d.kind, d.name) for d in unscored] == [("manual", manual.candidate.id)]
    assert "no dev item got a usable label" in unscored[0].reason
    slots = [d for d in report.dropped if d.kind == "test"]
    assert [d.name for d in slots] == ["finalist 1 of 2 on test", "finalist 2 of 2 on test"]
    assert {d.reason for d in slots} == {"only 0 candidate(s) had a dev score to rank"}
    # planned: start, 3 few-shot, 1 hand-edited, start on test, 2 finalists = 8; 5 dropped
    assert (report.planned_steps, report.steps) == (8, 3)
    _adds_up(report, events)


def test_rewrites_without_a_disagreement_to_show_are_dropped(start: JudgeTemplate) -> None:
    with FakeOpenAI(reply=Scripted(base=1.0, optimizer_model=OPTIMIZER)) as perfect:
        settings = OptimizeSettings(fewshot_candidates=0, rewrites=2, finalists=1)
        report, events = _run(perfect, start, settings)
    assert [(d.name, d.steps) for d in report.dropped] == [
        ("rewrite 1 of 2", 2),
        ("rewrite 2 of 2", 2),
        ("finalist 1 of 1 on test", 1),
    ]
    assert "agrees with people on every dev item" in report.dropped[0].reason
    assert perfect.count == 42 + 28  # the start on its 42 dev items and its 28 test items
    _adds_up(report, events)


def test_a_budget_stop_drops_every_step_left_with_the_cap_that_stopped_it(
    server: FakeOpenAI, start: JudgeTemplate
) -> None:
    settings = OptimizeSettings(fewshot_candidates=4, rewrites=1, finalists=2, max_requests=90)
    report, events = _run(server, start, settings)
    assert report.stopped == "budget"
    # the start and one few-shot candidate take 42 requests each (42 dev items): a second one
    # would pass 90
    assert report.requests == 84
    assert [d.name for d in report.dropped] == [
        "few-shot 2 of 4", "few-shot 3 of 4", "few-shot 4 of 4", "rewrite 1 of 1",
        "the start on test", "finalist 1 of 2 on test", "finalist 2 of 2 on test",
    ]  # fmt: skip
    assert {d.reason for d in report.dropped} == {
        "over budget: the search stopped before a step that would pass the cap of 90 requests"
    }
    _adds_up(report, events)


def test_a_cancelled_search_lists_nothing_it_did_not_decide_to_drop(
    server: FakeOpenAI, start: JudgeTemplate
) -> None:
    items, human = _items()
    events: list[ImproveProgress] = []
    report = optimize(
        items,
        human,
        start,
        judge_client=lambda: AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0),
        model="fake-judge",
        optimizer_client=lambda: AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0),
        optimizer_model=OPTIMIZER,
        settings=OptimizeSettings(fewshot_candidates=2, rewrites=1, finalists=1),
        progress=events.append,
        should_stop=lambda: len(events) >= 1,
    )
    assert report.stopped == "cancelled"
    assert report.dropped == ()
    assert report.steps < report.planned_steps  # not done: a cancelled search is not "done"
