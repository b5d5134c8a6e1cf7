"""The one declared table of calibration metrics: every surface that lists metrics iterates over it.

A :class:`MetricDef` says, once, what a metric of a judge against humans is called (``key``, the field
name of :class:`~evalcore.metrics.CalibrationReport` and of its ``ci``; ``name``, what people read),
which scale kinds it is computed for, whether it is shown in the side-by-side table of a kind, whether
higher is better, the function that computes it from a k x k count table (or a stack of them), and
whether it gets a bootstrap interval, and what it reads for a judge guessing at chance (``chance``).
The report, the bootstrap, the tables, the summary, the HTML
report, the exports and the command line read :data:`CALIBRATION_METRICS`; adding a metric is adding
a row here (and a field of the same name on the report).

Chance level. Every metric has one reference a judge must beat: the value it takes for a judge that
ignores the item and draws its label at random with the humans' own label shares ``p``. Its expected
count table is ``n * outer(p, p)`` (:func:`chance_table`), and :meth:`MetricDef.chance_level` evaluates
the metric on it, so the chance level is declared by the same table function as the metric; the
``chance`` text of a row says what that comes to (accuracy ``sum(p**2)``, kappa 0, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from evalcore.errors import MetricError
from evalcore.metrics._table import (
    FloatArray,
    ac1_table,
    ac2_table,
    ac_se_table,
    accuracy_counts,
    balanced_accuracy_counts,
    class_counts,
    kappa_se_table,
    kappa_table,
    kendall_table,
    rates_table,
    spearman_table,
    weighted_f1_counts,
)

__all__ = [
    "ANALYTIC",
    "BOOTSTRAP",
    "CALIBRATION_METRICS",
    "INTERVAL_METHODS",
    "KINDS",
    "WILSON",
    "MetricDef",
    "chance_table",
    "headline_kappa",
    "metric_def",
    "metrics_for",
]

#: The scale kinds a calibration report knows.
KINDS: tuple[str, ...] = ("nominal", "ordinal", "binary", "pairwise")

TableFunction = Callable[[npt.ArrayLike, int], FloatArray]
#: ``(table, positive) -> (successes, trials)`` of a metric that is a proportion.
ProportionFunction = Callable[[npt.ArrayLike, int], tuple[float, float]]
#: ``(table, positive) -> standard error`` of a metric with an analytic variance.
SeFunction = Callable[[npt.ArrayLike, int], float]

#: Interval methods of the declared metrics, as reports name them (``CalibrationReport.ci_methods``).
WILSON = "Wilson score"
ANALYTIC = "analytic (t, n - 1)"
BOOTSTRAP = "BCa bootstrap"
INTERVAL_METHODS = (WILSON, ANALYTIC, BOOTSTRAP)


@dataclass(frozen=True)
class MetricDef:
    """One calibration metric, declared once.

    ``table(t, positive)`` evaluates the metric on a count table of shape ``(..., k, k)`` (rows =
    humans) and returns one value per table; ``positive`` is the index of the positive label and
    only matters for metrics of binary scales. ``kinds`` are the scale kinds it is computed for;
    ``shown`` the kinds whose side-by-side table shows it. ``aliases`` are other names people may
    use for it (project thresholds say ``balanced_accuracy``).

    Its interval (``interval``) is, by ``method``: the Wilson score interval of ``proportion(t,
    positive)`` (successes, trials) for a metric that is a proportion (it never collapses to a
    point at 0 or n); else the BCa bootstrap of the count table (bias-corrected and accelerated:
    at small n the percentile bootstrap of kappa is lopsided). A metric with an analytic variance
    (``se(t, positive)``: irrCAC's, for the kappas and Gwet's coefficients) reports its standard
    error beside it, and gets irrCAC's analytic interval ``value ± t(1 − α/2, n − 1) · se`` when no
    resample is drawn. ``reference`` names the package whose convention the value (and its
    standard error) follows.
    """

    key: str
    name: str
    kinds: frozenset[str]
    shown: frozenset[str]
    higher_is_better: bool
    table: TableFunction
    interval: bool
    description: str
    aliases: tuple[str, ...] = ()
    chance: str = ""
    reference: str = ""
    proportion: ProportionFunction | None = None
    se: SeFunction | None = None

    @property
    def method(self) -> str:
        """How its interval is computed with resamples: :data:`WILSON` or :data:`BOOTSTRAP` (BCa);
        without resamples a metric with ``se`` gets :data:`ANALYTIC`."""
        return WILSON if self.proportion is not None else BOOTSTRAP

    def applies_to(self, kind: str) -> bool:
        """Whether the metric is computed for scales of ``kind``."""
        return kind in self.kinds

    def evaluate(self, t: npt.ArrayLike, positive: int = 0) -> FloatArray:
        """The metric of one count table or of a stack of them.

        >>> float(metric_def("accuracy").evaluate([[3, 1], [0, 4]]))  # 7 of 8 on the diagonal
        0.875
        """
        return self.table(t, positive)

    def chance_level(self, human_counts: npt.ArrayLike, positive: int = 0) -> float:
        """The metric of a judge guessing at random with the humans' label shares (see the module
        docstring); ``human_counts`` are the humans' counts of each label of the axis.

        >>> metric_def("accuracy").chance_level([3, 1])  # (3/4)**2 + (1/4)**2
        0.625
        >>> metric_def("cohen_kappa").chance_level([3, 1])
        0.0
        """
        return float(self.evaluate(chance_table(human_counts), positive))


def chance_table(human_counts: npt.ArrayLike) -> FloatArray:
    """The count table expected from a judge that draws labels at random with the humans' shares
    ``p = counts / n``: ``n * outer(p, p)`` (rows = humans).

    >>> chance_table([3, 1]).tolist()
    [[2.25, 0.75], [0.75, 0.25]]
    """
    counts = np.asarray(human_counts, dtype=np.float64)
    n = counts.sum()
    if counts.ndim != 1 or n <= 0:
        raise MetricError(
            "the chance level needs the humans' count of every label (a positive total)"
        )
    return np.asarray(np.outer(counts, counts) / n, dtype=np.float64)


def _counts(fn: Callable[[FloatArray, FloatArray, FloatArray], FloatArray]) -> TableFunction:
    def metric(t: npt.ArrayLike, positive: int) -> FloatArray:
        return fn(*class_counts(t))

    return metric


def _kappa(weights: str | None) -> TableFunction:
    def metric(t: npt.ArrayLike, positive: int) -> FloatArray:
        return kappa_table(t, weights)  # type: ignore[arg-type]

    return metric


def _rate(which: int) -> TableFunction:
    def metric(t: npt.ArrayLike, positive: int) -> FloatArray:
        return rates_table(t, positive)[which]

    return metric


def _diagonal(t: npt.ArrayLike, positive: int) -> tuple[float, float]:
    table = np.asarray(t, dtype=np.float64)
    return float(np.trace(table)), float(table.sum())


def _rate_counts(which: int) -> ProportionFunction:
    def counts(t: npt.ArrayLike, positive: int) -> tuple[float, float]:
        table = np.asarray(t, dtype=np.float64)
        if which == 0:  # TPR: agreed positives of the human positives
            return float(table[positive, positive]), float(table[positive].sum())
        negative = [i for i in range(table.shape[0]) if i != positive]
        block = table[np.ix_(negative, negative)]
        return float(block.sum()), float(table[negative].sum())

    return counts


def _kappa_se(weights: str | None) -> SeFunction:
    def se(t: npt.ArrayLike, positive: int) -> float:
        return kappa_se_table(t, weights)  # type: ignore[arg-type]

    return se


def _ac(weights: str | None) -> TableFunction:
    def metric(t: npt.ArrayLike, positive: int) -> FloatArray:
        return ac2_table(t, weights)  # type: ignore[arg-type]

    return metric


def _ac_se(weights: str | None) -> SeFunction:
    def se(t: npt.ArrayLike, positive: int) -> float:
        return ac_se_table(t, weights)  # type: ignore[arg-type]

    return se


_SKLEARN = "scikit-learn"
_IRR = "irrCAC (value: scikit-learn's cohen_kappa_score; SE: irrCAC)"


_ALL = frozenset(KINDS)
_ORDINAL = frozenset({"ordinal"})
_BINARY = frozenset({"binary"})
_UNORDERED = frozenset({"nominal", "binary", "pairwise"})

#: Every calibration metric, in display order.
CALIBRATION_METRICS: tuple[MetricDef, ...] = (
    MetricDef(
        "accuracy_balanced",
        "balanced accuracy",
        _ALL,
        _ALL,
        True,
        _counts(balanced_accuracy_counts),
        True,
        "Mean recall over the labels the humans used (Vertex's accuracy_balanced).",
        ("balanced_accuracy",),
        chance="1/k over the k labels the humans used",
        reference="scikit-learn balanced_accuracy_score",
    ),
    MetricDef(
        "f1_score_balanced",
        "weighted F1",
        _ALL,
        _ALL,
        True,
        _counts(weighted_f1_counts),
        True,
        "Per-label F1 weighted by how often the humans used each label (Vertex's "
        "f1_score_balanced).",
        ("weighted_f1",),
        chance="sum of p**2 (each label's F1 is its share p)",
        reference="scikit-learn f1_score(average='weighted', zero_division=0)",
    ),
    MetricDef(
        "accuracy",
        "accuracy",
        _ALL,
        _ALL,
        True,
        _counts(accuracy_counts),
        True,
        "Share of items where the judge gave the humans' label.",
        chance="sum of p**2",
        reference="scikit-learn accuracy_score; interval statsmodels proportion_confint(wilson)",
        proportion=_diagonal,
    ),
    MetricDef(
        "cohen_kappa",
        "Cohen's kappa",
        _ALL,
        _UNORDERED,
        True,
        _kappa(None),
        True,
        "Agreement beyond chance: 1 is perfect, 0 is what chance gives.",
        chance="0",
        reference=_SKLEARN + " cohen_kappa_score; SE irrCAC (Fleiss-Cohen-Everitt)",
        se=_kappa_se(None),
    ),
    MetricDef(
        "gwet_ac1",
        "Gwet's AC1",
        _ALL,
        _UNORDERED,
        True,
        lambda t, positive: ac1_table(t),
        True,
        "Agreement beyond chance that, unlike kappa, stays readable when one label dominates.",
        chance="(sum p**2 - p_e) / (1 - p_e), p_e = sum p(1 - p) / (k - 1); 0 for two equal shares",
        reference="irrCAC (Gwet's variance)",
        se=_ac_se(None),
    ),
    MetricDef(
        "cohen_kappa_linear",
        "Cohen's kappa (linear)",
        _ORDINAL,
        frozenset(),
        True,
        _kappa("linear"),
        True,
        "Kappa where a miss costs its distance on the scale.",
        chance="0",
        reference=_SKLEARN + " cohen_kappa_score(weights='linear'); SE irrCAC",
        se=_kappa_se("linear"),
    ),
    MetricDef(
        "cohen_kappa_quadratic",
        "Cohen's kappa (quadratic)",
        _ORDINAL,
        _ORDINAL,
        True,
        _kappa("quadratic"),
        True,
        "Kappa where a miss costs its squared distance on the scale: near misses cost little.",
        chance="0",
        reference=_SKLEARN + " cohen_kappa_score(weights='quadratic'); SE irrCAC",
        se=_kappa_se("quadratic"),
    ),
    MetricDef(
        "gwet_ac2_linear",
        "Gwet's AC2 (linear)",
        _ORDINAL,
        frozenset(),
        True,
        _ac("linear"),
        True,
        "AC1 with partial credit for near misses, linear in their distance on the scale.",
        chance="T / (k (k - 1)) * sum p(1 - p) as chance agreement, T the sum of the weights",
        reference="irrCAC (Gwet's variance)",
        se=_ac_se("linear"),
    ),
    MetricDef(
        "gwet_ac2_quadratic",
        "Gwet's AC2 (quadratic)",
        _ORDINAL,
        frozenset(),
        True,
        _ac("quadratic"),
        True,
        "AC1 with partial credit for near misses, quadratic in their distance on the scale.",
        chance="T / (k (k - 1)) * sum p(1 - p) as chance agreement, T the sum of the weights",
        reference="irrCAC (Gwet's variance)",
        se=_ac_se("quadratic"),
    ),
    MetricDef(
        "spearman",
        "Spearman",
        _ORDINAL,
        _ORDINAL,
        True,
        lambda t, positive: spearman_table(t),
        True,
        "Rank correlation of the judge's and the humans' labels (mid-ranks for ties).",
        chance="0",
        reference="scipy spearmanr",
    ),
    MetricDef(
        "kendall_tau",
        "Kendall tau-b",
        _ORDINAL,
        _ORDINAL,
        True,
        lambda t, positive: kendall_table(t),
        True,
        "Share of item pairs ordered alike minus ordered unlike, corrected for ties.",
        chance="0",
        reference="scipy kendalltau (variant b)",
    ),
    MetricDef(
        "tpr",
        "true-positive rate",
        _BINARY,
        _BINARY,
        True,
        _rate(0),
        True,
        "Of the items the humans call positive, the share the judge calls positive.",
        chance="the positive share p",
        reference="scikit-learn recall_score; interval statsmodels proportion_confint(wilson)",
        proportion=_rate_counts(0),
    ),
    MetricDef(
        "tnr",
        "true-negative rate",
        _BINARY,
        _BINARY,
        True,
        _rate(1),
        True,
        "Of the items the humans call negative, the share the judge calls negative.",
        chance="the negative share 1 - p",
        reference="scikit-learn recall_score of the negative label; interval statsmodels "
        "proportion_confint(wilson)",
        proportion=_rate_counts(1),
    ),
)

_BY_KEY = {m.key: m for m in CALIBRATION_METRICS}
_BY_ALIAS = {alias: m for m in CALIBRATION_METRICS for alias in m.aliases}


def metric_def(key: str) -> MetricDef:
    """The declared metric named ``key`` (or one of its aliases).

    >>> metric_def("balanced_accuracy").key, metric_def("kendall_tau").name
    ('accuracy_balanced', 'Kendall tau-b')
    """
    found = _BY_KEY.get(key) or _BY_ALIAS.get(key)
    if found is None:
        known = ", ".join(_BY_KEY)
        raise MetricError(f"unknown calibration metric {key!r}; expected one of {known}")
    return found


def metrics_for(kind: str, *, shown: bool = False) -> tuple[MetricDef, ...]:
    """The metrics computed for scales of ``kind`` (with ``shown``: those its tables show), in order.

    >>> [m.key for m in metrics_for("binary", shown=True)][-2:]
    ['tpr', 'tnr']
    """
    if kind not in KINDS:
        raise MetricError(f"kind must be one of {', '.join(KINDS)} (got {kind!r})")
    return tuple(m for m in CALIBRATION_METRICS if kind in (m.shown if shown else m.kinds))


def headline_kappa(kind: str) -> MetricDef:
    """The kappa the tables show for a scale kind: quadratic-weighted on ordinal scales.

    >>> headline_kappa("ordinal").key, headline_kappa("binary").key
    ('cohen_kappa_quadratic', 'cohen_kappa')
    """
    return metric_def("cohen_kappa_quadratic" if kind == "ordinal" else "cohen_kappa")


#: Every metric that needs no positive label, by key: ``table -> values`` (what
#: :func:`~evalcore.metrics.table_metric` and :func:`~evalcore.metrics.bootstrap_ci` evaluate).
TABLE_FUNCTIONS: dict[str, Callable[[npt.ArrayLike], FloatArray]] = {
    m.key: (lambda t, m=m: m.evaluate(t))  # type: ignore[misc]
    for m in CALIBRATION_METRICS
    if m.kinds != _BINARY
}
