"""Gwet's AC1 and the chance level of every declared metric."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalcore.metrics import (
    CALIBRATION_METRICS,
    calibrate,
    chance_table,
    cohen_kappa,
    gwet_ac1,
    metric_def,
)


def test_ac1_by_hand_on_a_skewed_binary_criterion() -> None:
    # 20 items: both pass 17, human pass/judge fail 1, human fail/judge pass 1, both fail 1.
    # p_a = 18/20 = 0.9; pi_pass = (18/20 + 18/20) / 2 = 0.9, pi_fail = 0.1
    # p_e = (0.9 * 0.1 + 0.1 * 0.9) / (2 - 1) = 0.18; AC1 = (0.9 - 0.18) / 0.82 = 0.878049
    human = ["pass"] * 17 + ["pass", "fail", "fail"]
    judge = ["pass"] * 17 + ["fail", "pass", "fail"]
    assert gwet_ac1(human, judge) == pytest.approx(0.72 / 0.82)
    # kappa on the same items: p_e = 0.9^2 + 0.1^2 = 0.82, kappa = (0.9 - 0.82) / 0.18 = 0.444
    assert cohen_kappa(human, judge) == pytest.approx(0.08 / 0.18)


def test_ac1_three_labels_and_degenerate() -> None:
    # a: [x, x, y, z], b: [x, y, y, z]: p_a = 3/4; pi_x = (2 + 1)/8, pi_y = 3/8, pi_z = 2/8
    # p_e = (3/8 * 5/8 + 3/8 * 5/8 + 2/8 * 6/8) / 2 = (15 + 15 + 12) / 128 = 42/128 = 0.328125
    # AC1 = (0.75 - 0.328125) / 0.671875 = 0.627907
    assert gwet_ac1(list("xxyz"), list("xyyz")) == pytest.approx(0.421875 / 0.671875)
    assert math.isnan(gwet_ac1(["x", "x"], ["x", "x"]))  # one label: no chance term


def test_ac1_is_in_the_report_with_an_interval() -> None:
    r = calibrate(["a", "a", "b", "b"] * 10, ["a", "b", "b", "b"] * 10, n_boot=200)
    assert r.gwet_ac1 == pytest.approx(gwet_ac1(["a", "a", "b", "b"], ["a", "b", "b", "b"]))
    low, high = r.ci["gwet_ac1"]
    assert low <= r.gwet_ac1 <= high
    assert r.to_dict()["gwet_ac1"] == r.gwet_ac1


def test_chance_levels_by_hand() -> None:
    # human shares p = (0.75, 0.25) over [pass, fail]
    counts = [30, 10]
    # accuracy: 0.75^2 + 0.25^2 = 0.625; balanced accuracy 1/2; weighted F1 = sum p^2 = 0.625
    assert metric_def("accuracy").chance_level(counts) == pytest.approx(0.625)
    assert metric_def("accuracy_balanced").chance_level(counts) == pytest.approx(0.5)
    assert metric_def("f1_score_balanced").chance_level(counts) == pytest.approx(0.625)
    # kappa 0 by construction; TPR = the positive share, TNR = the negative one
    assert metric_def("cohen_kappa").chance_level(counts) == pytest.approx(0.0, abs=1e-12)
    assert metric_def("tpr").chance_level(counts, 0) == pytest.approx(0.75)
    assert metric_def("tnr").chance_level(counts, 0) == pytest.approx(0.25)
    # AC1: p_a = 0.625, p_e = 2 * 0.75 * 0.25 = 0.375 -> (0.625 - 0.375) / 0.625 = 0.4
    assert metric_def("gwet_ac1").chance_level(counts) == pytest.approx(0.4)


def test_every_metric_declares_its_chance_level() -> None:
    counts = np.array([5, 3, 2])
    for m in CALIBRATION_METRICS:
        assert m.chance, f"{m.key} declares no chance text"
        value = m.chance_level(counts)
        assert math.isnan(value) or -1.0 <= value <= 1.0
    assert chance_table([3, 1]).sum() == pytest.approx(4.0)
