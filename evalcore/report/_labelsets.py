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
    "FRAGILE_CHANGE",
    "FRAGILE_MIN_ANNOTATORS",
    "HUMAN_POLICIES",
    "MIN_SHARED",
    "HumanCeiling",
    "LeaveOneOut",
    "aggregate_human",
    "check_policy",
    "human_ceiling",
    "shared_counts",
]

#: Annotators who share fewer items than this with the other annotators are left out of the ceiling
#: (a pair's agreement on a handful of items says little); a setting of :func:`human_ceiling`.
MIN_SHARED = 10
#: A ceiling resting on fewer annotators than this is fragile.
FRAGILE_MIN_ANNOTATORS = 3
#: Without an interval, a ceiling is fragile when leaving one annotator out moves it by more.
FRAGILE_CHANGE = 0.05

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
class LeaveOneOut:
    """The ceiling (Krippendorff's alpha) recomputed without ``annotator``, and its ``change``
    from the ceiling with everyone (``None`` when it cannot be computed without them)."""

    annotator: str
    value: float | None
    change: float | None


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

    ``min_shared`` is the setting it was computed with and ``left_out`` the annotators who shared
    fewer items than that with the others (not in any figure of the ceiling). ``leave_one_out`` is
    alpha recomputed without each kept annotator; :attr:`fragile` applies the declared rule
    (:attr:`fragility` says why).
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
    min_shared: int = MIN_SHARED
    left_out: tuple[str, ...] = ()
    leave_one_out: tuple[LeaveOneOut, ...] = ()
    few_shared: bool = False

    @property
    def n_kept(self) -> int:
        """How many annotators the ceiling's figures rest on (``n_annotators`` less ``left_out``)."""
        return self.n_annotators - len(self.left_out)

    @property
    def fragility(self) -> str | None:
        """Why the ceiling is fragile, or ``None``: it is when fewer than
        :data:`FRAGILE_MIN_ANNOTATORS` annotators are kept, or when leaving one out moves alpha by
        more than its 95 % interval's half-width (without an interval, by more than
        :data:`FRAGILE_CHANGE`)."""
        kept = self.n_kept
        if self.few_shared:
            return (
                f"some annotators share fewer than {self.min_shared} items with the others, and "
                "leaving them out would leave fewer than two"
            )
        if kept < FRAGILE_MIN_ANNOTATORS:
            return (
                f"the ceiling rests on {kept} annotator{'s' if kept != 1 else ''} "
                f"(fewer than {FRAGILE_MIN_ANNOTATORS})"
            )
        limit = FRAGILE_CHANGE
        if self.alpha_ci is not None and not any(math.isnan(x) for x in self.alpha_ci):
            limit = (self.alpha_ci[1] - self.alpha_ci[0]) / 2
        moved = [x for x in self.leave_one_out if x.change is not None and abs(x.change) > limit]
        if not moved:
            return None
        worst = max(moved, key=lambda x: abs(x.change or 0.0))
        bound = "the margin" if limit == FRAGILE_CHANGE else "its interval's half-width"
        return (
            f"leaving {worst.annotator} out moves α by {worst.change:+.2f}, "
            f"more than {bound} {limit:.2f}"
        )

    @property
    def fragile(self) -> bool:
        return self.fragility is not None

    def coefficient(self, key: str) -> RaterAgreement | None:
        """The coefficient with ``key`` (e.g. ``"fleiss_kappa"``), or ``None`` when not computed."""
        return next((c for c in self.coefficients if c.key == key), None)

    def to_dict(self) -> dict[str, Any]:
        def num(x: float | None) -> float | None:
            return None if x is None or math.isnan(x) else float(x)

        return {
            "n_items": self.n_items,
            "n_annotators": self.n_annotators,
            "n_kept": self.n_kept,
            "level": self.level,
            "krippendorff_alpha": num(self.krippendorff_alpha),
            "alpha_ci": None if self.alpha_ci is None else [num(v) for v in self.alpha_ci],
            "mean_pairwise_kappa": num(self.mean_pairwise_kappa),
            "kappa_weights": self.kappa_weights,
            "coefficients": {c.key: c.to_dict() for c in self.coefficients},
            "min_shared": self.min_shared,
            "left_out": list(self.left_out),
            "leave_one_out": [
                {"annotator": x.annotator, "value": num(x.value), "change": num(x.change)}
                for x in self.leave_one_out
            ],
            "fragile": self.fragility,
        }


