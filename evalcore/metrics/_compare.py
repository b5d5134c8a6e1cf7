"""Two judges (two template versions) against the same human labels on the same items.

:func:`compare` is the one paired comparison: balanced accuracy and weighted F1 always, and any
declared calibration metric (:data:`~evalcore.metrics.CALIBRATION_METRICS`) on request, each with a
paired bootstrap interval at the confidence asked for. The calibration tables and the optimiser of
:mod:`evalcore.improve` both read their differences from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from evalcore.errors import MetricError
from evalcore.labels import Label, format_label, normalize_label
from evalcore.metrics._bootstrap import check_bootstrap, multinomial_tables, percentile_interval
from evalcore.metrics._classification import require_rows
from evalcore.metrics._declared import MetricDef, metric_def
from evalcore.metrics._encode import FloatArray, LabelArray, LabelList, count_table, encode_rows
from evalcore.metrics._proportion import wilson_interval
from evalcore.metrics._table import balanced_accuracy_counts, class_counts, weighted_f1_counts

#: How the interval of the accuracy difference is computed.
NEWCOMBE = "Newcombe hybrid score (paired, method 10)"
#: How the intervals of the other paired differences are computed.
PAIRED_BOOTSTRAP = "paired percentile bootstrap"


def mcnemar_exact_p(a_right_b_wrong: int, a_wrong_b_right: int) -> float:
    """Two-sided exact McNemar p-value from the two discordant counts.

    Under the null hypothesis that both judges are right equally often, the ``d = b + c`` discordant
    items split as Binomial(d, 1/2); ``p = min(1, 2 * P(X <= min(b, c)))``. With no discordant item the
    judges cannot be told apart and ``p = 1.0``. Range 0 to 1; small means the judges differ.

    >>> mcnemar_exact_p(0, 5)  # 2 * (1/2)**5
    0.0625
    """
    b, c = int(a_right_b_wrong), int(a_wrong_b_right)
    if b < 0 or c < 0:
        raise MetricError(f"discordant counts cannot be negative (got {b} and {c})")
    if b + c == 0:
        return 1.0
    import scipy.stats  # imported here: loading it costs half a second of every CLI start

    return float(min(1.0, 2.0 * scipy.stats.binom.cdf(min(b, c), b + c, 0.5)))


def mcnemar_midp(a_right_b_wrong: int, a_wrong_b_right: int) -> float:
    """Two-sided mid-p McNemar p-value: the exact p-value less the probability of the observed
    split, ``2 * (P(X <= m) - P(X = m) / 2)`` with ``m = min(b, c)`` and ``X ~ Binomial(b + c,
    1/2)``, at most 1 (Fagerland, Lydersen and Laake 2013 recommend it over the exact test, whose
    size is below nominal). 1.0 with no discordant item.

    >>> mcnemar_midp(0, 5)  # 2 * ((1/2)**5 - (1/2)**5 / 2)
    0.03125
    """
    b, c = int(a_right_b_wrong), int(a_wrong_b_right)
    if b < 0 or c < 0:
        raise MetricError(f"discordant counts cannot be negative (got {b} and {c})")
    if b + c == 0:
        return 1.0
    import scipy.stats

    m, d = min(b, c), b + c
    return float(
        min(1.0, 2.0 * (scipy.stats.binom.cdf(m, d, 0.5) - scipy.stats.binom.pmf(m, d, 0.5) / 2))
    )


def paired_difference_interval(
    both_right: int,
    only_first: int,
    only_second: int,
    both_wrong: int,
    *,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Newcombe's hybrid score interval (1998, method 10) for the difference of two paired
    proportions ``p1 − p2``, ``p1 = (both_right + only_first) / n`` and ``p2 = (both_right +
    only_second) / n``: it combines the Wilson intervals ``[l1, u1]`` and ``[l2, u2]`` of each with
    the correlation ``phi = (a d − b c) / sqrt((a+b)(c+d)(a+c)(b+d))`` of the pairs (0 when a
    margin is empty): ``low = p1 − p2 − sqrt((p1−l1)² − 2 phi (p1−l1)(u2−p2) + (u2−p2)²)``,
    ``high = p1 − p2 + sqrt((u1−p1)² − 2 phi (u1−p1)(p2−l2) + (p2−l2)²)``. Inside [−1, 1], and a
    real interval even when the two never differ.

    >>> [round(x, 4) for x in paired_difference_interval(10, 0, 0, 0)]  # no discordant pair
    [-0.2775, 0.2775]
    """
    a, b, c, d = (int(x) for x in (both_right, only_first, only_second, both_wrong))
    n = a + b + c + d
    if min(a, b, c, d) < 0 or n == 0:
        raise MetricError(f"a paired table needs non-negative counts and a pair (got {a, b, c, d})")
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson_interval(a + b, n, confidence=confidence)
    l2, u2 = wilson_interval(a + c, n, confidence=confidence)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    phi = 0.0 if margins == 0 else (a * d - b * c) / math.sqrt(margins)
    delta = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    eps = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return max(-1.0, p1 - p2 - delta), min(1.0, p1 - p2 + eps)


