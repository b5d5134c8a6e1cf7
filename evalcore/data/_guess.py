"""What each column of a table holds, guessed from its name (and, for unmarked columns, its values).

:func:`guess_roles` gives every column one :class:`ColumnRole`: an item field (the id, prompt,
response, context, reference, the two responses of a pair), an extra item field, metadata, a human
label, a judge label, a judge's reason, one part of long-form labels, or nothing. Label columns also
get the criterion (aspect) they rate and who gave them, so that a file with several aspects rated by
several people and judges becomes one label set per aspect, with one annotator per person and one
judge per model. The naming families it reads:

- a role word and a number or short name: ``human_1``, ``rater_x``, ``annotator_3``, ``expert_b``;
- the same with the aspect: ``human_<criterion>_<n>``, ``<criterion>_human_<n>``,
  ``annotator_<n>_<criterion>``;
- judges by a role word or a model name: ``judge_<model>_<criterion>``, ``judge_<criterion>``,
  ``<criterion>_judge``, ``judge_<model>``, ``gpt4_<criterion>``, ``llm_score``; a trailing label word
  (``_score``, ``_choice``, ``_rating`` …) is dropped, and ``_reason``, ``_explanation``, ``_raw`` …
  mark the judge's reply text;
- unmarked grids of label-like columns: ``<criterion>_<annotator>`` (``fluency_alice``,
  ``fluency_bob``, ``tone_alice`` …) or ``<annotator>_<criterion>`` when the aspect comes last;
- Vertex's ``<metric>/human_rating``, ``<metric>/score``, ``<metric>/explanation`` (and pairwise);
- long format: ``annotator`` and ``label`` (and ``criterion``) columns, one row per label.

Aggregates (``_mean``, ``_median``, ``_majority``, ``_n_agree``, a human column without a number
beside numbered ones) and reasons or comments by people become metadata: kept with the items, shown
to nobody. The guess never raises: what it cannot place is metadata, for the user to change.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

import pandas as pd

from evalcore.labels import normalize_label

from ._layout import ID_COLUMNS, Kind, detect_layout, find_column, layout_fields, vertex_column
from ._mapping import ColumnMapping, LabelGroup

__all__ = [
    "CRITERION_WORDS",
    "ROLES",
    "ROLE_TEXT",
    "ColumnRole",
    "Role",
    "guess_roles",
    "mapping_from_roles",
    "suggest_mapping",
]

Role: TypeAlias = Literal[
    "item_id",
    "prompt",
    "response",
    "context",
    "reference",
    "response_a",
    "response_b",
    "conversation",
    "item_field",
    "metadata",
    "human",
    "judge",
    "reason",
    "annotator",
    "label",
    "criterion",
    "ignore",
]
#: Every role, with the words a form shows for it.
ROLE_TEXT: Final[dict[Role, str]] = {
    "item_id": "item id",
    "prompt": "prompt",
    "response": "response",
    "context": "context",
    "reference": "reference answer",
    "response_a": "response A (pairwise)",
    "response_b": "response B (pairwise)",
    "conversation": "conversation (messages)",
    "item_field": "item field (the judge and annotators see it)",
    "metadata": "metadata (kept, shown to nobody)",
    "human": "human label",
    "judge": "judge label",
    "reason": "judge's reason",
    "annotator": "annotator (one row per label)",
    "label": "label (one row per label)",
    "criterion": "criterion (one row per label)",
    "ignore": "leave out",
}
ROLES: Final[tuple[Role, ...]] = tuple(ROLE_TEXT)
#: The roles of the item fields (one column each at most).
FIELD_ROLES: Final[tuple[Role, ...]] = (
    "item_id",
    "prompt",
    "response",
    "context",
    "reference",
    "response_a",
    "response_b",
    "conversation",
)
#: The roles of labels given one per row.
LONG_ROLES: Final[tuple[Role, ...]] = ("annotator", "label", "criterion")

# --- names -----------------------------------------------------------------------------------------

_PROMPT = ("prompt", "question", "instruction", "user_input", "query", "input")
_RESPONSE = ("response", "answer", "output", "completion", "generation", "prediction", "summary")
_CONTEXT = ("context", "retrieved_contexts", "contexts", "source", "document", "article", "passage")
_REFERENCE = ("reference", "ground_truth", "reference_answer", "expected_output", "gold", "target")
_RESPONSE_A = ("response_a", "response_1", "output_a", "answer_a", "completion_a")
_RESPONSE_B = ("response_b", "response_2", "output_b", "answer_b", "completion_b")
_ANNOTATOR = ("annotator", "annotator_id", "rater", "rater_id", "labeler", "user", "worker_id")
_LABEL = ("label", "rating", "choice", "score")
_CRITERION = ("criterion", "metric", "aspect")
_FIELDS: Final[dict[Role, tuple[str, ...]]] = {
    "prompt": _PROMPT,
    "response": _RESPONSE,
    "context": _CONTEXT,
    "reference": _REFERENCE,
    "response_a": _RESPONSE_A,
    "response_b": _RESPONSE_B,
}

#: Words that mark a column as people's labels.
HUMAN_WORDS: Final = frozenset(
    {"human", "humans", "annotator", "annotators", "rater", "raters", "expert", "experts",
     "labeler", "labeller", "annotation", "crowd", "turker", "worker", "manual", "person"}
)  # fmt: skip
#: Words that mark a column as a judge's labels.
JUDGE_WORDS: Final = frozenset(
    {"judge", "llm", "autorater", "evaluator", "grader", "critic", "auto", "ai"}
)
#: The start of a model's name, which marks a column as that model's verdicts.
_MODEL: Final = re.compile(
    r"^(gpt|claude|llama|mistral|mixtral|gemini|gemma|qwen|palm|deepseek|phi|command|vicuna|"
    r"falcon|pandalm|prometheus|o[134]|chatgpt|bard|yi|glm|olmo)[a-z0-9]*$"
)
#: Words for the label itself, dropped from a label column's name ("judge_gpt4_score").
LABEL_WORDS: Final = frozenset(
    {"score", "scores", "rating", "ratings", "label", "labels", "choice", "verdict", "grade",
     "judgment", "judgement", "preference", "answer", "decision", "value", "pred"}
)  # fmt: skip
#: Words for the text of a reply or a comment ("judge_gpt4_coherence_raw").
REASON_WORDS: Final = frozenset(
    {"reason", "reasons", "reasoning", "explanation", "explanations", "rationale", "raw",
     "critique", "feedback", "comment", "comments", "justification", "thoughts", "output",
     "response", "text", "note", "notes"}
)  # fmt: skip
#: Words for something computed from several labels ("human_coherence_mean").
AGGREGATE_WORDS: Final = frozenset(
    {"mean", "avg", "average", "median", "std", "var", "majority", "agree", "agreement",
     "count", "mode", "vote", "votes", "consensus", "aggregate", "agg", "sum", "min", "max",
     "total", "kappa", "alpha", "final", "gold"}
)  # fmt: skip
#: Words for facts about a label or an item that are not labels.
META_WORDS: Final = frozenset(
    {"time", "seconds", "secs", "ms", "latency", "duration", "tokens", "cost", "id", "ids",
     "name", "model", "date", "timestamp", "created", "updated", "version", "prompt", "url",
     "lang", "language", "source", "system", "category", "type", "split"}
)  # fmt: skip
#: Names of aspects that evaluations commonly rate: a guess that a word is a criterion.
CRITERION_WORDS: Final = frozenset(
    {"coherence", "consistency", "fluency", "relevance", "relevancy", "helpfulness",
     "harmlessness", "honesty", "correctness", "accuracy", "faithfulness", "groundedness",
     "completeness", "conciseness", "clarity", "safety", "toxicity", "quality", "overall",
     "similarity", "readability", "informativeness", "engagingness", "naturalness", "style",
     "tone", "factuality", "hallucination", "usefulness", "politeness", "empathy", "grammar",
     "coverage", "specificity", "depth", "creativity", "harm", "bias", "instruction",
     "following", "adherence", "preference", "pairwise"}
)  # fmt: skip

_SPLIT = re.compile(r"[^A-Za-z0-9]+")
_ID = re.compile(r"^(\d+|[a-z]|[a-z]{1,3}\d+)$")


@dataclass(frozen=True)
class ColumnRole:
    """What one column holds.

    ``criterion`` is the aspect a human, judge or reason column rates (empty: the file's only
    one, whatever its criterion is called); ``name`` is the annotator (human) or the judge (judge,
    reason) the labels come from; ``note`` says why the guess placed it there, when that is not
    obvious (an aggregate, a comment).
    """

    column: str
    role: Role
    criterion: str = ""
    name: str = ""
    note: str = ""

    @property
    def is_label(self) -> bool:
        return self.role in ("human", "judge")


def _tokens(name: str) -> list[str]:
    """The words of a column name, as written (``judge_gpt4_Coherence`` → judge, gpt4, Coherence)."""
    return [t for t in _SPLIT.split(name) if t]


def _is_id(token: str) -> bool:
    return bool(_ID.match(token.lower()))


def _join(tokens: Sequence[str]) -> str:
    return "_".join(tokens)


# --- values ------------------------------------------------------------------------------------------


def _label_like(series: pd.Series | None) -> bool:
    """Whether a column's values look like labels: numbers, or a few short words. A column with
    no values (a header-only table, or every cell empty) could be labels."""
    if series is None:
        return True
    values = series.dropna()
    if values.empty:
        return True
    distinct = pd.unique(values.astype(str).str.strip().to_numpy(dtype=object))[:60]
    labels = [normalize_label(v) for v in distinct if str(v)]
    words = [x for x in labels if isinstance(x, str)]
    numbers = [x for x in labels if isinstance(x, float)]
    if not words:
        return len(numbers) <= 41
    return not numbers and len(words) <= 12 and all(len(w) <= 24 for w in words)


def _text_like(series: pd.Series | None) -> bool:
    """Whether a column holds text (long or varied words), not labels."""
    if series is None:
        return False
    values = series.dropna()
    return not values.empty and not _label_like(series)


# --- the guess ---------------------------------------------------------------------------------------


@dataclass
class _Marked:
    """A column whose name marks it as people's or a judge's: its words without the marker."""

    column: str
    side: Literal["human", "judge"]
    marker: str  # the marker word as written ("" when a model's name marks it)
    rest: list[str]  # the other words, as written
    kind: Literal["label", "reason", "aggregate", "meta"]
    id: str | None = None


def _classify_rest(
    rest: list[str],
) -> tuple[Literal["label", "reason", "aggregate", "meta"], list[str]]:
    lower = [t.lower() for t in rest]
    if any(t in REASON_WORDS for t in lower):
        kept = [t for t in rest if t.lower() not in REASON_WORDS and t.lower() not in LABEL_WORDS]
        return "reason", kept
    if any(t in AGGREGATE_WORDS or t == "n" for t in lower):
        return "aggregate", rest
    if (
        lower and lower[-1] in META_WORDS
    ):  # "judge_latency_ms", "judge_model", not "judge_big_model_7b_x"
        return "meta", rest
    return "label", [t for t in rest if t.lower() not in LABEL_WORDS]


def _marked(column: str) -> _Marked | None:
    tokens = _tokens(column)
    lower = [t.lower() for t in tokens]
    for side, words in (("human", HUMAN_WORDS), ("judge", JUDGE_WORDS)):
        for at in (0, len(tokens) - 1, 1):
            if 0 <= at < len(tokens) and lower[at] in words:
                rest = tokens[:at] + tokens[at + 1 :]
                kind, kept = _classify_rest(rest)
                return _Marked(column, side, tokens[at], kept, kind)  # type: ignore[arg-type]
    if tokens and _MODEL.match(lower[0]):
        kind, kept = _classify_rest(tokens[1:])
        return _Marked(column, "judge", "", [tokens[0], *kept], kind)
    return None


def _split_known(rest: list[str], known: set[str]) -> tuple[list[str], list[str]] | None:
    """(criterion words, other words) when a prefix or suffix of ``rest`` names a known criterion
    (the longest such, suffixes first)."""
    for size in range(len(rest), 0, -1):
        tail = rest[len(rest) - size :]
        if _join(tail).lower() in known:
            return tail, rest[: len(rest) - size]
    for size in range(len(rest), 0, -1):
        head = rest[:size]
        if _join(head).lower() in known:
            return head, rest[size:]
    return None


def _grid_criteria(rests: Iterable[list[str]]) -> tuple[set[str], str] | None:
    """Criteria read from a grid of names: a last (or first) word that comes with at least two
    different other parts, when at least two such words exist (``gpt4_coherence``,
    ``gpt4_fluency``, ``llama_coherence``, ``llama_fluency``)."""
    rests = [r for r in rests if len(r) >= 2]
    for end, label in ((-1, "last"), (0, "first")):
        partners: dict[str, set[str]] = defaultdict(set)
        for rest in rests:
            word = rest[end].lower()
            others = rest[:-1] if end == -1 else rest[1:]
            partners[word].add(_join(others).lower())
        found = {w for w, others in partners.items() if len(others) >= 2}
        if len(found) >= 2:
            return found, label
    return None


def _judge_role(m: _Marked, known: set[str], grid: tuple[set[str], str] | None) -> ColumnRole:
    rest = list(m.rest)
    criterion: list[str] = []
    split = _split_known(rest, known)
    if split is not None:
        criterion, rest = split
    elif grid is not None and len(rest) >= 2:
        words, end = grid
        if end == "last" and rest[-1].lower() in words:
            criterion, rest = [rest[-1]], rest[:-1]
        elif end == "first" and rest[0].lower() in words:
            criterion, rest = [rest[0]], rest[1:]
    name = _join([m.marker, *rest] if m.marker else rest) or m.marker or m.column
    role: Role = "reason" if m.kind == "reason" else "judge"
    return ColumnRole(m.column, role, _join(criterion), name)


def _human_roles(marked: list[_Marked], known: set[str]) -> dict[str, ColumnRole]:
    """People's columns: numbered ones first; then the unnumbered, which are an aggregate when
    numbered columns of the same criterion exist, a criterion when their words name one, else one
    person named by the column."""
    found: dict[str, ColumnRole] = {}
    numbered: set[str] = set()
    plain: list[_Marked] = []
    for m in marked:
        rest = m.rest
        if rest and _is_id(rest[-1]):
            m.id, rest = rest[-1], rest[:-1]
        elif rest and _is_id(rest[0]) and len(rest) >= 2:
            m.id, rest = rest[0], rest[1:]
        if m.id is None:
            plain.append(m)
            continue
        criterion = _join(rest)
        numbered.add(criterion.lower())
        found[m.column] = ColumnRole(m.column, "human", criterion, f"{m.marker}_{m.id}")
    for m in plain:
        criterion = _join(m.rest)
        if criterion.lower() in numbered:
            note = "an aggregate of the numbered annotators' labels"
            found[m.column] = ColumnRole(m.column, "metadata", note=note)
        elif not m.rest or criterion.lower() in known:
            found[m.column] = ColumnRole(m.column, "human", criterion, m.marker)
        else:
            found[m.column] = ColumnRole(m.column, "human", "", m.column)
    return found


def _unmarked_grid(
    columns: list[str], frame: pd.DataFrame | None, known: set[str]
) -> dict[str, ColumnRole]:
    """``<criterion>_<annotator>`` (or ``<annotator>_<criterion>``) columns without a role word:
    label-like values, and either a known criterion on one side, or names that recur across at
    least two criteria."""
    candidates: dict[str, list[str]] = {}
    for column in columns:
        tokens = _tokens(column)
        lower = {t.lower() for t in tokens}
        if len(tokens) < 2 or lower & (META_WORDS | REASON_WORDS | AGGREGATE_WORDS):
            continue
        series = None if frame is None else frame[column]
        if frame is not None and (
            series is None or series.dropna().empty or not _label_like(series)
        ):
            continue
        candidates[column] = tokens
    found: dict[str, ColumnRole] = {}
    for first in (True, False):  # <criterion>_<annotator>, then <annotator>_<criterion>
        groups: dict[str, dict[str, str]] = defaultdict(dict)
        for column, tokens in candidates.items():
            if column in found:
                continue
            crit, who = (
                (tokens[0], _join(tokens[1:])) if first else (tokens[-1], _join(tokens[:-1]))
            )
            groups[crit.lower()][column] = who
        recurring: dict[str, int] = defaultdict(int)
        for members in groups.values():
            for who in set(members.values()):
                recurring[who.lower()] += 1
        for crit, members in groups.items():
            whos = list(members.values())
            if len(members) < 2 or _is_id(crit):
                continue
            shared = sum(recurring[w.lower()] >= 2 for w in whos)
            if crit in known or (shared >= 2 and len(groups) >= 2):
                for column, who in members.items():
                    criterion = _tokens(column)[0 if first else -1]
                    found[column] = ColumnRole(column, "human", criterion, who)
    return found


def _unique_id(columns: list[str], frame: pd.DataFrame | None) -> str | None:
    """A column named like an id (``…_id``, ``…id``, ``key``, ``uuid``) whose values are all
    present and distinct."""
    if frame is None:
        return None
    for column in columns:
        lower = column.lower()
        if not (lower.endswith(("_id", "id", "_key")) or lower in ("key", "uuid", "guid")):
            continue
        series = frame[column]
        if (
            series.notna().all()
            and series.astype(str).str.strip().ne("").all()
            and series.is_unique
        ):
            return column
    return None


def guess_roles(frame: pd.DataFrame) -> tuple[ColumnRole, ...]:
    """A role for every column of ``frame``, in column order (see the module for the families).

    >>> roles = guess_roles(pd.DataFrame(columns=[
    ...     "id", "question", "answer", "human_fluency_1", "human_fluency_2", "human_fluency_mean",
    ...     "judge_gpt4_fluency", "judge_gpt4_fluency_raw"]))
    >>> [(r.column, r.role, r.criterion, r.name) for r in roles][3:]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('human_fluency_1', 'human', 'fluency', 'human_1'),
     ('human_fluency_2', 'human', 'fluency', 'human_2'),
     ('human_fluency_mean', 'metadata', '', ''),
     ('judge_gpt4_fluency', 'judge', 'fluency', 'judge_gpt4'),
     ('judge_gpt4_fluency_raw', 'reason', 'fluency', 'judge_gpt4')]
    """
    columns = [str(c) for c in frame.columns]
    values = frame if len(frame) else None
    roles: dict[str, ColumnRole] = {}
    layout = detect_layout(columns)
    for field, column in layout_fields(layout, columns).items():
        roles[column] = ColumnRole(column, field)  # type: ignore[arg-type]
    id_column = find_column(columns, *ID_COLUMNS) or _unique_id(columns, values)
    if id_column is not None:
        roles.setdefault(id_column, ColumnRole(id_column, "item_id"))
    taken = {r.role for r in roles.values()}
    for field, names in _FIELDS.items():
        found = find_column([c for c in columns if c not in roles], *names)
        if found is not None and field not in taken:
            roles[found] = ColumnRole(found, field)
            taken.add(field)

    annotator = find_column(columns, *_ANNOTATOR)
    label = find_column(columns, *_LABEL) if annotator else None
    if annotator is not None and label is not None and layout != "vertex":
        roles[annotator] = ColumnRole(annotator, "annotator")
        roles[label] = ColumnRole(label, "label")
        criterion = find_column(columns, *_CRITERION)
        if criterion is not None:
            roles[criterion] = ColumnRole(criterion, "criterion")
        return tuple(roles.get(c, ColumnRole(c, "metadata")) for c in columns)

    for column in columns:
        v = vertex_column(column)
        if v is None or column in roles:
            continue
        if v.role == "explanation":
            if v.who == "explanation":
                roles[column] = ColumnRole(column, "reason", v.metric, "judge")
        else:
            roles[column] = ColumnRole(column, v.role, v.metric, v.who)

    free = [c for c in columns if c not in roles]
    marked = [m for c in free if (m := _marked(c)) is not None]
    for m in marked:
        series = None if values is None else values[m.column]
        if m.kind in ("aggregate", "meta"):
            what = "an aggregate of labels" if m.kind == "aggregate" else "a fact about the labels"
            roles[m.column] = ColumnRole(m.column, "metadata", note=what)
        elif m.side == "human" and (m.kind == "reason" or _text_like(series)):
            roles[m.column] = ColumnRole(m.column, "metadata", note="people's comments")
        elif m.side == "judge" and m.kind == "label" and _text_like(series):
            m.kind = "reason"
    humans = [m for m in marked if m.side == "human" and m.column not in roles]
    known = set(CRITERION_WORDS)
    for m in humans:
        if m.rest and (_is_id(m.rest[-1]) or (len(m.rest) >= 2 and _is_id(m.rest[0]))):
            words = m.rest[:-1] if _is_id(m.rest[-1]) else m.rest[1:]
            if words:
                known.add(_join(words).lower())
    judges = [m for m in marked if m.side == "judge" and m.column not in roles]
    grid = _grid_criteria(m.rest for m in judges if m.kind == "label")
    for m in judges:
        roles[m.column] = _judge_role(m, known, grid)
    known |= {r.criterion.lower() for r in roles.values() if r.role == "judge" and r.criterion}
    roles.update(_human_roles(humans, known))
    # one reason per judge and criterion (an explanation before a raw reply); a reason whose judge
    # has no label column is kept for the record
    judged = {(r.criterion, r.name) for r in roles.values() if r.role == "judge"}
    reasons = sorted(
        (r for r in roles.values() if r.role == "reason"),
        key=lambda r: "raw" in {t.lower() for t in _tokens(r.column)},
    )
    for role in reasons:
        if (role.criterion, role.name) not in judged:
            note = "a judge's text without its label" if role.name else "a judge's text"
            roles[role.column] = ColumnRole(role.column, "metadata", note=note)
        else:
            judged.discard((role.criterion, role.name))
    rest = [c for c in columns if c not in roles]
    roles.update(_unmarked_grid(rest, values, known))
    return tuple(roles.get(c, ColumnRole(c, "metadata")) for c in columns)


def mapping_from_roles(
    roles: Sequence[ColumnRole], *, default_criterion: str = "label", kind: Kind | None = None
) -> ColumnMapping:
    """The :class:`ColumnMapping` the roles describe, exactly: item fields from their roles only,
    one label group per criterion (``default_criterion`` for labels that name none), long-form
    labels from the annotator, label and criterion roles (without a criterion column, the label
    column's criterion names them).

    >>> m = mapping_from_roles([ColumnRole("q", "prompt"), ColumnRole("h1", "human", "tone", "ann"),
    ...                         ColumnRole("j", "judge", "tone", "gpt")])
    >>> m.prompt, [(g.metric, g.human, g.judge) for g in m.groups]
    ('q', [('tone', (('ann', 'h1'),), (('gpt', 'j'),))])
    """
    fields: dict[str, str] = {}
    long: dict[str, str] = {}
    groups: dict[str, dict[str, list[tuple[str, str]]]] = {}
    for role in roles:
        if role.role in FIELD_ROLES:
            fields.setdefault(role.role, role.column)
        elif role.role in LONG_ROLES:
            long.setdefault(role.role, role.column)
        elif role.role in ("human", "judge", "reason"):
            metric = role.criterion.strip() or default_criterion
            group = groups.setdefault(metric, {"human": [], "judge": [], "reason": []})
            group[role.role].append((role.name.strip() or role.column, role.column))
    conversation = fields.pop("conversation", None)
    named = next(
        (r.criterion.strip() for r in roles if r.role == "label" and r.criterion.strip()), ""
    )
    return ColumnMapping(
        **fields,  # type: ignore[arg-type]
        metric=named or default_criterion,
        kind=kind,
        annotator=long.get("annotator"),
        label=long.get("label"),
        criterion=long.get("criterion"),
        groups=tuple(
            LabelGroup(
                metric,
                tuple(g["human"]),
                tuple(g["judge"]),
                tuple(g["reason"]),
                kind=kind,
            )
            for metric, g in groups.items()
            if g["human"] or g["judge"]
        ),
        exact=True,
        conversation=conversation,
    )


def suggest_mapping(frame: pd.DataFrame) -> ColumnMapping:
    """Guess a :class:`ColumnMapping` from the column names (:func:`guess_roles`), to pre-fill a
    mapping form.

    A file whose labels rate one criterion gets the flat form (``human`` and ``judge`` columns,
    annotators named by their columns); a file with several criteria gets one label group per
    criterion (``groups``). Item fields are found by name (``item_id``/``id``/``idx``, ``prompt``,
    ``question``, ``answer``, ``response``, ``context``, ``reference``, ``ground_truth``,
    ``response_a``/``response_b`` …); ``kind`` is ``"pairwise"`` when both responses of a pair are
    found. The guess is a starting point: check it, especially the label columns.

    >>> frame = pd.DataFrame(columns=["id", "question", "answer", "human_1", "judge_gpt", "judge_gpt_reason"])
    >>> m = suggest_mapping(frame)
    >>> m.item_id, m.prompt, m.response, m.human, m.judge
    ('id', 'question', 'answer', ('human_1',), ('judge_gpt',))
    """
    roles = guess_roles(frame)
    by_role = {r.role: r.column for r in reversed(roles)}
    pairwise = "response_a" in by_role and "response_b" in by_role
    kind: Kind | None = "pairwise" if pairwise else None
    long = "annotator" in by_role and "label" in by_role
    # Vertex's columns are read by the loader on its own; the flat form leaves them out
    own = [r for r in roles if r.is_label and vertex_column(r.column) is None]
    criteria = {r.criterion for r in own}
    fields = {f: by_role.get(f) for f in FIELD_ROLES if f != "conversation"}
    if long or len(criteria) <= 1:
        return ColumnMapping(
            **fields,  # type: ignore[arg-type]
            human=tuple(r.column for r in own if r.role == "human"),
            judge=tuple(r.column for r in own if r.role == "judge"),
            metric=next(iter(criteria), "") or "label",
            kind=kind,
            annotator=by_role.get("annotator") if long else None,
            label=by_role.get("label") if long else None,
            criterion=by_role.get("criterion") if long else None,
        )
    return mapping_from_roles(roles, kind=kind)
