"""Agreement of two label arrays: confusion matrix, (balanced) accuracy, weighted F1, kappa, rank correlations.

All of them drop the rows where either side is missing (Vertex semantics) and work from integer codes and
counts. They raise :class:`~evalcore.errors.MetricError` when no row is left to compare.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from evalcore.errors import MetricError
from evalcore.labels import Label, format_label
from evalcore.metrics._encode import (
    MAX_TABLE_CELLS,
    Encoded,
    FloatArray,
    IntArray,
    LabelArray,
    LabelList,
    count_table,
    encode_rows,
)
from evalcore.metrics._table import (
    ac1_table,
    accuracy_counts,
    balanced_accuracy_counts,
    kappa_table,
    kendall_table,
    spearman_table,
    weighted_f1_counts,
)

PAIR_TRUE = ("y_true", "y_pred")
PAIR_SYM = ("y1", "y2")


def encode_pair(
    a: LabelArray, b: LabelArray, labels: LabelList, names: tuple[str, str] = PAIR_TRUE
) -> Encoded:
    """Encode two aligned arrays on one axis, dropping rows where either is missing."""
    return encode_rows([a, b], names, labels)


def require_rows(encoded: Encoded, what: str = "the two arrays") -> None:
    """Raise when no comparable row is left."""
    if encoded.n == 0 and encoded.n_dropped == 0:
        raise MetricError(f"no comparable rows: {what} are empty")
    if encoded.n == 0:
        raise MetricError(
            f"no comparable rows: every one of the {encoded.n_dropped} rows of {what} has a missing "
            "label on at least one side"
        )


def _class_counts(encoded: Encoded) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Agreements, first-array and second-array counts per class, in O(rows + labels)."""
    a, b = encoded.codes
    k = encoded.k
    tp = np.bincount(a[a == b], minlength=k).astype(np.float64)
    true = np.bincount(a, minlength=k).astype(np.float64)
    pred = np.bincount(b, minlength=k).astype(np.float64)
    return tp, true, pred


def confusion_matrix(
    y_true: LabelArray, y_pred: LabelArray, *, labels: LabelList = None
) -> IntArray:
    """Count table of human labels (rows) against judge labels (columns).

    ``cm[i, j]`` is the number of rows whose ``y_true`` is ``labels[i]`` and whose ``y_pred`` is
    ``labels[j]``; the axis order is :func:`confusion_labels`. Rows where either side is missing (None,
    NaN, ``""``, ``"error"``) are dropped. With ``labels=None`` the axis is the union of labels seen on
    both sides, numbers sorted numerically; explicit ``labels`` fix the order and may include labels
    that never occur. An observed label missing from explicit ``labels`` raises ``MetricError``.

    >>> confusion_matrix([1, 2, 2, "error"], ["1", 2, 1, 2]).tolist()
    [[1, 0], [1, 1]]
    """
    return count_table(encode_pair(y_true, y_pred, labels))


def confusion_labels(
    y_true: LabelArray, y_pred: LabelArray, *, labels: LabelList = None
) -> list[Label]:
    """The labels of the axes of :func:`confusion_matrix` for the same arguments.

    Numbers are floats (``1`` and ``"1"`` are the label ``1.0``) and sort numerically, words sort as
    strings, unless explicit ``labels`` give the order.

    >>> confusion_labels(["10", 2, 9], [1, 2, None])
    [1.0, 2.0, 9.0, 10.0]
    """
    return encode_pair(y_true, y_pred, labels).labels


def accuracy(y_true: LabelArray, y_pred: LabelArray, *, labels: LabelList = None) -> float:
    """Share of rows where the judge's label equals the human's.

    Range 0 (worst) to 1 (best). ``labels`` only checks that every observed label is on the axis.
    Rows where either side is missing are dropped; no row left raises ``MetricError``.

    >>> accuracy([1, 2, 3, None], [1, 2, 2, 3])  # 2 of the 3 comparable rows agree
    0.6666666666666666
    """
    encoded = encode_pair(y_true, y_pred, labels)
    require_rows(encoded)
    return float(accuracy_counts(*_class_counts(encoded)))


