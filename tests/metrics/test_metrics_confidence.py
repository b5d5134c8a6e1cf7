"""The judge's confidence: ECE, reliability bins, Brier, recalibration, and trust or escalate.

Every figure is checked against an independent computation: a plain loop over the definition,
scikit-learn (``calibration_curve``, ``brier_score_loss``, ``IsotonicRegression``) and scipy's exact
binomial interval (``binomtest(...).proportion_ci(method="exact")``) for the one-sided
Clopper–Pearson bound. The guarantee of the selective threshold is checked by simulation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest
from sklearn.calibration import calibration_curve
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import brier_score_loss as sk_brier

from evalcore.errors import MetricError
from evalcore.metrics import (
    brier_score_loss,
    clopper_pearson_lower,
    clopper_pearson_lower_bounds,
    coverage_curve,
    expected_calibration_error,
    fit_recalibration,
    multiclass_brier_score_loss,
    reliability_bins,
    selective_outcome,
    selective_threshold,
)


def _judge(
    n: int, seed: int, *, shift: float = 0.0, low: float = 0.3, labels: int = 3
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A judge whose confidence c ~ U(low, 1) and who is right with probability c - shift."""
    rng = np.random.default_rng(seed)
    human = rng.integers(1, labels + 1, n)
    conf = rng.uniform(low, 1.0, n)
    right = rng.random(n) < np.clip(conf - shift, 0, 1)
    judge = np.where(right, human, human % labels + 1)
    return human, judge, conf


# --- ECE and the reliability bins ------------------------------------------------------------------


def _reference_bins(human, judge, conf, n_bins):
    """The definition, one item at a time: bin min(floor(c*B), B-1), count, sums."""
    counts = [0] * n_bins
    agree = [0] * n_bins
    sums = [0.0] * n_bins
    for h, j, c in zip(human, judge, conf, strict=True):
        b = min(math.floor(c * n_bins), n_bins - 1)
        counts[b] += 1
        agree[b] += int(h == j)
        sums[b] += c
    n = sum(counts)
    ece = sum(
        counts[b] / n * abs(agree[b] / counts[b] - sums[b] / counts[b])
        for b in range(n_bins)
        if counts[b]
    )
    return counts, agree, sums, ece


@pytest.mark.parametrize("n_bins", [1, 5, 10, 15])
@pytest.mark.parametrize("seed", [0, 1])
def test_ece_and_bins_equal_the_definition_item_by_item(n_bins: int, seed: int) -> None:
    human, judge, conf = _judge(500, seed, shift=0.1)
    conf = conf.copy()
    conf[:12] = [0.0, 0.1, 0.2, 0.5, 0.7, 0.9, 1.0, 1.0, 0.3, 0.6, 0.8, 0.4]  # edges included
    counts, agree, sums, ece = _reference_bins(human, judge, conf, n_bins)
    bins = reliability_bins(human, judge, conf, n_bins=n_bins)
    assert list(bins.counts) == counts
    assert list(bins.n_agree) == agree
    for b in range(n_bins):
        if counts[b]:
            assert bins.mean_confidence[b] == pytest.approx(sums[b] / counts[b], abs=1e-12)
            assert bins.agreement[b] == pytest.approx(agree[b] / counts[b], abs=1e-12)
        else:
            assert math.isnan(bins.agreement[b])
            assert math.isnan(bins.mean_confidence[b])
    assert expected_calibration_error(human, judge, conf, n_bins=n_bins) == pytest.approx(
        ece, abs=1e-12
    )
    assert bins.ece == pytest.approx(ece, abs=1e-12)


def test_an_item_on_an_edge_goes_up_and_one_goes_in_the_last_bin() -> None:
    # 0.1 * 10 = 1 -> bin 1; 1.0 -> min(10, 9) = bin 9; 0.0 -> bin 0
    bins = reliability_bins([1, 1, 1], [1, 1, 1], [0.1, 1.0, 0.0], n_bins=10)
    assert bins.counts == (1, 1, 0, 0, 0, 0, 0, 0, 0, 1)


