"""Which column holds what: the user's :class:`ColumnMapping`, and a guess at one."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

import pandas as pd

from ._layout import ID_COLUMNS, ITEM_FIELDS, Kind, find_column

_PROMPT = ("prompt", "question", "instruction", "user_input", "query", "input")
_RESPONSE = ("response", "answer", "output", "completion", "generation", "prediction")
_CONTEXT = ("context", "retrieved_contexts", "contexts", "source", "document")
_REFERENCE = ("reference", "ground_truth", "reference_answer", "expected_output", "gold", "target")
_RESPONSE_A = ("response_a", "response_1", "output_a", "answer_a", "completion_a")
_RESPONSE_B = ("response_b", "response_2", "output_b", "answer_b", "completion_b")
_ANNOTATOR = ("annotator", "annotator_id", "rater", "rater_id", "labeler", "user")
_LABEL = ("label", "rating", "choice", "score")
_CRITERION = ("criterion", "metric", "aspect")

_HUMAN_PREFIXES = ("human", "annotator", "rater")
_JUDGE_PREFIXES = ("judge",)
#: Words in a column name that mark it as something other than one rater's label (an explanation,
#: the raw reply, an aggregate), so that :func:`suggest_mapping` leaves it out.
_NOT_A_LABEL = frozenset(
    {
        "reason",
        "reasoning",
        "raw",
        "explanation",
        "rationale",
        "comment",
        "comments",
        "note",
        "notes",
        "agree",
        "agreement",
        "mean",
        "avg",
        "average",
        "median",
        "std",
        "count",
        "time",
        "seconds",
        "latency",
        "tokens",
        "cost",
        "id",
        "name",
        "model",
    }
)


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

    def __post_init__(self) -> None:
        object.__setattr__(self, "human", _as_tuple(self.human, "human"))
        object.__setattr__(self, "judge", _as_tuple(self.judge, "judge"))
        if self.kind not in (None, "pointwise", "pairwise"):
            raise ValueError(f"kind must be 'pointwise', 'pairwise' or None, not {self.kind!r}")
        if not str(self.metric).strip():
            raise ValueError("metric must be a non-empty name")
        for f in fields(self):
            value = getattr(self, f.name)
            named = f.name not in ("human", "judge", "kind", "metric")
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
            if f.name in ("metric", "kind"):
                continue
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                named.extend((f.name, column) for column in value)
            elif value is not None:
                named.append((f.name, value))
        return named


def _tokens(name: str) -> list[str]:
    return [t for t in re.split(r"[^a-z0-9]+", name.lower()) if t]


def _label_columns(columns: list[str], prefixes: tuple[str, ...]) -> tuple[str, ...]:
    chosen = []
    for column in columns:
        lower = column.lower()
        if not lower.startswith(prefixes) or "/" in lower:
            continue
        if any(t in _NOT_A_LABEL for t in _tokens(lower)[1:]):
            continue
        chosen.append(column)
    return tuple(chosen)


def suggest_mapping(frame: pd.DataFrame) -> ColumnMapping:
    """Guess a :class:`ColumnMapping` from common column names, to pre-fill a mapping form.

    Fields are found by name, case-insensitively: ``item_id``/``id``/``idx``;
    ``prompt``/``question``/``instruction``/``user_input``/``query``/``input``;
    ``response``/``answer``/``output``; ``context``/``retrieved_contexts``;
    ``reference``/``ground_truth``; ``response_a``/``response_b``. Annotator columns start with
    ``human``, ``annotator`` or ``rater``, judge columns with ``judge``; columns whose name marks them
    as an explanation, a raw reply or an aggregate (``_reason``, ``_raw``, ``_mean``, ``_n_agree``…)
    are left out. A table with ``annotator`` and ``label`` columns is taken as long-form labels.
    ``kind`` is ``"pairwise"`` when both ``response_a`` and ``response_b`` are found.

    The guess is a starting point: check it, especially the label columns.

    >>> frame = pd.DataFrame(columns=["id", "question", "answer", "human_1", "judge_gpt", "judge_gpt_reason"])
    >>> m = suggest_mapping(frame)
    >>> m.item_id, m.prompt, m.response, m.human, m.judge
    ('id', 'question', 'answer', ('human_1',), ('judge_gpt',))
    """
    columns = [str(c) for c in frame.columns]
    response_a = find_column(columns, *_RESPONSE_A)
    response_b = find_column(columns, *_RESPONSE_B)
    annotator = find_column(columns, *_ANNOTATOR)
    label = find_column(columns, *_LABEL) if annotator else None
    long_form = annotator is not None and label is not None
    return ColumnMapping(
        item_id=find_column(columns, *ID_COLUMNS),
        prompt=find_column(columns, *_PROMPT),
        response=find_column(columns, *_RESPONSE),
        context=find_column(columns, *_CONTEXT),
        reference=find_column(columns, *_REFERENCE),
        response_a=response_a,
        response_b=response_b,
        human=() if long_form else _label_columns(columns, _HUMAN_PREFIXES),
        judge=() if long_form else _label_columns(columns, _JUDGE_PREFIXES),
        kind="pairwise" if response_a and response_b else None,
        annotator=annotator if long_form else None,
        label=label if long_form else None,
        criterion=find_column(columns, *_CRITERION) if long_form else None,
    )