def balanced_accuracy(y_true: LabelArray, y_pred: LabelArray, *, labels: LabelList = None) -> float:
    """Mean per-class recall: Vertex AI's ``accuracy_balanced``.

    ``recall(c) = (rows with y_true = y_pred = c) / (rows with y_true = c)``, averaged over the classes
    that occur in ``y_true``. A class that never occurs in ``y_true`` (one only the judge uses) is left
    out of the mean; a class that occurs in ``y_true`` but is never predicted counts with recall 0. This
    equals scikit-learn's ``balanced_accuracy_score``. Range 0 (worst) to 1 (best). Rows where either
    side is missing are dropped; no row left raises ``MetricError``.

    >>> balanced_accuracy([1, 1, 1, 2, 2], [1, 1, 2, 2, 3])  # (2/3 + 1/2) / 2
    0.5833333333333333
    """
    encoded = encode_pair(y_true, y_pred, labels)
    require_rows(encoded)
    return float(balanced_accuracy_counts(*_class_counts(encoded)))


def weighted_f1(y_true: LabelArray, y_pred: LabelArray, *, labels: LabelList = None) -> float:
    """Per-class F1 weighted by each class's count in ``y_true``: Vertex AI's ``f1_score_balanced``.

    ``F1(c) = 2 * agreements(c) / (count of c in y_true + count of c in y_pred)``, 0 when the class is
    never predicted or never agreed on; the weights are the class counts in ``y_true``, so a class only
    the judge uses weighs nothing. Equals ``sklearn.metrics.f1_score(average="weighted",
    zero_division=0)``. Range 0 (worst) to 1 (best). Rows where either side is missing are dropped; no
    row left raises ``MetricError``.

    >>> weighted_f1([1, 1, 2, 2], [1, 2, 2, 2])  # F1(1) = 2/3, F1(2) = 4/5 -> (2*2/3 + 2*4/5)/4
    0.7333333333333334
    """
    encoded = encode_pair(y_true, y_pred, labels)
    require_rows(encoded)
    return float(weighted_f1_counts(*_class_counts(encoded)))


def cohen_kappa(
    y1: LabelArray,
    y2: LabelArray,
    *,
    labels: LabelList = None,
    weights: Literal["linear", "quadratic"] | None = None,
) -> float:
    """Cohen's kappa: agreement of two raters corrected for the agreement expected by chance.

    ``kappa = 1 - sum(w * observed) / sum(w * expected)`` where ``observed`` is the joint distribution
    of the two arrays, ``expected`` the product of their marginal distributions and ``w`` the
    disagreement weight of two label positions ``i, j`` in ``labels`` order: ``1`` when they differ
    (``weights=None``), ``|i - j|`` (``"linear"``) or ``(i - j)**2`` (``"quadratic"``). Equals
    scikit-learn's ``cohen_kappa_score`` with the same labels. Range -1 to 1 (best; 0 = chance level).
    Returns NaN when expected disagreement is 0 (both raters always give the same single label).
    Symmetric. Rows where either side is missing are dropped; no row left raises ``MetricError``.

    >>> cohen_kappa(["a", "a", "b", "b"], ["a", "b", "b", "b"])  # (0.75 - 0.5) / (1 - 0.5)
    0.5
    """
    encoded = encode_pair(y1, y2, labels, PAIR_SYM)
    require_rows(encoded)
    return float(kappa_table(count_table(encoded), weights))


def gwet_ac1(y1: LabelArray, y2: LabelArray, *, labels: LabelList = None) -> float:
    """Gwet's AC1: agreement of two raters corrected for a chance agreement that stays small when
    one label dominates (where Cohen's kappa collapses although the raters nearly always agree).

    ``AC1 = (p_a - p_e) / (1 - p_e)`` with ``p_a`` the share of rows where the two agree,
    ``pi_c`` the mean of the two raters' shares of label ``c`` and ``p_e = sum(pi_c * (1 - pi_c))
    / (k - 1)`` over the ``k`` labels of the axis (``labels``, default the labels seen). Range -1
    to 1 (best). NaN with a single label on the axis. Symmetric. Rows where either side is missing
    are dropped; no row left raises ``MetricError``.

    >>> gwet_ac1(["a", "a", "a", "b"], ["a", "a", "a", "a"])  # p_a 3/4, pi_a 7/8, p_e 7/32
    0.68
    """
    encoded = encode_pair(y1, y2, labels, PAIR_SYM)
    require_rows(encoded)
    return float(ac1_table(count_table(encoded)))


