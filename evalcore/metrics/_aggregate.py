"""One human label per item from several annotators, by a named policy."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from evalcore.errors import MetricError
from evalcore.metrics._agreement import Ratings, RatingTable, encode_ratings
from evalcore.metrics._encode import IntArray, LabelList

_POLICIES = "'majority', 'median', 'mean' or 'annotator:<name>'"


def _decode(table: RatingTable, positions: IntArray) -> npt.NDArray[Any]:
    """Labels at ``positions`` (-1 = no consensus): floats with NaN, or objects with None."""
    missing = positions < 0
    safe = np.where(missing, 0, positions)
    if table.labels and all(isinstance(x, float) for x in table.labels):
        out = np.asarray(table.labels, dtype=np.float64)[safe]
        out[missing] = np.nan
        return out
    words = np.empty(max(table.k, 1), dtype=object)
    words[: table.k] = table.labels
    result = words[safe]
    result[missing] = None
    return np.asarray(result, dtype=object)


def _majority(counts: IntArray) -> IntArray:
    top = counts.max(axis=1)
    winners = np.count_nonzero(counts == top[:, None], axis=1)
    best = counts.argmax(axis=1).astype(np.int64)
    return np.where((top > 0) & (winners == 1), best, -1)


def _median(counts: IntArray) -> IntArray:
    m = counts.sum(axis=1)
    running = np.cumsum(counts, axis=1)
    lower = np.argmax(running > ((m - 1) // 2)[:, None], axis=1)  # 0-based sorted index (m-1)//2
    upper = np.argmax(running > (m // 2)[:, None], axis=1)  # 0-based sorted index m//2
    middle = (lower + upper + 1) // 2  # their mean, rounded half up
    return np.where(m > 0, middle, -1).astype(np.int64)


def _mean(counts: IntArray) -> IntArray:
    m = counts.sum(axis=1)
    total = counts @ np.arange(counts.shape[1], dtype=np.int64)
    # floor(total / m + 1/2) in integers: the mean position rounded half up.
    safe_m = np.where(m > 0, m, 1)
    return np.where(m > 0, (2 * total + safe_m) // (2 * safe_m), -1).astype(np.int64)


def aggregate_labels(
    ratings: Ratings,
    *,
    policy: str,
    labels: LabelList = None,
    ordinal: bool | None = None,
) -> npt.NDArray[Any]:
    """One label per item from an items x annotators table, by a named aggregation policy.

    ``ratings`` is a DataFrame whose columns are annotators (or a 2-D array with columns 0..m-1);
    missing ratings are ignored. Labels have positions in ``labels`` order (with ``labels=None``:
    numbers ascending, words sorted), so the order-based policies work for ordinal word scales too.
    Pass the full scale as ``labels`` (e.g. ``labels=LIKERT_5.labels``) so that positions are scale
    steps even when some label is never used.

    - ``"majority"``: the most frequent label; a tie for first place gives no consensus.
    - ``"median"``: the median position; with an even number of ratings, the mean of the two middle
      positions rounded half up (positions 1 and 2 give 2).
    - ``"mean"``: the mean position rounded half up to the nearest label (2.5 gives 3).
    - ``"annotator:<name>"``: that annotator's labels (the column whose name, as a string, is
      ``<name>``).

    ``"median"`` and ``"mean"`` need ordered labels: numbers are, words only with ``ordinal=True``
    (``ordinal=None`` means "numbers are ordinal, words are not"); otherwise ``MetricError``.
    Returns a float array (NaN = no consensus) for numeric labels, else an object array (None = no
    consensus); an item nobody rated has no consensus under every policy.

    >>> aggregate_labels([[1, 2, 2], [1, 2, 3], [1, 2, None]], policy="majority").tolist()
    [2.0, nan, nan]
    >>> aggregate_labels([[1, 2, 2], [1, 2, 3], [1, 2, None]], policy="mean").tolist()
    [2.0, 2.0, 2.0]
    """
    table = encode_ratings(ratings, labels)
    if not isinstance(policy, str):
        raise MetricError(f"policy must be {_POLICIES} (got {policy!r})")
    if policy.startswith("annotator:"):
        name = policy.removeprefix("annotator:")
        matches = [j for j, col in enumerate(table.names) if str(col) == name]
        if not matches:
            shown = ", ".join(str(c) for c in table.names)
            raise MetricError(f"no annotator named {name!r} in ratings (annotators: {shown})")
        return _decode(table, table.codes[:, matches[0]])
    if policy not in ("majority", "median", "mean"):
        raise MetricError(f"policy must be {_POLICIES} (got {policy!r})")
    counts = table.item_counts()
    if policy == "majority":
        return _decode(table, _majority(counts))
    numeric = bool(table.labels) and all(isinstance(x, float) for x in table.labels)
    is_ordered = numeric if ordinal is None else ordinal
    if not is_ordered:
        raise MetricError(
            f"policy {policy!r} needs ordered labels; these are words, so pass their order as "
            "labels= and ordinal=True"
        )
    if policy == "median":
        return _decode(table, _median(counts))
    return _decode(table, _mean(counts))