@dataclass(frozen=True)
class Comparison:
    """Judge ``a`` (baseline, e.g. template v6) against judge ``b`` (candidate, e.g. v7).

    Differences are ``b - a``. Their intervals come from a *paired* bootstrap that resamples the
    k x k x k table of (human, a, b) label triples, so both judges are always scored on the same
    resampled items; they are ``None`` when ``n_boot`` is 0. ``a_right_b_wrong`` and
    ``a_wrong_b_right`` are the discordant counts of McNemar's test, which is about exact-label
    accuracy: so the accuracy difference ``diff_accuracy`` has its own interval beside it
    (Newcombe's paired score interval, :func:`paired_difference_interval`, computed whatever
    ``n_boot``), with the exact p-value ``mcnemar_p`` and the mid-p ``mcnemar_midp``; ``mid_p``
    says which one :attr:`p_value` reports. :meth:`rows` says, for every paired row, which quantity
    it compares and how its interval and test are made.

    ``metric`` is the key of the declared metric asked for with ``compare(..., metric=...)``
    (``None`` when none was): ``metric_a`` and ``metric_b`` are its values, ``diff_metric`` their
    difference ``b - a`` and ``diff_metric_ci`` its paired interval. NaN where the metric is
    undefined on the items (a kappa with one label).
    """

    n: int
    n_dropped: int
    labels: tuple[Label, ...]
    balanced_accuracy_a: float
    balanced_accuracy_b: float
    weighted_f1_a: float
    weighted_f1_b: float
    diff_balanced_accuracy: float
    diff_balanced_accuracy_ci: tuple[float, float] | None
    diff_weighted_f1: float
    diff_weighted_f1_ci: tuple[float, float] | None
    a_right_b_wrong: int
    a_wrong_b_right: int
    mcnemar_p: float
    n_boot: int
    confidence: float
    seed: int
    metric: str | None = None
    metric_a: float = math.nan
    metric_b: float = math.nan
    diff_metric: float = math.nan
    diff_metric_ci: tuple[float, float] | None = None
    accuracy_a: float = math.nan
    accuracy_b: float = math.nan
    diff_accuracy: float = math.nan
    diff_accuracy_ci: tuple[float, float] | None = None
    mcnemar_midp: float = math.nan
    mid_p: bool = False

    @property
    def p_value(self) -> float:
        """McNemar's p-value as asked: the mid-p with ``mid_p``, else the exact one."""
        return self.mcnemar_midp if self.mid_p else self.mcnemar_p

    @property
    def test(self) -> str:
        """The name of the paired test of :attr:`p_value`."""
        return "McNemar mid-p" if self.mid_p else "McNemar exact"

    def rows(self) -> list[dict[str, Any]]:
        """One record per paired row: ``quantity`` (the metric compared: ``accuracy``,
        ``accuracy_balanced``, ``f1_score_balanced``), ``diff`` (b − a), ``ci``, ``interval`` (its
        method) and, for accuracy only, the ``test`` and its ``p``."""
        return [
            {
                "quantity": "accuracy",
                "diff": self.diff_accuracy,
                "ci": self.diff_accuracy_ci,
                "interval": NEWCOMBE,
                "test": self.test,
                "p": self.p_value,
            },
            {
                "quantity": "accuracy_balanced",
                "diff": self.diff_balanced_accuracy,
                "ci": self.diff_balanced_accuracy_ci,
                "interval": PAIRED_BOOTSTRAP,
                "test": None,
                "p": None,
            },
            {
                "quantity": "f1_score_balanced",
                "diff": self.diff_weighted_f1,
                "ci": self.diff_weighted_f1_ci,
                "interval": PAIRED_BOOTSTRAP,
                "test": None,
                "p": None,
            },
        ]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (labels formatted for people, NaN as ``None``, intervals as lists)."""

        def num(x: float) -> float | None:
            return None if math.isnan(x) else x

        def interval(ci: tuple[float, float] | None) -> list[float | None] | None:
            return None if ci is None else [num(ci[0]), num(ci[1])]

        return {
            "n": self.n,
            "n_dropped": self.n_dropped,
            "labels": [format_label(x) for x in self.labels],
            "balanced_accuracy_a": num(self.balanced_accuracy_a),
            "balanced_accuracy_b": num(self.balanced_accuracy_b),
            "weighted_f1_a": num(self.weighted_f1_a),
            "weighted_f1_b": num(self.weighted_f1_b),
            "diff_balanced_accuracy": num(self.diff_balanced_accuracy),
            "diff_balanced_accuracy_ci": interval(self.diff_balanced_accuracy_ci),
            "diff_weighted_f1": num(self.diff_weighted_f1),
            "diff_weighted_f1_ci": interval(self.diff_weighted_f1_ci),
            "a_right_b_wrong": self.a_right_b_wrong,
            "a_wrong_b_right": self.a_wrong_b_right,
            "mcnemar_p": self.mcnemar_p,
            "mcnemar_midp": num(self.mcnemar_midp),
            "accuracy_a": num(self.accuracy_a),
            "accuracy_b": num(self.accuracy_b),
            "diff_accuracy": num(self.diff_accuracy),
            "diff_accuracy_ci": interval(self.diff_accuracy_ci),
            "test": self.test,
            "p_value": num(self.p_value),
            "rows": [
                {
                    **row,
                    "diff": num(row["diff"]),
                    "ci": interval(row["ci"]),
                    "p": None if row["p"] is None else num(row["p"]),
                }
                for row in self.rows()
            ],
            "n_boot": self.n_boot,
            "confidence": self.confidence,
            "seed": self.seed,
            "metric": self.metric,
            "metric_a": num(self.metric_a),
            "metric_b": num(self.metric_b),
            "diff_metric": num(self.diff_metric),
            "diff_metric_ci": interval(self.diff_metric_ci),
        }


def _scores(cube: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Balanced accuracy and weighted F1 of a and b from (..., human, a, b) tables."""
    table_a = cube.sum(axis=-1)  # (..., human, a)
    table_b = cube.sum(axis=-2)  # (..., human, b)
    counts_a, counts_b = class_counts(table_a), class_counts(table_b)
    return (
        balanced_accuracy_counts(*counts_a),
        balanced_accuracy_counts(*counts_b),
        weighted_f1_counts(*counts_a),
        weighted_f1_counts(*counts_b),
    )


