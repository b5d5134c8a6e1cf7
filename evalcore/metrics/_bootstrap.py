"""Percentile bootstrap intervals that resample count tables instead of rows.

Drawing ``n`` rows with replacement from a table of counts gives a multinomial draw over its cells with
probabilities ``table / n``; drawing all resamples with one ``rng.multinomial`` call and evaluating the
metric on the whole stack of tables costs the same at a hundred rows as at a million.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from evalcore.errors import MetricError
from evalcore.metrics._classification import PAIR_SYM, encode_pair, require_rows
from evalcore.metrics._declared import TABLE_FUNCTIONS
from evalcore.metrics._encode import FloatArray, IntArray, LabelArray, LabelList, count_table

#: Names of the metrics :func:`table_metric` and :func:`bootstrap_ci` know, as used in reports.
TABLE_METRICS: tuple[str, ...] = tuple(TABLE_FUNCTIONS)

#: A metric's key; one of :data:`TABLE_METRICS` (checked when called).
TableMetric = str


def check_bootstrap(n_boot: int, confidence: float, seed: int, *, allow_zero: bool) -> None:
    """Validate the common bootstrap options."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, numbers.Integral):
        raise MetricError(f"n_boot must be a whole number (got {n_boot!r})")
    low = 0 if allow_zero else 1
    if n_boot < low:
        raise MetricError(f"n_boot must be at least {low} (got {n_boot})")
    if not isinstance(confidence, numbers.Real) or not 0 < float(confidence) < 1:
        raise MetricError(f"confidence must be between 0 and 1, exclusive (got {confidence!r})")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise MetricError(f"seed must be an integer (got {seed!r})")


def multinomial_tables(
    table: npt.ArrayLike, n_boot: int, rng: np.random.Generator
) -> npt.NDArray[np.int64]:
    """``n_boot`` tables drawn from ``table``'s cells with the same total (any number of dimensions)."""
    counts = np.asarray(table, dtype=np.int64)
    n = int(counts.sum())
    if n == 0:
        return np.zeros((n_boot, *counts.shape), dtype=np.int64)
    draws = rng.multinomial(n, counts.ravel() / n, size=n_boot)
    return np.asarray(draws, dtype=np.int64).reshape((n_boot, *counts.shape))


def percentile_interval(values: npt.ArrayLike, confidence: float) -> tuple[float, float]:
    """Central percentile interval of the finite values; ``(nan, nan)`` when none is finite."""
    data = np.asarray(values, dtype=np.float64).ravel()
    data = data[np.isfinite(data)]
    if data.size == 0:
        return (math.nan, math.nan)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(data, [tail, 1.0 - tail])
    return (float(low), float(high))


def check_table(table: npt.ArrayLike) -> IntArray:
    counts = np.asarray(table)
    if counts.ndim < 2 or counts.shape[-1] != counts.shape[-2] or counts.shape[-1] == 0:
        raise MetricError(f"a count table must be square, k x k (got shape {counts.shape})")
    if counts.dtype.kind not in "iu" and not (
        counts.dtype.kind == "f"
        and np.all(np.isfinite(counts))
        and np.all(counts == counts.round())
    ):
        raise MetricError("a count table must hold whole numbers")
    if np.any(counts < 0):
        raise MetricError("a count table cannot hold negative counts")
    return np.asarray(counts, dtype=np.int64)


def resample_table(table: npt.ArrayLike, *, n_boot: int = 1000, seed: int = 0) -> IntArray:
    """Bootstrap resamples of a k x k count table, shape ``(n_boot, k, k)``.

    Each resample is one multinomial draw of ``n = table.sum()`` rows over the cells with probabilities
    ``table / n`` (the same distribution as resampling the rows with replacement). Seeded with
    ``numpy.random.default_rng(seed)``, so the same seed gives the same resamples.

    >>> draws = resample_table([[3, 1], [0, 4]], n_boot=5, seed=1)
    >>> draws.shape, draws.sum(axis=(1, 2)).tolist()
    ((5, 2, 2), [8, 8, 8, 8, 8])
    """
    check_bootstrap(n_boot, 0.95, seed, allow_zero=False)
    counts = check_table(table)
    if counts.ndim != 2:
        raise MetricError(f"resample_table takes one k x k table (got shape {counts.shape})")
    return multinomial_tables(counts, n_boot, np.random.default_rng(seed))


def _table_function(metric: str) -> Callable[[npt.ArrayLike], FloatArray]:
    fn = TABLE_FUNCTIONS.get(metric)
    if fn is None:
        raise MetricError(
            f"unknown table metric {metric!r}; expected one of {', '.join(TABLE_METRICS)}"
        )
    return fn


def table_metric(table: npt.ArrayLike, metric: TableMetric) -> FloatArray:
    """Evaluate a named metric on one count table or on a stack of them (rows = human / first array).

    ``table`` has shape ``(..., k, k)``; the result has shape ``table.shape[:-2]`` (a 0-d array for one
    table). ``metric`` is the key of a declared metric that needs no positive label
    (:data:`TABLE_METRICS`, from :data:`~evalcore.metrics.CALIBRATION_METRICS`), with the
    definitions (and NaN rules) of :func:`balanced_accuracy`, :func:`weighted_f1`,
    :func:`accuracy`, :func:`cohen_kappa`, :func:`spearman` and :func:`kendall_tau_b`. A table with
    no rows gives NaN.

    >>> float(table_metric([[2, 1], [0, 2]], "accuracy_balanced"))  # (2/3 + 2/2) / 2
    0.8333333333333333
    """
    return _table_function(metric)(check_table(table))


