"""Recognising a file's layout from its column names, and where each layout keeps the item fields."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, TypeAlias

Layout: TypeAlias = Literal["vertex", "azure", "azure_conversation", "ragas", "long", "plain"]
Kind: TypeAlias = Literal["pointwise", "pairwise"]

#: Every layout :func:`detect_layout` can return, in the order it tests them.
LAYOUTS: tuple[Layout, ...] = ("azure_conversation", "ragas", "azure", "vertex", "long", "plain")

#: The canonical item fields, in the order the items table lists them.
ITEM_FIELDS = ("prompt", "response", "context", "reference", "response_a", "response_b")
CANONICAL_COLUMNS = ("item_id", *ITEM_FIELDS, "conversation")

#: Names of an item id column, in order of preference (matched case-insensitively).
ID_COLUMNS = ("item_id", "id", "idx")

_VERTEX = re.compile(
    r"^(?P<metric>.+?)/"
    r"(?P<role>human_rating|human_pairwise_choice|pairwise_choice|score|explanation)"
    r"(?:/(?P<who>.+)|_(?P<n>\d+))?$"
)

#: What each layout needs, for the message of a file that matches none.
EXPECTED_LAYOUTS = (
    "Vertex: {metric}/human_rating with {metric}/score, or {metric}/human_pairwise_choice with "
    "{metric}/pairwise_choice",
    "Azure: question, answer (and context, ground_truth), or a conversation in messages",
    "RAGAS: user_input, response, retrieved_contexts, reference",
    "long labels: item_id, annotator, label (and criterion)",
)


@dataclass(frozen=True)
class VertexColumn:
    """A column named by Vertex's convention ``{metric}/{role}``, with an optional rater suffix."""

    column: str
    metric: str
    role: Literal["human", "judge", "explanation"]
    kind: Kind
    #: The annotator or judge the column belongs to: ``human``/``judge`` for the bare column,
    #: ``human_2`` for ``…/human_rating_2``, ``alice`` for ``…/human_rating/alice``.
    who: str


def vertex_column(name: str) -> VertexColumn | None:
    """Parse a Vertex metrics-table column name; ``None`` when it is not one.

    >>> vertex_column("fluency/human_rating_2")
    VertexColumn(column='fluency/human_rating_2', metric='fluency', role='human', kind='pointwise', who='human_2')
    >>> vertex_column("prompt") is None
    True
    """
    match = _VERTEX.match(str(name))
    if match is None:
        return None
    raw_role = match["role"]
    role: Literal["human", "judge", "explanation"]
    if raw_role.startswith("human"):
        role, base = "human", "human"
    elif raw_role == "explanation":
        role, base = "explanation", "explanation"
    else:
        role, base = "judge", "judge"
    kind: Kind = "pairwise" if "pairwise" in raw_role else "pointwise"
    who = match["who"] or (f"{base}_{match['n']}" if match["n"] else base)
    return VertexColumn(str(name), match["metric"], role, kind, who)


def detect_layout(columns: Iterable[object]) -> Layout:
    """Name the layout a table's columns follow.

    - ``"azure_conversation"``: a ``messages`` column (Azure's conversation format);
    - ``"ragas"``: a ``user_input`` column (RAGAS samples: ``user_input``, ``response``,
      ``retrieved_contexts``, ``reference``);
    - ``"azure"``: ``question`` and ``answer`` (or ``query`` and ``response``), Azure's single-turn
      format, with optional ``context`` and ``ground_truth``;
    - ``"vertex"``: at least one ``{metric}/human_rating``, ``{metric}/score``,
      ``{metric}/human_pairwise_choice`` or ``{metric}/pairwise_choice`` column;
    - ``"long"``: ``item_id``, ``annotator`` and ``label`` (one row per label);
    - ``"plain"``: anything else; loading it needs a :class:`ColumnMapping`.

    Names are matched case-insensitively. Vertex-style label columns are read in every layout but
    ``long``, so a RAGAS file may carry them too.

    >>> detect_layout(["prompt", "response", "fluency/human_rating", "fluency/score"])
    'vertex'
    >>> detect_layout(["question", "answer", "context", "ground_truth"])
    'azure'
    >>> detect_layout(["text", "rating"])
    'plain'
    """
    names = [str(c) for c in columns]
    lower = {n.lower() for n in names}
    if "messages" in lower:
        return "azure_conversation"
    if "user_input" in lower:
        return "ragas"
    if {"question", "answer"} <= lower or {"query", "response"} <= lower:
        return "azure"
    if any((v := vertex_column(n)) is not None and v.role != "explanation" for n in names):
        return "vertex"
    if {"item_id", "annotator", "label"} <= lower:
        return "long"
    return "plain"


def find_column(columns: Iterable[object], *candidates: str) -> str | None:
    """The first column whose lower-cased name is one of ``candidates`` (tried in order)."""
    by_lower: dict[str, str] = {}
    for column in columns:
        by_lower.setdefault(str(column).lower(), str(column))
    for candidate in candidates:
        if candidate in by_lower:
            return by_lower[candidate]
    return None


def layout_fields(layout: Layout, columns: Iterable[object]) -> dict[str, str]:
    """Where a layout keeps each canonical item field: ``{field: column}`` for the columns present.

    ``conversation`` maps to the ``messages`` column of an Azure conversation, and ``context`` to
    RAGAS's ``retrieved_contexts`` (a list joined with blank lines).
    """
    names = list(columns)
    wanted: dict[str, tuple[str, ...]]
    if layout == "vertex":
        wanted = {
            "prompt": ("prompt", "instruction"),
            "context": ("context",),
            "reference": ("reference",),
        }
        if find_column(names, "baseline_model_response"):
            wanted |= {"response_a": ("response",), "response_b": ("baseline_model_response",)}
        else:
            wanted["response"] = ("response",)
    elif layout == "azure":
        wanted = {
            "prompt": ("question", "query"),
            "response": ("answer", "response"),
            "context": ("context",),
            "reference": ("ground_truth",),
        }
    elif layout == "azure_conversation":
        wanted = {"conversation": ("messages",), "reference": ("ground_truth",)}
    elif layout == "ragas":
        wanted = {
            "prompt": ("user_input",),
            "response": ("response",),
            "context": ("retrieved_contexts",),
            "reference": ("reference",),
        }
    elif layout == "long":
        wanted = {name: (name,) for name in ITEM_FIELDS}
    else:
        wanted = {}
    found: dict[str, str] = {}
    for field, candidates in wanted.items():
        column = find_column(names, *candidates)
        if column is not None:
            found[field] = column
    return found
