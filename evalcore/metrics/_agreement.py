"""Agreement between annotators: ratings as an items x annotators table, missing ratings allowed."""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt
import pandas as pd

from evalcore.errors import MetricError
from evalcore.labels import Label
from evalcore.metrics._bootstrap import check_bootstrap, percentile_interval
from evalcore.metrics._encode import (
    FloatArray,
    IntArray,
    LabelList,
    encode_columns,
    normalize_column,
)
from evalcore.metrics._table import Weights, kappa_table

#: Ratings: a DataFrame whose columns are annotators, or a 2-D array (rows = items).
Ratings: TypeAlias = "pd.DataFrame | npt.NDArray[Any] | list[list[Any]]"
Level: TypeAlias = Literal["nominal", "ordinal", "interval"]


@dataclass(frozen=True)
class RatingTable:
    """Ratings coded on one label axis: ``codes[item, annotator]``, ``-1`` = not rated."""

    names: list[Hashable]
    labels: list[Label]
    codes: IntArray

    @property
    def k(self) -> int:
        return len(self.labels)

    def item_counts(self) -> IntArray:
        """items x labels: how many annotators gave each label to each item."""
        n_items = self.codes.shape[0]
        item = np.repeat(np.arange(n_items, dtype=np.int64), self.codes.shape[1])
        flat = self.codes.ravel()
        rated = flat >= 0
        cells = np.bincount(item[rated] * self.k + flat[rated], minlength=n_items * self.k).astype(
            np.int64, copy=False
        )
        return cells.reshape(n_items, self.k)


def encode_ratings(ratings: Ratings, labels: LabelList) -> RatingTable:
    """Normalize every annotator's column and code all of them on one label axis."""
    if isinstance(ratings, pd.DataFrame):
        names: list[Hashable] = list(ratings.columns)
        if len(set(names)) != len(names):
            raise MetricError("ratings has repeated annotator column names")
        raw = [ratings.iloc[:, j] for j in range(ratings.shape[1])]
    else:
        if isinstance(ratings, pd.Series):
            raise MetricError("ratings must be a table (items x annotators), not one column")
        array = ratings if isinstance(ratings, np.ndarray) else _object_table(ratings)
        if array.ndim != 2:
            raise MetricError(f"ratings must be 2-D, items x annotators (got shape {array.shape})")
        names = list(range(array.shape[1]))
        raw = [array[:, j] for j in range(array.shape[1])]
    if not raw:
        raise MetricError("ratings has no annotator column")
    columns = [
        normalize_column(col, f"annotator {name!r}") for col, name in zip(raw, names, strict=True)
    ]
    axis, coded = encode_columns(columns, [f"annotator {n!r}" for n in names], labels)
    codes = np.column_stack(coded) if coded[0].size else np.zeros((0, len(coded)), dtype=np.int64)
    return RatingTable(names, axis, np.asarray(codes, dtype=np.int64))


def _object_table(rows: Any) -> npt.NDArray[Any]:
    try:
        table = pd.DataFrame(list(rows))
    except (TypeError, ValueError) as err:
        raise MetricError(f"ratings must be a table, items x annotators ({err})") from None
    return np.asarray(table.to_numpy(dtype=object))


def pairwise_cohen_kappa(
    ratings: Ratings,
    *,
    labels: LabelList = None,
    weights: Weights = None,
) -> pd.DataFrame:
    """Cohen's kappa of every pair of annotators, over the items both of them rated.

    ``ratings`` is a DataFrame whose columns are annotators (or a 2-D array, columns 0..m-1) with one
    row per item; a missing rating (None, NaN, ``""``, ``"error"``) leaves the item out of that
    annotator's pairs. Returns a symmetric annotator x annotator DataFrame of :func:`cohen_kappa`
    values (``weights`` as there, over positions in ``labels`` order); the diagonal is an annotator
    against itself (1, or NaN when undefined). A cell is NaN when the pair shares fewer than 2
    items or when kappa is undefined for them (expected agreement 1).

    >>> df = pd.DataFrame({"ann": [1, 1, 2, 2], "bob": [1, 2, 2, 2], "cy": [1, 1, 2, None]})
    >>> float(pairwise_cohen_kappa(df).loc["ann", "bob"])  # (3/4 - 1/2) / (1 - 1/2)
    0.5
    """
    table = encode_ratings(ratings, labels)
    m, k = table.codes.shape[1], table.k
    out = np.full((m, m), math.nan)
    for i in range(m):
        for j in range(i, m):
            a, b = table.codes[:, i], table.codes[:, j]
            both = (a >= 0) & (b >= 0)
            if np.count_nonzero(both) < 2:
                continue
            counts = np.bincount(a[both] * k + b[both], minlength=k * k).reshape(k, k)
            out[i, j] = out[j, i] = float(kappa_table(counts, weights))
    return pd.DataFrame(out, index=pd.Index(table.names), columns=pd.Index(table.names))