def bootstrap_ci(
    y1: LabelArray,
    y2: LabelArray,
    *,
    metric: TableMetric,
    labels: LabelList = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of a confusion-table metric of two label arrays.

    The k x k table of the two arrays (first array = rows = human) is resampled ``n_boot`` times by a
    multinomial draw over its cells (see :func:`resample_table`), ``metric`` (one of
    :data:`TABLE_METRICS`) is evaluated on every resample at once, and the central ``confidence``
    share of the values gives ``(low, high)``. Resamples where the metric is undefined (NaN) are left
    out; when all are, the interval is ``(nan, nan)``. Reproducible for a given ``seed``; the cost does
    not grow with the number of rows. Rows where either side is missing are dropped first; no row left
    raises ``MetricError``.

    >>> bootstrap_ci([1, 1, 2, 2], [1, 1, 2, 2], metric="accuracy", n_boot=50)  # always perfect
    (1.0, 1.0)
    """
    check_bootstrap(n_boot, confidence, seed, allow_zero=False)
    fn = _table_function(metric)
    encoded = encode_pair(y1, y2, labels, PAIR_SYM)
    require_rows(encoded)
    draws = multinomial_tables(count_table(encoded), n_boot, np.random.default_rng(seed))
    return percentile_interval(fn(draws), confidence)


def jackknife_tables(table: npt.ArrayLike) -> tuple[IntArray, FloatArray]:
    """The distinct leave-one-out tables of a count table and how many rows give each.

    Leaving out any one row of cell ``c`` gives the same table (``table`` with one less in ``c``),
    so the jackknife over n rows is a weighted jackknife over the non-empty cells: returns the
    stack of those tables, shape ``(cells, *table.shape)``, and the cell counts as weights.

    >>> stack, weights = jackknife_tables([[2, 0], [1, 1]])
    >>> stack.tolist(), weights.tolist()
    ([[[1, 0], [1, 1]], [[2, 0], [0, 1]], [[2, 0], [1, 0]]], [2.0, 1.0, 1.0])
    """
    counts = np.asarray(table, dtype=np.int64)
    cells = np.flatnonzero(counts.ravel() > 0)
    stack = np.repeat(counts.ravel()[None, :], len(cells), axis=0)
    stack[np.arange(len(cells)), cells] -= 1
    return (
        np.asarray(stack.reshape((len(cells), *counts.shape)), dtype=np.int64),
        counts.ravel()[cells].astype(np.float64),
    )


def bca_interval(
    estimate: float,
    boot: npt.ArrayLike,
    jackknife: npt.ArrayLike,
    weights: npt.ArrayLike,
    confidence: float,
) -> tuple[float, float]:
    """The bias-corrected and accelerated (BCa) bootstrap interval, with scipy's conventions
    (``scipy.stats.bootstrap(method="BCa")``): ``z0 = Φ⁻¹(share of resamples below the
    estimate)``, the acceleration ``a = sum d³ / (6 (sum d²)^1.5)`` from the jackknife deviations
    ``d = mean(θ₍ᵢ₎) − θ₍ᵢ₎`` (``weights``: rows per distinct leave-one-out value), and the
    percentiles ``Φ(z0 + (z0 + z) / (1 − a (z0 + z)))`` at ``z = ±z(1 − α/2)``. Resamples where the
    statistic is undefined are left out; when every resample lies on one side of the estimate (or
    equals it) ``z0`` is infinite and the percentile interval is returned.

    >>> lo, hi = bca_interval(0.5, [0.3, 0.4, 0.6, 0.7], [0.5, 0.5], [1, 1], 0.8)
    >>> round(lo, 6), round(hi, 6)  # z0 = 0 and a = 0: the 10th and 90th percentiles
    (0.33, 0.67)
    """
    from statistics import NormalDist

    values = np.asarray(boot, dtype=np.float64).ravel()
    values = values[np.isfinite(values)]
    if values.size == 0 or not math.isfinite(estimate):
        return (math.nan, math.nan)
    below = float(np.mean(values < estimate))
    if below <= 0.0 or below >= 1.0:
        return percentile_interval(values, confidence)
    normal = NormalDist()
    z0 = normal.inv_cdf(below)
    theta = np.asarray(jackknife, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    ok = np.isfinite(theta)
    a = 0.0
    if ok.any():
        mean = float((w[ok] * theta[ok]).sum() / w[ok].sum())
        d = mean - theta[ok]
        spread = float((w[ok] * d * d).sum())
        if spread > 0:
            a = float((w[ok] * d**3).sum()) / (6.0 * spread**1.5)
    z = normal.inv_cdf(0.5 + confidence / 2.0)
    shares = []
    for zz in (-z, z):
        shifted = z0 + zz
        shares.append(normal.cdf(z0 + shifted / (1.0 - a * shifted)))
    low, high = np.quantile(values, shares)
    return (float(low), float(high))
