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
