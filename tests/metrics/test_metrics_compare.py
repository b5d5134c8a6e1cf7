"""compare(): two judge versions on the same items."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.stats

from evalcore.errors import MetricError
from evalcore.metrics import balanced_accuracy, compare, mcnemar_exact_p, weighted_f1


def test_compare_hand_worked() -> None:
    human = [1, 1, 2, 2, 3, None]
    v6 = [1, 2, 2, 1, 3, 1]
    v7 = [1, 1, 2, 2, 2, 1]
    c = compare(human, v6, v7, n_boot=0)
    assert (c.n, c.n_dropped) == (5, 1)
    # v6 recall: 1/2, 1/2, 1/1 -> 2/3; v7 recall: 2/2, 2/2, 0/1 -> 2/3
    assert c.balanced_accuracy_a == pytest.approx(2 / 3)
    assert c.balanced_accuracy_b == pytest.approx(2 / 3)
    assert c.diff_balanced_accuracy == pytest.approx(0.0)
    # v6 F1: 1/2, 1/2, 1 weighted 2, 2, 1 -> 3/5; v7 F1: 1, 4/5, 0 -> (2 + 8/5) / 5 = 18/25
    assert c.weighted_f1_a == pytest.approx(3 / 5)
    assert c.weighted_f1_b == pytest.approx(18 / 25)
    assert c.diff_weighted_f1 == pytest.approx(18 / 25 - 3 / 5)
    # v6 right on rows 0, 2, 4; v7 right on rows 0, 1, 2, 3 -> a-only: row 4; b-only: rows 1, 3
    assert (c.a_right_b_wrong, c.a_wrong_b_right) == (1, 2)
    # two-sided exact: 2 * P(X <= 1 | n=3, p=1/2) = 2 * 4/8 = 1
    assert c.mcnemar_p == 1.0
    assert c.diff_balanced_accuracy_ci is None
    assert c.diff_weighted_f1_ci is None


def test_compare_agrees_with_the_single_judge_metrics() -> None:
    rng = np.random.default_rng(3)
    human = rng.integers(1, 6, 500)
    a = np.where(rng.random(500) < 0.5, human, rng.integers(1, 6, 500))
    b = np.where(rng.random(500) < 0.7, human, rng.integers(1, 6, 500))
    c = compare(human, a, b, n_boot=400, seed=1)
    assert c.balanced_accuracy_a == pytest.approx(balanced_accuracy(human, a))
    assert c.weighted_f1_b == pytest.approx(weighted_f1(human, b))
    assert c.diff_balanced_accuracy_ci is not None
    low, high = c.diff_balanced_accuracy_ci
    assert 0 < low < c.diff_balanced_accuracy < high  # b is clearly better
    right_a, right_b = a == human, b == human
    assert c.a_right_b_wrong == int(np.sum(right_a & ~right_b))
    assert c.a_wrong_b_right == int(np.sum(~right_a & right_b))
    assert c.mcnemar_p < 0.01


def test_paired_interval_is_narrower_than_an_unpaired_one() -> None:
    # two judges that make the same mistakes, except on a few items: the paired difference is tight
    rng = np.random.default_rng(5)
    human = rng.integers(1, 4, 400)
    a = np.where(rng.random(400) < 0.6, human, rng.integers(1, 4, 400))
    b = a.copy()
    b[:10] = human[:10]
    c = compare(human, a, b, n_boot=500, seed=0)
    assert c.diff_weighted_f1_ci is not None
    low, high = c.diff_weighted_f1_ci
    assert high - low < 0.03
    assert low >= 0.0  # b is never worse than a on a resample of the same items


def test_swapping_judges_negates_the_differences() -> None:
    human, a, b = [1, 2, 3, 1, 2], [1, 2, 2, 1, 1], [1, 3, 3, 2, 2]
    ab = compare(human, a, b, n_boot=0)
    ba = compare(human, b, a, n_boot=0)
    assert ab.diff_balanced_accuracy == pytest.approx(-ba.diff_balanced_accuracy)
    assert (ab.a_right_b_wrong, ab.a_wrong_b_right) == (ba.a_wrong_b_right, ba.a_right_b_wrong)
    assert ab.mcnemar_p == ba.mcnemar_p


def test_compare_is_reproducible_and_json_ready() -> None:
    args = ([1, 2, 3, 1, 2, 3], [1, 2, 2, 1, 1, 3], [1, 3, 3, 2, 2, 3])
    first = compare(*args, n_boot=100, seed=9).to_dict()
    assert first == compare(*args, n_boot=100, seed=9).to_dict()
    json.dumps(first, allow_nan=False)


def test_compare_drops_rows_where_any_side_is_missing() -> None:
    c = compare([1, None, 2, 2], [1, 1, "error", 2], [1, 1, 2, ""], n_boot=0)
    assert (c.n, c.n_dropped) == (1, 3)
    with pytest.raises(MetricError, match="no comparable rows"):
        compare([None], [1], [1])


@pytest.mark.parametrize(("b", "c"), [(0, 0), (0, 5), (3, 9), (7, 7), (12, 1), (40, 25)])
def test_mcnemar_exact_matches_scipy_binomtest(b: int, c: int) -> None:
    expected = 1.0 if b + c == 0 else scipy.stats.binomtest(b, b + c, 0.5).pvalue
    assert mcnemar_exact_p(b, c) == pytest.approx(expected)


def test_mcnemar_hand_worked() -> None:
    assert mcnemar_exact_p(0, 0) == 1.0  # no discordant pair
    assert mcnemar_exact_p(1, 5) == pytest.approx(2 * 7 / 64)  # 2 * (C(6,0) + C(6,1)) / 2**6
    with pytest.raises(MetricError):
        mcnemar_exact_p(-1, 2)
