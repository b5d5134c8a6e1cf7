"""The one declared table of calibration metrics: every surface that lists metrics iterates over it.

A :class:`MetricDef` says, once, what a metric of a judge against humans is called (``key``, the field
name of :class:`~evalcore.metrics.CalibrationReport` and of its ``ci``; ``name``, what people read),
which scale kinds it is computed for, whether it is shown in the side-by-side table of a kind, whether
higher is better, the function that computes it from a k x k count table (or a stack of them), and
whether it gets a bootstrap interval. The report, the bootstrap, the tables, the summary, the HTML
report, the exports and the command line read :data:`CALIBRATION_METRICS`; adding a metric is adding
a row here (and a field of the same name on the report).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy.typing as npt

from evalcore.errors import MetricError
from evalcore.metrics._table import (
    FloatArray,
    accuracy_counts,
    balanced_accuracy_counts,
    class_counts,
    kappa_table,
    kendall_table,
    rates_table,
    spearman_table,
    weighted_f1_counts,
)

__all__ = [
    "CALIBRATION_METRICS",
    "KINDS",
    "MetricDef",
    "headline_kappa",
    "metric_def",
    "metrics_for",
]

#: The scale kinds a calibration report knows.
KINDS: tuple[str, ...] = ("nominal", "ordinal", "binary", "pairwise")

TableFunction = Callable[[npt.ArrayLike, int], FloatArray]


@dataclass(frozen=True)
class MetricDef:
    """One calibration metric, declared once.

    ``table(t, positive)`` evaluates the metric on a count table of shape ``(..., k, k)`` (rows =
    humans) and returns one value per table; ``positive`` is the index of the positive label and
    only matters for metrics of binary scales. ``kinds`` are the scale kinds it is computed for;
    ``shown`` the kinds whose side-by-side table shows it. ``aliases`` are other names people may
    use for it (project thresholds say ``balanced_accuracy``).
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

    def applies_to(self, kind: str) -> bool:
        """Whether the metric is computed for scales of ``kind``."""
        return kind in self.kinds

    def evaluate(self, t: npt.ArrayLike, positive: int = 0) -> FloatArray:
        """The metric of one count table or of a stack of them.

        >>> float(metric_def("accuracy").evaluate([[3, 1], [0, 4]]))  # 7 of 8 on the diagonal
        0.875
        """
        return self.table(t, positive)


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
