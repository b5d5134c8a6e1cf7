"""The judge's agreement with itself, beside the human ceiling.

A run that asks for several samples per item (``n > 1`` in the template's model settings) keeps
every sample's label in ``judge_results.samples`` (a JSON list, in sample order) beside the
aggregated label. :func:`load_samples` reads them as an items x samples table, and
:func:`self_agreement` reports Krippendorff's alpha across the samples, the share of items whose
samples disagree, and how one sample (the first) and the majority of the samples each compare with
the humans. Several runs of the same template version are compared the same way: each run is one
"sample" (:func:`runs_as_samples`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import select

from evalcore.errors import MetricError
from evalcore.labels import Label, Scale
from evalcore.metrics import CalibrationReport, aggregate_labels, calibrate, krippendorff_alpha
from evalcore.report._load import RunData, _rows, scale_codes
from evalcore.store import Store
from evalcore.store.schema import JudgeResult

__all__ = [
    "SelfAgreement",
    "load_samples",
    "repeated_runs",
    "runs_as_samples",
    "self_agreement",
    "self_agreement_table",
]


def _on_scale(value: Any, scale: Scale) -> Label | None:
    try:
        return scale.coerce(value)
    except ValueError:
        return None


def load_samples(store: Store, run_id: int, scale: Scale, items: pd.Index) -> pd.DataFrame:
    """Every sample's label of a run: rows = ``items`` (database ids), columns ``1..n`` (sample
    number), missing where a sample did not parse or the item has no samples. Only the first
    presentation order of a both-order run is read. Empty (no columns) when the run kept no samples
    (``n = 1``)."""
    rows = _rows(
        store,
        select(JudgeResult.item_id, JudgeResult.samples).where(
            JudgeResult.run_id == run_id,
            JudgeResult.samples.is_not(None),
            JudgeResult.order != "BA",
        ),
    )
    lists: dict[int, list[Any]] = {}
    for item_id, raw in rows:
        values = json.loads(raw) if isinstance(raw, str | bytes) else raw
        if isinstance(values, list) and values:
            lists[int(item_id)] = values
    width = max((len(v) for v in lists.values()), default=0)
    if width < 2:
        return pd.DataFrame(index=items)
    table = np.full((len(items), width), None, dtype=object)
    at = items.get_indexer(list(lists))
    for row, values in zip(at, lists.values(), strict=True):
        if row >= 0:
            for j, value in enumerate(values):
                table[row, j] = _on_scale(value, scale)
    frame = pd.DataFrame(table, index=items, columns=[str(j) for j in range(1, width + 1)])
    frame.columns.name = "sample"
    return frame


def runs_as_samples(runs: Sequence[RunData]) -> pd.DataFrame:
    """Several runs (of one template version, say) as a samples table: one column per run title,
    the run's label where it gave one."""
    frame = pd.DataFrame(
        {r.info.title: r.results["label"].where(r.results["status"] == "ok") for r in runs}
    )
    frame.columns.name = "sample"
    return frame.astype(object).where(frame.notna(), None)


@dataclass(frozen=True, eq=False)
class SelfAgreement:
    """How much a judge agrees with itself over ``n_samples`` samples (or repeated runs).

    ``n_items``: items with at least two sample labels; ``krippendorff_alpha``: across the samples
    (ordinal distance on ordinal scales); ``disagree_share``: of those items, the share whose samples
    are not all the same; ``single`` and ``majority``: the first sample's and the samples' majority
    label against ``human`` (``None`` when no item compares).
    """

    n_samples: int
    n_items: int
    krippendorff_alpha: float
    disagree_share: float
    single: CalibrationReport | None
    majority: CalibrationReport | None

    def to_dict(self) -> dict[str, Any]:
        def num(x: float) -> float | None:
            return None if math.isnan(x) else float(x)

        return {
            "n_samples": self.n_samples,
            "n_items": self.n_items,
            "krippendorff_alpha": num(self.krippendorff_alpha),
            "disagree_share": num(self.disagree_share),
            "single": None if self.single is None else self.single.to_dict(),
            "majority": None if self.majority is None else self.majority.to_dict(),
        }


