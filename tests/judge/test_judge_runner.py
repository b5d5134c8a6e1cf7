"""The runner against the fake server over real HTTP: outputs, pairwise orders, samples, cache, sinks."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evalcore.errors import ConfigError, MissingVariableError
from evalcore.judge import (
    JsonlSink,
    JudgeItem,
    JudgeResult,
    JudgeRunner,
    JudgeTemplate,
    MemoryCache,
    MemorySink,
    ModelSettings,
    OutputSpec,
    Progress,
    RunSettings,
    SqliteCache,
    estimate,
    orders_for,
)
from evalcore.testing import FakeOpenAI, prompt_text

Runner = Callable[..., JudgeRunner]
Items = Callable[..., list[JudgeItem]]


def _labels(sink: MemorySink) -> dict[tuple[str, str], Any]:
    return {key: result.label for key, result in sink.results.items()}


# --- basics ------------------------------------------------------------------------------------------


def test_text_replies_are_labelled_with_raw_kept(
    fake: FakeOpenAI, make_runner: Runner, likert: JudgeTemplate, make_items: Items
) -> None:
    items = make_items(10)
    sink = MemorySink()
    summary = make_runner(fake, likert).run_sync(items, sink)
    assert (summary.total, summary.ok, summary.requests) == (10, 10, 10)
    assert fake.count == 10
    for item in items:
        result = sink.results[(item.item_id, "AB")]
        assert result.status == "ok"
        assert result.label == float(item.fields["gold"])
        assert result.raw.endswith(f"Score: {item.fields['gold']}")
        assert result.tokens_in > 0
        assert result.tokens_out > 0
        assert result.attempts == 1
        assert not result.cached
    body = fake.requests[0].body
    assert body["model"] == "fake-judge"
    assert body["messages"][0] == {"role": "system", "content": likert.system}
    assert body["temperature"] == 0.0
    assert body["max_tokens"] == 512
    assert "response_format" not in body


def test_missing_variable_fails_before_any_request(
    fake: FakeOpenAI, make_runner: Runner, likert: JudgeTemplate, make_items: Items
) -> None:
    items = [*make_items(5), JudgeItem("broken", {"response": "no gold field"})]
    with pytest.raises(MissingVariableError) as info:
        make_runner(fake, likert).run_sync(items, MemorySink())
    assert (info.value.variable, info.value.item_id) == ("gold", "broken")
    assert fake.count == 0


def test_nested_missing_variable_also_fails_before_any_request(
    fake: FakeOpenAI, make_runner: Runner, likert: JudgeTemplate
) -> None:
    template = replace(likert, user="{{ response }} {{ meta.lang }}")
    items = [
        JudgeItem("1", {"response": "a", "meta": {"lang": "en"}}),
        JudgeItem("2", {"response": "b", "meta": {}}),
    ]
    with pytest.raises(MissingVariableError, match="lang"):
        make_runner(fake, template).run_sync(items)
    assert fake.count == 0


def test_duplicate_item_ids_are_refused(
    fake: FakeOpenAI, make_runner: Runner, likert: JudgeTemplate
) -> None:
    items = [
        JudgeItem("1", {"response": "a", "gold": 1}),
        JudgeItem("1", {"response": "b", "gold": 2}),
    ]
    with pytest.raises(ConfigError, match="twice"):
        make_runner(fake, likert).run_sync(items)


def test_model_is_required(fake: FakeOpenAI, likert: JudgeTemplate) -> None:
    with pytest.raises(ConfigError, match="no model"):
        JudgeRunner(lambda: None, likert)  # type: ignore[arg-type,return-value]


def test_structured_output_sends_a_schema_and_reads_json(
    fake: FakeOpenAI, make_runner: Runner, likert_json: JudgeTemplate, make_items: Items
) -> None:
    sink = MemorySink()
    make_runner(fake, likert_json).run_sync(make_items(5), sink)
    body = fake.requests[0].body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["properties"]["score"]["enum"] == [
        1,
        2,
        3,
        4,
        5,
    ]
    for result in sink:
        assert result.status == "ok"
        assert json.loads(result.raw)["score"] == result.label
        assert result.reason == "The response was read carefully against the rubric."


def test_logprob_score_is_computed_beside_the_label(
    fake: FakeOpenAI, make_runner: Runner, likert_json: JudgeTemplate, make_items: Items
) -> None:
    template = replace(likert_json, model=ModelSettings(logprobs=True, top_logprobs=5))
    sink = MemorySink()
    make_runner(fake, template).run_sync(make_items(5), sink)
    body = fake.requests[0].body
    assert body["logprobs"] is True
    assert body["top_logprobs"] == 5
    scores = {r.label: r.score for r in sink}
    # The fake puts 0.6 on the label and splits 0.4 over its neighbours on the scale:
    # label 1: 0.6·1 + 0.4·2 = 1.4; label 3: 0.6·3 + 0.2·2 + 0.2·4 = 3.0; label 5: 0.6·5 + 0.4·4 = 4.6
    assert scores[1.0] == pytest.approx(1.4)
    assert scores[3.0] == pytest.approx(3.0)
    assert scores[5.0] == pytest.approx(4.6)


def test_n_samples_give_the_majority_with_its_spread(
    fake: FakeOpenAI, make_runner: Runner, likert: JudgeTemplate
) -> None:
    template = replace(likert, model=ModelSettings(n=3))
    items = [JudgeItem("x", {"response": "r", "gold": "4,4,5"})]  # one label per sample
    sink = MemorySink()
    make_runner(fake, template).run_sync(items, sink)
    assert fake.requests[0].body["n"] == 3
    result = sink.results[("x", "AB")]
    assert result.label == 4.0
    assert result.samples == (4.0, 4.0, 5.0)
    assert result.details["spread"]["counts"] == {"4": 2, "5": 1}
    assert result.raw.count("[sample ") == 3


def test_unparsed_replies_are_recorded_with_reason_and_raw(
    fake_server: Callable[..., FakeOpenAI],
    make_runner: Runner,
    likert: JudgeTemplate,
    make_items: Items,
) -> None:
    server = fake_server(reply="I rate this a solid seven. Score: 7")
    sink = MemorySink()
    summary = make_runner(server, likert).run_sync(make_items(3), sink)
    assert (summary.ok, summary.unparsed, summary.failed) == (0, 3, 0)
    for result in sink:
        assert result.status == "unparsed"
        assert result.label is None
        assert result.error == "7 is not on the scale 1–5"
        assert result.raw == "I rate this a solid seven. Score: 7"
    assert summary.requests == 3  # a reply that does not parse is not retried


def test_refusal_is_unparsed(
    fake_server: Callable[..., FakeOpenAI],
    make_runner: Runner,
    likert: JudgeTemplate,
    make_items: Items,
) -> None:
    server = fake_server(reply="I'm sorry, I cannot evaluate this.")
    sink = MemorySink()
    make_runner(server, likert).run_sync(make_items(1), sink)
    (result,) = sink
    assert result.status == "unparsed"
    assert "declined" in result.error


def test_progress_reports_every_result(
    fake: FakeOpenAI, make_runner: Runner, likert: JudgeTemplate, make_items: Items
) -> None:
    seen: list[Progress] = []
    make_runner(fake, likert).run_sync(make_items(6), MemorySink(), progress=seen.append)
    assert [p.done for p in seen] == [1, 2, 3, 4, 5, 6]
    assert seen[-1].total == 6
    assert seen[-1].ok == 6
    assert seen[-1].failed == 0


def test_run_works_inside_a_running_event_loop(
    fake: FakeOpenAI, make_runner: Runner, likert: JudgeTemplate, make_items: Items
) -> None:
    runner = make_runner(fake, likert)

    async def inside() -> int:
        summary = runner.run_sync(make_items(2), MemorySink())  # as from a notebook cell
        return summary.ok

    assert asyncio.run(inside()) == 2


def test_identical_requests_in_one_run_are_sent_once(
    fake: FakeOpenAI, make_runner: Runner, likert: JudgeTemplate
) -> None:
    items = [JudgeItem(str(i), {"response": "same", "gold": 3}) for i in range(5)]
    sink = MemorySink()
    summary = make_runner(fake, likert).run_sync(items, sink, MemoryCache())
    assert fake.count == 1
    assert summary.ok == 5
    assert summary.requests == 1
    assert sum(r.cached for r in sink) == 4


# --- pairwise ----------------------------------------------------------------------------------------


def _prefers_good(request: dict[str, Any]) -> str:
    """A position-aware but consistent judge: it picks whichever slot shows the GOOD response."""
    text = prompt_text(request)
    slot_a = text.split("[A]", 1)[1].split("[B]", 1)[0]
    return "[[A]]" if "GOOD" in slot_a else "[[B]]"


def _pair_items(n: int) -> tuple[list[JudgeItem], dict[str, str]]:
    items, truth = [], {}
    for i in range(n):
        good_first = i % 2 == 0
        a, b = (
            (f"GOOD answer {i}", f"weak answer {i}")
            if good_first
            else (f"weak answer {i}", f"GOOD answer {i}")
        )
        items.append(JudgeItem(f"p{i}", {"response_a": a, "response_b": b}))
        truth[f"p{i}"] = "A" if good_first else "B"
    return items, truth


def test_pairwise_both_orders_map_the_verdict_back(
    fake_server: Callable[..., FakeOpenAI], make_runner: Runner, pairwise: JudgeTemplate
) -> None:
    server = fake_server(reply=_prefers_good)
    items, truth = _pair_items(6)
    sink = MemorySink()
    summary = make_runner(
        server, pairwise, replace(RunSettings(concurrency=4), order_mode="both")
    ).run_sync(items, sink)
    assert summary.total == 12
    assert summary.ok == 12
    for item_id, label in truth.items():
        assert sink.results[(item_id, "AB")].label == label
        assert (
            sink.results[(item_id, "BA")].label == label
        )  # shown swapped, stored in the item's frame
    swapped = [
        r for r in server.requests if "GOOD answer 1" in r.prompt and "weak answer 1" in r.prompt
    ]
    shown_first = sorted(r.prompt.split("[A]")[1].split("[B]")[0].strip() for r in swapped)
    assert shown_first == ["GOOD answer 1", "weak answer 1"]  # one request per order


def test_pairwise_flip_judges_a_stable_half_swapped(
    fake_server: Callable[..., FakeOpenAI], make_runner: Runner, pairwise: JudgeTemplate
) -> None:
    server = fake_server(reply=_prefers_good)
    items, truth = _pair_items(40)
    settings = RunSettings(concurrency=4, order_mode="flip", seed=11)
    sink = MemorySink()
    make_runner(server, pairwise, settings).run_sync(items, sink)
    orders = Counter(order for _, order in sink.results)
    assert orders["BA"] > 0
    assert orders["AB"] > 0
    assert orders["AB"] + orders["BA"] == 40
    assert all(sink.results[key].label == truth[key[0]] for key in sink.results)
    again = {i.item_id: orders_for(pairwise, i.item_id, "flip", 11) for i in items}
    assert {k for k, o in again.items() if o == ("BA",)} == {
        k for k, o in sink.results if o == "BA"
    }


def test_pairwise_swaps_vertex_field_names_too(
    fake_server: Callable[..., FakeOpenAI], make_runner: Runner
) -> None:
    from evalcore.labels import PAIRWISE

    template = JudgeTemplate(
        "vertex", "pref", PAIRWISE, "", "[A]\n{{ response }}\n[B]\n{{ baseline_model_response }}\n"
    )
    server = fake_server(reply=_prefers_good)
    items = [JudgeItem("v", {"response": "weak", "baseline_model_response": "GOOD one"})]
    sink = MemorySink()
    make_runner(server, template, RunSettings(order_mode="both")).run_sync(items, sink)
    assert sink.results[("v", "AB")].label == "B"
    assert sink.results[("v", "BA")].label == "B"


# --- cache -------------------------------------------------------------------------------------------


def test_second_run_is_served_from_the_cache_without_requests(
    fake: FakeOpenAI, make_runner: Runner, likert_json: JudgeTemplate, make_items: Items
) -> None:
    items = make_items(8)
    cache = MemoryCache()
    first, second = MemorySink(), MemorySink()
    runner = make_runner(fake, likert_json, prices={"fake-judge": (1.0, 2.0)})
    paid = runner.run_sync(items, first, cache)
    assert fake.count == 8
    assert paid.cost > 0
    seen: list[Progress] = []
    again = runner.run_sync(items, second, cache, progress=seen.append)
    assert fake.count == 8  # not one more request
    assert seen[-1].done == seen[-1].total == seen[-1].cached == 8
    assert again.requests == 0
    assert again.cached == 8
    assert again.cost == 0.0
    assert _labels(first) == _labels(second)
    for key, result in second.results.items():
        original = first.results[key]
        assert result.cached
        assert result.cost_this_run == 0.0
        assert (result.tokens_in, result.tokens_out, result.cost) == (
            original.tokens_in,
            original.tokens_out,
            original.cost,
        )


def test_changed_template_pays_only_for_changed_items(
    fake: FakeOpenAI, make_runner: Runner, likert: JudgeTemplate, make_items: Items
) -> None:
    items = make_items(10)
    items = [JudgeItem(i.item_id, {**i.fields, "long": n < 3}) for n, i in enumerate(items)]
    cache = MemoryCache()
    make_runner(fake, likert).run_sync(items, MemorySink(), cache)
    assert fake.count == 10
    edited = replace(likert, user=likert.user + "{% if long %}\nBe brief.{% endif %}")
    assert edited.content_hash != likert.content_hash
    summary = make_runner(fake, edited).run_sync(items, MemorySink(), cache)
    assert fake.count == 13  # only the 3 items whose rendered messages changed
    assert (summary.requests, summary.cached) == (3, 7)


def test_sqlite_cache_persists_between_processes(
    fake: FakeOpenAI, make_runner: Runner, likert: JudgeTemplate, make_items: Items, tmp_path: Path
) -> None:
    items = make_items(4)
    with SqliteCache(tmp_path / "c.sqlite") as cache:
        make_runner(fake, likert).run_sync(items, MemorySink(), cache)
        assert len(cache) == 4
    with SqliteCache(tmp_path / "c.sqlite") as cache:
        summary = make_runner(fake, likert).run_sync(items, MemorySink(), cache)
    assert fake.count == 4
    assert summary.cached == 4


def test_estimate_counts_cached_and_finished_work(
    fake: FakeOpenAI, make_runner: Runner, likert: JudgeTemplate, make_items: Items
) -> None:
    items = make_items(10)
    cache, sink = MemoryCache(), MemorySink()
    runner = make_runner(fake, likert)
    before = runner.estimate(items, cache)
    assert (before.n_units, before.n_requests, before.n_cached) == (10, 10, 0)
    assert before.expected_tokens_in > 0
    assert before.max_tokens_out == 10 * 512
    assert before.expected_cost is None  # no price for the fake model
    runner.run_sync(items[:4], sink, cache)
    after = runner.estimate(items, cache, MemorySink())
    assert (after.n_cached, after.n_requests) == (4, 6)
    resumed = runner.estimate(items, cache, sink)
    assert (resumed.n_skipped, resumed.n_requests) == (4, 6)
    priced = estimate(items, likert, None, {"gpt-4o-mini": (0.15, 0.60)}, model="gpt-4o-mini")
    assert priced.expected_cost == pytest.approx(
        (priced.expected_tokens_in * 0.15 + priced.expected_tokens_out * 0.60) / 1e6
    )
    assert fake.count == 4  # estimating sends nothing


# --- sinks -------------------------------------------------------------------------------------------


def test_jsonl_sink_writes_each_result_and_resumes(
    fake: FakeOpenAI, make_runner: Runner, likert: JudgeTemplate, make_items: Items, tmp_path: Path
) -> None:
    path = tmp_path / "out.jsonl"
    items = make_items(6)
    with JsonlSink(path) as sink:
        make_runner(fake, likert).run_sync(items[:4], sink)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 4
    assert {"item_id", "order", "status", "label", "raw", "tokens", "latency_s"} <= set(rows[0])
    with JsonlSink(path) as sink:
        summary = make_runner(fake, likert).run_sync(items, sink)
    assert summary.skipped == 4
    assert summary.requests == 2
    assert fake.count == 6
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert sorted(r["item_id"] for r in rows) == sorted(i.item_id for i in items)


def test_jsonl_sink_drops_failed_and_torn_lines_on_open(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    ok = JudgeResult("1", "AB", "ok", label=4.0, raw="Score: 4")
    failed = JudgeResult("2", "AB", "failed", error="HTTP 500")
    path.write_text(
        json.dumps(ok.to_dict())
        + "\n"
        + json.dumps(failed.to_dict())
        + "\n"
        + '{"item_id": "3", "sta'
    )
    with JsonlSink(path) as sink:
        assert sink.finished() == {("1", "AB")}
        assert sink.results() == [ok]
    assert len(path.read_text().splitlines()) == 1


def test_result_round_trips_through_its_dict() -> None:
    result = JudgeResult(
        "7", "BA", "ok", label="A", score=None, reason="r", raw="[[A]]", tokens_in=3, tokens_out=4,
        cost=0.5, latency_s=0.25, attempts=2, cache_key="k", cached=True, samples=("A", None),
        details={"spread": {"n": 2}},
    )  # fmt: skip
    assert JudgeResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result
    assert result.to_dict()["tokens"] == 7
    assert JudgeResult.from_dict(JudgeResult("1", "AB", "ok", label=4.0).to_dict()).label == 4.0


def test_structured_and_text_share_nothing_in_the_cache(
    fake: FakeOpenAI, make_runner: Runner, likert: JudgeTemplate, make_items: Items
) -> None:
    cache = MemoryCache()
    items = make_items(3)
    make_runner(fake, likert).run_sync(items, MemorySink(), cache)
    make_runner(fake, replace(likert, output=OutputSpec(structured=True))).run_sync(
        items, MemorySink(), cache
    )
    assert fake.count == 6  # response_format is part of the request, so of the key


def test_a_failing_sink_stops_the_run_with_its_error(
    fake: FakeOpenAI, make_runner: Runner, likert: JudgeTemplate, make_items: Items
) -> None:
    class FullDisk(MemorySink):
        def record(self, result: JudgeResult) -> None:
            if len(self.results) >= 3:
                raise OSError("no space left on device")
            super().record(result)

    sink = FullDisk()
    with pytest.raises(OSError, match="no space"):
        make_runner(fake, likert, RunSettings(concurrency=1)).run_sync(make_items(20), sink)
    assert len(sink) == 3
    assert fake.count == 4


def test_a_client_instance_serves_several_sync_runs(
    fake: FakeOpenAI, likert: JudgeTemplate, make_items: Items
) -> None:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
    runner = JudgeRunner(client, likert, model="fake-judge")
    try:
        first = runner.run_sync(make_items(2, "one"), MemorySink())
        second = runner.run_sync(make_items(2, "two"), MemorySink())
    finally:
        runner.close()
    assert (first.ok, second.ok) == (2, 2)
