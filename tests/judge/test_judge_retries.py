"""Retries, faults and cancellation, injected by the fake server and observed over real HTTP.

Waits are checked on the server's own arrival timestamps of the requests, never on the run's wall-clock
time.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from evalcore.errors import JudgeError
from evalcore.judge import (
    JsonlSink,
    JudgeItem,
    JudgeRunner,
    JudgeTemplate,
    MemoryCache,
    MemorySink,
    Progress,
    RunSettings,
)
from evalcore.testing import FakeOpenAI, Fault, http_date_in

Runner = Callable[..., JudgeRunner]
Items = Callable[..., list[JudgeItem]]
Server = Callable[..., FakeOpenAI]

SETTINGS = RunSettings(
    concurrency=4, max_attempts=4, backoff_base=0.01, backoff_max=0.05, timeout=5.0
)


def _gaps(server: FakeOpenAI, marker: str) -> list[float]:
    times = [r.t for r in server.requests_matching(marker)]
    return [b - a for a, b in itertools.pairwise(times)]


@pytest.mark.parametrize(
    ("fault", "at_least"),
    [
        (Fault.status_code(429, retry_after=0.4, match="text 3\n", first=1), 0.4),
        (Fault.status_code(429, retry_after_ms=300, match="text 3\n", first=1), 0.3),
        (Fault.status_code(503, retry_after=0.25, match="text 3\n", first=1), 0.25),
    ],
    ids=["retry-after-seconds", "retry-after-ms", "503-retry-after"],
)
def test_retry_after_is_honoured(
    fake_server: Server, make_runner: Runner, likert: JudgeTemplate, make_items: Items,
    fault: Fault, at_least: float,
) -> None:  # fmt: skip
    server = fake_server(faults=[fault])
    sink = MemorySink()
    summary = make_runner(server, likert, SETTINGS).run_sync(make_items(6), sink)
    assert summary.ok == 6
    statuses = [r.status for r in server.requests_matching("text 3\n")]
    assert statuses == [fault.status, 200]
    (gap,) = _gaps(server, "text 3\n")
    assert gap >= at_least  # measured between the server's arrival times of the two requests
    assert sink.results[("item-3", "AB")].attempts == 2


def test_retry_after_as_an_http_date_is_honoured(
    fake_server: Server, make_runner: Runner, likert: JudgeTemplate, make_items: Items
) -> None:
    # An HTTP date has whole seconds: two seconds ahead of the reply means a wait of at least one.
    server = fake_server(
        faults=[
            Fault.status_code(429, retry_after=lambda: http_date_in(2.0), match="text 1\n", first=1)
        ]
    )
    summary = make_runner(server, likert, SETTINGS).run_sync(make_items(2), MemorySink())
    assert summary.ok == 2
    (gap,) = _gaps(server, "text 1\n")
    assert gap >= 1.0


def test_server_errors_and_time_outs_are_retried(
    fake_server: Server, make_runner: Runner, likert: JudgeTemplate, make_items: Items
) -> None:
    server = fake_server(
        faults=[
            Fault.status_code(500, match="text 1\n", first=2),
            Fault.timeout(3.0, match="text 2\n", first=1),
            Fault.malformed(match="text 3\n", first=1),
        ]
    )
    settings = replace(SETTINGS, timeout=0.5)
    sink = MemorySink()
    summary = make_runner(server, likert, settings).run_sync(make_items(5), sink)
    assert summary.ok == 5
    assert summary.failed == 0
    attempts = {key[0]: r.attempts for key, r in sink.results.items()}
    assert attempts == {"item-0": 1, "item-1": 3, "item-2": 2, "item-3": 2, "item-4": 1}
    assert [r.fault for r in server.requests_matching("text 2\n")] == ["timeout", None]


def test_client_errors_fail_at_once_and_the_run_goes_on(
    fake_server: Server, make_runner: Runner, likert: JudgeTemplate, make_items: Items
) -> None:
    server = fake_server(
        faults=[Fault.status_code(400, match="text 2\n", message="context length exceeded")]
    )
    sink = MemorySink()
    summary = make_runner(server, likert, SETTINGS).run_sync(make_items(5), sink)
    assert (summary.ok, summary.failed) == (4, 1)
    failed = sink.results[("item-2", "AB")]
    assert failed.status == "failed"
    assert failed.label is None
    assert failed.error == "HTTP 400 (invalid_request_error): context length exceeded"
    assert failed.attempts == 1
    assert len(server.requests_matching("text 2\n")) == 1  # not retried


def test_attempts_never_exceed_the_limit_and_failures_are_recorded(
    fake_server: Server, make_runner: Runner, likert: JudgeTemplate, make_items: Items
) -> None:
    server = fake_server(
        faults=[
            Fault.status_code(500, match="text 1\n"),
            Fault.status_code(429, match="text 2\n", retry_after=0.01),
            Fault.malformed(match="text 3\n"),
        ]
    )
    sink = MemorySink()
    summary = make_runner(server, likert, SETTINGS).run_sync(make_items(6), sink)
    assert (summary.ok, summary.failed) == (3, 3)
    per_prompt = Counter(r.prompt_key for r in server.requests)
    assert max(per_prompt.values()) == SETTINGS.max_attempts
    for number, reason in ((1, "HTTP 500"), (2, "HTTP 429"), (3, "malformed response body")):
        result = sink.results[(f"item-{number}", "AB")]
        assert result.status == "failed"
        assert result.attempts == SETTINGS.max_attempts
        assert reason in result.error
        assert len(server.requests_matching(f"text {number}\n")) == SETTINGS.max_attempts
    assert sink.results[("item-3", "AB")].raw.startswith('{"id": "chatcmpl-fake')  # the broken body


def test_random_faults_never_exceed_the_limit_and_lose_nothing(
    fake_server: Server, make_runner: Runner, likert: JudgeTemplate, make_items: Items
) -> None:
    server = fake_server(
        faults=[
            Fault.status_code(429, probability=0.3, retry_after=0.01),
            Fault.status_code(500, probability=0.1),
        ],
        seed=3,
    )
    settings = replace(SETTINGS, concurrency=8, max_attempts=3)
    sink = MemorySink()
    summary = make_runner(server, likert, settings).run_sync(make_items(60), sink)
    assert len(sink) == 60
    assert sink.records == 60
    assert summary.ok + summary.failed == 60
    assert max(Counter(r.prompt_key for r in server.requests).values()) <= 3
    assert sum(r.attempts for r in sink) == server.count


def test_too_long_retry_after_fails_the_item_instead_of_stalling(
    fake_server: Server, make_runner: Runner, likert: JudgeTemplate, make_items: Items
) -> None:
    server = fake_server(faults=[Fault.status_code(429, retry_after=3600, match="text 0\n")])
    sink = MemorySink()
    make_runner(server, likert, SETTINGS).run_sync(make_items(2), sink)
    result = sink.results[("item-0", "AB")]
    assert result.status == "failed"
    assert "3600" in result.error
    assert result.attempts == 1


def test_truncated_reply_is_unparsed_with_the_reason(
    fake_server: Server, make_runner: Runner, likert_json: JudgeTemplate, make_items: Items
) -> None:
    server = fake_server(faults=[Fault.truncated(match="text 0\n")])
    sink = MemorySink()
    make_runner(server, likert_json, SETTINGS).run_sync(make_items(2), sink)
    result = sink.results[("item-0", "AB")]
    assert result.status == "unparsed"
    assert "cut off" in result.error
    assert result.raw.startswith('{"reason"')  # the partial reply is kept
    assert result.details["finish_reasons"] == ["length"]


def test_endpoint_refusal_stops_the_run(
    fake_server: Server, make_runner: Runner, likert: JudgeTemplate, make_items: Items
) -> None:
    server = fake_server(faults=[Fault.status_code(401, message="invalid credentials")])
    sink = MemorySink()
    with pytest.raises(
        JudgeError, match=r"HTTP 401 \(invalid_request_error\): invalid credentials"
    ):
        make_runner(server, likert, replace(SETTINGS, concurrency=1)).run_sync(make_items(20), sink)
    assert server.count == 1
    assert [r.status for r in sink] == ["failed"]


def test_rate_limits_let_the_run_complete(
    fake: FakeOpenAI, make_runner: Runner, likert: JudgeTemplate, make_items: Items
) -> None:
    settings = replace(SETTINGS, rpm=6000, tpm=1_000_000)
    summary = make_runner(fake, likert, settings).run_sync(make_items(5), MemorySink())
    assert summary.ok == 5


# --- cancellation ------------------------------------------------------------------------------------


def test_cancel_then_resume_judges_every_item_exactly_once(
    fake_server: Server,
    make_runner: Runner,
    likert: JudgeTemplate,
    make_items: Items,
    tmp_path: Path,
) -> None:
    server = fake_server(latency=0.05)
    items = make_items(80)
    path = tmp_path / "run.jsonl"
    cancel = threading.Event()

    def stop_after_ten(progress: Progress) -> None:
        if progress.done >= 10:
            cancel.set()

    runner = make_runner(server, likert, replace(SETTINGS, concurrency=4, cancel_grace=0.0))
    with JsonlSink(path, cancel_event=cancel) as sink:
        first = runner.run_sync(items, sink, progress=stop_after_ten)
    assert first.cancelled
    assert not first.complete
    done_first = {json.loads(line)["item_id"] for line in path.read_text().splitlines()}
    assert 10 <= len(done_first) < 80
    requests_first = server.count

    with JsonlSink(path) as sink:
        second = runner.run_sync(items, sink)
    assert second.complete
    assert not second.cancelled
    ids = [json.loads(line)["item_id"] for line in path.read_text().splitlines()]
    assert sorted(ids) == sorted(i.item_id for i in items)  # every item exactly once
    later = server.requests[requests_first:]
    assert not any(f"text {i.split('-')[1]}\n" in r.prompt for r in later for i in done_first)


def test_cancelled_before_start_sends_nothing(
    fake: FakeOpenAI, make_runner: Runner, likert: JudgeTemplate, make_items: Items
) -> None:
    sink = MemorySink()
    sink.cancel()
    cache = MemoryCache()
    summary = make_runner(fake, likert).run_sync(make_items(3), sink, cache)
    assert summary.cancelled
    assert fake.count == 0
    assert len(sink) == 0


def test_cancel_interrupts_retry_waits(
    fake_server: Server, make_runner: Runner, likert: JudgeTemplate, make_items: Items
) -> None:
    server = fake_server(faults=[Fault.status_code(429, retry_after=60)])
    cancel = threading.Event()
    sink = MemorySink(cancel)
    timer = threading.Timer(0.3, cancel.set)
    timer.start()
    try:
        summary = make_runner(server, likert, SETTINGS).run_sync(make_items(3), sink)
    finally:
        timer.cancel()
    assert summary.cancelled
    assert len(sink) == 0  # nothing was finished; a later run will do everything
    assert server.count == 3
