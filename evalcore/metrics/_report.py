"""One judge against human labels: every number of a calibration report in one object."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from evalcore.errors import MetricError
from evalcore.labels import Label, format_label, normalize_label
from evalcore.metrics._bootstrap import (
    bca_interval,
    check_bootstrap,
    check_table,
    jackknife_tables,
    multinomial_tables,
)
from evalcore.metrics._classification import (
    ClassMetrics,
    class_metrics_from_counts,
    encode_pair,
    require_rows,
)
from evalcore.metrics._declared import (
    ANALYTIC,
    BOOTSTRAP,
    CALIBRATION_METRICS,
    KINDS,
    WILSON,
    metrics_for,
)
from evalcore.metrics._encode import IntArray, LabelArray, LabelList, count_table, normalize_labels
from evalcore.metrics._proportion import wilson_interval
from evalcore.metrics._student import t_interval
from evalcore.metrics._table import class_counts

ReportKind: TypeAlias = Literal["nominal", "ordinal", "binary", "pairwise"]


def _json_number(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


@dataclass(frozen=True, eq=False)
class CalibrationReport:
    """Metrics of one judge against human labels on the same items (human = rows = ``y_true``).

    ``accuracy_balanced`` and ``f1_score_balanced`` follow Vertex AI's ``evaluate_autorater``
    definitions (see :func:`balanced_accuracy` and :func:`weighted_f1`). Which metric is computed for
    which kind is declared once in :data:`~evalcore.metrics.CALIBRATION_METRICS`. ``cohen_kappa_linear``,
    ``cohen_kappa_quadratic``, ``spearman`` and ``kendall_tau`` are computed for ``kind="ordinal"`` only
    (label order has no meaning otherwise) and are ``None`` for other kinds; ``positive``, ``tpr`` and
    ``tnr`` are set for ``kind="binary"`` only. ``ci`` maps each computed metric's name to its interval
    ``(low, high)``, and ``ci_methods`` names how each was made: Wilson for proportions (accuracy,
    TPR, TNR), the BCa bootstrap of the count table for the others; ``se`` holds the analytic
    standard errors of the kappas and Gwet's coefficients (irrCAC's), which get irrCAC's analytic t
    interval instead when ``n_boot`` is 0 (the other bootstrap intervals are then left out).
    """

    metric: str
    kind: ReportKind
    n: int
    n_dropped: int
    labels: tuple[Label, ...]
    confusion_matrix: IntArray
    accuracy_balanced: float
    f1_score_balanced: float
    accuracy: float
    cohen_kappa: float
    cohen_kappa_linear: float | None
    cohen_kappa_quadratic: float | None
    spearman: float | None
    kendall_tau: float | None
    per_class: tuple[ClassMetrics, ...]
    positive: Label | None = None
    tpr: float | None = None
    tnr: float | None = None
    gwet_ac1: float | None = None
    gwet_ac2_linear: float | None = None
    gwet_ac2_quadratic: float | None = None
    ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    se: dict[str, float] = field(default_factory=dict)
    ci_methods: dict[str, str] = field(default_factory=dict)
    n_boot: int = 0
    confidence: float = 0.95
    seed: int = 0

    @classmethod
    def from_counts(
        cls,
        table: npt.ArrayLike,
        *,
        labels: LabelList,
        kind: ReportKind = "nominal",
        metric: str = "",
        positive: object = None,
        n_dropped: int = 0,
        n_boot: int = 1000,
        confidence: float = 0.95,
        seed: int = 0,
    ) -> CalibrationReport:
        """Build the report from a k x k count table (rows = human labels, columns = judge labels).

        ``labels`` names the axes in order and is required. ``n_dropped`` is carried into the report
        as the number of rows that were left out before counting. The other options are those of
        :func:`calibrate`, which encodes two label arrays and calls this.

        >>> r = CalibrationReport.from_counts([[8, 2], [1, 9]], labels=["pass", "fail"], n_boot=0)
        >>> r.n, r.accuracy_balanced, r.confusion_matrix_labels  # (8/10 + 9/10) / 2
        (20, 0.85, ['pass', 'fail'])
        """
        if kind not in KINDS:
            raise MetricError(f"kind must be one of {', '.join(KINDS)} (got {kind!r})")
        check_bootstrap(n_boot, confidence, seed, allow_zero=True)
        if labels is None:
            raise MetricError("from_counts needs the labels of the table's axes")
        axis = normalize_labels(labels)
        counts = check_table(table)
        if counts.ndim != 2 or counts.shape[0] != len(axis):
            raise MetricError(
                f"the table's shape {counts.shape} does not match the {len(axis)} labels"
            )
        n = int(counts.sum())
        if n == 0:
            raise MetricError(
                f"no comparable rows: every one of the {n_dropped} rows has a missing label on at "
                "least one side"
            )
        pos_index = _positive_index(axis, kind, positive)
        declared = metrics_for(kind)
        at = 0 if pos_index is None else pos_index
        values = {m.key: float(m.evaluate(counts, at)) for m in declared}
        ci: dict[str, tuple[float, float]] = {}
        se: dict[str, float] = {}
        methods: dict[str, str] = {}
        boot = [m for m in declared if m.interval and m.proportion is None]
        for m in declared:
            if not m.interval:
                continue
            if m.se is not None:
                se[m.key] = m.se(counts, at)
            if m.proportion is not None:
                successes, trials = m.proportion(counts, at)
                ci[m.key] = (
                    wilson_interval(successes, trials, confidence=confidence)
                    if trials > 0
                    else (math.nan, math.nan)
                )
                methods[m.key] = WILSON
            elif n_boot == 0 and m.se is not None:
                ci[m.key] = t_interval(
                    values[m.key], se[m.key], n, confidence=confidence, bounds=(-1.0, 1.0)
                )
                methods[m.key] = ANALYTIC
        if n_boot > 0 and boot:
            draws = multinomial_tables(counts, n_boot, np.random.default_rng(seed))
            leave_one_out, weights = jackknife_tables(counts)
            for m in boot:
                ci[m.key] = bca_interval(
                    values[m.key],
                    m.evaluate(draws, at),
                    m.evaluate(leave_one_out, at),
                    weights,
                    confidence,
                )
                methods[m.key] = BOOTSTRAP
        ci = {m.key: ci[m.key] for m in declared if m.key in ci}  # in declared order
        methods = {key: methods[key] for key in ci}
        frozen = counts.copy()
        frozen.setflags(write=False)
        return cls(
            metric=metric,
            kind=kind,
            n=n,
            n_dropped=int(n_dropped),
            labels=tuple(axis),
            confusion_matrix=frozen,
            **{m.key: values.get(m.key) for m in CALIBRATION_METRICS},  # type: ignore[arg-type]
            per_class=tuple(class_metrics_from_counts(axis, *class_counts(counts))),
            positive=None if pos_index is None else axis[pos_index],
            ci=ci,
            se=se,
            ci_methods=methods,
            n_boot=int(n_boot),
            confidence=float(confidence),
            seed=int(seed),
        )

    @property
    def confusion_matrix_labels(self) -> list[str]:
        """The axis labels formatted for people (``"4"`` not ``"4.0"``), declared ones included."""
        return [format_label(x) for x in self.labels]

    def observed(self) -> tuple[list[str], list[list[int]]]:
        """Vertex's view of the matrix: the labels either side used (in axis order) and their counts.

        Vertex's ``confusion_matrix_labels`` is the union of the labels observed on both sides; a
        declared label nobody used is on :attr:`labels` (and moves weighted kappas) but not here.

        >>> r = CalibrationReport.from_counts([[2, 0, 1], [0, 0, 0], [1, 0, 3]], labels=[1, 2, 3],
        ...     n_boot=0)
        >>> r.observed()
        (['1', '3'], [[2, 1], [1, 3]])
        """
        counts = self.confusion_matrix
        used = np.flatnonzero((counts.sum(axis=0) + counts.sum(axis=1)) > 0)
        labels = [format_label(self.labels[i]) for i in used]
        return labels, counts[np.ix_(used, used)].tolist()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict using Vertex's key names; NaN becomes ``None`` and numbers stay numbers.

        Keys: ``metric``, ``kind``, ``n``, ``n_dropped``, ``confusion_matrix`` and
        ``confusion_matrix_labels`` (Vertex's: over the observed labels, see :meth:`observed`),
        ``axis_labels`` (every label of the axis), each metric of
        :data:`~evalcore.metrics.CALIBRATION_METRICS` under its key (``None`` where it does not
        apply), ``per_class``, ``positive``, ``ci`` (key -> ``[low, high]``), ``ci_method`` (key ->
        the interval's method), ``se`` (key -> analytic standard error), ``n_boot``,
        ``confidence`` and ``seed``.
        """
        labels, matrix = self.observed()
        out: dict[str, Any] = {
            "metric": self.metric,
            "kind": self.kind,
            "n": self.n,
            "n_dropped": self.n_dropped,
            "confusion_matrix": matrix,
            "confusion_matrix_labels": labels,
            "axis_labels": self.confusion_matrix_labels,
        }
        for m in CALIBRATION_METRICS:
            out[m.key] = _json_number(getattr(self, m.key))
        out.update(
            {
                "per_class": [
                    {
                        k: _json_number(v) if isinstance(v, float) else v
                        for k, v in c.to_dict().items()
                    }
                    for c in self.per_class
                ],
                "positive": None if self.positive is None else format_label(self.positive),
                "ci": {
                    name: [_json_number(low), _json_number(high)]
                    for name, (low, high) in self.ci.items()
                },
                "ci_method": self.ci_methods,
                "se": {name: _json_number(value) for name, value in self.se.items()},
                "n_boot": self.n_boot,
                "confidence": self.confidence,
                "seed": self.seed,
            }
        )
        return out


