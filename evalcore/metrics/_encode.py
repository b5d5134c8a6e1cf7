"""From raw label arrays to integer codes against one shared, ordered label list.

Every metric in :mod:`evalcore.metrics` starts here. The rules are those of
:func:`evalcore.labels.normalize_label`, applied column-wise and without a Python loop per row:

- numeric dtypes go straight to ``float64`` (NaN is missing), so ``4``, ``4.0`` and ``"4"`` are one label;
- object and string columns are hashed once with :func:`pandas.factorize`; only the few *distinct* raw
  values are normalized one by one (``None``, NaN, ``pandas.NA``, ``""`` and ``"error"`` in any case are
  missing; numeric strings become numbers; other words are stripped);
- a column that mixes numbers and words is an error.

With ``labels=None`` the label axis is the union of labels observed in every column, numbers sorted
numerically (1, 2, 10) and words sorted as strings. Explicit ``labels`` fix the order, may hold labels that
never occur, and must hold every observed label.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import pandas as pd

from evalcore.errors import MetricError
from evalcore.labels import Label, format_label, normalize_label

IntArray: TypeAlias = npt.NDArray[np.int64]
FloatArray: TypeAlias = npt.NDArray[np.float64]
#: What a metric accepts as one column of labels: a list, tuple, NumPy array or pandas Series.
LabelArray: TypeAlias = "Sequence[Any] | npt.NDArray[Any] | pd.Series"
#: What a metric accepts as an explicit label axis.
LabelList: TypeAlias = "Sequence[Label] | None"

#: Largest number of cells a count table may have (a 2048 x 2048 matrix of int64 is 32 MiB).
MAX_TABLE_CELLS = 2048 * 2048

__all__ = [
    "MAX_TABLE_CELLS",
    "Column",
    "Encoded",
    "FloatArray",
    "IntArray",
    "LabelArray",
    "LabelList",
    "count_table",
    "encode_columns",
    "encode_rows",
    "normalize_column",
    "normalize_labels",
]


@dataclass(frozen=True)
class Column:
    """One normalized column: ``codes[i]`` indexes ``values`` (first-seen order), ``-1`` means missing."""

    codes: IntArray
    values: list[Label]

    @property
    def is_numeric(self) -> bool:
        """True when every label is a number (vacuously true for an all-missing column)."""
        return not self.values or isinstance(self.values[0], float)

    def __len__(self) -> int:
        return len(self.codes)


@dataclass(frozen=True)
class Encoded:
    """Several aligned columns coded against one label axis, rows with any missing value removed."""

    labels: list[Label]
    codes: tuple[IntArray, ...]
    n_dropped: int

    @property
    def n(self) -> int:
        """Number of rows kept (compared)."""
        return len(self.codes[0]) if self.codes else 0

    @property
    def k(self) -> int:
        """Number of labels on the axis."""
        return len(self.labels)


# --- one column ----------------------------------------------------------------------------------


def normalize_column(values: object, name: str) -> Column:
    """Normalize one array-like of raw labels; ``name`` is the argument name used in error messages."""
    if isinstance(values, pd.DataFrame):
        raise MetricError(f"{name} must be one column of labels, not a table")
    if isinstance(values, pd.Series | pd.Index):
        dtype = values.dtype
        if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
            return _from_floats(values.to_numpy(dtype=np.float64, na_value=np.nan))
        codes, uniques = pd.factorize(values)
        return _from_objects(codes, list(uniques), name)
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise MetricError(f"{name} must be one-dimensional (got shape {values.shape})")
        kind = values.dtype.kind
        if kind in "iuf":
            return _from_floats(values.astype(np.float64, copy=False))
        if kind in "US":
            values = values.astype(object)
        return _factorize_objects(values, name)
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise MetricError(f"{name} must be an array of labels (a list, array or Series)")
    items = list(values)
    array = np.fromiter(items, dtype=object, count=len(items))
    return _factorize_objects(array, name)


def _factorize_objects(array: npt.NDArray[Any], name: str) -> Column:
    try:
        codes, uniques = pd.factorize(array)
    except TypeError as err:  # unhashable cells such as nested lists
        raise MetricError(f"{name} must hold single labels, not nested values ({err})") from None
    return _from_objects(codes, list(uniques), name)


def _from_floats(values: FloatArray) -> Column:
    codes, uniques = pd.factorize(values)
    return Column(np.asarray(codes, dtype=np.int64), uniques.astype(np.float64).tolist())


def _from_objects(codes: npt.NDArray[Any], uniques: list[Any], name: str) -> Column:
    # Only the distinct raw values are normalized in Python; rows are remapped with one lookup.
    lookup = np.full(len(uniques) + 1, -1, dtype=np.int64)  # the last slot maps code -1 to -1
    position: dict[Label, int] = {}
    found: list[Label] = []
    for i, raw in enumerate(uniques):
        label = normalize_label(bool(raw) if isinstance(raw, np.bool_) else raw)
        if label is None:
            continue
        pos = position.get(label)
        if pos is None:
            pos = position[label] = len(found)
            found.append(label)
        lookup[i] = pos
    _refuse_mixed(found, name)
    return Column(lookup[np.asarray(codes, dtype=np.int64)], found)


def _refuse_mixed(values: Sequence[Label], name: str) -> None:
    number = next((v for v in values if isinstance(v, float)), None)
    word = next((v for v in values if isinstance(v, str)), None)
    if number is not None and word is not None:
        raise MetricError(
            f"{name} mixes numbers and words (for example {format_label(number)} and {word!r}); "
            "a label column holds one kind or the other"
        )


# --- the label axis -------------------------------------------------------------------------------


def normalize_labels(labels: Iterable[object]) -> list[Label]:
    """Normalize an explicit label list; refuses missing and repeated labels."""
    if isinstance(labels, str | bytes):
        raise MetricError("labels must be a list of labels, not a single string")
    axis: list[Label] = []
    seen: set[Label] = set()
    for raw in labels:
        label = normalize_label(bool(raw) if isinstance(raw, np.bool_) else raw)
        if label is None:
            raise MetricError(f"labels cannot contain a missing value ({raw!r})")
        if label in seen:
            raise MetricError(f"labels repeat {format_label(label)!r}")
        seen.add(label)
        axis.append(label)
    return axis


def _sorted_union(columns: Sequence[Column], names: Sequence[str]) -> list[Label]:
    numbers: set[float] = set()
    words: set[str] = set()
    number_from = word_from = ""
    for column, name in zip(columns, names, strict=True):
        for value in column.values:
            if isinstance(value, float):
                numbers.add(value)
                number_from = number_from or name
            else:
                words.add(value)
                word_from = word_from or name
    if numbers and words:
        raise MetricError(
            f"{number_from} holds numbers but {word_from} holds words; pass labels= to compare them "
            "on one axis"
        )
    if numbers:
        return sorted(numbers)
    return sorted(words)


def encode_columns(
    columns: Sequence[Column], names: Sequence[str], labels: Iterable[object] | None
) -> tuple[list[Label], list[IntArray]]:
    """Code every column against one label axis (``-1`` stays missing)."""
    axis = _sorted_union(columns, names) if labels is None else normalize_labels(labels)
    position = {label: i for i, label in enumerate(axis)}
    coded: list[IntArray] = []
    for column, name in zip(columns, names, strict=True):
        unknown = [v for v in column.values if v not in position]
        if unknown:
            shown = ", ".join(repr(format_label(v)) for v in unknown[:5])
            allowed = ", ".join(format_label(v) for v in axis)
            raise MetricError(f"{name} has label(s) {shown} that are not in labels ({allowed})")
        lookup = np.array([position[v] for v in column.values] + [-1], dtype=np.int64)
        coded.append(lookup[column.codes])
    return axis, coded


def encode_rows(
    arrays: Sequence[object], names: Sequence[str], labels: Iterable[object] | None
) -> Encoded:
    """Normalize aligned arrays, code them on one axis and drop rows where any of them is missing."""
    columns = [normalize_column(a, name) for a, name in zip(arrays, names, strict=True)]
    lengths = {len(c) for c in columns}
    if len(lengths) > 1:
        shown = ", ".join(f"{name} has {len(c)}" for c, name in zip(columns, names, strict=True))
        raise MetricError(f"the label arrays differ in length ({shown} rows)")
    axis, coded = encode_columns(columns, names, labels)
    keep = np.logical_and.reduce([c >= 0 for c in coded])
    n_rows = len(coded[0])
    n_kept = int(np.count_nonzero(keep))
    if n_kept < n_rows:
        coded = [c[keep] for c in coded]
    return Encoded(axis, tuple(coded), n_rows - n_kept)


def count_table(encoded: Encoded) -> IntArray:
    """The k x k (x k ...) table of counts of each combination of codes, by one ``bincount``."""
    k, dims = encoded.k, len(encoded.codes)
    cells = k**dims
    if cells > MAX_TABLE_CELLS:
        raise MetricError(
            f"{k} distinct labels are too many for a count table; these metrics are meant for label "
            "scales (pass labels= to restrict the axis)"
        )
    flat = np.zeros(encoded.n, dtype=np.int64)
    for codes in encoded.codes:
        flat *= k
        flat += codes
    shape = (k,) * dims
    return np.bincount(flat, minlength=cells).astype(np.int64, copy=False).reshape(shape)
