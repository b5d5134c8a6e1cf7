"""Agreement among any number of raters: Fleiss' kappa, Gwet's AC1/AC2 and Krippendorff's alpha, each
with its analytic standard error where one exists, and a bootstrap interval over items.

Ratings are an items x raters table (a DataFrame whose columns are raters, or a 2-D array) with
missing ratings allowed. The conventions are irrCAC's (Gwet's *Handbook of Inter-Rater Reliability*,
4th ed., as the ``irrCAC`` package computes it, ``raw.CAC``), with ``r_i`` the raters of item i,
``n_ik`` how many gave it label k, ``w`` the agreement weights (identity; linear ``1 − |a − b| / R``;
quadratic ``1 − (a − b)² / R²`` over the labels' values: numbers are their own values, words their
positions 1..q, ``R`` the range) and ``n`` the items rated at least once:

- observed agreement ``p_a`` = mean over the items rated at least twice of
  ``sum_k n_ik (sum_l w_kl n_il − 1) / (r_i (r_i − 1))``;
- ``pi_k`` = mean over all n items of ``n_ik / r_i`` (so an item rated once still counts in the
  chance agreement);
- Fleiss' kappa: ``p_e = sum_kl w_kl pi_k pi_l``; Gwet's AC1/AC2: ``p_e = T / (q (q − 1)) · sum_k
  pi_k (1 − pi_k)``, ``T`` the sum of the weights; coefficient ``(p_a − p_e) / (1 − p_e)``;
- their variances are Gwet's linearisations (irrCAC, no finite-population correction), and the
  analytic interval is ``value ± t(1 − α/2, n − 1) · se`` cut to [−1, 1] (irrCAC cuts the top at 1);
- Krippendorff's alpha is :func:`~evalcore.metrics.krippendorff_alpha` (the ``krippendorff``
  package's values at every level); its standard error is irrCAC's for the nominal (identity
  weights) and interval (quadratic weights) levels; the ordinal level, whose distances depend on the
  marginals, has only the bootstrap.

The bootstrap resamples the items (grouped by rating pattern, one multinomial draw per resample, as
:func:`~evalcore.metrics.krippendorff_alpha_ci` does) and takes the percentile interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from evalcore.errors import MetricError
from evalcore.metrics._agreement import (
    Level,
    Ratings,
    RatingTable,
    _alpha,
    _coincidences,
    _level_values,
    _patterns,
    encode_ratings,
)
from evalcore.metrics._bootstrap import check_bootstrap, percentile_interval
from evalcore.metrics._encode import FloatArray, LabelList
from evalcore.metrics._student import t_interval
from evalcore.metrics._table import Weights, agreement_weights

__all__ = [
    "RATER_COEFFICIENTS",
    "RATER_METRICS",
    "RaterAgreement",
    "RaterDef",
    "fleiss_kappa",
    "gwet_ac",
    "rater_agreement",
    "rater_agreements",
    "raters_for",
]

Coefficient: TypeAlias = Literal["fleiss_kappa", "gwet_ac", "krippendorff_alpha"]
#: The coefficients :func:`rater_agreement` computes.
RATER_COEFFICIENTS: tuple[str, ...] = ("fleiss_kappa", "gwet_ac", "krippendorff_alpha")


def _weights(table: RatingTable, weights: Weights) -> FloatArray:
    numeric = all(isinstance(x, float) for x in table.labels)
    values = np.asarray(table.labels, dtype=np.float64) if numeric else None
    return agreement_weights(table.k, weights, values)


def _rated(table: RatingTable) -> npt.NDArray[np.float64]:
    counts = table.item_counts().astype(np.float64)
    return np.asarray(counts[counts.sum(axis=1) >= 1], dtype=np.float64)


def _chance(pi: FloatArray, w: FloatArray, coefficient: str) -> FloatArray:
    """Chance agreement of one or many ``pi`` vectors (shape (..., q))."""
    q = w.shape[0]
    if coefficient == "fleiss_kappa":
        return np.asarray(np.einsum("...k,kl,...l->...", pi, w, pi), dtype=np.float64)
    if q < 2:
        return np.full(pi.shape[:-1], np.nan)
    return np.asarray(w.sum() / (q * (q - 1)) * (pi * (1.0 - pi)).sum(axis=-1), dtype=np.float64)


def _parts(counts: FloatArray, w: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per item: its agreement term (0 below two ratings), whether it has two ratings, its shares."""
    r = counts.sum(axis=1)
    agree = (counts * (counts @ w.T - 1.0)).sum(axis=1)
    two = r >= 2
    term = np.divide(agree, r * (r - 1.0), out=np.zeros_like(r), where=two)
    return term, two.astype(np.float64), counts / r[:, None]