def test_bins_equal_scikit_learn_calibration_curve_away_from_edges() -> None:
    human, judge, conf = _judge(2000, 3, shift=0.05)
    conf = np.round(conf, 3) + 0.0004  # never on an edge, where scikit-learn bins the other way
    agree = (human == judge).astype(float)
    prob_true, prob_pred = calibration_curve(agree, conf, n_bins=10, strategy="uniform")
    bins = reliability_bins(human, judge, conf, n_bins=10)
    filled = [b for b in range(10) if bins.counts[b]]
    assert np.allclose([bins.agreement[b] for b in filled], prob_true, atol=1e-12)
    assert np.allclose([bins.mean_confidence[b] for b in filled], prob_pred, atol=1e-12)


def test_hand_worked_ece() -> None:
    # B = 2. bin 0: c 0.3, right -> |1 - 0.3| = 0.7, 1 item; bin 1: c 0.9 right, 0.8 wrong,
    # 1.0 right -> agreement 2/3, mean confidence 0.9, |2/3 - 0.9| = 7/30, 3 items.
    # ECE = 1/4 * 0.7 + 3/4 * 7/30 = 0.175 + 0.175 = 0.35
    got = expected_calibration_error([1, 1, 2, 2], [1, 2, 2, 2], [0.9, 0.8, 0.3, 1.0], n_bins=2)
    assert got == pytest.approx(0.35, abs=1e-12)
    bins = reliability_bins([1, 1, 2, 2], [1, 2, 2, 2], [0.9, 0.8, 0.3, 1.0], n_bins=2)
    assert bins.mce == pytest.approx(0.7)
    assert bins.gaps[1] == pytest.approx(0.9 - 2 / 3)


def test_a_calibrated_judge_has_ece_near_zero_and_an_over_confident_one_a_large_ece() -> None:
    calibrated = _judge(20_000, 4)
    over = _judge(20_000, 5, shift=0.2)
    # binomial noise per bin of ~2,000 items is about 0.01; the over-confident gap is 0.2 in
    # every bin where c - 0.2 stays above 0 (all of them, since c >= 0.3)
    assert expected_calibration_error(*calibrated) < 0.02
    assert expected_calibration_error(*over) == pytest.approx(0.2, abs=0.02)


def test_rows_missing_a_label_or_a_confidence_are_left_out() -> None:
    human, judge, conf = _judge(200, 6)
    h = human.astype(object)
    c = conf.astype(object)
    h[:10] = None
    c[10:20] = None
    c[20:25] = ""
    keep = np.ones(200, dtype=bool)
    keep[:25] = False
    assert expected_calibration_error(h, judge, c) == pytest.approx(
        expected_calibration_error(human[keep], judge[keep], conf[keep]), abs=1e-12
    )
    assert brier_score_loss(h, judge, c) == pytest.approx(
        brier_score_loss(human[keep], judge[keep], conf[keep]), abs=1e-12
    )


def test_shuffling_and_spelling_the_labels_change_nothing() -> None:
    human, judge, conf = _judge(300, 7)
    order = np.random.default_rng(8).permutation(300)
    base = expected_calibration_error(human, judge, conf)
    assert expected_calibration_error(human[order], judge[order], conf[order]) == pytest.approx(
        base, abs=1e-12
    )
    as_text = ([str(x) for x in human], [f"{x:.1f}" for x in judge], [str(c) for c in conf])
    assert expected_calibration_error(*as_text) == pytest.approx(base, abs=1e-12)


def test_a_confidence_outside_zero_one_is_refused_with_its_position() -> None:
    with pytest.raises(MetricError, match=r"position 2 is 1\.2"):
        expected_calibration_error([1, 1, 1], [1, 1, 1], [0.5, 0.9, 1.2])
    with pytest.raises(MetricError, match=r"position 0 is -0\.1"):
        brier_score_loss([1], [1], [-0.1])
    with pytest.raises(MetricError, match="position 1 is 'high', not a number"):
        brier_score_loss([1, 1], [1, 1], [0.5, "high"])
    with pytest.raises(MetricError, match="differ in length"):
        brier_score_loss([1, 1], [1, 1], [0.5])
    with pytest.raises(MetricError, match="no row has"):
        brier_score_loss([1, None], [1, 1], [None, 0.5])


# --- Brier --------------------------------------------------------------------------------------