# --- Krippendorff's alpha ---------------------------------------------------------------------------


def _coincidences(counts: IntArray) -> FloatArray:
    """Per item: (n_uc * n_uk - [c = k] * n_uc) / (m_u - 1), shape items x k x k (items with m_u >= 2)."""
    values = counts.astype(np.float64)
    m = values.sum(axis=1)
    outer = values[:, :, None] * values[:, None, :]
    idx = np.arange(values.shape[1])
    outer[:, idx, idx] -= values
    return np.asarray(outer / (m - 1.0)[:, None, None], dtype=np.float64)


def _total_coincidences(counts: IntArray) -> FloatArray:
    """The k x k coincidence matrix summed over items, as one matrix product."""
    values = counts.astype(np.float64)
    share = values / (values.sum(axis=1) - 1.0)[:, None]
    total = share.T @ values
    total[np.diag_indices_from(total)] -= share.sum(axis=0)
    return np.asarray(total, dtype=np.float64)


def _patterns(counts: IntArray) -> tuple[IntArray, IntArray]:
    """Distinct rows of an items x labels count matrix and how often each occurs."""
    base = int(counts.max()) + 1
    k = counts.shape[1]
    if k * np.log2(base) < 62:  # each row fits in one int64 key: group by a 1-D unique
        key = counts @ (base ** np.arange(k, dtype=np.int64))
        _, first, frequency = np.unique(key, return_index=True, return_counts=True)
        return np.asarray(counts[first], dtype=np.int64), np.asarray(frequency, dtype=np.int64)
    rows, frequency = np.unique(counts, axis=0, return_counts=True)
    return np.asarray(rows, dtype=np.int64), np.asarray(frequency, dtype=np.int64)


def _distances(marginals: FloatArray, level: Level, values: FloatArray) -> FloatArray:
    """Squared distances between labels, shape (..., k, k); the ordinal one depends on the marginals."""
    k = values.shape[0]
    if level == "nominal":
        return np.broadcast_to(1.0 - np.eye(k), (*marginals.shape[:-1], k, k))
    if level == "interval":
        gap = values[:, None] - values[None, :]
        return np.broadcast_to(gap * gap, (*marginals.shape[:-1], k, k))
    # ordinal: delta(c, k) = (sum of n_g for g from c to k  -  (n_c + n_k) / 2) ** 2
    running = np.cumsum(marginals, axis=-1)
    n_c = marginals[..., :, None]
    n_k = marginals[..., None, :]
    run_c = running[..., :, None]
    run_k = running[..., None, :]
    span = np.where(
        np.arange(k)[:, None] <= np.arange(k)[None, :],
        run_k - run_c + n_c,  # c <= k: n_c + ... + n_k
        run_c - run_k + n_k,  # c > k: n_k + ... + n_c
    )
    return np.asarray((span - (n_c + n_k) / 2.0) ** 2, dtype=np.float64)


def _alpha(coincidence: FloatArray, level: Level, values: FloatArray) -> FloatArray:
    """Alpha of one or many coincidence matrices: ``1 - (n - 1) * sum(o * d) / sum(n_c * n_k * d)``."""
    marginals = coincidence.sum(axis=-1)
    n = marginals.sum(axis=-1)
    delta = _distances(marginals, level, values)
    observed = (coincidence * delta).sum(axis=(-2, -1))
    expected = np.einsum("...c,...ck,...k->...", marginals, delta, marginals)
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1.0 - (n - 1.0) * observed / expected
    return np.asarray(np.where((expected > 0) & (n > 1), alpha, np.nan), dtype=np.float64)