def _value(counts: FloatArray, w: FloatArray, coefficient: str, freq: FloatArray) -> FloatArray:
    """The coefficient for item weights ``freq`` (shape (B, items) or (items,))."""
    term, two, shares = _parts(counts, w)
    with np.errstate(invalid="ignore", divide="ignore"):
        pa = (freq @ term) / (freq @ two)
        pi = (freq @ shares) / freq.sum(axis=-1)[..., None]
        pe = _chance(pi, w, coefficient)
        value = (pa - pe) / (1.0 - pe)
    return np.asarray(np.where(pe < 1.0, value, np.nan), dtype=np.float64)


def _gwet_se(
    counts: FloatArray, w: FloatArray, coefficient: str, freq: FloatArray
) -> tuple[float, float]:
    """(value, standard error) of Fleiss' kappa or Gwet's AC, as irrCAC's ``raw.CAC``, over rating
    patterns ``counts`` that ``freq`` items each have (items with one pattern have one term)."""
    n = float(freq.sum())
    q = w.shape[0]
    r = counts.sum(axis=1)
    term, two, shares = _parts(counts, w)
    n2 = float((freq * two).sum())
    if n2 == 0:
        return math.nan, math.nan
    pa = float((freq * term).sum() / n2)
    pi = (freq @ shares) / n
    pe = float(_chance(pi, w, coefficient))
    if not pe < 1.0:
        return math.nan, math.nan
    value = (pa - pe) / (1.0 - pe)
    per_item = (n / n2) * (term - pe * two) / (1.0 - pe)
    if coefficient == "fleiss_kappa":
        pe_item = counts @ ((w @ pi + w.T @ pi) / 2.0) / r
    else:
        pe_item = (w.sum() / (q * (q - 1))) * (counts @ (1.0 - pi)) / r
    linear = per_item - 2.0 * (1.0 - value) * (pe_item - pe) / (1.0 - pe)
    if n < 2:
        return value, math.nan
    variance = float((freq * (linear - value) ** 2).sum()) / (n * (n - 1.0))
    return value, math.sqrt(variance)


def _krippendorff_se(counts: FloatArray, w: FloatArray, freq: FloatArray) -> float:
    """irrCAC's standard error of Krippendorff's alpha over rating patterns (rated twice or more)
    that ``freq`` items each have."""
    n = float(freq.sum())
    if n < 2:
        return math.nan
    r = counts.sum(axis=1)
    r_mean = float((freq * r).sum()) / n
    eps = 1.0 / float((freq * r).sum())
    agree = (counts * (counts @ w.T - 1.0)).sum(axis=1)
    pa_prime = float((freq * agree / (r_mean * (r - 1.0))).sum() / n)
    pa = (1.0 - eps) * pa_prime + eps
    pi = (freq @ (counts / r_mean)) / n
    pe = float(pi @ w @ pi)
    if not pe < 1.0:
        return math.nan
    alpha_prime = (pa_prime - pe) / (1.0 - pe)
    pa_item = agree / (r_mean * (r - 1.0)) - pa * (r - r_mean) / r_mean
    per_item = (pa_item - pe) / (1.0 - pe)
    pe_item = counts @ ((w @ pi + w.T @ pi) / 2.0) / r_mean - pe * (r - r_mean) / r_mean
    linear = per_item - 2.0 * (1.0 - alpha_prime) * (pe_item - pe) / (1.0 - pe)
    variance = float((freq * (linear - alpha_prime) ** 2).sum()) / (n * (n - 1.0))
    return math.sqrt(variance)