def test_brier_equals_scikit_learn() -> None:
    human, judge, conf = _judge(1000, 9, shift=0.1)
    agree = (human == judge).astype(int)
    assert brier_score_loss(human, judge, conf) == pytest.approx(sk_brier(agree, conf), abs=1e-12)
    # hand-worked: (0.9 - 1)^2 + (0.6 - 0)^2 + (0.5 - 1)^2 = 0.01 + 0.36 + 0.25; / 3
    assert brier_score_loss([1, 1, 2], [1, 2, 2], [0.9, 0.6, 0.5]) == pytest.approx(0.62 / 3)


def test_multiclass_brier_equals_scikit_learn_without_the_half() -> None:
    rng = np.random.default_rng(10)
    labels = ["A", "B", "TIE"]
    proba = rng.dirichlet([1, 1, 1], size=400)
    y = rng.choice(labels, size=400)
    ours = multiclass_brier_score_loss(y, proba, labels=labels)
    assert ours == pytest.approx(sk_brier(y, proba, labels=labels, scale_by_half=False), abs=1e-12)
    # two labels: twice the binary score of the first label's probability
    p = rng.random(100)
    y2 = rng.choice(["pass", "fail"], 100)
    two = multiclass_brier_score_loss(y2, np.c_[p, 1 - p], labels=["pass", "fail"])
    assert two == pytest.approx(2 * sk_brier((y2 == "pass").astype(int), p), abs=1e-12)


def test_multiclass_brier_refuses_rows_that_do_not_sum_to_one() -> None:
    with pytest.raises(MetricError, match="do not sum to 1"):
        multiclass_brier_score_loss(["a"], [[0.5, 0.4]], labels=["a", "b"])
    with pytest.raises(MetricError, match="shape"):
        multiclass_brier_score_loss(["a", "b"], [[0.5, 0.5]], labels=["a", "b"])


# --- recalibration --------------------------------------------------------------------------------


def test_isotonic_recalibration_is_scikit_learns() -> None:
    human, judge, conf = _judge(800, 11, shift=0.15)
    fitted = fit_recalibration(human, judge, conf, method="isotonic")
    model = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(
        conf, (human == judge).astype(float)
    )
    probe = np.linspace(0, 1, 101)
    assert np.allclose(fitted.apply(probe), model.predict(probe), atol=1e-12)
    assert fitted.n == 800


def test_temperature_is_the_minimum_of_the_log_loss() -> None:
    human, judge, conf = _judge(3000, 12, shift=0.2, low=0.55)
    fitted = fit_recalibration(human, judge, conf, method="temperature")
    agree = (human == judge).astype(float)
    c = np.clip(conf, 1e-12, 1 - 1e-12)
    logit = np.log(c / (1 - c))

    def loss(t: float) -> float:  # an independent form: the logistic of logit(c) / T
        p = np.clip(1 / (1 + np.exp(-logit / t)), 1e-12, 1 - 1e-12)
        return float(-np.mean(agree * np.log(p) + (1 - agree) * np.log(1 - p)))

    grid = np.exp(np.linspace(np.log(0.05), np.log(20), 4001))
    best = grid[np.argmin([loss(t) for t in grid])]
    assert fitted.temperature == pytest.approx(best, rel=5e-3)
    assert fitted.temperature > 1  # an over-confident judge is softened


@pytest.mark.parametrize("method", ["isotonic", "temperature"])
def test_a_recalibration_fitted_on_dev_helps_an_over_confident_judge_on_test(method: str) -> None:
    human, judge, conf = _judge(6000, 13, shift=0.2, low=0.55)
    dev, test = slice(0, 3000), slice(3000, 6000)
    fitted = fit_recalibration(human[dev], judge[dev], conf[dev], method=method)
    before = expected_calibration_error(human[test], judge[test], conf[test])
    after = expected_calibration_error(human[test], judge[test], fitted.apply(conf[test]))
    assert before > 0.15
    assert after < before / 2


