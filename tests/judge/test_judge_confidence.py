"""A confidence for every verdict: label probabilities from logprobs, from samples, and the fake
judge of known calibration that serves them (issue 22, part 1).

Done when: against the FakeOpenAI with a set calibration, the parsed probabilities equal the
served ones.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from evalcore.judge import (
    JudgeItem,
    JudgeResult,
    JudgeRunner,
    JudgeTemplate,
    LabelProbabilities,
    MemoryCache,
    MemorySink,
    ModelSettings,
    OutputSpec,
    ParsedReply,
    label_probabilities,
    logprob_score,
    parse_reply,
    sample_shares,
)
from evalcore.labels import LIKERT_5, PAIRWISE, PASS_FAIL, Scale
from evalcore.testing import CalibratedJudge, FakeOpenAI, ServedReply, truth_marker

Runner = Callable[..., JudgeRunner]


def _lp(p: float) -> float:
    return math.log(p)


# --- reading the probabilities at the label's token -------------------------------------------------


def test_variants_of_a_label_add_up_and_the_rest_is_renormalised() -> None:
    tokens = [
        ("Score", [("Score", 0.0)]),
        (": ", [(": ", 0.0)]),
        (
            "4",
            [("4", _lp(0.4)), (" 4", _lp(0.1)), ("5", _lp(0.2)), ("3", _lp(0.1)), ("so", _lp(0.1))],
        ),
    ]
    found = label_probabilities(tokens, LIKERT_5)
    assert found is not None
    # label mass: 4 → 0.4 + 0.1 = 0.5, 5 → 0.2, 3 → 0.1; total 0.8, so 0.2 is off the scale
    assert found.probabilities == pytest.approx({1.0: 0, 2.0: 0, 3.0: 0.125, 4.0: 0.625, 5.0: 0.25})
    assert found.off_scale == pytest.approx(0.2)
    # G-Eval's expected score: 0.125·3 + 0.625·4 + 0.25·5 = 0.375 + 2.5 + 1.25 = 4.125
    assert found.expected(LIKERT_5) == pytest.approx(4.125)
    assert list(found.probabilities) == list(LIKERT_5.labels)  # every label, in the scale's order


def test_a_label_written_in_several_tokens_is_read_at_its_first_token() -> None:
    # "TIE" as the tokens "T" + "IE": the alternatives at "T" are the first tokens of every label
    tokens = [
        ("[[", [("[[", 0.0)]),
        ("T", [("T", _lp(0.5)), ("A", _lp(0.3)), ("B", _lp(0.2))]),
        ("IE", [("IE", 0.0)]),
        ("]]", [("]]", 0.0)]),
    ]
    text = "".join(t for t, _ in tokens)
    parsed = parse_reply(text, PAIRWISE)
    assert parsed.label == "TIE"
    found = label_probabilities(tokens, PAIRWISE, at=parsed.span[0] if parsed.span else None)
    assert found is not None
    assert found.probabilities == pytest.approx({"A": 0.3, "B": 0.2, "TIE": 0.5})


def test_a_start_that_several_labels_share_counts_for_none() -> None:
    scale = Scale(("partly right", "partly wrong", "wrong"), "nominal")
    tokens = [
        ("Verdict: ", [("Verdict: ", 0.0)]),
        ("w", [("w", _lp(0.3)), ("partly", _lp(0.6)), ("x", _lp(0.1))]),
        ("rong", [("rong", 0.0)]),
    ]
    found = label_probabilities(tokens, scale, at=len("Verdict: "))
    assert found is not None
    # "partly" starts two labels: its 0.6 is not given to either, so it is off the scale with "x"
    assert found.probabilities == pytest.approx({"partly right": 0, "partly wrong": 0, "wrong": 1})
    assert found.off_scale == pytest.approx(0.7)


def test_a_number_is_never_read_as_the_start_of_a_longer_number() -> None:
    scale = Scale.likert(1, 10)
    tokens = [("Score: ", [("Score: ", 0.0)]), ("1", [("1", _lp(0.7)), ("9", _lp(0.3))])]
    found = label_probabilities(tokens, scale)
    assert found is not None
    assert found.probabilities[1.0] == pytest.approx(0.7)
    assert found.probabilities[10.0] == 0.0


def test_no_label_token_gives_no_probabilities() -> None:
    assert label_probabilities(None, LIKERT_5) is None
    assert label_probabilities([("hello", [("hello", 0.0)])], LIKERT_5) is None


def test_sample_shares_leave_unparsed_samples_out() -> None:
    replies = [ParsedReply("ok", 4.0), ParsedReply("ok", 5.0), ParsedReply("unparsed")]
    # two parsed samples: 4 and 5 get one half each
    assert sample_shares(replies, LIKERT_5) == {1.0: 0, 2.0: 0, 3.0: 0, 4.0: 0.5, 5.0: 0.5}
    assert sample_shares([ParsedReply("unparsed")], LIKERT_5) is None


def test_a_result_keeps_its_probabilities_through_json() -> None:
    result = JudgeResult(
        "x", "AB", "ok", label=4.0, probabilities={4.0: 0.75, 5.0: 0.25}, confidence=0.75
    )
    data = result.to_dict()
    assert data["probabilities"] == {"4": 0.75, "5": 0.25}
    assert data["confidence"] == 0.75
    assert JudgeResult.from_dict(data) == result
    assert (
        JudgeResult.from_dict({**data, "probabilities": None, "confidence": None}).confidence
        is None
    )


# --- against the fake with a set calibration ----------------------------------------------------------


def _template(scale: Scale, *, structured: bool = True, **model: object) -> JudgeTemplate:
    return JudgeTemplate(
        "t",
        "quality",
        scale,
        "Judge the reply.",
        "{{ response }}",
        output=OutputSpec(structured=structured),
        model=ModelSettings(**{"logprobs": True, "top_logprobs": 10, **model}),  # type: ignore[arg-type]
    )


def _items(truths: list[str]) -> list[JudgeItem]:
    return [
        JudgeItem(f"i{n}", {"response": truth_marker(f"i{n}", truth)})
        for n, truth in enumerate(truths)
    ]


def _served_in_item_frame(served: dict[str, float], scale: Scale) -> dict[object, float]:
    return {scale.coerce(label): p for label, p in served.items()}


@pytest.mark.parametrize(
    ("scale", "options"),
    [
        (PASS_FAIL, {}),
        (PASS_FAIL, {"off_scale": 0.15, "variants": True, "split_words": True}),
        (LIKERT_5, {"off_scale": 0.05}),
        (LIKERT_5, {"variants": True, "confidence": (0.3, 0.9)}),
        (PAIRWISE, {"split_words": True}),
    ],
    ids=["pass-fail", "pass-fail written oddly", "likert", "likert with variants", "pairwise"],
)
def test_the_parsed_probabilities_equal_the_served_ones(
    fake_server: Callable[..., FakeOpenAI],
    make_runner: Runner,
    scale: Scale,
    options: dict[str, object],
) -> None:
    judge = CalibratedJudge(seed=3, **options)  # type: ignore[arg-type]
    server = fake_server(judge)
    words = scale.display_labels
    items = _items([words[n % len(words)] for n in range(12)])
    sink = MemorySink()
    make_runner(server, _template(scale)).run_sync(items, sink)
    served = judge.served()
    assert len(sink) == 12
    for result in sink:
        truth = served[result.item_id]
        assert result.status == "ok"
        assert result.label == scale.coerce(truth.label)
        assert result.probabilities is not None
        assert result.probabilities == pytest.approx(
            _served_in_item_frame(dict(truth.probabilities), scale), abs=1e-12
        )
        assert result.confidence == pytest.approx(truth.confidence, abs=1e-12)
        assert result.details["confidence"]["from"] == "logprobs"
        assert result.details["confidence"]["off_scale"] == pytest.approx(
            float(options.get("off_scale", 0.0)),
            abs=1e-12,  # type: ignore[arg-type]
        )
        if scale.is_numeric:  # the expected score: Σ p·value over the served distribution
            expected = sum(float(k) * p for k, p in truth.probabilities.items())
            assert result.score == pytest.approx(expected, abs=1e-12)


def test_prose_replies_are_read_at_the_label_too(
    fake_server: Callable[..., FakeOpenAI], make_runner: Runner
) -> None:
    judge = CalibratedJudge(seed=1, labels=["pass", "fail"], variants=True)
    server = fake_server(judge)  # no JSON schema: the reply ends "Score: pass"
    sink = MemorySink()
    make_runner(server, _template(PASS_FAIL, structured=False)).run_sync(
        _items(["pass", "fail", "pass"]), sink
    )
    for result in sink:
        truth = judge.served()[result.item_id]
        assert result.confidence == pytest.approx(truth.confidence, abs=1e-12)


def test_a_pairwise_item_shown_swapped_has_its_probabilities_in_the_item_frame(
    fake_server: Callable[..., FakeOpenAI], make_runner: Runner
) -> None:
    judge = CalibratedJudge(seed=5, confidence=0.8)
    server = fake_server(judge)
    template = replace(_template(PAIRWISE), user="{{ response_a }} vs {{ response_b }}")
    # the truth marker travels with response_a, so it is read in both orders
    items = [JudgeItem("duel", {"response_a": truth_marker("duel", "A"), "response_b": "other"})]
    from evalcore.judge import RunSettings

    sink = MemorySink()
    make_runner(server, template, settings=RunSettings(order_mode="both")).run_sync(items, sink)
    ab, ba = sink.results[("duel", "AB")], sink.results[("duel", "BA")]
    served = judge.served()["duel"]
    # in the AB order the served distribution is the item's; in BA the reply's A is the item's B
    reply_frame = dict(served.probabilities)
    assert ab.probabilities == pytest.approx(reply_frame)
    assert ba.probabilities == pytest.approx(
        {"A": reply_frame["B"], "B": reply_frame["A"], "TIE": reply_frame["TIE"]}
    )
    assert ba.confidence == pytest.approx(ba.probabilities[ba.label])  # type: ignore[index]


def test_a_cached_reply_gives_the_same_probabilities(
    fake_server: Callable[..., FakeOpenAI], make_runner: Runner
) -> None:
    server = fake_server(CalibratedJudge(seed=2, off_scale=0.1))
    runner = make_runner(server, _template(LIKERT_5))
    cache = MemoryCache()
    first, again = MemorySink(), MemorySink()
    runner.run_sync(_items(["1", "3", "5"]), first, cache)
    runner.run_sync(_items(["1", "3", "5"]), again, cache)
    assert server.count == 3  # the second run was answered from the cache
    for key, result in again.results.items():
        assert result.cached
        assert result.probabilities == first.results[key].probabilities
        assert result.confidence == first.results[key].confidence


def test_samples_without_logprobs_give_their_shares(
    fake_server: Callable[..., FakeOpenAI], make_runner: Runner
) -> None:
    judge = CalibratedJudge(seed=4, confidence=(0.4, 0.7))
    server = fake_server(judge)
    template = replace(_template(LIKERT_5), model=ModelSettings(n=5))
    sink = MemorySink()
    make_runner(server, template).run_sync(_items(["2", "4"]), sink)
    for result in sink:
        samples = judge.served()[result.item_id].samples
        assert result.samples == tuple(float(s) for s in samples)
        shares = {x: sum(1 for s in samples if float(s) == x) / 5 for x in LIKERT_5.labels}
        assert result.probabilities == shares
        assert result.confidence == shares[result.label]  # type: ignore[index]
        assert result.details["confidence"] == {"from": "samples"}


def test_samples_with_logprobs_average_their_probabilities(
    fake_server: Callable[..., FakeOpenAI], make_runner: Runner
) -> None:
    judge = CalibratedJudge(seed=4, confidence=0.6)
    server = fake_server(judge)
    sink = MemorySink()
    make_runner(server, _template(LIKERT_5, n=3)).run_sync(_items(["3"]), sink)
    (result,) = list(sink)
    truth = judge.served()["i0"]
    # every sample is served the same distribution, so their mean is that distribution
    assert result.probabilities == pytest.approx(
        _served_in_item_frame(dict(truth.probabilities), LIKERT_5)
    )
    assert result.details["confidence"]["samples"] == 3
    assert result.confidence == pytest.approx(result.probabilities[result.label])  # type: ignore[index]


def test_a_top_list_shorter_than_the_scale_is_renormalised_over_what_it_shows(
    fake_server: Callable[..., FakeOpenAI], make_runner: Runner
) -> None:
    served = ServedReply(
        {"reason": "r", "score": 4},
        "4",
        (("4", 0.5), ("5", 0.3), ("3", 0.15), ("2", 0.05)),
    )
    server = fake_server(lambda request: served)
    sink = MemorySink()
    make_runner(server, _template(LIKERT_5, top_logprobs=2)).run_sync(_items(["4"]), sink)
    (result,) = list(sink)
    # only "4" (0.5) and "5" (0.3) are shown: 0.5 / 0.8 and 0.3 / 0.8; 0.2 is off the scale
    assert result.probabilities == pytest.approx({1.0: 0, 2.0: 0, 3.0: 0, 4.0: 0.625, 5.0: 0.375})
    assert result.details["confidence"]["off_scale"] == pytest.approx(0.2)


def test_without_logprobs_or_samples_there_is_no_confidence(
    fake: FakeOpenAI, make_runner: Runner, likert: JudgeTemplate
) -> None:
    sink = MemorySink()
    make_runner(fake, likert).run_sync([JudgeItem("x", {"response": "r", "gold": "4"})], sink)
    (result,) = list(sink)
    assert result.probabilities is None
    assert result.confidence is None
    assert "confidence" not in result.details


# --- the fake's calibration is the one asked for -----------------------------------------------------


@pytest.mark.parametrize(("gap", "name"), [(0.0, "well calibrated"), (0.2, "over-confident")])
def test_the_fake_judge_is_right_as_often_as_its_calibration_says(gap: float, name: str) -> None:
    judge = CalibratedJudge(confidence=(0.5, 1.0), overconfidence=gap, seed=11)
    n = 4000
    verdicts = [judge.verdict(f"item{k}", "pass", ["pass", "fail"]) for k in range(n)]
    right = sum(v.correct for v in verdicts)
    expected = sum(max(0.0, v.confidence - gap) for v in verdicts)
    # the count of right labels is a sum of independent Bernoulli(q_i): its standard deviation
    # is sqrt(Σ q(1−q)) ≤ sqrt(n/4) ≈ 31.6; allow four of them
    spread = math.sqrt(sum(v.accuracy * (1 - v.accuracy) for v in verdicts))
    assert abs(right - expected) < 4 * spread, name
    assert all(v.correct == (v.label == v.truth) for v in verdicts)
    assert all(sum(v.probabilities.values()) == pytest.approx(1.0) for v in verdicts)


def test_the_fake_judge_draws_the_same_verdicts_for_the_same_seed() -> None:
    a = CalibratedJudge(seed=7).verdict("x", "3", ["1", "2", "3", "4", "5"], n=4)
    b = CalibratedJudge(seed=7).verdict("x", "3", ["1", "2", "3", "4", "5"], n=4)
    c = CalibratedJudge(seed=8).verdict("x", "3", ["1", "2", "3", "4", "5"], n=4)
    assert a == b
    assert a != c


def test_the_fake_judge_refuses_a_confidence_outside_zero_one() -> None:
    with pytest.raises(ValueError, match="confidence"):
        CalibratedJudge(confidence=(0.5, 1.2))
    with pytest.raises(ValueError, match="tokens"):
        ServedReply("x", "TIE", (("T", 0.5),), tokens=("T", "I"))


def test_the_logprob_score_is_the_expected_value_of_the_label_probabilities() -> None:
    tokens = [("Answer: ", [("Answer: ", 0.0)]), ("pass", [("pass", _lp(0.6)), ("fail", _lp(0.2))])]
    found = label_probabilities(tokens, PASS_FAIL)
    assert isinstance(found, LabelProbabilities)
    # 0.6 / (0.6 + 0.2) = 0.75 for pass; the binary score is the probability of pass
    assert found.probabilities == pytest.approx({"pass": 0.75, "fail": 0.25})
    assert found.expected(PASS_FAIL) == pytest.approx(logprob_score(tokens, PASS_FAIL))


def test_punctuation_around_a_label_token_is_not_part_of_it() -> None:
    tokens = [("Score: ", [("Score: ", 0.0)]), ("4.", [("4.", _lp(0.5)), ("5,", _lp(0.5))])]
    found = label_probabilities(tokens, LIKERT_5)
    assert found is not None
    assert found.probabilities[4.0] == pytest.approx(0.5)
    assert found.probabilities[5.0] == pytest.approx(0.5)


def test_the_fake_servers_command_line_takes_a_calibrated_judge(tmp_path: Path) -> None:
    from evalcore.testing.fake_openai import _rule_from_name

    config = tmp_path / "judge.json"
    config.write_text(
        json.dumps({"confidence": [0.6, 0.9], "overconfidence": 0.3, "seed": 2}), encoding="utf-8"
    )
    rule = _rule_from_name(f"calibrated:{config}")
    assert isinstance(rule, CalibratedJudge)
    assert rule.confidence == (0.6, 0.9)
    verdict = rule.verdict("x", "pass", ["pass", "fail"])
    assert 0.6 <= verdict.confidence <= 0.9
    assert verdict.accuracy == pytest.approx(verdict.confidence - 0.3)