def fleiss_kappa(ratings: Ratings, *, weights: Weights = None, labels: LabelList = None) -> float:
    """Fleiss' kappa of an items x raters table, missing ratings allowed (irrCAC's generalised
    form; on complete data it equals statsmodels' ``fleiss_kappa(method="fleiss")``).

    ``(p_a − p_e) / (1 − p_e)`` with ``p_e = sum_kl w_kl pi_k pi_l`` (module docstring). Range: 1
    is perfect agreement, 0 chance, below 0 less than chance. NaN when every rating is one label or
    no item has two ratings.

    >>> round(fleiss_kappa([[1, 1, 1], [2, 2, 2], [1, 2, 2], [2, 2, 2]]), 6)
    0.625

    (``p_a = (1 + 1 + 1/3 + 1) / 4 = 5/6``, ``pi = (1/3, 2/3)``, ``p_e = 1/9 + 4/9 = 5/9``, so
    ``(5/6 − 5/9) / (4/9) = 5/8``.)
    """
    table = encode_ratings(ratings, labels)
    counts = _rated(table)
    if counts.shape[0] == 0:
        return math.nan
    return float(_value(counts, _weights(table, weights), "fleiss_kappa", np.ones(len(counts))))


def gwet_ac(ratings: Ratings, *, weights: Weights = None, labels: LabelList = None) -> float:
    """Gwet's AC1 (``weights=None``) or AC2 (``"linear"``, ``"quadratic"``) of an items x raters
    table, missing ratings allowed, as irrCAC's ``raw.CAC.gwet``.

    ``(p_a − p_e) / (1 − p_e)`` with ``p_e = T / (q (q − 1)) · sum pi_k (1 − pi_k)`` over the ``q``
    labels of the axis (``labels``, default the labels seen; unused labels of a declared scale
    count). Range −1 to 1 (best). NaN with one label on the axis or no item rated twice.

    >>> round(gwet_ac([[1, 1, 1], [2, 2, 2], [1, 2, 2], [2, 2, 2]]), 6)  # (5/6 - 4/9) / (5/9)
    0.7
    """
    table = encode_ratings(ratings, labels)
    counts = _rated(table)
    if counts.shape[0] == 0:
        return math.nan
    return float(_value(counts, _weights(table, weights), "gwet_ac", np.ones(len(counts))))


@dataclass(frozen=True)
class RaterAgreement:
    """One agreement coefficient among raters with its uncertainty.

    ``value``; ``se``, the analytic standard error (``None`` where the coefficient has none:
    ordinal alpha); ``ci``, the analytic interval ``value ± t(1 − α/2, n − 1) · se`` (``None``
    without ``se``); ``boot_ci``, the percentile bootstrap over items (``None`` when ``n_boot`` is
    0). ``n_items`` are the items the coefficient reads (rated at least once; for alpha at least
    twice), ``n_raters`` the raters' columns.
    """

    key: str
    name: str
    coefficient: str
    weights: str | None
    level: str | None
    value: float
    se: float | None
    ci: tuple[float, float] | None
    boot_ci: tuple[float, float] | None
    n_items: int
    n_raters: int
    confidence: float
    reference: str

    @property
    def interval(self) -> tuple[float, float] | None:
        """The interval a report shows: the analytic one where there is one, else the bootstrap."""
        return self.ci if self.ci is not None else self.boot_ci

    @property
    def interval_method(self) -> str:
        if self.ci is not None:
            return "analytic (t, n - 1)"
        return "percentile bootstrap" if self.boot_ci is not None else "none"

    def to_dict(self) -> dict[str, Any]:
        def num(x: float | None) -> float | None:
            return None if x is None or math.isnan(x) else float(x)

        def pair(ci: tuple[float, float] | None) -> list[float | None] | None:
            return None if ci is None else [num(ci[0]), num(ci[1])]

        return {
            "key": self.key,
            "name": self.name,
            "value": num(self.value),
            "se": num(self.se),
            "ci": pair(self.ci),
            "boot_ci": pair(self.boot_ci),
            "interval_method": self.interval_method,
            "n_items": self.n_items,
            "n_raters": self.n_raters,
            "confidence": self.confidence,
            "reference": self.reference,
        }


_NAMES = {
    ("fleiss_kappa", None): "Fleiss' kappa",
    ("fleiss_kappa", "linear"): "Fleiss' kappa (linear)",
    ("fleiss_kappa", "quadratic"): "Fleiss' kappa (quadratic)",
    ("gwet_ac", None): "Gwet's AC1",
    ("gwet_ac", "linear"): "Gwet's AC2 (linear)",
    ("gwet_ac", "quadratic"): "Gwet's AC2 (quadratic)",
}


