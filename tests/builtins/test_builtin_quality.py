"""Azure-style quality metrics end to end against the fake server: single-turn rows and
conversations with citations, replies that parse and ones that do not, missing inputs, thresholds."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from evalcore.data import load_file
from evalcore.errors import MissingVariableError
from evalcore.judge import JudgeItem, MemorySink
from evalcore.judge.builtins import MetricRunner, builtin_template, get_metric
from evalcore.testing import FakeOpenAI
from tests.builtins.helpers import FAST, by_id, client_for, items_of, user_text

QUALITY = [
    "groundedness",
    "relevance",
    "relevance_conversation",
    "relevance_conversation_reference",
    "coherence",
    "fluency",
    "retrieval",
    "similarity",
]
CONVERSATION_ONLY = {"relevance_conversation", "relevance_conversation_reference"}

_GOLD = re.compile(r"gold=(\d)")


def gold_reply(request: dict[str, Any]) -> str:
    """``{"reason", "score"}`` with the score named by the ``gold=N`` marker of the item."""
    found = _GOLD.findall(user_text(request))
    return json.dumps({"reason": "judged by the marker", "score": int(found[-1])})


SINGLE_TURN = b"".join(
    json.dumps(row).encode() + b"\n"
    for row in [
        {
            "id": f"q{n}",
            "question": f"When is the library open on day {n}?",
            "context": f"Day {n}: open 9-17. gold={n}",
            "answer": f"It opens at nine on day {n}. gold={n}",
            "ground_truth": f"9 to 17 on day {n}.",
        }
        for n in range(1, 6)
    ]
)


def _conversation(n: int, *, citations: bool = True) -> list[dict[str, Any]]:
    context = {"citations": [{"id": f"doc{n}.md", "content": f"Day {n}: open 9-17."}]}
    turns: list[dict[str, Any]] = [
        {"role": "user", "content": f"Is the library open on day {n}?"},
        {"role": "assistant", "content": "Yes, from nine.", "context": context},
        {"role": "user", "content": "Until when?"},
        {"role": "assistant", "content": f"Until five. gold={n}", "context": context},
    ]
    if not citations:
        for turn in turns:
            turn.pop("context", None)
    return turns


CONVERSATIONS = b"".join(
    json.dumps(
        {"id": f"c{n}", "messages": _conversation(n), "ground_truth": f"9-17 on day {n}"}
    ).encode()
    + b"\n"
    for n in range(1, 6)
)


def _items(metric: str) -> list[JudgeItem]:
    data = CONVERSATIONS if metric in CONVERSATION_ONLY else SINGLE_TURN
    return items_of(load_file(data, name="azure.jsonl").items)


@pytest.mark.parametrize("metric", QUALITY)
def test_quality_metric_scores_with_reason_and_pass_at_three(
    fake_server: Callable[..., FakeOpenAI], metric: str
) -> None:
    fake = fake_server(gold_reply)
    items = _items(metric)
    sink = MemorySink()
    summary = MetricRunner(metric, client_for(fake), settings=FAST, model="m").run_sync(items, sink)
    assert (summary.ok, summary.requests, fake.count) == (5, 5, 5)
    results = by_id(sink)
    for item in items:
        n = int(item.item_id[1:])
        result = results[item.item_id]
        assert (result.status, result.label, result.reason) == (
            "ok",
            float(n),
            "judged by the marker",
        )
        # pass = score >= 3 (the default threshold)
        assert result.details["result"] == ("pass" if n >= 3 else "fail")
        assert result.details["threshold"] == 3.0
    body = fake.requests[0].body
    template = builtin_template(metric)
    assert body["messages"][0]["content"] == template.system
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["reason", "score"]
    assert schema["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize(
    ("metric", "shown"),
    [
        ("groundedness", ["Question:", "Context:\nDay 2: open 9-17.", "Answer:\nIt opens at nine"]),
        ("relevance", ["Question:\nWhen is the library open on day 2?", "Context the answer"]),
        ("coherence", ["Question:", "Answer:\nIt opens at nine on day 2."]),
        ("fluency", ["Question (for context only):", "Answer:\nIt opens at nine on day 2."]),
        (
            "retrieval",
            ["Question:\nWhen", "Retrieved documents, in rank order:\nDay 2: open 9-17."],
        ),
        ("similarity", ["Ground-truth answer:\n9 to 17 on day 2.", "Answer to compare:\nIt opens"]),
    ],
)
def test_single_turn_prompts_show_the_inputs(
    fake_server: Callable[..., FakeOpenAI], metric: str, shown: list[str]
) -> None:
    fake = fake_server(gold_reply)
    items = [i for i in _items(metric) if i.item_id == "q2"]
    MetricRunner(metric, client_for(fake), settings=FAST, model="m").run_sync(items)
    prompt = user_text(fake.requests[0].body)
    for text in shown:
        assert text in prompt
    assert "[Turn" not in prompt  # the conversation branch is not rendered


@pytest.mark.parametrize(
    "metric", ["groundedness", "coherence", "fluency", "retrieval", *sorted(CONVERSATION_ONLY)]
)
def test_conversations_are_judged_as_one_readable_transcript_with_citations(
    fake_server: Callable[..., FakeOpenAI], metric: str
) -> None:
    fake = fake_server(gold_reply)
    items = [
        i for i in items_of(load_file(CONVERSATIONS, name="c.jsonl").items) if i.item_id == "c4"
    ]
    sink = MemorySink()
    MetricRunner(metric, client_for(fake), settings=FAST, model="m").run_sync(items, sink)
    assert by_id(sink)["c4"].label == 4.0
    assert fake.count == 1  # one judgement for the whole conversation
    prompt = user_text(fake.requests[0].body)
    assert "[Turn 1] User:\nIs the library open on day 4?" in prompt
    assert "[Turn 2] Assistant:\nUntil five. gold=4" in prompt
    assert (
        "Sources cited by the assistant in this turn:\n  [1] doc4.md: Day 4: open 9-17." in prompt
    )
    if metric == "relevance_conversation_reference":
        assert "Reference answer (what a complete reply contains):\n9-17 on day 4" in prompt


def test_groundedness_of_a_conversation_needs_citations(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    fake = fake_server(gold_reply)
    data = json.dumps({"id": "bare", "messages": _conversation(2, citations=False)}).encode()
    items = items_of(load_file(data + b"\n", name="c.jsonl").items)
    with pytest.raises(MissingVariableError) as info:
        MetricRunner("groundedness", client_for(fake), settings=FAST, model="m").run_sync(items)
    message = str(info.value)
    assert "metric 'groundedness'" in message
    assert "citations (context) is missing on 1 of 1 items ('bare')" in message
    assert "a conversation needs conversation, citations (context)" in message
    assert fake.count == 0


def test_hand_made_conversation_items_are_derived_like_loaded_ones(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    # A conversation given as a list in Azure's ``messages`` field, no derived fields at all.
    fake = fake_server(gold_reply)
    items = [JudgeItem("m1", {"messages": _conversation(5)})]
    sink = MemorySink()
    MetricRunner("groundedness", client_for(fake), settings=FAST, model="m").run_sync(items, sink)
    assert by_id(sink)["m1"].label == 5.0
    assert "[1] doc5.md: Day 5: open 9-17." in user_text(fake.requests[0].body)


@pytest.mark.parametrize(
    ("metric", "drop", "named"),
    [
        ("groundedness", "context", "context is missing on 2 of 5 items ('q1', 'q3')"),
        ("relevance", "question", "question (prompt) is missing on 2 of 5 items ('q1', 'q3')"),
        ("similarity", "ground_truth", "ground_truth (reference) is missing on 2 of 5 items"),
        ("coherence", "answer", "answer (response) is missing on 2 of 5 items ('q1', 'q3')"),
        ("retrieval", "context", "context is missing on 2 of 5 items ('q1', 'q3')"),
        ("relevance_conversation", "messages", "conversation is missing on 2 of 5 items"),
    ],
)
def test_missing_input_is_refused_before_any_request(
    fake_server: Callable[..., FakeOpenAI], metric: str, drop: str, named: str
) -> None:
    fake = fake_server(gold_reply)
    data = CONVERSATIONS if metric in CONVERSATION_ONLY else SINGLE_TURN
    rows = [json.loads(line) for line in data.decode().splitlines()]
    for row in rows[0::2][:2]:  # items 1 and 3
        row[drop] = ""
    blob = "".join(json.dumps(r) + "\n" for r in rows).encode()
    items = items_of(load_file(blob, name="azure.jsonl").items)
    with pytest.raises(MissingVariableError) as info:
        MetricRunner(metric, client_for(fake), settings=FAST, model="m").run_sync(items)
    assert f"metric {metric!r} cannot run" in str(info.value)
    assert named in str(info.value)
    assert fake.count == 0


def test_optional_inputs_may_be_absent(fake_server: Callable[..., FakeOpenAI]) -> None:
    fake = fake_server(gold_reply)
    items = [JudgeItem("f", {"answer": "Clear prose. gold=4"})]  # fluency: no question
    sink = MemorySink()
    MetricRunner("fluency", client_for(fake), settings=FAST, model="m").run_sync(items, sink)
    assert by_id(sink)["f"].label == 4.0
    assert "Question" not in user_text(fake.requests[0].body)


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ('{"reason": "too good", "score": 7}', "7 is not on the scale 1–5"),
        ("I would rather not say.", "no label on the scale 1–5 found in the reply"),
        ('{"reason": "fine", "score": "excellent"}', "excellent is not on the scale 1–5"),
    ],
)
def test_replies_that_do_not_parse_are_unparsed_with_the_reason(
    fake_server: Callable[..., FakeOpenAI], reply: str, error: str
) -> None:
    fake = fake_server(reply)
    sink = MemorySink()
    summary = MetricRunner("similarity", client_for(fake), settings=FAST, model="m").run_sync(
        _items("similarity"), sink
    )
    assert (summary.unparsed, summary.ok) == (5, 0)
    for result in sink:
        assert result.status == "unparsed"
        assert error in result.error
        assert result.raw == reply
        assert "result" not in result.details  # no pass/fail without a label


def test_a_changed_threshold_moves_the_pass_line(fake_server: Callable[..., FakeOpenAI]) -> None:
    fake = fake_server(gold_reply)
    items = _items("coherence")
    default, strict = MemorySink(), MemorySink()
    MetricRunner("coherence", client_for(fake), settings=FAST, model="m").run_sync(items, default)
    runner = MetricRunner("coherence", client_for(fake), settings=FAST, model="m", threshold=4)
    runner.run_sync(items, strict)
    verdicts = {k: r.details["result"] for k, r in by_id(default).items()}
    assert verdicts == {"q1": "fail", "q2": "fail", "q3": "pass", "q4": "pass", "q5": "pass"}
    verdicts = {k: r.details["result"] for k, r in by_id(strict).items()}
    assert verdicts == {"q1": "fail", "q2": "fail", "q3": "fail", "q4": "pass", "q5": "pass"}
    # the same requests both times: the threshold is not part of the prompt
    assert len({r.prompt_key for r in fake.requests}) == 5
    spec = get_metric("coherence").with_threshold(5)
    assert [spec.passes(float(n)) for n in range(1, 6)] == [False] * 4 + [True]
