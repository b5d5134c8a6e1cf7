"""Reading judge replies: a table of replies and what each must give, logprob scores, sample votes."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalcore.judge import (
    JudgeTemplate,
    OutputSpec,
    ParsedReply,
    aggregate_samples,
    logprob_score,
    parse_reply,
    response_format_for,
)
from evalcore.labels import LIKERT_5, PAIRWISE, PASS_FAIL, SEVERITY, Scale

LIKERT_CASES = [
    ('{"reason": "reads well", "score": 4}', 4.0, "reads well"),
    ('{"score": "5", "reason": "x"}', 5.0, "x"),
    ('```json\n{"reason": "ok", "score": 3}\n```', 3.0, "ok"),
    ('Here is my verdict: {"reason": "clumsy", "score": 2} as requested.', 2.0, "clumsy"),
    ('{"Score": 1, "Explanation": "broken"}', 1.0, "broken"),
    ("The text flows well.\nScore: 4", 4.0, None),
    ("I would give it a score of 3.", 3.0, None),
    ("Rating: 5", 5.0, None),
    ("Overall 4/5.", 4.0, None),
    ("It earns 2 out of 5 points.", 2.0, None),
    ("Score: **4**", 4.0, None),
    ("4", 4.0, None),
    ("First I thought Score: 2, but on reflection Score: 3", 3.0, None),  # the last match wins
    ("Verdict: 5", 5.0, None),
    ("Final answer: 1", 1.0, None),
]


@pytest.mark.parametrize(("reply", "label", "reason"), LIKERT_CASES)
def test_likert_replies_parse(reply: str, label: float, reason: str | None) -> None:
    parsed = parse_reply(reply, LIKERT_5)
    assert parsed.status == "ok", parsed.error
    assert parsed.label == label
    if reason is not None:
        assert parsed.reason == reason


UNPARSED_CASES = [
    ('{"reason": "great", "score": 7}', "7 is not on the scale 1–5"),
    ("Score: 7", "7 is not on the scale 1–5"),
    ("Score: 3.5", "3.5 is not on the scale 1–5"),
    ('{"score": 3.5}', "3.5 is not on the scale 1–5"),
    ("8/10", "up to 10"),
    ("", "empty reply"),
    ("   \n", "empty reply"),
    ("I'm sorry, but I can't help with that request.", "declined"),
    ("The response is fine overall.", "no label"),
    ('{"reason": "no score here"}', "no label"),
    ('{"score": {"value": 3}}', "not a label"),
]


@pytest.mark.parametrize(("reply", "error"), UNPARSED_CASES)
def test_unreadable_replies_are_unparsed_with_a_reason(reply: str, error: str) -> None:
    parsed = parse_reply(reply, LIKERT_5)
    assert parsed.status == "unparsed"
    assert parsed.label is None
    assert error in parsed.error


PAIRWISE_CASES = [
    ("After weighing both, [[A]]", "A"),
    ("[[B]]", "B"),
    ("Both are equally good. [[C]]", "TIE"),
    ("Verdict: tie", "TIE"),
    ('{"reason": "A is clearer", "choice": "A"}', "A"),
    ('{"choice": "model_B"}', "B"),
    ("Choice: B", "B"),
    ("Assistant A starts well but [[B]] is better", "B"),
    ("a bit long, but fine. Verdict: A", "A"),
]


@pytest.mark.parametrize(("reply", "label"), PAIRWISE_CASES)
def test_pairwise_replies_parse(reply: str, label: str) -> None:
    parsed = parse_reply(reply, PAIRWISE, label_field="choice")
    assert parsed.status == "ok", parsed.error
    assert parsed.label == label


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("Final answer: pass", "pass"),
        ("Final answer: FAIL", "fail"),
        ('{"label": "yes", "reason": "grounded"}', "pass"),
        ('{"label": false}', "fail"),
        ("Verdict: passed", "pass"),
        ("fail", "fail"),
    ],
)
def test_pass_fail_words(reply: str, label: str) -> None:
    parsed = parse_reply(reply, PASS_FAIL, label_field="label")
    assert (parsed.status, parsed.label) == ("ok", label)


def test_multi_word_labels_parse() -> None:
    assert parse_reply("Severity: very low", SEVERITY, label_field="label").label == "very low"
    assert parse_reply('{"label": "medium"}', SEVERITY, label_field="label").label == "medium"


def test_json_parser_refuses_prose_and_text_parser_ignores_json() -> None:
    assert parse_reply("Score: 4", LIKERT_5, parser="json").status == "unparsed"
    assert parse_reply('{"score": 4}', LIKERT_5, parser="text").status == "unparsed"
    assert parse_reply('{"score": 4} Score: 2', LIKERT_5, parser="text").label == 2.0


@given(st.text(max_size=300))
def test_parsing_never_raises_and_never_invents_an_off_scale_label(text: str) -> None:
    parsed = parse_reply(text, LIKERT_5)
    assert parsed.status in ("ok", "unparsed")
    assert parsed.label is None or parsed.label in LIKERT_5.labels


def test_json_span_points_at_the_label_value() -> None:
    text = '{"reason": "3 small slips", "score": 4}'
    parsed = parse_reply(text, LIKERT_5)
    assert parsed.span is not None
    assert text[parsed.span[0] : parsed.span[1]] == "4"


# --- structured output -------------------------------------------------------------------------------


def test_response_format_for_numeric_pairwise_and_word_scales() -> None:
    numeric = response_format_for(JudgeTemplate("t", "fluency", LIKERT_5, "", "{{ r }}"))
    assert numeric["type"] == "json_schema"
    schema = numeric["json_schema"]["schema"]
    assert numeric["json_schema"]["strict"] is True
    assert schema["properties"]["score"] == {"type": "integer", "enum": [1, 2, 3, 4, 5]}
    assert schema["required"] == ["reason", "score"]
    assert schema["additionalProperties"] is False

    pairwise = response_format_for(JudgeTemplate("t", "pref", PAIRWISE, "", "{{ r }}"))
    assert pairwise["json_schema"]["schema"]["properties"]["choice"]["enum"] == ["A", "B", "TIE"]

    words = response_format_for(
        JudgeTemplate("t", "g", PASS_FAIL, "", "{{ r }}", output=OutputSpec(label_field="verdict"))
    )
    assert words["json_schema"]["schema"]["properties"]["verdict"]["enum"] == ["pass", "fail"]

    halves = response_format_for(
        JudgeTemplate("t", "c", Scale((0.5, 1.0), "ordinal"), "", "{{ r }}")
    )
    assert halves["json_schema"]["schema"]["properties"]["score"]["type"] == "number"


# --- logprobs ----------------------------------------------------------------------------------------


def _lp(p: float) -> float:
    return math.log(p)


def test_logprob_score_is_the_probability_weighted_mean_at_the_label_token() -> None:
    tokens = [
        ('{"', [('{"', 0.0)]),
        ("reason", [("reason", 0.0)]),
        ('":"', [('":"', 0.0)]),
        ("3", [("3", _lp(0.9)), ("2", _lp(0.1))]),  # a digit inside the reason: not the label
        (' slips","', [(' slips","', 0.0)]),
        ("score", [("score", 0.0)]),
        ('":', [('":', 0.0)]),
        ("4", [("4", _lp(0.5)), ("5", _lp(0.3)), ("3", _lp(0.1)), ("x", _lp(0.1))]),
        ("}", [("}", 0.0)]),
    ]
    text = "".join(t for t, _ in tokens)
    parsed = parse_reply(text, LIKERT_5)
    assert parsed.label == 4.0
    score = logprob_score(tokens, LIKERT_5, at=parsed.span[0] if parsed.span else None)
    # (0.5·4 + 0.3·5 + 0.1·3) / (0.5 + 0.3 + 0.1) = 3.8 / 0.9 = 4.2222…
    assert score == pytest.approx(3.8 / 0.9)
    # Without a position, the last label token is used: the same one here.
    assert logprob_score(tokens, LIKERT_5) == pytest.approx(3.8 / 0.9)


def test_logprob_score_of_a_binary_scale_is_the_positive_probability() -> None:
    tokens = [("Answer: ", [("Answer: ", 0.0)]), ("pass", [("pass", _lp(0.6)), ("fail", _lp(0.2))])]
    # 0.6 / (0.6 + 0.2) = 0.75
    assert logprob_score(tokens, PASS_FAIL) == pytest.approx(0.75)


def test_logprob_score_is_none_when_unavailable() -> None:
    assert logprob_score(None, LIKERT_5) is None
    assert logprob_score([("hello", [("hello", 0.0)])], LIKERT_5) is None
    assert logprob_score([("A", [("A", 0.0)])], PAIRWISE) is None


# --- samples -----------------------------------------------------------------------------------------


def test_majority_of_samples_with_spread() -> None:
    replies = [
        ParsedReply("ok", 4.0),
        ParsedReply("ok", 5.0),
        ParsedReply("ok", 4.0),
        ParsedReply("unparsed"),
    ]
    label, spread = aggregate_samples(replies, LIKERT_5)
    assert label == 4.0
    assert spread["counts"] == {"4": 2, "5": 1}
    assert (spread["n"], spread["n_unparsed"]) == (4, 1)
    # population std of 4, 5, 4: mean 13/3, deviations² 1/9, 4/9, 1/9 → sqrt(2/9) = 0.471405
    assert spread["std"] == pytest.approx(0.471405)


def test_majority_ties_go_to_the_first_label_and_pairwise_ties_to_tie() -> None:
    assert aggregate_samples([ParsedReply("ok", 5.0), ParsedReply("ok", 2.0)], LIKERT_5)[0] == 2.0
    assert aggregate_samples([ParsedReply("ok", "B"), ParsedReply("ok", "A")], PAIRWISE)[0] == "TIE"


def test_mean_rounds_half_up_to_the_scale() -> None:
    replies = [ParsedReply("ok", 3.0), ParsedReply("ok", 4.0)]  # mean 3.5 → 4
    assert aggregate_samples(replies, LIKERT_5, method="mean")[0] == 4.0
    replies = [ParsedReply("ok", 1.0), ParsedReply("ok", 1.0), ParsedReply("ok", 2.0)]  # 1.33 → 1
    assert aggregate_samples(replies, LIKERT_5, method="mean")[0] == 1.0


def test_no_parsed_sample_gives_no_label() -> None:
    label, spread = aggregate_samples([ParsedReply("unparsed", error="x")], LIKERT_5)
    assert label is None
    assert spread["n_unparsed"] == 1
