"""The humans' side of a calibration: one label per item by a named policy, and the human ceiling.

Used by the engine (:func:`~evalcore.report.calibrate_runs`) for store and file data alike.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalcore.errors import EvalcoreError, MetricError
from evalcore.labels import Scale
from evalcore.metrics import (
    RaterAgreement,
    krippendorff_alpha,
    krippendorff_alpha_ci,
    pairwise_cohen_kappa,
    rater_agreements,
    raters_for,
)
from evalcore.metrics import aggregate_labels as _aggregate

__all__ = [
    "HUMAN_POLICIES",
    "HumanCeiling",
    "aggregate_human",
    "check_policy",
    "human_ceiling",
]

#: The named human-label policies; ``"annotator:<name>"`` picks one annotator.
HUMAN_POLICIES = ("majority", "median", "mean")


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

    ``coefficients`` holds every agreement coefficient among all the annotators at once that
    :data:`~evalcore.metrics.RATER_METRICS` declares for the scale (Fleiss' kappa, Gwet's AC1, AC2
    with linear and quadratic weights on ordinal scales, Krippendorff's alpha at each level that
    applies), each a :class:`~evalcore.metrics.RaterAgreement` with its value, analytic standard
    error and interval where one exists, and its bootstrap interval; :meth:`coefficient` finds one
    by key.
    """

    n_items: int
    n_annotators: int
    level: str
    krippendorff_alpha: float | None
    alpha_ci: tuple[float, float] | None
    mean_pairwise_kappa: float | None
    kappa_weights: str | None
    pairwise_kappa: pd.DataFrame = field(repr=False)
    coefficients: tuple[RaterAgreement, ...] = ()

    def coefficient(self, key: str) -> RaterAgreement | None:
        """The coefficient with ``key`` (e.g. ``"fleiss_kappa"``), or ``None`` when not computed."""
        return next((c for c in self.coefficients if c.key == key), None)

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
            "coefficients": {c.key: c.to_dict() for c in self.coefficients},
        }


def human_ceiling(
    human: pd.DataFrame,
    scale: Scale,
    *,
    labels: Sequence[Any] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> HumanCeiling | None:
    """Agreement among annotators on the items at least two of them rated; ``None`` below two.

    ``labels`` is the label axis (default the whole scale): the weighted pairwise kappas depend on
    where the labels sit, so a calibration passes its own axis. The coefficients among all
    annotators read every item rated at least once (irrCAC's convention: an item rated once counts
    in the chance agreement), alpha the items rated at least twice.
    """
    axis = list(scale.labels if labels is None else labels)
    if human.shape[1] < 2:
        return None
    rated = human.notna().sum(axis=1)
    shared = human[rated >= 2]
    level = "ordinal" if scale.is_ordinal else "nominal"
    weights = "quadratic" if scale.is_ordinal else None
    if len(shared) < 2:
        return HumanCeiling(0, human.shape[1], level, None, None, None, weights, pd.DataFrame())
    alpha = krippendorff_alpha(shared, level=level, labels=axis)  # type: ignore[arg-type]
    ci = (
        krippendorff_alpha_ci(
            shared,
            level=level,  # type: ignore[arg-type]
            labels=axis,
            n_boot=n_boot,
            seed=seed,
        )
        if n_boot and not math.isnan(alpha)
        else None
    )
    kappas = pairwise_cohen_kappa(shared, labels=axis, weights=weights)  # type: ignore[arg-type]
    rated = human[human.notna().sum(axis=1) >= 1]
    coefficients = rater_agreements(
        rated,
        raters_for(scale.kind, numeric=scale.is_numeric),
        labels=axis,
        n_boot=n_boot,
        seed=seed,
    )
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
        coefficients=coefficients,
    )