def _report(
    human: pd.Series, judge: pd.Series, scale: Scale, labels: Sequence[Label]
) -> CalibrationReport | None:
    try:
        return calibrate(
            human.to_numpy(dtype=object),
            judge.reindex(human.index).to_numpy(dtype=object),
            labels=list(labels),
            kind=scale.kind,  # type: ignore[arg-type]
            n_boot=0,
        )
    except MetricError:
        return None


def self_agreement(
    samples: pd.DataFrame,
    human: pd.Series,
    scale: Scale,
    *,
    labels: Sequence[Label] | None = None,
) -> SelfAgreement | None:
    """The judge's agreement with itself from an items x samples table (:func:`load_samples` or
    :func:`runs_as_samples`) and the humans' label per item; ``None`` with fewer than two samples.

    The majority of an item's samples is :func:`~evalcore.metrics.aggregate_labels`' majority (no
    label on a tie).
    """
    if samples.shape[1] < 2:
        return None
    axis = list(scale.labels if labels is None else labels)
    codes = np.column_stack([scale_codes(samples[c].to_numpy(), scale) for c in samples.columns])
    rated = (codes >= 0).sum(axis=1)
    pairable = rated >= 2
    masked = np.where(codes >= 0, codes, -1)
    high = masked.max(axis=1)
    low = np.where(codes >= 0, codes, np.iinfo(np.int64).max).min(axis=1)
    disagree = pairable & (high != low)
    n_items = int(pairable.sum())
    level = "ordinal" if scale.is_ordinal else "nominal"
    alpha = (
        krippendorff_alpha(samples[pairable], level=level, labels=axis)  # type: ignore[arg-type]
        if n_items
        else math.nan
    )
    majority = pd.Series(
        aggregate_labels(samples, policy="majority", labels=axis),  # type: ignore[arg-type]
        index=samples.index,
    )
    return SelfAgreement(
        n_samples=int(samples.shape[1]),
        n_items=n_items,
        krippendorff_alpha=float(alpha),
        disagree_share=float(disagree.sum() / n_items) if n_items else math.nan,
        single=_report(human, samples.iloc[:, 0], scale, axis),
        majority=_report(human, majority, scale, axis),
    )


def repeated_runs(runs: Sequence[RunData]) -> list[tuple[str, list[RunData]]]:
    """Runs of the same template version (and model), grouped: ``(name, runs)`` for every group of
    two or more, in the order of their first run."""
    groups: dict[tuple[object, ...], list[RunData]] = {}
    for run in runs:
        info = run.info
        if info.template is None or info.version is None:
            continue
        groups.setdefault((info.template, info.version, info.model), []).append(run)
    return [
        (f"{template} v{version}" + (f" · {model}" if model else ""), found)
        for (template, version, model), found in groups.items()
        if len(found) >= 2
    ]


def self_agreement_table(
    entries: Sequence[tuple[str, SelfAgreement]], *, kind: str, ceiling: float | None = None
) -> pd.DataFrame:
    """Self-agreement side by side (one column per run or group of repeated runs), rows as people
    read them: samples, items, Krippendorff's alpha across the samples (beside the humans' alpha,
    ``ceiling``), the share of items whose samples disagree, then balanced accuracy, accuracy and
    the headline kappa of one sample and of the majority of the samples against the humans."""
    from evalcore.metrics import headline_kappa, metric_def

    keys = ["accuracy_balanced", "accuracy", headline_kappa(kind).key]
    out: dict[str, dict[str, str]] = {}

    def fmt(value: float | None) -> str:
        return "–" if value is None or value != value else f"{value:.3f}"

    for title, found in entries:
        column = {
            "samples": str(found.n_samples),
            "items with 2+ samples": str(found.n_items),
            "Krippendorff's α across samples": fmt(found.krippendorff_alpha),
            "Krippendorff's α (humans)": fmt(ceiling),
            "items whose samples disagree": "–"
            if found.disagree_share != found.disagree_share
            else f"{found.disagree_share:.1%}",
        }
        for which, report in (
            ("one sample", found.single),
            ("majority of samples", found.majority),
        ):
            for key in keys:
                value = None if report is None else getattr(report, key)
                column[f"{metric_def(key).name}, {which}"] = fmt(value)
        out[title] = column
    return pd.DataFrame(out)