def _key(coefficient: str, weights: Weights, level: str) -> str:
    if coefficient == "krippendorff_alpha":
        return f"krippendorff_alpha_{level}"
    if coefficient == "gwet_ac":
        return "gwet_ac1" if weights is None else f"gwet_ac2_{weights}"
    return "fleiss_kappa" if weights is None else f"fleiss_kappa_{weights}"


def rater_agreement(
    ratings: Ratings,
    *,
    coefficient: Coefficient,
    weights: Weights = None,
    level: Level = "nominal",
    labels: LabelList = None,
    confidence: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> RaterAgreement:
    """One coefficient (``"fleiss_kappa"``, ``"gwet_ac"`` with ``weights``, or
    ``"krippendorff_alpha"`` at ``level``) with its analytic standard error and interval where one
    exists, and its percentile bootstrap interval over items (module docstring).

    >>> r = rater_agreement([[1, 1], [2, 2], [1, 2], [2, 2]], coefficient="gwet_ac", n_boot=0)
    >>> round(r.value, 4), r.key, r.interval_method  # p_a 3/4, pi (3/8, 5/8), p_e 15/32
    (0.5294, 'gwet_ac1', 'analytic (t, n - 1)')
    """
    if coefficient not in RATER_COEFFICIENTS:
        raise MetricError(
            f"coefficient must be one of {', '.join(RATER_COEFFICIENTS)} (got {coefficient!r})"
        )
    check_bootstrap(n_boot, confidence, seed, allow_zero=True)
    return _agreement(
        encode_ratings(ratings, labels), coefficient, weights, level, confidence, n_boot, seed
    )


def rater_agreements(
    ratings: Ratings,
    defs: Sequence[RaterDef],
    *,
    labels: LabelList = None,
    confidence: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> tuple[RaterAgreement, ...]:
    """Every coefficient of ``defs`` (rows of :data:`RATER_METRICS`) on one ratings table, which
    is read once; each as :func:`rater_agreement` computes it.

    >>> [round(a.value, 4) for a in rater_agreements([[1, 1], [2, 2], [1, 2], [2, 2]],
    ...     raters_for("binary", numeric=True), n_boot=0)]
    [0.4667, 0.5294, 0.5333]
    """
    check_bootstrap(n_boot, confidence, seed, allow_zero=True)
    prepared = _Prepared(encode_ratings(ratings, labels))
    return tuple(
        _agreement(prepared, d.coefficient, d.weights, d.level, confidence, n_boot, seed)
        for d in defs
    )


class _Prepared:
    """One encoded table with its item counts and rating patterns, each computed once."""

    def __init__(self, table: RatingTable) -> None:
        self.table = table
        counts = table.item_counts()
        rated = counts[counts.sum(axis=1) >= 1]
        self.rated = _patterns(rated) if len(rated) else None
        pairable = counts[counts.sum(axis=1) >= 2]
        self.pairable = _patterns(pairable) if len(pairable) else None
        self.n_rated = len(rated)
        self.n_pairable = len(pairable)


def _agreement(
    prepared: RatingTable | _Prepared,
    coefficient: str,
    weights: Weights,
    level: Level,
    confidence: float,
    n_boot: int,
    seed: int,
) -> RaterAgreement:
    if isinstance(prepared, RatingTable):
        prepared = _Prepared(prepared)
    table = prepared.table
    key = _key(coefficient, weights, level)
    rng = np.random.default_rng(seed)
    se: float | None
    if coefficient == "krippendorff_alpha":
        values = _level_values(table, level)
        n_items = prepared.n_pairable
        value = math.nan
        boot = None
        if prepared.pairable is not None:
            patterns, frequency = prepared.pairable
            per_pattern = _coincidences(patterns).reshape(len(patterns), -1)
            value = float(
                _alpha(
                    (frequency @ per_pattern).reshape(table.k, table.k).astype(np.float64),
                    level,
                    values,
                )
            )
            if n_boot > 0:
                draws = rng.multinomial(n_items, frequency / n_items, size=n_boot).astype(
                    np.float64
                )
                stack = (draws @ per_pattern).reshape(n_boot, table.k, table.k)
                boot = percentile_interval(_alpha(stack, level, values), confidence)
        se = None
        if level != "ordinal" and n_items:
            w = agreement_weights(table.k, None if level == "nominal" else "quadratic", values)
            se = _krippendorff_se(patterns.astype(np.float64), w, frequency.astype(np.float64))
        name = f"Krippendorff's alpha ({level})"
        reference = (
            "krippendorff (value); irrCAC (standard error)" if se is not None else "krippendorff"
        )
        used_weights, used_level = None, level
    else:
        w = _weights(table, weights)
        n_items = prepared.n_rated
        value, se, boot = math.nan, math.nan, None
        if prepared.rated is not None:
            patterns, frequency = prepared.rated
            value, se = _gwet_se(
                patterns.astype(np.float64), w, coefficient, frequency.astype(np.float64)
            )
        if n_boot > 0 and n_items:
            draws = rng.multinomial(n_items, frequency / n_items, size=n_boot).astype(np.float64)
            boot = percentile_interval(
                _value(patterns.astype(np.float64), w, coefficient, draws), confidence
            )
        name = _NAMES[(coefficient, weights)]
        reference = "irrCAC" + (" and statsmodels" if coefficient == "fleiss_kappa" else "")
        used_weights, used_level = weights, None
    ci = None
    if se is not None and not math.isnan(se):
        ci = t_interval(value, se, n_items, confidence=confidence, bounds=(-1.0, 1.0))
    return RaterAgreement(
        key=key,
        name=name,
        coefficient=coefficient,
        weights=used_weights,
        level=used_level,
        value=float(value),
        se=None if se is None else float(se),
        ci=ci,
        boot_ci=boot,
        n_items=n_items,
        n_raters=int(table.codes.shape[1]),
        confidence=float(confidence),
        reference=reference,
    )


@dataclass(frozen=True)
class RaterDef:
    """One agreement coefficient among raters, declared once: the human ceiling, the exports and
    the command line iterate over :data:`RATER_METRICS`. ``kinds`` are the scale kinds it is
    computed for; ``numeric`` says it needs numbers (interval distances)."""

    key: str
    name: str
    coefficient: Coefficient
    kinds: frozenset[str]
    weights: Weights = None
    level: Level = "nominal"
    numeric: bool = False

    def applies_to(self, kind: str, numeric: bool) -> bool:
        return kind in self.kinds and (numeric or not self.numeric)

    def compute(
        self,
        ratings: Ratings,
        *,
        labels: LabelList = None,
        confidence: float = 0.95,
        n_boot: int = 1000,
        seed: int = 0,
    ) -> RaterAgreement:
        """:func:`rater_agreement` with this row's coefficient, weights and level."""
        return rater_agreement(
            ratings,
            coefficient=self.coefficient,
            weights=self.weights,
            level=self.level,
            labels=labels,
            confidence=confidence,
            n_boot=n_boot,
            seed=seed,
        )


_EVERY = frozenset({"nominal", "ordinal", "binary", "pairwise"})
_ORDERED = frozenset({"ordinal"})

#: Every agreement coefficient among raters, in display order.
RATER_METRICS: tuple[RaterDef, ...] = (
    RaterDef("fleiss_kappa", "Fleiss' kappa", "fleiss_kappa", _EVERY),
    RaterDef("gwet_ac1", "Gwet's AC1", "gwet_ac", _EVERY),
    RaterDef("gwet_ac2_linear", "Gwet's AC2 (linear)", "gwet_ac", _ORDERED, weights="linear"),
    RaterDef(
        "gwet_ac2_quadratic", "Gwet's AC2 (quadratic)", "gwet_ac", _ORDERED, weights="quadratic"
    ),
    RaterDef(
        "krippendorff_alpha_nominal",
        "Krippendorff's alpha (nominal)",
        "krippendorff_alpha",
        _EVERY,
        level="nominal",
    ),
    RaterDef(
        "krippendorff_alpha_ordinal",
        "Krippendorff's alpha (ordinal)",
        "krippendorff_alpha",
        _ORDERED,
        level="ordinal",
    ),
    RaterDef(
        "krippendorff_alpha_interval",
        "Krippendorff's alpha (interval)",
        "krippendorff_alpha",
        _ORDERED,
        level="interval",
        numeric=True,
    ),
)


def raters_for(kind: str, *, numeric: bool) -> tuple[RaterDef, ...]:
    """The agreement coefficients among raters computed for a scale of ``kind`` (``numeric``: its
    labels are numbers).

    >>> [d.key for d in raters_for("binary", numeric=False)]
    ['fleiss_kappa', 'gwet_ac1', 'krippendorff_alpha_nominal']
    """
    return tuple(d for d in RATER_METRICS if d.applies_to(kind, numeric))
