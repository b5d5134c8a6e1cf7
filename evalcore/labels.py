"""Labels and label scales: the one vocabulary every layer of evalcore shares.

A *label* is what a human or a judge gave an item on a criterion. Inside evalcore a label is either a
number (always a ``float``, so that ``1`` and ``1.0`` are the same label) or a word (a ``str``). Pairwise
choices are always the canonical words ``"A"``, ``"B"`` and ``"TIE"``, with ``A`` the candidate
(``response`` / ``response_a``) and ``B`` the baseline.

A value is *missing* when it is ``None``, a float NaN, ``pandas.NA``, an empty string or the string
``"error"`` in any case. A missing label makes its row not comparable: metrics drop it and count it.

A declared scale written by a person (``"1,2,3,4,5"`` typed in a form or a command line, a template's
``scale = [...]``) is read by :func:`parse_scale`, the one parser every surface uses.

This module is a leaf: it imports nothing else from evalcore but :mod:`evalcore.errors`, so that both
:mod:`evalcore.data` and :mod:`evalcore.metrics` may use it.
"""

from __future__ import annotations

import contextlib
import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, get_args

from evalcore.errors import DataError

__all__ = [
    "BINARY_FAIL",
    "BINARY_PASS",
    "LIKERT_5",
    "PAIRWISE",
    "PASS_FAIL",
    "SEVERITY",
    "Label",
    "Scale",
    "ScaleKind",
    "canonical_choice",
    "format_label",
    "infer_scale",
    "is_missing",
    "normalize_label",
    "parse_scale",
]

Label: TypeAlias = float | str
ScaleKind: TypeAlias = Literal["ordinal", "nominal", "binary", "pairwise"]

_MISSING_WORDS = frozenset({"", "error"})

#: Words that mean the first response (the candidate) won, lower-cased.
_CHOICE_A = frozenset(
    {"a", "model_a", "modela", "model a", "candidate", "response_a", "response a", "[[a]]", "a>b"}
)
#: Words that mean the second response (the baseline) won, lower-cased.
_CHOICE_B = frozenset(
    {"b", "model_b", "modelb", "model b", "baseline", "response_b", "response b", "[[b]]", "b>a"}
)
#: Words that mean neither response won, lower-cased.
_CHOICE_TIE = frozenset({"tie", "equal", "draw", "same", "both", "[[c]]", "a=b", "neither"})

BINARY_PASS = "pass"
BINARY_FAIL = "fail"
_PASS_WORDS = frozenset({"pass", "passed", "yes", "y", "true", "correct", "good", "1", "1.0"})
_FAIL_WORDS = frozenset({"fail", "failed", "no", "n", "false", "incorrect", "bad", "0", "0.0"})


def is_missing(value: object) -> bool:
    """Whether ``value`` marks a label as absent (None, NaN, pandas.NA, "" or "error" in any case).

    >>> [is_missing(v) for v in (None, float("nan"), "", " Error ", 0, "tie")]
    [True, True, True, True, False, False]
    """
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip().lower() in _MISSING_WORDS
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        try:
            return math.isnan(float(value))
        except (TypeError, ValueError, OverflowError):
            return False
    # pandas.NA and pandas.NaT compare strangely; recognise them by their type name to stay import-free.
    return type(value).__name__ in {"NAType", "NaTType"}


def normalize_label(value: object) -> Label | None:
    """Turn a raw cell into a label: ``None`` if missing, a ``float`` if numeric, else a stripped word.

    Numeric strings become numbers, so ``"4"``, ``4`` and ``4.0`` are one label.

    >>> normalize_label("4"), normalize_label(4), normalize_label(" tie "), normalize_label("ERROR")
    (4.0, 4.0, 'tie', None)
    """
    if is_missing(value):
        return None
    if isinstance(value, bool):
        return BINARY_PASS if value else BINARY_FAIL
    if isinstance(value, numbers.Real):
        try:
            return float(value)
        except OverflowError:  # an integer too large for a float is kept as its digits
            return str(value)
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text
    if math.isnan(number) or math.isinf(number):
        return text
    return number


