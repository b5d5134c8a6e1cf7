"""Load what a calibration report needs from the store: items, human labels and judge results.

Everything is read in a few set-based SQL statements and turned into DataFrames column-wise, so that a
100 000-item dataset with three runs loads in about a second. The rows are read from the DBAPI cursor
directly (no ORM objects, no per-row type processing); only plain columns (ids, label text, status,
score) are read in bulk. Texts (prompts, responses, reasons, raw replies) are read for the few items a
person opens (:func:`item_detail`) or exports.

Labels come back on the criterion's scale: floats for numeric scales (NaN = none), words otherwise
(``None`` = none), pairwise choices as ``"A"``/``"B"``/``"TIE"`` in the dataset's A/B frame.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from sqlalchemy import BigInteger, Text, case, cast, func, literal, select
from sqlalchemy.dialects.postgresql import aggregate_order_by

from evalcore.errors import EvalcoreError
from evalcore.labels import Scale, format_label
from evalcore.report._data import (
    RESULT_STATUSES,
    CalibrationData,
    RunData,
    RunInfo,
    scale_codes,
)
from evalcore.store import (
    CriterionRecord,
    DatasetRecord,
    ItemRecord,
    JudgeRunRecord,
    Store,
)

# The report reads four tables in bulk with SQLAlchemy Core (the repository's row-by-row readers
# build every object in Python; at 100 000 items that is seconds, not tenths).
from evalcore.store.schema import Annotation, Annotator, Item, JudgeResult, JudgeRun

__all__ = [
    "RESULT_STATUSES",
    "CalibrationData",
    "DataVersion",
    "HumanLabel",
    "ItemDetail",
    "RunData",
    "RunInfo",
    "RunResult",
    "RunVersion",
    "check_selection",
    "data_version",
    "item_detail",
    "load_calibration_data",
    "load_human",
    "load_items",
    "load_metadata",
    "load_run",
    "run_infos",
    "scale_codes",
]


# --- bulk reads -----------------------------------------------------------------------------------


def _rows(store: Store, statement: Any) -> list[Any]:
    """Run ``statement`` and return the DBAPI rows as they are (no per-row SQLAlchemy work)."""
    with store.engine.connect() as conn:
        result = conn.execute(statement)
        return list(result.cursor.fetchall()) if result.cursor is not None else []


def _numbers(rows: list[Any], width: int) -> npt.NDArray[np.float64]:
    """Rows of numbers (``None`` allowed) as a float matrix with ``width`` columns."""
    if not rows:
        return np.zeros((0, width), dtype=np.float64)
    return np.array(rows, dtype=np.float64).reshape(len(rows), width)


def _label_code(column: Any, scale: Scale) -> Any:
    """SQL that turns stored label text into its position on ``scale``: -1 for none, -2 unknown."""
    whens = [(column == format_label(label), i) for i, label in enumerate(scale.labels)]
    return case((column.is_(None), -1), *whens, else_=-2)


def _decode(codes: npt.NDArray[np.int64], scale: Scale) -> pd.Series:
    """Positions on ``scale`` -> labels (floats with NaN, or words with None); -1 means none."""
    if scale.is_numeric:
        lookup = np.array([*scale.labels, np.nan], dtype=np.float64)
        return pd.Series(lookup[codes], dtype=float)
    words = np.empty(len(scale.labels) + 1, dtype=object)
    words[:-1] = scale.labels
    words[-1] = None
    return pd.Series(words[codes], dtype=object)


def _packed(parts: Sequence[tuple[Any, int]]) -> Any:
    """SQL that packs whole numbers ``(expression, bits)`` into one BIGINT, the first the highest.

    Fewer, larger numbers per row are what makes a bulk read fast: most of its time is building one
    Python object per value.
    """
    packed: Any = None
    for column, bits in parts:
        value = cast(column, BigInteger)
        packed = value if packed is None else packed * (1 << bits) + value
    return packed


def _unpack(values: npt.NDArray[np.int64], bits: Sequence[int]) -> list[npt.NDArray[np.int64]]:
    """The inverse of :func:`_packed` for the same ``bits`` (the first part takes what is left)."""
    out: list[npt.NDArray[np.int64]] = []
    rest = values.astype(np.int64)
    for width in reversed(bits[1:]):
        out.append(rest & ((1 << width) - 1))
        rest = rest >> width
    out.append(rest)
    return out[::-1]


def _code_bits(scale: Scale) -> int:
    """Bits that hold a label code + 2 (codes run from -2 to k - 1)."""
    return (len(scale.labels) + 2).bit_length()


def _text_codes(texts: Sequence[Any], scale: Scale) -> npt.NDArray[np.int64]:
    """Codes of label texts, each distinct text coerced onto the scale once (-1: none or off it)."""
    fixed: dict[Any, int] = {}
    for text in set(texts):
        try:
            found = None if text is None else scale.coerce(text)
        except ValueError:
            found = None
        fixed[text] = -1 if found is None else scale.index(found)
    return np.fromiter((fixed[t] for t in texts), dtype=np.int64, count=len(texts))


#: Bits of an annotator id in the packed annotation rows (about a million annotators).
_ANNOTATOR_BITS = 20


def _int_columns(
    store: Store, columns: Sequence[Any], where: Any, order: Any
) -> list[npt.NDArray[np.int64]]:
    """Whole-number columns of the rows matching ``where``, in one pass, as arrays.

    On SQLite and PostgreSQL each column comes back as ONE comma-separated text (``group_concat``
    / ``string_agg``, the latter ordered by ``order``; all columns of the query see the rows in the
    same order) that numpy parses in C: no Python object is made per value, which is where a bulk
    read spends its time. Other databases read rows. A column must not be NULL (a text aggregate
    skips NULLs, which would shift the others).
    """
    if store.dialect == "sqlite":
        aggregates = [func.group_concat(column, ",") for column in columns]
    elif store.dialect == "postgresql":
        aggregates = [
            func.string_agg(cast(column, Text), aggregate_order_by(literal(","), order))
            for column in columns
        ]
    else:  # pragma: no cover - evalcore runs on SQLite and PostgreSQL
        rows = _rows(store, select(*columns).where(where))
        table = np.array(rows, dtype=np.int64).reshape(len(rows), len(columns))
        return [table[:, j] for j in range(len(columns))]
    (texts,) = _rows(store, select(*aggregates).where(where)) or [(None,) * len(columns)]
    return [
        np.zeros(0, dtype=np.int64) if not text else np.fromstring(text, dtype=np.int64, sep=",")
        for text in texts
    ]


def _annotation_rows(store: Store, criterion_id: int, scale: Scale) -> npt.NDArray[np.int64]:
    """(item id, annotator id, revision, label code) of every annotation of a criterion.

    The label code is the label's position on ``scale``, -1 for a skip. A label stored as text the
    scale does not spell exactly (e.g. saved before the scale changed) is read again as text and
    coerced onto the scale.
    """
    store.authorize("read", criterion_id=criterion_id)
    bits = _code_bits(scale)
    where = Annotation.criterion_id == criterion_id
    first, second = _int_columns(
        store,
        [
            _packed([(Annotation.item_id, 0), (Annotation.annotator_id, _ANNOTATOR_BITS)]),
            _packed([(Annotation.revision, 0), (_label_code(Annotation.label, scale) + 2, bits)]),
        ],
        where,
        Annotation.id,
    )
    item, annotator = _unpack(first, [0, _ANNOTATOR_BITS])
    revision, code = _unpack(second, [0, bits])
    code = code - 2
    if (code == -2).any():
        raw = _rows(
            store,
            select(
                Annotation.item_id, Annotation.annotator_id, Annotation.revision, Annotation.label
            ).where(where),
        )
        item, annotator, revision = (
            np.fromiter((r[j] for r in raw), dtype=np.int64, count=len(raw)) for j in range(3)
        )
        code = _text_codes([r[3] for r in raw], scale)
    return np.column_stack([item, annotator, revision, code]).astype(np.int64)


#: The unit a confidence is read in: 2⁻⁵² (a whole number of them fits in 53 bits).
_UNITS = float(2**52)


def _result_rows(
    store: Store, run_id: int, scale: Scale, *, confidence: bool | None = None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """(item id, second order?, status code, label code) of every result of a run, and each
    result's confidence (NaN for none), read in the same pass. ``confidence=False`` does not
    read them (all NaN); ``None`` reads them when the run has any.

    Status codes: 0 ok, 1 unparsed, 2 failed; label codes as in :func:`_annotation_rows`.
    """
    store.authorize("read", run_id=run_id)
    bits = _code_bits(scale)
    status = case((JudgeResult.status == "ok", 0), (JudgeResult.status == "unparsed", 1), else_=2)
    swapped = case((JudgeResult.order == "BA", 1), else_=0)
    where = JudgeResult.run_id == run_id
    if confidence is None:
        with store.engine.connect() as conn:
            confidence = (
                conn.execute(
                    select(JudgeResult.id)
                    .where(where, JudgeResult.confidence.is_not(None))
                    .limit(1)
                ).first()
                is not None
            )
    packed_row = _packed(
        [
            (JudgeResult.item_id, 0),
            (swapped, 1),
            (status, 2),
            (_label_code(JudgeResult.label, scale) + 2, bits),
        ]
    )
    # a confidence in [0, 1] travels as a whole number of 2⁻⁵² (exact to 2.2e-16): texts of whole
    # numbers are much quicker to write and to parse than those of reals
    units = func.coalesce(cast(JudgeResult.confidence * _UNITS, BigInteger), -1)
    found = _int_columns(
        store, [packed_row, units] if confidence else [packed_row], where, JudgeResult.id
    )
    packed = found[0]
    sure = np.full(len(packed), np.nan)
    if confidence:
        sure = np.where(found[1] < 0, np.nan, found[1] / _UNITS)
    item, second, state, code = _unpack(packed, [0, 1, 2, bits])
    code = code - 2
    if (code == -2).any():
        raw = _rows(
            store, select(JudgeResult.item_id, JudgeResult.order, JudgeResult.label).where(where)
        )
        lookup = {int(r[0]) * 2 + (r[1] == "BA"): r[2] for r in raw}
        code = _text_codes(
            [lookup[int(i) * 2 + int(o)] for i, o in zip(item, second, strict=True)], scale
        )
    return np.column_stack([item, second, state, code]).astype(np.int64), sure


def _result_scores(
    store: Store, run_id: int, column: str = "score"
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """(item id * 2 + second order?, value) of the results of a run that have a ``column``
    (``score`` or ``confidence``), read as two texts that numpy parses (on SQLite to 15
    significant digits, on PostgreSQL exactly)."""
    store.authorize("read", run_id=run_id)
    value = getattr(JudgeResult, column)
    key = JudgeResult.item_id * 2 + case((JudgeResult.order == "BA", 1), else_=0)
    where = (JudgeResult.run_id == run_id) & value.is_not(None)
    if store.dialect == "sqlite":  # each column as one text, as _int_columns reads them
        # (SQLite writes a real with 15 significant digits: a relative error under 5e-16)
        aggregates = [func.group_concat(key, ","), func.group_concat(value, ",")]
    elif store.dialect == "postgresql":  # a float's text is its shortest exact form
        aggregates = [
            func.string_agg(cast(column_of, Text), aggregate_order_by(literal(","), JudgeResult.id))
            for column_of in (key, value)
        ]
    else:  # pragma: no cover - evalcore runs on SQLite and PostgreSQL
        values = _numbers(_rows(store, select(key, value).where(where)), 2)
        return values[:, 0].astype(np.int64), values[:, 1]
    keys, numbers = _rows(store, select(*aggregates).where(where))[0]
    if not keys:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    return (
        np.fromstring(keys, dtype=np.int64, sep=","),
        np.fromstring(numbers, dtype=np.float64, sep=","),
    )


def _result_probabilities(
    store: Store, run_id: int, scale: Scale
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """(item id * 2 + second order?, one row of probabilities over the scale's labels) of the
    results of a run that have probabilities: each label's probability is taken out of the JSON by
    the database and read as one text per label, like :func:`_result_scores`."""
    store.authorize("read", run_id=run_id)
    key = JudgeResult.item_id * 2 + case((JudgeResult.order == "BA", 1), else_=0)
    where = (JudgeResult.run_id == run_id) & JudgeResult.probabilities.is_not(None)
    columns = [key] + [
        func.coalesce(JudgeResult.probabilities[format_label(label)].as_float(), 0.0)
        for label in scale.labels
    ]
    if store.dialect == "sqlite":
        aggregates = [func.group_concat(column, ",") for column in columns]
    elif store.dialect == "postgresql":
        aggregates = [
            func.string_agg(cast(column, Text), aggregate_order_by(literal(","), JudgeResult.id))
            for column in columns
        ]
    else:  # pragma: no cover - evalcore runs on SQLite and PostgreSQL
        table = _numbers(_rows(store, select(*columns).where(where)), len(columns))
        return table[:, 0].astype(np.int64), table[:, 1:]
    texts = _rows(store, select(*aggregates).where(where))[0]
    if not texts[0]:
        return np.zeros(0, dtype=np.int64), np.zeros((0, len(scale.labels)))
    keys = np.fromstring(texts[0], dtype=np.int64, sep=",")
    table = np.column_stack(
        [np.fromstring(text, dtype=np.float64, sep=",") for text in texts[1:]]
    ).reshape(len(keys), len(scale.labels))
    return keys, table


#: Separates the item ids in the one text a bulk read of ids returns (ASCII "unit separator").
_UNIT = "\x1f"


def _item_columns(store: Store, dataset_id: int) -> tuple[Any, ...] | None:
    """(database ids, positions, own ids) of a dataset's items in order, read as three texts; None
    when that cannot be done (another database, or an id that holds the separator)."""
    store.authorize("read", dataset_id=dataset_id)
    where = Item.dataset_id == dataset_id
    if store.dialect == "sqlite":
        inner = (
            select(Item.id, Item.position, Item.external_id)
            .where(where)
            .order_by(Item.position)
            .subquery()
        )
        query = select(
            func.group_concat(inner.c.id, ","),
            func.group_concat(inner.c.position, ","),
            func.group_concat(inner.c.external_id, _UNIT),
            func.count(),
        )
    elif store.dialect == "postgresql":
        query = select(
            *(
                func.string_agg(cast(column, Text), aggregate_order_by(literal(sep), Item.position))
                for column, sep in ((Item.id, ","), (Item.position, ","), (Item.external_id, _UNIT))
            ),
            func.count(),
        ).where(where)
    else:  # pragma: no cover - evalcore runs on SQLite and PostgreSQL
        return None
    pks, positions, ids, n = _rows(store, query)[0]
    if not n:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), []
    names = str(ids).split(_UNIT)
    if len(names) != n:  # an id holds the separator: read rows instead
        return None
    return (
        np.fromstring(pks, dtype=np.int64, sep=","),
        np.fromstring(positions, dtype=np.int64, sep=","),
        names,
    )


def load_items(store: Store, dataset_id: int) -> pd.DataFrame:
    """Items of a dataset in order: index ``item_pk`` (database id), ``item_id`` and ``position``."""
    columns = _item_columns(store, dataset_id)
    if columns is None:
        rows = _rows(
            store,
            select(Item.id, Item.position, Item.external_id)
            .where(Item.dataset_id == dataset_id)
            .order_by(Item.position),
        )
        columns = (
            np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
            np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows)),
            [r[2] for r in rows],
        )
    pks, positions, names = columns
    return pd.DataFrame(
        {"item_id": np.array(names, dtype=object), "position": positions},
        index=pd.Index(pks, name="item_pk"),
    )


def load_metadata(store: Store, dataset_id: int, columns: Iterable[str]) -> pd.DataFrame:
    """Metadata columns of a dataset's items as text (index ``item_pk``; missing = ``None``).

    Each column is extracted from the items' JSON by the database, so asking for one slicing column
    reads only it. Numbers are shown as people write them (``3`` not ``3.0``).
    """
    store.authorize("read", dataset_id=dataset_id)
    names = list(dict.fromkeys(columns))
    rows = _rows(
        store,
        select(Item.id, *(Item.meta[name].as_string() for name in names))
        .where(Item.dataset_id == dataset_id)
        .order_by(Item.position),
    )
    index = pd.Index(
        np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)), name="item_pk"
    )
    frame = pd.DataFrame(index=index)
    for j, name in enumerate(names, start=1):
        values = [r[j] for r in rows]
        texts = {v: _meta_text(v) for v in set(values)}
        frame[name] = pd.Series([texts[v] for v in values], index=index, dtype=object)
    return frame


def _meta_text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    text = str(value)
    if text.endswith(".0") and text[:-2].lstrip("-").isdigit():
        return text[:-2]
    return text


def load_human(
    store: Store, dataset_id: int, criterion: CriterionRecord, items: pd.Index | None = None
) -> pd.DataFrame:
    """Items x annotators table of every annotator's latest label (skips count as no label).

    The index is the item database id: ``items`` when given, else every item of the dataset, in
    order, labelled or not. Columns are the names of the annotators who labelled any of them, sorted.
    """
    scale = criterion.scale
    index = load_items(store, dataset_id).index if items is None else items
    # read by criterion only (its index serves the look-up); other datasets' items are dropped here
    codes = _annotation_rows(store, criterion.id, scale)
    at = index.get_indexer(codes[:, 0])
    codes, at = codes[at >= 0], at[at >= 0]
    # the latest revision of each (item, annotator); a skip as the latest means no label
    order = np.lexsort((codes[:, 2], codes[:, 1], at))
    codes, at = codes[order], at[order]
    last = np.ones(len(at), dtype=bool)
    last[:-1] = (at[1:] != at[:-1]) | (codes[1:, 1] != codes[:-1, 1])
    keep = last & (codes[:, 3] >= 0)
    codes, at = codes[keep], at[keep]
    annotator_ids = [int(a) for a in np.unique(codes[:, 1])]
    names: dict[int, str] = {}
    if annotator_ids:
        names = {
            int(i): str(n)
            for i, n in _rows(
                store,
                select(Annotator.id, Annotator.name).where(Annotator.id.in_(annotator_ids)),
            )
        }
    ordered = sorted(annotator_ids, key=lambda i: names[i])
    column_of = np.zeros(max(annotator_ids, default=0) + 1, dtype=np.int64)
    column_of[ordered] = np.arange(len(ordered))
    table = np.full((len(index), len(ordered)), -1, dtype=np.int64)
    table[at, column_of[codes[:, 1]]] = codes[:, 3]
    matrix = pd.DataFrame(
        {names[a]: _decode(table[:, j], scale).to_numpy() for j, a in enumerate(ordered)},
        index=index,
    )
    matrix.index.name = "item_pk"
    matrix.columns.name = "annotator"
    return matrix


def run_infos(store: Store, runs: Sequence[JudgeRunRecord]) -> list[RunInfo]:
    """Describe runs for reports: titles unique within ``runs``, template names and versions."""
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.name] = counts.get(run.name, 0) + 1
    templates: dict[int, tuple[str, int, datetime]] = {}
    out: list[RunInfo] = []
    for run in runs:
        template = version = version_at = None
        if run.template_version_id is not None:
            if run.template_version_id not in templates:
                v = store.get_template_version(run.template_version_id)
                t = store.get_template(v.template_id)
                templates[run.template_version_id] = (t.name, v.number, v.created_at)
            template, version, version_at = templates[run.template_version_id]
        title = run.name if counts[run.name] == 1 else f"{run.name} #{run.id}"
        members: tuple[int, ...] = ()
        if run.source == "jury":
            members = tuple(m.member_run_id for m in store.jury_members(run.id))
        out.append(
            RunInfo(
                id=run.id,
                name=run.name,
                title=title,
                model=run.model,
                template=template,
                version=version,
                version_created_at=version_at,
                created_at=run.created_at,
                source=run.source,
                status=run.status,
                order_mode=run.order_mode,
                members=members,
            )
        )
    return out


def load_run(
    store: Store,
    info: RunInfo,
    scale: Scale,
    items: pd.Index,
    *,
    scores: bool | None = None,
    probabilities: bool = False,
) -> RunData:
    """The results of one run, one row per item of ``items`` (see :class:`RunData`).

    ``scores`` reads the judge's numeric scores too; by default only for binary scales, whose
    threshold sweep needs them (elsewhere ``score`` is NaN; :func:`item_detail` has each item's).
    The confidence of each verdict is always read; ``probabilities`` reads the probability of
    every label as well (:attr:`RunData.probabilities`).
    """
    codes, confidence = _result_rows(store, info.id, scale)
    pk, swapped, status, label = codes.T
    keyed = pd.Index(pk * 2 + swapped)
    score = np.full(len(pk), np.nan)
    if scores or (scores is None and scale.kind == "binary"):
        keys, values = _result_scores(store, info.id)
        at = keyed.get_indexer(keys)
        score[at[at >= 0]] = values[at >= 0]
    shares = np.full((len(pk), len(scale.labels)), np.nan)
    if probabilities:
        keys, table = _result_probabilities(store, info.id, scale)
        at = keyed.get_indexer(keys)
        shares[at[at >= 0]] = table[at >= 0]
    if info.order_mode == "flip":
        # one pass per item, in either order: that verdict is the run's label
        first = np.ones(len(pk), dtype=bool)
        second = np.zeros(len(pk), dtype=bool)
    else:
        first, second = swapped == 0, swapped == 1
    n = len(items)
    row_status = np.full(n, 3, dtype=np.int64)  # "missing"
    row_label = np.full(n, -1, dtype=np.int64)
    row_swapped = np.full(n, -1, dtype=np.int64)
    row_score = np.full(n, np.nan)
    row_confidence = np.full(n, np.nan)
    row_shares = np.full((n, len(scale.labels)), np.nan)
    at = items.get_indexer(pk)
    take = first & (at >= 0)
    row_status[at[take]] = status[take]
    row_label[at[take]] = np.where(status[take] == 0, label[take], -1)
    row_score[at[take]] = np.where(status[take] == 0, score[take], np.nan)
    row_confidence[at[take]] = np.where(status[take] == 0, confidence[take], np.nan)
    row_shares[at[take]] = np.where((status[take] == 0)[:, None], shares[take], np.nan)
    take = second & (at >= 0)
    row_swapped[at[take]] = np.where(status[take] == 0, label[take], -1)
    results = pd.DataFrame(
        {
            "status": pd.Categorical.from_codes(row_status, categories=list(RESULT_STATUSES)),
            "label": _decode(row_label, scale).to_numpy(),
            "score": row_score,
            "label_swapped": _decode(row_swapped, scale).to_numpy(),
            "confidence": row_confidence,
        },
        index=items,
    )
    results.index.name = "item_pk"
    matrix = None
    if probabilities:
        matrix = pd.DataFrame(row_shares, index=items.copy(), columns=list(scale.labels))
        matrix.index.name = "item_pk"
        matrix.columns.name = "label"
    return RunData(info, results, matrix)


def check_selection(
    store: Store, dataset_id: int, criterion_id: int, run_ids: Sequence[int] | None = None
) -> tuple[DatasetRecord, CriterionRecord, list[JudgeRunRecord]]:
    """The dataset, criterion and runs a calibration reads, checked: the criterion is of the
    dataset's project and every run is of the pair (``None``: all of them, oldest first).

    Raises :class:`~evalcore.errors.EvalcoreError` naming what does not fit.
    """
    dataset = store.get_dataset(dataset_id)
    criterion = store.get_criterion(criterion_id)
    if criterion.project_id != dataset.project_id:
        raise EvalcoreError(
            f"criterion {criterion.name!r} belongs to another project than dataset {dataset.name!r}"
        )
    available = store.list_runs(dataset_id=dataset_id, criterion_id=criterion_id)
    by_id = {r.id: r for r in available}
    if run_ids is None:
        return dataset, criterion, sorted(available, key=lambda r: (r.created_at, r.id))
    strangers = [r for r in run_ids if r not in by_id]
    if strangers:
        raise EvalcoreError(
            f"run {strangers[0]} is not a run of criterion {criterion.name!r} on dataset "
            f"{dataset.name!r}"
        )
    return dataset, criterion, [by_id[r] for r in run_ids]


def load_calibration_data(
    store: Store,
    dataset_id: int,
    criterion_id: int,
    run_ids: Sequence[int] | None = None,
    *,
    metadata: Sequence[str] = (),
    scores: bool | None = None,
    probabilities: bool = False,
) -> CalibrationData:
    """Load items, human labels and the results of ``run_ids`` (default: every run of the pair).

    ``metadata`` names metadata columns to load for slicing; ``scores`` and ``probabilities`` as
    in :func:`load_run` (every run's ``confidence`` is always read). A jury's member runs are
    loaded when they are asked for (see :func:`evalcore.runs.jury_member_ids`, or
    :attr:`RunInfo.members`).

    Raises :class:`~evalcore.errors.EvalcoreError` when a run belongs to another dataset or
    criterion, or when the criterion is not of the dataset's project.
    """
    dataset, criterion, chosen = check_selection(store, dataset_id, criterion_id, run_ids)
    items = load_items(store, dataset_id)
    human = load_human(store, dataset_id, criterion, items.index)
    runs = tuple(
        load_run(
            store, info, criterion.scale, items.index, scores=scores, probabilities=probabilities
        )
        for info in run_infos(store, chosen)
    )
    meta = load_metadata(store, dataset_id, metadata) if metadata else pd.DataFrame()
    data = CalibrationData(dataset, criterion, items, human, runs)
    return data.with_metadata(meta) if metadata else data


@dataclass(frozen=True)
class RunVersion:
    """The fingerprint of one run's results: how many, the newest, and the run's status."""

    run_id: int
    n_results: int
    last_result_id: int
    status: str | None
    finished_at: str | None


@dataclass(frozen=True)
class DataVersion:
    """A cheap fingerprint of what a calibration reads; it changes whenever a label or result does.

    ``humans`` is the newest annotation id (of any criterion); ``runs`` one :class:`RunVersion` per
    run asked for, by run id. Hashable, so it can key a cache.
    """

    dataset_id: int
    criterion_id: int
    humans: int
    runs: tuple[RunVersion, ...] = ()

    def run(self, run_id: int) -> RunVersion | None:
        """The fingerprint of run ``run_id`` (``None`` when it was not asked for)."""
        return next((r for r in self.runs if r.run_id == run_id), None)


def data_version(
    store: Store, dataset_id: int, criterion_id: int, run_ids: Sequence[int] = ()
) -> DataVersion:
    """The :class:`DataVersion` of (dataset, criterion) and ``run_ids``: a few small queries.

    Annotations are never updated (a change is a new row), so the largest annotation id says when
    one arrived (any criterion's: one look-up instead of a count; a label elsewhere only costs a
    reload). A run's results are counted per run, and a failed one can be replaced in place while
    the run is running, so a run's fingerprint also carries its status and finish time.
    """
    store.authorize("read", dataset_id=dataset_id)
    for run_id in run_ids:
        store.authorize("read", run_id=run_id)
    with store.engine.connect() as conn:
        humans = int(conn.execute(select(func.max(Annotation.id))).scalar() or 0)
        counts: dict[int, tuple[int, int]] = {}
        states: dict[int, tuple[str | None, str | None]] = {}
        for run_id in run_ids:  # one run at a time: each is a range of the run's index
            n, last = conn.execute(
                select(func.count(), func.max(JudgeResult.id)).where(JudgeResult.run_id == run_id)
            ).one()
            counts[int(run_id)] = (int(n), int(last or 0))
        if run_ids:
            for run_id, status, finished in conn.execute(
                select(JudgeRun.id, JudgeRun.status, JudgeRun.finished_at).where(
                    JudgeRun.id.in_(list(run_ids))
                )
            ).all():
                states[int(run_id)] = (status, None if finished is None else str(finished))
    runs = tuple(
        RunVersion(run_id, *counts[run_id], *states.get(run_id, (None, None)))
        for run_id in sorted(counts)
    )
    return DataVersion(dataset_id, criterion_id, humans, runs)


# --- one item, in full -----------------------------------------------------------------------------


@dataclass(frozen=True)
class HumanLabel:
    """One annotator's latest label of an item (``label`` is ``None`` for a skip)."""

    annotator: str
    label: str | None
    flag: str | None
    comment: str | None
    revision: int
    created_at: datetime


@dataclass(frozen=True)
class RunResult:
    """One run's verdict on an item in one presentation order, with its reason and raw reply."""

    run_id: int
    run: str
    order: str
    status: str
    label: str | None
    score: float | None
    reason: str | None
    raw: str | None
    error: str | None
    confidence: float | None = None
    #: label text → probability, when the judge's probabilities are known
    probabilities: Mapping[str, float] | None = None


@dataclass(frozen=True)
class ItemDetail:
    """An item as a reviewer reads it: its texts, every human label and every run's verdict."""

    item: ItemRecord
    humans: tuple[HumanLabel, ...]
    results: tuple[RunResult, ...]


def item_detail(
    store: Store, item_pk: int, criterion_id: int, runs: Sequence[RunInfo] | Mapping[int, str]
) -> ItemDetail:
    """Read one item in full: prompt, responses, latest human labels with comments, run results.

    ``runs`` names the runs to show (``RunInfo`` objects or ``{run id: title}``); runs without a
    result on the item show as ``missing``.
    """
    store.authorize("read", criterion_id=criterion_id)
    titles = (
        dict(runs) if isinstance(runs, Mapping) else {r.id: r.title for r in runs}  # type: ignore[union-attr]
    )
    item = store.get_item(item_pk)
    latest: dict[str, HumanLabel] = {}
    for a in store.annotation_history(item_pk, criterion_id):
        latest[a.annotator] = HumanLabel(
            a.annotator, a.label, a.flag, a.comment, a.revision, a.created_at
        )
    results: list[RunResult] = []
    if titles:
        with store.engine.connect() as conn:
            rows = conn.execute(
                select(
                    JudgeResult.run_id,
                    JudgeResult.order,
                    JudgeResult.status,
                    JudgeResult.label,
                    JudgeResult.score,
                    JudgeResult.reason,
                    JudgeResult.raw,
                    JudgeResult.error,
                    JudgeResult.confidence,
                    JudgeResult.probabilities,
                )
                .where(JudgeResult.item_id == item_pk, JudgeResult.run_id.in_(list(titles)))
                .order_by(JudgeResult.order)
            ).all()
        found = {(int(r[0]), str(r[1])): r for r in rows}
        for run_id, title in titles.items():
            mine = [key for key in found if key[0] == run_id]
            if not mine:
                results.append(
                    RunResult(run_id, title, "AB", "missing", None, None, None, None, None)
                )
            for key in sorted(mine, key=lambda k: k[1]):
                r = found[key]
                results.append(
                    RunResult(
                        run_id=run_id,
                        run=title,
                        order=str(r[1]),
                        status=str(r[2]),
                        label=r[3],
                        score=None if r[4] is None else float(r[4]),
                        reason=r[5],
                        raw=r[6],
                        error=r[7],
                        confidence=None if r[8] is None else float(r[8]),
                        probabilities=None if r[9] is None else dict(r[9]),
                    )
                )
    return ItemDetail(
        item=item,
        humans=tuple(sorted(latest.values(), key=lambda h: h.annotator)),
        results=tuple(results),
    )