@dataclass(frozen=True)
class ClassMetrics:
    """Precision, recall, F1 and support of one label (human = truth, judge = prediction)."""

    label: Label
    precision: float
    recall: float
    f1: float
    support: int

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready form with the label formatted for people (``"4"`` not ``4.0``)."""
        return {
            "label": format_label(self.label),
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "support": self.support,
        }


def class_metrics_from_counts(
    labels: list[Label], tp: FloatArray, true: FloatArray, pred: FloatArray
) -> list[ClassMetrics]:
    """Per-class metrics from agreements, true counts and predicted counts (zero division gives 0)."""
    precision = np.divide(tp, pred, out=np.zeros(tp.shape), where=pred > 0)
    recall = np.divide(tp, true, out=np.zeros(tp.shape), where=true > 0)
    both = precision + recall
    f1 = np.divide(2 * precision * recall, both, out=np.zeros(tp.shape), where=both > 0)
    return [
        ClassMetrics(label, float(p), float(r), float(f), int(s))
        for label, p, r, f, s in zip(labels, precision, recall, f1, true, strict=True)
    ]


def per_class_metrics(
    y_true: LabelArray, y_pred: LabelArray, *, labels: LabelList = None
) -> list[ClassMetrics]:
    """Precision, recall, F1 and support of every label on the axis, in axis order.

    ``precision(c)`` = agreements on c / rows the judge labelled c, ``recall(c)`` = agreements on c /
    rows the human labelled c, ``f1`` their harmonic mean and ``support`` the human count of c. A zero
    denominator gives 0 (like scikit-learn's ``zero_division=0``). Each score ranges from 0 (worst) to
    1 (best). Rows where either side is missing are dropped; no row left raises ``MetricError``.

    >>> [(m.label, m.precision, m.recall, m.support) for m in per_class_metrics([1, 1, 2], [1, 2, 2])]
    [(1.0, 1.0, 0.5, 2), (2.0, 0.5, 1.0, 1)]
    """
    encoded = encode_pair(y_true, y_pred, labels)
    require_rows(encoded)
    return class_metrics_from_counts(encoded.labels, *_class_counts(encoded))


def _rank_table_fits(encoded: Encoded) -> bool:
    return encoded.k * encoded.k <= MAX_TABLE_CELLS


def spearman(y1: LabelArray, y2: LabelArray, *, labels: LabelList = None) -> float:
    """Spearman's rank correlation of two ordinal label arrays (ties get mid-ranks).

    Each label is ranked by its position in ``labels`` order (numbers sort numerically with
    ``labels=None``; give ``labels`` for an ordinal word scale such as severity). The result is the
    Pearson correlation of the mid-ranks, computed from the contingency table, and equals
    ``scipy.stats.spearmanr`` on the raw arrays. Range -1 to 1 (best). Returns NaN when either array is
    constant. Symmetric. Rows where either side is missing are dropped; no row left raises
    ``MetricError``.

    >>> spearman(["low", "mid", "high"], ["low", "high", "high"], labels=["low", "mid", "high"])
    0.8660254037844387
    """
    encoded = encode_pair(y1, y2, labels, PAIR_SYM)
    require_rows(encoded)
    if _rank_table_fits(encoded):
        return float(spearman_table(count_table(encoded)))
    a, b = encoded.codes
    k = encoded.k
    ranks_a = _mid_rank_lookup(np.bincount(a, minlength=k))[a]
    ranks_b = _mid_rank_lookup(np.bincount(b, minlength=k))[b]
    if np.ptp(ranks_a) == 0 or np.ptp(ranks_b) == 0:
        return float("nan")
    return float(np.corrcoef(ranks_a, ranks_b)[0, 1])


def _mid_rank_lookup(counts: IntArray) -> FloatArray:
    before = np.cumsum(counts) - counts
    return np.asarray(before + (counts + 1.0) / 2.0, dtype=np.float64)


def kendall_tau_b(y1: LabelArray, y2: LabelArray, *, labels: LabelList = None) -> float:
    """Kendall's tau-b of two ordinal label arrays.

    ``tau_b = (C - D) / sqrt((P - T1) * (P - T2))`` with ``C``/``D`` the concordant/discordant pairs of
    rows, ``P = n(n-1)/2`` all pairs and ``T1``/``T2`` the pairs tied in each array. Labels are ranked by
    their position in ``labels`` order, as in :func:`spearman`. Computed from the contingency table with
    cumulative sums; equals ``scipy.stats.kendalltau`` (variant b) on the raw arrays. Range -1 to 1
    (best). Returns NaN when either array is constant. Symmetric. Rows where either side is missing
    are dropped; no row left raises ``MetricError``.

    >>> kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4])  # C = 5, D = 1, no ties: (5 - 1) / 6
    0.6666666666666666
    """
    encoded = encode_pair(y1, y2, labels, PAIR_SYM)
    require_rows(encoded)
    if _rank_table_fits(encoded):
        return float(kendall_table(count_table(encoded)))
    import scipy.stats  # only for scales too large for the table; a CLI start stays light

    a, b = encoded.codes
    return float(scipy.stats.kendalltau(a, b).statistic)