def compare(
    y_human: LabelArray,
    y_judge_a: LabelArray,
    y_judge_b: LabelArray,
    *,
    labels: LabelList = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    metric: str | None = None,
    pos_label: object = None,
    mid_p: bool = False,
) -> Comparison:
    """Compare two judges on the same items: paired bootstrap differences and McNemar's exact test.

    Rows where the human or either judge is missing are dropped (counted in ``n_dropped``), so both
    judges are scored on exactly the same items. ``diff_balanced_accuracy`` and ``diff_weighted_f1``
    are ``b - a`` (positive: the candidate ``b`` agrees with people better). Their percentile
    intervals resample the (human, a, b) count table ``n_boot`` times by one multinomial draw (seeded,
    reproducible, cost independent of rows); ``n_boot=0`` skips them. McNemar's test compares how
    often each judge is exactly right (:func:`mcnemar_exact_p`, and :func:`mcnemar_midp`, reported
    with ``mid_p=True``); the difference it tests, ``diff_accuracy``, has Newcombe's paired score
    interval (:func:`paired_difference_interval`). No row left raises ``MetricError``.

    ``metric`` adds one declared calibration metric (a key or alias of
    :data:`~evalcore.metrics.CALIBRATION_METRICS`, e.g. ``"accuracy"`` or ``"cohen_kappa"``) to the
    comparison, with its paired interval from the same resamples; ``pos_label`` is the positive
    label of a metric of binary scales (``tpr``, ``tnr``; default the first label of the axis).

    >>> c = compare([1, 1, 2, 2], [1, 2, 2, 1], [1, 1, 2, 2], n_boot=0)
    >>> c.diff_balanced_accuracy, c.a_right_b_wrong, c.a_wrong_b_right, c.mcnemar_p  # 1 - 1/2
    (0.5, 0, 2, 0.5)
    >>> compare([1, 1, 2, 2], [1, 2, 2, 2], [1, 1, 2, 2], n_boot=0, metric="accuracy").diff_metric
    0.25
    """
    check_bootstrap(n_boot, confidence, seed, allow_zero=True)
    declared = metric_def(metric) if metric is not None else None
    encoded = encode_rows(
        [y_human, y_judge_a, y_judge_b], ("y_human", "y_judge_a", "y_judge_b"), labels
    )
    require_rows(encoded, "y_human, y_judge_a and y_judge_b")
    cube = count_table(encoded)
    ba_a, ba_b, f1_a, f1_b = (float(x) for x in _scores(cube.astype(np.float64)))
    k = encoded.k
    diagonal = np.arange(k)
    a_right = cube[diagonal, diagonal, :]  # (human = a, b)
    b_right = cube[diagonal, :, diagonal]  # (human = b, a)
    both_right = int(cube[diagonal, diagonal, diagonal].sum())
    a_right_b_wrong = int(a_right.sum()) - both_right
    a_wrong_b_right = int(b_right.sum()) - both_right
    n = encoded.n
    both_wrong = n - both_right - a_right_b_wrong - a_wrong_b_right
    acc_a, acc_b = (both_right + a_right_b_wrong) / n, (both_right + a_wrong_b_right) / n
    ci_acc = paired_difference_interval(
        both_right, a_wrong_b_right, a_right_b_wrong, both_wrong, confidence=confidence
    )
    positive = _positive(encoded.labels, pos_label)
    chosen_a = chosen_b = math.nan
    if declared is not None:
        chosen_a, chosen_b = (float(x) for x in _declared_pair(cube, declared, positive))
    ci_ba = ci_f1 = ci_chosen = None
    if n_boot > 0:
        draws = multinomial_tables(cube, n_boot, np.random.default_rng(seed)).astype(np.float64)
        boot_ba_a, boot_ba_b, boot_f1_a, boot_f1_b = _scores(draws)
        ci_ba = percentile_interval(boot_ba_b - boot_ba_a, confidence)
        ci_f1 = percentile_interval(boot_f1_b - boot_f1_a, confidence)
        if declared is not None:
            boot_a, boot_b = _declared_pair(draws, declared, positive)
            ci_chosen = percentile_interval(boot_b - boot_a, confidence)
    return Comparison(
        n=encoded.n,
        n_dropped=encoded.n_dropped,
        labels=tuple(encoded.labels),
        balanced_accuracy_a=ba_a,
        balanced_accuracy_b=ba_b,
        weighted_f1_a=f1_a,
        weighted_f1_b=f1_b,
        diff_balanced_accuracy=ba_b - ba_a,
        diff_balanced_accuracy_ci=ci_ba,
        diff_weighted_f1=f1_b - f1_a,
        diff_weighted_f1_ci=ci_f1,
        a_right_b_wrong=a_right_b_wrong,
        a_wrong_b_right=a_wrong_b_right,
        mcnemar_p=mcnemar_exact_p(a_right_b_wrong, a_wrong_b_right),
        n_boot=int(n_boot),
        confidence=float(confidence),
        seed=int(seed),
        metric=None if declared is None else declared.key,
        metric_a=chosen_a,
        metric_b=chosen_b,
        diff_metric=chosen_b - chosen_a,
        diff_metric_ci=ci_chosen,
        accuracy_a=acc_a,
        accuracy_b=acc_b,
        diff_accuracy=acc_b - acc_a,
        diff_accuracy_ci=ci_acc,
        mcnemar_midp=mcnemar_midp(a_right_b_wrong, a_wrong_b_right),
        mid_p=bool(mid_p),
    )


def _declared_pair(cube: npt.ArrayLike, declared: MetricDef, positive: int) -> tuple[Any, Any]:
    """A declared metric of a and of b from (..., human, a, b) tables."""
    tables = np.asarray(cube, dtype=np.float64)
    return (
        declared.evaluate(tables.sum(axis=-1), positive),
        declared.evaluate(tables.sum(axis=-2), positive),
    )


def _positive(labels: LabelList, pos_label: object) -> int:
    """The index of the positive label on the axis (default the first)."""
    axis = list(labels or ())
    if pos_label is None:
        return 0
    wanted = normalize_label(pos_label)
    if wanted not in axis:
        shown = ", ".join(format_label(x) for x in axis)
        raise MetricError(f"pos_label {format_label(wanted)!r} is not a label ({shown})")
    return axis.index(wanted)
