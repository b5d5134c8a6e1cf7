"""The scripted judge and optimiser of FakeOpenAI, through the real runner and the real ``openai`` client."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from evalcore.judge import JudgeItem, JudgeRunner, JudgeTemplate, MemorySink, OutputSpec
from evalcore.labels import LIKERT_5, PASS_FAIL
from evalcore.testing import FakeOpenAI, Scripted, ScriptedItem, rule_line, truth_marker

Runner = Callable[..., JudgeRunner]

BINARY = JudgeTemplate(
    name="grounded",
    criterion="groundedness",
    scale=PASS_FAIL,
    system='Label the reply pass or fail.\nReply with JSON only: {"reason": "...", "label": "pass"}',
    user="Reply:\n{{ response }}",
)


def _items(n: int, labels: Sequence[str] = ("pass", "fail")) -> list[JudgeItem]:
    return [
        JudgeItem(
            f"c{i:03d}",
            {"response": f"Answer {i}. {truth_marker(f'c{i:03d}', labels[i % len(labels)])}"},
        )
        for i in range(n)
    ]


def _truth(items: Sequence[JudgeItem]) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in items:
        text = str(item.fields["response"])
        found[item.item_id] = text.rsplit("truth=", 1)[1].rstrip(">")
    return found


def _accuracy(sink: MemorySink, truth: dict[str, str], cls: str | None = None) -> float:
    rows = [
        (str(r.label if not isinstance(r.label, float) else int(r.label)), truth[r.item_id])
        for r in sink.results.values()
        if cls is None or truth[r.item_id] == cls
    ]
    return sum(a == b for a, b in rows) / len(rows)


def _run(
    make_runner: Runner, server: FakeOpenAI, template: JudgeTemplate, items: list[JudgeItem]
) -> MemorySink:
    sink = MemorySink()
    summary = make_runner(server, template).run_sync(items, sink)
    assert summary.ok == len(items)
    return sink


def test_a_rule_about_a_class_raises_its_accuracy_and_nothing_else(
    fake_server: Callable[..., FakeOpenAI], make_runner: Runner
) -> None:
    server = fake_server(Scripted(base={"pass": 0.9, "fail": 0.5}, improved=0.95))
    items = _items(200)
    truth = _truth(items)
    start = _run(make_runner, server, BINARY, items)
    ruled = replace(BINARY, system=BINARY.system + "\n" + rule_line("fail"))
    better = _run(make_runner, server, ruled, items)
    # 100 items per class: the draws put roughly half of "fail" right at 0.5, nearly all at 0.95
    assert _accuracy(start, truth, "fail") < 0.7
    assert _accuracy(better, truth, "fail") > 0.85
    # the draw is per item, so the "pass" answers do not move at all
    for key, result in start.results.items():
        if truth[key[0]] == "pass":
            assert better.results[key].label == result.label
    # a rule only turns wrong answers right
    for key, result in start.results.items():
        if result.label == truth[key[0]]:
            assert better.results[key].label == result.label


def test_same_request_same_reply_and_json_in_the_template_format(
    fake_server: Callable[..., FakeOpenAI], make_runner: Runner
) -> None:
    server = fake_server(Scripted())
    items = _items(20)
    first = _run(make_runner, server, BINARY, items)
    second = _run(make_runner, server, BINARY, items)
    assert {k: r.raw for k, r in first.results.items()} == {
        k: r.raw for k, r in second.results.items()
    }
    reply = json.loads(next(iter(first.results.values())).raw)
    assert set(reply) == {"reason", "label"}
    structured = replace(BINARY, output=OutputSpec(structured=True, label_field="verdict"))
    sink = _run(make_runner, server, structured, items)
    assert set(json.loads(next(iter(sink.results.values())).raw)) == {"reason", "verdict"}


def test_likert_wrong_answers_are_neighbours(
    fake_server: Callable[..., FakeOpenAI], make_runner: Runner
) -> None:
    server = fake_server(Scripted(base=0.3, labels=["1", "2", "3", "4", "5"]))
    template = JudgeTemplate(
        name="help",
        criterion="helpfulness",
        scale=LIKERT_5,
        system="Rate 1-5.",
        user="{{ response }}",
    )
    items = _items(60, labels=("1", "2", "3", "4", "5"))
    truth = _truth(items)
    sink = _run(make_runner, server, template, items)
    distances = [abs(float(r.label) - float(truth[r.item_id])) for r in sink.results.values()]  # type: ignore[arg-type]
    assert set(distances) == {0.0, 1.0}
    assert 0.1 < distances.count(0.0) / len(distances) < 0.6


def test_an_example_of_a_class_helps_it_and_listing_items_helps_only_those(
    fake_server: Callable[..., FakeOpenAI], make_runner: Runner
) -> None:
    server = fake_server(Scripted(base=0.5))
    items = _items(200)
    truth = _truth(items)
    start = _run(make_runner, server, BINARY, items)
    example = str(items[1].fields["response"])  # a "fail" item
    shot = replace(BINARY, system=f"{BINARY.system}\nExample: {example}\nLabel: fail")
    shown = _run(make_runner, server, shot, items)
    assert _accuracy(shown, truth, "fail") > _accuracy(start, truth, "fail") + 0.25
    assert _accuracy(shown, truth, "pass") == _accuracy(start, truth, "pass")
    wrong = [i for i in items[:50] if start.results[(i.item_id, "AB")].label != truth[i.item_id]]
    listed = "; ".join(f"item {i.item_id} is {truth[i.item_id]}" for i in wrong)
    overfit = replace(BINARY, system=f"{BINARY.system}\nRemember: {listed}")
    fitted = _run(make_runner, server, overfit, items)
    for item in items:
        key = (item.item_id, "AB")
        if item in wrong:
            assert fitted.results[key].label == truth[item.item_id]
        elif item not in items[:50]:
            assert fitted.results[key].label == start.results[key].label


def _optimise(server: FakeOpenAI, prompt: str) -> dict[str, Any]:
    client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=10)
    reply = client.chat.completions.create(
        model="fake-optimizer", messages=[{"role": "user", "content": prompt}]
    )
    data: dict[str, Any] = json.loads(reply.choices[0].message.content or "")
    return data


def test_the_optimiser_proposes_rules_for_the_classes_it_is_shown(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    server = fake_server(Scripted(optimizer_modes=("rules", "useless", "overfit")))
    shown = "Disagreements:\n" + "\n".join(
        f"- {truth_marker(f'd{i}', 'fail')} human: fail, judge: pass" for i in range(3)
    )
    rules = _optimise(server, shown)
    assert set(rules) == {"system", "rubric"}
    assert rules["rubric"] == rule_line("fail")
    assert rule_line("fail") in rules["system"]
    assert _optimise(server, shown) == rules  # the same prompt, the same proposal
    useless = _optimise(server, shown + "\nAnother try.")
    assert "RULE" not in useless["system"]
    overfit = _optimise(server, shown + "\nA third try.")
    assert "item d0 is fail" in overfit["rubric"]
    # rules already in the prompt are kept: a second rewrite adds to the first
    more = json.loads(
        Scripted().optimize(
            {"messages": [{"role": "user", "content": f"{rule_line('pass')}\n{shown}"}]}
        )
    )
    assert rule_line("pass") in more["rubric"]
    assert rule_line("fail") in more["rubric"]
    assert [r.body["model"] for r in server.requests] == ["fake-optimizer"] * 4


def test_items_known_by_text_and_the_config_file(tmp_path: Path) -> None:
    config = {
        "base": 0.0,
        "items": [
            ["q1", "The tent is waterproof.", "pass"],
            {"item_id": "q2", "key": "Refunds take a year.", "label": "fail"},
        ],
    }
    path = tmp_path / "scripted.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    rule = Scripted.from_file(path)
    assert rule.items == (
        ScriptedItem("q1", "The tent is waterproof.", "pass"),
        ScriptedItem("q2", "Refunds take a year.", "fail"),
    )
    request = {
        "model": "j",
        "messages": [{"role": "user", "content": "Reply: Refunds take a year."}],
    }
    assert rule(request)["label"] == "pass"  # type: ignore[index]
    ruled = {
        "model": "j",
        "messages": [{"role": "system", "content": rule_line("fail")}, *request["messages"]],
    }  # type: ignore[list-item]
    assert rule(ruled)["label"] == "fail"  # type: ignore[index]
    with pytest.raises(ValueError, match="unknown optimiser mode"):
        Scripted.from_config({"optimizer_modes": ["magic"]})


def test_the_fake_process_serves_the_scripted_rule(tmp_path: Path) -> None:
    path = tmp_path / "scripted.json"
    path.write_text(json.dumps({"base": 1.0}), encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "evalcore.testing.fake_openai", "--reply-rule", f"scripted:{path}"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("READY ")
        client = OpenAI(base_url=line.split()[1], api_key="test", max_retries=0, timeout=10)
        reply = client.chat.completions.create(
            model="judge",
            messages=[{"role": "user", "content": f"x {truth_marker('a', 'fail')}"}],
        )
        assert json.loads(reply.choices[0].message.content or "") == {
            "reason": "The reply matches what the rubric asks for this label.",
            "label": "fail",
        }
    finally:
        process.terminate()
        process.wait(timeout=10)
