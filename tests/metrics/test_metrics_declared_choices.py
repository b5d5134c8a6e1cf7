"""The paired comparison takes any declared metric, and the Alt-Test's scorings are declared once.

:func:`evalcore.metrics.compare` with ``metric=`` is what the optimiser proves candidates with; its
values are checked against scikit-learn, and its interval against the one it computes for
balanced accuracy from the same resamples.
"""

from __future__ import annotations

import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score

from evalcore.errors import MetricError
from evalcore.labels import LIKERT_5, PAIRWISE, PASS_FAIL
from evalcore.metrics import (
    ALT_TEST_SCORING_DEFS,
    ALT_TEST_SCORINGS,
    alt_test,
    alt_test_scoring,
    compare,
    default_alt_test_scoring,
)
from evalcore.report import default_scoring

HUMAN = [1, 1, 2, 2, 3, 3, 1, 2, 3, 1, 2, 3]
A = [1, 2, 2, 2, 3, 1, 1, 2, 2, 1, 3, 3]
B = [1, 1, 2, 2, 3, 3, 1, 3, 3, 1, 2, 2]


@pytest.mark.parametrize(
    ("metric", "reference"), [("accuracy", accuracy_score), ("cohen_kappa", cohen_kappa_score)]
)
def test_a_declared_metric_of_both_judges_matches_scikit_learn(metric: str, reference) -> None:
    c = compare(HUMAN, A, B, n_boot=0, metric=metric)
    assert c.metric == metric
    assert c.metric_a == pytest.approx(reference(HUMAN, A))
    assert c.metric_b == pytest.approx(reference(HUMAN, B))
    assert c.diff_metric == pytest.approx(reference(HUMAN, B) - reference(HUMAN, A))
    assert c.diff_metric_ci is None  # n_boot=0: no interval


def test_a_hand_worked_difference() -> None:
    # a is right on 3 of 4 items, b on all 4: accuracy 0.75 and 1.0
    c = compare([1, 1, 2, 2], [1, 2, 2, 2], [1, 1, 2, 2], n_boot=0, metric="accuracy")
    assert (c.metric_a, c.metric_b, c.diff_metric) == (0.75, 1.0, 0.25)
    # kappa of a: p_o = 3/4, p_e = 1/2 * 1/4 + 1/2 * 3/4 = 1/2, kappa = (3/4 - 1/2) / (1/2) = 1/2
    k = compare([1, 1, 2, 2], [1, 2, 2, 2], [1, 1, 2, 2], n_boot=0, metric="cohen_kappa")
    assert (k.metric_a, k.metric_b) == (0.5, 1.0)


def test_the_interval_comes_from_the_same_resamples_at_the_confidence_asked() -> None:
    c = compare(HUMAN, A, B, n_boot=500, seed=3, confidence=0.9, metric="balanced_accuracy")
    assert c.metric == "accuracy_balanced"  # an alias names the declared metric
    assert c.diff_metric == pytest.approx(c.diff_balanced_accuracy)
    assert c.diff_metric_ci == pytest.approx(c.diff_balanced_accuracy_ci)
    wide = compare(HUMAN, A, B, n_boot=500, seed=3, confidence=0.99, metric="accuracy")
    narrow = compare(HUMAN, A, B, n_boot=500, seed=3, confidence=0.5, metric="accuracy")
    assert wide.diff_metric_ci is not None
    assert narrow.diff_metric_ci is not None
    assert wide.diff_metric_ci[0] <= narrow.diff_metric_ci[0] <= narrow.diff_metric_ci[1]
    assert narrow.diff_metric_ci[1] <= wide.diff_metric_ci[1]
    assert c.to_dict()["diff_metric_ci"] == pytest.approx(list(c.diff_metric_ci))


def test_a_binary_metric_reads_the_positive_label() -> None:
    human = ["pass", "pass", "fail", "fail"]
    a, b = ["pass", "fail", "fail", "fail"], ["pass", "pass", "pass", "fail"]
    labels = list(PASS_FAIL.labels)
    # true-positive rate of pass: a finds 1 of 2, b 2 of 2
    c = compare(human, a, b, labels=labels, n_boot=0, metric="tpr")
    assert (c.metric_a, c.metric_b) == (0.5, 1.0)
    # of fail: a finds 2 of 2, b 1 of 2
    f = compare(human, a, b, labels=labels, n_boot=0, metric="tpr", pos_label="fail")
    assert (f.metric_a, f.metric_b) == (1.0, 0.5)
    with pytest.raises(MetricError, match="pos_label 'maybe'"):
        compare(human, a, b, labels=labels, n_boot=0, metric="tpr", pos_label="maybe")
    with pytest.raises(MetricError, match="unknown calibration metric"):
        compare(human, a, b, n_boot=0, metric="nonsense")


def test_without_a_metric_the_comparison_is_as_before() -> None:
    c = compare(HUMAN, A, B, n_boot=0)
    assert c.metric is None
    assert c.diff_metric != c.diff_metric
    assert c.to_dict()["metric"] is None
    assert c.to_dict()["diff_metric"] is None


def test_every_scale_kind_has_exactly_one_default_alt_test_scoring() -> None:
    assert [s.name for s in ALT_TEST_SCORING_DEFS] == list(ALT_TEST_SCORINGS)
    for kind in ("nominal", "ordinal", "binary", "pairwise"):
        defaults = [s.name for s in ALT_TEST_SCORING_DEFS if kind in s.default_for]
        assert defaults == [default_alt_test_scoring(kind)]
    for scale in (LIKERT_5, PASS_FAIL, PAIRWISE):
        assert default_scoring(scale) == default_alt_test_scoring(scale.kind)  # the pages' one
    assert default_alt_test_scoring("ordinal") == "neg_rmse"
    assert alt_test_scoring("accuracy").numeric is False
    with pytest.raises(MetricError, match=r"accuracy \(accuracy \(share equal\)\)"):
        alt_test_scoring("kappa")
    humans = [[1, 1, 1], [1, 1, 0], [0, 0, 0], [0, 1, 1]] * 10
    with pytest.raises(MetricError, match="unknown Alt-Test scoring"):
        alt_test(humans, [1, 1, 0, 1] * 10, scoring="kappa", min_items=10)  # type: ignore[arg-type]
