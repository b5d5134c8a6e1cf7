"""The plain objects the demo project is made of.

They hold data only: nothing here knows about the store. Objects that carry a ``pandas.DataFrame``
compare by identity (``eq=False``), since a DataFrame has no single truth value; compare their frames
with :func:`pandas.testing.assert_frame_equal`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, NamedTuple

import pandas as pd

from evalcore.labels import Scale

__all__ = [
    "DatasetKind",
    "DemoCriterion",
    "DemoDataset",
    "DemoProject",
    "DemoRun",
    "DemoTemplate",
    "DemoTemplateVersion",
    "OrderMode",
]

DatasetKind = Literal["pointwise", "pairwise"]
OrderMode = Literal["AB", "both"]


@dataclass(frozen=True, eq=False)
class DemoDataset:
    """A dataset of the demo.

    ``items`` has one row per item: ``item_id``, then the ``fields`` (``prompt``, ``response``,
    ``context``, ``reference`` or ``prompt``, ``response_a``, ``response_b``, ``context``), then the
    ``metadata`` columns.
    """

    name: str
    kind: DatasetKind
    description: str
    items: pd.DataFrame
    fields: tuple[str, ...]
    metadata: tuple[str, ...]
    created_at: datetime


@dataclass(frozen=True)
class DemoCriterion:
    """What is judged, on which scale, with the rubric annotators read, and the dataset it applies to."""

    name: str
    kind: DatasetKind
    scale: Scale
    rubric: str
    dataset: str
    description: str


class DemoTemplateVersion(NamedTuple):
    """One saved version of a judge template: its full content and who saved it, when and why."""

    content: dict[str, Any]
    author: str
    note: str
    created_at: datetime


@dataclass(frozen=True)
class DemoTemplate:
    """A judge template and its versions, oldest first (version number = position + 1)."""

    name: str
    criterion: str
    versions: list[DemoTemplateVersion]


@dataclass(frozen=True, eq=False)
class DemoRun:
    """A recorded judge run (or an imported column of judge labels) over one dataset and criterion.

    ``results`` has one row per item and order shown: ``item_id``, ``order`` (``"AB"``, or ``"BA"`` for
    the swapped pass of a both-order run, whose label is already mapped back to the dataset's A/B
    frame), ``status`` (``"ok"``, ``"unparsed"`` or ``"failed"``), ``label`` (``None`` unless ok),
    ``score`` (probability of pass for pass/fail, probability-weighted mean for 1-5, else ``None``),
    ``reason`` (the judge's reason; for a failed call, the error), ``raw`` (the reply text as
    received), ``tokens_in``, ``tokens_out``, ``latency_s`` and ``cost`` (US dollars).

    An imported run has no template (``template`` and ``template_version`` are ``None``) and no
    tokens, latency or cost; an item whose cell was blank in the file has status ``"unparsed"``.
    """

    name: str
    dataset: str
    criterion: str
    template: str | None
    template_version: int | None
    model: str
    order_mode: OrderMode
    created_at: datetime
    description: str
    results: pd.DataFrame


@dataclass(frozen=True, eq=False)
class DemoProject:
    """Everything the demo project contains, as plain data.

    ``annotations`` has one row per human label: ``dataset``, ``criterion``, ``item_id``,
    ``annotator``, ``label`` (a float 1.0-5.0, or ``"pass"``/``"fail"``, or ``"A"``/``"B"``/``"TIE"``),
    ``comment`` (``None`` for most), ``time_spent_s`` and ``created_at`` (UTC).
    """

    project_name: str
    description: str
    settings: dict[str, Any]
    annotators: list[str]
    datasets: list[DemoDataset]
    criteria: list[DemoCriterion]
    annotations: pd.DataFrame
    templates: list[DemoTemplate]
    runs: list[DemoRun]

    def dataset(self, name: str) -> DemoDataset:
        """The dataset called ``name``; ``KeyError`` if there is none."""
        for dataset in self.datasets:
            if dataset.name == name:
                return dataset
        raise KeyError(name)

    def criterion(self, name: str) -> DemoCriterion:
        """The criterion called ``name``; ``KeyError`` if there is none."""
        for criterion in self.criteria:
            if criterion.name == name:
                return criterion
        raise KeyError(name)

    def run(self, name: str) -> DemoRun:
        """The run called ``name``; ``KeyError`` if there is none."""
        for run in self.runs:
            if run.name == name:
                return run
        raise KeyError(name)
