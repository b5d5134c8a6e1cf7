"""What a calibration reads, from the store or from a file: :class:`CalibrationData` and its parts.

This module needs neither SQLAlchemy nor the store's engine (the records are plain dataclasses), so
a command that calibrates a file never loads the database layer; the bulk reads from the store are
in :mod:`evalcore.report._load`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from evalcore.labels import Label, Scale
from evalcore.store import CriterionRecord, DatasetRecord

__all__ = [
    "RESULT_STATUSES",
    "CalibrationData",
    "RunData",
    "RunInfo",
    "scale_codes",
]

#: The status of a run on an item: a recorded status, or ``"missing"`` when no result was recorded.
RESULT_STATUSES: tuple[str, ...] = ("ok", "unparsed", "failed", "missing")


@dataclass(frozen=True)
class RunInfo:
    """What a report says about one judge run: its name, template version, model and times.

    ``title`` is the name people read in tables and figures (the run's name; ``#id`` is added when
    two runs of a report share a name). ``template``/``version`` are ``None`` for imported labels.
    """

    id: int
    name: str
    title: str
    model: str | None
    template: str | None
    version: int | None
    version_created_at: datetime | None
    created_at: datetime
    source: str
    status: str
    order_mode: str
    #: a jury's member run ids, in order (empty for any other run)
    members: tuple[int, ...] = ()

    @property
    def when(self) -> datetime:
        """The time a history chart puts the run at: its template version's, else its own."""
        return self.version_created_at or self.created_at


@dataclass(frozen=True, eq=False)
class RunData:
    """The results of one run on every item of its dataset.

    ``results`` is indexed by the item's database id (all items, in dataset order) with columns
    ``status`` (one of :data:`RESULT_STATUSES`), ``label`` (on the scale; missing unless ``ok``),
    ``score`` (the judge's numeric score, e.g. the probability of pass; NaN when none),
    ``label_swapped``: the verdict of the second pass of a both-order pairwise run (responses shown
    in the other order, already mapped back to the dataset's frame), missing otherwise, and
    ``confidence``: the probability the judge gave ``label`` (from logprobs, samples or a jury's
    agreement; NaN when unknown or not ``ok``). A frame made without a ``confidence`` column gets
    one of NaN.

    ``probabilities``, when loaded (``load_run(..., probabilities=True)``), has the same index and
    one column per label of the scale: the probability the judge gave each label with ``label``'s
    verdict (rows sum to 1; NaN where unknown).
    """

    info: RunInfo
    results: pd.DataFrame
    probabilities: pd.DataFrame | None = None

    def __post_init__(self) -> None:
        if "confidence" not in self.results.columns:
            object.__setattr__(self, "results", self.results.assign(confidence=np.nan))

    @property
    def both_orders(self) -> bool:
        """True when the run judged items in both presentation orders."""
        return bool(self.results["label_swapped"].notna().any())


@dataclass(frozen=True, eq=False)
class CalibrationData:
    """Everything one calibration reads, from the store or from a file: the one input of the engine.

    ``items``: index = item key (the database id ``item_pk`` in the store; the row position for a
    file), in dataset order; columns ``item_id`` (the file's id) and ``position``. ``human``: the
    latest label of every annotator (columns, sorted in the store, file order for a file) on every
    item (rows, same index as ``items``), missing where they gave none. ``runs``: in the order asked
    for; a file's judge columns are runs whose missing values have the status ``"missing"``.

    ``scale_declared`` says whether the scale was declared (a criterion's scale, ``--scale``) or
    inferred from a file's values; it decides the label axis (:attr:`labels`): the whole declared
    scale; for numbers the whole inferred scale too (``infer_scale`` spans whole numbers from the
    lowest to the highest, so 1, 2, 4, 5 sit on 1..5 whatever another column uses); else the words
    observed on either side, in the scale's order.
    """

    dataset: DatasetRecord
    criterion: CriterionRecord
    items: pd.DataFrame
    human: pd.DataFrame
    runs: tuple[RunData, ...]
    metadata: pd.DataFrame = field(default_factory=pd.DataFrame)
    scale_declared: bool = True

    @property
    def scale(self) -> Scale:
        return self.criterion.scale

    @cached_property
    def labels(self) -> tuple[Label, ...]:
        """The axis of every confusion matrix and every weighted kappa of this data (see class)."""
        scale = self.criterion.scale
        if self.scale_declared or scale.is_numeric:
            # numbers sit at their values on the (declared or inferred) scale: a judge's weighted
            # figures never depend on the labels another column happens to use
            return scale.labels
        used = np.zeros(len(scale.labels), dtype=bool)
        for frame in (self.human, *(run.results[["label"]] for run in self.runs)):
            for column in frame.columns:
                codes = scale_codes(frame[column].to_numpy(), scale)
                used[codes[codes >= 0]] = True
        observed = tuple(label for label, hit in zip(scale.labels, used, strict=True) if hit)
        return observed if len(observed) >= 2 else scale.labels

    @property
    def annotators(self) -> tuple[str, ...]:
        return tuple(str(c) for c in self.human.columns)

    def run(self, run_id: int) -> RunData:
        """The run with database id ``run_id``; ``KeyError`` when it is not part of the data."""
        for run in self.runs:
            if run.info.id == run_id:
                return run
        raise KeyError(run_id)

    def with_runs(self, run_ids: Sequence[int]) -> CalibrationData:
        """The same data restricted to (and ordered like) ``run_ids``."""
        return replace(self, runs=tuple(self.run(r) for r in run_ids))

    def with_metadata(self, metadata: pd.DataFrame) -> CalibrationData:
        """The same data with metadata columns (index = item key) for slicing."""
        return replace(self, metadata=metadata.reindex(self.items.index))


def _as_floats(array: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
    """Numbers as floats, NaN where missing; words (off a numeric scale) become NaN too."""
    if array.dtype.kind in "fiub":
        return array.astype(np.float64)
    try:  # labels of a file: floats and None in an object array, five times faster than parsing
        numbers = pd.Series(array, dtype=object).astype(np.float64)
    except (TypeError, ValueError):
        numbers = pd.to_numeric(pd.Series(array, dtype=object), errors="coerce")
    return np.asarray(numbers.to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)


def scale_codes(values: pd.Series | npt.NDArray[Any], scale: Scale) -> npt.NDArray[np.int64]:
    """Positions of labels on ``scale`` (-1 = missing or off the scale), without a per-row loop."""
    array = np.asarray(values)
    if scale.is_numeric:
        numbers = _as_floats(array)
        lookup = np.asarray(scale.labels, dtype=np.float64)
        low = lookup[0]
        if low.is_integer() and np.array_equal(lookup, low + np.arange(len(lookup))):
            # whole numbers low, low + 1, ...: the position is the value less low (NaN and
            # values off the scale or between its labels give -1)
            at = numbers - low
            with np.errstate(invalid="ignore"):
                hit = (at >= 0) & (at < len(lookup)) & (at == np.floor(at))
            return np.where(hit, at, -1).astype(np.int64)
        order = np.argsort(lookup)
        ordered = lookup[order]
        at = np.clip(np.searchsorted(ordered, numbers), 0, len(ordered) - 1)
        return np.where(ordered[at] == numbers, order[at], -1).astype(np.int64)
    index = {label: i for i, label in enumerate(scale.labels)}
    mapped = pd.Series(array, dtype=object).map(index)
    codes: npt.NDArray[np.int64] = mapped.fillna(-1).to_numpy(dtype=np.int64)
    return codes
