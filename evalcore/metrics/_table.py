"""Metrics of count tables, vectorized over any number of leading (bootstrap) axes.

A count table ``t`` has shape ``(..., k, k)``: ``t[..., i, j]`` counts the rows whose first label is the
i-th label of the axis and whose second label is the j-th. Every function here takes such a stack of
tables and returns one value per table (shape ``t.shape[:-2]``), so a point estimate and a thousand
bootstrap resamples go through the same code.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from evalcore.errors import MetricError

FloatArray: TypeAlias = npt.NDArray[np.float64]
Weights: TypeAlias = Literal["linear", "quadratic"] | None


def _float(t: npt.ArrayLike) -> FloatArray:
    return np.asarray(t, dtype=np.float64)


def class_counts(t: npt.ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per class: agreements (diagonal), count in the first array (row sums), in the second (column sums)."""
    table = _float(t)
    tp = np.diagonal(table, axis1=-2, axis2=-1)
    return tp, table.sum(axis=-1), table.sum(axis=-2)


def accuracy_counts(tp: FloatArray, true: FloatArray, pred: FloatArray) -> FloatArray:
    """Share of rows on the diagonal."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(tp.sum(axis=-1) / true.sum(axis=-1), dtype=np.float64)


def balanced_accuracy_counts(tp: FloatArray, true: FloatArray, pred: FloatArray) -> FloatArray:
    """Mean recall over the classes present in the first array (Vertex ``accuracy_balanced``)."""
    present = true > 0
    recall = np.divide(tp, true, out=np.zeros(tp.shape), where=present)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(recall.sum(axis=-1) / present.sum(axis=-1), dtype=np.float64)


def weighted_f1_counts(tp: FloatArray, true: FloatArray, pred: FloatArray) -> FloatArray:
    """Per-class F1 (0 when a class is neither true nor predicted) weighted by its true count."""
    denominator = true + pred
    f1 = np.divide(2.0 * tp, denominator, out=np.zeros(tp.shape), where=denominator > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((f1 * true).sum(axis=-1) / true.sum(axis=-1), dtype=np.float64)


def disagreement_weights(k: int, weights: Weights) -> FloatArray:
    """The k x k disagreement weights of Cohen's kappa over label positions."""
    pos = np.arange(k, dtype=np.float64)
    gap = np.abs(pos[:, None] - pos[None, :])
    if weights is None:
        return (gap > 0).astype(np.float64)
    if weights == "linear":
        return gap
    if weights == "quadratic":
        return gap**2
    raise MetricError(f"weights must be None, 'linear' or 'quadratic' (got {weights!r})")


def kappa_table(t: npt.ArrayLike, weights: Weights = None) -> FloatArray:
    """Cohen's kappa, ``1 - sum(w * observed) / sum(w * expected)``; NaN when the expected sum is 0."""
    table = _float(t)
    k = table.shape[-1]
    w = disagreement_weights(k, weights)
    n = table.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rows = table.sum(axis=-1) / n[..., None]
        cols = table.sum(axis=-2) / n[..., None]
        observed = (table * w).sum(axis=(-2, -1)) / n
        expected = np.einsum("...i,ij,...j->...", rows, w, cols)
        kappa = 1.0 - observed / expected
    return np.asarray(np.where(expected > 0, kappa, np.nan), dtype=np.float64)


def _mid_ranks(counts: FloatArray) -> FloatArray:
    """1-based average rank of each category given how many rows fall in each (in axis order)."""
    before = np.cumsum(counts, axis=-1) - counts
    return before + (counts + 1.0) / 2.0


def spearman_table(t: npt.ArrayLike) -> FloatArray:
    """Spearman's rho with mid-ranks for ties: Pearson correlation of the category mid-ranks."""
    table = _float(t)
    rows, cols = table.sum(axis=-1), table.sum(axis=-2)
    n = rows.sum(axis=-1)
    centre = (n + 1.0) / 2.0
    dr = _mid_ranks(rows) - centre[..., None]
    dc = _mid_ranks(cols) - centre[..., None]
    cov = np.einsum("...i,...ij,...j->...", dr, table, dc)
    var_r = (rows * dr * dr).sum(axis=-1)
    var_c = (cols * dc * dc).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = cov / np.sqrt(var_r * var_c)
    return np.asarray(np.where((var_r > 0) & (var_c > 0), rho, np.nan), dtype=np.float64)


