"""Reading label columns: normalising values column-wise, finding the scale, checking labels against it.

A column is factorised once into codes and its distinct values; every decision (is it a number, a
pairwise word, missing, on the scale?) is taken once per distinct value and applied to all rows by
indexing, so 10⁵ rows cost milliseconds rather than a Python call per cell.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from evalcore.errors import DataError, LabelOutOfScaleError, MixedLabelTypesError
from evalcore.labels import PAIRWISE, Label, Scale, format_label, infer_scale, normalize_label

from ._common import RowRef, show_value
from ._layout import Kind

#: Words a judge column may hold for an answer that could not be read. They count as missing (a
#: failed judge call is never a wrong label), unless a declared scale lists them.
JUDGE_FAILURE_WORDS = frozenset(
    {"invalid", "unparsed", "unparseable", "unparsable", "failed", "failure"}
)
#: Words that spreadsheets and other tools write for "no value". In a column of numbers, or on a
#: scale that does not list them, they count as missing; in a column of words (a nominal scale) they
#: stay labels, because "none" can be a real answer there.
NULL_WORDS = frozenset({"nan", "na", "n/a", "null", "none"})

Scales = Mapping[str, Scale] | Scale | None

Fractional = Literal["refuse", "finer", "half-up", "half-even"]
#: What to do with fractional scores (3.5 on a 1–5 scale), each with the words a form shows:
#: keep them on a finer scale, round them half up (3.5 → 4, 2.5 → 3) or half to even (3.5 → 4,
#: 2.5 → 2, IEEE 754's default and numpy's ``round``), or refuse the file.
FRACTIONAL: dict[Fractional, str] = {
    "refuse": "refuse the file",
    "finer": "keep them on a finer scale (halves, quarters, fifths or tenths)",
    "half-up": "round half up (2.5 → 3, 3.5 → 4)",
    "half-even": "round half to even (2.5 → 2, 3.5 → 4)",
}
#: The steps a finer scale may take, coarsest first.
FINER_STEPS = (0.5, 0.25, 0.2, 0.1)


def round_half(value: float, fractional: Fractional) -> float:
    """``value`` rounded to a whole number, half up or half to even (``fractional``).

    >>> [round_half(x, "half-up") for x in (2.5, 3.5, -0.5)], [round_half(x, "half-even") for x in (2.5, 3.5)]
    ([3.0, 4.0, 0.0], [2.0, 4.0])
    """
    if fractional == "half-even":
        return float(round(value))  # Python rounds halves to the even neighbour
    return float(math.floor(value + 0.5))


def finer_scale(
    values: Sequence[float], *, low: float | None = None, high: float | None = None
) -> Scale | None:
    """The ordinal scale from ``low`` (default: the lowest value, rounded down) to ``high`` (the
    highest, rounded up) in the coarsest step of :data:`FINER_STEPS` that holds every value;
    ``None`` when none does (3.3333) or the scale would pass 201 labels.

    >>> finer_scale([1, 3.5, 5]).display_labels
    ['1', '1.5', '2', '2.5', '3', '3.5', '4', '4.5', '5']
    >>> finer_scale([1.3333]) is None
    True
    """
    numbers = [float(v) for v in values]
    if not numbers:
        return None
    start = math.floor(min(numbers)) if low is None else float(low)
    stop = math.ceil(max(numbers)) if high is None else float(high)
    for step in FINER_STEPS:
        if all(abs(x / step - round(x / step)) < 1e-6 for x in (*numbers, start, stop)):
            count = round((stop - start) / step) + 1
            if count < 2 or count > 201:
                return None
            return Scale(tuple(round(start + k * step, 6) for k in range(count)), "ordinal")
    return None


def round_scores_half_up(series: pd.Series) -> pd.Series:
    """Round numeric scores half up to whole numbers (3.5 → 4, 2.5 → 3, 4.49 → 4).

    Judges that answer on a 1–5 scale sometimes say 3.5; this maps such answers onto the integer
    scale the way the data's documentation usually prescribes (round half up, not Python's half to
    even). Words come back unchanged and missing values as ``None`` (``NaN`` in a numeric column);
    numeric text such as ``"3.5"`` is rounded too and becomes a float.

    >>> round_scores_half_up(pd.Series([3.5, 2.5, 4.49, None, "x", "1.5"])).tolist()
    [4.0, 3.0, 4.0, None, 'x', 2.0]
    """
    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        numbers = series.astype("float64")
        return np.floor(numbers + 0.5)
    text = series.astype(object)
    numbers = pd.to_numeric(
        text.map(lambda v: v.strip() if isinstance(v, str) else v), errors="coerce"
    ).astype("float64")
    finite = np.isfinite(numbers.to_numpy())
    out = text.where(~pd.isna(text), None).copy()
    out[finite] = np.floor(numbers[finite] + 0.5)
    return out


@dataclass
class RawLabels:
    """The labels of one source column before they are put on a scale."""

    #: Where the labels go: an annotator or judge name (wide form) or a placeholder (long form).
    name: str
    #: The file's column, for messages.
    column: str
    role: Literal["human", "judge"]
    series: pd.Series
    #: 0-based row positions in the file of each value, for messages.
    positions: np.ndarray


@dataclass
class _Column:
    """A label column as codes into its distinct values (``-1`` = missing), so that every decision
    below is taken once per distinct value, and applied to the rows by indexing."""

    source: RawLabels
    codes: np.ndarray  # int64, -1 where missing
    labels: list[Label | None]  # per code: the normalised label (None once it counts as missing)

    def kinds(self) -> tuple[np.ndarray, np.ndarray]:
        """Per code: is it a number, is it a word."""
        numeric = np.array([isinstance(x, float) for x in self.labels], dtype=bool)
        word = np.array([isinstance(x, str) for x in self.labels], dtype=bool)
        return numeric, word

    def rows_of(self, codes: np.ndarray | list[int]) -> np.ndarray:
        """0-based file positions of the rows holding any of ``codes``."""
        return self.source.positions[np.isin(self.codes, np.asarray(codes, dtype=np.int64))]

    def counts(self) -> np.ndarray:
        present = self.codes[self.codes >= 0]
        return np.bincount(present, minlength=len(self.labels))

    def expand(self, table: list[Label | None]) -> np.ndarray:
        lookup = np.empty(len(table) + 1, dtype=object)
        lookup[: len(table)] = table
        lookup[len(table)] = None
        expanded: np.ndarray = lookup[self.codes]
        return expanded


#: Object columns whose distinct values can be hashed together safely (no True == 1 confusion).
_FACTORIZABLE = frozenset(
    {"string", "floating", "integer", "mixed-integer-float", "boolean", "empty", "categorical"}
)


def _label(value: object) -> Label | None:
    try:
        label = normalize_label(value)
    except (OverflowError, ValueError, TypeError):  # an integer too large for a float, say
        return str(value).strip()
    if isinstance(label, float) and not math.isfinite(label):
        return str(value).strip()
    return label


def _normalize(raw: RawLabels) -> _Column:
    series = raw.series
    if (
        series.dtype == object
        and pd.api.types.infer_dtype(series, skipna=True) not in _FACTORIZABLE
    ):
        # Mixed Python objects (True beside 1, lists): normalise each cell before hashing.
        series = pd.Series([_label(v) for v in series.tolist()], dtype=object)
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    labels = [_label(v) for v in uniques.tolist()]
    return _Column(raw, np.asarray(codes, dtype=np.int64), labels)


def _drop_words(column: _Column, words: frozenset[str]) -> tuple[int, str]:
    """Turn the given words into missing values; return how many and which (for a note)."""
    hits = [
        code
        for code, label in enumerate(column.labels)
        if isinstance(label, str) and label.lower() in words
    ]
    if not hits:
        return 0, ""
    counts = column.counts()
    found = ", ".join(repr(w) for w in sorted({str(column.labels[c]) for c in hits})[:5])
    for code in hits:
        column.labels[code] = None
    return int(counts[hits].sum()), found


def scale_text(scale: Scale) -> str:
    """A scale as a message shows it: ``1–5`` for a run of integers, else its labels."""
    labels = scale.labels
    if scale.is_numeric and all(float(x).is_integer() for x in labels):
        ints = [int(float(x)) for x in labels]
        if ints == list(range(ints[0], ints[0] + len(ints))) and len(ints) > 2:
            return f"{ints[0]}–{ints[-1]}"
    return ", ".join(scale.display_labels)


def declared_scale(scales: Scales, metric: str) -> Scale | None:
    """The scale declared for ``metric``: one :class:`Scale` for every metric, or a dict by metric."""
    if scales is None:
        return None
    if isinstance(scales, Scale):
        return scales
    return scales.get(metric)


@dataclass(frozen=True)
class ResolvedLabels:
    scale: Scale
    kind: Kind
    #: One array per input column: on a numeric scale float64 with NaN where missing, else objects
    #: (labels on the scale, or None).
    values: tuple[np.ndarray, ...]
    notes: tuple[str, ...]


def resolve_labels(
    columns: Sequence[RawLabels],
    *,
    metric: str,
    source: str,
    rows: RowRef,
    scale: Scale | None = None,
    kind: Kind | None = None,
    round_half_up: bool = False,
    fractional: Fractional | None = None,
) -> ResolvedLabels:
    """Normalise label columns, find their scale, and map every label onto it.

    ``scale`` is the declared scale (labels off it are a :class:`LabelOutOfScaleError`); without one
    the scale is inferred from all columns together (``kind="pairwise"`` forces A/B/TIE).
    ``fractional`` (see :data:`FRACTIONAL`) rounds the fractional scores of every column, or puts
    them on a finer scale when none is declared.
    """
    notes: list[str] = []
    normalized = [_normalize(c) for c in columns]
    declared_words = {format_label(x).lower() for x in scale.labels} if scale is not None else set()
    pairwise = kind == "pairwise" or (scale is not None and scale.kind == "pairwise")
    for column in normalized:
        if column.source.role == "judge":
            count, found = _drop_words(column, JUDGE_FAILURE_WORDS - declared_words)
            if count:
                notes.append(
                    f"{column.source.column}: {count} unreadable judge answers ({found}) "
                    "count as missing"
                )
        if column.kinds()[0].any() or pairwise or scale is not None:
            count, found = _drop_words(column, NULL_WORDS - declared_words)
            if count:
                notes.append(f"{column.source.column}: {count} cells ({found}) count as missing")
        if scale is None and not pairwise:
            # With a declared (or pairwise) scale a stray word is reported as off the scale with
            # the other bad values; without one, a column mixing kinds has no scale to infer.
            _check_mixed(column, source, rows)

    if round_half_up:
        integer_scale = scale is None or (
            scale.is_numeric and all(float(x).is_integer() for x in scale.labels)
        )
        for column in normalized:
            if column.source.role != "judge" or not integer_scale:
                continue
            counts = column.counts()
            changed = 0
            for code, label in enumerate(column.labels):
                if isinstance(label, float) and not label.is_integer():
                    column.labels[code] = float(math.floor(label + 0.5))
                    changed += int(counts[code])
            if changed:
                notes.append(
                    f"{column.source.column}: {changed} fractional judge scores rounded half up"
                )

    if fractional in ("half-up", "half-even"):
        _round_all(normalized, scale, fractional, notes)
    if scale is None and fractional == "finer" and not pairwise:
        numbers = [x for c in normalized for x in c.labels if isinstance(x, float)]
        if numbers and not all(x.is_integer() for x in numbers):
            scale = finer_scale(numbers)
    if scale is None:
        scale = _infer(normalized, metric=metric, source=source, rows=rows, pairwise=pairwise)
    values = tuple(_coerce(column, scale, source=source, rows=rows) for column in normalized)
    resolved_kind: Kind = kind or ("pairwise" if scale.kind == "pairwise" else "pointwise")
    return ResolvedLabels(scale, resolved_kind, values, tuple(notes))


def _round_all(
    columns: Sequence[_Column], scale: Scale | None, fractional: Fractional, notes: list[str]
) -> None:
    """Round the fractional numbers of every column (when the scale, if any, is whole numbers)."""
    if scale is not None and not (
        scale.is_numeric and all(float(x).is_integer() for x in scale.labels)
    ):
        return
    how = "half up" if fractional == "half-up" else "half to even"
    for column in columns:
        counts = column.counts()
        changed = 0
        for code, label in enumerate(column.labels):
            if isinstance(label, float) and not label.is_integer():
                column.labels[code] = round_half(label, fractional)
                changed += int(counts[code])
        if changed:
            scores = "score" if changed == 1 else "scores"
            notes.append(f"{column.source.column}: {changed} fractional {scores} rounded {how}")


def _check_mixed(column: _Column, source: str, rows: RowRef) -> None:
    numeric, word = column.kinds()
    if not numeric.any() or not word.any():
        return
    counts = column.counts()
    n_numbers, n_words = int(counts[numeric].sum()), int(counts[word].sum())
    minority, majority = (word, numeric) if n_words <= n_numbers else (numeric, word)
    names = ("words", "numbers") if n_words <= n_numbers else ("numbers", "words")
    raise _mixed_error(
        source,
        column,
        rows,
        minority,
        f"{column.source.column}: labels mix numbers and words: "
        f"{int(counts[minority].sum())} {names[0]} ({_examples(column, minority)}) among "
        f"{names[1]} ({_examples(column, majority)})",
        "Use one kind of label per column and leave a cell empty when there is no label",
    )


def _mixed_error(
    source: str, column: _Column, rows: RowRef, which: np.ndarray, what: str, advice: str
) -> MixedLabelTypesError:
    """The error for labels of two kinds; ``which`` marks the labels of ``column`` to point at."""
    where = column.rows_of(np.flatnonzero(which))
    return MixedLabelTypesError(
        f"{source}: {what}; {rows.describe(where)}. {advice}",
        source=source,
        column=column.source.column,
        rows=rows.numbers(where[:20]),
    )


def _examples(column: _Column, which: np.ndarray, limit: int = 5) -> str:
    chosen = [column.labels[c] for c in np.flatnonzero(which)[:limit]]
    return ", ".join(show_value(v) for v in chosen)


def _infer(
    columns: Sequence[_Column], *, metric: str, source: str, rows: RowRef, pairwise: bool
) -> Scale:
    if pairwise:
        return PAIRWISE
    kinds = [c.kinds() for c in columns]
    numbers = [(c, k[0]) for c, k in zip(columns, kinds, strict=True) if k[0].any()]
    words = [(c, k[1]) for c, k in zip(columns, kinds, strict=True) if k[1].any()]
    if numbers and words:
        (number_column, numeric), (word_column, word) = numbers[0], words[0]
        raise _mixed_error(
            source,
            word_column,
            rows,
            word,
            f"metric {metric!r}: {number_column.source.column} holds numbers "
            f"({_examples(number_column, numeric)}) but {word_column.source.column} holds words "
            f"({_examples(word_column, word)})",
            "All labels of a metric must be numbers, or all words",
        )
    distinct = [x for c in columns for x in c.labels if x is not None]
    if not distinct:
        names = ", ".join(c.source.column for c in columns)
        raise DataError(
            f"{source}: metric {metric!r} has no labels: {names} are empty", source=source
        )
    try:
        return infer_scale(distinct, name=metric)
    except ValueError as exc:
        raise DataError(
            f"{source}: metric {metric!r}: cannot infer a label scale ({exc}); declare one "
            "with scales=",
            source=source,
        ) from exc


def _coerce(column: _Column, scale: Scale, *, source: str, rows: RowRef) -> np.ndarray:
    mapped: list[Label | None] = []
    bad: list[int] = []
    for code, label in enumerate(column.labels):
        if label is None:
            mapped.append(None)
            continue
        try:
            mapped.append(scale.coerce(label))
        except ValueError:
            mapped.append(None)
            bad.append(code)
    if bad:
        where = column.rows_of(bad)
        count = int(column.counts()[bad].sum())
        bad_labels = [column.labels[c] for c in bad]
        hint = ""
        if scale.is_numeric and any(
            isinstance(v, float) and not v.is_integer() for v in bad_labels
        ):
            hint = (
                "; choose what to do with fractional scores: a finer scale, or round them half "
                "up or half to even (fractional='finer', 'half-up' or 'half-even'; or "
                "round_half_up=True for judges only)"
            )
        shown = ", ".join(show_value(v) for v in bad_labels[:5])
        raise LabelOutOfScaleError(
            f"{source}: {column.source.column}: {count} labels are not on the scale "
            f"{scale_text(scale)} ({shown}); {rows.describe(where)}{hint}",
            source=source,
            column=column.source.column,
            rows=rows.numbers(where[:20]),
        )
    if scale.is_numeric:  # a float array, NaN where missing: no object per row
        lookup = np.array([np.nan if v is None else v for v in mapped] + [np.nan], dtype=np.float64)
        numbers: np.ndarray = lookup[column.codes]
        return numbers
    return column.expand(mapped)
