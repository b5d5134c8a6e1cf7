"""The human-level rate of unlabelled items: labelled-only, Rogan-Gladen and PPI++ side by side."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalcore.errors import MetricError
from evalcore.metrics import estimate_rate, labelled_rate, ppi_rate


def test_labelled_rate_by_hand() -> None:
    # 3 of 5 pass (one missing dropped): p = 0.6; Wilson with z = 1.959964, z² = 3.841459:
    # centre (0.6 + 3.841459/10) / (1 + 3.841459/5) = 0.984146 / 1.768292 = 0.556552
    # half 1.959964 * sqrt(0.24/5 + 3.841459/100) / 1.768292 = 1.959964 * 0.293967 / 1.768292
    #      = 0.325826 -> [0.230726, 0.882378]
    r = labelled_rate(["pass", "pass", "fail", "pass", "fail", None], positive="pass")
    assert r.rate == pytest.approx(0.6)
    assert r.n_labelled == 5
    assert r.ci == pytest.approx((0.230726, 0.882378), abs=1e-5)
    assert r.interval == "Wilson score"


def test_labelled_rate_never_collapses() -> None:
    # 5 of 5: a Wald interval is [1, 1]; Wilson's lower end is 5 / (5 + z²) = 0.565518
    r = labelled_rate(["pass"] * 5, positive="pass")
    assert r.ci == pytest.approx((5 / (5 + 1.959964**2), 1.0), abs=1e-6)
    zero = labelled_rate(["fail"] * 5, positive="pass")
    assert zero.ci[0] == pytest.approx(0.0, abs=1e-15)
    assert zero.ci[1] == pytest.approx(1.959964**2 / (5 + 1.959964**2), abs=1e-6)  # z² / (n + z²)


def test_plain_ppi_by_hand() -> None:
    # labelled y = [1, 1, 0, 0], f = [1, 0, 0, 0]; unlabelled f~ = [1, 1, 0, 0]
    # theta = mean(f~) + mean(y - f) = 0.5 + 0.25 = 0.75
    # ppi-python's variances divide by n (ddof 0): Var(f~) = 0.25; y - f = [0, 1, 0, 0], Var 0.1875
    # se² = Var(f~)/N + Var(y - f)/n = 0.25/4 + 0.1875/4 = 0.109375, se = 0.330719
    r = ppi_rate([1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0], positive=1, lam=1.0)
    assert r.rate == pytest.approx(0.75)
    assert r.lam == 1.0
    assert r.ci[0] == pytest.approx(0.75 - 1.959964 * math.sqrt(0.109375), abs=1e-6)
    assert r.ci[1] == 1.0  # 0.75 + 0.648 cut to 1


def test_ppi_lam_zero_is_the_labelled_mean() -> None:
    r = ppi_rate([1, 1, 0, 0, 1], [0, 0, 1, 1, 0], [1] * 10, positive=1, lam=0.0)
    assert r.rate == pytest.approx(0.6)  # 3/5, the judge plays no part


def test_tuned_lambda_by_hand() -> None:
    # y = [1]*6 + [0]*4, f = [1]*5 + [0]*5, f~ = 50 ones and 50 zeros (N = 100, n = 10)
    # Cov(y, f) divides by n (ppi-python): (5 * 0.4 * 0.5 + 0.4 * -0.5 + 4 * -0.6 * -0.5) / 10 = 0.2
    # Var(f over all 110, ddof 1) = 55 * 55 / 110 / 109 = 0.252294; lam = 0.2 / (1.1 * 0.252294)
    # = 0.72066; theta = lam * 0.5 + 0.6 - lam * 0.5 = 0.6
    r = ppi_rate([1] * 6 + [0] * 4, [1] * 5 + [0] * 5, [1] * 50 + [0] * 50, positive=1)
    assert r.lam == pytest.approx(0.2 / (1.1 * 55 * 55 / 110 / 109))
    assert r.rate == pytest.approx(0.6)


def test_a_useless_judge_gets_lambda_zero() -> None:
    # the judge's label is independent of the humans' (negative covariance): lam clips to 0
    r = ppi_rate([1, 0, 1, 0], [0, 1, 0, 1], [1, 0] * 10, positive=1)
    assert r.lam == 0.0
    assert r.rate == pytest.approx(0.5)


def test_a_good_judge_beats_the_labelled_interval() -> None:
    rng = np.random.default_rng(0)
    truth = rng.random(5300) < 0.3
    judge = np.where(rng.random(5300) < 0.9, truth, ~truth)
    human = truth[:300].astype(int)
    both = estimate_rate(human, judge[:300].astype(int), judge[300:].astype(int), positive=1)
    assert both.ppi.width < both.labelled.width
    assert both.rogan_gladen is not None
    assert both.ppi.ci[0] <= 0.3 <= both.ppi.ci[1]
    record = both.to_dict()
    assert set(record) == {"positive", "judge_rate", "labelled", "rogan_gladen", "ppi", "notes"}
    assert record["ppi"]["interval"] == "normal (ppi-python)"
    assert [e.method for e in both.estimates()] == ["labelled only", "Rogan-Gladen", "PPI++"]


def test_rogan_gladen_undefined_is_a_note() -> None:
    # TPR 0.5 + TNR 0.5 = 1: the correction is undefined, PPI still answers
    out = estimate_rate([1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 1], positive=1, n_boot=0)
    assert out.rogan_gladen is None
    assert out.notes
    assert "no better than chance" in out.notes[0]


def test_shuffling_rows_changes_nothing() -> None:
    rng = np.random.default_rng(1)
    y, f, g = rng.integers(0, 2, 40), rng.integers(0, 2, 40), rng.integers(0, 2, 200)
    order = rng.permutation(40)
    a = ppi_rate(y, f, g, positive=1)
    b = ppi_rate(y[order], f[order], g[::-1], positive=1)
    assert a.rate == pytest.approx(b.rate)
    assert a.ci == pytest.approx(b.ci)
    words = np.array(["fail", "pass"], dtype=object)
    c = ppi_rate(words[y], words[f], words[g], positive="pass")
    assert c.rate == pytest.approx(a.rate)


def test_bad_input_is_a_metric_error() -> None:
    with pytest.raises(MetricError, match="at least 2"):
        ppi_rate([1], [1], [1, 0], positive=1)
    with pytest.raises(MetricError, match="lam"):
        ppi_rate([1, 0], [1, 0], [1, 0], positive=1, lam=2.0)
    with pytest.raises(MetricError, match="must align"):
        ppi_rate([1, 0, 1], [1, 0], [1, 0], positive=1)