def test_temperature_keeps_zero_and_one_and_unknown_methods_are_refused() -> None:
    fitted = fit_recalibration(
        [1, 1, 1, 1], [1, 2, 1, 2], [0.9, 0.9, 0.6, 0.6], method="temperature"
    )
    assert fitted.apply([0.0, 1.0]).tolist() == [0.0, 1.0]
    with pytest.raises(MetricError, match="unknown recalibration"):
        fit_recalibration([1], [1], [0.5], method="platt")


# --- trust or escalate ------------------------------------------------------------------------------


def _lower(k: int, n: int, risk: float) -> float:
    """scipy's exact (Clopper-Pearson) interval at 1 - 2*risk: its lower end is the one-sided bound
    at 1 - risk."""
    if k == 0:
        return 0.0
    return float(binomtest(k, n).proportion_ci(confidence_level=1 - 2 * risk, method="exact").low)


def _reference_procedure(human, judge, conf, target, risk, min_decided=30):
    """The procedure of the issue, written out plainly: distinct dev confidences from the highest
    down; skip below min_decided decided items; pass while the bound clears the target; stop at
    the first failure; the threshold is the last that passed."""
    h, j, c = list(human), list(judge), list(conf)
    outcomes = []
    threshold = None
    for t in sorted(set(c), reverse=True):
        decided = [i for i in range(len(c)) if c[i] >= t]
        k = sum(1 for i in decided if h[i] == j[i])
        if len(decided) < min_decided:
            outcomes.append((t, "skipped"))
            continue
        if _lower(k, len(decided), risk) >= target:
            outcomes.append((t, "passed"))
            threshold = t
        else:
            outcomes.append((t, "failed"))
            break
    return threshold, outcomes


@pytest.mark.parametrize(
    ("seed", "shift", "target"), [(0, 0.0, 0.9), (1, 0.1, 0.8), (2, 0.0, 0.75)]
)
def test_the_threshold_follows_the_procedure_exactly(
    seed: int, shift: float, target: float
) -> None:
    rng = np.random.default_rng(seed)
    human, judge, _ = _judge(300, seed, shift=shift)
    conf = np.round(rng.uniform(0.3, 1.0, 300), 2)  # ties: many items share a confidence
    right = rng.random(300) < np.clip(conf - shift, 0, 1)
    judge = np.where(right, human, human % 3 + 1)
    got = selective_threshold(human, judge, conf, target=target, risk=0.05)
    threshold, outcomes = _reference_procedure(human, judge, conf, target, 0.05)
    assert got.threshold == threshold
    assert [(c.threshold, c.outcome) for c in got.candidates] == outcomes
    for c in got.candidates:
        decided = conf >= c.threshold
        assert c.n_decided == int(decided.sum())
        assert c.n_agree == int((human[decided] == judge[decided]).sum())
        if c.outcome != "skipped":
            assert c.lower_bound == pytest.approx(_lower(c.n_agree, c.n_decided, 0.05), abs=1e-9)


def test_the_procedure_stops_at_the_first_failure_even_if_a_lower_threshold_would_pass() -> None:
    # 40 items at 0.95, all right (bound 0.05**(1/40) = 0.928); 20 at 0.9, all wrong: 40 of 60
    # (bound about 0.55) fails; 200 at 0.8, all right: 240 of 260 would pass at 0.9, but the
    # procedure has stopped.
    human = [1] * 260
    judge = [1] * 40 + [2] * 20 + [1] * 200
    conf = [0.95] * 40 + [0.9] * 20 + [0.8] * 200
    got = selective_threshold(human, judge, conf, target=0.9, risk=0.05)
    assert [c.outcome for c in got.candidates] == ["passed", "failed"]
    assert got.threshold == 0.95
    assert got.candidates[0].lower_bound == pytest.approx(0.05 ** (1 / 40))
    assert got.n_decided == 40
    assert got.coverage == pytest.approx(40 / 260)