def _positive_index(axis: list[Label], kind: str, positive: object) -> int | None:
    if kind != "binary":
        if positive is not None:
            raise MetricError("positive= applies to kind='binary' only")
        return None
    if len(axis) != 2:
        shown = ", ".join(format_label(x) for x in axis)
        raise MetricError(
            f"kind='binary' needs exactly two labels, got {len(axis)} ({shown}); pass labels= with "
            "the positive label first, e.g. labels=('pass', 'fail')"
        )
    if positive is None:
        return 0
    label = normalize_label(positive)
    if label not in axis:
        shown = ", ".join(format_label(x) for x in axis)
        raise MetricError(f"positive={positive!r} is not one of the labels ({shown})")
    return axis.index(label)


def calibrate(
    y_human: LabelArray,
    y_judge: LabelArray,
    *,
    labels: LabelList = None,
    kind: ReportKind = "nominal",
    metric: str = "",
    positive: object = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> CalibrationReport:
    """Every agreement metric of a judge against human labels, with bootstrap intervals.

    Rows where either side is missing (None, NaN, ``""``, ``"error"`` in any case) are dropped and
    counted in ``n_dropped``; ``n`` is the number compared. The k x k count table (rows = human,
    columns = judge, axis = :func:`confusion_labels`) is the only thing the metrics read: balanced
    accuracy and weighted F1 (Vertex definitions), accuracy, Cohen's kappa, per-class precision/recall/
    F1, plus weighted kappas, Spearman and Kendall tau-b for ``kind="ordinal"`` and TPR/TNR of
    ``positive`` (default: the first label) for ``kind="binary"`` (which needs exactly two labels;
    with ``labels=None`` the first label is the first in sorted order, ``"fail"`` before ``"pass"``,
    so pass ``labels=PASS_FAIL.labels`` or ``positive=``). ``kind="pairwise"`` is reported like
    ``"nominal"``; choices are compared as given (the data layer maps vocabularies to A/B/TIE).
    ``metric`` is a free name carried into the report (e.g. ``"fluency"``).

    Intervals resample the count table ``n_boot`` times by one multinomial draw (seeded, reproducible;
    the cost does not grow with rows) and take the central ``confidence`` share, leaving out resamples
    where a metric is undefined. ``n_boot=0`` skips them. No row left raises ``MetricError``.

    >>> r = calibrate([1, 2, 2, None], [1, 2, 1, 2], n_boot=0)
    >>> r.n, r.n_dropped, r.accuracy_balanced, r.confusion_matrix.tolist()  # recall 1/1 and 1/2
    (3, 1, 0.75, [[1, 0], [1, 1]])
    """
    encoded = encode_pair(y_human, y_judge, labels, ("y_human", "y_judge"))
    require_rows(encoded, "y_human and y_judge")
    return CalibrationReport.from_counts(
        count_table(encoded),
        labels=encoded.labels,
        kind=kind,
        metric=metric,
        positive=positive,
        n_dropped=encoded.n_dropped,
        n_boot=n_boot,
        confidence=confidence,
        seed=seed,
    )