def _level_values(table: RatingTable, level: str) -> FloatArray:
    if level not in ("nominal", "ordinal", "interval"):
        raise MetricError(f"level must be 'nominal', 'ordinal' or 'interval' (got {level!r})")
    if all(isinstance(x, float) for x in table.labels):
        return np.asarray(table.labels, dtype=np.float64)
    return np.arange(table.k, dtype=np.float64)


def _pairable(table: RatingTable) -> IntArray:
    counts = table.item_counts()
    return np.asarray(counts[counts.sum(axis=1) >= 2], dtype=np.int64)


def krippendorff_alpha(
    ratings: Ratings,
    *,
    level: Level = "nominal",
    labels: LabelList = None,
) -> float:
    """Krippendorff's alpha of an items x annotators rating table with missing ratings allowed.

    ``alpha = 1 - D_o / D_e``: observed over expected disagreement, both read from the coincidence
    matrix ``o[c, k] = sum over items u of (n_uc * n_uk - [c = k] * n_uc) / (m_u - 1)`` where
    ``n_uc`` is how many annotators gave label c to item u and ``m_u`` how many rated it. Items with
    fewer than 2 ratings contribute nothing. With marginals ``n_c`` and ``n = sum n_c``,
    ``alpha = 1 - (n - 1) * sum(o * delta) / sum(n_c * n_k * delta)`` where the squared distance
    ``delta`` is ``1`` for different labels (``"nominal"``), ``(v_c - v_k)**2`` (``"interval"``;
    numeric labels use their values, word labels their positions in ``labels`` order) or Krippendorff's
    ordinal ``(n_c + ... + n_k - (n_c + n_k)/2)**2`` over labels in ``labels`` order. Range: 1 is
    perfect agreement, 0 chance level, below 0 systematic disagreement. NaN when fewer than 2
    pairable ratings exist or when every pairable rating is the same label (no expected
    disagreement).

    >>> krippendorff_alpha([[1, 1], [2, 2], [1, 2], [2, None]])  # o = [[2, 1], [1, 2]], n = 6
    0.4444444444444444
    """
    table = encode_ratings(ratings, labels)
    values = _level_values(table, level)
    pairable = _pairable(table)
    if pairable.shape[0] == 0:
        return math.nan
    return float(_alpha(_total_coincidences(pairable), level, values))


def krippendorff_alpha_ci(
    ratings: Ratings,
    *,
    level: Level = "nominal",
    labels: LabelList = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of :func:`krippendorff_alpha`, resampling items.

    The pairable items (at least 2 ratings) are resampled with replacement ``n_boot`` times. Items
    with the same label counts contribute the same coincidences, so the items are first grouped by
    rating pattern and each resample is a multinomial draw of pattern frequencies: the cost depends
    on the number of distinct patterns, not on the number of items. Resamples where alpha is
    undefined are left out; ``(nan, nan)`` when there is nothing to resample. Seeded, reproducible.

    >>> krippendorff_alpha_ci([[1, 1], [2, 2], [1, 1], [2, 2]], n_boot=20)  # always perfect
    (1.0, 1.0)
    """
    check_bootstrap(n_boot, confidence, seed, allow_zero=False)
    table = encode_ratings(ratings, labels)
    values = _level_values(table, level)
    pairable = _pairable(table)
    if pairable.shape[0] == 0:
        return (math.nan, math.nan)
    patterns, frequency = _patterns(pairable)
    per_pattern = _coincidences(patterns).reshape(len(patterns), -1)
    n_items = int(frequency.sum())
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n_items, frequency / n_items, size=n_boot).astype(np.float64)
    coincidence = (weights @ per_pattern).reshape(n_boot, table.k, table.k)
    return percentile_interval(_alpha(coincidence, level, values), confidence)
