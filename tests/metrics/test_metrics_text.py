"""Text metrics: token F1 (Azure), factual correctness and summarization arithmetic (RAGAS)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalcore.errors import MetricError
from evalcore.metrics import (
    conciseness_score,
    factual_correctness_score,
    summarization_qa_score,
    summarization_score,
    token_f1,
    token_f1_scores,
)

# --- token F1 ---------------------------------------------------------------------------------------


def test_articles_are_removed_only_as_whole_words() -> None:
    # "the theory" -> ["theory"]; "another theory" -> ["another", "theory"]: common 1, P 1, R 1/2
    assert token_f1("the theory", "another theory") == pytest.approx(2 / 3)
    # "an" inside "another" and "a" inside "banana" stay
    assert token_f1("another banana", "another banana") == 1.0
    # articles alone vanish: nothing left to overlap
    assert token_f1("The a an", "the") == 0.0


def test_unicode_quotes_stay_but_ascii_punctuation_goes() -> None:
    # “cat” keeps its curly quotes, so it is not the token cat
    assert token_f1("“cat”", "cat") == 0.0
    # "cat!" loses the ASCII "!" and matches
    assert token_f1("cat!", "cat") == 1.0


def test_apostrophes_and_decimal_points_are_removed() -> None:
    assert token_f1("don't", "dont") == 1.0  # "don't" -> "dont"
    assert token_f1("pi is 3.14", "314") == pytest.approx(2 * (1 / 3) * 1 / (1 / 3 + 1))  # 1/2


def test_repeated_tokens_count_as_a_multiset() -> None:
    # response cat cat cat, truth cat dog: common = min(3, 1) = 1; P 1/3, R 1/2 -> 2/5
    assert token_f1("cat cat cat", "cat dog") == pytest.approx(0.4)


def test_empty_strings_give_zero() -> None:
    assert token_f1("", "") == 0.0
    assert token_f1("", "cat") == 0.0
    assert token_f1("   ", "the") == 0.0


def test_case_and_white_space_do_not_matter() -> None:
    assert token_f1("Paris\n\tFrance", "  paris   france ") == 1.0


def test_token_f1_refuses_non_strings() -> None:
    with pytest.raises(MetricError):
        token_f1(None, "x")  # type: ignore[arg-type]


def test_token_f1_scores_frame() -> None:
    df = token_f1_scores(["a cat", "cat dog", None], ["cat", "cat", "x"], threshold=0.7)
    assert list(df.columns) == ["f1_score", "f1_result"]
    # 1.0 pass; P 1/2 R 1 -> 2/3 fail under 0.7; missing -> NaN and no verdict
    assert df["f1_score"].iloc[0] == 1.0
    assert df["f1_score"].iloc[1] == pytest.approx(2 / 3)
    assert math.isnan(df["f1_score"].iloc[2])
    assert df["f1_result"].tolist() == ["pass", "fail", None]
    with pytest.raises(MetricError, match="align"):
        token_f1_scores(["a"], [])


def test_token_f1_scores_threshold_is_inclusive() -> None:
    assert token_f1_scores(["cat dog"], ["cat"], threshold=2 / 3)["f1_result"].tolist() == ["pass"]


# --- factual correctness ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("beta", "expected"),
    [
        # P = 3/4, R = 3/5: F-beta = (1 + b^2) P R / (b^2 P + R)
        (0.5, 0.71),  # 1.25 * 0.45 / (0.1875 + 0.6) = 0.714...
        (1.0, 0.67),  # 2 * 0.45 / 1.35 = 0.666...
        (2.0, 0.62),  # 5 * 0.45 / (3 + 0.6) = 0.625 exactly; half to even -> 0.62
    ],
)
def test_f_beta(beta: float, expected: float) -> None:
    assert factual_correctness_score(3, 1, 2, beta=beta) == expected


def test_precision_and_recall_modes() -> None:
    assert factual_correctness_score(3, 1, 2, mode="precision") == 0.75  # 3/4
    assert factual_correctness_score(3, 1, 2, mode="recall") == 0.6  # 3/5


def test_empty_claim_lists_give_zero() -> None:
    assert factual_correctness_score(0, 0, 0) == 0.0
    assert factual_correctness_score(0, 0, 0, mode="precision") == 0.0
    assert factual_correctness_score(0, 3, 2) == 0.0


def test_f_beta_has_no_epsilon_but_precision_and_recall_modes_do() -> None:
    # tp 3, fp 5, fn 5: exact P = R = 3/8 = 0.375, F1 = 2 * P * R / (P + R) = 0.375 exactly;
    # np.round(0.375, 2): 37.5 is a tie, half to even -> 38 -> 0.38
    assert factual_correctness_score(3, 5, 5) == 0.38
    # precision mode: 3 / (8 + 1e-8) = 0.37499999953 lies below the tie -> 0.37; recall the same
    assert factual_correctness_score(3, 5, 5, mode="precision") == 0.37
    assert factual_correctness_score(3, 5, 5, mode="recall") == 0.37
    # F-beta, beta 2: (1 + 4) * 0.375 * 0.375 / (4 * 0.375 + 0.375) = 0.375 again -> 0.38
    assert factual_correctness_score(3, 5, 5, beta=2.0) == 0.38
    # tp 7, fp 0, fn 1: P = 1 exactly (no guard), R = 7/8: F1 = 2 * 0.875 / 1.875 = 0.9333 -> 0.93
    assert factual_correctness_score(7, 0, 1) == 0.93


def test_f_beta_with_an_empty_side_is_zero() -> None:
    # no response claims: P has denominator 0 -> 0; R = 0 / 4 = 0 -> F1 0
    assert factual_correctness_score(0, 0, 4) == 0.0
    # no reference claims to miss and no response claim supported: P = 0 / 2, R has denominator 0
    assert factual_correctness_score(0, 2, 0) == 0.0


def test_rounding_is_numpy_half_to_even() -> None:
    # precision 5/8 = 0.625 (minus the 1e-8 guard) rounds to 0.62
    assert factual_correctness_score(5, 3, 0, mode="precision") == 0.62
    assert factual_correctness_score(5, 3, 0, mode="precision") == float(np.round(5 / 8, 2))
    # recall 7/8 = 0.875 -> 0.87 (half to even, and below half because of the guard)
    assert factual_correctness_score(7, 0, 1, mode="recall") == 0.87


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((1, 1, 1), {"mode": "auc"}, "mode"),
        ((1, 1, 1), {"beta": 0}, "beta"),
        ((1, 1, 1), {"beta": -1.0}, "beta"),
        ((-1, 1, 1), {}, "non-negative"),
        ((1.5, 1, 1), {}, "whole number"),
    ],
)
def test_factual_correctness_validates(args: tuple, kwargs: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(MetricError, match=message):
        factual_correctness_score(*args, **kwargs)


# --- summarization ----------------------------------------------------------------------------------


def test_conciseness_joins_contexts_with_a_newline() -> None:
    # text = "abcd" + "\n" + "efghi" = 10 characters; summary 4 -> 1 - 4/10
    assert conciseness_score("wxyz", ["abcd", "efghi"]) == pytest.approx(0.6)
    # a summary longer than the text scores 0
    assert conciseness_score("x" * 50, ["abc"]) == 0.0


def test_qa_score_counts_only_answers_that_are_one_after_lower_casing() -> None:
    # "1" counts; " 1\n", "1 ", "1.0" and "yes" do not (no stripping, no reading of words): 1 of 6
    assert summarization_qa_score(["1", "0", " 1\n", "1 ", "1.0", "yes"]) == pytest.approx(1 / 6)
    assert summarization_qa_score(["0", "no", "YES"]) == 0.0


def test_summarization_score_hand_worked() -> None:
    # QA 2/4 = 0.5, conciseness 0.6: 0.5 * (1 - 0.3) + 0.6 * 0.3 = 0.35 + 0.18
    got = summarization_score(["1", "0", "1", "0"], "wxyz", ["abcd", "efghi"], coeff=0.3)
    assert got == pytest.approx(0.53)
    assert summarization_score(["1"], "wxyz", ["abcd", "efghi"], coeff=0.0) == 1.0  # QA only


@pytest.mark.parametrize(
    ("answers", "contexts", "coeff", "message"),
    [
        ([], ["abc"], 0.5, "at least one answer"),
        (["1"], [], 0.5, "at least one context"),
        (["1"], [""], 0.5, "empty"),
        (["1"], ["abc"], 1.5, "coeff"),
        (["1"], ["abc"], -0.1, "coeff"),
    ],
)
def test_summarization_errors(
    answers: list[str], contexts: list[str], coeff: float, message: str
) -> None:
    with pytest.raises(MetricError, match=message):
        summarization_score(answers, "s", contexts, coeff=coeff)
