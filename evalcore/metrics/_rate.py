"""The rate people would give a binary criterion on items only the judge labelled, with an interval.

Three estimates side by side, each with a two-sided interval:

- **labelled only** (:func:`labelled_rate`): the humans' share of the positive label on the labelled
  items, with the normal (Wald) interval. It ignores the judge, so it is the baseline the others must
  beat.
- **Rogan-Gladen** (:func:`~evalcore.metrics.corrected_pass_rate`): the judge's share on the
  unlabelled items corrected by its TPR and TNR on the labelled ones, with a bootstrap interval.
- **prediction-powered inference with PPI++ power tuning** (:func:`ppi_rate`, after Angelopoulos,
  Duchi and Zrnic, 2023): ``theta = lam * mean(f_unlabelled) + mean(y - lam * f)`` over the labelled
  items, where ``y`` is 1 when the humans gave the positive label and ``f`` is 1 when the judge did.
  ``lam = 1`` is plain PPI: the judge's rate plus the mean error it makes on labelled items. The tuned
  ``lam = Cov(y, f) / ((1 + n / N) * Var(f))``, clipped to [0, 1], is the one that makes the variance
  smallest, so the estimate is never worse than the labelled one for large samples (``lam = 0`` is the
  labelled mean). The variance is ``lam**2 * Var(f_unlabelled) / N + Var(y - lam * f) / n`` and the
  interval is normal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

from evalcore.errors import MetricError, UndefinedMetricError
from evalcore.labels import normalize_label
from evalcore.metrics._binary import corrected_pass_rate
from evalcore.metrics._encode import FloatArray, LabelArray, normalize_column

__all__ = ["RateEstimate", "RateEstimates", "estimate_rate", "labelled_rate", "ppi_rate"]


@dataclass(frozen=True)
class RateEstimate:
    """One estimate of the positive rate: ``rate`` with its ``ci`` (``confidence``), how many
    labelled and unlabelled items it used, and for PPI the ``lam`` it used."""

    method: str
    rate: float
    ci: tuple[float, float]
    n_labelled: int
    n_unlabelled: int
    confidence: float = 0.95
    lam: float | None = None

    @property
    def width(self) -> float:
        return self.ci[1] - self.ci[0]

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "rate": _json(self.rate),
            "ci": [_json(self.ci[0]), _json(self.ci[1])],
            "width": _json(self.width),
            "n_labelled": self.n_labelled,
            "n_unlabelled": self.n_unlabelled,
            "confidence": self.confidence,
            "lam": None if self.lam is None else _json(self.lam),
        }


@dataclass(frozen=True)
class RateEstimates:
    """The three estimates of :func:`estimate_rate`; ``rogan_gladen`` is ``None`` when the judge is
    no better than chance on the labelled items (``notes`` says why)."""

    positive: str
    labelled: RateEstimate
    ppi: RateEstimate
    rogan_gladen: RateEstimate | None
    judge_rate: float
    notes: tuple[str, ...] = field(default=())

    def estimates(self) -> list[RateEstimate]:
        """The estimates in display order: baseline first."""
        out = [self.labelled]
        if self.rogan_gladen is not None:
            out.append(self.rogan_gladen)
        out.append(self.ppi)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "positive": self.positive,
            "judge_rate": _json(self.judge_rate),
            "labelled": self.labelled.to_dict(),
            "rogan_gladen": None if self.rogan_gladen is None else self.rogan_gladen.to_dict(),
            "ppi": self.ppi.to_dict(),
            "notes": list(self.notes),
        }


def _json(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise MetricError(f"confidence must be strictly between 0 and 1 (got {confidence!r})")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def _indicator(values: LabelArray, positive: object, name: str) -> FloatArray:
    """1.0 where the label is ``positive``, 0.0 at another label, NaN where missing."""
    label = normalize_label(positive)
    if label is None:
        raise MetricError(f"positive must be a label, not a missing value ({positive!r})")
    column = normalize_column(values, name)
    hit = np.array([v == label for v in column.values] + [False], dtype=np.float64)
    out = hit[column.codes]  # code -1 picks the last slot
    out[column.codes < 0] = np.nan
    return out


def _interval(centre: float, variance: float, z: float) -> tuple[float, float]:
    half = z * math.sqrt(max(variance, 0.0))
    return max(0.0, centre - half), min(1.0, centre + half)


def labelled_rate(
    y_human: LabelArray, *, positive: object, confidence: float = 0.95
) -> RateEstimate:
    """The humans' share of ``positive`` over the items they labelled, with the normal interval
    ``p +/- z * sqrt(p * (1 - p) / n)`` (clipped to [0, 1]). Missing labels are dropped.

    >>> r = labelled_rate(["pass", "pass", "pass", "fail"], positive="pass")
    >>> r.rate, [round(x, 3) for x in r.ci]  # 0.75 +/- 1.96 * sqrt(0.75 * 0.25 / 4)
    (0.75, [0.326, 1.0])
    """
    z = _z(confidence)
    y = _indicator(y_human, positive, "y_human")
    y = y[~np.isnan(y)]
    if y.size == 0:
        raise MetricError("y_human has no label (every value is missing)")
    p = float(y.mean())
    return RateEstimate(
        "labelled only", p, _interval(p, p * (1.0 - p) / y.size, z), int(y.size), 0, confidence
    )


def ppi_rate(
    y_human: LabelArray,
    y_judge: LabelArray,
    unlabelled_judge: LabelArray,
    *,
    positive: object,
    confidence: float = 0.95,
    lam: float | None = None,
) -> RateEstimate:
    """Prediction-powered estimate of the humans' rate of ``positive`` (PPI++; module docstring).

    ``y_human`` and ``y_judge`` are the labelled items (rows where either is missing are dropped),
    ``unlabelled_judge`` the judge's labels on the items no person labelled (missing dropped).
    ``lam=None`` tunes lambda (PPI++); a number fixes it (1 is plain PPI, 0 the labelled mean).
    Raises ``MetricError`` when a set has fewer than 2 usable rows.

    >>> r = ppi_rate([1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0], positive=1, lam=1.0)
    >>> r.rate  # mean(f~) 0.5 + mean(y - f) = 0.5 + 1/4
    0.75
    """
    z = _z(confidence)
    y = _indicator(y_human, positive, "y_human")
    f = _indicator(y_judge, positive, "y_judge")
    if y.shape != f.shape:
        raise MetricError(f"y_human has {y.size} labels and y_judge {f.size}: they must align")
    both = ~np.isnan(y) & ~np.isnan(f)
    y, f = y[both], f[both]
    g = _indicator(unlabelled_judge, positive, "unlabelled_judge")
    g = g[~np.isnan(g)]
    n, big_n = int(y.size), int(g.size)
    if n < 2 or big_n < 2:
        raise MetricError(
            f"PPI needs at least 2 labelled items with a judge label and 2 unlabelled judge labels "
            f"(got {n} and {big_n})"
        )
    if lam is None:
        var_f = float(np.var(np.concatenate([f, g]), ddof=1))
        cov = float(np.cov(y, f, ddof=1)[0, 1])
        lam = 0.0 if var_f == 0.0 else min(1.0, max(0.0, cov / ((1.0 + n / big_n) * var_f)))
    elif not (math.isfinite(lam) and 0.0 <= lam <= 1.0):
        raise MetricError(f"lam must be between 0 and 1 (got {lam!r})")
    rectifier = y - lam * f
    rate = float(lam * g.mean() + rectifier.mean())
    variance = lam**2 * float(np.var(g, ddof=1)) / big_n + float(np.var(rectifier, ddof=1)) / n
    return RateEstimate(
        "PPI++", rate, _interval(rate, variance, z), n, big_n, confidence, float(lam)
    )


def estimate_rate(
    y_human: LabelArray,
    y_judge: LabelArray,
    unlabelled_judge: LabelArray,
    *,
    positive: object,
    confidence: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> RateEstimates:
    """The humans' rate of ``positive`` on unlabelled items by three methods side by side: the
    labelled items alone (the baseline), Rogan-Gladen and PPI++ (module docstring).

    >>> r = estimate_rate([1] * 6 + [0] * 4, [1] * 5 + [0] * 5, [1] * 50 + [0] * 50, positive=1,
    ...     n_boot=0)
    >>> r.labelled.rate, r.judge_rate, round(r.ppi.rate, 3)
    (0.6, 0.5, 0.6)
    """
    labelled = labelled_rate(y_human, positive=positive, confidence=confidence)
    ppi = ppi_rate(y_human, y_judge, unlabelled_judge, positive=positive, confidence=confidence)
    g = _indicator(unlabelled_judge, positive, "unlabelled_judge")
    judge_rate = float(np.nanmean(g))
    notes: list[str] = []
    rogan = None
    try:
        corrected = corrected_pass_rate(
            unlabelled_judge,
            y_human,
            y_judge,
            positive=positive,
            n_boot=n_boot,
            confidence=confidence,
            seed=seed,
        )
        ci = corrected.ci if corrected.ci is not None else (math.nan, math.nan)
        rogan = RateEstimate(
            "Rogan-Gladen",
            corrected.theta,
            ci,
            corrected.n_labelled,
            corrected.n_unlabelled,
            confidence,
        )
    except UndefinedMetricError as exc:
        notes.append(f"Rogan-Gladen: {exc}")
    shown = normalize_label(positive)
    return RateEstimates(
        positive=str(shown if not isinstance(shown, float) else f"{shown:g}"),
        labelled=labelled,
        ppi=ppi,
        rogan_gladen=rogan,
        judge_rate=judge_rate,
        notes=tuple(notes),
    )
