"""The runner under any mix of duplicate, failing and cancelled items (Hypothesis), over real HTTP.

Every generated case runs a real :class:`~evalcore.testing.FakeOpenAI` with a drawn fault schedule,
cancels the run after a drawn number of results, resumes it with the same sink and cache, and checks
that every item ends with exactly one finished-or-failed result, that no finished item is recorded
twice, and that no request is sent again once its reply is in the cache.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcore.judge import (
    FINISHED_STATUSES,
    JudgeItem,
    JudgeResult,
    JudgeRunner,
    JudgeTemplate,
    MemoryCache,
    MemorySink,
    RunSettings,
)
from evalcore.labels import LIKERT_5
from evalcore.testing import FakeOpenAI, Fault

Server = Callable[..., FakeOpenAI]
Runner = Callable[..., JudgeRunner]

SETTINGS = RunSettings(
    concurrency=4, max_attempts=3, backoff_base=0.002, backoff_max=0.01, timeout=5.0
)
TEMPLATE = JudgeTemplate(
    name="fluency",
    criterion="fluency",
    scale=LIKERT_5,
    system="You judge how fluent a response is.",
    user="Response: {{ response }}\nmarker expect={{ gold }}",
)
#: Cases each property test runs; docs/reliability.md records these figures.
RUNNER_CASES = 40


class LoggingSink(MemorySink):
    """A memory sink that keeps every record (not only the latest) and can cancel itself."""

    def __init__(self, cancel_after: int | None = None) -> None:
        super().__init__(threading.Event())
        self.log: list[JudgeResult] = []
        self.cancel_after = cancel_after

    def record(self, result: JudgeResult) -> None:
        super().record(result)
        self.log.append(result)
        if self.cancel_after is not None and len(self.log) >= self.cancel_after:
            self.cancel()


def _client(server: FakeOpenAI) -> Callable[[], object]:
    from openai import AsyncOpenAI

    return lambda: AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0, timeout=5)


def test_three_identical_items_whose_shared_request_fails_each_get_one_failure(
    fake_server: Server, make_runner: Runner, likert: JudgeTemplate
) -> None:
    """Before the fix the second and third waiter both deleted the in-flight entry: KeyError."""
    server = fake_server(latency=0.05, faults=[Fault.status_code(400, match="same text")])
    items = [JudgeItem(f"dup-{i}", {"response": "same text", "gold": 3}) for i in range(4)]
    sink = MemorySink()
    summary = make_runner(server, likert, replace(SETTINGS, concurrency=4)).run_sync(items, sink)
    assert summary.failed == 4
    assert sink.records == 4  # one result per item
    assert {r.error for r in sink} == {"HTTP 400 (invalid_request_error): injected fault"}
    assert server.count == 1  # the shared request was sent once, and not again by the waiters


def test_a_later_duplicate_of_a_failed_request_shares_the_failure(
    fake_server: Server, make_runner: Runner, likert: JudgeTemplate
) -> None:
    server = fake_server(faults=[Fault.status_code(500, match="same text")])
    items = [JudgeItem(f"dup-{i}", {"response": "same text", "gold": 3}) for i in range(5)]
    sink = MemorySink()
    # one worker: the duplicates come one after the other, never in flight together
    summary = make_runner(server, likert, replace(SETTINGS, concurrency=1)).run_sync(items, sink)
    assert summary.failed == 5
    assert server.count == SETTINGS.max_attempts  # 3 attempts for the one request, none more


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, object]:
    texts = draw(st.integers(1, 6))
    picks = draw(st.lists(st.integers(0, texts - 1), min_size=1, max_size=14))
    faults: list[Fault] = []
    if draw(st.booleans()):
        faults.append(Fault.status_code(500, probability=draw(st.sampled_from([0.2, 0.5, 0.9]))))
    if draw(st.booleans()):
        faults.append(Fault.malformed(probability=0.3))
    if draw(st.booleans()):
        faults.append(Fault.status_code(400, match=f"text {draw(st.integers(0, texts - 1))}\n"))
    if draw(st.booleans()):
        faults.append(Fault.latency(0.01, probability=0.5))
    return {
        "items": [
            JudgeItem(f"item-{n}", {"response": f"text {pick}", "gold": 1 + pick % 5})
            for n, pick in enumerate(picks)
        ],
        "faults": faults,
        "seed": draw(st.integers(0, 10**6)),
        "cancel_after": draw(st.none() | st.integers(1, len(picks))),
        "concurrency": draw(st.sampled_from([1, 3, 8])),
    }


@settings(
    max_examples=RUNNER_CASES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(scenarios())
def test_every_item_ends_with_one_result_and_no_cached_request_is_sent_again(
    scenario: dict[str, object],
) -> None:
    items: list[JudgeItem] = scenario["items"]  # type: ignore[assignment]
    run_settings = replace(
        SETTINGS,
        concurrency=int(scenario["concurrency"]),
        # in-flight requests finish within the grace and are recorded and cached: with no grace a
        # request abandoned at the cancel may still be answered by the server after the runner
        # stopped listening, and the server's count could not tell it from a reply received
        cancel_grace=30.0,  # type: ignore[call-overload]
    )
    cache = MemoryCache()
    with FakeOpenAI(faults=scenario["faults"], seed=scenario["seed"]) as server:  # type: ignore[arg-type]
        runner = JudgeRunner(_client(server), TEMPLATE, settings=run_settings, model="fake-judge")  # type: ignore[arg-type]
        first = LoggingSink(cancel_after=scenario["cancel_after"])  # type: ignore[arg-type]
        runner.run_sync(items, first, cache)
        finished_first = {(r.item_id, r.order) for r in first.log if r.status in FINISHED_STATUSES}
        sent_first = server.count
        answered_first = {r.prompt_key for r in server.requests if _answered(r.status, r.fault)}

        second = LoggingSink()
        second.results = dict(first.results)  # the same sink, resumed
        runner.run_sync(items, second, cache)
        requests = server.requests

    # within one run, every (item, order) is recorded at most once
    for sink in (first, second):
        counts = Counter((r.item_id, r.order) for r in sink.log)
        assert max(counts.values(), default=0) <= 1
    # the resumed run never records again what the first one finished
    assert not finished_first & {(r.item_id, r.order) for r in second.log}
    # every item ends with exactly one result: finished in either run, or failed in the last
    assert set(second.results) == {(i.item_id, "AB") for i in items}
    # a reply received is cached: the same prompt is never answered twice
    answered = Counter(r.prompt_key for r in requests if _answered(r.status, r.fault))
    assert max(answered.values(), default=0) <= 1
    assert not any(r.prompt_key in answered_first for r in requests[sent_first:])
    # the same request in one run is sent at most max_attempts times, duplicates included
    for run in (requests[:sent_first], requests[sent_first:]):
        per_prompt = Counter(r.prompt_key for r in run)
        assert max(per_prompt.values(), default=0) <= run_settings.max_attempts


def _answered(status: int, fault: str | None) -> bool:
    return status == 200 and fault in (None, "latency")
