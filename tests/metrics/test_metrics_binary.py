"""Binary criteria: rates, bias-corrected pass rates and threshold sweeps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalcore.errors import MetricError, UndefinedMetricError
from evalcore.metrics import (
    SweepPoint,
    balanced_accuracy,
    best_threshold,
    bias_corrected_rate,
    corrected_pass_rate,
    threshold_sweep,
    true_negative_rate,
    true_positive_rate,
)

HUMAN = ["pass", "pass", "pass", "pass", "fail", "fail", "fail", None]
JUDGE = ["pass", "pass", "pass", "fail", "pass", "fail", "fail", "pass"]


def test_rates_hand_worked() -> None:
    # 4 human passes, judge agrees on 3 -> TPR 3/4; 3 human fails, judge agrees on 2 -> TNR 2/3
    assert true_positive_rate(HUMAN, JUDGE, positive="pass") == pytest.approx(3 / 4)
    assert true_negative_rate(HUMAN, JUDGE, positive="pass") == pytest.approx(2 / 3)
    # swapping the positive label swaps the rates
    assert true_positive_rate(HUMAN, JUDGE, positive="fail") == pytest.approx(2 / 3)


def test_rates_undefined_without_positives_or_negatives() -> None:
    assert math.isnan(true_positive_rate(["fail"], ["pass"], positive="pass"))
    assert math.isnan(true_negative_rate(["pass"], ["pass"], positive="pass"))


def test_rates_treat_every_other_label_as_negative() -> None:
    # positive 5 on a 1-5 scale: negatives are 1..4
    assert true_negative_rate([5, 4, 1, 2], [5, 5, 2, 2], positive="5") == pytest.approx(2 / 3)


def test_bias_corrected_rate_hand_worked() -> None:
    # (0.6 + 0.9 - 1) / (0.8 + 0.9 - 1) = 0.5 / 0.7
    assert bias_corrected_rate(0.6, 0.8, 0.9) == pytest.approx(5 / 7)
    # a perfect judge needs no correction
    assert bias_corrected_rate(0.37, 1.0, 1.0) == pytest.approx(0.37)
    # clipped to [0, 1]: (0.05 + 0.9 - 1) / 0.7 < 0
    assert bias_corrected_rate(0.05, 0.8, 0.9) == 0.0
    assert bias_corrected_rate(1.0, 0.8, 0.9) == 1.0  # (1 + 0.9 - 1) / 0.7 > 1


def test_bias_corrected_rate_refuses_a_chance_judge() -> None:
    with pytest.raises(UndefinedMetricError, match="no better than chance"):
        bias_corrected_rate(0.5, 0.5, 0.5)
    with pytest.raises(MetricError, match="between 0 and 1"):
        bias_corrected_rate(1.5, 0.9, 0.9)


def test_corrected_pass_rate_hand_worked() -> None:
    unlabelled = ["pass"] * 6 + ["fail"] * 4 + [None, "error"]
    r = corrected_pass_rate(unlabelled, HUMAN, JUDGE, positive="pass", n_boot=0)
    assert (r.n_labelled, r.n_unlabelled) == (7, 10)
    assert r.p_obs == pytest.approx(0.6)  # 6 of the 10 verdicts
    assert (r.tpr, r.tnr) == pytest.approx((3 / 4, 2 / 3))
    # (0.6 + 2/3 - 1) / (3/4 + 2/3 - 1) = (4/15) / (5/12) = 16/25
    assert r.theta == pytest.approx(16 / 25)
    assert r.ci is None


def test_corrected_pass_rate_interval() -> None:
    rng = np.random.default_rng(0)
    truth = rng.random(400) < 0.3
    judge = np.where(truth, rng.random(400) < 0.9, rng.random(400) < 0.15)
    unlabelled_truth = rng.random(5000) < 0.3
    unlabelled = np.where(unlabelled_truth, rng.random(5000) < 0.9, rng.random(5000) < 0.15)
    r = corrected_pass_rate(unlabelled, truth, judge, positive=True, n_boot=500, seed=2)
    assert r.ci is not None
    low, high = r.ci
    assert low < r.theta < high
    assert low < 0.3 < high  # the true rate is recovered
    assert r.p_obs > 0.33  # while the raw judge rate is biased upwards by false passes
    again = corrected_pass_rate(unlabelled, truth, judge, positive=True, n_boot=500, seed=2)
    assert again == r


def test_corrected_pass_rate_drops_uninformative_resamples() -> None:
    # barely better than chance on very few labelled items: many resamples have TPR + TNR <= 1
    r = corrected_pass_rate(
        ["pass", "fail"] * 5,
        ["pass", "pass", "fail", "fail", "pass"],
        ["pass", "fail", "fail", "pass", "pass"],
        positive="pass",
        n_boot=300,
    )
    assert 0 < r.n_boot_dropped < 300


def test_corrected_pass_rate_errors() -> None:
    with pytest.raises(UndefinedMetricError, match="no better than chance"):
        corrected_pass_rate(["pass"], ["pass", "fail"], ["fail", "pass"], positive="pass")
    with pytest.raises(UndefinedMetricError, match="no negative"):
        corrected_pass_rate(["pass"], ["pass", "pass"], ["pass", "fail"], positive="pass")
    with pytest.raises(MetricError, match="no verdict"):
        corrected_pass_rate([None], ["pass", "fail"], ["pass", "fail"], positive="pass")


def test_threshold_sweep_hand_worked() -> None:
    truth = [1, 1, 1, 0, 0, None]
    scores = [0.9, 0.4, 0.7, 0.4, 0.1, 0.8]
    points = threshold_sweep(truth, scores, positive=1)
    assert [p.threshold for p in points] == [0.1, 0.4, 0.7, 0.9]  # distinct observed scores
    # t = 0.4: predicted positive = 0.9, 0.4, 0.7, 0.4 -> TP 3/3, TN 1/2 -> BA 3/4
    assert points[1] == SweepPoint(0.4, 0.75, 1.0, 0.5, 5)
    # t = 0.7: TP 2/3, TN 2/2 -> BA 5/6
    assert points[2].balanced_accuracy == pytest.approx(5 / 6)
    assert best_threshold(points).threshold == 0.7


def test_threshold_sweep_equals_balanced_accuracy_at_each_threshold() -> None:
    rng = np.random.default_rng(1)
    truth = rng.random(300) < 0.4
    scores = np.round(truth * 0.3 + rng.random(300), 2)
    grid = [0.0, 0.25, 0.5, 0.75, 1.0, 2.0]
    for point in threshold_sweep(truth, scores, positive=True, thresholds=grid):
        predicted = scores >= point.threshold
        assert point.balanced_accuracy == pytest.approx(balanced_accuracy(truth, predicted))


def test_threshold_sweep_errors() -> None:
    with pytest.raises(MetricError, match="numbers"):
        threshold_sweep([1, 0], ["high", "low"], positive=1)
    with pytest.raises(MetricError, match="no negative"):
        threshold_sweep([1, 1], [0.2, 0.3], positive=1)
    with pytest.raises(MetricError, match="at least one"):
        best_threshold([])


def test_best_threshold_prefers_the_lowest_among_ties() -> None:
    points = [SweepPoint(0.2, 0.8, 1, 0.6, 10), SweepPoint(0.5, 0.8, 0.6, 1, 10)]
    assert best_threshold(points).threshold == 0.2