def test_small_candidates_are_skipped_not_failed() -> None:
    # 10 wrong items at 0.99 would fail any test; with fewer than 30 decided they are skipped, and
    # the next candidate (10 wrong + 100 right) is the first tested
    human = [1] * 110
    judge = [2] * 10 + [1] * 100
    conf = [0.99] * 10 + [0.9] * 100
    got = selective_threshold(human, judge, conf, target=0.8, risk=0.05)
    assert [c.outcome for c in got.candidates] == ["skipped", "passed"]
    assert "fewer than 30" in got.candidates[0].reason
    # 100 of 110: one-sided 95% bound about 0.85 >= 0.8
    assert got.threshold == 0.9
    assert got.n_decided == 110
    # a larger min_decided skips both: nothing is ever tested, the judge decides nothing
    none = selective_threshold(human, judge, conf, target=0.8, risk=0.05, min_decided=200)
    assert none.threshold is None
    assert none.coverage == 0.0
    assert {c.outcome for c in none.candidates} == {"skipped"}
    assert "decides nothing" in none.guarantee()


def test_items_without_a_verdict_or_confidence_are_never_decided_but_count_in_coverage() -> None:
    human = [1] * 50
    judge = [1] * 40 + [None] * 10
    conf = [0.9] * 35 + [None] * 5 + [0.9] * 10
    got = selective_threshold(human, judge, conf, target=0.8, risk=0.05)
    assert got.n == 50
    assert got.n_scored == 35
    assert got.threshold == 0.9
    assert got.coverage == pytest.approx(35 / 50)


def test_the_first_tested_failure_leaves_no_threshold() -> None:
    human, judge, conf = _judge(200, 14, shift=0.3)
    got = selective_threshold(human, judge, conf, target=0.95, risk=0.05)
    assert got.threshold is None
    assert got.candidates[-1].outcome == "failed"
    assert math.isnan(got.agreement)
    assert got.lower_bound is None


def test_selective_options_are_checked() -> None:
    with pytest.raises(MetricError, match="target"):
        selective_threshold([1], [1], [0.5], target=1.0, risk=0.05)
    with pytest.raises(MetricError, match="risk"):
        selective_threshold([1], [1], [0.5], target=0.9, risk=0)
    with pytest.raises(MetricError, match="min_decided"):
        selective_threshold([1], [1], [0.5], target=0.9, risk=0.05, min_decided=0)


def test_the_vectorised_bound_is_the_scalar_bound() -> None:
    ks = [0, 1, 5, 29, 30, 57, 100]
    ns = [5, 3, 10, 30, 30, 60, 100]
    many = clopper_pearson_lower_bounds(ks, ns, confidence=0.9)
    for k, n, got in zip(ks, ns, many.tolist(), strict=True):
        assert got == pytest.approx(clopper_pearson_lower(k, n, confidence=0.9), abs=1e-14)
        assert got == pytest.approx(_lower(k, n, 0.1), abs=1e-9)
    with pytest.raises(MetricError):
        clopper_pearson_lower_bounds([3], [2])


def test_outcome_and_curve_by_hand() -> None:
    human = [1, 1, 2, 2, 2]
    judge = [1, 2, 2, 1, None]
    conf = [0.9, 0.8, 0.9, 0.2, 0.99]
    # threshold 0.85 decides the two items at 0.9 (both right); the 0.99 item has no verdict
    out = selective_outcome(human, judge, conf, threshold=0.85)
    assert (out.n, out.n_decided, out.n_agree) == (5, 2, 2)
    assert out.coverage == 0.4
    assert out.agreement == 1.0
    assert out.interval is not None
    assert out.interval[1] == 1.0
    nothing = selective_outcome(human, judge, conf, threshold=None)
    assert nothing.n_decided == 0
    assert nothing.interval is None
    assert math.isnan(nothing.agreement)
    curve = coverage_curve(human, judge, conf)
    assert curve.thresholds == (0.9, 0.8, 0.2)
    assert curve.n_decided == (2, 3, 4)
    assert curve.coverage == (0.4, 0.6, 0.8)
    assert curve.agreement == (1.0, 2 / 3, 0.5)


# --- the guarantee, by simulation -------------------------------------------------------------------

DRAWS = 1000
TARGET, RISK = 0.8, 0.05


def _population_agreement(threshold: float, slope: float, shift: float) -> float:
    """P(right | c >= t) for c ~ U(0.5, 1) and P(right | c) = shift + slope * c: the mean of
    shift + slope * c over U(t, 1) is shift + slope * (t + 1) / 2."""
    return shift + slope * (threshold + 1.0) / 2.0


