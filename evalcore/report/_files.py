"""Files into the engine: a loaded file's label sets become the same :class:`CalibrationData` the
store gives, so one function (:func:`~evalcore.report.calibrate_runs`) computes every calibration.

A file has no database: its dataset and criterion records are made from the file (id 0), its items
are keyed by row position, and each judge column becomes a run (ids 1, 2, ... in column order)
whose values are ``ok`` where the file has a label and ``missing`` where it has none (a failed or
unparsed verdict is read as no label by :mod:`evalcore.data`, never as a wrong one).

A column of the file may hold each judge verdict's confidence (the probability of the chosen label,
in [0, 1]): :func:`file_confidences` reads it, refusing a value outside [0, 1] with the file, the
column and the row, and ``file_data(..., confidences=...)`` puts it in the run's ``confidence``
column, where :func:`~evalcore.report.confidence_view` finds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from evalcore.data import LabelSet, LoadedFile
from evalcore.errors import DataError, EvalcoreError, MissingColumnError
from evalcore.labels import Scale
from evalcore.labels import parse_scale as labels_parse_scale
from evalcore.report._data import RESULT_STATUSES, CalibrationData, RunData, RunInfo, scale_codes
from evalcore.store import CriterionRecord, DatasetRecord

__all__ = ["FILE_RUN_SOURCE", "file_confidences", "file_data", "label_set_data", "parse_scale"]

#: The ``source`` of the runs made of a file's judge columns.
FILE_RUN_SOURCE = "file"

# A file has no creation time of its own; a fixed one keeps the data deterministic.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse_scale(text: str | None) -> Scale | None:
    """A scale typed in a form or on the command line (``"1,2,3,4,5"``, ``"pass,fail"``,
    ``"A,B,TIE"``), read by the one parser :func:`evalcore.labels.parse_scale`; ``None`` for an
    empty text (no declared scale).

    >>> parse_scale("pass, fail").kind, parse_scale("1,2,3").kind, parse_scale("") is None
    ('binary', 'ordinal', True)
    """
    if not (text or "").replace(",", "").strip():
        return None
    return labels_parse_scale(text or "")


def _on_scale(frame: pd.DataFrame, label_set: LabelSet, index: pd.Index) -> pd.DataFrame:
    """The frame's columns as the store reads labels: floats with NaN on numeric scales, else words
    with ``None``; indexed by row position."""
    out = pd.DataFrame(index=index)
    for column in frame.columns:
        values = frame[column].to_numpy()
        if label_set.scale.is_numeric and values.dtype == np.float64:
            out[str(column)] = values  # evalcore.data put them on the scale already, as floats
        elif label_set.scale.is_numeric:
            codes = scale_codes(values, label_set.scale)
            lookup = np.array([*label_set.scale.labels, np.nan], dtype=np.float64)
            out[str(column)] = lookup[codes]
        else:
            out[str(column)] = pd.Series(values, index=index, dtype=object).where(
                pd.notna(values), None
            )
    out.columns.name = frame.columns.name
    return out


def label_set_data(
    label_set: LabelSet,
    *,
    source: str = "file",
    layout: str | None = None,
    declared: bool = False,
    confidences: Mapping[str, pd.Series] | None = None,
) -> CalibrationData:
    """One label set of a file as the engine's input.

    ``declared`` says that the label set's scale was declared (``--scale``, a criterion); otherwise
    the axis of the calibration is the labels observed on either side (see
    :attr:`CalibrationData.labels`). ``confidences`` maps a judge's name to its confidence per item
    (a float Series indexed by item id, as :func:`file_confidences` returns); with it every run's
    results get a ``confidence`` column (NaN where a judge has none).
    """
    n = label_set.n_items
    index = pd.Index(np.arange(n, dtype=np.int64), name="item_pk")
    items = pd.DataFrame(
        {
            # the ids are text already (evalcore.data); kept as objects, since letting pandas infer
            # its Arrow string type would copy 10⁶ of them
            "item_id": pd.Series(
                label_set.human.index.to_numpy(dtype=object), index=index, dtype=object
            ),
            "position": np.arange(n, dtype=np.int64),
        },
        index=index,
    )
    dataset = DatasetRecord(
        id=0,
        project_id=0,
        name=source,
        version=1,
        kind=label_set.kind,
        source_filename=source,
        layout=layout,
        metadata_columns=(),
        n_items=n,
        created_at=_EPOCH,
    )
    criterion = CriterionRecord(
        id=0,
        project_id=0,
        name=label_set.metric,
        kind=label_set.kind,
        scale=label_set.scale,
        rubric="",
        created_at=_EPOCH,
    )
    human = _on_scale(label_set.human, label_set, index)
    human.columns.name = "annotator"
    judges = _on_scale(label_set.judges, label_set, index)
    runs = []
    for number, name in enumerate(judges.columns, start=1):
        labels = judges[name]
        status = np.where(labels.notna().to_numpy(), 0, RESULT_STATUSES.index("missing"))
        info = RunInfo(
            id=number,
            name=str(name),
            title=str(name),
            model=None,
            template=None,
            version=None,
            version_created_at=None,
            created_at=_EPOCH,
            source=FILE_RUN_SOURCE,
            status="done",
            order_mode="AB",
        )
        results = pd.DataFrame(
            {
                "status": pd.Categorical.from_codes(status, categories=list(RESULT_STATUSES)),
                "label": labels.to_numpy(),
                "score": np.full(n, np.nan),
                "label_swapped": np.full(n, np.nan) if label_set.scale.is_numeric else None,
            },
            index=index,
        )
        if confidences:
            found = confidences.get(str(name))
            results["confidence"] = (
                np.full(n, np.nan)
                if found is None
                else found.reindex(label_set.human.index).to_numpy(
                    dtype=np.float64, na_value=np.nan
                )
            )
        runs.append(RunData(info, results))
    return CalibrationData(dataset, criterion, items, human, tuple(runs), scale_declared=declared)


def file_confidences(loaded: LoadedFile, columns: Mapping[str, str]) -> dict[str, pd.Series]:
    """Each judge's confidence column of a loaded file (judge name -> column name) as floats
    indexed by item id, NaN where a cell is empty.

    The file must have one row per item (a wide layout). A cell that is not a number, or a number
    outside [0, 1], raises :class:`~evalcore.errors.DataError` naming the file, the column, the row
    (data rows counted from 1) and the item; a missing column raises
    :class:`~evalcore.errors.MissingColumnError`.
    """
    frame = loaded.frame
    out: dict[str, pd.Series] = {}
    for judge, column in columns.items():
        if column not in frame.columns:
            raise MissingColumnError(
                f"{loaded.source}: no column {column!r} for the confidence of {judge!r} "
                f"(columns: {', '.join(map(str, frame.columns))})",
                source=loaded.source,
                column=column,
            )
        if len(frame) != len(loaded.items):
            raise DataError(
                f"{loaded.source}: a confidence column needs one row per item; this file has "
                f"{len(frame)} rows for {len(loaded.items)} items (a long layout)",
                source=loaded.source,
                column=column,
            )
        raw = frame[column]
        ids = loaded.items["item_id"].astype(str).to_numpy()
        if raw.dtype.kind in "iuf":
            numbers = raw.to_numpy(dtype=np.float64, na_value=np.nan)
            bad_word = np.zeros(len(raw), dtype=bool)
        else:
            text = raw.astype(object)
            blank = text.isna().to_numpy() | text.map(
                lambda v: isinstance(v, str) and not v.strip()
            ).to_numpy(dtype=bool)
            parsed = pd.to_numeric(text.where(~blank, None), errors="coerce")
            numbers = parsed.to_numpy(dtype=np.float64, na_value=np.nan)
            bad_word = np.isnan(numbers) & ~blank
        bad_range = ~np.isnan(numbers) & ~((numbers >= 0.0) & (numbers <= 1.0))
        bad = np.flatnonzero(bad_word | bad_range)
        if bad.size:
            at = int(bad[0])
            more = f" ({bad.size} such rows)" if bad.size > 1 else ""
            cell = raw.iloc[at]
            shown = repr(float(cell)) if isinstance(cell, int | float | np.number) else repr(cell)
            raise DataError(
                f"{loaded.source}: column {column!r}, row {at + 1} (item {ids[at]!r}): "
                f"{shown} is not a confidence; a confidence is a probability between 0 "
                f"and 1{more}",
                source=loaded.source,
                column=column,
                rows=[at + 1],
                item_id=str(ids[at]),
            )
        out[str(judge)] = pd.Series(numbers, index=pd.Index(ids, name="item_id"), name=column)
    return out


def file_data(
    loaded: LoadedFile,
    *,
    metrics: Sequence[str] | None = None,
    declared: bool = False,
    confidences: Mapping[str, str] | None = None,
) -> list[CalibrationData]:
    """The engine's input for every metric of a loaded file that has human and judge labels (or for
    the ``metrics`` asked for, which must exist).

    ``confidences`` maps a judge's name to the file's column holding its verdicts' confidence (see
    :func:`file_confidences`); the runs of that judge get a ``confidence`` column. Raises
    :class:`~evalcore.errors.EvalcoreError` naming the file when a metric asked for is not in
    it, when no metric has both human and judge labels, or when a judge named in ``confidences``
    is in none of them.
    """
    found = {ls.metric: ls for ls in loaded.label_sets}
    wanted = list(metrics) if metrics else list(found)
    missing = [m for m in wanted if m not in found]
    if missing:
        raise EvalcoreError(
            f"{loaded.source}: no metric named {', '.join(repr(m) for m in missing)} "
            f"(metrics found: {', '.join(found) or 'none'})"
        )
    values = file_confidences(loaded, confidences) if confidences else None
    if confidences:
        judges = {j for m in wanted for j in found[m].judge_names}
        unknown = [j for j in confidences if j not in judges]
        if unknown:
            raise EvalcoreError(
                f"{loaded.source}: no judge named {', '.join(repr(j) for j in unknown)} for a "
                f"confidence column (judges: {', '.join(sorted(judges)) or 'none'})"
            )
    out = [
        label_set_data(
            found[m],
            source=loaded.source,
            layout=loaded.layout,
            declared=declared,
            confidences=values,
        )
        for m in wanted
        if found[m].human.shape[1] > 0 and found[m].judge_names
    ]
    if not out:
        raise EvalcoreError(
            f"{loaded.source}: no metric has both human and judge labels "
            f"(metrics found: {', '.join(found) or 'none'})"
        )
    return out
