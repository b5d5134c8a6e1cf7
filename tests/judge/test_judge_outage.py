"""An endpoint that goes away mid-run and comes back on the same port loses nothing.

The outage length is a parameter: the test stops the real fake server for ``OUTAGE_S`` seconds, with
retry settings whose least total backoff (``RunSettings.retry_window``) is longer, the same relation
that the default settings keep for a 30 s outage (checked without waiting 30 s).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable

import pytest

from evalcore.judge import (
    JudgeItem,
    JudgeRunner,
    JudgeTemplate,
    MemoryCache,
    MemorySink,
    Progress,
    RunSettings,
)
from evalcore.testing import FakeOpenAI

Server = Callable[..., FakeOpenAI]
Runner = Callable[..., JudgeRunner]

OUTAGE_S = 1.0
#: waits after attempts 1..7 of at most 0.05, 0.1, 0.2, 0.4, 0.8, 0.8, 0.8 s: at least 1.575 s in all
OUTAGE_SETTINGS = RunSettings(
    concurrency=3, max_attempts=8, backoff_base=0.05, backoff_max=0.8, timeout=5.0
)


def test_the_default_retries_outlast_a_30_second_outage() -> None:
    # waits after attempts 1..7: at most 0.5, 1, 2, 4, 8, 16, 30 (capped) = 61.5 s, at least half
    least, most = RunSettings().retry_window()
    assert (least, most) == (30.75, 61.5)
    assert least >= 30.0


def test_the_test_settings_outlast_the_test_outage() -> None:
    least, _ = OUTAGE_SETTINGS.retry_window()
    assert least == pytest.approx(1.575)  # (0.05 + 0.1 + 0.2 + 0.4 + 0.8 · 3) / 2
    assert least > OUTAGE_S


@pytest.mark.timeout(120)
def test_a_run_survives_its_endpoint_going_away_and_coming_back(
    fake_server: Server, make_runner: Runner, likert: JudgeTemplate
) -> None:
    server = fake_server(latency=0.05)
    port = server.port
    items = [
        JudgeItem(f"item-{i}", {"response": f"text {i}", "gold": 1 + i % 5}) for i in range(30)
    ]
    sink = MemorySink()
    cache = MemoryCache()
    started = threading.Event()
    done_before: set[str] = set()

    def watch(progress: Progress) -> None:
        if progress.done >= 5:
            started.set()

    runner = make_runner(server, likert, OUTAGE_SETTINGS)
    outcome: dict[str, object] = {}
    thread = threading.Thread(
        target=lambda: outcome.update(summary=runner.run_sync(items, sink, cache, progress=watch))
    )
    thread.start()
    assert started.wait(30)
    server.stop()  # the endpoint goes away: every connection is refused
    done_before = {item_id for item_id, _ in sink.results}
    sent_before = server.count
    threading.Event().wait(OUTAGE_S)
    resumed_at = time.monotonic()
    server.start()  # back on the same port
    thread.join(60)
    assert not thread.is_alive()
    assert server.port == port

    summary = outcome["summary"]
    assert summary.ok == 30
    assert summary.failed == 0
    assert {r.status for r in sink} == {"ok"}
    assert len(done_before) >= 5
    during = [r for r in server.requests[sent_before:] if r.t < resumed_at]
    assert not during  # the endpoint was really gone: nothing was served meanwhile
    assert summary.requests > 30  # type: ignore[attr-defined]  # attempts refused, then retried
    later = server.requests[sent_before:]
    answered = Counter(r.prompt_key for r in server.requests if r.status == 200)
    assert max(answered.values()) == 1  # no item was answered twice
    finished_prompts = {f"text {i.split('-')[1]}\n" for i in done_before}
    assert not any(p in r.prompt for r in later for p in finished_prompts)  # nothing repeated