def _failures(slope: float, shift: float, choose) -> tuple[int, int, float]:
    """Over DRAWS seeded dev sets of 400 items from the model, how often the population agreement
    above the chosen threshold is below TARGET (deciding nothing is never a failure), how many draws
    decided something, and the mean population coverage."""
    rng = np.random.default_rng(2024)
    failures = decided = 0
    coverage = 0.0
    human = np.ones(400, dtype=np.int64)
    for _ in range(DRAWS):
        conf = np.round(rng.uniform(0.5, 1.0, 400), 3)
        right = rng.random(400) < shift + slope * conf
        judge = np.where(right, 1, 2)
        threshold = choose(human, judge, conf)
        if threshold is None:
            continue
        decided += 1
        coverage += (1.0 - threshold) / 0.5
        if _population_agreement(threshold, slope, shift) < TARGET:
            failures += 1
    return failures, decided, coverage / DRAWS


def _ours(human, judge, conf):
    return selective_threshold(human, judge, conf, target=TARGET, risk=RISK).threshold


def _naive(human, judge, conf):
    """The same walk with the point estimate instead of the bound: what the bound protects from."""
    order = np.argsort(-conf, kind="stable")
    c, right = conf[order], (human[order] == judge[order])
    last_of_value = np.flatnonzero(np.append(c[1:] != c[:-1], True))
    n_at = last_of_value + 1
    share = np.cumsum(right)[last_of_value] / n_at
    tested = n_at >= 30
    below = np.flatnonzero(tested & (share < TARGET))
    stop = below[0] if below.size else len(n_at)
    passed = np.flatnonzero(tested[:stop])
    return float(c[last_of_value[passed[-1]]]) if passed.size else None


# Tolerance: the number of failing draws is Binomial(DRAWS, p) with p <= RISK under the guarantee;
# allow three standard deviations above the mean: 50 + 3 * sqrt(1000 * 0.05 * 0.95) = 50 + 20.7.
ALLOWED = DRAWS * RISK + 3 * math.sqrt(DRAWS * RISK * (1 - RISK))


@pytest.mark.parametrize(
    ("model", "shift", "deciding"),
    # P(right | c) = c + shift; the over-confident judge decides less often: its highest
    # thresholds with 30 items agree about 0.86 of the time, too close to 0.8 for the bound
    [("well calibrated", 0.0, 0.8), ("over-confident", -0.1, 0.15)],
)
def test_the_guarantee_holds_over_many_draws(model: str, shift: float, deciding: float) -> None:
    failures, decided, coverage = _failures(1.0, shift, _ours)
    assert failures <= ALLOWED, f"{model}: {failures} of {DRAWS} draws below the target"
    # and the procedure is not vacuous: it decides something in many draws, with real coverage
    assert decided > DRAWS * deciding
    # no threshold can cover more than (1 - t*) / 0.5 at >= 0.8, with t* = 2 * (0.8 - shift) - 1:
    # 0.8 (calibrated) and 0.4 (over-confident)
    assert 0.0 < coverage < (1 - (2 * (TARGET - shift) - 1)) / 0.5


def test_the_simulation_catches_a_procedure_without_the_bound() -> None:
    # the same walk on point estimates picks thresholds whose true agreement is below the target
    # far more often than the risk allows: the check above can fail
    failures, _, _ = _failures(1.0, 0.0, _naive)
    assert failures > ALLOWED


def test_the_docs_define_every_figure_and_cite_the_papers() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text("utf-8")
    section = text.split("# Statistics of the judge's confidence", 1)[1]
    for name in (
        "expected_calibration_error",
        "reliability_bins",
        "brier_score_loss",
        "multiclass_brier_score_loss",
        "fit_recalibration",
        "selective_threshold",
        "selective_outcome",
        "coverage_curve",
        "label_next",
        "--confidence JUDGE=COL",
        "--target-agreement",
    ):
        assert name in section, name
    for paper in (
        "Guo et al. 2017",
        "Naeini et al. 2015",
        "Brier 1950",
        "Zadrozny & Elkan 2002",
        "Jung et al. (2024",
        "Angelopoulos et al. (2021",
        "Liu et al.",
        "Verga et al.",
        "Kossen et al. 2021",
    ):
        assert paper in section, paper
