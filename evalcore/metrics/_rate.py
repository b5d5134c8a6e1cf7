"""What people would say about the items only the judge labelled: rates, shares and mean scores.

A few items carry a human label and a judge label (the labelled set, ``n`` items); the rest carry only
the judge's (the unlabelled set, ``N`` items). Every estimate comes with a two-sided interval, and
each names its method (:attr:`RateEstimate.interval`):

- **labelled only** (:func:`labelled_rate`, :func:`labelled_mean`): the humans' own figure on the
  labelled items. A share gets the Wilson score interval (statsmodels'
  ``proportion_confint(method="wilson")``), which never collapses to a point at 0 or n successes; a
  mean score gets the normal interval ``mean ± z · sd / sqrt(n)`` with the population standard
  deviation (ppi-python's ``classical_mean_ci``). It ignores the judge: the baseline to beat.
- **Rogan-Gladen** (:func:`~evalcore.metrics.corrected_pass_rate`, binary criteria): the judge's
  rate on the unlabelled items corrected by its TPR and TNR on the labelled ones (judgy's point
  estimate), with a percentile bootstrap interval.
- **PPI++** (:func:`ppi_mean`, :func:`ppi_rate`; Angelopoulos, Duchi, Zrnic and Zrnic 2023), computed
  exactly as the paper's package ``ppi-python`` (``ppi_py.ppi_mean_ci`` and
  ``ppi_mean_pointestimate`` with ``lam=None``) computes it: with ``y`` the human value and ``f``
  the judge's on the labelled items and ``g`` the judge's on the unlabelled ones,

  - ``lam = cov(y, f) / ((1 + n / N) · var(f ∪ g))`` clipped to [0, 1], where ``cov`` divides by
    ``n`` and ``var`` is the sample variance (``n + N − 1``) of the judge's values on both sets;
  - ``theta = lam · mean(g) + mean(y − lam · f)``;
  - ``se² = var₀(lam · g) / N + var₀(y − lam · f) / n`` with population variances (``std()``,
    ddof 0), and the normal interval ``theta ± z · se``.

  evalcore cuts the interval to the possible range (a rate to [0, 1], a score to its scale); inside
  it the numbers are ppi-python's. Two edge cases are said beside the number: when the judge gives
  one value everywhere, ppi-python's ``lam`` is 0/0 (NaN, and so is its estimate) while every ``lam``
  gives the same figure, so evalcore uses ``lam = 0``, the labelled mean; and when ``se`` is 0
  (every labelled item has one human and one judge value, and the judge is constant on the
  unlabelled items) ppi-python's interval is a single point: evalcore keeps it and gives the Wilson
  interval of the labelled items beside it (``fallback_ci``).

The same three are made for a binary criterion's positive rate (:func:`estimate_rate`), for the
mean of an ordinal score and for the share of each label of any scale (:func:`estimate_scores`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

from evalcore.errors import MetricError, UndefinedMetricError
from evalcore.labels import Label, format_label, normalize_label
from evalcore.metrics._binary import corrected_pass_rate
from evalcore.metrics._encode import (
    FloatArray,
    LabelArray,
    LabelList,
    encode_columns,
    normalize_column,
)
from evalcore.metrics._proportion import wilson_interval

__all__ = [
    "RateEstimate",
    "RateEstimates",
    "ScoreEstimates",
    "estimate_rate",
    "estimate_scores",
    "labelled_mean",
    "labelled_rate",
    "ppi_mean",
    "ppi_rate",
]

#: Interval names of :attr:`RateEstimate.interval`.
WILSON = "Wilson score"
NORMAL = "normal (ppi-python)"
BOOTSTRAP = "percentile bootstrap"


@dataclass(frozen=True)
class RateEstimate:
    """One estimate: ``rate`` (a rate, a share or a mean score) with its ``ci`` at ``confidence``,
    how many labelled and unlabelled items it used, the ``lam`` of PPI++, the ``interval`` method,
    a ``note`` when the figure needs one (a degenerate PPI++ interval, a constant judge), and then
    ``fallback_ci``: the Wilson interval of the labelled items, shown beside a PPI++ point."""

    method: str
    rate: float
    ci: tuple[float, float]
    n_labelled: int
    n_unlabelled: int
    confidence: float = 0.95
    lam: float | None = None
    interval: str = ""
    note: str | None = None
    fallback_ci: tuple[float, float] | None = None
    se: float | None = None

    @property
    def width(self) -> float:
        return self.ci[1] - self.ci[0]

    @property
    def degenerate(self) -> bool:
        """Whether the interval is a single point."""
        return self.ci[0] == self.ci[1]

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "rate": _json(self.rate),
            "ci": [_json(self.ci[0]), _json(self.ci[1])],
            "width": _json(self.width),
            "interval": self.interval,
            "se": None if self.se is None else _json(self.se),
            "n_labelled": self.n_labelled,
            "n_unlabelled": self.n_unlabelled,
            "confidence": self.confidence,
            "lam": None if self.lam is None else _json(self.lam),
            "note": self.note,
            "fallback_ci": None
            if self.fallback_ci is None
            else [_json(self.fallback_ci[0]), _json(self.fallback_ci[1])],
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


@dataclass(frozen=True)
class ScoreEstimates:
    """What people would say about the unlabelled items on a scale of more than two labels
    (:func:`estimate_scores`): the ``labels`` of the scale, their ``values`` (the numbers a mean
    uses), the ``mean`` score (labelled only and PPI++; ``None`` on an unordered scale) and each
    label's ``shares`` (label -> labelled-only and PPI++), with the judge's own mean and shares on
    the unlabelled items."""

    labels: tuple[Label, ...]
    values: tuple[float, ...]
    mean: tuple[RateEstimate, RateEstimate] | None
    shares: tuple[tuple[RateEstimate, RateEstimate], ...]
    judge_mean: float | None
    judge_shares: tuple[float, ...]
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "labels": [format_label(x) for x in self.labels],
            "values": list(self.values),
            "mean": None
            if self.mean is None
            else {"labelled": self.mean[0].to_dict(), "ppi": self.mean[1].to_dict()},
            "judge_mean": None if self.judge_mean is None else _json(self.judge_mean),
            "shares": [
                {
                    "label": format_label(label),
                    "judge_share": _json(judge),
                    "labelled": labelled.to_dict(),
                    "ppi": ppi.to_dict(),
                }
                for label, judge, (labelled, ppi) in zip(
                    self.labels, self.judge_shares, self.shares, strict=True
                )
            ],
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


def _clip(ci: tuple[float, float], bounds: tuple[float, float]) -> tuple[float, float]:
    return max(bounds[0], ci[0]), min(bounds[1], ci[1])


def _check_sets(y: FloatArray, f: FloatArray, g: FloatArray) -> tuple[FloatArray, ...]:
    if y.shape != f.shape:
        raise MetricError(f"y_human has {y.size} labels and y_judge {f.size}: they must align")
    both = ~np.isnan(y) & ~np.isnan(f)
    y, f = y[both], f[both]
    g = g[~np.isnan(g)]
    if y.size < 2 or g.size < 2:
        raise MetricError(
            f"PPI needs at least 2 labelled items with a judge label and 2 unlabelled judge labels "
            f"(got {y.size} and {g.size})"
        )
    return y, f, g


def ppi_mean(
    y: Sequence[float] | FloatArray,
    f: Sequence[float] | FloatArray,
    g: Sequence[float] | FloatArray,
    *,
    confidence: float = 0.95,
    lam: float | None = None,
    bounds: tuple[float, float] = (-math.inf, math.inf),
) -> RateEstimate:
    """PPI++ estimate of the mean of ``y`` (numbers; module docstring, ppi-python's conventions).

    ``y`` and ``f`` are the human and judge values of the labelled items (rows where either is NaN
    are dropped), ``g`` the judge's values on the unlabelled items (NaN dropped). ``lam=None`` tunes
    lambda as ppi-python does (clipped to [0, 1]); a number in [0, 1] fixes it (1 is plain PPI, 0
    the labelled mean). The interval is cut to ``bounds``. Raises ``MetricError`` with fewer than 2
    usable items in either set.

    >>> r = ppi_mean([1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0], lam=1.0)
    >>> r.rate, round(r.se, 6)  # 0.5 + 1/4; sqrt(0.25/4 + 0.1875/4)
    (0.75, 0.330719)
    """
    z = _z(confidence)
    y_, f_, g_ = _check_sets(
        np.asarray(y, dtype=np.float64),
        np.asarray(f, dtype=np.float64),
        np.asarray(g, dtype=np.float64),
    )
    n, big_n = y_.size, g_.size
    note = None
    if lam is None:
        judged = np.concatenate([f_, g_])
        variance = float(np.var(judged, ddof=1))
        if variance == 0.0:
            lam = 0.0
            note = (
                "the judge gives one value on every item, so ppi-python's lambda is 0/0 (it returns "
                "NaN); every lambda gives the same estimate here, and evalcore uses 0 (the labelled "
                "mean)"
            )
        else:
            covariance = float(((y_ - y_.mean()) * (f_ - f_.mean())).sum()) / n
            lam = float(np.clip(covariance / ((1.0 + n / big_n) * variance), 0.0, 1.0))
    elif not (math.isfinite(lam) and 0.0 <= lam <= 1.0):
        raise MetricError(f"lam must be between 0 and 1 (got {lam!r})")
    imputed = lam * g_
    rectifier = y_ - lam * f_
    theta = float(imputed.mean() + rectifier.mean())
    se = math.sqrt(float(imputed.std()) ** 2 / big_n + float(rectifier.std()) ** 2 / n)
    ci = _clip((theta - z * se, theta + z * se), bounds)
    return RateEstimate(
        "PPI++", theta, ci, n, big_n, confidence, float(lam), NORMAL, note, None, se
    )


def _with_fallback(estimate: RateEstimate, y: FloatArray) -> RateEstimate:
    """A PPI++ share whose interval is a point, with the Wilson interval of the labelled items."""
    if not estimate.degenerate:
        return estimate
    kept = y[~np.isnan(y)]
    wilson = wilson_interval(float(kept.sum()), float(kept.size), confidence=estimate.confidence)
    said = (
        f"ppi-python's interval is a single point: every labelled item has one human value and "
        f"one judge value and the judge is constant on the unlabelled items; the labelled items' "
        f"Wilson interval is [{wilson[0]:.3f}, {wilson[1]:.3f}]"
    )
    note = said if estimate.note is None else f"{estimate.note}; {said}"
    return RateEstimate(
        estimate.method,
        estimate.rate,
        estimate.ci,
        estimate.n_labelled,
        estimate.n_unlabelled,
        estimate.confidence,
        estimate.lam,
        estimate.interval,
        note,
        wilson,
        estimate.se,
    )


def labelled_rate(
    y_human: LabelArray, *, positive: object, confidence: float = 0.95
) -> RateEstimate:
    """The humans' share of ``positive`` over the items they labelled, with the Wilson score
    interval (statsmodels' ``proportion_confint(method="wilson")``). Missing labels are dropped.

    >>> r = labelled_rate(["pass"] * 5, positive="pass")
    >>> r.rate, [round(x, 4) for x in r.ci]  # 5 of 5: not the point [1, 1] of a Wald interval
    (1.0, [0.5655, 1.0])
    """
    y = _indicator(y_human, positive, "y_human")
    y = y[~np.isnan(y)]
    if y.size == 0:
        raise MetricError("y_human has no label (every value is missing)")
    p = float(y.mean())
    ci = wilson_interval(float(y.sum()), float(y.size), confidence=confidence)
    return RateEstimate("labelled only", p, ci, int(y.size), 0, confidence, None, WILSON)


def labelled_mean(
    y: Sequence[float] | FloatArray,
    *,
    confidence: float = 0.95,
    bounds: tuple[float, float] = (-math.inf, math.inf),
) -> RateEstimate:
    """The mean of the humans' values ``y`` (NaN dropped) with ppi-python's classical interval
    ``mean ± z · sd / sqrt(n)``, ``sd`` the population standard deviation, cut to ``bounds``.

    >>> r = labelled_mean([1, 2, 3, 4])
    >>> r.rate, round(r.se, 6)  # sd = sqrt(1.25), se = sd / 2
    (2.5, 0.559017)
    """
    z = _z(confidence)
    values = np.asarray(y, dtype=np.float64)
    values = values[~np.isnan(values)]
    if values.size == 0:
        raise MetricError("y_human has no label (every value is missing)")
    mean = float(values.mean())
    se = float(values.std()) / math.sqrt(values.size)
    ci = _clip((mean - z * se, mean + z * se), bounds)
    return RateEstimate(
        "labelled only", mean, ci, int(values.size), 0, confidence, None, NORMAL, se=se
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
    """Prediction-powered estimate of the humans' rate of ``positive`` (PPI++ of the 0/1 indicator,
    :func:`ppi_mean`, interval cut to [0, 1]; a single-point interval gets the labelled items' Wilson
    interval beside it).

    ``y_human`` and ``y_judge`` are the labelled items (rows where either is missing are dropped),
    ``unlabelled_judge`` the judge's labels on the items no person labelled (missing dropped).
    ``lam=None`` tunes lambda (PPI++); a number fixes it (1 is plain PPI, 0 the labelled mean).
    Raises ``MetricError`` when a set has fewer than 2 usable rows.

    >>> r = ppi_rate([1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0], positive=1, lam=1.0)
    >>> r.rate  # mean(f~) 0.5 + mean(y - f) = 0.5 + 1/4
    0.75
    """
    y = _indicator(y_human, positive, "y_human")
    f = _indicator(y_judge, positive, "y_judge")
    g = _indicator(unlabelled_judge, positive, "unlabelled_judge")
    if y.shape != f.shape:
        raise MetricError(f"y_human has {y.size} labels and y_judge {f.size}: they must align")
    found = ppi_mean(y, f, g, confidence=confidence, lam=lam, bounds=(0.0, 1.0))
    both = ~np.isnan(y) & ~np.isnan(f)
    return _with_fallback(found, y[both])


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
            interval=BOOTSTRAP if corrected.ci is not None else "",
        )
    except UndefinedMetricError as exc:
        notes.append(f"Rogan-Gladen: {exc}")
    if ppi.note is not None:
        notes.append(f"PPI++: {ppi.note}")
    shown = normalize_label(positive)
    return RateEstimates(
        positive=str(shown if not isinstance(shown, float) else f"{shown:g}"),
        labelled=labelled,
        ppi=ppi,
        rogan_gladen=rogan,
        judge_rate=judge_rate,
        notes=tuple(notes),
    )


def estimate_scores(
    y_human: LabelArray,
    y_judge: LabelArray,
    unlabelled_judge: LabelArray,
    *,
    labels: LabelList = None,
    ordinal: bool = True,
    confidence: float = 0.95,
) -> ScoreEstimates:
    """The mean score and each label's share that people would give the unlabelled items.

    ``labels`` is the scale in order (default: the labels seen, numbers sorted). For every label
    ``c``: the humans' share on the labelled items (Wilson) and PPI++ of the indicator ``[label =
    c]`` (each share tunes its own lambda, as ppi-python's ``lam_optim_mode="element"`` does). With
    ``ordinal`` (the default) also the mean score, over the labels' values: numbers are their own
    values, words their positions 1..k; labelled-only (ppi-python's classical interval) and PPI++,
    both cut to the scale's range. Rows of the labelled set where either side is missing are
    dropped; missing unlabelled labels too.

    >>> r = estimate_scores([1, 2, 3, 3], [1, 2, 3, 2], [3, 3, 2, 2], labels=[1, 2, 3])
    >>> r.mean[0].rate, [round(s[0].rate, 2) for s in r.shares]  # labelled mean 9/4
    (2.25, [0.25, 0.25, 0.5])
    """
    names = ("y_human", "y_judge", "unlabelled_judge")
    columns = [
        normalize_column(a, n)
        for a, n in zip((y_human, y_judge, unlabelled_judge), names, strict=True)
    ]
    if len(columns[0]) != len(columns[1]):
        raise MetricError(
            f"y_human has {len(columns[0])} labels and y_judge {len(columns[1])}: they must align"
        )
    axis, coded = encode_columns(columns, names, labels)
    if len(axis) < 2:
        raise MetricError("a scale needs at least two labels")
    numeric = all(isinstance(x, float) for x in axis)
    values = np.array(axis if numeric else range(1, len(axis) + 1), dtype=np.float64)
    h, j, u = coded
    both = (h >= 0) & (j >= 0)
    h, j = h[both], j[both]
    u = u[u >= 0]
    if h.size < 2 or u.size < 2:
        raise MetricError(
            f"PPI needs at least 2 labelled items with a judge label and 2 unlabelled judge labels "
            f"(got {h.size} and {u.size})"
        )
    notes: list[str] = []
    shares = []
    judge_shares = []
    for code, label in enumerate(axis):
        y = (h == code).astype(np.float64)
        labelled = labelled_rate(y, positive=1.0, confidence=confidence)
        ppi = ppi_mean(y, (j == code).astype(np.float64), (u == code).astype(np.float64),
                       confidence=confidence, bounds=(0.0, 1.0))  # fmt: skip
        ppi = _with_fallback(ppi, y)
        if ppi.note is not None:
            notes.append(f"share of {format_label(label)}: {ppi.note}")
        shares.append((labelled, ppi))
        judge_shares.append(float(np.mean(u == code)))
    mean = None
    judge_mean = None
    if ordinal:
        bounds = (float(values.min()), float(values.max()))
        labelled_m = labelled_mean(values[h], confidence=confidence, bounds=bounds)
        ppi_m = ppi_mean(values[h], values[j], values[u], confidence=confidence, bounds=bounds)
        if ppi_m.note is not None:
            notes.append(f"mean: {ppi_m.note}")
        if labelled_m.degenerate:
            notes.append("mean: every labelled item has the same human label, so the labelled "
                         "interval is a single point")  # fmt: skip
        mean = (labelled_m, ppi_m)
        judge_mean = float(values[u].mean())
    return ScoreEstimates(
        labels=tuple(axis),
        values=tuple(float(v) for v in values),
        mean=mean,
        shares=tuple(shares),
        judge_mean=judge_mean,
        judge_shares=tuple(judge_shares),
        notes=tuple(notes),
    )
