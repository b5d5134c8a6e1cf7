"""Vertex-style metrics against the fake server: pointwise with a rubric, pairwise with flipped or
both orders mapped back to the item's frame, and the metrics table in both directions."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evalcore.data import load_file, write_table
from evalcore.errors import MissingVariableError
from evalcore.judge import JudgeItem, MemorySink, orders_for
from evalcore.judge.builtins import (
    MetricRunner,
    combine_orders,
    get_metric,
    pairwise_metric,
    pointwise_metric,
    register_metric,
    results_from_vertex,
    to_vertex_table,
)
from evalcore.labels import Scale
from evalcore.metrics import calibrate
from evalcore.testing import FakeOpenAI
from tests.builtins.helpers import FAST, by_id, client_for, user_text

_GOLD = re.compile(r"gold=(\d)")


def pointwise_reply(request: dict[str, Any]) -> str:
    score = int(_GOLD.findall(user_text(request))[-1])
    return json.dumps({"reason": f"follows {score} of 5 instructions", "score": score})


def better_reply(request: dict[str, Any]) -> str:
    """Picks the response marked GOOD, in whichever slot it is shown; TIE when neither is."""
    prompt = user_text(request)
    a = prompt.split("Response A:\n", 1)[1].split("Response B:", 1)[0]
    b = prompt.split("Response B:\n", 1)[1].split("Compare the two", 1)[0]
    choice = "A" if "GOOD" in a else "B" if "GOOD" in b else "TIE"
    return json.dumps({"reason": "one is better", "choice": choice})


def _pointwise_items() -> list[JudgeItem]:
    return [
        JudgeItem(f"p{n}", {"prompt": f"Task {n}", "response": f"Done {n}. gold={n}"})
        for n in range(1, 6)
    ]


def _pairs() -> list[JudgeItem]:
    # candidate better on 0, 1, 2, 3; baseline better on 4, 5; neither on 6, 7
    out = []
    for i in range(8):
        cand = "GOOD answer" if i < 4 else "weak answer"
        base = "GOOD answer" if i in (4, 5) else "weak answer"
        out.append(
            JudgeItem(
                f"x{i}",
                {
                    "prompt": f"Question {i}",
                    "response": f"{cand} {i}",
                    "baseline_model_response": f"{base} {i}",
                },
            )
        )
    return out


EXPECTED = {f"x{i}": "A" if i < 4 else "B" if i < 6 else "TIE" for i in range(8)}


def test_pointwise_instruction_following(fake_server: Callable[..., FakeOpenAI]) -> None:
    fake = fake_server(pointwise_reply)
    sink = MemorySink()
    MetricRunner("instruction_following", client_for(fake), settings=FAST, model="m").run_sync(
        _pointwise_items(), sink
    )
    results = by_id(sink)
    assert [results[f"p{n}"].label for n in range(1, 6)] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert results["p3"].details["result"] == "pass"
    assert results["p2"].details["result"] == "fail"
    prompt = user_text(fake.requests[0].body)
    assert "Criteria and rubric:\nInstruction following:" in prompt
    assert "Possible ratings: 1, 2, 3, 4, 5" in prompt


def test_pointwise_factory_with_a_word_scale(fake_server: Callable[..., FakeOpenAI]) -> None:
    scale = Scale(("formal", "neutral", "casual"), "ordinal", "tone")
    spec = register_metric(pointwise_metric("tone", "formal, neutral or casual?", scale))
    assert spec.threshold is None
    fake = fake_server(lambda r: json.dumps({"reason": "relaxed", "score": "casual"}))
    sink = MemorySink()
    MetricRunner("tone", client_for(fake), settings=FAST, model="m").run_sync(
        _pointwise_items()[:2], sink
    )
    assert {r.label for r in sink} == {"casual"}
    enum = fake.requests[0].body["response_format"]["json_schema"]["schema"]["properties"]
    assert enum["score"] == {"type": "string", "enum": ["formal", "neutral", "casual"]}
    table = to_vertex_table(_pointwise_items()[:2], sink, "tone")
    assert table["tone/score"].tolist() == ["casual", "casual"]


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_pairwise_flip_shows_half_swapped_and_maps_back(
    fake_server: Callable[..., FakeOpenAI], seed: int
) -> None:
    fake = fake_server(better_reply)
    spec = get_metric("pairwise_instruction_following")
    assert spec.order_mode == "flip"  # Vertex flips half of the samples by default
    runner = MetricRunner(spec, client_for(fake), settings=replace(FAST, seed=seed), model="m")
    assert runner.settings.order_mode == "single"  # explicit settings win ...
    runner = MetricRunner(spec, client_for(fake), model="m")  # ... the metric's default otherwise
    assert runner.settings.order_mode == "flip"
    sink = MemorySink()
    runner = MetricRunner(
        spec, client_for(fake), settings=replace(FAST, order_mode="flip", seed=seed), model="m"
    )
    runner.run_sync(_pairs(), sink)
    orders = dict(sink.results.keys())  # (item_id, order) pairs
    flipped = {k for k, o in orders.items() if o == "BA"}
    assert flipped == {
        i.item_id
        for i in _pairs()
        if orders_for(spec.template, i.item_id, "flip", seed) == ("BA",)  # type: ignore[arg-type]
    }
    assert 0 < len(flipped) < 8
    # the judge always picks the GOOD text; mapped back, the label is in the item's frame
    assert {k: r.label for k, r in by_id(sink).items()} == EXPECTED
    for request in fake.requests:
        prompt = user_text(request.body)
        item = next(i for i in _pairs() if i.fields["prompt"] + "\n" in prompt + "\n")
        first = prompt.split("Response A:\n", 1)[1]
        shown_first = "baseline_model_response" if item.item_id in flipped else "response"
        assert first.startswith(item.fields[shown_first])


def test_pairwise_both_orders_and_position_bias(fake_server: Callable[..., FakeOpenAI]) -> None:
    fair = fake_server(better_reply)
    biased = fake_server(json.dumps({"reason": "the first one", "choice": "A"}))
    settings = replace(FAST, order_mode="both")
    fair_sink, biased_sink = MemorySink(), MemorySink()
    spec = "pairwise_instruction_following"
    MetricRunner(spec, client_for(fair), settings=settings, model="m").run_sync(_pairs(), fair_sink)
    MetricRunner(spec, client_for(biased), settings=settings, model="m").run_sync(
        _pairs(), biased_sink
    )
    assert len(fair_sink) == len(biased_sink) == 16
    assert {k: r.label for k, r in combine_orders(fair_sink).items()} == EXPECTED
    # always "the first slot": A in AB, B (the candidate shown second) in BA -> they disagree
    assert {r.label for r in biased_sink if r.order == "AB"} == {"A"}
    assert {r.label for r in biased_sink if r.order == "BA"} == {"B"}
    combined = combine_orders(biased_sink)
    assert {r.label for r in combined.values()} == {"TIE"}
    assert combined["x0"].reason == "[AB] the first one\n[BA] the first one"


def test_pairwise_needs_the_baseline(fake_server: Callable[..., FakeOpenAI]) -> None:
    fake = fake_server(better_reply)
    items = [JudgeItem("solo", {"prompt": "q", "response": "only one"})]
    with pytest.raises(MissingVariableError, match=r"baseline_model_response \(response_b\)"):
        MetricRunner("pairwise_instruction_following", client_for(fake), model="m").run_sync(items)
    assert fake.count == 0


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_pairwise_table_round_trips_through_evalcore_data(
    fake_server: Callable[..., FakeOpenAI], tmp_path: Path, suffix: str
) -> None:
    fake = fake_server(better_reply)
    sink = MemorySink()
    items = _pairs()
    metric = "pairwise_instruction_following"
    MetricRunner(
        metric, client_for(fake), settings=replace(FAST, order_mode="flip"), model="m"
    ).run_sync(items, sink)
    table = to_vertex_table(items, sink, metric)
    assert list(table.columns) == [
        "item_id",
        "prompt",
        "response",
        "baseline_model_response",
        f"{metric}/pairwise_choice",
        f"{metric}/explanation",
    ]
    assert table[f"{metric}/pairwise_choice"].tolist() == [
        {"A": "CANDIDATE", "B": "BASELINE", "TIE": "TIE"}[EXPECTED[i.item_id]] for i in items
    ]
    path = tmp_path / f"vertex.{suffix}"
    write_table(table, path)
    loaded = load_file(path)
    assert (loaded.layout, loaded.kind) == ("vertex", "pairwise")
    back = loaded.items.set_index("item_id")
    assert back.loc["x4", "response_a"] == "weak answer 4"
    assert back.loc["x4", "response_b"] == "GOOD answer 4"
    labels = loaded.label_set(metric)
    assert labels.judges["judge"].to_dict() == EXPECTED
    assert {r.item_id: r.label for r in results_from_vertex(loaded, metric)} == EXPECTED
    assert {r.reason for r in results_from_vertex(loaded, metric)} == {"one is better"}


def test_pointwise_table_round_trips_and_keeps_failures_visible(
    fake_server: Callable[..., FakeOpenAI], tmp_path: Path
) -> None:
    def reply(request: dict[str, Any]) -> str:
        return "no idea" if "Task 2" in user_text(request) else pointwise_reply(request)

    fake = fake_server(reply)
    sink = MemorySink()
    items = _pointwise_items()
    MetricRunner("instruction_following", client_for(fake), settings=FAST, model="m").run_sync(
        items, sink
    )
    table = to_vertex_table(items, sink, "instruction_following")
    assert table["instruction_following/score"].tolist()[2:] == [3.0, 4.0, 5.0]
    assert table["instruction_following/score"].isna().tolist()[:2] == [False, True]
    assert table["instruction_following/explanation"][1].startswith("unparsed: no label")
    path = tmp_path / "pointwise.csv"
    write_table(table, path)
    loaded = load_file(path)
    assert loaded.layout == "vertex"
    back = {r.item_id: r for r in results_from_vertex(loaded, "instruction_following")}
    assert {k: r.label for k, r in back.items() if r.status == "ok"} == {
        "p1": 1.0, "p3": 3.0, "p4": 4.0, "p5": 5.0,
    }  # fmt: skip
    assert back["p2"].status == "unparsed"
    assert back["p4"].reason == "follows 4 of 5 instructions"


def test_a_vertex_made_table_reads_into_the_same_structures(tmp_path: Path) -> None:
    path = tmp_path / "from_vertex.csv"
    path.write_text(
        "prompt,response,fluency/score,fluency/explanation,fluency/human_rating\n"
        "Hi,Hello there.,4.0,Reads well.,4\n"
        "Bye,Bye bye bye,2.0,Repetitive.,3\n"
        "Why,Because,error,,2\n",
        encoding="utf-8",
    )
    loaded = load_file(path)
    results = results_from_vertex(loaded, "fluency")
    assert [(r.item_id, r.status, r.label, r.reason) for r in results] == [
        ("1", "ok", 4.0, "Reads well."),
        ("2", "ok", 2.0, "Repetitive."),
        ("3", "unparsed", None, ""),
    ]
    human = loaded.label_set("fluency").human["human"].tolist()
    report = calibrate(human, [r.label for r in results], n_boot=0)
    assert (report.n, report.n_dropped) == (2, 1)  # the "error" row is dropped

    pairwise = tmp_path / "pairwise_from_vertex.jsonl"
    rows = [
        {"prompt": "p", "response": "a", "baseline_model_response": "b", "q/pairwise_choice": "CANDIDATE", "q/explanation": "a wins"},
        {"prompt": "p", "response": "c", "baseline_model_response": "d", "q/pairwise_choice": "BASELINE", "q/explanation": "d wins"},
        {"prompt": "p", "response": "e", "baseline_model_response": "f", "q/pairwise_choice": "TIE", "q/explanation": "same"},
    ]  # fmt: skip
    pairwise.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    back = results_from_vertex(load_file(pairwise), "q")
    assert [r.label for r in back] == ["A", "B", "TIE"]


def test_pairwise_factory_makes_a_registrable_metric(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    spec = register_metric(
        pairwise_metric(
            "pairwise_brevity",
            "Which response is shorter without losing content?",
            order_mode="both",
        )
    )
    assert spec.pass_rule == "no pass/fail: the result is a choice"
    fake = fake_server(better_reply)
    sink = MemorySink()
    MetricRunner("pairwise_brevity", client_for(fake), model="m").run_sync(_pairs()[:2], sink)
    assert len(sink) == 4  # both orders by the metric's own default
    assert "Which response is shorter" in user_text(fake.requests[0].body)
