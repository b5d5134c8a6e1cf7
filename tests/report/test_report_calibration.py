"""Calibration over the store with hand-worked numbers (the tiny world of conftest.py).

Majority labels: q0 1, q1 2, q2 none (ana 3, ben 2), q3 3, q4 1, q5 2, q6 3, q7 none.
v1 says q0..q7 = 1, 3, 2, 3, 3, unparsed, 3, 1; v2 says 1, 2, 3, 2, 1, 2, failed, (no result).
"""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from evalcore.errors import EvalcoreError
from evalcore.report import (
    ALPHA_ROW,
    BASELINE_ROWS,
    BEST_MARK,
    HUMANS_COLUMN,
    REFERENCE_COLUMNS,
    available_policies,
    calibrate_runs,
    cell_items,
    disagreements,
    human_label,
    load_calibration_data,
    policy_name,
)
from tests.report.conftest import Tiny


@pytest.fixture
def data(tiny_sqlite: Tiny):
    t = tiny_sqlite
    return load_calibration_data(t.store, t.dataset_id, t.criterion_id, scores=True)


def test_human_label_by_policy(data) -> None:
    majority = human_label(data, "majority").tolist()
    assert majority[:2] + majority[3:7] == [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]
    assert math.isnan(majority[2])  # 3 vs 2: no majority
    assert math.isnan(majority[7])  # nobody labelled q7
    # q2: positions 2 and 1 (labels 3 and 2); the mean 1.5 rounds half up to position 2, label 3
    assert human_label(data, "mean").tolist()[2] == 3.0
    # median of two: the mean of the two middle positions rounded half up, the same here
    assert human_label(data, "median").tolist()[2] == 3.0
    ben = human_label(data, "annotator:ben")
    assert ben.notna().tolist() == [True] * 4 + [False] * 4
    with pytest.raises(EvalcoreError, match="no annotator named 'zoe'"):
        human_label(data, "annotator:zoe")
    assert available_policies(data.scale, data.annotators) == [
        "majority",
        "median",
        "mean",
        "annotator:ana",
        "annotator:ben",
    ]
    assert policy_name("majority") == "majority vote"


def test_each_run_against_humans_with_coverage(data) -> None:
    calibration = calibrate_runs(data, policy="majority", n_boot=200)
    v1, v2 = calibration.runs
    # humans label q0, q1, q3, q4, q5, q6 (6 items); v1 left q5 unparsed, v2 failed q6
    assert v1.coverage.rows() == {
        "items with a human label": 6,
        "compared": 5,
        "unparsed": 1,
        "failed": 0,
        "no result": 0,
    }
    assert (v2.coverage.n_compared, v2.coverage.n_failed, v2.coverage.n_unparsed) == (5, 1, 0)
    # v1: rows human 1, 2, 3 -> q0 1->1, q4 1->3 | q1 2->3 | q3 3->3, q6 3->3
    assert v1.report.confusion_matrix.tolist() == [[1, 0, 1], [0, 0, 1], [0, 0, 2]]
    # recalls 1/2, 0/1, 2/2 -> (0.5 + 0 + 1) / 3 = 0.5; accuracy 3/5
    assert v1.report.accuracy_balanced == pytest.approx(0.5)
    assert v1.report.accuracy == pytest.approx(0.6)
    # v2: q0 1->1, q4 1->1 | q1 2->2, q5 2->2 | q3 3->2 -> recalls 1, 1, 0 = 2/3; accuracy 4/5
    assert v2.report.confusion_matrix.tolist() == [[2, 0, 0], [0, 2, 0], [0, 1, 0]]
    assert v2.report.accuracy_balanced == pytest.approx(2 / 3)
    assert v2.report.accuracy == pytest.approx(0.8)
    # the unparsed/failed items are dropped (with the unlabelled ones), never counted wrong
    assert v1.report.n == 5
    assert v1.report.n_dropped == 3
    # quadratic kappa on ordinal scales, as sklearn computes it on the compared items
    expected = cohen_kappa_score([1, 2, 3, 1, 3], [1, 3, 3, 3, 3], weights="quadratic")
    assert v1.report.cohen_kappa_quadratic == pytest.approx(expected)
    assert "accuracy_balanced" in v1.report.ci