def shared_counts(human: pd.DataFrame) -> dict[str, int]:
    """Per annotator: how many of the items they rated at least one other annotator rated too.

    >>> frame = pd.DataFrame({"a": [1, 2, None], "b": [1, None, 2], "c": [None, None, 2]})
    >>> shared_counts(frame)
    {'a': 1, 'b': 2, 'c': 1}
    """
    rated = human.notna()
    total = rated.sum(axis=1)
    return {str(c): int((rated[c] & (total - rated[c] >= 1)).sum()) for c in human.columns}


def _kept(human: pd.DataFrame, min_shared: int) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """Leave out annotators sharing fewer than ``min_shared`` items, again until none does (leaving
    one out can leave another with fewer). When that would leave fewer than two, everyone is kept
    (the ceiling is then marked fragile: too few shared items)."""
    kept, left = human, list[str]()
    while True:
        counts = shared_counts(kept)
        few = [c for c in kept.columns if counts[str(c)] < min_shared]
        if not few:
            return kept, tuple(left)
        if kept.shape[1] - len(few) < 2:
            return human, ()
        left.extend(str(c) for c in few)
        kept = kept.drop(columns=few)


def human_ceiling(
    human: pd.DataFrame,
    scale: Scale,
    *,
    labels: Sequence[Any] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    min_shared: int = MIN_SHARED,
) -> HumanCeiling | None:
    """Agreement among annotators on the items at least two of them rated; ``None`` below two.

    Annotators who share fewer than ``min_shared`` items with the others are left out first (listed
    in ``left_out``); alpha is then recomputed without each kept annotator (``leave_one_out``).

    ``labels`` is the label axis (default the whole scale): the weighted pairwise kappas depend on
    where the labels sit, so a calibration passes its own axis. The coefficients among all
    annotators read every item rated at least once (irrCAC's convention: an item rated once counts
    in the chance agreement), alpha the items rated at least twice.
    """
    axis = list(scale.labels if labels is None else labels)
    if human.shape[1] < 2:
        return None
    everyone = human.shape[1]
    human, left_out = _kept(human, min_shared)
    few_shared = min(shared_counts(human).values()) < min_shared
    rated = human.notna().sum(axis=1)
    shared = human[rated >= 2]
    level = "ordinal" if scale.is_ordinal else "nominal"
    weights = "quadratic" if scale.is_ordinal else None
    if len(shared) < 2:
        return HumanCeiling(
            0, everyone, level, None, None, None, weights, pd.DataFrame(),
            min_shared=min_shared, left_out=left_out, few_shared=few_shared,
        )  # fmt: skip
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
    loo = []
    if human.shape[1] >= 3:
        for name in human.columns:
            rest = human.drop(columns=[name])
            rest = rest[rest.notna().sum(axis=1) >= 2]
            value = (
                krippendorff_alpha(rest, level=level, labels=axis)  # type: ignore[arg-type]
                if len(rest) >= 2
                else math.nan
            )
            known = not math.isnan(value) and not math.isnan(alpha)
            loo.append(
                LeaveOneOut(
                    str(name),
                    None if math.isnan(value) else float(value),
                    float(value - alpha) if known else None,
                )
            )
    return HumanCeiling(
        n_items=len(shared),
        n_annotators=everyone,
        level=level,
        krippendorff_alpha=alpha,
        alpha_ci=ci,
        mean_pairwise_kappa=mean_kappa,
        kappa_weights=weights,
        pairwise_kappa=kappas,
        coefficients=coefficients,
        min_shared=min_shared,
        left_out=left_out,
        leave_one_out=tuple(loo),
        few_shared=few_shared,
    )
