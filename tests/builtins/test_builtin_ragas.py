"""RAGAS-style pipelines end to end against the fake server: factual correctness and the
summarization score. Every intermediate is kept; a step that does not parse never crashes a run;
re-runs cost no request; precision mode skips the reference side."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evalcore.data import load_file
from evalcore.errors import MissingVariableError
from evalcore.judge import JsonlSink, JudgeItem, MemoryCache, MemorySink, Progress
from evalcore.judge.builtins import (
    MetricRunner,
    configure_metric,
    factual_correctness,
    get_metric,
    summarization,
)
from evalcore.testing import FakeOpenAI, Fault
from tests.builtins.helpers import FAST, by_id, client_for, route, user_text

DECOMPOSE = "You break texts into claims"
VERIFY = "You decide whether statements follow"
KEYPHRASES = "You pick out the key phrases"
QUESTIONS = "You write yes/no questions"
ANSWERS = "You answer yes/no questions"

RESPONSE = "Paris is the capital of France. It has 3 million people."
REFERENCE = (
    "Paris is the capital of France. It has about 2.1 million inhabitants. It hosts the Louvre."
)
CLAIMS = {
    RESPONSE: ["Paris is the capital of France.", "Paris has 3 million people."],
    REFERENCE: [
        "Paris is the capital of France.",
        "Paris has about 2.1 million inhabitants.",
        "Paris hosts the Louvre.",
    ],
}
TRUE = {"Paris is the capital of France."}


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0].strip()


def decompose(request: dict[str, Any]) -> dict[str, Any]:
    text = user_text(request).rsplit("Text:\n", 1)[1].split("\n\nReply with JSON", 1)[0]
    return {"claims": CLAIMS[text.strip()]}


def verify(request: dict[str, Any]) -> dict[str, Any]:
    claims = json.loads(
        _between(user_text(request), "Statements (a JSON array):", "Give a verdict")
    )
    return {
        "verdicts": [
            {"statement": c, "reason": "checked", "verdict": int(c in TRUE)} for c in claims
        ]
    }


FACTUAL = route({DECOMPOSE: decompose, VERIFY: verify})


def _fc_items(n: int = 1) -> list[JudgeItem]:
    """``n`` items whose responses differ only in trailing spaces (so their requests differ)."""
    return [
        JudgeItem(f"fc{i}", {"response": RESPONSE + " " * i, "reference": REFERENCE})
        for i in range(n)
    ]


def _run(spec: Any, server: FakeOpenAI, items: list[JudgeItem], **kwargs: Any) -> MemorySink:
    sink = kwargs.pop("sink", None) or MemorySink()
    MetricRunner(spec, client_for(server), settings=FAST, model="m", **kwargs).run_sync(
        items, sink, kwargs.pop("cache", None)
    )
    return sink


# --- factual correctness ---------------------------------------------------------------------------


def test_factual_correctness_keeps_every_intermediate(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    fake = fake_server(FACTUAL)
    result = by_id(_run("factual_correctness", fake, _fc_items()))["fc0"]
    assert result.status == "ok"
    d = result.details
    assert d["response_claims"] == CLAIMS[RESPONSE]
    assert d["reference_claims"] == CLAIMS[REFERENCE]
    assert [v["verdict"] for v in d["response_verdicts"]] == [1, 0]
    assert [v["verdict"] for v in d["reference_verdicts"]] == [1, 0, 0]
    assert d["response_verdicts"][1] == {
        "statement": "Paris has 3 million people.",
        "reason": "checked",
        "verdict": 0,
    }
    # TP 1 (capital), FP 1 (3 million), FN 2 (2.1 million, Louvre)
    assert (d["tp"], d["fp"], d["fn"]) == (1, 1, 2)
    # P = 1/2, R = 1/3: F1 = 2 * (1/6) / (5/6) = 0.4
    assert result.score == 0.4
    assert d["score"] == 0.4
    assert (d["threshold"], d["result"], result.label) == (0.5, "fail", "fail")
    assert "TP 1, FP 1, FN 2" in result.reason
    assert [r["step"] for r in d["requests"]] == ["decompose", "verify", "decompose", "verify"]
    assert fake.count == 4
    assert "[decompose]" in result.raw
    assert "[verify]" in result.raw


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"mode": "precision"}, 0.5),  # P = TP / (TP + FP) = 1/2
        ({"mode": "recall"}, 0.33),  # R = TP / (TP + FN) = 1/3 = 0.333 -> 0.33
        ({"beta": "0.5"}, 0.45),  # 1.25 * (1/6) / (0.25 * 1/2 + 1/3) = 0.2083 / 0.4583 = 0.4545
        ({"beta": "1"}, 0.4),  # 2 * (1/6) / (1/2 + 1/3) = 0.4
        ({"beta": "2"}, 0.36),  # 5 * (1/6) / (4 * 1/2 + 1/3) = 0.8333 / 2.3333 = 0.357
    ],
)
def test_modes_and_f_beta(
    fake_server: Callable[..., FakeOpenAI], params: dict[str, str], expected: float
) -> None:
    fake = fake_server(FACTUAL)
    spec = configure_metric("factual_correctness", params)
    assert by_id(_run(spec, fake, _fc_items()))["fc0"].score == expected


def _steps(server: FakeOpenAI, system: str) -> list[str]:
    return [
        user_text(r.body) for r in server.requests if system in r.body["messages"][0]["content"]
    ]


def test_precision_mode_sends_no_reference_side_requests(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    items = _fc_items(3)
    f1, precision = fake_server(FACTUAL), fake_server(FACTUAL)
    _run("factual_correctness", f1, items)
    result = by_id(_run(factual_correctness("fc_p", mode="precision"), precision, items))["fc1"]
    # f1: 3 response decompositions + 1 reference decomposition (the same text for every item,
    # asked once); 1 verification against the reference (the same claims for every item) + 3
    # verifications of the reference claims against each response = 8 requests
    assert f1.count == 8
    assert sum(f"Text:\n{REFERENCE}" in t for t in _steps(f1, DECOMPOSE)) == 1
    assert sum(f"Passage:\n{RESPONSE}" in t for t in _steps(f1, VERIFY)) == 3
    # precision: the 3 response decompositions and the 1 verification only
    assert precision.count == 4
    assert not [t for t in _steps(precision, DECOMPOSE) if f"Text:\n{REFERENCE}" in t]
    assert not [t for t in _steps(precision, VERIFY) if f"Passage:\n{RESPONSE}" in t]
    assert "reference_claims" not in result.details
    assert (result.details["fn"], result.score) == (0, 0.5)


@pytest.mark.parametrize(
    ("atomicity", "coverage", "present", "absent"),
    [
        ("low", "low", "The Rhine flows from the Swiss Alps", "Cologne lies on the Rhine."),
        ("high", "high", "Cologne lies on the Rhine.", "The Rhine flows from the Swiss Alps"),
        ("high", "low", "atomic: one fact per claim", "Cover everything the text states"),
        ("low", "high", "Cover everything the text states", "atomic: one fact per claim"),
    ],
)
def test_atomicity_and_coverage_choose_their_examples(
    fake_server: Callable[..., FakeOpenAI], atomicity: str, coverage: str, present: str, absent: str
) -> None:
    fake = fake_server(FACTUAL)
    spec = factual_correctness("fc_x", atomicity=atomicity, coverage=coverage, mode="precision")  # type: ignore[arg-type]
    _run(spec, fake, _fc_items())
    prompt = user_text(fake.requests_matching("Break the text below into claims")[0].body)
    assert present in prompt
    assert absent not in prompt


def test_a_reply_that_does_not_parse_keeps_the_partial_intermediates(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    def short(request: dict[str, Any]) -> dict[str, Any]:  # one verdict for two statements
        return {"verdicts": [{"statement": "x", "reason": "", "verdict": 1}]}

    fake = fake_server(route({DECOMPOSE: decompose, VERIFY: short}))
    result = by_id(_run("factual_correctness", fake, _fc_items()))["fc0"]
    assert result.status == "unparsed"
    assert result.error == "step verify: expected 2 verdicts, one per statement, got 1"
    assert result.details["response_claims"] == CLAIMS[RESPONSE]
    assert "response_verdicts" not in result.details
    assert result.label is None
    assert result.score is None
    assert fake.count == 2  # the item stopped at the step that failed


@pytest.mark.parametrize(
    ("decompose_reply", "error"),
    [
        ("The claims are: Paris is big.", "step decompose: no JSON object in the reply"),
        ('{"statements": ["a"]}', "step decompose: the reply has no 'claims' list"),
        ('{"claims": "Paris"}', "step decompose: 'claims' is str, not a list"),
    ],
)
def test_bad_decompositions_are_unparsed_with_the_step(
    fake_server: Callable[..., FakeOpenAI], decompose_reply: str, error: str
) -> None:
    fake = fake_server(route({DECOMPOSE: decompose_reply, VERIFY: verify}))
    sink = _run("factual_correctness", fake, _fc_items(2))
    assert {r.status for r in sink} == {"unparsed"}
    assert {r.error for r in sink} == {error}
    assert by_id(sink)["fc0"].raw == f"[decompose]\n{decompose_reply}"


def test_a_step_without_a_reply_fails_the_item_only(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    fake = fake_server(
        FACTUAL,
        faults=[
            Fault.status_code(400, match="Passage:\nParis is the capital of France. It has about")
        ],
    )
    sink = _run("factual_correctness", fake, _fc_items(2))
    for result in sink:
        assert result.status == "failed"
        assert result.error.startswith("step verify: HTTP 400")
        assert result.details["response_claims"] == CLAIMS[RESPONSE]


def test_empty_claim_lists_need_no_verification(fake_server: Callable[..., FakeOpenAI]) -> None:
    fake = fake_server(route({DECOMPOSE: {"claims": []}, VERIFY: verify}))
    result = by_id(_run("factual_correctness", fake, _fc_items()))["fc0"]
    assert fake.count == 2  # two decompositions, no verification
    assert (result.details["tp"], result.details["fp"], result.details["fn"]) == (0, 0, 0)
    assert result.score == 0.0  # P = R = 0 -> 0


def test_rerun_costs_zero_requests_and_resume_skips_finished_items(
    fake_server: Callable[..., FakeOpenAI], tmp_path: Path
) -> None:
    fake = fake_server(FACTUAL, latency=0.02)
    cache = MemoryCache()
    items = _fc_items(6)
    runner = MetricRunner(
        "factual_correctness", client_for(fake), settings=replace(FAST, concurrency=3), model="m"
    )
    out = tmp_path / "fc.jsonl"
    with JsonlSink(out) as sink:
        first = runner.run_sync(items[:4], sink, cache)
    # 4 items: 4 response decompositions + 4 verifications against each response, and the
    # requests that are the same for every item asked once: 1 reference decomposition + 1
    # verification of the (same) response claims against the reference = 10
    assert first.requests == fake.count == 4 + 4 + 1 + 1
    assert fake.max_in_flight <= 3
    with JsonlSink(out) as sink:
        resumed = runner.run_sync(items, sink, cache)
        assert (resumed.skipped, resumed.ok) == (4, 2)
    assert fake.count == 10 + 2 * 2  # only the 2 new items' response-specific requests
    again = MemorySink()
    summary = runner.run_sync(items, again, cache)
    assert (summary.requests, summary.cached, fake.count) == (0, 6, 14)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 6
    assert all(row["details"]["response_claims"] for row in rows)
    assert {r.score for r in again} == {0.4}


def test_cancelling_stops_the_run_and_a_later_run_finishes_it(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    fake = fake_server(FACTUAL, latency=0.01)
    cache = MemoryCache()
    items = _fc_items(8)
    sink = MemorySink()

    def stop_after_two(progress: Progress) -> None:
        if progress.done >= 2:
            sink.cancel()

    settings = replace(FAST, concurrency=1, cancel_grace=5.0)
    runner = MetricRunner("factual_correctness", client_for(fake), settings=settings, model="m")
    first = runner.run_sync(items, sink, cache, progress=stop_after_two)
    assert first.cancelled
    assert 2 <= len(sink) < 8
    assert {r.status for r in sink} == {"ok"}  # an item cut short is not recorded
    sent = fake.count
    resumed = MetricRunner(
        "factual_correctness", client_for(fake), settings=FAST, model="m"
    ).run_sync(items, MemorySink(), cache)
    assert resumed.ok == 8
    assert resumed.cached == len(sink)  # the finished items cost nothing again
    assert fake.count - sent <= (8 - len(sink)) * 4


def test_missing_reference_is_refused_before_any_request(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    fake = fake_server(FACTUAL)
    items = [*_fc_items(2), JudgeItem("no-ref", {"response": RESPONSE})]
    with pytest.raises(
        MissingVariableError, match=r"reference is missing on 1 of 3 items \('no-ref'\)"
    ):
        _run("factual_correctness", fake, items)
    assert fake.count == 0


# --- summarization -----------------------------------------------------------------------------------

CONTEXTS = ["Lindqvist Foods bought Korn in March 2021.", "The price was 40 million euros."]
SUMMARY = "Lindqvist Foods bought Korn."
PHRASES = ["Lindqvist Foods", "Korn", "March 2021", "40 million euros"]
QUESTION_LIST = [
    "Did Lindqvist Foods buy Korn?",
    "Was Korn bought by Lindqvist Foods?",
    "Did it happen in March 2021?",
    "Was the price 40 million euros?",
]


def answers(request: dict[str, Any]) -> dict[str, Any]:
    asked = json.loads(_between(user_text(request), "Questions (a JSON array):", "Reply with JSON"))
    return {"answers": ["1" if "Lindqvist" in q else "0" for q in asked]}


SUMMARIZE = route(
    {
        KEYPHRASES: {"keyphrases": PHRASES},
        QUESTIONS: {"questions": QUESTION_LIST},
        ANSWERS: answers,
    }
)


def test_summarization_keeps_every_intermediate_and_joins_contexts_with_a_newline(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    fake = fake_server(SUMMARIZE)
    # A RAGAS file: retrieved_contexts is a list; evalcore.data joins it with a blank line into
    # ``context`` and keeps the list, which the summarization score joins with "\n".
    row = {"user_input": "Summarise.", "response": SUMMARY, "retrieved_contexts": CONTEXTS}
    loaded = load_file(json.dumps(row).encode() + b"\n", name="ragas.jsonl")
    item = JudgeItem("s1", loaded.items.iloc[0].drop("item_id").to_dict())
    result = by_id(_run("summarization_score", fake, [item]))["s1"]
    assert result.status == "ok"
    d = result.details
    assert (d["keyphrases"], d["questions"]) == (PHRASES, QUESTION_LIST)
    assert d["answers"] == ["1", "1", "0", "0"]
    text = "\n".join(CONTEXTS)  # 42 + 1 + 31 = 74 characters; the summary has 28
    assert (len(text), len(SUMMARY)) == (74, 28)
    assert d["qa_score"] == 0.5  # 2 of 4
    assert d["conciseness"] == pytest.approx(1 - 28 / 74)  # 0.6216
    # 0.5 * (1 - 0.5) + 0.6216 * 0.5 = 0.5608
    assert result.score == pytest.approx(0.25 + 0.5 * (1 - 28 / 74))
    assert (result.label, d["result"]) == ("pass", "pass")
    assert f"Text:\n{text}\n" in user_text(fake.requests_matching("List the key phrases")[0].body)
    assert fake.count == 3


def test_summarization_coeff_and_threshold(fake_server: Callable[..., FakeOpenAI]) -> None:
    fake = fake_server(SUMMARIZE)
    spec = summarization("summary_qa", coeff=0.0, threshold=0.6)
    item = JudgeItem("s", {"response": SUMMARY, "context": "\n".join(CONTEXTS)})
    result = by_id(_run(spec, fake, [item]))["s"]
    assert result.score == 0.5  # QA only
    assert result.label == "fail"  # 0.5 < 0.6


def test_summarization_counts_only_answers_that_are_one_and_keeps_them_as_written(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    # DESIGN.md section 2: an answer counts when it equals "1" after lower-casing, with no
    # stripping, so " 1", "yes" and 1.0 (kept as "1.0") do not count; a JSON 1 is the text "1"
    rules = {ANSWERS: {"answers": [" 1", "yes", 1.0, 1]}}
    fake = fake_server(
        route(
            {KEYPHRASES: {"keyphrases": PHRASES}, QUESTIONS: {"questions": QUESTION_LIST}, **rules}
        )
    )
    item = JudgeItem("s", {"response": SUMMARY, "context": "\n".join(CONTEXTS)})
    result = by_id(_run(summarization("qa_only", coeff=0.0), fake, [item]))["s"]
    assert result.status == "ok"
    assert result.details["answers"] == [" 1", "yes", "1.0", "1"]
    assert result.score == 0.25  # 1 of 4, coeff 0: QA only
    assert "answers 1 of 4 questions" in result.reason


@pytest.mark.parametrize(
    ("rules", "error", "kept"),
    [
        ({QUESTIONS: {"questions": []}}, "step questions: no questions were written", "keyphrases"),
        (
            {ANSWERS: {"answers": ["1"]}},
            "step answers: expected 4 answers, one per question, got 1",
            "questions",
        ),
        (
            {ANSWERS: {"answers": ["1", "0", {"a": "1"}, "0"]}},
            "answer 3 is {'a': '1'}, not a string",
            "questions",
        ),
    ],
)
def test_summarization_steps_that_do_not_parse(
    fake_server: Callable[..., FakeOpenAI], rules: dict[str, Any], error: str, kept: str
) -> None:
    default = {
        KEYPHRASES: {"keyphrases": PHRASES},
        QUESTIONS: {"questions": QUESTION_LIST},
        ANSWERS: answers,
    }
    fake = fake_server(route({**default, **rules}))
    item = JudgeItem("s", {"response": SUMMARY, "context": "\n".join(CONTEXTS)})
    result = by_id(_run("summarization_score", fake, [item]))["s"]
    assert result.status == "unparsed"
    assert error in result.error
    assert kept in result.details


def test_summarization_needs_the_sources(fake_server: Callable[..., FakeOpenAI]) -> None:
    fake = fake_server(SUMMARIZE)
    with pytest.raises(
        MissingVariableError, match=re.escape("reference_contexts (context) is missing")
    ):
        _run("summarization_score", fake, [JudgeItem("s", {"response": SUMMARY})])
    assert fake.count == 0


def test_pipeline_versions_change_with_their_parameters() -> None:
    base = get_metric("factual_correctness")
    precision = configure_metric(base, {"mode": "precision"})
    assert base.version != precision.version
    assert configure_metric(base, {"mode": "f1"}).version == base.version
    assert base.with_threshold(0.7).version != base.version