def test_difference_from_the_baseline_is_paired(data) -> None:
    calibration = calibrate_runs(data, policy="majority", n_boot=200)
    assert calibration.baseline == calibration.runs[0].info.id  # the first run by default
    v1, v2 = calibration.runs
    assert v1.comparison is None
    c = v2.comparison
    # both runs and the humans labelled q0, q1, q3, q4 only
    assert c.n == 4
    # v1 right on q0, q3; v2 right on q0, q1, q4 -> v1-only: q3 (1); v2-only: q1, q4 (2)
    assert (c.a_right_b_wrong, c.a_wrong_b_right) == (1, 2)
    # McNemar: 2 * P(X <= 1 | n=3, 1/2) = 2 * 4/8 = 1.0
    assert c.mcnemar_p == pytest.approx(1.0)
    # on those 4 items: v1 recalls 1/2, 0, 1 -> 0.5; v2 recalls 1, 1, 0 -> 2/3; difference 1/6
    assert c.diff_balanced_accuracy == pytest.approx(1 / 6)
    assert c.diff_balanced_accuracy_ci is not None


def test_side_by_side_table_marks_the_best_and_shows_differences(data) -> None:
    calibration = calibrate_runs(data, policy="majority", n_boot=200)
    table = calibration.table()
    text = table.text
    assert list(text.columns) == ["v1", "v2", *REFERENCE_COLUMNS]
    assert text.loc["balanced accuracy", "v2"].endswith(BEST_MARK)
    assert not text.loc["balanced accuracy", "v1"].endswith(BEST_MARK)
    assert text.loc["balanced accuracy", "v1"].startswith("0.500 [")
    assert text.loc["compared", "v1"] == "5"
    assert text.loc["unparsed", "v1"] == "1"
    assert text.loc["failed", "v2"] == "1"
    assert text.loc[BASELINE_ROWS[0], "v1"] == "baseline"
    assert text.loc[BASELINE_ROWS[0], "v2"].startswith("+0.167 [")
    assert text.loc[BASELINE_ROWS[3], "v2"] == "1 (n=4)"
    assert "n dropped" not in text.index  # coverage says it better
    assert table.values.loc["balanced accuracy", "v2"] == pytest.approx(2 / 3)
    # the humans' column is the reference: their kappa beside the judges', their alpha below it
    assert text.loc["Cohen's kappa (quadratic)", HUMANS_COLUMN].endswith("(mean pairwise)")
    assert table.values.loc[ALPHA_ROW, HUMANS_COLUMN] == pytest.approx(
        calibration.ceiling.krippendorff_alpha
    )
    assert not table.best[HUMANS_COLUMN].any()
    plain = calibration.table(ceiling=False, references=False)
    assert list(plain.text.columns) == ["v1", "v2"]


def test_another_baseline_flips_the_differences(data) -> None:
    ids = [r.info.id for r in data.runs]
    calibration = calibrate_runs(data, baseline=ids[1], n_boot=0)
    assert calibration.run(ids[0]).comparison.diff_balanced_accuracy == pytest.approx(-1 / 6)
    assert calibration.table().text.loc[BASELINE_ROWS[0], "v2"] == "baseline"
    with pytest.raises(EvalcoreError, match="baseline run 999"):
        calibrate_runs(data, baseline=999)


def test_the_policy_changes_the_items_compared(data) -> None:
    # with the mean, q2 gets a label (3): v1 said 2 (wrong), v2 said 3 (right)
    mean = calibrate_runs(data, policy="mean", n_boot=0)
    v1, v2 = mean.runs
    assert v1.coverage.n_human == 7
    assert v1.report.n == 6
    assert v2.report.confusion_matrix.tolist() == [[2, 0, 0], [0, 2, 0], [0, 1, 1]]


def test_human_ceiling_matches_krippendorff_and_sklearn(data) -> None:
    calibration = calibrate_runs(data, n_boot=200)
    ceiling = calibration.ceiling
    # q0..q3 have two ratings: ana 1, 2, 3, 3 and ben 1, 2, 2, 3
    ana, ben = [1, 2, 3, 3], [1, 2, 2, 3]
    assert ceiling.n_items == 4
    expected_alpha = krippendorff.alpha(
        reliability_data=np.array([ana, ben], dtype=float), level_of_measurement="ordinal"
    )
    assert ceiling.krippendorff_alpha == pytest.approx(expected_alpha)
    kappa = cohen_kappa_score(ana, ben, weights="quadratic")
    assert ceiling.mean_pairwise_kappa == pytest.approx(kappa)
    assert calibrate_runs(data, ceiling=False, n_boot=0).ceiling is None


