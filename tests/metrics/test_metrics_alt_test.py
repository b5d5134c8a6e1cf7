"""The Alternative Annotator Test: hand-worked cases and an independent implementation."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalcore.errors import MetricError
from evalcore.metrics import alt_test, alt_test_curve, benjamini_yekutieli

# --- Benjamini-Yekutieli ----------------------------------------------------------------------------


def test_by_rejects_the_largest_k_that_passes() -> None:
    # m = 4, H_4 = 1 + 1/2 + 1/3 + 1/4 = 25/12; bound_k = k/4 * 0.05 / (25/12) = k * 0.006
    # sorted p: 0.001 <= 0.006, 0.013 > 0.012, 0.017 <= 0.018, 0.5 > 0.024 -> k = 3 (step-up:
    # the second fails its own bound but is rejected with the third)
    rejected = benjamini_yekutieli([0.5, 0.013, 0.001, 0.017], q=0.05)
    assert rejected.tolist() == [False, True, True, True]


def test_by_rejects_none_and_never_a_nan() -> None:
    assert benjamini_yekutieli([0.2, 0.3], q=0.05).tolist() == [False, False]
    # m = 2, H_2 = 1.5: bounds 0.01667 and 0.0333; the NaN counts in m but is never rejected
    assert benjamini_yekutieli([0.01, math.nan], q=0.05).tolist() == [True, False]
    assert benjamini_yekutieli([], q=0.05).tolist() == []


# --- hand-worked ------------------------------------------------------------------------------------


def test_accuracy_wins_ties_and_the_t_test_by_hand() -> None:
    # Three annotators a, b, c; the judge agrees with the majority, c is the odd one out on item 2.
    # item 1: a=1 b=1 c=1 J=1 -> every comparison is a tie (w_J = w_H = 1)
    # item 2: a=1 b=1 c=0 J=1 -> for c: R = {1, 1}, align(J) = 1, align(c) = 0: judge wins, d = -1
    #                           for a: R = {1, 0}, align(J) = 1/2 = align(a): tie, d = 0 (same for b)
    humans = pd.DataFrame({"a": [1, 1] * 15, "b": [1, 1] * 15, "c": [1, 0] * 15})
    judge = [1, 1] * 15
    result = alt_test(humans, judge, epsilon=0.2)
    by_name = {a.annotator: a for a in result.annotators}
    # a and b: d is all zeros -> constant -> NaN, never a rejection
    assert math.isnan(by_name["a"].p_value)
    assert by_name["a"].won is False
    # c: d = [0, -1] * 15, mean -0.5; t = (-0.5 - 0.2) / (s / sqrt(30)), the one-sided p is tiny
    d = np.array([0.0, -1.0] * 15)
    expected = stats.ttest_1samp(d, 0.2, alternative="less").pvalue
    assert by_name["c"].p_value == pytest.approx(expected)
    assert by_name["c"].mean_difference == pytest.approx(-0.5)
    # rho: the judge wins every item against everyone
    assert [by_name[x].advantage_probability for x in "abc"] == [1.0, 1.0, 1.0]
    # BY over (NaN, NaN, tiny): m = 3, only c can be rejected -> omega = 1/3, which fails 0.5
    assert by_name["c"].won is True
    assert result.winning_rate == pytest.approx(1 / 3)
    assert result.passed is False


def test_neg_rmse_by_hand() -> None:
    # item: a=1, b=2, c=4, J=2. For c: R = {1, 2}; align(J) = -sqrt(((2-1)^2 + 0^2)/2) = -0.707,
    # align(c) = -sqrt((9 + 4)/2) = -2.55 -> judge wins. For a: R = {2, 4}; align(J) = -sqrt(2)
    # = -1.41, align(a) = -sqrt((1 + 9)/2) = -2.24 -> judge wins. For b: R = {1, 4}; J == b: tie.
    humans = [[1, 2, 4]] * 30
    result = alt_test(humans, [2] * 30, scoring="neg_rmse")
    rho = [a.advantage_probability for a in result.annotators]
    assert rho == [1.0, 1.0, 1.0]
    # d: a and c lose every item (d = -1, constant), b ties every item (d = 0, constant): all NaN
    assert all(math.isnan(a.p_value) for a in result.annotators)
    assert result.winning_rate == 0.0
    assert result.passed is False


def test_skipped_annotators_and_kept_items() -> None:
    # d labels only 10 items: skipped at min_items=30; the judge's missing item 0 is not kept
    rng = np.random.default_rng(0)
    humans = pd.DataFrame(rng.integers(0, 2, (40, 3)), columns=["a", "b", "c"]).astype(object)
    humans["d"] = [1] * 10 + [None] * 30
    judge: list[Any] = list(rng.integers(0, 2, 40))
    judge[0] = None
    result = alt_test(humans, judge)
    assert result.n_items == 39
    skipped = {a.annotator: a.skipped for a in result.skipped}
    assert list(skipped) == ["d"]
    assert "9 shared items" in skipped["d"]
    assert result.to_dict()["annotators"][3] == {"annotator": "d", "n": 9, "skipped": skipped["d"]}


def test_parameters_are_checked() -> None:
    humans = [[1, 1, 1]] * 30
    with pytest.raises(MetricError, match="at least 3 annotators"):
        alt_test([[1, 1]] * 30, [1] * 30)
    with pytest.raises(MetricError, match="epsilon"):
        alt_test(humans, [1] * 30, epsilon=-0.1)
    with pytest.raises(MetricError, match="numeric labels"):
        alt_test([["x", "y", "x"]] * 30, ["x"] * 30, scoring="neg_rmse")
    with pytest.raises(MetricError, match="31 labels for 30 items"):
        alt_test(humans, [1] * 31)


def test_no_tested_annotator_gives_nan_and_fails() -> None:
    result = alt_test([[1, 1, 1]] * 5, [1] * 5)
    assert math.isnan(result.winning_rate)
    assert result.passed is False
    assert "could not run" in result.verdict()
    assert result.to_dict()["winning_rate"] is None


# --- an independent implementation straight from the definition ----------------------------------


def _reference(
    humans: list[list[Any]],
    judge: list[Any],
    scoring: str,
    epsilon: float,
    q: float,
    min_annotators: int,
    min_items: int,
) -> tuple[float, float, list[float | None]]:
    m = len(humans[0])

    def align(x: float, others: list[float]) -> float:
        if scoring == "accuracy":
            return sum(1 for r in others if r == x) / len(others)
        return -math.sqrt(sum((x - r) ** 2 for r in others) / len(others))

    kept = [
        i
        for i in range(len(judge))
        if judge[i] is not None and sum(v is not None for v in humans[i]) >= min_annotators
    ]
    p_values: list[float | None] = []
    rhos: list[float] = []
    tested_p: list[float] = []
    for h in range(m):
        d, wj = [], []
        for i in kept:
            own = humans[i][h]
            if own is None:
                continue
            others = [humans[i][g] for g in range(m) if g != h and humans[i][g] is not None]
            a_j, a_h = align(judge[i], others), align(own, others)
            w_j = 1.0 if a_j >= a_h else 0.0
            w_h = 1.0 if a_h >= a_j else 0.0
            d.append(w_h - w_j)
            wj.append(w_j)
        if len(d) < min_items:
            p_values.append(None)
            continue
        if len(set(d)) == 1:
            p = math.nan
        else:
            p = float(stats.ttest_1samp(d, epsilon, alternative="less").pvalue)
        p_values.append(p)
        tested_p.append(p)
        rhos.append(sum(wj) / len(wj))
    k_total = len(tested_p)
    harmonic = sum(1 / k for k in range(1, k_total + 1))
    ordered = sorted(p for p in tested_p if not math.isnan(p))
    rejected = 0
    for k, p in enumerate(ordered, start=1):
        if p <= k / k_total * q / harmonic:
            rejected = k
    omega = rejected / k_total if k_total else math.nan
    rho = sum(rhos) / len(rhos) if rhos else math.nan
    return omega, rho, p_values


@pytest.mark.parametrize("seed", range(12))
def test_agrees_with_the_definition_on_random_data(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(3, 11))
    n = int(rng.integers(30, 90))
    scoring = "accuracy" if seed % 2 == 0 else "neg_rmse"
    k = 3 if scoring == "accuracy" else 5
    truth = rng.integers(1, k + 1, n)
    noise = rng.integers(-1, 2, (n, m)) * (rng.random((n, m)) < 0.4)
    labels = np.clip(truth[:, None] + noise, 1, k)
    holes = rng.random((n, m)) < 0.25
    humans = [[None if holes[i, h] else int(labels[i, h]) for h in range(m)] for i in range(n)]
    judge_values = np.clip(truth + rng.integers(-1, 2, n) * (rng.random(n) < 0.3), 1, k)
    judge = [None if rng.random() < 0.05 else int(v) for v in judge_values]
    epsilon = float(rng.choice([0.0, 0.1, 0.2, 0.3]))
    min_items = int(rng.choice([10, 20, 30]))
    omega, rho, p_values = _reference(humans, judge, scoring, epsilon, 0.05, 2, min_items)
    result = alt_test(
        pd.DataFrame(humans, columns=[f"h{j}" for j in range(m)]),
        judge,
        scoring=scoring,  # type: ignore[arg-type]
        epsilon=epsilon,
        min_items=min_items,
    )
    assert result.winning_rate == pytest.approx(omega, nan_ok=True)
    assert result.advantage_probability == pytest.approx(rho, nan_ok=True)
    for got, want in zip(result.annotators, p_values, strict=True):
        if want is None:
            assert got.skipped is not None
        else:
            assert got.p_value == pytest.approx(want, nan_ok=True)


def test_shuffling_items_or_renaming_labels_changes_nothing() -> None:
    rng = np.random.default_rng(7)
    humans = rng.integers(0, 3, (80, 5))
    judge = rng.integers(0, 3, 80)
    base = alt_test(humans, judge).to_dict()
    order = rng.permutation(80)
    assert alt_test(humans[order], judge[order]).to_dict() == base
    words = np.array(["low", "mid", "high"], dtype=object)
    assert alt_test(words[humans], words[judge]).to_dict() == base


def test_curve_matches_single_runs() -> None:
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 2, 60)
    humans = np.where(rng.random((60, 4)) < 0.8, truth[:, None], 1 - truth[:, None])
    judge = np.where(rng.random(60) < 0.85, truth, 1 - truth)
    curve = alt_test_curve(humans, judge, [0.0, 0.15, 0.3])
    for eps, omega, rho in curve.itertuples(index=False):
        single = alt_test(humans, judge, epsilon=eps)
        assert omega == pytest.approx(single.winning_rate, nan_ok=True)
        assert rho == pytest.approx(single.advantage_probability)
    # the winning rate never falls as the judge is granted more advantage
    assert curve["winning_rate"].is_monotonic_increasing
