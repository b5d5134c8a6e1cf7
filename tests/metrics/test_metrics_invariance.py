"""Invariance checks over a table of every two-array metric (like scikit-learn's test_common).

Every name in `evalcore.metrics.__all__` must be either in TWO_ARRAY (and then passes every check its
flags allow) or in OTHER with the reason it is not a two-array metric. A new export that is in neither
fails `test_every_export_is_classified`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import evalcore.metrics as m


@dataclass(frozen=True)
class Entry:
    fn: Callable[[Any, Any], Any]
    symmetric: bool
    data: str  # "scale" (numbers 1..5), "ordinal" (same, order matters), "binary", "pairwise", "scores"


def _report(a: Any, b: Any) -> Any:
    return m.calibrate(a, b, kind="ordinal", n_boot=20, seed=3).to_dict()


def _sweep(a: Any, b: Any) -> Any:
    return m.threshold_sweep(a, b, positive=1)


TWO_ARRAY: dict[str, Entry] = {
    "accuracy": Entry(m.accuracy, True, "scale"),
    "balanced_accuracy": Entry(m.balanced_accuracy, False, "scale"),
    "weighted_f1": Entry(m.weighted_f1, False, "scale"),
    "cohen_kappa": Entry(m.cohen_kappa, True, "scale"),
    "gwet_ac1": Entry(m.gwet_ac1, True, "scale"),
    "confusion_matrix": Entry(m.confusion_matrix, False, "scale"),
    "confusion_labels": Entry(m.confusion_labels, True, "scale"),
    "per_class_metrics": Entry(m.per_class_metrics, False, "scale"),
    "spearman": Entry(m.spearman, True, "ordinal"),
    "kendall_tau_b": Entry(m.kendall_tau_b, True, "ordinal"),
    # the resampling stream follows the table's cells, so swapping the arrays draws other resamples
    "bootstrap_ci": Entry(
        lambda a, b: m.bootstrap_ci(a, b, metric="cohen_kappa_quadratic", n_boot=50),
        False,
        "ordinal",
    ),
    "calibrate": Entry(_report, False, "ordinal"),
    "true_positive_rate": Entry(
        lambda a, b: m.true_positive_rate(a, b, positive=1), False, "binary"
    ),
    "true_negative_rate": Entry(
        lambda a, b: m.true_negative_rate(a, b, positive=1), False, "binary"
    ),
    "threshold_sweep": Entry(_sweep, False, "scores"),
    "position_consistency": Entry(m.position_consistency, True, "pairwise"),
    "first_position_preference": Entry(m.first_position_preference, False, "pairwise"),
}

# Variants checked on top of the default call of an entry (weights, kinds...); "<export> <variant>".
VARIANTS: dict[str, Entry] = {
    "cohen_kappa linear": Entry(lambda a, b: m.cohen_kappa(a, b, weights="linear"), True, "scale"),
    "cohen_kappa quadratic": Entry(
        lambda a, b: m.cohen_kappa(a, b, weights="quadratic"), True, "scale"
    ),
    "calibrate binary": Entry(
        lambda a, b: m.calibrate(a, b, kind="binary", labels=[1, 0], n_boot=10).to_dict(),
        False,
        "binary",
    ),
    "gwet_ac1 binary": Entry(m.gwet_ac1, True, "binary"),
    "calibrate pairwise": Entry(
        lambda a, b: m.calibrate(a, b, kind="pairwise", n_boot=10).to_dict(), False, "pairwise"
    ),
}

OTHER: dict[str, str] = {
    "TABLE_METRICS": "a tuple of names",
    "CALIBRATION_METRICS": "the declared metric table (each row's function runs in the report)",
    "MetricDef": "declaration type",
    "metric_def": "looks up a declaration",
    "metrics_for": "looks up declarations",
    "headline_kappa": "looks up a declaration",
    "CalibrationReport": "result type",
    "ClassMetrics": "result type",
    "Comparison": "result type",
    "CorrectedPassRate": "result type",
    "SweepPoint": "result type",
    "compare": "three arrays (tested in test_metrics_compare.py)",
    "corrected_pass_rate": "three arrays (tested in test_metrics_binary.py)",
    "mcnemar_exact_p": "two counts, not arrays",
    "bias_corrected_rate": "three rates, not arrays",
    "best_threshold": "takes sweep points",
    "resample_table": "takes a count table",
    "table_metric": "takes a count table",
    "pairwise_cohen_kappa": "ratings table (invariances in test_metrics_agreement.py)",
    "krippendorff_alpha": "ratings table (invariances in test_metrics_agreement.py)",
    "krippendorff_alpha_ci": "ratings table (invariances in test_metrics_agreement.py)",
    "aggregate_labels": "ratings table (invariances in test_metrics_agreement.py)",
    "win_rates": "one array",
    "token_f1": "two strings, not label arrays",
    "token_f1_scores": "texts, not labels",
    "factual_correctness_score": "claim counts",
    "summarization_score": "text",
    "summarization_qa_score": "one list of answers",
    "conciseness_score": "text",
    "chance_table": "takes the humans' label counts",
    "ALT_TEST_SCORINGS": "a tuple of names",
    "ALT_TEST_SCORING_DEFS": "the declared Alt-Test scorings",
    "AltTestScoring": "declaration type",
    "alt_test_scoring": "looks up a declaration",
    "default_alt_test_scoring": "looks up a declaration by scale kind",
    "AltTest": "result type",
    "AltTestAnnotator": "result type",
    "alt_test": "annotators table + judge (invariances in test_metrics_alt_test.py)",
    "alt_test_curve": "annotators table + judge (tested in test_metrics_alt_test.py)",
    "benjamini_yekutieli": "p-values, not labels",
    "RateEstimate": "result type",
    "RateEstimates": "result type",
    "labelled_rate": "one array",
    "ppi_rate": "three arrays (invariances in test_metrics_rate.py)",
    "estimate_rate": "three arrays (tested in test_metrics_rate.py)",
    "PROPORTION_METHODS": "a tuple of names",
    "wilson_interval": "two counts, not arrays",
    "clopper_pearson_interval": "two counts, not arrays",
    "clopper_pearson_lower": "two counts, not arrays",
    "proportion_interval": "two counts, not arrays",
    "CONVENTIONS": "the declared conventions (every declared metric has one: test below)",
    "Convention": "declaration type",
    "conventions_markdown": "renders the conventions",
    "RATER_COEFFICIENTS": "a tuple of names",
    "RATER_METRICS": "the declared rater table (invariances below, over every row)",
    "RaterAgreement": "result type",
    "RaterDef": "declaration type",
    "raters_for": "looks up declarations",
    "fleiss_kappa": "ratings table (invariances below, as the RATER_METRICS row fleiss_kappa)",
    "gwet_ac": "ratings table (invariances below, as the RATER_METRICS rows gwet_ac*)",
    "rater_agreement": "ratings table (invariances below, over every RATER_METRICS row)",
    "rater_agreements": "ratings table (rater_agreement for several rows at once)",
    "ScoreEstimates": "result type",
    "estimate_scores": "three arrays (tested in test_metrics_rate.py and the references)",
    "labelled_mean": "one array of numbers",
    "ppi_mean": "three arrays of numbers (tested against ppi-python)",
    "mcnemar_midp": "two counts, not arrays",
    "paired_difference_interval": "four counts, not arrays",
    "clopper_pearson_lower_bounds": "counts, not arrays of labels",
    "MIN_DECIDED": "a setting",
    "RECALIBRATION_METHODS": "a tuple of names",
    "CoverageCurve": "result type",
    "Recalibration": "result type",
    "Reliability": "result type",
    "SelectiveOutcome": "result type",
    "SelectiveThreshold": "result type",
    "ThresholdCandidate": "result type",
    "LabelCandidate": "result type",
    "LabelNext": "result type",
    "expected_calibration_error": "labels + confidences (invariances in test_metrics_confidence.py)",
    "reliability_bins": "labels + confidences (invariances in test_metrics_confidence.py)",
    "brier_score_loss": "labels + confidences (invariances in test_metrics_confidence.py)",
    "multiclass_brier_score_loss": "labels + a probability matrix (test_metrics_confidence.py)",
    "fit_recalibration": "labels + confidences (tested in test_metrics_confidence.py)",
    "selective_threshold": "labels + confidences (tested in test_metrics_confidence.py)",
    "selective_outcome": "labels + confidences (tested in test_metrics_confidence.py)",
    "coverage_curve": "labels + confidences (tested in test_metrics_confidence.py)",
    "label_next": "labels of unlabelled items (tested in test_metrics_label_next.py)",
}


def test_every_export_is_classified() -> None:
    exported = set(m.__all__)
    assert {name.split()[0] for name in VARIANTS} <= set(TWO_ARRAY)
    assert not set(TWO_ARRAY) & set(OTHER)
    assert exported - set(TWO_ARRAY) - set(OTHER) == set(), "add new metrics to TWO_ARRAY or OTHER"
    assert set(TWO_ARRAY) | set(OTHER) <= exported


def _data(kind: str, seed: int) -> tuple[list[Any], list[Any]]:
    rng = np.random.default_rng(seed)
    n = 60
    if kind == "pairwise":
        choices = np.array(["A", "B", "TIE"], dtype=object)
        first = choices[rng.integers(0, 3, n)]
        second = np.where(rng.random(n) < 0.6, first, choices[rng.integers(0, 3, n)])
        return list(first), list(second)
    human = rng.integers(1, 6, n)
    judge = np.clip(human + rng.integers(-1, 2, n), 1, 5)
    if kind == "binary":
        return [1 if h >= 3 else 0 for h in human], [1 if j >= 3 else 0 for j in judge]
    if kind == "scores":
        return [1 if h >= 3 else 0 for h in human], [float(j) + 0.5 for j in judge]
    return [int(h) for h in human], [int(j) for j in judge]


def _equal(x: Any, y: Any) -> bool:
    if isinstance(x, float) and isinstance(y, float):
        return (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, abs=1e-12)
    if isinstance(x, np.ndarray):
        return bool(np.array_equal(x, y))
    if isinstance(x, tuple | list) and isinstance(y, tuple | list):
        return len(x) == len(y) and all(_equal(a, b) for a, b in zip(x, y, strict=True))
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(_equal(x[k], y[k]) for k in x)
    return bool(x == y)


CASES = [(name, e.fn, e) for name, e in {**TWO_ARRAY, **VARIANTS}.items()]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize(("name", "fn", "entry"), CASES, ids=IDS)
@pytest.mark.parametrize("seed", [0, 1])
def test_shuffling_rows_changes_nothing(name: str, fn: Any, entry: Entry, seed: int) -> None:
    a, b = _data(entry.data, seed)
    order = np.random.default_rng(seed + 100).permutation(len(a))
    shuffled_a, shuffled_b = [a[i] for i in order], [b[i] for i in order]
    assert _equal(fn(a, b), fn(shuffled_a, shuffled_b))


@pytest.mark.parametrize(("name", "fn", "entry"), CASES, ids=IDS)
def test_strings_and_numbers_give_the_same_result(name: str, fn: Any, entry: Entry) -> None:
    if entry.data == "pairwise":
        pytest.skip("pairwise choices are words")
    a, b = _data(entry.data, 2)
    as_strings = ([str(x) for x in a], [str(x) for x in b])
    as_floats = (np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    as_object = (np.asarray(a, dtype=object), [f"{x:.1f}" for x in b])
    baseline = fn(a, b)
    assert _equal(baseline, fn(*as_strings))
    assert _equal(baseline, fn(*as_floats))
    assert _equal(baseline, fn(*as_object))


@pytest.mark.parametrize(("name", "fn", "entry"), CASES, ids=IDS)
def test_symmetric_metrics_are_symmetric(name: str, fn: Any, entry: Entry) -> None:
    a, b = _data(entry.data, 3)
    if entry.symmetric:
        assert _equal(fn(a, b), fn(b, a))
    elif entry.data != "scores":
        # a metric flagged asymmetric should really be asymmetric on some input (keeps flags honest)
        a2, b2 = _data(entry.data, 4)
        assert not (_equal(fn(a, b), fn(b, a)) and _equal(fn(a2, b2), fn(b2, a2)))


@pytest.mark.parametrize(("name", "fn", "entry"), CASES, ids=IDS)
def test_dropping_missing_rows_explicitly_gives_the_same(name: str, fn: Any, entry: Entry) -> None:
    a, b = _data(entry.data, 5)
    rng = np.random.default_rng(6)
    holes_a = rng.random(len(a)) < 0.15
    holes_b = rng.random(len(b)) < 0.15
    spellings = [None, math.nan, "", "error", "ERROR"]
    with_missing_a = [
        spellings[i % 5] if h else x for i, (x, h) in enumerate(zip(a, holes_a, strict=True))
    ]
    with_missing_b = [
        spellings[i % 3] if h else x for i, (x, h) in enumerate(zip(b, holes_b, strict=True))
    ]
    keep = ~(holes_a | holes_b)
    kept_a = [x for x, k in zip(a, keep, strict=True) if k]
    kept_b = [x for x, k in zip(b, keep, strict=True) if k]
    got, expected = fn(with_missing_a, with_missing_b), fn(kept_a, kept_b)
    if isinstance(got, dict) and "n_dropped" in got:  # a report also counts what it dropped
        assert got["n_dropped"] == int((~keep).sum())
        got = {**got, "n_dropped": 0}
    assert _equal(got, expected)


# --- agreement among raters: every row of the declared RATER_METRICS -----------------------------


def _ratings(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.integers(1, 6, 50)
    table = np.where(rng.random((50, 4)) < 0.6, base[:, None], rng.integers(1, 6, (50, 4)))
    table = table.astype(float)
    table[rng.random((50, 4)) < 0.15] = np.nan
    return table


RATER_IDS = [d.key for d in m.RATER_METRICS]
AXIS = [1, 2, 3, 4, 5]


def _rater_values(d: Any, ratings: Any, labels: Any = AXIS) -> tuple[float, float | None]:
    found = d.compute(ratings, labels=labels, n_boot=0)
    return found.value, found.se


@pytest.mark.parametrize("d", m.RATER_METRICS, ids=RATER_IDS)
def test_rater_coefficients_ignore_item_and_rater_order(d: Any) -> None:
    table = _ratings(0)
    rng = np.random.default_rng(1)
    baseline = _rater_values(d, table)
    assert _equal(baseline, _rater_values(d, table[rng.permutation(len(table))]))
    assert _equal(baseline, _rater_values(d, table[:, rng.permutation(table.shape[1])]))


@pytest.mark.parametrize("d", m.RATER_METRICS, ids=RATER_IDS)
def test_rater_coefficients_read_strings_as_numbers(d: Any) -> None:
    table = _ratings(2)
    words = np.where(np.isnan(table), None, table.astype(object))
    as_strings = np.vectorize(lambda v: None if v is None else f"{v:g}", otypes=[object])(words)
    assert _equal(_rater_values(d, table), _rater_values(d, as_strings))


@pytest.mark.parametrize("d", m.RATER_METRICS, ids=RATER_IDS)
def test_rater_coefficients_unrated_items_change_nothing(d: Any) -> None:
    table = _ratings(3)
    padded = np.vstack([table, np.full((7, table.shape[1]), np.nan)])
    assert _equal(_rater_values(d, table), _rater_values(d, padded))


def test_every_declared_metric_names_its_convention() -> None:
    documented = {c.key for c in m.CONVENTIONS}
    declared = {d.key for d in m.CALIBRATION_METRICS} | {d.key for d in m.RATER_METRICS}
    assert declared - documented == set()
    for c in m.CONVENTIONS:
        assert c.reference
        assert c.convention
        assert c.interval
