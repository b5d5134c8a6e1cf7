"""Every statistic against its reference package, to 1e-9, on a table of fixed, seeded random and
real-data cases (SummEval and PandaLM when the shared datasets are there).

References (the test extra; irrCAC is installed without its dependency pins, see pyproject.toml):
scikit-learn (kappas), scipy (rank correlations, Student's t), statsmodels (Fleiss' kappa, McNemar,
Wilson), irrCAC (Gwet's AC1/AC2, Fleiss' kappa with missing ratings, Krippendorff's alpha and every
analytic standard error), krippendorff (alpha at every level), ppi-python (PPI++), judgy
(Rogan-Gladen). A missing reference is an error, not a skip: CI installs them.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalcore.metrics as m
from evalcore.metrics._student import t_quantile
from evalcore.metrics._table import ac_se_table, kappa_se_table

irr_raw = pytest.importorskip("irrCAC.raw", reason="irrCAC is a test dependency; CI installs it")
irr_table = pytest.importorskip("irrCAC.table")
krippendorff = pytest.importorskip("krippendorff")
ppi_py = pytest.importorskip("ppi_py")
judgy = pytest.importorskip("judgy")
sm_ir = pytest.importorskip("statsmodels.stats.inter_rater")
sm_ct = pytest.importorskip("statsmodels.stats.contingency_tables")
sm_prop = pytest.importorskip("statsmodels.stats.proportion")
sklearn_metrics = pytest.importorskip("sklearn.metrics")
scipy_stats = pytest.importorskip("scipy.stats")

TOL = 1e-9
SHARED = Path(__file__).resolve().parents[3] / "shared" / "datasets"


def _pairs() -> list[tuple[str, np.ndarray, np.ndarray, list[float]]]:
    """(name, human, judge, axis) cases: fixed edge cases and seeded random ones."""
    cases = [
        ("fixed small", np.array([1, 2, 3, 3, 2, 1, 4]), np.array([1, 2, 2, 3, 3, 1, 4]), [1, 2, 3, 4]),
        ("unused scale labels", np.array([1, 2, 4, 5, 5]), np.array([1, 2, 5, 4, 5]), [1, 2, 3, 4, 5]),
        ("binary skewed", np.array([1] * 18 + [0] * 2), np.array([1] * 17 + [0] * 3), [0, 1]),
    ]  # fmt: skip
    rng = np.random.default_rng(21)
    for i, (n, k) in enumerate(((40, 5), (200, 3), (1000, 5), (35, 2))):
        h = rng.integers(1, k + 1, n)
        j = np.where(rng.random(n) < 0.6, h, rng.integers(1, k + 1, n))
        cases.append((f"random {i}", h, j, list(range(1, k + 1))))
    return [(name, h, j, [float(x) for x in axis]) for name, h, j, axis in cases]


def _table(h: np.ndarray, j: np.ndarray, axis: list[float]) -> np.ndarray:
    return np.asarray(m.confusion_matrix(h, j, labels=axis))


PAIRS = _pairs()


@pytest.mark.parametrize(("name", "h", "j", "axis"), PAIRS, ids=[p[0] for p in PAIRS])
def test_two_rater_statistics_match_their_references(name, h, j, axis) -> None:
    table = _table(h, j, axis)
    frame = pd.DataFrame(table)
    for weights in (None, "linear", "quadratic"):
        # value: scikit-learn; standard error: irrCAC (Fleiss-Cohen-Everitt)
        ours = m.cohen_kappa(h, j, labels=axis, weights=weights)
        assert ours == pytest.approx(
            sklearn_metrics.cohen_kappa_score(h, j, labels=axis, weights=weights), abs=TOL
        )
        irr = irr_table.CAC(frame, weights=weights or "identity", digits=30)
        cohen, gwet = irr.cohen()["est"], irr.gwet()["est"]
        assert kappa_se_table(table, weights) == pytest.approx(cohen["se"], abs=TOL)
        assert ac_se_table(table, weights) == pytest.approx(gwet["se"], abs=TOL)
        report = m.calibrate(h, j, labels=axis, kind="ordinal", n_boot=0)
        key = "gwet_ac1" if weights is None else f"gwet_ac2_{weights}"
        assert getattr(report, key) == pytest.approx(gwet["coefficient_value"], abs=TOL)
        kappa_key = "cohen_kappa" if weights is None else f"cohen_kappa_{weights}"
        low, high = cohen["confidence_interval"]
        assert report.ci[kappa_key][0] == pytest.approx(low, abs=TOL)
        assert report.ci[kappa_key][1] == pytest.approx(min(high, 1.0), abs=TOL)
    assert m.spearman(h, j) == pytest.approx(scipy_stats.spearmanr(h, j).statistic, abs=TOL)
    assert m.kendall_tau_b(h, j) == pytest.approx(scipy_stats.kendalltau(h, j).statistic, abs=TOL)
    # accuracy's Wilson interval: statsmodels
    report = m.calibrate(h, j, labels=axis, n_boot=0)
    wilson = sm_prop.proportion_confint(int(np.trace(table)), int(table.sum()), method="wilson")
    assert report.ci["accuracy"] == pytest.approx(wilson, abs=TOL)


def test_student_t_quantile_matches_scipy() -> None:
    for df in (*range(1, 60), 299, 300, 301, 1000, 10**6):
        for p in (0.9, 0.95, 0.975, 0.995):
            assert t_quantile(p, df) == pytest.approx(scipy_stats.t.ppf(p, df), rel=1e-10)


def _rating_tables() -> list[tuple[str, np.ndarray, list[float]]]:
    rng = np.random.default_rng(7)
    out = []
    for i, (n, r, k, missing) in enumerate(((30, 3, 5, 0.0), (60, 4, 5, 0.2), (25, 5, 3, 0.3))):
        base = rng.integers(1, k + 1, n)
        d = np.where(rng.random((n, r)) < 0.6, base[:, None], rng.integers(1, k + 1, (n, r)))
        d = d.astype(float)
        d[rng.random((n, r)) < missing] = np.nan
        out.append((f"random {i}", d, [float(x) for x in range(1, k + 1)]))
    out.append(("gwet's 4 raters", irr_raw_example(), [1.0, 2.0, 3.0, 4.0, 5.0]))
    return out


def irr_raw_example() -> np.ndarray:
    from irrCAC.datasets import raw_4raters

    return raw_4raters().to_numpy(dtype=float)


RATINGS = _rating_tables()


@pytest.mark.parametrize(("name", "d", "axis"), RATINGS, ids=[r[0] for r in RATINGS])
def test_many_rater_coefficients_match_irrcac_and_krippendorff(name, d, axis) -> None:
    frame = pd.DataFrame(d)
    for coefficient, weights, method in (
        ("fleiss_kappa", None, "fleiss"),
        ("gwet_ac", None, "gwet"),
        ("gwet_ac", "linear", "gwet"),
        ("gwet_ac", "quadratic", "gwet"),
    ):
        ours = m.rater_agreement(d, coefficient=coefficient, weights=weights, labels=axis, n_boot=0)
        ref = getattr(
            irr_raw.CAC(frame, weights=weights or "identity", categories=axis, digits=30), method
        )()["est"]
        assert ours.value == pytest.approx(ref["coefficient_value"], abs=TOL)
        assert ours.se == pytest.approx(ref["se"], abs=TOL)
        assert ours.ci[0] == pytest.approx(ref["confidence_interval"][0], abs=TOL)
        assert ours.ci[1] == pytest.approx(ref["confidence_interval"][1], abs=TOL)
    for level, weights in (("nominal", "identity"), ("interval", "quadratic"), ("ordinal", None)):
        ours = m.rater_agreement(
            d, coefficient="krippendorff_alpha", level=level, labels=axis, n_boot=0
        )
        expected = krippendorff.alpha(d.T, level_of_measurement=level, value_domain=np.array(axis))
        assert ours.value == pytest.approx(expected, abs=TOL)
        if weights is None:
            assert ours.se is None
            assert ours.ci is None
            continue
        ref = irr_raw.CAC(frame, weights=weights, categories=axis, digits=30).krippendorff()["est"]
        assert ours.se == pytest.approx(ref["se"], abs=TOL)
    if not np.isnan(d).any():  # statsmodels' Fleiss needs every rater on every item
        counts, _ = sm_ir.aggregate_raters(d.astype(int), n_cat=None)
        assert m.fleiss_kappa(d, labels=axis) == pytest.approx(sm_ir.fleiss_kappa(counts), abs=TOL)


def _rate_cases() -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(3)
    out = [
        ("all agree", np.ones(5), np.ones(5), np.array([1.0, 0.0, 1.0, 1.0])),
        ("tiny", np.array([1.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0]), rng.integers(0, 2, 50) * 1.0),
    ]  # fmt: skip
    for i, (n, big_n) in enumerate(((30, 1000), (300, 5000), (12, 40))):
        y = (rng.random(n) < 0.3).astype(float)
        f = np.where(rng.random(n) < 0.85, y, 1 - y)
        g = (rng.random(big_n) < 0.32).astype(float)
        out.append((f"random {i}", y, f, g))
    return out


RATES = _rate_cases()


@pytest.mark.parametrize(("name", "y", "f", "g"), RATES, ids=[r[0] for r in RATES])
def test_ppi_matches_ppi_python(name, y, f, g) -> None:
    ours = m.ppi_mean(y, f, g, confidence=0.9)
    low, high = ppi_py.ppi_mean_ci(y, f, g, alpha=0.1)
    est = ppi_py.ppi_mean_pointestimate(y, f, g)
    assert ours.rate == pytest.approx(float(np.squeeze(est)), abs=TOL)
    assert ours.ci[0] == pytest.approx(float(np.squeeze(low)), abs=TOL)
    assert ours.ci[1] == pytest.approx(float(np.squeeze(high)), abs=TOL)
    # the rate: the same numbers cut to [0, 1], Wilson of the labelled beside a point
    rate = m.ppi_rate(y, f, g, positive=1.0, confidence=0.9)
    assert rate.ci[0] == pytest.approx(max(0.0, float(np.squeeze(low))), abs=TOL)
    assert rate.ci[1] == pytest.approx(min(1.0, float(np.squeeze(high))), abs=TOL)
    if rate.degenerate:
        assert rate.fallback_ci is not None
        assert rate.fallback_ci == pytest.approx(
            sm_prop.proportion_confint(int(y.sum()), len(y), alpha=0.1, method="wilson"), abs=TOL
        )
    labelled = m.labelled_rate(y, positive=1.0)
    assert labelled.ci == pytest.approx(
        sm_prop.proportion_confint(int(y.sum()), len(y), method="wilson"), abs=TOL
    )


def test_ppi_of_an_ordinal_mean_matches_ppi_python() -> None:
    rng = np.random.default_rng(5)
    y = rng.integers(1, 6, 80).astype(float)
    f = np.clip(y + rng.integers(-1, 2, 80), 1, 5)
    g = rng.integers(1, 6, 2000).astype(float)
    ours = m.estimate_scores(y, f, g, labels=[1, 2, 3, 4, 5])
    low, high = ppi_py.ppi_mean_ci(y, f, g, alpha=0.05)
    assert ours.mean is not None
    assert ours.mean[1].rate == pytest.approx(
        float(ppi_py.ppi_mean_pointestimate(y, f, g)[0]), abs=TOL
    )
    assert ours.mean[1].ci == pytest.approx((float(low[0]), float(high[0])), abs=TOL)
    classical = ppi_py.classical_mean_ci(y, alpha=0.05)
    assert ours.mean[0].ci == pytest.approx((float(classical[0]), float(classical[1])), abs=TOL)
    for code, (_, ppi) in enumerate(ours.shares, start=1):
        yc, fc, gc = (y == code) * 1.0, (f == code) * 1.0, (g == code) * 1.0
        low, high = ppi_py.ppi_mean_ci(yc, fc, gc, alpha=0.05)
        assert ppi.ci[0] == pytest.approx(max(0.0, float(low[0])), abs=TOL)
        assert ppi.ci[1] == pytest.approx(min(1.0, float(high[0])), abs=TOL)


def test_rogan_gladen_matches_judgy() -> None:
    rng = np.random.default_rng(11)
    truth = (rng.random(200) < 0.4).astype(int)
    pred = np.where(rng.random(200) < 0.85, truth, 1 - truth)
    unlabelled = (rng.random(3000) < 0.45).astype(int)
    theta, _, _ = judgy.estimate_success_rate(truth, pred, unlabelled, bootstrap_iterations=10)
    ours = m.corrected_pass_rate(unlabelled, truth, pred, positive=1, n_boot=0)
    assert ours.theta == pytest.approx(theta, abs=TOL)


@pytest.mark.parametrize(("b", "c"), [(0, 5), (3, 9), (12, 12), (1, 0), (40, 61)])
def test_mcnemar_matches_statsmodels(b: int, c: int) -> None:
    exact = sm_ct.mcnemar(np.array([[10, b], [c, 7]]), exact=True).pvalue
    assert m.mcnemar_exact_p(b, c) == pytest.approx(exact, abs=TOL)
    # mid-p: 2 * (P(X <= m) - P(X = m) / 2), X ~ Binomial(b + c, 1/2), m = min(b, c), at most 1
    m_, d = min(b, c), b + c
    tail = scipy_stats.binom.cdf(m_, d, 0.5) - scipy_stats.binom.pmf(m_, d, 0.5) / 2
    mid = min(1.0, 2 * tail) if d else 1.0
    assert m.mcnemar_midp(b, c) == pytest.approx(mid, abs=TOL)


def test_newcombe_paired_interval_by_hand() -> None:
    # both right 12, only the first 9, only the second 2, both wrong 21 (n = 44): p1 = 21/44,
    # p2 = 14/44, Wilson [0.3357, 0.6211] and [0.1994, 0.4650]; phi = (12*21 - 9*2) / sqrt(21*23*14*30)
    # = 234 / 450.4 = 0.5195; low = 0.1591 - sqrt(0.1416² - 2*0.5195*0.1416*0.1468 + 0.1468²)
    low, high = m.paired_difference_interval(12, 9, 2, 21)
    p1, p2 = 21 / 44, 14 / 44
    l1, u1 = sm_prop.proportion_confint(21, 44, method="wilson")
    l2, u2 = sm_prop.proportion_confint(14, 44, method="wilson")
    phi = (12 * 21 - 9 * 2) / math.sqrt(21 * 23 * 14 * 30)
    delta = math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    eps = math.sqrt((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2)
    assert (low, high) == pytest.approx((p1 - p2 - delta, p1 - p2 + eps), abs=TOL)
    assert low < 7 / 44 < high
    assert (
        m.paired_difference_interval(5, 0, 0, 0)[0]
        < 0
        < m.paired_difference_interval(5, 0, 0, 0)[1]
    )


@pytest.mark.shared_data
@pytest.mark.parametrize("criterion", ["coherence", "consistency", "fluency", "relevance"])
def test_summeval_matches_references(shared_datasets: Path, criterion: str) -> None:
    frame = pd.read_csv(shared_datasets / "summeval_llm_judges" / "summeval_llm_judges.csv")
    d = frame[[f"human_{criterion}_{i}" for i in (1, 2, 3)]].to_numpy(dtype=float)
    axis = [1.0, 2.0, 3.0, 4.0, 5.0]
    for coefficient, weights, method in (
        ("fleiss_kappa", None, "fleiss"),
        ("gwet_ac", None, "gwet"),
        ("gwet_ac", "quadratic", "gwet"),
    ):
        ours = m.rater_agreement(d, coefficient=coefficient, weights=weights, labels=axis, n_boot=0)
        ref = getattr(
            irr_raw.CAC(pd.DataFrame(d), weights=weights or "identity", categories=axis, digits=30),
            method,
        )()["est"]
        assert ours.value == pytest.approx(ref["coefficient_value"], abs=TOL)
        assert ours.se == pytest.approx(ref["se"], abs=TOL)
    counts, _ = sm_ir.aggregate_raters(d.astype(int))
    assert m.fleiss_kappa(d, labels=axis) == pytest.approx(sm_ir.fleiss_kappa(counts), abs=TOL)
    for level in ("nominal", "ordinal", "interval"):
        expected = krippendorff.alpha(d.T, level_of_measurement=level, value_domain=np.array(axis))
        assert m.krippendorff_alpha(d, level=level, labels=axis) == pytest.approx(expected, abs=TOL)
    # the judge against the humans' mean rounded half up, with its analytic SE
    human = np.floor(frame[f"human_{criterion}_mean"].to_numpy(dtype=float) + 0.5)
    judge = np.floor(frame[f"judge_gpt4_{criterion}"].to_numpy(dtype=float) + 0.5)
    keep = ~np.isnan(judge)
    table = m.confusion_matrix(human[keep], judge[keep], labels=axis)
    ref = irr_table.CAC(pd.DataFrame(table), weights="quadratic", digits=30).cohen()["est"]
    assert kappa_se_table(table, "quadratic") == pytest.approx(ref["se"], abs=TOL)
    assert m.cohen_kappa(
        human[keep], judge[keep], labels=axis, weights="quadratic"
    ) == pytest.approx(
        sklearn_metrics.cohen_kappa_score(
            human[keep], judge[keep], labels=axis, weights="quadratic"
        ),
        abs=TOL,
    )


@pytest.mark.shared_data
def test_pandalm_matches_references(shared_datasets: Path) -> None:
    frame = pd.read_csv(shared_datasets / "pandalm_testset" / "pandalm_testset.csv")
    words = frame[["human_1", "human_2", "human_3"]].to_numpy(dtype=object)
    axis = ["model_A", "model_B", "tie"]
    codes = np.vectorize(axis.index)(words).astype(float) + 1.0
    for coefficient, method in (("fleiss_kappa", "fleiss"), ("gwet_ac", "gwet")):
        ours = m.rater_agreement(words, coefficient=coefficient, labels=axis, n_boot=0)
        ref = getattr(
            irr_raw.CAC(pd.DataFrame(codes), categories=[1.0, 2.0, 3.0], digits=30), method
        )()["est"]
        assert ours.value == pytest.approx(ref["coefficient_value"], abs=TOL)
        assert ours.se == pytest.approx(ref["se"], abs=TOL)
    alpha = krippendorff.alpha(codes.T, level_of_measurement="nominal")
    assert m.krippendorff_alpha(words, labels=axis) == pytest.approx(alpha, abs=TOL)