def kendall_table(t: npt.ArrayLike) -> FloatArray:
    """Kendall's tau-b from concordant, discordant and tied pairs counted with 2-D cumulative sums."""
    table = _float(t)
    k = table.shape[-1]
    lead = table.shape[:-2]
    # after[i, j] = rows strictly below and strictly right of (i, j): concordant partners.
    tail = np.flip(np.cumsum(np.cumsum(np.flip(table, (-2, -1)), -2), -1), (-2, -1))
    after = np.zeros((*lead, k + 1, k + 1))
    after[..., :k, :k] = tail
    concordant = (table * after[..., 1:, 1:]).sum(axis=(-2, -1))
    # left[i, j] = rows strictly below and strictly left of (i, j): discordant partners.
    down_left = np.cumsum(np.flip(np.cumsum(np.flip(table, -2), -2), -2), -1)
    left = np.zeros((*lead, k + 1, k + 1))
    left[..., :k, 1:] = down_left
    discordant = (table * left[..., 1:, :k]).sum(axis=(-2, -1))
    rows, cols = table.sum(axis=-1), table.sum(axis=-2)
    n = rows.sum(axis=-1)
    pairs = n * (n - 1.0) / 2.0
    untied_r = pairs - (rows * (rows - 1.0) / 2.0).sum(axis=-1)
    untied_c = pairs - (cols * (cols - 1.0) / 2.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (concordant - discordant) / np.sqrt(untied_r * untied_c)
    return np.asarray(np.where((untied_r > 0) & (untied_c > 0), tau, np.nan), dtype=np.float64)


def rates_table(t: npt.ArrayLike, positive: int) -> tuple[FloatArray, FloatArray]:
    """True positive and true negative rates for the label at index ``positive`` (NaN when undefined)."""
    table = _float(t)
    tp = table[..., positive, positive]
    true_pos = table[..., positive, :].sum(axis=-1)
    pred_pos = table[..., :, positive].sum(axis=-1)
    n = table.sum(axis=(-2, -1))
    true_neg = n - true_pos
    tn = true_neg - (pred_pos - tp)
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr = np.where(true_pos > 0, tp / true_pos, np.nan)
        tnr = np.where(true_neg > 0, tn / true_neg, np.nan)
    return np.asarray(tpr, dtype=np.float64), np.asarray(tnr, dtype=np.float64)


def ac1_table(t: npt.ArrayLike) -> FloatArray:
    """Gwet's AC1, ``(p_a - p_e) / (1 - p_e)`` with ``p_e = sum(pi * (1 - pi)) / (k - 1)`` and ``pi``
    the mean of the two marginal shares of each label; NaN with fewer than 2 labels or ``p_e = 1``."""
    table = _float(t)
    k = table.shape[-1]
    n = table.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        agreed = np.diagonal(table, axis1=-2, axis2=-1).sum(axis=-1) / n
        pi = (table.sum(axis=-1) + table.sum(axis=-2)) / (2.0 * n[..., None])
        chance = (pi * (1.0 - pi)).sum(axis=-1) / (k - 1) if k > 1 else np.full(n.shape, np.nan)
        ac1 = (agreed - chance) / (1.0 - chance)
    return np.asarray(np.where(chance < 1.0, ac1, np.nan), dtype=np.float64)


def independent_table(t: npt.ArrayLike) -> FloatArray:
    """The table expected when the two sides are independent with the same marginals:
    ``rows ⊗ columns / n`` (fractional counts)."""
    table = _float(t)
    n = table.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (
            table.sum(axis=-1)[..., :, None] * table.sum(axis=-2)[..., None, :] / n[..., None, None]
        )
    return np.asarray(out, dtype=np.float64)


def agreement_weights(k: int, weights: Weights, values: FloatArray | None = None) -> FloatArray:
    """The k x k *agreement* weights of irrCAC (1 on the diagonal): identity, ``1 - |a - b| / R``
    (``"linear"``) or ``1 - (a - b)**2 / R**2`` (``"quadratic"``), where ``a, b`` are the labels'
    ``values`` (default: positions 1..k) and ``R`` their range. ``1 - w`` is proportional to the
    disagreement weights of :func:`disagreement_weights` on evenly spaced labels, so kappa is the
    same either way.

    >>> agreement_weights(3, "linear").tolist()
    [[1.0, 0.5, 0.0], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]]
    """
    if weights is None:
        return np.eye(k)
    x = np.arange(1.0, k + 1.0) if values is None else np.asarray(values, dtype=np.float64)
    span = float(x.max() - x.min()) if k > 1 else 1.0
    gap = np.abs(x[:, None] - x[None, :]) / (span if span > 0 else 1.0)
    if weights == "linear":
        return np.asarray(1.0 - gap, dtype=np.float64)
    if weights == "quadratic":
        return np.asarray(1.0 - gap**2, dtype=np.float64)
    raise MetricError(f"weights must be None, 'linear' or 'quadratic' (got {weights!r})")


def kappa_se_table(t: npt.ArrayLike, weights: Weights = None) -> float:
    """The analytic standard error of Cohen's kappa of one k x k table: the large-sample variance
    of Fleiss, Cohen and Everitt (1969) at the estimate, as irrCAC's ``table.CAC.cohen`` computes
    it (agreement weights over positions, no finite-population correction):
    ``var = (sum p_kl (w_kl - (1 - kappa)(wbar_k. + wbar_.l))**2 - (kappa - p_e (1 - kappa))**2)
    / (n (1 - p_e)**2)`` where ``wbar_k.`` averages row k's weights under the column shares and
    ``wbar_.l`` column l's under the row shares. NaN when kappa is undefined.

    >>> round(kappa_se_table([[10, 2], [3, 15]]), 6)  # irrCAC: 0.13923
    0.13923
    """
    table = _float(t)
    k = table.shape[-1]
    n = float(table.sum())
    w = agreement_weights(k, weights)
    if n <= 0:
        return float("nan")
    p = table / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    pa = float((w * p).sum())
    pe = float(rows @ w @ cols)
    if pe >= 1.0:
        return float("nan")
    kappa = (pa - pe) / (1.0 - pe)
    wbar_row = w @ cols  # row category k: sum_l w_kl * col_l
    wbar_col = rows @ w  # column category l: sum_k w_kl * row_k
    inner = w - (1.0 - kappa) * (wbar_row[:, None] + wbar_col[None, :])
    first = float((p * inner * inner).sum())
    variance = (first - (pa - 2.0 * (1.0 - kappa) * pe) ** 2) / (n * (1.0 - pe) ** 2)
    return float(np.sqrt(max(variance, 0.0)))


def ac_se_table(t: npt.ArrayLike, weights: Weights = None) -> float:
    """The analytic standard error of Gwet's AC1 (AC2 with ``weights``) of one k x k table, as
    irrCAC's ``table.CAC.gwet`` computes it (Gwet 2008/2014, no finite-population correction):
    with ``pi_k`` the mean of the two raters' shares, ``T`` the sum of the agreement weights and
    ``c = T / (k (k - 1))``: ``var = (sum p_kl (w_kl - 2 (1 - AC) c (1 - (pi_k + pi_l)/2))**2 -
    (p_a - 2 (1 - AC) p_e)**2) / (n (1 - p_e)**2)``. NaN when the coefficient is undefined.

    >>> round(ac_se_table([[10, 2], [3, 15]]), 6)  # irrCAC: 0.134934
    0.134934
    """
    table = _float(t)
    k = table.shape[-1]
    n = float(table.sum())
    if n <= 0 or k < 2:
        return float("nan")
    w = agreement_weights(k, weights)
    p = table / n
    pi = (p.sum(axis=1) + p.sum(axis=0)) / 2.0
    c = float(w.sum()) / (k * (k - 1))
    pa = float((w * p).sum())
    pe = c * float((pi * (1.0 - pi)).sum())
    if pe >= 1.0:
        return float("nan")
    ac = (pa - pe) / (1.0 - pe)
    term = w - 2.0 * (1.0 - ac) * c * (1.0 - (pi[:, None] + pi[None, :]) / 2.0)
    first = float((p * term * term).sum())
    variance = (first - (pa - 2.0 * (1.0 - ac) * pe) ** 2) / (n * (1.0 - pe) ** 2)
    return float(np.sqrt(max(variance, 0.0)))


def ac2_table(t: npt.ArrayLike, weights: Weights) -> FloatArray:
    """Gwet's AC2 of tables over label positions: ``(p_a - p_e) / (1 - p_e)`` with weighted
    agreement ``p_a = sum w_kl p_kl`` and ``p_e = T / (k (k - 1)) * sum pi_k (1 - pi_k)`` (``T`` the
    sum of the agreement weights, ``pi_k`` the mean of the two marginal shares); equals
    :func:`ac1_table` for identity weights. NaN with fewer than 2 labels or ``p_e = 1``."""
    table = _float(t)
    k = table.shape[-1]
    n = table.sum(axis=(-2, -1))
    if k < 2:
        return np.full(n.shape, np.nan)
    w = agreement_weights(k, weights)
    with np.errstate(invalid="ignore", divide="ignore"):
        agreed = (table * w).sum(axis=(-2, -1)) / n
        pi = (table.sum(axis=-1) + table.sum(axis=-2)) / (2.0 * n[..., None])
        chance = float(w.sum()) / (k * (k - 1)) * (pi * (1.0 - pi)).sum(axis=-1)
        ac = (agreed - chance) / (1.0 - chance)
    return np.asarray(np.where(chance < 1.0, ac, np.nan), dtype=np.float64)
