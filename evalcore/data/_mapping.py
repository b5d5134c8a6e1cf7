"""Which column holds what: the user's :class:`ColumnMapping` (a guess at one is in ``_guess``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from ._layout import ITEM_FIELDS, Kind


def _as_tuple(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Iterable):
        items = tuple(value)
        if not all(isinstance(v, str) for v in items):
            raise TypeError(f"ColumnMapping.{what} must hold column names (str)")
        return items
    raise TypeError(f"ColumnMapping.{what} must be a column name or a sequence of them")


def _pairs(value: Any, what: str) -> tuple[tuple[str, str], ...]:
    items = tuple(value or ())
    if not all(
        isinstance(p, tuple) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in items
    ):
        raise TypeError(f"LabelGroup.{what} holds (name, column) pairs of strings")
    return items


@dataclass(frozen=True)
class LabelGroup:
    """The label columns of one criterion in wide form: ``human`` and ``judge`` are
    ``(annotator or judge name, column)`` pairs, ``reasons`` ``(judge name, column)`` pairs (the
    text of each judge's replies). One group becomes one label set named ``metric``.

    >>> LabelGroup("fluency", (("ann", "fluency_ann"),)).columns
    ('fluency_ann',)
    """

    metric: str
    human: tuple[tuple[str, str], ...] = ()
    judge: tuple[tuple[str, str], ...] = ()
    reasons: tuple[tuple[str, str], ...] = ()
    kind: Kind | None = None

    def __post_init__(self) -> None:
        if not str(self.metric).strip():
            raise ValueError("a label group needs a metric name")
        for what in ("human", "judge", "reasons"):
            object.__setattr__(self, what, _pairs(getattr(self, what), what))

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(c for _n, c in (*self.human, *self.judge, *self.reasons))


@dataclass(frozen=True)
class ColumnMapping:
    """Which columns of a table hold the item fields and the labels.

    Item fields (a column name each, or ``None``): ``item_id``, ``prompt``, ``response``,
    ``context``, ``reference``, ``response_a``, ``response_b``. ``None`` means "not in this file"; for
    ``item_id`` it means "use an ``item_id``/``id``/``idx`` column when there is one, else row
    numbers".

    Labels in wide form: ``human`` (one column per annotator) and ``judge`` (one column per judge)
    form one label set named ``metric``, of ``kind`` ``"pointwise"`` or ``"pairwise"`` (``None``:
    inferred from the labels).

    Labels in long form (one row per label): ``annotator`` and ``label`` columns, and optionally a
    ``criterion`` column naming the metric of each row (without it every row belongs to ``metric``).

    A single string is accepted for ``human`` and ``judge``.

    Several criteria in wide form: ``groups``, one :class:`LabelGroup` each (beside or instead of
    ``human``/``judge``). With ``exact`` the mapping says everything: item fields come from it
    alone (not from the file's layout), ``item_id=None`` means row numbers, and Vertex-style label
    columns are read only when a group names them. ``conversation`` names an Azure ``messages``
    column.

    >>> ColumnMapping(response="answer", human="rater_1").human
    ('rater_1',)
    """

    item_id: str | None = None
    prompt: str | None = None
    response: str | None = None
    context: str | None = None
    reference: str | None = None
    response_a: str | None = None
    response_b: str | None = None
    human: tuple[str, ...] = field(default=())
    judge: tuple[str, ...] = field(default=())
    metric: str = "label"
    kind: Kind | None = None
    annotator: str | None = None
    label: str | None = None
    criterion: str | None = None
    groups: tuple[LabelGroup, ...] = ()
    exact: bool = False
    conversation: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", tuple(self.groups))
        if not all(isinstance(g, LabelGroup) for g in self.groups):
            raise TypeError("ColumnMapping.groups holds LabelGroup objects")
        object.__setattr__(self, "human", _as_tuple(self.human, "human"))
        object.__setattr__(self, "judge", _as_tuple(self.judge, "judge"))
        if self.kind not in (None, "pointwise", "pairwise"):
            raise ValueError(f"kind must be 'pointwise', 'pairwise' or None, not {self.kind!r}")
        if not str(self.metric).strip():
            raise ValueError("metric must be a non-empty name")
        for f in fields(self):
            value = getattr(self, f.name)
            named = f.name not in ("human", "judge", "kind", "metric", "groups", "exact")
            if named and value is not None and not isinstance(value, str):
                raise TypeError(f"ColumnMapping.{f.name} must be a column name (str) or None")

    @property
    def item_fields(self) -> dict[str, str]:
        """``{field: column}`` for the item fields this mapping names."""
        return {name: column for name in ITEM_FIELDS if (column := getattr(self, name)) is not None}

    @property
    def is_long(self) -> bool:
        """True when labels are given one per row (``annotator`` and ``label`` are named)."""
        return self.annotator is not None and self.label is not None

    def named_columns(self) -> list[tuple[str, str]]:
        """Every ``(role, column)`` this mapping names, in field order (for validation)."""
        named: list[tuple[str, str]] = []
        for f in fields(self):
            if f.name in ("metric", "kind", "exact"):
                continue
            if f.name == "groups":
                named.extend(
                    (f"{role} of {g.metric}", column)
                    for g in self.groups
                    for role, pairs in (
                        ("human", g.human),
                        ("judge", g.judge),
                        ("reason", g.reasons),
                    )
                    for _name, column in pairs
                )
                continue
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                named.extend((f.name, column) for column in value)
            elif value is not None:
                named.append((f.name, value))
        return named
