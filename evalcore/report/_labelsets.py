"""Calibrate the label sets of a loaded file: humans aggregated by a policy, every judge against them.

This is the file mode of evalcore (the ``evalcore calibrate`` command and the upload tab of the Calibrate
page). The store-backed dashboard uses the same pieces: :func:`aggregate_human`, :func:`human_ceiling`
and :func:`evalcore.metrics.calibrate`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalcore.data import LabelSet, LoadedFile
from evalcore.errors import EvalcoreError, MetricError
from evalcore.labels import Scale
from evalcore.metrics import (
    CalibrationReport,
    Comparison,
    calibrate,
    compare,
    krippendorff_alpha,
    krippendorff_alpha_ci,
    pairwise_cohen_kappa,
)
from evalcore.metrics import aggregate_labels as _aggregate

__all__ = [
    "HUMAN_POLICIES",
    "FileCalibration",
    "HumanCeiling",
    "JudgeCalibration",
    "aggregate_human",
    "calibrate_file",
    "calibrate_label_set",
    "human_ceiling",
    "report_kind",
]

#: The named human-label policies; ``"annotator:<name>"`` picks one annotator.
HUMAN_POLICIES = ("majority", "median", "mean")


def report_kind(scale: Scale) -> str:
    """The metrics ``kind`` for a scale: ordinal, nominal, binary or pairwise."""
    return scale.kind


def check_policy(policy: str, scale: Scale, annotators: Sequence[str] = ()) -> None:
    """Raise a readable error when ``policy`` cannot apply to ``scale`` or names no annotator."""
    if policy.startswith("annotator:"):
        name = policy.removeprefix("annotator:")
        if annotators and name not in annotators:
            raise EvalcoreError(
                f"human policy {policy!r}: no annotator named {name!r} "
                f"(annotators: {', '.join(annotators)})"
            )
        return
    if policy not in HUMAN_POLICIES:
        raise EvalcoreError(
            f"unknown human policy {policy!r}: use majority, median, mean or annotator:<name>"
        )
    if policy in ("median", "mean") and not scale.is_ordinal:
        raise EvalcoreError(
            f"human policy {policy!r} needs an ordered scale; {scale.kind} labels "
            f"({', '.join(scale.display_labels)}) can use majority or one annotator"
        )


def aggregate_human(human: pd.DataFrame, scale: Scale, policy: str = "majority") -> pd.Series:
    """One human label per item (index kept) from an items x annotators frame, by ``policy``.

    A single annotator is returned as is, whatever the policy. Items without consensus (a majority
    tie) or without any rating are ``None``/NaN and count as dropped in the metrics.
    """
    if human.shape[1] == 0:
        raise EvalcoreError("there are no human labels to compare with")
    check_policy(policy, scale, [str(c) for c in human.columns])
    if human.shape[1] == 1 and not policy.startswith("annotator:"):
        return human.iloc[:, 0].rename("human")
    try:
        values = _aggregate(human, policy=policy, labels=scale.labels, ordinal=scale.is_ordinal)
    except MetricError as exc:
        raise EvalcoreError(f"human policy {policy!r}: {exc}") from exc
    return pd.Series(values, index=human.index, name="human", dtype=object)


@dataclass(frozen=True)
class HumanCeiling:
    """How much the annotators agree with each other: the ceiling a judge is measured against.

    ``pairwise_kappa`` is Cohen's kappa of every annotator pair (quadratic-weighted on ordinal
    scales); ``mean_pairwise_kappa`` averages its off-diagonal cells. Krippendorff's alpha uses the
    ordinal distance on ordinal scales and the nominal one otherwise.
    """

    n_items: int
    n_annotators: int
    level: str
    krippendorff_alpha: float | None
    alpha_ci: tuple[float, float] | None
    mean_pairwise_kappa: float | None
    kappa_weights: str | None
    pairwise_kappa: pd.DataFrame = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        def num(x: float | None) -> float | None:
            return None if x is None or math.isnan(x) else float(x)

        return {
            "n_items": self.n_items,
            "n_annotators": self.n_annotators,
            "level": self.level,
            "krippendorff_alpha": num(self.krippendorff_alpha),
            "alpha_ci": None if self.alpha_ci is None else [num(v) for v in self.alpha_ci],
            "mean_pairwise_kappa": num(self.mean_pairwise_kappa),
            "kappa_weights": self.kappa_weights,
        }


def human_ceiling(
    human: pd.DataFrame, scale: Scale, *, n_boot: int = 1000, seed: int = 0
) -> HumanCeiling | None:
    """Agreement among annotators on the items at least two of them rated; ``None`` below two."""
    if human.shape[1] < 2:
        return None
    rated = human.notna().sum(axis=1)
    shared = human[rated >= 2]
    level = "ordinal" if scale.is_ordinal else "nominal"
    weights = "quadratic" if scale.is_ordinal else None
    if len(shared) < 2:
        return HumanCeiling(0, human.shape[1], level, None, None, None, weights, pd.DataFrame())
    alpha = krippendorff_alpha(shared, level=level, labels=scale.labels)  # type: ignore[arg-type]
    ci = (
        krippendorff_alpha_ci(
            shared,
            level=level,  # type: ignore[arg-type]
            labels=scale.labels,
            n_boot=n_boot,
            seed=seed,
        )
        if n_boot and not math.isnan(alpha)
        else None
    )
    kappas = pairwise_cohen_kappa(shared, labels=scale.labels, weights=weights)  # type: ignore[arg-type]
    values = kappas.to_numpy(dtype=float)
    off = values[~np.eye(len(values), dtype=bool)]
    off = off[~np.isnan(off)]
    mean_kappa = float(off.mean()) if off.size else None
    return HumanCeiling(
        n_items=len(shared),
        n_annotators=human.shape[1],
        level=level,
        krippendorff_alpha=alpha,
        alpha_ci=ci,
        mean_pairwise_kappa=mean_kappa,
        kappa_weights=weights,
        pairwise_kappa=kappas,
    )


@dataclass(frozen=True)
class JudgeCalibration:
    """One judge of one metric against the aggregated human label, with coverage."""

    metric: str
    judge: str
    policy: str
    report: CalibrationReport
    n_items: int
    n_human_missing: int
    n_judge_missing: int

    def to_dict(self) -> dict[str, Any]:
        out = self.report.to_dict()
        out.update(
            {
                "metric": self.metric,
                "judge": self.judge,
                "human_policy": self.policy,
                "coverage": {
                    "n_items": self.n_items,
                    "n_compared": self.report.n,
                    "n_human_missing": self.n_human_missing,
                    "n_judge_missing": self.n_judge_missing,
                },
            }
        )
        return out


@dataclass(frozen=True)
class FileCalibration:
    """Everything ``evalcore calibrate`` reports for one label set (one metric of a file)."""

    metric: str
    scale: Scale
    judges: tuple[JudgeCalibration, ...]
    ceiling: HumanCeiling | None
    comparisons: tuple[tuple[str, str, Comparison], ...]


def observed_labels(label_set: LabelSet, human: pd.Series | None = None) -> tuple[Any, ...]:
    """The scale's labels that occur in the humans or in any judge, in the scale's order.

    Like Vertex's ``confusion_matrix_labels`` (the union of both sides), but ordered by the scale, so
    that every judge of a metric shares one axis.
    """
    seen: set[Any] = set()
    frames = [label_set.judges] + ([human.to_frame()] if human is not None else [label_set.human])
    for frame in frames:
        for column in frame.columns:
            seen.update(v for v in frame[column].tolist() if v is not None and v == v)
    labels = tuple(x for x in label_set.scale.labels if x in seen)
    return labels if len(labels) >= 2 else label_set.scale.labels


def calibrate_label_set(
    label_set: LabelSet,
    *,
    policy: str = "majority",
    judges: Sequence[str] | None = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[JudgeCalibration]:
    """Calibrate each judge column of ``label_set`` against its humans aggregated by ``policy``.

    The axis is the union of labels the humans and the judges used, in the scale's order (Vertex's
    label set), so every report of a metric has the same axes.
    """
    scale = label_set.scale
    human = aggregate_human(label_set.human, scale, policy)
    axis = observed_labels(label_set, human)
    names = list(label_set.judge_names if judges is None else judges)
    if not names:
        raise EvalcoreError(f"{label_set.metric}: there is no judge column to calibrate")
    out: list[JudgeCalibration] = []
    for name in names:
        if name not in label_set.judges.columns:
            raise EvalcoreError(
                f"{label_set.metric}: no judge named {name!r} "
                f"(judges: {', '.join(label_set.judge_names)})"
            )
        judge = label_set.judges[name].reindex(human.index)
        human_missing = human.isna().to_numpy()
        judge_missing = judge.isna().to_numpy()
        try:
            report = calibrate(
                human.to_numpy(dtype=object),
                judge.to_numpy(dtype=object),
                labels=axis,
                kind=report_kind(scale),  # type: ignore[arg-type]
                metric=label_set.metric,
                positive=scale.positive if scale.kind == "binary" else None,
                n_boot=n_boot,
                confidence=confidence,
                seed=seed,
            )
        except MetricError as exc:
            raise EvalcoreError(f"{label_set.metric} / {name}: {exc}") from exc
        out.append(
            JudgeCalibration(
                metric=label_set.metric,
                judge=str(name),
                policy=policy if label_set.human.shape[1] > 1 else "single annotator",
                report=report,
                n_items=len(human),
                n_human_missing=int(human_missing.sum()),
                n_judge_missing=int(judge_missing.sum()),
            )
        )
    return out


def calibrate_file(
    loaded: LoadedFile,
    *,
    metrics: Sequence[str] | None = None,
    policy: str = "majority",
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[FileCalibration]:
    """Calibrate every metric of a loaded file (or the ``metrics`` asked for).

    Each metric gets its judges' reports, the human ceiling when there are several annotators, and a
    paired comparison of every judge with the first one when there are several judges.
    """
    wanted = list(metrics) if metrics else [ls.metric for ls in loaded.label_sets]
    found = {ls.metric: ls for ls in loaded.label_sets}
    missing = [m for m in wanted if m not in found]
    if missing:
        shown = ", ".join(found) or "none"
        raise EvalcoreError(
            f"{loaded.source}: no metric named {', '.join(repr(m) for m in missing)} "
            f"(metrics found: {shown})"
        )
    results: list[FileCalibration] = []
    for name in wanted:
        label_set = found[name]
        if label_set.human.shape[1] == 0 or not label_set.judge_names:
            continue
        judges = calibrate_label_set(
            label_set, policy=policy, n_boot=n_boot, confidence=confidence, seed=seed
        )
        ceiling = human_ceiling(label_set.human, label_set.scale, n_boot=n_boot, seed=seed)
        comparisons: list[tuple[str, str, Comparison]] = []
        if len(label_set.judge_names) > 1:
            human = aggregate_human(label_set.human, label_set.scale, policy)
            axis = observed_labels(label_set, human)
            base = label_set.judge_names[0]
            for other in label_set.judge_names[1:]:
                try:
                    result = compare(
                        human.to_numpy(dtype=object),
                        label_set.judges[base].reindex(human.index).to_numpy(dtype=object),
                        label_set.judges[other].reindex(human.index).to_numpy(dtype=object),
                        labels=axis,
                        n_boot=n_boot,
                        confidence=confidence,
                        seed=seed,
                    )
                except MetricError:
                    continue  # no item that both judges and the humans labelled
                comparisons.append((base, other, result))
        results.append(
            FileCalibration(name, label_set.scale, tuple(judges), ceiling, tuple(comparisons))
        )
    if not results:
        raise EvalcoreError(
            f"{loaded.source}: no metric has both human and judge labels "
            f"(metrics found: {', '.join(found) or 'none'})"
        )
    return results
