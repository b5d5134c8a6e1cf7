"""Is the judge's confidence calibrated, and where can it be trusted without a person?

A verdict's *confidence* is the probability the judge gives to the label it chose (from the
endpoint's log-probabilities, the share of samples, or the share of jury members). These functions
take the humans' labels, the judge's labels and the judge's confidences (``y_true, y_pred, y_conf``,
aligned arrays; keyword-only options after ``*``) and measure them against one event: the judge
*agrees* with the humans on an item when its label is the humans' label.

- :func:`expected_calibration_error` (ECE, Naeini et al. 2015; Guo et al. 2017), top-label, over
  ``B`` equal-width bins; :func:`reliability_bins` gives the bins behind it (the reliability diagram);
- :func:`brier_score_loss` (Brier 1950) of the confidence against agreement, and
  :func:`multiclass_brier_score_loss` over a probability for every label;
- :func:`fit_recalibration` (-> :class:`Recalibration`): isotonic regression (Zadrozny & Elkan
  2002) or temperature scaling (Guo et al. 2017), fitted on one part and applied to another;
- :func:`selective_threshold` (-> :class:`SelectiveThreshold`): "trust or escalate" (Jung et al.
  2024): the lowest confidence threshold whose agreement clears a target ``α`` with risk ``δ``, by
  fixed-sequence testing with one-sided Clopper–Pearson bounds (Learn-then-Test, Angelopoulos et
  al. 2021); :func:`selective_outcome` reads a threshold on other items and :func:`coverage_curve`
  gives coverage against agreement at every threshold.

Missing values: rows where either label is missing (the rules of :mod:`evalcore.metrics`) or the
confidence is missing (None, NaN, ``""``) are left out of ECE, Brier and the bins; a confidence
outside [0, 1] is refused with its position. The selective functions count a row with a human label
but no verdict or no confidence as an item the judge does not decide (it goes to people).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt
import pandas as pd

from evalcore.errors import MetricError
from evalcore.labels import Label
from evalcore.metrics._encode import (
    FloatArray,
    IntArray,
    LabelArray,
    LabelList,
    encode_columns,
    normalize_column,
)
from evalcore.metrics._proportion import clopper_pearson_lower_bounds, wilson_interval

__all__ = [
    "RECALIBRATION_METHODS",
    "CoverageCurve",
    "Recalibration",
    "Reliability",
    "SelectiveOutcome",
    "SelectiveThreshold",
    "ThresholdCandidate",
    "brier_score_loss",
    "coverage_curve",
    "expected_calibration_error",
    "fit_recalibration",
    "multiclass_brier_score_loss",
    "reliability_bins",
    "selective_outcome",
    "selective_threshold",
]

#: What a confidence array may be: a list, tuple, NumPy array or pandas Series of numbers in [0, 1]
#: (None, NaN and ``""`` are missing).
ConfidenceArray: TypeAlias = "Sequence[Any] | npt.NDArray[Any] | pd.Series"

#: The recalibration methods :func:`fit_recalibration` knows; the first is the default.
RECALIBRATION_METHODS: tuple[str, ...] = ("isotonic", "temperature")

#: The fewest dev items a threshold must decide before it is tested (a setting of the procedure).
MIN_DECIDED = 30


# --- inputs -----------------------------------------------------------------------------------------


def confidence_values(values: ConfidenceArray, name: str = "y_conf") -> FloatArray:
    """A confidence array as floats, NaN where missing; a value outside [0, 1] (or a word) raises
    :class:`~evalcore.errors.MetricError` naming its 0-based position.

    >>> confidence_values([0.5, None, "", 1]).tolist()
    [0.5, nan, nan, 1.0]
    """
    if isinstance(values, pd.DataFrame):
        raise MetricError(f"{name} must be one column of confidences, not a table")
    if isinstance(values, str | bytes):
        raise MetricError(f"{name} must be an array of confidences, not a single string")
    if isinstance(values, pd.Series):
        array = values.to_numpy()
    elif isinstance(values, np.ndarray):
        array = values
    else:
        items = list(values)
        try:  # plain numbers (None reads as NaN): the fast path
            array = np.asarray(items, dtype=np.float64)
        except (TypeError, ValueError):
            array = np.empty(len(items), dtype=object)
            array[:] = items
    if array.ndim != 1:
        raise MetricError(f"{name} must be one-dimensional (got shape {array.shape})")
    if array.dtype.kind in "iuf" or array.dtype.kind == "b":
        numbers = array.astype(np.float64)
    else:
        raw = pd.Series(array, dtype=object)
        blank = raw.map(lambda v: isinstance(v, str) and not v.strip()).to_numpy(dtype=bool)
        missing = raw.isna().to_numpy() | blank
        parsed = pd.to_numeric(raw.where(~missing, None), errors="coerce")
        numbers = parsed.to_numpy(dtype=np.float64, na_value=np.nan)
        words = np.flatnonzero(np.isnan(numbers) & ~missing)
        if words.size:
            at = int(words[0])
            cell = array[at].item() if isinstance(array[at], np.generic) else array[at]
            raise MetricError(
                f"{name} at position {at} is {cell!r}, not a number; a confidence is a "
                "probability between 0 and 1"
            )
    outside = np.flatnonzero(~np.isnan(numbers) & ~((numbers >= 0.0) & (numbers <= 1.0)))
    if outside.size:
        at = int(outside[0])
        raise MetricError(
            f"{name} at position {at} is {float(numbers[at])!r}; a confidence is a probability between "
            f"0 and 1 ({outside.size} value(s) outside)"
        )
    return np.asarray(numbers, dtype=np.float64)


@dataclass(frozen=True)
class _Rows:
    """Aligned, coded inputs: ``human`` and ``judge`` codes (-1 missing), confidences (NaN
    missing), and the label axis."""

    labels: list[Label]
    human: IntArray
    judge: IntArray
    conf: FloatArray

    @property
    def scored(self) -> npt.NDArray[np.bool_]:
        """Rows with both labels and a confidence."""
        return (self.human >= 0) & (self.judge >= 0) & ~np.isnan(self.conf)

    @property
    def agree(self) -> npt.NDArray[np.bool_]:
        return np.asarray((self.human == self.judge) & (self.human >= 0), dtype=bool)


def _rows(
    y_true: LabelArray, y_pred: LabelArray, y_conf: ConfidenceArray, labels: LabelList = None
) -> _Rows:
    columns = [normalize_column(y_true, "y_true"), normalize_column(y_pred, "y_pred")]
    conf = confidence_values(y_conf)
    lengths = {len(columns[0]), len(columns[1]), len(conf)}
    if len(lengths) > 1:
        raise MetricError(
            f"the arrays differ in length (y_true has {len(columns[0])}, y_pred has "
            f"{len(columns[1])}, y_conf has {len(conf)} rows)"
        )
    axis, (human, judge) = encode_columns(columns, ("y_true", "y_pred"), labels)
    return _Rows(axis, human, judge, conf)


def _scored(
    y_true: LabelArray, y_pred: LabelArray, y_conf: ConfidenceArray
) -> tuple[npt.NDArray[np.bool_], FloatArray]:
    """(agreement, confidence) of the rows with both labels and a confidence; none raises."""
    rows = _rows(y_true, y_pred, y_conf)
    keep = rows.scored
    if not keep.any():
        raise MetricError(
            f"no row has a human label, a judge label and a confidence (of {len(keep)} rows)"
        )
    return rows.agree[keep], rows.conf[keep]


def _check_bins(n_bins: int) -> int:
    if isinstance(n_bins, bool) or not isinstance(n_bins, int | np.integer) or n_bins < 1:
        raise MetricError(f"n_bins must be a whole number of at least 1 (got {n_bins!r})")
    return int(n_bins)


def bin_index(y_conf: npt.ArrayLike, n_bins: int) -> IntArray:
    """The bin of each confidence: ``min(floor(c * B), B - 1)`` (computed in double precision), so
    bin b holds [b/B, (b+1)/B) and the last bin also holds 1.

    >>> bin_index([0.0, 0.05, 0.1, 0.95, 1.0], 10).tolist()
    [0, 0, 1, 9, 9]
    """
    b = _check_bins(n_bins)
    c = np.asarray(y_conf, dtype=np.float64)
    return np.minimum(np.floor(c * b), b - 1).astype(np.int64)


# --- reliability, ECE and Brier ----------------------------------------------------------------------


@dataclass(frozen=True)
class Reliability:
    """The reliability diagram of a judge's confidence: ``n_bins`` equal-width bins over [0, 1].

    Per bin ``b`` (holding confidences in [b/B, (b+1)/B), the last bin also 1): ``counts[b]`` items,
    their ``mean_confidence[b]`` and their ``agreement[b]`` (share where the judge gave the humans'
    label), with the Wilson interval of that share (``low``/``high`` at ``confidence``); NaN in an
    empty bin. A calibrated judge has agreement close to mean confidence in every bin.
    """

    n_bins: int
    counts: tuple[int, ...]
    n_agree: tuple[int, ...]
    mean_confidence: tuple[float, ...]
    agreement: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    confidence: float = 0.95

    @property
    def n(self) -> int:
        """Items in the bins."""
        return int(sum(self.counts))

    @property
    def edges(self) -> tuple[float, ...]:
        """The ``n_bins + 1`` bin edges, 0 to 1."""
        return tuple(i / self.n_bins for i in range(self.n_bins + 1))

    @property
    def gaps(self) -> tuple[float, ...]:
        """Per bin, mean confidence minus agreement (positive: over-confident); NaN when empty."""
        return tuple(c - a for c, a in zip(self.mean_confidence, self.agreement, strict=True))

    @property
    def ece(self) -> float:
        """The expected calibration error of these bins (see :func:`expected_calibration_error`)."""
        n = self.n
        return float(
            sum(
                count / n * abs(gap)
                for count, gap in zip(self.counts, self.gaps, strict=True)
                if count
            )
        )

    @property
    def mce(self) -> float:
        """The maximum calibration error: the largest ``|agreement - mean confidence|`` of a
        non-empty bin (Naeini et al. 2015)."""
        return max(abs(g) for c, g in zip(self.counts, self.gaps, strict=True) if c)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: one entry per bin (edges, count, mean confidence, agreement, interval)."""
        edges = self.edges
        return {
            "n_bins": self.n_bins,
            "n": self.n,
            "ece": self.ece,
            "mce": self.mce,
            "interval_method": "wilson",
            "confidence": self.confidence,
            "bins": [
                {
                    "low_edge": edges[b],
                    "high_edge": edges[b + 1],
                    "count": self.counts[b],
                    "n_agree": self.n_agree[b],
                    "mean_confidence": _num(self.mean_confidence[b]),
                    "agreement": _num(self.agreement[b]),
                    "agreement_interval": None
                    if self.counts[b] == 0
                    else [self.low[b], self.high[b]],
                }
                for b in range(self.n_bins)
            ],
        }


