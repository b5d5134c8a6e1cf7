"""Files into the engine: a loaded file's label sets become the same :class:`CalibrationData` the
store gives, so one function (:func:`~evalcore.report.calibrate_runs`) computes every calibration.

A file has no database: its dataset and criterion records are made from the file (id 0), its items
are keyed by row position, and each judge column becomes a run (ids 1, 2, ... in column order)
whose values are ``ok`` where the file has a label and ``missing`` where it has none (a failed or
unparsed verdict is read as no label by :mod:`evalcore.data`, never as a wrong one).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from evalcore.data import LabelSet, LoadedFile
from evalcore.errors import EvalcoreError
from evalcore.labels import Scale
from evalcore.labels import parse_scale as labels_parse_scale
from evalcore.report._data import RESULT_STATUSES, CalibrationData, RunData, RunInfo, scale_codes
from evalcore.store import CriterionRecord, DatasetRecord

__all__ = ["FILE_RUN_SOURCE", "file_data", "label_set_data", "parse_scale"]

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
) -> CalibrationData:
    """One label set of a file as the engine's input.

    ``declared`` says that the label set's scale was declared (``--scale``, a criterion); otherwise
    the axis of the calibration is the labels observed on either side (see
    :attr:`CalibrationData.labels`).
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
        runs.append(RunData(info, results))
    return CalibrationData(dataset, criterion, items, human, tuple(runs), scale_declared=declared)


def file_data(
    loaded: LoadedFile, *, metrics: Sequence[str] | None = None, declared: bool = False
) -> list[CalibrationData]:
    """The engine's input for every metric of a loaded file that has human and judge labels (or for
    the ``metrics`` asked for, which must exist).

    Raises :class:`~evalcore.errors.EvalcoreError` naming the file when a metric asked for is not in
    it, or when no metric has both human and judge labels.
    """
    found = {ls.metric: ls for ls in loaded.label_sets}
    wanted = list(metrics) if metrics else list(found)
    missing = [m for m in wanted if m not in found]
    if missing:
        raise EvalcoreError(
            f"{loaded.source}: no metric named {', '.join(repr(m) for m in missing)} "
            f"(metrics found: {', '.join(found) or 'none'})"
        )
    out = [
        label_set_data(found[m], source=loaded.source, layout=loaded.layout, declared=declared)
        for m in wanted
        if found[m].human.shape[1] > 0 and found[m].judge_names
    ]
    if not out:
        raise EvalcoreError(
            f"{loaded.source}: no metric has both human and judge labels "
            f"(metrics found: {', '.join(found) or 'none'})"
        )
    return out
