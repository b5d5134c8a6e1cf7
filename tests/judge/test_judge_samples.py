"""Samples asked for by separate requests, and replicate runs, against FakeOpenAI over real HTTP."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from evalcore.errors import ConfigError
from evalcore.judge import (
    JudgeItem,
    JudgeRunner,
    JudgeTemplate,
    MemoryCache,
    MemorySink,
    ModelSettings,
    RunSettings,
    cache_key,
    estimate,
)
from evalcore.testing import FakeOpenAI, Fault, prompt_text
from tests.judge.conftest import FAST

Runner = Callable[..., JudgeRunner]
Items = Callable[..., list[JudgeItem]]

BY_REQUESTS = replace(FAST, samples_by="requests")


def _cycling(labels: list[str]) -> Callable[[dict[str, Any]], str]:
    """A reply rule answering each prompt's k-th request with ``labels[k % len(labels)]``, and
    refusing ``n`` (an endpoint without the ``n`` parameter would answer one choice anyway)."""
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def rule(request: dict[str, Any]) -> str:
        assert "n" not in request, "samples by requests must not send n"
        text = prompt_text(request)
        with lock:
            k = seen[text]
            seen[text] += 1
        return f"Considered.\nScore: {labels[k % len(labels)]}"

    return rule


def test_samples_by_requests_send_k_requests_and_store_k_samples(
    fake_server: Callable[..., FakeOpenAI], make_runner: Runner, likert: JudgeTemplate
) -> None:
    server = fake_server(reply=_cycling(["4", "4", "5"]))
    template = replace(likert, model=replace(likert.model, n=3, temperature=0.7))
    items = [JudgeItem(f"i{j}", {"response": f"r{j}", "gold": "-"}) for j in range(4)]
    sink = MemorySink()
    cache = MemoryCache()
    summary = make_runner(server, template, BY_REQUESTS).run_sync(items, sink, cache=cache)
    # 4 items × 3 samples = 12 requests, each of one sample; 4 results, one per item
    assert server.count == 12
    assert summary.requests == 12
    assert (summary.total, summary.ok) == (4, 4)
    assert len(cache) == 12
    for item in items:
        result = sink.results[(item.item_id, "AB")]
        # each item's requests answer 4, 4, 5 in turn, whatever order they arrive in
        assert sorted(s for s in result.samples if s is not None) == [4.0, 4.0, 5.0]
        assert result.label == 4.0  # the majority of 4, 4, 5, as for n=3 in one request
        assert result.details["spread"]["counts"] == {"4": 2, "5": 1}
        assert result.raw.count("[sample ") == 3
    per_item = Counter(prompt_text(r.body) for r in server.requests)
    assert sorted(per_item.values()) == [3, 3, 3, 3]


def test_resuming_a_by_requests_run_sends_nothing(
    fake_server: Callable[..., FakeOpenAI], make_runner: Runner, likert: JudgeTemplate
) -> None:
    server = fake_server(reply=_cycling(["2", "3"]))
    template = replace(likert, model=replace(likert.model, n=2, temperature=0.7))
    items = [JudgeItem(f"i{j}", {"response": f"r{j}", "gold": "-"}) for j in range(3)]
    cache = MemoryCache()
    make_runner(server, template, BY_REQUESTS).run_sync(items, MemorySink(), cache=cache)
    assert server.count == 6  # 3 items × 2 samples
    fresh = MemorySink()
    again = make_runner(server, template, BY_REQUESTS).run_sync(items, fresh, cache=cache)
    assert server.count == 6  # a new sink, every sample answered from the cache
    assert (again.requests, again.cached, again.ok) == (0, 3, 3)
    assert all(len(r.samples) == 2 for r in fresh.results.values())
    assert all(r.cached for r in fresh.results.values())


def test_unreadable_samples_leave_their_item_unparsed(
    fake_server: Callable[..., FakeOpenAI], make_runner: Runner, likert: JudgeTemplate
) -> None:
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def rule(request: dict[str, Any]) -> str:
        text = prompt_text(request)
        with lock:
            seen[text] += 1
        return "no score at all" if "bad" in text else "Score: 3"

    server = fake_server(reply=rule)
    template = replace(likert, model=replace(likert.model, n=3, temperature=0.7))
    items = [
        JudgeItem("good", {"response": "fine", "gold": "-"}),
        JudgeItem("bad", {"response": "bad", "gold": "-"}),
    ]
    sink = MemorySink()
    summary = make_runner(server, template, BY_REQUESTS).run_sync(items, sink)
    # unparsed samples are aggregated like unparsed choices: no sample read -> unparsed
    assert (summary.total, summary.ok, summary.unparsed) == (2, 1, 1)
    assert sink.results[("bad", "AB")].samples == (None, None, None)
    assert sink.results[("good", "AB")].samples == (3.0, 3.0, 3.0)


def test_samples_by_n_is_one_request_and_keys_match_the_plain_key(
    fake: FakeOpenAI, make_runner: Runner, likert: JudgeTemplate
) -> None:
    template = replace(likert, model=ModelSettings(n=3))
    items = [JudgeItem("x", {"response": "r", "gold": "4,4,5"})]
    sink = MemorySink()
    runner = make_runner(fake, template)
    runner.run_sync(items, sink)
    assert fake.count == 1
    body = fake.requests[0].body
    assert body["n"] == 3
    params = {k: v for k, v in body.items() if k not in ("model", "messages")}
    expected = cache_key(body["messages"], "fake-judge", params, endpoint=runner.endpoint)
    assert sink.results[("x", "AB")].cache_key == expected


def test_replicate_one_samples_again_and_its_resume_costs_nothing(
    fake: FakeOpenAI, make_runner: Runner, likert: JudgeTemplate, make_items: Items
) -> None:
    template = replace(likert, model=replace(likert.model, temperature=0.8))
    items = make_items(5)
    cache = MemoryCache()
    first_sink = MemorySink()
    first = make_runner(fake, template).run_sync(items, first_sink, cache=cache)
    assert (first.requests, fake.count) == (5, 5)
    # the same version again as replicate 0: every reply is a cache hit (a copy of the first run)
    copy = make_runner(fake, template).run_sync(items, MemorySink(), cache=cache)
    assert (copy.requests, copy.cached, fake.count) == (0, 5, 5)
    # replicate 1: really sent again, 0 cache hits
    second_settings = replace(FAST, replicate=1)
    runner = make_runner(fake, template, second_settings)
    assert runner.estimate(items, cache=cache).n_cached == 0
    second_sink = MemorySink()
    second = runner.run_sync(items, second_sink, cache=cache)
    assert (second.requests, second.cached, fake.count) == (5, 0, 10)
    first_keys = {r.cache_key for r in first_sink.results.values()}
    assert len(first_keys) == 5
    assert not first_keys & {r.cache_key for r in second_sink.results.values()}
    # resuming replicate 1 (a fresh sink, so nothing is skipped) is answered by its own cache
    resumed = make_runner(fake, template, second_settings).run_sync(
        items, MemorySink(), cache=cache
    )
    assert (resumed.requests, resumed.cached, fake.count) == (0, 5, 10)
    # and resuming with the same sink skips everything
    skipped = make_runner(fake, template, second_settings).run_sync(items, second_sink, cache=cache)
    assert (skipped.requests, skipped.skipped, fake.count) == (0, 5, 10)


def test_replicate_zero_keys_are_pinned() -> None:
    messages = [{"role": "user", "content": "hi"}]
    params = {"temperature": 0.0, "max_tokens": 512}
    # pinned before sample and replicate existed: replicate 0 and sample 0 must never change it
    pinned = "eaa78346126b46cf535b8ed28d377460fdcdeaaa49a5fdaa40ff854a3b71b23e"
    key = cache_key(messages, "m", params, endpoint="http://a/v1")
    assert key == cache_key(messages, "m", params, endpoint="http://a/v1", sample=0, replicate=0)
    assert key == pinned
    others = {
        cache_key(messages, "m", params, endpoint="http://a/v1", sample=1),
        cache_key(messages, "m", params, endpoint="http://a/v1", sample=2),
        cache_key(messages, "m", params, endpoint="http://a/v1", replicate=1),
        cache_key(messages, "m", params, endpoint="http://a/v1", sample=1, replicate=1),
    }
    assert len(others) == 4
    assert key not in others


def test_estimate_counts_the_requests_of_separate_samples(
    likert: JudgeTemplate, make_items: Items
) -> None:
    template = replace(likert, model=replace(likert.model, n=3, temperature=0.7))
    items = make_items(4)
    by_n = estimate(items, template, model="m")
    by_requests = estimate(items, template, model="m", samples_by="requests")
    assert (by_n.n_units, by_n.n_requests) == (4, 4)
    assert (by_requests.n_units, by_requests.n_requests) == (4, 12)  # 4 items × 3 samples
    # the same replies are asked for either way: 4 × 3 samples of output
    assert by_requests.expected_tokens_out == by_n.expected_tokens_out


@pytest.mark.parametrize(("field", "value"), [("samples_by", "twice"), ("replicate", -1)])
def test_bad_sampling_settings_are_config_errors(field: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=field):
        RunSettings(**{field: value})


def test_a_failed_sample_request_fails_its_item_once(
    fake_server: Callable[..., FakeOpenAI], make_runner: Runner, likert: JudgeTemplate
) -> None:
    # every request about "broken" answers 400 (not retried); the other item is unaffected
    server = fake_server(faults=[Fault.status_code(400, match="broken")])
    template = replace(likert, model=replace(likert.model, n=3, temperature=0.7))
    items = [
        JudgeItem("ok", {"response": "fine", "gold": "2"}),
        JudgeItem("bad", {"response": "broken", "gold": "2"}),
    ]
    sink = MemorySink()
    summary = make_runner(server, template, BY_REQUESTS).run_sync(items, sink)
    assert (summary.total, summary.ok, summary.failed) == (2, 1, 1)
    assert len(sink.results) == 2  # the three failed samples give one failed result
    assert sink.results[("bad", "AB")].status == "failed"
    assert sink.results[("ok", "AB")].samples == (2.0, 2.0, 2.0)
