"""Hand-worked checks of the judge-vs-human metrics, including Vertex AI's `evaluate_autorater` cases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from evalcore.errors import MetricError
from evalcore.metrics import (
    ClassMetrics,
    accuracy,
    balanced_accuracy,
    calibrate,
    cohen_kappa,
    confusion_labels,
    confusion_matrix,
    kendall_tau_b,
    per_class_metrics,
    spearman,
    weighted_f1,
)

# A small multi-class case used by several tests.
#   rows = human, columns = judge, labels 1, 2, 3
#   1: [2, 1, 0]
#   2: [0, 1, 1]
#   3: [0, 0, 1]
HUMAN = [1, 1, 1, 2, 2, 3]
JUDGE = [1, 1, 2, 2, 3, 3]


def test_confusion_matrix_rows_are_human_columns_are_judge() -> None:
    cm = confusion_matrix(HUMAN, JUDGE)
    assert cm.dtype == np.int64
    assert cm.tolist() == [[2, 1, 0], [0, 1, 1], [0, 0, 1]]
    assert confusion_labels(HUMAN, JUDGE) == [1.0, 2.0, 3.0]


def test_multiclass_hand_worked() -> None:
    # recall: 2/3, 1/2, 1/1 -> (2/3 + 1/2 + 1) / 3 = 13/18
    assert balanced_accuracy(HUMAN, JUDGE) == pytest.approx(13 / 18)
    # F1 = 2*tp/(true+pred): 4/5, 2/4, 2/3; weights 3, 2, 1 -> (12/5 + 1 + 2/3) / 6 = 61/90
    assert weighted_f1(HUMAN, JUDGE) == pytest.approx(61 / 90)
    # 4 of 6 on the diagonal
    assert accuracy(HUMAN, JUDGE) == pytest.approx(2 / 3)
    # p_o = 4/6; p_e = (3*2 + 2*2 + 1*2) / 36 = 1/3 -> (2/3 - 1/3) / (2/3) = 1/2
    assert cohen_kappa(HUMAN, JUDGE) == pytest.approx(0.5)


def test_per_class_metrics_hand_worked() -> None:
    got = per_class_metrics(HUMAN, JUDGE)
    # precision = tp/pred: 2/2, 1/2, 1/2; recall = tp/true: 2/3, 1/2, 1; f1 = 4/5, 1/2, 2/3
    expected = [
        ClassMetrics(1.0, 1.0, 2 / 3, 4 / 5, 3),
        ClassMetrics(2.0, 0.5, 0.5, 0.5, 2),
        ClassMetrics(3.0, 0.5, 1.0, 2 / 3, 1),
    ]
    for g, e in zip(got, expected, strict=True):
        assert g.label == e.label
        assert g.support == e.support
        assert (g.precision, g.recall, g.f1) == pytest.approx((e.precision, e.recall, e.f1))


def test_per_class_zero_division_gives_zero() -> None:
    got = per_class_metrics([1, 1], [1, 2])
    # label 2: never true (recall 0/0 -> 0), predicted once, never right (precision 0/1)
    assert got[1] == ClassMetrics(2.0, 0.0, 0.0, 0.0, 0)


def test_label_only_the_judge_uses_is_left_out_of_balanced_accuracy() -> None:
    human, judge = [1, 1, 2, 2], [1, 3, 2, 2]
    # the matrix still shows label 3: row 3 is all zeros, column 3 has the judge's one use
    assert confusion_matrix(human, judge).tolist() == [[1, 0, 1], [0, 2, 0], [0, 0, 0]]
    # recall(1) = 1/2, recall(2) = 2/2; class 3 never in y_true -> (1/2 + 1) / 2 = 3/4
    assert balanced_accuracy(human, judge) == pytest.approx(0.75)
    # F1(1) = 2/3, F1(2) = 1, weight of 3 is 0 -> (2*2/3 + 2*1) / 4 = 5/6
    assert weighted_f1(human, judge) == pytest.approx(5 / 6)


def test_class_only_the_human_uses_counts_with_recall_zero() -> None:
    # recall(1) = 2/2, recall(2) = 1/1, recall(3) = 0/1 -> (1 + 1 + 0) / 3 = 2/3
    assert balanced_accuracy([1, 1, 2, 3], [1, 1, 2, 2]) == pytest.approx(2 / 3)


def test_one_to_ten_scale_sorts_numerically() -> None:
    human, judge = [1, 2, 9, 10, 10], [1, 2, 10, 10, 9]
    assert confusion_labels(human, judge) == [1.0, 2.0, 9.0, 10.0]  # 10 after 9
    # recall: 1, 1, 0/1, 1/2 -> (1 + 1 + 0 + 1/2) / 4 = 5/8
    assert balanced_accuracy(human, judge) == pytest.approx(5 / 8)


def test_numbers_equal_vertex_string_labels() -> None:
    # Vertex turns scores into str(float(x)) and sorts the strings ("10.0" between "1.0" and "2.0").
    rng = np.random.default_rng(7)
    human = rng.integers(1, 11, 300)
    judge = np.clip(human + rng.integers(-2, 3, 300), 1, 10)
    as_vertex_h = [str(float(x)) for x in human]
    as_vertex_j = [str(float(x)) for x in judge]
    vertex_order = sorted(set(as_vertex_h) | set(as_vertex_j))
    assert vertex_order[:3] == ["1.0", "10.0", "2.0"]
    # Feed the strings through evalcore with Vertex's string order forced as words:
    words_h = [f"v{x}" for x in as_vertex_h]
    words_j = [f"v{x}" for x in as_vertex_j]
    assert balanced_accuracy(human, judge) == pytest.approx(balanced_accuracy(words_h, words_j))
    assert weighted_f1(human, judge) == pytest.approx(weighted_f1(words_h, words_j))
    # and the matrices are the same up to that permutation of the axes
    ours = confusion_matrix(human, judge)
    theirs = confusion_matrix(words_h, words_j)
    perm = [
        confusion_labels(human, judge).index(float(v[1:]))
        for v in confusion_labels(words_h, words_j)
    ]
    assert (ours[np.ix_(perm, perm)] == theirs).all()


def test_missing_values_and_error_rows_are_dropped_and_counted() -> None:
    human = [1, 2, None, "error", 2, float("nan"), "", pd.NA, 1]
    judge = [1, "ERROR", 2, 1, 2, 2, 1, 1, " Error "]
    # only rows 0 and 4 have both sides: (1, 1) and (2, 2)
    assert confusion_matrix(human, judge).tolist() == [[1, 0], [0, 1]]
    assert balanced_accuracy(human, judge) == 1.0
    report = calibrate(human, judge, n_boot=0)
    assert (report.n, report.n_dropped) == (2, 7)


def test_two_class_hand_worked() -> None:
    human = ["pass", "pass", "pass", "fail"]
    judge = ["pass", "fail", "pass", "fail"]
    # recall(fail) = 1/1, recall(pass) = 2/3 -> 5/6
    assert balanced_accuracy(human, judge) == pytest.approx(5 / 6)
    # F1(fail) = 2*1/(1+2) = 2/3, F1(pass) = 2*2/(3+2) = 4/5 -> (2/3 + 3*4/5) / 4 = 23/30
    assert weighted_f1(human, judge) == pytest.approx(23 / 30)


def test_pairwise_a_b_tie_hand_worked() -> None:
    human = ["A", "A", "B", "B", "TIE"]
    judge = ["A", "B", "B", "B", "A"]
    assert confusion_labels(human, judge) == ["A", "B", "TIE"]
    # recall A = 1/2, B = 2/2, TIE = 0/1 -> 1.5 / 3 = 1/2
    assert balanced_accuracy(human, judge) == pytest.approx(0.5)
    # F1 A = 2/(2+2) = 1/2, B = 4/(2+3) = 4/5, TIE = 0 -> (2*1/2 + 2*4/5 + 0) / 5 = 0.52
    assert weighted_f1(human, judge) == pytest.approx(0.52)


def test_explicit_labels_fix_the_order_and_keep_unused_labels() -> None:
    cm = confusion_matrix(["low", "high"], ["low", "low"], labels=["low", "medium", "high"])
    assert cm.tolist() == [[1, 0, 0], [0, 0, 0], [1, 0, 0]]


def test_observed_label_outside_explicit_labels_is_named() -> None:
    with pytest.raises(MetricError, match="'7'"):
        balanced_accuracy([1, 7], [1, 2], labels=[1, 2, 3])


def test_no_comparable_row_raises() -> None:
    with pytest.raises(MetricError, match="no comparable rows: every one of the 2 rows"):
        balanced_accuracy([None, 1], [2, "error"])
    with pytest.raises(MetricError, match="are empty"):
        weighted_f1([], [])
    # a confusion matrix of nothing is still well defined
    assert confusion_matrix([], [], labels=[1, 2]).tolist() == [[0, 0], [0, 0]]


def test_weighted_kappa_hand_worked() -> None:
    y1, y2 = [1, 2, 3], [1, 3, 3]
    # observed disagreement (0 + 1 + 0) / 3 = 1/3
    # linear expected: rows (1/3, 1/3, 1/3), cols (1/3, 0, 2/3): sum r_i c_j |i-j| = 1
    assert cohen_kappa(y1, y2, weights="linear") == pytest.approx(1 - (1 / 3) / 1)
    # quadratic expected = (8/3 + 1 + 4/3) / 3 = 5/3 -> 1 - (1/3)/(5/3) = 4/5
    assert cohen_kappa(y1, y2, weights="quadratic") == pytest.approx(0.8)


def test_weighted_kappa_uses_positions_of_explicit_labels() -> None:
    y1, y2 = [1, 2, 4], [2, 2, 4]
    # observed linear disagreement: one miss of one step -> 1/3 either way.
    # labels 1, 2, 4 (positions 0 1 2): rows 1/3 each, cols (0, 2/3, 1/3);
    #   expected = (4/3 + 1/3 + 2/3) / 3 = 7/9 -> 1 - (1/3)/(7/9) = 4/7
    assert cohen_kappa(y1, y2, weights="linear") == pytest.approx(4 / 7)
    # labels 1..4 (positions 0 1 3): expected = (5/3 + 2/3 + 4/3) / 3 = 11/9 -> 1 - 3/11 = 8/11
    assert cohen_kappa(y1, y2, labels=[1, 2, 3, 4], weights="linear") == pytest.approx(8 / 11)
    # unweighted kappa ignores positions: the unused label changes nothing
    assert cohen_kappa(y1, y2, labels=[1, 2, 3, 4]) == pytest.approx(cohen_kappa(y1, y2))


def test_kappa_undefined_when_expected_agreement_is_one() -> None:
    assert math.isnan(cohen_kappa([1, 1], [1, 1]))


def test_unknown_weights_raise() -> None:
    with pytest.raises(MetricError, match="weights"):
        cohen_kappa([1, 2], [1, 2], weights="cubic")  # type: ignore[arg-type]


def test_rank_correlations_hand_worked() -> None:
    y1, y2 = [1, 1, 2, 3], [1, 2, 2, 3]
    # mid-ranks 1.5 1.5 3 4 and 1 2.5 2.5 4: cov 3.75, variances 4.5 and 4.5 -> 5/6
    assert spearman(y1, y2) == pytest.approx(5 / 6)
    # 6 pairs: 4 concordant, 0 discordant, 1 tied in y1, 1 tied in y2 -> 4 / sqrt(5 * 5) = 0.8
    assert kendall_tau_b(y1, y2) == pytest.approx(0.8)


def test_rank_correlations_follow_explicit_word_order() -> None:
    scale = ["very low", "low", "medium", "high"]
    human = ["low", "medium", "high", "very low"]
    judge = ["very low", "medium", "high", "low"]
    # positions 1 2 3 0 vs 0 2 3 1: C = 5, D = 1 -> (5 - 1) / 6
    assert kendall_tau_b(human, judge, labels=scale) == pytest.approx(4 / 6)
    # rank differences 1 0 0 1: 1 - 6*2 / (4 * 15) = 0.8
    assert spearman(human, judge, labels=scale) == pytest.approx(0.8)


def test_rank_correlations_of_constant_input_are_nan() -> None:
    assert math.isnan(spearman([2, 2, 2], [1, 2, 3]))
    assert math.isnan(kendall_tau_b([1, 2, 3], [4, 4, 4]))


def test_many_distinct_values_use_the_row_path_for_rank_correlations() -> None:
    import scipy.stats

    rng = np.random.default_rng(3)
    x = rng.normal(size=3000).round(3)
    y = (x + rng.normal(size=3000)).round(3)
    assert spearman(x, y) == pytest.approx(scipy.stats.spearmanr(x, y).statistic)
    assert kendall_tau_b(x, y) == pytest.approx(scipy.stats.kendalltau(x, y).statistic)
    with pytest.raises(MetricError, match="too many"):
        confusion_matrix(x, y)


def test_length_mismatch_raises() -> None:
    with pytest.raises(MetricError, match="differ in length"):
        accuracy([1, 2], [1])
