"""From a table to items and label sets: :func:`load_file` and the objects it returns."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalcore.errors import (
    DataError,
    DuplicateIdError,
    LayoutError,
    MissingColumnError,
)
from evalcore.labels import Scale

from ._common import RowRef, quote_list
from ._io import Source, guarded, read_source
from ._items import Plan, build_items, item_ids, required_strings, text_values
from ._labels import (
    Fractional,
    RawLabels,
    ResolvedLabels,
    Scales,
    declared_scale,
    resolve_labels,
)
from ._layout import (
    EXPECTED_LAYOUTS,
    ID_COLUMNS,
    Kind,
    Layout,
    VertexColumn,
    detect_layout,
    find_column,
    layout_fields,
    vertex_column,
)
from ._mapping import ColumnMapping

#: The metadata column that keeps RAGAS's ``retrieved_contexts`` as a list.
PASSAGES_COLUMN = "retrieved_contexts"


@dataclass(frozen=True, eq=False)
class LabelSet:
    """The human and judge labels of one metric, side by side, indexed by item id.

    - ``human``: one column per annotator; values are labels on ``scale``: on a numeric scale a
      float64 column with NaN where missing (numbers travel as float arrays from the file to the
      metrics); otherwise words (pairwise choices as ``"A"``/``"B"``/``"TIE"``) or ``None`` when
      missing, object dtype.
    - ``judges``: one column per judge, same rules. Vertex's ``{metric}/score`` is the judge
      ``"judge"``; its ``{metric}/human_rating`` the annotator ``"human"``.
    - ``explanations``: the judge's explanation per item when the file has one
      (Vertex's ``{metric}/explanation``), else ``None``.
    - ``reasons``: each judge's reply text per item, by judge name, when a mapping's label group
      names reason columns (``judge_gpt4_fluency_raw``), else ``None``.

    Both frames share the index: every item of the file, in file order.
    """

    metric: str
    kind: Kind
    scale: Scale
    human: pd.DataFrame
    judges: pd.DataFrame
    explanations: pd.Series | None = None
    reasons: Mapping[str, pd.Series] | None = None

    def reasons_of(self, judge: str) -> pd.Series | None:
        """The reply text of ``judge`` (its reason column, else the file's explanations)."""
        if self.reasons and judge in self.reasons:
            return self.reasons[judge]
        return self.explanations

    @property
    def n_items(self) -> int:
        """How many items the label set covers (labelled or not)."""
        return len(self.human.index)

    @property
    def annotators(self) -> tuple[str, ...]:
        """The annotators' names (columns of ``human``)."""
        return tuple(str(c) for c in self.human.columns)

    @property
    def judge_names(self) -> tuple[str, ...]:
        """The judges' names (columns of ``judges``)."""
        return tuple(str(c) for c in self.judges.columns)


@dataclass(frozen=True, eq=False)
class LoadedFile:
    """A file read in any layout: its raw table, its items and the label sets found in it.

    - ``source``: the file's display name (used in every message);
    - ``layout``: see :func:`detect_layout`;
    - ``kind``: ``"pairwise"`` when the file compares two responses, else ``"pointwise"``;
    - ``frame``: the table as read;
    - ``items``: ``item_id`` (str) + the canonical fields present (``prompt``, ``response``,
      ``context``, ``reference``, ``response_a``, ``response_b``, ``conversation``) + every other
      column as metadata, in file order (label columns are not items' metadata);
    - ``label_sets``: one :class:`LabelSet` per metric found;
    - ``notes``: what loading did that a user should know (answers counted as missing, scores
      rounded).
    """

    source: str
    layout: Layout
    kind: Kind
    frame: pd.DataFrame
    items: pd.DataFrame
    label_sets: tuple[LabelSet, ...]
    notes: tuple[str, ...] = ()

    @property
    def n_rows(self) -> int:
        """Rows in the file (for long-form labels, one per label)."""
        return len(self.frame)

    @property
    def metrics(self) -> tuple[str, ...]:
        """The names of the label sets."""
        return tuple(s.metric for s in self.label_sets)

    def label_set(self, metric: str) -> LabelSet:
        """The label set of ``metric``; ``KeyError`` naming the metrics found when there is none."""
        for label_set in self.label_sets:
            if label_set.metric == metric:
                return label_set
        raise KeyError(f"{self.source} has no metric {metric!r}; it has {list(self.metrics)}")


def load_file(
    source: Source,
    *,
    name: str | None = None,
    fmt: str | None = None,
    mapping: ColumnMapping | None = None,
    scales: Scales = None,
    max_bytes: int | None = None,
    round_half_up: bool = False,
    fractional: Fractional | None = None,
) -> LoadedFile:
    """Read a file and find its items and label sets.

    The file is read with :func:`read_table` (``name``, ``fmt`` and ``max_bytes`` as there). Its
    layout is recognised from the columns (:func:`detect_layout`); a ``plain`` file needs a
    ``mapping``, and a mapping given for another layout overrides or adds to what the layout says.
    Without a mapping, labels are found in Vertex-style ``{metric}/…`` columns (in any layout) and
    in long-form files; an Azure or RAGAS file without them loads with items only.

    Items are keyed by the mapping's ``item_id`` column, else an ``item_id``/``id``/``idx`` column,
    else by row number (``"1"``, ``"2"``, …). Labels are put on a scale: the one ``scales`` declares
    for the metric (a dict by metric name, or one :class:`~evalcore.labels.Scale` for all), or one
    inferred from the human and judge labels together. Pairwise words map to ``A``/``B``/``TIE``;
    numbers become floats; missing cells and ``"error"`` become ``None``; judge answers such as
    ``"invalid"`` or ``"unparsed"`` count as missing. With ``round_half_up=True`` fractional judge
    scores are rounded half up before they are checked against an integer scale
    (see :func:`round_scores_half_up`).

    Raises a :class:`~evalcore.errors.DataError` subclass naming the file, the column and the first
    offending rows (or lines, for JSONL): :class:`~evalcore.errors.LayoutError`,
    :class:`~evalcore.errors.MissingColumnError`, :class:`~evalcore.errors.DuplicateIdError`,
    :class:`~evalcore.errors.MixedLabelTypesError`, :class:`~evalcore.errors.LabelOutOfScaleError`,
    besides what :func:`read_table` raises.

    >>> loaded = load_file(b"prompt,response,fluency/human_rating,fluency/score\\nhi,yo,4,5\\n",
    ...                    name="run.csv")
    >>> loaded.layout, loaded.metrics, float(loaded.label_set("fluency").judges.loc["1", "judge"])
    ('vertex', ('fluency',), 5.0)
    """
    table = read_source(source, name=name, fmt=fmt, max_bytes=max_bytes)
    with guarded(table.source):
        return _assemble(
            table.frame, table.source, table.rows, mapping, scales, round_half_up, fractional
        )


def load_frame(
    frame: pd.DataFrame,
    *,
    source: str = "table",
    mapping: ColumnMapping | None = None,
    scales: Scales = None,
    round_half_up: bool = False,
    fractional: Fractional | None = None,
) -> LoadedFile:
    """:func:`load_file` for a table already in memory (rows are named by their 1-based position).

    >>> frame = pd.DataFrame({"text": ["a", "b"], "r1": ["pass", "fail"], "j": ["yes", "no"]})
    >>> loaded = load_frame(frame, mapping=ColumnMapping(response="text", human=("r1",), judge=("j",)))
    >>> loaded.label_sets[0].judges["j"].tolist()
    ['pass', 'fail']
    """
    return _assemble(
        _str_columns(frame), source, RowRef("row"), mapping, scales, round_half_up, fractional
    )


def items_from_frame(
    frame: pd.DataFrame, mapping: ColumnMapping | None = None, *, source: str = "table"
) -> pd.DataFrame:
    """The canonical items table of ``frame``: ``item_id``, the canonical fields, then metadata.

    The layout's own field names apply (see :func:`detect_layout`), overridden by ``mapping``. Label
    columns the mapping (or the Vertex convention) names are left out. For long-form labels there is
    one item per distinct id, with the canonical fields of its first row.

    >>> items_from_frame(pd.DataFrame({"q": ["2+2?"], "a": ["4"], "lang": ["en"]}),
    ...                  ColumnMapping(prompt="q", response="a")).to_dict("records")
    [{'item_id': '1', 'prompt': '2+2?', 'response': '4', 'lang': 'en'}]
    """
    frame = _str_columns(frame)
    rows = RowRef("row")
    columns = list(frame.columns)
    layout = detect_layout(columns)
    if mapping is not None:
        _check_mapping(mapping, columns, source)
    plan = _plan(columns, layout, mapping)
    if plan.long_form:
        return _long_items(frame, plan, rows, source)
    ids = item_ids(frame, plan.id_column, rows, source)
    return build_items(frame, ids, plan, rows, source, metadata=True)


def labels_long(label_set: LabelSet, *, judges: bool = False) -> pd.DataFrame:
    """The labels of a set as rows ``item_id, annotator, label`` (missing labels left out).

    Item-major order (all labels of the first item, then the next). ``judges=True`` gives the
    judges' labels instead, the judge's name in ``annotator``.

    >>> loaded = load_file(b"id,human_1,human_2\\nx,A,tie\\ny,,B\\n", name="p.csv",
    ...                    mapping=ColumnMapping(human=("human_1", "human_2")))
    >>> labels_long(loaded.label_sets[0]).to_dict("records")
    [{'item_id': 'x', 'annotator': 'human_1', 'label': 'A'}, {'item_id': 'x', 'annotator': 'human_2', 'label': 'TIE'}, {'item_id': 'y', 'annotator': 'human_2', 'label': 'B'}]
    """
    table = label_set.judges if judges else label_set.human
    n_items, n_raters = table.shape
    values = table.to_numpy(dtype=object).ravel()
    item_ids = np.repeat(np.asarray(table.index, dtype=object), n_raters)
    raters = np.tile(np.asarray([str(c) for c in table.columns], dtype=object), n_items)
    keep = pd.notna(values)  # labels are None when missing, never NaN
    return pd.DataFrame(
        {"item_id": item_ids[keep], "annotator": raters[keep], "label": values[keep]}
    ).reset_index(drop=True)


# --- planning: which column plays which part ----------------------------------------------------


def _str_columns(frame: pd.DataFrame) -> pd.DataFrame:
    if all(isinstance(c, str) for c in frame.columns) and isinstance(frame.index, pd.RangeIndex):
        return frame
    out = frame.reset_index(drop=True)
    out.columns = pd.Index([str(c) for c in out.columns], dtype=object)
    return out


def _check_mapping(mapping: ColumnMapping, columns: list[str], source: str) -> None:
    present = set(columns)
    for role, column in mapping.named_columns():
        if column not in present:
            raise MissingColumnError(
                f"{source}: the mapping names column {column!r} (as {role}) but there is no such "
                f"column; the columns are: {quote_list(columns)}",
                source=source,
                column=column,
            )


def _plan(columns: list[str], layout: Layout, mapping: ColumnMapping | None) -> Plan:
    exact = mapping is not None and mapping.exact
    fields = {} if exact else layout_fields(layout, columns)
    conversation = mapping.conversation if exact else fields.pop("conversation", None)  # type: ignore[union-attr]
    if mapping is not None:
        fields.update(mapping.item_fields)
    id_column = (mapping.item_id if mapping else None) or (
        None if exact else find_column(columns, *ID_COLUMNS)
    )
    context_column = fields.get("context")
    passages = context_column if (context_column or "").lower() == PASSAGES_COLUMN else None
    long_form = (not exact and layout == "long") or (mapping is not None and mapping.is_long)
    consumed: set[str] = {c for c in fields.values() if c != passages}
    if id_column:
        consumed.add(id_column)
    if conversation:
        consumed.add(conversation)
    vertex: tuple[VertexColumn, ...] = ()
    annotator = label = criterion = None
    if long_form:
        annotator = (mapping.annotator if mapping else None) or find_column(columns, "annotator")
        label = (mapping.label if mapping else None) or find_column(columns, "label")
        criterion = (mapping.criterion if mapping else None) or (
            None if exact else find_column(columns, "criterion", "metric")
        )
        consumed.update(c for c in (annotator, label, criterion) if c)
    else:
        found = [] if exact else [v for c in columns if (v := vertex_column(c)) is not None]
        labelled = {v.metric for v in found if v.role != "explanation"}
        vertex = tuple(
            v
            for v in found
            if v.metric in labelled and (v.role != "explanation" or v.who == "explanation")
        )
        consumed.update(v.column for v in vertex)
        if mapping is not None:
            consumed.update(mapping.human)
            consumed.update(mapping.judge)
            for group in mapping.groups:
                consumed.update(group.columns)
    return Plan(
        layout=layout,
        mapping=mapping,
        id_column=id_column,
        fields=fields,
        conversation=conversation,
        passages=passages,
        long_form=long_form,
        vertex=vertex,
        consumed=frozenset(consumed),
        annotator=annotator,
        label=label,
        criterion=criterion,
    )


def _layout_error(columns: list[str], source: str) -> LayoutError:
    expected = "; ".join(EXPECTED_LAYOUTS)
    return LayoutError(
        f"{source}: the columns ({quote_list(columns)}) match no known layout. Expected one of: "
        f"{expected}. Otherwise give a column mapping that names the item and label columns",
        source=source,
    )


# --- assembling -----------------------------------------------------------------------------------


def _assemble(
    frame: pd.DataFrame,
    source: str,
    rows: RowRef,
    mapping: ColumnMapping | None,
    scales: Scales,
    round_half_up: bool,
    fractional: Fractional | None = None,
) -> LoadedFile:
    columns = list(frame.columns)
    layout = detect_layout(columns)
    if mapping is not None:
        _check_mapping(mapping, columns, source)
    elif layout == "plain":
        raise _layout_error(columns, source)
    plan = _plan(columns, layout, mapping)
    notes: list[str] = []
    if plan.long_form:
        items, label_sets = _long_labels(frame, plan, rows, source, scales, notes, fractional)
    else:
        ids = item_ids(frame, plan.id_column, rows, source)
        items = build_items(frame, ids, plan, rows, source, metadata=True)
        index = pd.Index(ids, name="item_id", dtype=object)
        label_sets = _wide_labels(
            frame, plan, rows, source, index, scales, (round_half_up, fractional), notes
        )
    if mapping is not None and mapping.kind is not None:
        kind: Kind = mapping.kind
    elif any(s.kind == "pairwise" for s in label_sets) or {"response_a", "response_b"} <= set(
        items.columns
    ):
        kind = "pairwise"
    else:
        kind = "pointwise"
    return LoadedFile(source, layout, kind, frame, items, tuple(label_sets), tuple(notes))


def _wide_labels(
    frame: pd.DataFrame,
    plan: Plan,
    rows: RowRef,
    source: str,
    index: pd.Index,
    scales: Scales,
    rounding: tuple[bool, Fractional | None],
    notes: list[str],
) -> list[LabelSet]:
    round_half_up, fractional = rounding
    positions = np.arange(len(frame))
    groups: dict[str, list[VertexColumn]] = {}
    for v in plan.vertex:
        groups.setdefault(v.metric, []).append(v)
    label_sets: list[LabelSet] = []
    for metric, vcols in groups.items():
        raws = [
            RawLabels(v.who, v.column, v.role, frame[v.column], positions)  # type: ignore[arg-type]
            for v in vcols
            if v.role != "explanation"
        ]
        pairwise = any(v.kind == "pairwise" for v in vcols if v.role != "explanation")
        resolved = resolve_labels(
            raws,
            metric=metric,
            source=source,
            rows=rows,
            scale=declared_scale(scales, metric),
            kind="pairwise" if pairwise else None,
            round_half_up=round_half_up,
            fractional=fractional,
        )
        notes.extend(resolved.notes)
        explanation = next((v.column for v in vcols if v.role == "explanation"), None)
        explanations = None
        if explanation is not None:
            explanations = pd.Series(
                text_values(frame[explanation]).to_numpy(dtype=object, na_value=None),
                index=index,
                name=explanation,
                dtype=object,
            )
        label_sets.append(_label_set(metric, raws, resolved, index, explanations))
    mapping = plan.mapping
    wide: list[tuple[str, list[RawLabels], Kind | None, dict[str, str]]] = []
    if mapping is not None and (mapping.human or mapping.judge):
        raws = [RawLabels(c, c, "human", frame[c], positions) for c in mapping.human]
        raws += [RawLabels(c, c, "judge", frame[c], positions) for c in mapping.judge]
        wide.append((mapping.metric, raws, mapping.kind, {}))
    for group in mapping.groups if mapping is not None else ():
        raws = [RawLabels(n, c, "human", frame[c], positions) for n, c in group.human]
        raws += [RawLabels(n, c, "judge", frame[c], positions) for n, c in group.judge]
        wide.append((group.metric, raws, group.kind or mapping.kind, dict(group.reasons)))  # type: ignore[union-attr]
    for metric, raws, kind, reason_columns in wide:
        if metric in groups or metric in {s.metric for s in label_sets[len(groups) :]}:
            raise DataError(
                f"{source}: the mapping's metric {metric!r} is also a Vertex metric of the file, "
                "or the name of another label group; give the mapping another metric name",
                source=source,
            )
        resolved = resolve_labels(
            raws,
            metric=metric,
            source=source,
            rows=rows,
            scale=declared_scale(scales, metric),
            kind=kind,
            round_half_up=round_half_up,
            fractional=fractional,
        )
        notes.extend(resolved.notes)
        label_set = _label_set(metric, raws, resolved, index, None)
        if reason_columns:
            texts = {
                judge: pd.Series(
                    text_values(frame[column]).to_numpy(dtype=object, na_value=None),
                    index=index,
                    name=column,
                    dtype=object,
                )
                for judge, column in reason_columns.items()
            }
            label_set = LabelSet(
                label_set.metric,
                label_set.kind,
                label_set.scale,
                label_set.human,
                label_set.judges,
                None,
                texts,
            )
        label_sets.append(label_set)
    return label_sets


def _unique_names(names: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for name in names:
        candidate, k = name, 2
        while candidate in seen:
            candidate, k = f"{name}_{k}", k + 1
        seen.add(candidate)
        out.append(candidate)
    return out


def _label_frame(names: list[str], values: list[np.ndarray], index: pd.Index) -> pd.DataFrame:
    unique = _unique_names(names)
    # numbers travel as float64 columns (NaN = missing), from here to the metrics, never as objects
    dtype = np.float64 if values and all(v.dtype == np.float64 for v in values) else object
    table = pd.DataFrame(
        {
            name: pd.Series(v, index=index, dtype=dtype)
            for name, v in zip(unique, values, strict=True)
        },
        index=index,
        dtype=dtype,
    )
    table.columns = pd.Index(unique, dtype=object)
    return table


def _label_set(
    metric: str,
    raws: list[RawLabels],
    resolved: ResolvedLabels,
    index: pd.Index,
    explanations: pd.Series | None,
) -> LabelSet:
    pairs = list(zip(raws, resolved.values, strict=True))
    human = _label_frame(
        [r.name for r, _ in pairs if r.role == "human"],
        [v for r, v in pairs if r.role == "human"],
        index,
    )
    judges = _label_frame(
        [r.name for r, _ in pairs if r.role == "judge"],
        [v for r, v in pairs if r.role == "judge"],
        index,
    )
    return LabelSet(metric, resolved.kind, resolved.scale, human, judges, explanations)


# --- long-form labels -----------------------------------------------------------------------------


def _long_labels(
    frame: pd.DataFrame,
    plan: Plan,
    rows: RowRef,
    source: str,
    scales: Scales,
    notes: list[str],
    fractional: Fractional | None = None,
) -> tuple[pd.DataFrame, list[LabelSet]]:
    columns = list(frame.columns)
    for role, column in (
        ("item id", plan.id_column),
        ("annotator", plan.annotator),
        ("label", plan.label),
    ):
        if column is None:
            raise MissingColumnError(
                f"{source}: long-form labels need an {role} column; the columns are: "
                f"{quote_list(columns)}",
                source=source,
            )
    assert plan.id_column is not None
    assert plan.annotator is not None
    assert plan.label is not None
    ids = item_ids(frame, plan.id_column, rows, source, unique=False)
    annotators = required_strings(frame, plan.annotator, rows, source, what="is empty")
    metric = plan.mapping.metric if plan.mapping else "label"
    if plan.criterion:
        criteria = required_strings(frame, plan.criterion, rows, source, what="is empty")
    else:
        criteria = np.full(len(frame), metric, dtype=object)
    keys = pd.DataFrame({"i": ids, "a": annotators, "c": criteria})
    repeated = keys.duplicated(keep=False).to_numpy()
    if repeated.any():
        first = np.flatnonzero(repeated)[0]
        same = np.flatnonzero(
            repeated
            & (ids == ids[first])
            & (annotators == annotators[first])
            & (criteria == criteria[first])
        )
        what = f"item {ids[first]!r}, annotator {annotators[first]!r}"
        if plan.criterion:
            what += f", {plan.criterion} {criteria[first]!r}"
        raise DuplicateIdError(
            f"{source}: {what} has more than one label, on {rows.describe(same)}; keep one row per "
            f"item and annotator{' and criterion' if plan.criterion else ''} "
            f"({int(repeated.sum())} rows repeat in all)",
            source=source,
            column=plan.label,
            rows=rows.numbers(same),
            item_id=str(ids[first]),
        )
    items = _long_items(frame, plan, rows, source, ids=ids)
    all_items = pd.Index(items["item_id"].to_numpy(dtype=object), name="item_id", dtype=object)
    label_sets: list[LabelSet] = []
    kind = plan.mapping.kind if plan.mapping else None
    for criterion in pd.unique(criteria):
        positions = np.flatnonzero(criteria == criterion)
        raw = RawLabels("label", plan.label, "human", frame[plan.label].iloc[positions], positions)
        resolved = resolve_labels(
            [raw],
            metric=str(criterion),
            source=source,
            rows=rows,
            scale=declared_scale(scales, str(criterion)),
            kind=kind,
            fractional=fractional,
        )
        notes.extend(resolved.notes)
        long = pd.DataFrame(
            {
                "item_id": ids[positions],
                "annotator": annotators[positions],
                "label": resolved.values[0],
            }
        )
        order = pd.unique(annotators[positions])
        human = long.pivot(index="item_id", columns="annotator", values="label")
        human = human.reindex(index=all_items, columns=order).astype(object)
        human = human.where(human.notna(), None)
        human.index = all_items
        human.columns = pd.Index([str(c) for c in order], dtype=object)
        judges = pd.DataFrame(index=all_items, dtype=object)
        label_sets.append(LabelSet(str(criterion), resolved.kind, resolved.scale, human, judges))
    return items, label_sets


def _long_items(
    frame: pd.DataFrame,
    plan: Plan,
    rows: RowRef,
    source: str,
    *,
    ids: np.ndarray | None = None,
) -> pd.DataFrame:
    if ids is None:
        if plan.id_column is None:
            raise MissingColumnError(
                f"{source}: long-form labels need an item id column; the columns are: "
                f"{quote_list(list(frame.columns))}",
                source=source,
            )
        ids = item_ids(frame, plan.id_column, rows, source, unique=False)
    first = np.flatnonzero(~pd.Series(ids).duplicated().to_numpy())
    subset = frame.iloc[first].reset_index(drop=True)
    return build_items(subset, ids[first], plan, rows.take(first), source, metadata=False)