def canonical_choice(value: object) -> str | None:
    """Map a pairwise verdict in any common vocabulary to ``"A"``, ``"B"`` or ``"TIE"``.

    Matching is case-insensitive. Returns ``None`` for a missing value and raises ``ValueError`` for a
    word that is not a known pairwise choice.

    >>> [canonical_choice(v) for v in ("model_A", "BASELINE", "Equal", None)]
    ['A', 'B', 'TIE', None]
    """
    if is_missing(value):
        return None
    word = str(value).strip().lower()
    if word in _CHOICE_A:
        return "A"
    if word in _CHOICE_B:
        return "B"
    if word in _CHOICE_TIE:
        return "TIE"
    raise ValueError(f"{value!r} is not a pairwise choice (expected A, B or tie)")


def _binary_word(value: Label) -> str | None:
    word = format_label(value).lower()
    if word in _PASS_WORDS:
        return BINARY_PASS
    if word in _FAIL_WORDS:
        return BINARY_FAIL
    return None


def format_label(label: Label | None) -> str:
    """Render a label for people: ``4.0`` shows as ``"4"``, ``4.5`` as ``"4.5"``, ``None`` as ``""``.

    >>> format_label(4.0), format_label(4.5), format_label("TIE"), format_label(None)
    ('4', '4.5', 'TIE', '')
    """
    if label is None:
        return ""
    if isinstance(label, float) and label.is_integer():
        return str(int(label))
    return str(label)