def test_a_slice_mask_restricts_everything(data) -> None:
    # topic b = q4..q7: humans 1, 2, 3, none; v1 3, unparsed, 3, 1; v2 1, 2, failed, missing
    mask = (data.items["position"] >= 4).to_numpy()
    calibration = calibrate_runs(data, mask=mask, n_boot=0)
    v1, v2 = calibration.runs
    # v1: q4 1->3 wrong, q6 3->3 right: recalls 0 (class 1), 1 (class 3) -> 0.5
    assert v1.report.accuracy_balanced == pytest.approx(0.5)
    # v2: q4 1->1, q5 2->2 -> 1.0
    assert v2.report.accuracy_balanced == pytest.approx(1.0)
    assert v2.coverage.n_items == 4
    with pytest.raises(EvalcoreError, match="mask has 3 values"):
        calibrate_runs(data, mask=np.ones(3, dtype=bool))


def test_cell_items_list_the_items_of_a_confusion_cell(data) -> None:
    calibration = calibrate_runs(data, n_boot=0)
    v1 = calibration.runs[0].info.id
    cell = cell_items(calibration, v1, "1", "3")
    assert cell["item_id"].tolist() == ["q4"]
    assert cell["score"].tolist() == [pytest.approx(2.6)]
    assert cell_items(calibration, v1, 3, 3)["item_id"].tolist() == ["q3", "q6"]
    # every cell of the matrix lists exactly as many items as it counts
    for i, h in enumerate(calibration.labels):
        for j, jl in enumerate(calibration.labels):
            n = calibration.runs[0].report.confusion_matrix[i, j]
            assert len(cell_items(calibration, v1, h, jl)) == n
    with pytest.raises(EvalcoreError, match="not a label"):
        cell_items(calibration, v1, "7", "1")


def test_disagreements_sorted_by_distance_and_filtered(data) -> None:
    calibration = calibrate_runs(data, n_boot=0)
    v1, v2 = (r.info.id for r in calibration.runs)
    table = disagreements(calibration)
    # q4: v1 says 3 for a 1 (distance 2); q1 and q3 are one step off; q0/q5/q6 nobody is wrong
    assert table["item_id"].tolist() == ["q4", "q1", "q3"]
    assert table["distance"].tolist() == [2, 1, 1]
    assert table["wrong"].tolist() == [1, 1, 1]
    assert table.loc[table.index[0], "v1"] == "3"
    everything = disagreements(calibration, include_agreements=True)
    assert everything.set_index("item_id").loc["q5", "v1"] == "unparsed"
    assert everything.set_index("item_id").loc["q6", "v2"] == "failed"
    # "v2 wrong, v1 right" and the other way round
    assert disagreements(calibration, wrong=v2, right=v1)["item_id"].tolist() == ["q3"]
    assert disagreements(calibration, wrong=v1, right=v2)["item_id"].tolist() == ["q4", "q1"]
    with pytest.raises(EvalcoreError, match="not part of the calibration"):
        disagreements(calibration, wrong=999)


def test_to_frame_exports_every_metric_with_intervals(data) -> None:
    calibration = calibrate_runs(data, n_boot=100)
    frame = calibration.to_frame()
    v1 = frame[(frame["run"] == "v1") & (frame["metric"] == "accuracy_balanced")].iloc[0]
    assert v1["value"] == pytest.approx(0.5)
    assert v1["ci_low"] <= v1["value"] <= v1["ci_high"]
    assert v1["human_policy"] == "majority"
    assert v1["n_unparsed"] == 1
    diff = frame[(frame["run"] == "v2") & (frame["metric"] == "diff_accuracy_balanced")]
    assert diff["value"].iloc[0] == pytest.approx(1 / 6)
    assert "human_krippendorff_alpha" in set(frame["metric"])
    # the baselines are exported too: the majority labels are 1, 2, 3, 1, 2, 3 (two each), so the
    # constant judge (label 1) is right on 2 of 6 and each share is 1/3
    constant = frame[(frame["run"] == "(constant judge)") & (frame["metric"] == "accuracy")]
    assert constant["value"].iloc[0] == pytest.approx(1 / 3)
    share = frame[(frame["run"] == "(humans)") & (frame["metric"] == "share_2")]
    assert share["value"].iloc[0] == pytest.approx(1 / 3)


def test_best_run_is_the_highest_balanced_accuracy(data) -> None:
    calibration = calibrate_runs(data, n_boot=0)
    assert calibration.best().title == "v2"
