"""Binary criteria: true positive/negative rates, bias-corrected pass rates and threshold sweeps."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from evalcore.errors import MetricError, UndefinedMetricError
from evalcore.labels import Label, format_label, normalize_label
from evalcore.metrics._bootstrap import check_bootstrap, multinomial_tables, percentile_interval
from evalcore.metrics._classification import encode_pair, require_rows
from evalcore.metrics._encode import Encoded, FloatArray, LabelArray, normalize_column


def _positive(positive: object) -> Label:
    label = normalize_label(positive)
    if label is None:
        raise MetricError(f"positive must be a label, not a missing value ({positive!r})")
    return label


def _binary_counts(encoded: Encoded, positive: Label) -> tuple[int, int, int, int]:
    """(tp, fn, fp, tn) with ``positive`` against every other label."""
    pos = encoded.labels.index(positive) if positive in encoded.labels else -1
    truth = encoded.codes[0] == pos
    pred = encoded.codes[1] == pos
    tp = int(np.count_nonzero(truth & pred))
    fn = int(np.count_nonzero(truth)) - tp
    fp = int(np.count_nonzero(pred)) - tp
    tn = encoded.n - tp - fn - fp
    return tp, fn, fp, tn


def true_positive_rate(y_true: LabelArray, y_pred: LabelArray, *, positive: object) -> float:
    """Share of the rows humans labelled ``positive`` that the judge also labelled ``positive``.

    TPR (sensitivity, recall of the positive class) = TP / (TP + FN); every label other than
    ``positive`` counts as negative. Range 0 (worst) to 1 (best). NaN when ``y_true`` has no
    positive row. Rows where either side is missing are dropped; no row left raises ``MetricError``.

    >>> true_positive_rate(["pass", "pass", "fail"], ["pass", "fail", "fail"], positive="pass")
    0.5
    """
    encoded = encode_pair(y_true, y_pred, None)
    require_rows(encoded)
    tp, fn, _, _ = _binary_counts(encoded, _positive(positive))
    return tp / (tp + fn) if tp + fn else math.nan


def true_negative_rate(y_true: LabelArray, y_pred: LabelArray, *, positive: object) -> float:
    """Share of the rows humans did not label ``positive`` that the judge did not label ``positive``.

    TNR (specificity) = TN / (TN + FP); every label other than ``positive`` counts as negative.
    Range 0 (worst) to 1 (best). NaN when ``y_true`` has no negative row. Rows where either side is
    missing are dropped; no row left raises ``MetricError``.

    >>> true_negative_rate(["pass", "fail", "fail"], ["pass", "pass", "fail"], positive="pass")
    0.5
    """
    encoded = encode_pair(y_true, y_pred, None)
    require_rows(encoded)
    _, _, fp, tn = _binary_counts(encoded, _positive(positive))
    return tn / (tn + fp) if tn + fp else math.nan


def _check_rate(name: str, value: float) -> float:
    if not isinstance(value, numbers.Real) or not 0.0 <= float(value) <= 1.0:
        raise MetricError(f"{name} must be a rate between 0 and 1 (got {value!r})")
    return float(value)


def _no_better_than_chance(tpr: float, tnr: float) -> UndefinedMetricError:
    return UndefinedMetricError(
        f"the judge is no better than chance on the labelled items (TPR {tpr:.3f} + TNR {tnr:.3f} "
        "<= 1), so its pass rate cannot be corrected for its errors"
    )


def bias_corrected_rate(p_obs: float, tpr: float, tnr: float) -> float:
    """The true pass rate implied by an observed judge pass rate and the judge's TPR and TNR.

    If the judge passes a truly passing item with probability TPR and fails a truly failing item with
    probability TNR, the judge's pass share is ``p_obs = theta*TPR + (1 - theta)*(1 - TNR)``, so
    ``theta = (p_obs + TNR - 1) / (TPR + TNR - 1)``, clipped to [0, 1]. Raises
    ``UndefinedMetricError`` when ``TPR + TNR <= 1`` (a judge no better than chance carries no
    information) and ``MetricError`` for a rate outside [0, 1].

    >>> round(bias_corrected_rate(0.7, 0.9, 0.8), 6)  # (0.7 + 0.8 - 1) / (0.9 + 0.8 - 1) = 0.5 / 0.7
    0.714286
    """
    p_obs, tpr, tnr = (_check_rate(n, v) for n, v in (("p_obs", p_obs), ("tpr", tpr), ("tnr", tnr)))
    if tpr + tnr <= 1.0:
        raise _no_better_than_chance(tpr, tnr)
    return min(1.0, max(0.0, (p_obs + tnr - 1.0) / (tpr + tnr - 1.0)))


@dataclass(frozen=True)
class CorrectedPassRate:
    """A judge's pass rate on unlabelled items corrected for its errors on labelled ones.

    ``theta`` is the corrected rate, ``p_obs`` the judge's raw pass share on the unlabelled items,
    ``tpr``/``tnr`` the judge's rates on the labelled items and ``ci`` the bootstrap interval of
    ``theta`` (``None`` when ``n_boot`` is 0). ``n_boot_dropped`` counts resamples left out because
    their TPR + TNR was <= 1 or undefined.
    """

    theta: float
    ci: tuple[float, float] | None
    p_obs: float
    tpr: float
    tnr: float
    n_labelled: int
    n_unlabelled: int
    n_boot_dropped: int = 0


def corrected_pass_rate(
    unlabelled_pred: LabelArray,
    y_true: LabelArray,
    y_pred: LabelArray,
    *,
    positive: object,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> CorrectedPassRate:
    """Estimate the true share of ``positive`` items from judge verdicts and a labelled sample.

    ``p_obs`` is the judge's share of ``positive`` verdicts on ``unlabelled_pred`` (missing verdicts
    dropped); TPR and TNR come from the labelled items (``y_true`` = human, ``y_pred`` = judge, rows
    with either side missing dropped); ``theta`` = :func:`bias_corrected_rate` of the three. The
    interval resamples the labelled 2 x 2 table (multinomial) and the unlabelled verdicts (binomial)
    independently ``n_boot`` times, seeded; resamples with TPR + TNR <= 1 (or without a positive or a
    negative labelled item) are dropped from the interval and counted in ``n_boot_dropped``.
    Raises ``UndefinedMetricError`` when TPR + TNR <= 1 on the labelled items or when they lack
    positive or negative rows, and ``MetricError`` when a set has no usable row.

    >>> r = corrected_pass_rate(["pass"] * 7 + ["fail"] * 3,
    ...     ["pass"] * 10 + ["fail"] * 10, ["pass"] * 9 + ["fail"] * 9 + ["pass"] * 2,
    ...     positive="pass", n_boot=0)
    >>> r.p_obs, r.tpr, r.tnr, round(r.theta, 4)  # (0.7 + 0.8 - 1) / (0.9 + 0.8 - 1)
    (0.7, 0.9, 0.8, 0.7143)
    """
    check_bootstrap(n_boot, confidence, seed, allow_zero=True)
    label = _positive(positive)
    encoded = encode_pair(y_true, y_pred, None)
    require_rows(encoded, "y_true and y_pred")
    tp, fn, fp, tn = _binary_counts(encoded, label)
    if tp + fn == 0 or tn + fp == 0:
        side = "positive" if tp + fn == 0 else "negative"
        raise UndefinedMetricError(
            f"the labelled items have no {side} human label ({format_label(label)!r} is the "
            "positive one), so the judge's TPR and TNR cannot both be measured"
        )
    verdicts = normalize_column(unlabelled_pred, "unlabelled_pred")
    valid = verdicts.codes >= 0
    n_unlabelled = int(np.count_nonzero(valid))
    if n_unlabelled == 0:
        raise MetricError("unlabelled_pred has no verdict to correct (every value is missing)")
    pos_code = verdicts.values.index(label) if label in verdicts.values else -2
    passes = int(np.count_nonzero(verdicts.codes == pos_code))
    p_obs = passes / n_unlabelled
    tpr, tnr = tp / (tp + fn), tn / (tn + fp)
    theta = bias_corrected_rate(p_obs, tpr, tnr)
    ci = None
    dropped = 0
    if n_boot > 0:
        rng = np.random.default_rng(seed)
        table = np.array([[tp, fn], [fp, tn]], dtype=np.int64)
        draws = multinomial_tables(table, n_boot, rng).astype(np.float64)
        boot_p = rng.binomial(n_unlabelled, p_obs, size=n_boot) / n_unlabelled
        thetas, dropped = _boot_thetas(draws, boot_p)
        ci = percentile_interval(thetas, confidence)
    return CorrectedPassRate(
        theta=theta,
        ci=ci,
        p_obs=p_obs,
        tpr=tpr,
        tnr=tnr,
        n_labelled=encoded.n,
        n_unlabelled=n_unlabelled,
        n_boot_dropped=dropped,
    )


def _boot_thetas(draws: FloatArray, boot_p: FloatArray) -> tuple[FloatArray, int]:
    pos = draws[:, 0, 0] + draws[:, 0, 1]
    neg = draws[:, 1, 0] + draws[:, 1, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr = draws[:, 0, 0] / pos
        tnr = draws[:, 1, 1] / neg
        informative = tpr + tnr - 1.0
        ok = (pos > 0) & (neg > 0) & (informative > 0)
        theta = np.clip((boot_p + tnr - 1.0) / informative, 0.0, 1.0)
    return theta[ok], int(np.count_nonzero(~ok))


class SweepPoint(NamedTuple):
    """Binary agreement when the judge passes every item whose score is at least ``threshold``.

    An immutable named tuple (cheap to build for a sweep over many thresholds).
    """

    threshold: float
    balanced_accuracy: float
    tpr: float
    tnr: float
    n: int


def threshold_sweep(
    y_true: LabelArray,
    scores: LabelArray,
    *,
    positive: object,
    thresholds: Sequence[float] | npt.NDArray[np.float64] | None = None,
) -> list[SweepPoint]:
    """Balanced accuracy, TPR and TNR of "positive when score >= threshold" for many thresholds.

    ``y_true`` holds human labels (``positive`` against every other label); ``scores`` the judge's
    numeric scores. Rows where either is missing are dropped. ``thresholds`` defaults to the distinct
    observed scores, ascending; points come back in the order of ``thresholds``. Balanced accuracy
    is ``(TPR + TNR) / 2``. Computed by sorting the scores once and counting with cumulative sums.
    Raises ``MetricError`` when scores are not numbers or when ``y_true`` lacks positive or negative
    rows.

    >>> [(p.threshold, p.tpr, p.tnr) for p in threshold_sweep([1, 1, 0, 0], [4, 3, 3, 1], positive=1)]
    [(1.0, 1.0, 0.0), (3.0, 1.0, 0.5), (4.0, 0.5, 1.0)]
    """
    label = _positive(positive)
    truth_col = normalize_column(y_true, "y_true")
    score_col = normalize_column(scores, "scores")
    if len(truth_col) != len(score_col):
        raise MetricError(
            f"the label arrays differ in length (y_true has {len(truth_col)}, scores has "
            f"{len(score_col)} rows)"
        )
    if not score_col.is_numeric:
        raise MetricError("scores must be numbers")
    keep = (truth_col.codes >= 0) & (score_col.codes >= 0)
    score_values = np.array([*score_col.values, math.nan], dtype=np.float64)
    score = score_values[score_col.codes[keep]]
    pos_code = truth_col.values.index(label) if label in truth_col.values else -2
    truth = truth_col.codes[keep] == pos_code
    n = int(score.size)
    if n == 0:
        raise MetricError("no comparable rows: every row of y_true and scores has a missing value")
    n_pos = int(np.count_nonzero(truth))
    n_neg = n - n_pos
    if n_pos == 0 or n_neg == 0:
        side = "positive" if n_pos == 0 else "negative"
        raise MetricError(
            f"y_true has no {side} row ({format_label(label)!r} is the positive label); a threshold "
            "sweep needs both"
        )
    order = np.argsort(score, kind="stable")
    sorted_scores = score[order]
    pos_below = np.concatenate(([0], np.cumsum(truth[order])))
    if thresholds is None:
        grid = np.unique(sorted_scores)
    else:
        grid = np.asarray(thresholds, dtype=np.float64).ravel()
    below = np.searchsorted(sorted_scores, grid, side="left")  # rows with score < threshold
    tp = n_pos - pos_below[below]
    fp = (n - below) - tp
    tpr = tp / n_pos
    tnr = (n_neg - fp) / n_neg
    ba = (tpr + tnr) / 2.0
    counts = [n] * len(grid)
    columns = (grid.tolist(), ba.tolist(), tpr.tolist(), tnr.tolist(), counts)
    return list(map(SweepPoint._make, zip(*columns, strict=True)))


def best_threshold(points: Sequence[SweepPoint]) -> SweepPoint:
    """The sweep point with the highest balanced accuracy (the lowest threshold among ties).

    Raises ``MetricError`` for an empty sweep.

    >>> best_threshold(threshold_sweep([1, 1, 0, 0], [4, 3, 3, 1], positive=1)).threshold
    3.0
    """
    if not points:
        raise MetricError("best_threshold needs at least one sweep point")
    return max(points, key=lambda p: (p.balanced_accuracy, -p.threshold))