@dataclass(frozen=True)
class Scale:
    """An ordered set of labels and how to read them.

    ``kind`` is one of:

    - ``"ordinal"``: ordered labels such as 1..5 or severity levels; order matters for weighted kappa,
      Spearman and Kendall;
    - ``"nominal"``: unordered categories;
    - ``"binary"``: two labels, the first being the positive class (``("pass", "fail")``);
    - ``"pairwise"``: ``("A", "B", "TIE")``.

    The declared order is the order of confusion-matrix axes. Numeric labels are stored as floats.

    >>> s = Scale.likert(1, 5)
    >>> s.coerce("4"), s.index(4), s.is_numeric
    (4.0, 3, True)
    """

    labels: tuple[Label, ...]
    kind: ScaleKind = "nominal"
    name: str = ""

    def __post_init__(self) -> None:
        normalized: list[Label] = []
        for raw in self.labels:
            label = normalize_label(raw)
            if label is None:
                raise ValueError(f"a scale cannot contain a missing label ({raw!r})")
            if self.kind == "pairwise":
                label = canonical_choice(label) or label
            normalized.append(label)
        if len(set(normalized)) != len(normalized):
            raise ValueError(f"scale labels repeat: {[format_label(x) for x in normalized]}")
        if len(normalized) < 2:
            raise ValueError("a scale needs at least two labels")
        if self.kind == "binary" and len(normalized) != 2:
            raise ValueError("a binary scale has exactly two labels (positive first)")
        object.__setattr__(self, "labels", tuple(normalized))

    # --- constructors -----------------------------------------------------------------------------

    @classmethod
    def likert(cls, low: int = 1, high: int = 5, *, name: str = "") -> Scale:
        """An ordinal integer scale from ``low`` to ``high`` inclusive."""
        return cls(
            tuple(float(x) for x in range(low, high + 1)), "ordinal", name or f"{low}-{high}"
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Scale:
        """Inverse of :meth:`to_dict`."""
        return cls(tuple(data["labels"]), data.get("kind", "nominal"), data.get("name", ""))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form; numbers that are whole stay whole (``4`` not ``4.0``)."""
        labels: list[Any] = [
            int(x) if isinstance(x, float) and x.is_integer() else x for x in self.labels
        ]
        return {"labels": labels, "kind": self.kind, "name": self.name}

    # --- queries ----------------------------------------------------------------------------------

    @property
    def is_numeric(self) -> bool:
        """True when every label is a number."""
        return all(isinstance(x, float) for x in self.labels)

    @property
    def is_ordinal(self) -> bool:
        """True when the order of labels carries meaning (kappa is weighted, rank correlations apply)."""
        return self.kind == "ordinal"

    @property
    def positive(self) -> Label:
        """The positive class of a binary scale (its first label)."""
        if self.kind != "binary":
            raise ValueError(f"scale {self.display_labels} is not binary")
        return self.labels[0]

    @property
    def display_labels(self) -> list[str]:
        """Labels as people read them."""
        return [format_label(x) for x in self.labels]

    def index(self, label: Label) -> int:
        """Position of ``label`` in the scale; ``ValueError`` when absent."""
        return self.labels.index(label)

    def coerce(self, value: object) -> Label | None:
        """Read a raw value as a label of this scale.

        Returns ``None`` for a missing value. Pairwise vocabularies map to A/B/TIE and binary ones
        (yes/no, true/false, 1/0) to the scale's two labels. Raises ``ValueError`` naming the value and
        the scale when the value is not on it.
        """
        label = normalize_label(value)
        if label is None:
            return None
        if self.kind == "pairwise":
            with contextlib.suppress(ValueError):
                label = canonical_choice(label)
        elif self.kind == "binary" and label not in self.labels:
            word = _binary_word(label)
            if word is not None and {BINARY_PASS, BINARY_FAIL} == set(self.labels):
                label = word
        if label is None:
            return None
        if label not in self.labels:
            allowed = ", ".join(self.display_labels)
            raise ValueError(f"{format_label(label)!r} is not on the scale ({allowed})")
        return label


LIKERT_5 = Scale.likert(1, 5, name="1-5")
PASS_FAIL = Scale((BINARY_PASS, BINARY_FAIL), "binary", "pass/fail")
PAIRWISE = Scale(("A", "B", "TIE"), "pairwise", "A/B/tie")
SEVERITY = Scale(("very low", "low", "medium", "high"), "ordinal", "severity")


def infer_scale(values: Iterable[object], *, name: str = "") -> Scale:
    """Guess the scale of a column of raw labels.

    Numbers give an ordinal scale of the integers spanning them when every value is whole (so a 1-5
    column in which nobody used 2 still has 2 on its scale), else the sorted distinct values. Words that
    are all pairwise choices give :data:`PAIRWISE`; pass/fail words give :data:`PASS_FAIL`; other words
    give a nominal scale in sorted order. Raises ``ValueError`` when numbers and words are mixed or when
    there are fewer than two distinct labels and no known vocabulary.

    >>> infer_scale([1, 5, "3", None]).display_labels
    ['1', '2', '3', '4', '5']
    >>> infer_scale(["model_A", "tie"]).kind
    'pairwise'
    """
    labels = [x for x in (normalize_label(v) for v in values) if x is not None]
    numbers_ = sorted({x for x in labels if isinstance(x, float)})
    words = sorted({x for x in labels if isinstance(x, str)})
    if numbers_ and words:
        raise ValueError(
            f"labels mix numbers ({format_label(numbers_[0])}) and words ({words[0]!r})"
        )
    if numbers_:
        if all(x.is_integer() for x in numbers_) and numbers_[-1] - numbers_[0] <= 100:
            low, high = int(numbers_[0]), int(numbers_[-1])
            if high == low:
                high = low + 1
            return Scale.likert(low, high, name=name)
        if len(numbers_) < 2:
            raise ValueError("a numeric column with a single distinct value has no scale to infer")
        return Scale(tuple(numbers_), "ordinal", name)
    lowered = {w.lower() for w in words}
    if lowered and all(_is_choice(w) for w in lowered):
        return PAIRWISE
    if lowered and lowered <= (_PASS_WORDS | _FAIL_WORDS):
        return PASS_FAIL
    if len(words) < 2:
        raise ValueError(f"cannot infer a scale from a single label {words!r}")
    return Scale(tuple(words), "nominal", name)


def _is_choice(word: str) -> bool:
    return word in _CHOICE_A or word in _CHOICE_B or word in _CHOICE_TIE


def parse_scale(
    labels: str | Iterable[object],
    *,
    kind: ScaleKind | None = None,
    ordered: bool | None = None,
    name: str | None = None,
) -> Scale:
    """A declared scale from its labels in order: typed text, comma-separated (``"1,2,3,4,5"``,
    ``"pass, fail"``, ``"A,B,TIE"``), or a list (a template's ``scale = [1, 2, 3]``).

    The labels keep the order and spelling given (pairwise words become ``A``/``B``/``TIE``, numbers
    floats). The kind is ``kind`` when given; else ``ordered`` decides between ``ordinal`` (true) and
    ``nominal`` (false), as the custom labels of a criterion do; else it is inferred: numbers are
    ordinal, words that are all pairwise choices (``A``, ``model_b``, ``tie`` ...) pairwise, exactly
    two pass/fail-like words (``pass``/``fail``, ``yes``/``no``, ``true``/``false`` ...) binary with
    the first as the positive label, other words nominal. The name is ``name`` when given, else
    ``A/B/tie`` for a pairwise scale, ``low-high`` for a run of whole numbers, else empty.

    Raises :class:`~evalcore.errors.DataError` (``scale '...': why``) for no label, a repeated
    label, a single label, a binary scale without two labels, an unknown kind, or both ``kind`` and
    ``ordered``.

    >>> parse_scale("1,2,3,4,5").kind, parse_scale("1,2,3,4,5").name
    ('ordinal', '1-5')
    >>> parse_scale("pass, fail").kind, parse_scale("model_A, model_B, tie").display_labels
    ('binary', ['A', 'B', 'TIE'])
    >>> parse_scale("bad, ok, good", ordered=True).kind, parse_scale(["x", "y"]).kind
    ('ordinal', 'nominal')
    """
    shown = (
        labels
        if isinstance(labels, str)
        else ", ".join(format_label(normalize_label(x)) for x in labels)
    )
    raw: list[object] = (
        [part.strip() for part in labels.split(",") if part.strip()]
        if isinstance(labels, str)
        else list(labels)
    )

    def refuse(reason: str) -> DataError:
        return DataError(f"scale {shown!r}: {reason}")

    if kind is not None and ordered is not None:
        raise refuse("give the kind or whether the labels are ordered, not both")
    if kind is not None and kind not in get_args(ScaleKind):
        raise refuse(f"the kind is one of {', '.join(get_args(ScaleKind))}, not {kind!r}")
    values = [normalize_label(x) for x in raw]
    if not raw:
        raise refuse("no labels")
    if kind is None:
        kind = _declared_kind(values) if ordered is None else "ordinal" if ordered else "nominal"
    if name is None:
        name = _declared_name(values, kind)
    try:
        return Scale(tuple(raw), kind, name)  # type: ignore[arg-type]
    except ValueError as exc:
        raise refuse(str(exc)) from None


def _declared_kind(values: list[Label | None]) -> ScaleKind:
    """The kind of a declared scale whose kind was not given (see :func:`parse_scale`)."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, float) for v in present):
        return "ordinal"
    words = {format_label(v).lower() for v in present}
    if words and all(_is_choice(w) for w in words):
        return "pairwise"
    if len(present) == 2 and len({_binary_word(v) for v in present} - {None}) == 2:
        return "binary"
    return "nominal"


def _declared_name(values: list[Label | None], kind: str) -> str:
    """The name of a declared scale given none: ``A/B/tie``, ``low-high`` or empty."""
    if kind == "pairwise":
        return "A/B/tie"
    if (
        kind == "ordinal"
        and values
        and all(isinstance(v, float) and v.is_integer() for v in values)
    ):
        ints = [int(v) for v in values if isinstance(v, float)]
        if ints == list(range(ints[0], ints[-1] + 1)):
            return f"{ints[0]}-{ints[-1]}"
    return ""
