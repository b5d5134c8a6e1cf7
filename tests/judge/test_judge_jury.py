"""Juries: one verdict per item from several judges' verdicts (issue 22, part 2)."""

from __future__ import annotations

import pytest

from evalcore.errors import ConfigError
from evalcore.judge import JudgeResult, combine_verdicts, jury_results, member_verdicts
from evalcore.labels import LIKERT_5, PAIRWISE, PASS_FAIL, Scale


def test_majority_counts_votes_and_its_confidence_is_the_share_that_agrees() -> None:
    verdict = combine_verdicts([4.0, 4.0, 5.0, None], LIKERT_5)
    assert verdict.label == 4.0
    # three members voted (one gave nothing): 4 has 2 of 3 votes, 5 has 1 of 3
    assert verdict.probabilities == pytest.approx({1.0: 0, 2.0: 0, 3.0: 0, 4.0: 2 / 3, 5.0: 1 / 3})
    assert verdict.confidence == pytest.approx(2 / 3)
    assert (verdict.voters, verdict.missing) == (3, 1)
    # the score of a numeric scale is the mean vote: (4 + 4 + 5) / 3
    assert verdict.score == pytest.approx(13 / 3)


def test_a_tie_goes_to_the_label_first_in_the_scale_and_a_pairwise_tie_is_tie() -> None:
    assert combine_verdicts(["fail", "pass"], PASS_FAIL).label == "pass"  # pass comes first
    assert combine_verdicts([5.0, 2.0], LIKERT_5).label == 2.0
    tie = combine_verdicts(["A", "B"], PAIRWISE)
    assert tie.label == "TIE"
    assert tie.confidence == 0.0  # nobody said TIE: the members' agreement with it is nil


def test_the_mean_is_rounded_half_up_to_the_scale() -> None:
    # (3 + 4) / 2 = 3.5 → 4; (3 + 3 + 4) / 3 = 3.33 → 3
    assert combine_verdicts([3.0, 4.0], LIKERT_5, method="mean").label == 4.0
    verdict = combine_verdicts([3.0, 3.0, 4.0], LIKERT_5, method="mean")
    assert verdict.label == 3.0
    assert verdict.confidence == pytest.approx(2 / 3)
    # weighted: (1·2 + 3·5) / 4 = 17 / 4 = 4.25 → 4; nobody voted 4, so the agreement is 0
    weighted = combine_verdicts([2.0, 5.0], LIKERT_5, method="mean", weights=[1, 3])
    assert weighted.label == 4.0
    assert weighted.confidence == 0.0


def test_weights_decide_a_weighted_jury() -> None:
    verdict = combine_verdicts(
        ["pass", "pass", "fail"], PASS_FAIL, method="weighted", weights=[1.0, 1.0, 3.0]
    )
    # pass carries 1 + 1 = 2 of 5 units, fail 3 of 5
    assert verdict.label == "fail"
    assert verdict.probabilities == pytest.approx({"pass": 0.4, "fail": 0.6})
    assert verdict.score == pytest.approx(0.4)  # a binary score: the share of pass


def test_a_missing_member_is_not_a_vote() -> None:
    verdict = combine_verdicts([None, None, "fail"], PASS_FAIL)
    assert verdict.label == "fail"
    assert verdict.confidence == 1.0
    assert verdict.missing == 2
    nobody = combine_verdicts([None, None], PASS_FAIL)
    assert nobody.label is None
    assert nobody.confidence is None
    assert nobody.probabilities is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"votes": ["pass"]}, "at least two"),
        ({"method": "vote"}, "combines by"),
        ({"method": "weighted"}, "one weight per member"),
        ({"weights": [1, 2]}, "majority jury counts"),
        ({"method": "weighted", "weights": [1]}, "needs 2 weights"),
        ({"method": "weighted", "weights": [1, 0]}, "member 2 must be positive"),
        ({"method": "mean"}, "numeric scale"),
    ],
)
def test_a_jury_that_cannot_be_combined_says_why(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"votes": ["pass", "fail"], **kwargs}
    votes = arguments.pop("votes")
    with pytest.raises(ConfigError, match=message):
        combine_verdicts(votes, PASS_FAIL, **arguments)  # type: ignore[arg-type]


def _r(item: str, status: str = "ok", label: object = None, order: str = "AB") -> JudgeResult:
    return JudgeResult(item, order, status, label=label)  # type: ignore[arg-type]


def test_jury_results_are_ordinary_results_with_every_vote_in_details() -> None:
    a = member_verdicts([_r("x", label="pass"), _r("y", label="pass"), _r("z", "failed")])
    b = member_verdicts([_r("x", label="fail"), _r("y", label="pass")])
    c = member_verdicts([_r("x", label="pass"), _r("y", "unparsed"), _r("z", "unparsed")])
    results = jury_results([a, b, c], ["x", "y", "z"], PASS_FAIL, names=["a", "b", "c"])
    x, y, z = results
    assert (x.status, x.label, x.confidence) == ("ok", "pass", pytest.approx(2 / 3))
    assert x.details["jury"]["votes"] == {"a": "pass", "b": "fail", "c": "pass"}
    assert x.reason == "2 of 3 members gave pass"
    assert (y.label, y.confidence) == ("pass", 1.0)
    assert y.details["jury"]["votes"]["c"] == "unparsed"
    assert y.reason == "2 of 2 members gave pass; 1 gave none"
    assert z.status == "failed"
    assert z.label is None
    assert "no member of the jury gave a label" in z.error
    assert z.details["jury"]["votes"] == {"a": "failed", "b": "missing", "c": "unparsed"}


def test_a_members_verdict_is_its_first_order_or_its_only_one() -> None:
    both = member_verdicts([_r("x", label="B", order="BA"), _r("x", label="A", order="AB")])
    assert both["x"].label == "A"
    flipped = member_verdicts([_r("y", label="B", order="BA")])
    assert flipped["y"].label == "B"


def test_a_three_label_nominal_jury() -> None:
    scale = Scale(("safe", "unsure", "unsafe"), "nominal")
    verdict = combine_verdicts(["unsafe", "unsure", "unsafe", "safe", "unsafe"], scale)
    # 3 of 5 say unsafe
    assert (verdict.label, verdict.confidence, verdict.score) == ("unsafe", 0.6, None)
