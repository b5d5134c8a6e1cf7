"""calibrate(), CalibrationReport and the count-table bootstrap."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from evalcore.errors import MetricError
from evalcore.labels import LIKERT_5, PASS_FAIL
from evalcore.metrics import (
    TABLE_METRICS,
    CalibrationReport,
    balanced_accuracy,
    bootstrap_ci,
    calibrate,
    confusion_matrix,
    resample_table,
    table_metric,
)

HUMAN = [1, 1, 1, 2, 2, 3, None]
JUDGE = [1, 1, 2, 2, 3, 3, 3]


def test_report_fields_hand_worked() -> None:
    r = calibrate(HUMAN, JUDGE, kind="ordinal", metric="fluency", n_boot=0)
    assert (r.metric, r.kind, r.n, r.n_dropped) == ("fluency", "ordinal", 6, 1)
    assert r.labels == (1.0, 2.0, 3.0)
    assert r.confusion_matrix.tolist() == [[2, 1, 0], [0, 1, 1], [0, 0, 1]]
    assert r.accuracy_balanced == pytest.approx(13 / 18)  # (2/3 + 1/2 + 1) / 3
    assert r.f1_score_balanced == pytest.approx(61 / 90)  # (3*4/5 + 2*1/2 + 1*2/3) / 6
    assert r.accuracy == pytest.approx(4 / 6)
    assert r.cohen_kappa == pytest.approx(0.5)  # (2/3 - 1/3) / (1 - 1/3)
    # linear: observed 2/6; expected = sum r_i c_j |i-j| with r = (3,2,1)/6, c = (2,2,2)/6:
    #   (3*(0+2+4) + 2*(2+0+2) + 1*(4+2+0)) / 36 = 32/36 -> 1 - (1/3)/(8/9) = 5/8
    assert r.cohen_kappa_linear == pytest.approx(5 / 8)
    assert r.spearman is not None
    assert r.kendall_tau is not None
    assert [c.support for c in r.per_class] == [3, 2, 1]
    # without resamples only the intervals that need none: Wilson and the analytic ones
    assert set(r.ci) == {"accuracy", *r.se}
    assert r.ci_methods["accuracy"] == "Wilson score"
    assert set(r.se) == {
        "cohen_kappa",
        "gwet_ac1",
        "cohen_kappa_linear",
        "cohen_kappa_quadratic",
        "gwet_ac2_linear",
        "gwet_ac2_quadratic",
    }
    assert (r.positive, r.tpr, r.tnr) == (None, None, None)


def test_nominal_report_leaves_order_based_metrics_out() -> None:
    r = calibrate(HUMAN, JUDGE, n_boot=30)
    assert r.cohen_kappa_linear is None
    assert r.spearman is None
    assert r.kendall_tau is None
    assert set(r.ci) == {
        "accuracy_balanced",
        "f1_score_balanced",
        "accuracy",
        "cohen_kappa",
        "gwet_ac1",
    }


def test_ordinal_report_has_intervals_for_every_metric() -> None:
    r = calibrate(HUMAN, JUDGE, kind="ordinal", n_boot=30)
    assert set(r.ci) == set(TABLE_METRICS)
    for low, high in r.ci.values():
        assert low <= high or (math.isnan(low) and math.isnan(high))


def test_binary_report_rates() -> None:
    human = ["pass", "pass", "pass", "fail", "fail"]
    judge = ["pass", "fail", "pass", "pass", "fail"]
    r = calibrate(human, judge, kind="binary", labels=PASS_FAIL.labels, n_boot=50)
    # positive = labels[0] = "pass": TPR = 2/3, TNR = 1/2
    assert r.positive == "pass"
    assert (r.tpr, r.tnr) == pytest.approx((2 / 3, 1 / 2))
    assert "tpr" in r.ci
    assert "tnr" in r.ci
    other = calibrate(human, judge, kind="binary", positive="fail", n_boot=0)
    assert (other.tpr, other.tnr) == pytest.approx((1 / 2, 2 / 3))


def test_binary_needs_two_labels_and_a_known_positive() -> None:
    with pytest.raises(MetricError, match="exactly two labels"):
        calibrate([1, 2, 3], [1, 2, 3], kind="binary", n_boot=0)
    with pytest.raises(MetricError, match="not one of the labels"):
        calibrate([1, 2], [1, 2], kind="binary", positive=5, n_boot=0)
    with pytest.raises(MetricError, match="kind='binary' only"):
        calibrate([1, 2], [1, 2], positive=1, n_boot=0)


def test_to_dict_uses_vertex_names_and_is_json_ready() -> None:
    r = calibrate([4, 5, 5, "error"], [4.0, "5", 4, 5], labels=LIKERT_5.labels, n_boot=20)
    d = r.to_dict()
    for key in (
        "accuracy_balanced",
        "f1_score_balanced",
        "confusion_matrix",
        "confusion_matrix_labels",
    ):
        assert key in d
    # Vertex reports the labels observed on either side only; the declared axis is kept apart
    assert d["confusion_matrix_labels"] == ["4", "5"]
    assert d["confusion_matrix"] == [[1, 0], [1, 1]]
    assert d["axis_labels"] == ["1", "2", "3", "4", "5"]
    assert (d["n"], d["n_dropped"]) == (3, 1)
    assert all(isinstance(v, list) and len(v) == 2 for v in d["ci"].values())
    text = json.dumps(d, allow_nan=False)  # no NaN leaks into the JSON
    assert json.loads(text) == d


def test_to_dict_turns_nan_into_none() -> None:
    d = calibrate([1, 1], [1, 1], kind="ordinal", n_boot=10).to_dict()
    assert d["cohen_kappa"] is None
    assert d["spearman"] is None
    assert d["ci"]["spearman"] == [None, None]


def test_from_counts_equals_calibrate() -> None:
    direct = calibrate(HUMAN, JUDGE, kind="ordinal", n_boot=100, seed=4)
    table = confusion_matrix(HUMAN, JUDGE)
    rebuilt = CalibrationReport.from_counts(
        table, labels=[1, 2, 3], kind="ordinal", n_dropped=1, n_boot=100, seed=4
    )
    assert rebuilt.to_dict() == direct.to_dict()


@pytest.mark.parametrize(
    ("table", "labels", "message"),
    [
        ([[1, 2, 3]], [1], "square"),
        ([[1, -1], [0, 1]], [1, 2], "negative"),
        ([[1.5, 0], [0, 1]], [1, 2], "whole numbers"),
        ([[1, 0], [0, 1]], [1, 2, 3], "does not match"),
        ([[0, 0], [0, 0]], [1, 2], "no comparable rows"),
    ],
)
def test_from_counts_validates(table: list[list[float]], labels: list[int], message: str) -> None:
    with pytest.raises(MetricError, match=message):
        CalibrationReport.from_counts(table, labels=labels, n_boot=0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_boot": -1}, "n_boot"),
        ({"n_boot": 2.5}, "n_boot"),
        ({"confidence": 1.0}, "confidence"),
        ({"seed": "x"}, "seed"),
        ({"kind": "fuzzy"}, "kind"),
    ],
)
def test_calibrate_validates_options(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(MetricError, match=message):
        calibrate([1, 2], [1, 2], **kwargs)  # type: ignore[arg-type]


def test_report_pickles_for_caching() -> None:
    import pickle

    r = calibrate(HUMAN, JUDGE, kind="ordinal", n_boot=20)
    assert pickle.loads(pickle.dumps(r)).to_dict() == r.to_dict()


def test_report_is_frozen() -> None:
    r = calibrate([1, 2], [1, 2], n_boot=0)
    with pytest.raises(AttributeError):
        r.n = 5  # type: ignore[misc]
    with pytest.raises(ValueError, match="read-only"):
        r.confusion_matrix[0, 0] = 9


# --- bootstrap ------------------------------------------------------------------------------------


def test_resample_table_keeps_the_total_and_the_support() -> None:
    table = np.array([[30, 5], [0, 15]])
    draws = resample_table(table, n_boot=200, seed=1)
    assert draws.shape == (200, 2, 2)
    assert (draws.sum(axis=(1, 2)) == 50).all()
    assert (draws[:, 1, 0] == 0).all()  # an empty cell stays empty
    # the mean resample is close to the table itself
    assert np.allclose(draws.mean(axis=0), table, atol=2.5)


def test_resample_table_is_seeded() -> None:
    table = [[3, 1], [2, 4]]
    assert np.array_equal(resample_table(table, seed=5), resample_table(table, seed=5))
    assert not np.array_equal(resample_table(table, seed=5), resample_table(table, seed=6))


def test_multinomial_resampling_matches_row_resampling_in_distribution() -> None:
    # balanced accuracy over resampled tables vs over resampled rows: same mean and spread
    rng = np.random.default_rng(0)
    human = rng.integers(1, 4, 400)
    judge = np.where(rng.random(400) < 0.7, human, rng.integers(1, 4, 400))
    by_table = table_metric(
        resample_table(confusion_matrix(human, judge), n_boot=3000, seed=1), "accuracy_balanced"
    )
    by_rows = []
    for _ in range(600):
        idx = rng.integers(0, 400, 400)
        by_rows.append(balanced_accuracy(human[idx], judge[idx]))
    assert abs(by_table.mean() - np.mean(by_rows)) < 0.005
    assert abs(by_table.std() - np.std(by_rows)) < 0.005


def test_table_metric_on_a_stack_returns_one_value_per_table() -> None:
    stack = np.array([[[2, 0], [0, 2]], [[1, 1], [1, 1]]])
    assert table_metric(stack, "accuracy").tolist() == [1.0, 0.5]  # 4/4 and 2/4
    with pytest.raises(MetricError, match="unknown table metric"):
        table_metric(stack, "auc")  # type: ignore[arg-type]


def test_bootstrap_ci_hand_checked_bounds() -> None:
    low, high = bootstrap_ci([1] * 50 + [2] * 50, [1] * 45 + [2] * 55, metric="accuracy", seed=2)
    # accuracy = 95/100; a 95% interval of a binomial share with n = 100 is about +-0.045
    assert 0.88 < low < 0.95 < high <= 1.0


def test_bootstrap_ci_nan_aware() -> None:
    # spearman is undefined in resamples where one side is constant; those are left out
    low, high = bootstrap_ci([1, 1, 1, 2], [1, 1, 2, 2], metric="spearman", n_boot=200)
    assert not math.isnan(low)
    assert low <= high
    # always undefined -> (nan, nan)
    low, high = bootstrap_ci([1, 1], [1, 1], metric="spearman", n_boot=20)
    assert math.isnan(low)
    assert math.isnan(high)


def test_more_rows_give_narrower_intervals() -> None:
    # the same proportions with 1000 times the rows
    small = bootstrap_ci([1, 2, 2, 1], [1, 2, 1, 1], metric="accuracy", n_boot=10)
    big = bootstrap_ci([1, 2, 2, 1] * 1000, [1, 2, 1, 1] * 1000, metric="accuracy", n_boot=10)
    assert big[1] - big[0] < small[1] - small[0]  # more rows, narrower interval


def test_every_declared_metric_is_a_report_field_and_iterated_by_to_dict() -> None:
    from evalcore.metrics import CALIBRATION_METRICS, metrics_for

    # 1..3 ordinal; humans 1,1,2,3 judge 1,2,2,3: every ordinal metric is defined
    r = calibrate([1, 1, 2, 3], [1, 2, 2, 3], labels=[1, 2, 3], kind="ordinal", n_boot=10)
    d = r.to_dict()
    for m in CALIBRATION_METRICS:
        assert m.key in d
        assert hasattr(r, m.key)
        if m.applies_to("ordinal"):
            assert getattr(r, m.key) is not None
            assert m.key in r.ci
        else:
            assert getattr(r, m.key) is None
    assert [m.key for m in metrics_for("ordinal")] == list(r.ci)
    # shown rows: ordinal tables show the quadratic kappa, not the unweighted one
    shown = [m.key for m in metrics_for("ordinal", shown=True)]
    assert "cohen_kappa_quadratic" in shown
    assert "cohen_kappa" not in shown


def test_a_declared_label_nobody_used_moves_quadratic_kappa_only() -> None:
    # humans 1,2,4,4 and judge 1,4,4,2 on the observed axis (1, 2, 4) and the declared (1, 2, 3, 4)
    human, judge = [1, 2, 4, 4], [1, 4, 4, 2]
    tight = calibrate(human, judge, labels=[1, 2, 4], kind="ordinal", n_boot=0)
    wide = calibrate(human, judge, labels=[1, 2, 3, 4], kind="ordinal", n_boot=0)
    assert wide.accuracy_balanced == tight.accuracy_balanced == 0.5  # (1/1 + 0/1 + 1/2) / 3
    assert wide.cohen_kappa == pytest.approx(tight.cohen_kappa)
    # expected weights w = gap**2: 2 and 4 are 1 step apart on (1, 2, 4) but 2 steps on (1, 2, 3, 4),
    # while 1 and 4 are 2 and 3 steps: the ratio observed/expected differs
    assert wide.cohen_kappa_quadratic != pytest.approx(tight.cohen_kappa_quadratic)
    assert (
        wide.observed() == tight.observed() == (["1", "2", "4"], [[1, 0, 0], [0, 0, 1], [0, 1, 1]])
    )