def _num(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def reliability_bins(
    y_true: LabelArray,
    y_pred: LabelArray,
    y_conf: ConfidenceArray,
    *,
    n_bins: int = 10,
    confidence: float = 0.95,
) -> Reliability:
    """The reliability diagram: per equal-width confidence bin, the count, the mean confidence and
    the agreement with the humans (with its Wilson interval at ``confidence``).

    An item with confidence c is in bin ``min(floor(c * n_bins), n_bins - 1)``. Rows missing a
    label or a confidence are left out; none left raises :class:`~evalcore.errors.MetricError`.

    >>> r = reliability_bins([1, 1, 2, 2], [1, 2, 2, 2], [0.9, 0.8, 0.3, 1.0], n_bins=2)
    >>> r.counts, r.mean_confidence, r.agreement  # bin 0: 0.3 right; bin 1: 0.9 right, 0.8 wrong, 1.0 right
    ((1, 3), (0.3, 0.9), (1.0, 0.6666666666666666))
    """
    b = _check_bins(n_bins)
    agree, conf = _scored(y_true, y_pred, y_conf)
    index = bin_index(conf, b)
    counts = np.bincount(index, minlength=b)
    hits = np.bincount(index, weights=agree.astype(np.float64), minlength=b)
    sums = np.bincount(index, weights=conf, minlength=b)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = sums / counts
        share = hits / counts
    low: list[float] = []
    high: list[float] = []
    for count, hit in zip(counts.tolist(), hits.tolist(), strict=True):
        if count:
            lo, hi = wilson_interval(round(hit), count, confidence=confidence)
        else:
            lo = hi = math.nan
        low.append(lo)
        high.append(hi)
    return Reliability(
        n_bins=b,
        counts=tuple(int(c) for c in counts),
        n_agree=tuple(round(h) for h in hits),
        mean_confidence=tuple(float(x) for x in mean),
        agreement=tuple(float(x) for x in share),
        low=tuple(low),
        high=tuple(high),
        confidence=float(confidence),
    )


def expected_calibration_error(
    y_true: LabelArray, y_pred: LabelArray, y_conf: ConfidenceArray, *, n_bins: int = 10
) -> float:
    """Top-label expected calibration error over ``n_bins`` equal-width bins.

    ``ECE = sum over bins b of (n_b / n) * |agreement_b - mean confidence_b|``, where an item with
    confidence c is in bin ``min(floor(c * B), B - 1)``, ``agreement_b`` is the share of the bin's
    items where the judge gave the humans' label and empty bins add nothing (Naeini et al. 2015;
    Guo et al. 2017). Range 0 (best: in every bin the judge is right as often as it says) to 1.
    Depends on the binning: name ``B`` with the number. Rows missing a label or a confidence are
    left out; none left raises :class:`~evalcore.errors.MetricError`.

    >>> # bin 0: 1 item, |1 - 0.3| = 0.7; bin 1: 3 items, |2/3 - 0.9| = 0.2333; 0.7/4 + 0.2333*3/4
    >>> round(expected_calibration_error([1, 1, 2, 2], [1, 2, 2, 2], [0.9, 0.8, 0.3, 1.0],
    ...     n_bins=2), 4)
    0.35
    """
    return reliability_bins(y_true, y_pred, y_conf, n_bins=n_bins).ece


def brier_score_loss(y_true: LabelArray, y_pred: LabelArray, y_conf: ConfidenceArray) -> float:
    """The Brier score of the judge's confidence against agreement (top-label, Brier 1950).

    ``mean over items of (c - a)**2`` with ``a`` = 1 when the judge gave the humans' label, else 0:
    the Brier score of the forecast "the judge is right with probability c". Range 0 (best) to 1;
    a judge that always says 0.5 scores 0.25. scikit-learn's ``brier_score_loss(a, c)``. Rows
    missing a label or a confidence are left out; none left raises
    :class:`~evalcore.errors.MetricError`.

    >>> round(brier_score_loss([1, 1, 2], [1, 2, 2], [0.9, 0.6, 0.5]), 4)  # (0.01 + 0.36 + 0.25) / 3
    0.2067
    """
    agree, conf = _scored(y_true, y_pred, y_conf)
    return float(np.mean((conf - agree.astype(np.float64)) ** 2))


def multiclass_brier_score_loss(
    y_true: LabelArray, y_proba: npt.ArrayLike, *, labels: Sequence[Label]
) -> float:
    """The multiclass Brier score (Brier 1950): ``mean over items of sum over labels k of
    (p_k - [y = k])**2``, with ``y_proba[i, k]`` the judge's probability of ``labels[k]``.

    Range 0 (best) to 2. This is Brier's original sum over classes (scikit-learn's
    ``brier_score_loss`` of a probability matrix); on two labels it is twice the binary score.
    Rows with a missing human label or any missing probability are left out; every row must sum to
    1 (within 1e-6). ``labels`` (required) names the columns and must hold every human label.

    >>> # item 1: 0.2**2 + 0.2**2 = 0.08; item 2: 0.5**2 + 0.5**2 = 0.5; mean 0.29
    >>> round(multiclass_brier_score_loss(["a", "b"], [[0.8, 0.2], [0.5, 0.5]], labels=["a", "b"]), 4)
    0.29
    """
    proba = np.asarray(y_proba, dtype=np.float64)
    axis, (codes,) = encode_columns([normalize_column(y_true, "y_true")], ("y_true",), labels)
    if proba.ndim != 2 or proba.shape != (len(codes), len(axis)):
        raise MetricError(
            f"y_proba must have one row per item and one column per label: shape "
            f"({len(codes)}, {len(axis)}), got {proba.shape}"
        )
    keep = (codes >= 0) & ~np.isnan(proba).any(axis=1)
    if not keep.any():
        raise MetricError("no row has both a human label and the judge's probabilities")
    p, y = proba[keep], codes[keep]
    if ((p < 0) | (p > 1)).any():
        raise MetricError("y_proba holds values outside [0, 1]")
    off = np.flatnonzero(np.abs(p.sum(axis=1) - 1.0) > 1e-6)
    if off.size:
        raise MetricError(
            f"the probabilities of {off.size} row(s) do not sum to 1 (the first sums to "
            f"{p[off[0]].sum():.6g})"
        )
    onehot = np.zeros_like(p)
    onehot[np.arange(len(y)), y] = 1.0
    return float(np.mean(((p - onehot) ** 2).sum(axis=1)))


# --- recalibration ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recalibration:
    """A map from a judge's confidence to a recalibrated one, fitted on some items' agreement.

    ``method`` ``"isotonic"``: the non-decreasing step-and-ramp function of scikit-learn's
    ``IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip")`` fitted to agreement (0/1)
    against confidence; ``knots_x``/``knots_y`` are its thresholds, linearly interpolated between
    and held flat beyond them (Zadrozny & Elkan 2002). ``"temperature"``: ``c' = 1 / (1 + ((1 - c)
    / c) ** (1 / T))``, the logistic of ``logit(c) / T``, with the one ``temperature`` T that
    minimises the log-loss of agreement (Guo et al. 2017; T > 1 softens an over-confident judge).
    """

    method: Literal["isotonic", "temperature"]
    n: int
    temperature: float | None = None
    knots_x: tuple[float, ...] = ()
    knots_y: tuple[float, ...] = ()

    def apply(self, y_conf: ConfidenceArray) -> FloatArray:
        """The recalibrated confidences (NaN stays NaN).

        >>> Recalibration("temperature", n=10, temperature=2.0).apply([0.9, 0.5]).round(4).tolist()
        [0.75, 0.5]
        """
        c = confidence_values(y_conf)
        if self.method == "temperature":
            t = float(self.temperature or 1.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                odds = np.where(c > 0, (1.0 - c) / c, np.inf)
                out = 1.0 / (1.0 + odds ** (1.0 / t))
            return np.asarray(np.where(np.isnan(c), np.nan, out), dtype=np.float64)
        x, y = np.asarray(self.knots_x), np.asarray(self.knots_y)
        out = np.interp(c, x, y)
        return np.asarray(np.where(np.isnan(c), np.nan, out), dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "n": self.n,
            "temperature": self.temperature,
            "knots_x": list(self.knots_x),
            "knots_y": list(self.knots_y),
        }


def _log_loss(agree: FloatArray, p: FloatArray) -> float:
    p = np.clip(p, 1e-12, 1.0 - 1e-12)
    return float(-np.mean(agree * np.log(p) + (1.0 - agree) * np.log1p(-p)))


def fit_recalibration(
    y_true: LabelArray,
    y_pred: LabelArray,
    y_conf: ConfidenceArray,
    *,
    method: str = "isotonic",
) -> Recalibration:
    """Fit a recalibration of the confidence to the agreement observed on these items.

    ``method="isotonic"`` (the default) fits scikit-learn's ``IsotonicRegression`` to agreement
    against confidence: it needs no shape, and it maps each of the few distinct confidences a
    sample- or jury-based judge gives (including exact 0 and 1) to the agreement seen there, but it
    can overfit a small set. ``method="temperature"`` fits one number T by a bounded 1-D search
    (scipy's ``minimize_scalar`` over log T in [log 0.05, log 20]) minimising the log-loss; it
    keeps the order of the confidences and needs fewer items, but cannot move a confidence of
    exactly 0 or 1. Fit on one part of the items (dev) and judge on another (test). Rows missing a
    label or a confidence are left out; none left raises :class:`~evalcore.errors.MetricError`.

    >>> r = fit_recalibration([1, 1, 1, 1], [1, 2, 1, 2], [0.9, 0.9, 0.6, 0.6])
    >>> r.apply([0.6, 0.9, 0.75]).tolist()  # half right at 0.6 and at 0.9
    [0.5, 0.5, 0.5]
    """
    if method not in RECALIBRATION_METHODS:
        raise MetricError(
            f"unknown recalibration {method!r}; use one of {', '.join(RECALIBRATION_METHODS)}"
        )
    agree_bool, conf = _scored(y_true, y_pred, y_conf)
    agree = agree_bool.astype(np.float64)
    if method == "isotonic":
        from sklearn.isotonic import IsotonicRegression

        model = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
        model.fit(conf, agree)
        return Recalibration(
            "isotonic",
            n=len(conf),
            knots_x=tuple(float(x) for x in model.X_thresholds_),
            knots_y=tuple(float(y) for y in model.y_thresholds_),
        )
    from scipy.optimize import minimize_scalar

    def loss(log_t: float) -> float:
        candidate = Recalibration("temperature", n=len(conf), temperature=math.exp(log_t))
        return _log_loss(agree, candidate.apply(conf))

    found = minimize_scalar(
        loss, bounds=(math.log(0.05), math.log(20.0)), method="bounded", options={"xatol": 1e-6}
    )
    return Recalibration("temperature", n=len(conf), temperature=float(math.exp(found.x)))


# --- trust or escalate -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ThresholdCandidate:
    """One threshold the selective procedure tried, from the highest down.

    ``n_decided`` items have a confidence at or above it, ``n_agree`` of them the humans' label;
    ``lower_bound`` is the one-sided Clopper–Pearson lower bound of that agreement at level
    ``1 - risk`` (``None`` when skipped). ``outcome`` is ``"passed"`` (bound ≥ ``target``),
    ``"failed"`` (the procedure stops here) or ``"skipped"`` (fewer than ``min_decided`` items:
    not tested, not failed); :attr:`reason` says it in words.
    """

    threshold: float
    n_decided: int
    n_agree: int
    lower_bound: float | None
    outcome: Literal["passed", "failed", "skipped"]
    target: float
    risk: float
    min_decided: int

    @property
    def agreement(self) -> float:
        return self.n_agree / self.n_decided

    @property
    def reason(self) -> str:
        """Why the candidate passed, failed or was skipped."""
        if self.lower_bound is None:
            return f"decides {self.n_decided} items, fewer than {self.min_decided}"
        verdict = "at least" if self.outcome == "passed" else "below"
        return (
            f"{self.n_agree} of {self.n_decided} agree; the {1 - self.risk:.0%} lower bound "
            f"{self.lower_bound:.4f} is {verdict} the target {self.target:g}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "n_decided": self.n_decided,
            "n_agree": self.n_agree,
            "agreement": self.agreement,
            "lower_bound": self.lower_bound,
            "outcome": self.outcome,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class SelectiveThreshold:
    """The result of :func:`selective_threshold` on the items it was given (the dev part).

    ``threshold`` is the last candidate that passed (``None``: no candidate passed, the judge
    decides nothing and every item goes to people); ``candidates`` lists every candidate tried, in
    order, with why it passed, failed or was skipped. ``n`` is the items with a human label,
    ``n_scored`` those of them with a verdict and a confidence. ``n_decided``, ``coverage``,
    ``agreement`` and ``lower_bound`` describe the items at or above the threshold.
    """

    target: float
    risk: float
    min_decided: int
    n: int
    n_scored: int
    threshold: float | None
    candidates: tuple[ThresholdCandidate, ...]

    @property
    def chosen(self) -> ThresholdCandidate | None:
        """The candidate of the threshold (the last one that passed)."""
        passed = [c for c in self.candidates if c.outcome == "passed"]
        return passed[-1] if passed else None

    @property
    def n_decided(self) -> int:
        chosen = self.chosen
        return 0 if chosen is None else chosen.n_decided

    @property
    def coverage(self) -> float:
        """Share of the items (with a human label) the judge decides at the threshold."""
        return self.n_decided / self.n if self.n else 0.0

    @property
    def agreement(self) -> float:
        """Agreement among the decided items (NaN when none is decided)."""
        chosen = self.chosen
        return math.nan if chosen is None else chosen.agreement

    @property
    def lower_bound(self) -> float | None:
        chosen = self.chosen
        return None if chosen is None else chosen.lower_bound

    def guarantee(self) -> str:
        """What the threshold promises, and what it does not, in words."""
        level = f"{1 - self.risk:.0%}"
        target = f"{self.target:.0%}"
        if self.threshold is None:
            return (
                f"No threshold could be trusted: on {self.n} dev items no confidence level decides "
                f"at least {self.min_decided} items with an agreement whose {level} lower bound "
                f"reaches {target}. The judge decides nothing; every item goes to people."
            )
        return (
            f"With probability at least {level} over the draw of the {self.n} dev items, the "
            f"judge agrees with people on at least {target} of the items whose confidence is "
            f"{self.threshold:.4g} or more, provided future items are drawn like the dev items "
            "(fixed-sequence testing with one-sided Clopper-Pearson bounds)."
        )

    @staticmethod
    def not_guaranteed() -> str:
        """What no threshold guarantees."""
        return (
            "Not guaranteed: the agreement within any one slice or batch of items; items unlike "
            "the dev items (another source, template or model); that the human labels themselves "
            "are right; and the coverage, which is an estimate. With probability up to the risk, "
            "the agreement above the threshold is below the target."
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "target_agreement": self.target,
            "risk": self.risk,
            "min_decided": self.min_decided,
            "n": self.n,
            "n_scored": self.n_scored,
            "threshold": self.threshold,
            "n_decided": self.n_decided,
            "coverage": self.coverage,
            "agreement": _num(self.agreement),
            "lower_bound": self.lower_bound,
            "bound_method": "clopper-pearson one-sided",
            "candidates": [c.to_dict() for c in self.candidates],
            "guarantee": self.guarantee(),
            "not_guaranteed": self.not_guaranteed(),
        }


def _check_level(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise MetricError(f"{name} must be strictly between 0 and 1 (got {value!r})")
    return float(value)


def _by_threshold(rows: _Rows) -> tuple[FloatArray, IntArray, IntArray]:
    """Distinct confidences of the scored rows, highest first, with the number of scored rows at
    or above each and how many of those agree."""
    keep = rows.scored
    conf = rows.conf[keep]
    agree = rows.agree[keep].astype(np.int64)
    order = np.argsort(-conf, kind="stable")
    conf, agree = conf[order], agree[order]
    n_at = np.arange(1, len(conf) + 1, dtype=np.int64)
    k_at = np.cumsum(agree)
    # the last position of each distinct confidence: everything at or above it is decided
    last = np.flatnonzero(np.append(conf[1:] != conf[:-1], True))
    return conf[last], n_at[last], k_at[last]


#: Candidates whose bounds are computed at once (the procedure usually stops long before).
_BLOCK = 256


def selective_threshold(
    y_true: LabelArray,
    y_pred: LabelArray,
    y_conf: ConfidenceArray,
    *,
    target: float,
    risk: float,
    min_decided: int = MIN_DECIDED,
) -> SelectiveThreshold:
    """The confidence threshold above which the judge can decide alone: "trust or escalate".

    On these items (the dev part): the candidates are the distinct confidences seen, tried from the
    highest down. A candidate ``t`` that would decide fewer than ``min_decided`` items (those with
    confidence ≥ t) is skipped, not failed. Otherwise it passes when the one-sided Clopper–Pearson
    lower bound at level ``1 - risk`` of the agreement among the items with confidence ≥ t is at
    least ``target``; the first failure stops the procedure. The threshold is the last candidate
    that passed; ``None`` when none did (the judge decides nothing).

    Testing a fixed sequence of hypotheses in order, each at level ``risk`` and stopping at the
    first acceptance of the null, controls the chance of any false pass at ``risk`` without a
    multiplicity correction (Learn-then-Test, Angelopoulos et al. 2021; used for judges by Jung et
    al. 2024). Rows without a human label are left out; rows with a human label but no verdict or
    no confidence count in ``n`` and are never decided.

    >>> s = selective_threshold([1] * 40, [1] * 38 + [2] * 2, [0.9] * 38 + [0.5] * 2,
    ...     target=0.9, risk=0.05)
    >>> s.threshold, [c.outcome for c in s.candidates], s.n_decided
    (0.9, ['passed', 'failed'], 38)
    """
    target = _check_level(target, "target")
    risk = _check_level(risk, "risk")
    if isinstance(min_decided, bool) or not isinstance(min_decided, int) or min_decided < 1:
        raise MetricError(f"min_decided must be a whole number of at least 1 (got {min_decided!r})")
    rows = _rows(y_true, y_pred, y_conf)
    n = int((rows.human >= 0).sum())
    thresholds, n_at, k_at = _by_threshold(rows)
    candidates: list[ThresholdCandidate] = []
    tested = np.flatnonzero(n_at >= min_decided)
    first_tested = int(tested[0]) if tested.size else len(thresholds)
    for i in range(first_tested):
        candidates.append(
            ThresholdCandidate(
                float(thresholds[i]),
                int(n_at[i]),
                int(k_at[i]),
                None,
                "skipped",
                target,
                risk,
                int(min_decided),
            )
        )
    threshold: float | None = None
    for start in range(0, tested.size, _BLOCK):
        block = tested[start : start + _BLOCK]
        bounds = clopper_pearson_lower_bounds(k_at[block], n_at[block], confidence=1.0 - risk)
        failed = np.flatnonzero(bounds < target)
        end = int(failed[0]) + 1 if failed.size else len(block)
        for i, bound in zip(block[:end].tolist(), bounds[:end].tolist(), strict=True):
            candidates.append(
                ThresholdCandidate(
                    float(thresholds[i]),
                    int(n_at[i]),
                    int(k_at[i]),
                    float(bound),
                    "passed" if bound >= target else "failed",
                    target,
                    risk,
                    int(min_decided),
                )
            )
        passed = end - 1 if failed.size else end
        if passed:
            threshold = float(thresholds[block[passed - 1]])
        if failed.size:
            break
    return SelectiveThreshold(
        target=target,
        risk=risk,
        min_decided=int(min_decided),
        n=n,
        n_scored=int(rows.scored.sum()),
        threshold=threshold,
        candidates=tuple(candidates),
    )


@dataclass(frozen=True)
class SelectiveOutcome:
    """A threshold read on other items (the test part): of ``n`` items with a human label the
    judge decides ``n_decided`` (confidence ≥ ``threshold``), ``coverage`` = n_decided / n, and
    agrees with the humans on ``n_agree`` of them; ``interval`` is the Wilson interval of that
    agreement at ``confidence`` (``None`` when nothing is decided)."""

    threshold: float | None
    n: int
    n_decided: int
    n_agree: int
    interval: tuple[float, float] | None
    confidence: float = 0.95

    @property
    def coverage(self) -> float:
        return self.n_decided / self.n if self.n else 0.0

    @property
    def agreement(self) -> float:
        return self.n_agree / self.n_decided if self.n_decided else math.nan

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "n": self.n,
            "n_decided": self.n_decided,
            "n_escalated": self.n - self.n_decided,
            "coverage": self.coverage,
            "n_agree": self.n_agree,
            "agreement": _num(self.agreement),
            "interval": None if self.interval is None else list(self.interval),
            "interval_method": "wilson",
            "confidence": self.confidence,
        }


def selective_outcome(
    y_true: LabelArray,
    y_pred: LabelArray,
    y_conf: ConfidenceArray,
    *,
    threshold: float | None,
    confidence: float = 0.95,
) -> SelectiveOutcome:
    """Coverage and agreement of a threshold on these items (rows with a human label): the judge
    decides the items with a verdict and a confidence ≥ ``threshold`` (none when ``threshold`` is
    ``None``); the agreement among them gets a Wilson interval at ``confidence``.

    >>> o = selective_outcome([1, 1, 2, 2], [1, 2, 2, 1], [0.9, 0.8, 0.95, 0.2], threshold=0.85)
    >>> o.n_decided, o.coverage, o.agreement  # 0.9 and 0.95 decided, both right
    (2, 0.5, 1.0)
    """
    rows = _rows(y_true, y_pred, y_conf)
    n = int((rows.human >= 0).sum())
    if threshold is None:
        decided = np.zeros(len(rows.conf), dtype=bool)
    else:
        decided = rows.scored & (np.nan_to_num(rows.conf, nan=-1.0) >= threshold)
    n_decided = int(decided.sum())
    n_agree = int((decided & rows.agree).sum())
    interval = wilson_interval(n_agree, n_decided, confidence=confidence) if n_decided else None
    return SelectiveOutcome(threshold, n, n_decided, n_agree, interval, float(confidence))


@dataclass(frozen=True)
class CoverageCurve:
    """Coverage against agreement at every threshold (the distinct confidences, highest first):
    at ``thresholds[i]`` the judge decides ``n_decided[i]`` of ``n`` items (``coverage[i]``) and
    agrees on ``n_agree[i]`` of them (``agreement[i]``, Wilson interval ``low``/``high``)."""

    n: int
    thresholds: tuple[float, ...]
    n_decided: tuple[int, ...]
    n_agree: tuple[int, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    confidence: float = 0.95

    @property
    def coverage(self) -> tuple[float, ...]:
        return tuple(d / self.n for d in self.n_decided) if self.n else ()

    @property
    def agreement(self) -> tuple[float, ...]:
        return tuple(a / d for a, d in zip(self.n_agree, self.n_decided, strict=True))

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "thresholds": list(self.thresholds),
            "n_decided": list(self.n_decided),
            "coverage": list(self.coverage),
            "agreement": list(self.agreement),
            "low": list(self.low),
            "high": list(self.high),
            "interval_method": "wilson",
            "confidence": self.confidence,
        }


def coverage_curve(
    y_true: LabelArray,
    y_pred: LabelArray,
    y_conf: ConfidenceArray,
    *,
    confidence: float = 0.95,
) -> CoverageCurve:
    """Coverage and agreement at every distinct confidence, highest first (the curve a person reads
    to see what each threshold would buy). Coverage is over the rows with a human label; rows
    without a verdict or confidence are never decided.

    >>> c = coverage_curve([1, 1, 2, 2], [1, 2, 2, 1], [0.9, 0.8, 0.9, 0.2])
    >>> c.thresholds, c.coverage, c.agreement  # 0.9: 2 right; 0.8: +1 wrong; 0.2: +1 wrong
    ((0.9, 0.8, 0.2), (0.5, 0.75, 1.0), (1.0, 0.6666666666666666, 0.5))
    """
    rows = _rows(y_true, y_pred, y_conf)
    n = int((rows.human >= 0).sum())
    thresholds, n_at, k_at = _by_threshold(rows)
    low: list[float] = []
    high: list[float] = []
    for k, m in zip(k_at.tolist(), n_at.tolist(), strict=True):
        lo, hi = wilson_interval(k, m, confidence=confidence)
        low.append(lo)
        high.append(hi)
    return CoverageCurve(
        n=n,
        thresholds=tuple(float(t) for t in thresholds),
        n_decided=tuple(int(x) for x in n_at),
        n_agree=tuple(int(x) for x in k_at),
        low=tuple(low),
        high=tuple(high),
        confidence=float(confidence),
    )
