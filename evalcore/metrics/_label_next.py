"""What to label next: the unlabelled items whose human labels buy the most, and what they buy.

:func:`label_next` ranks the items nobody has labelled yet (never an item of the stored test part)
by how much a human label on them would tell about a metric of the judge against people:

- one judge: the items where the judge is most likely to be wrong *or* right, i.e. where its
  agreement with people is most uncertain (``4 q (1 - q)`` with ``q`` the estimated chance that
  people give the judge's label). That is where an item's label carries the most information about
  an agreement metric (the variance of the item's agreement), the idea behind active testing
  (Kossen et al. 2021) and active statistical inference (Zrnic & Candès 2024);
- two versions under comparison: the items where they give different labels, scored by the chance
  that exactly one of them is right (only those items move a paired difference).

``q`` comes from the judge's confidence when known; else from the jury's vote (the share of
members giving the jury's label); else from the confusion matrix so far (how often people gave
the judge's label when it said this label, with half a count added to every cell). The ranking is
spread over slices, round-robin. The effect of the batch is simulated: the human labels of the
batch are drawn from that same per-item model (the judge taken as calibrated where it has a
confidence), added to the current count table, the metric's percentile bootstrap interval
re-computed, and its half-width averaged over the draws. With two versions, the simulation also
gives McNemar's exact p-value of the versions, now and after the batch (the median over the
draws): discordant items are exactly what that test reads.

Caution, said in the docs too: a batch chosen this way over-represents hard items. Each of them
adds more variance to an agreement figure than an average item, so the interval narrows a little
less than after a random batch of the same size (the simulation shows by how much), and the figure
on all labelled items afterwards is not a random-sample estimate of the whole data set. The stored
test part, which this never proposes, stays the unbiased proof.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from evalcore.errors import MetricError
from evalcore.labels import Label, format_label, normalize_label
from evalcore.metrics._bootstrap import check_bootstrap, multinomial_tables, percentile_interval
from evalcore.metrics._compare import mcnemar_exact_p
from evalcore.metrics._confidence import ConfidenceArray, confidence_values
from evalcore.metrics._declared import metric_def
from evalcore.metrics._encode import (
    FloatArray,
    IntArray,
    LabelArray,
    LabelList,
    encode_columns,
    normalize_column,
)

__all__ = ["LabelCandidate", "LabelNext", "label_next"]

#: Half a count added to every cell of the confusion matrix when it estimates P(human | judge).
SMOOTHING = 0.5


@dataclass(frozen=True)
class LabelCandidate:
    """One proposed item: its ``rank`` (1 first), its row ``position`` in the input arrays, its
    ``item_id``, its ``slice`` (``None`` without slices), the ``score`` it was ranked by and the
    ``reason`` in words. Keep the score and reason away from annotators: they see only the order.
    """

    rank: int
    position: int
    item_id: str
    slice: str | None
    score: float
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "item_id": self.item_id,
            "slice": self.slice,
            "score": self.score,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class LabelNext:
    """The result of :func:`label_next`.

    ``items`` are the proposed items in order (at most ``n_requested``; fewer when fewer are
    eligible). ``value_now`` and ``half_width_now`` are the metric of the judge on the
    ``n_labelled`` items labelled so far and the half-width of its percentile bootstrap interval;
    ``half_width_after`` is the expected half-width once the batch is labelled (mean over
    ``n_sim`` simulated batches, see the module). With a second version (``compare``),
    ``mcnemar_p_now`` is McNemar's exact p-value of the two versions on the labelled items and
    ``mcnemar_p_after`` its median over the simulated batches: how far the batch goes to tell the
    versions apart (NaN without a second version).
    """

    metric: str
    metric_name: str
    n_requested: int
    n_eligible: int
    n_labelled: int
    items: tuple[LabelCandidate, ...]
    value_now: float
    half_width_now: float
    half_width_after: float
    compare: bool
    mcnemar_p_now: float
    mcnemar_p_after: float
    n_sim: int
    n_boot: int
    confidence: float
    seed: int

    @property
    def item_ids(self) -> tuple[str, ...]:
        """The proposed item ids in order: what an annotation queue follows."""
        return tuple(c.item_id for c in self.items)

    def summary(self) -> str:
        """What the batch buys, in one sentence.

        >>> LabelNext("cohen_kappa", "Cohen's kappa", 30, 80, 120, (), 0.6, 0.09, 0.05, False,
        ...     math.nan, math.nan, 50, 500, 0.95, 0).summary()
        "label these 30 and Cohen's kappa's interval goes from ±0.09 to about ±0.05"
        """
        n = len(self.items) if self.items else self.n_requested
        if not self.items and self.n_eligible == 0:
            return "there is no unlabelled item outside the test part to propose"
        text = (
            f"label these {n} and {self.metric_name}'s interval goes from "
            f"{_pm(self.half_width_now)} to about {_pm(self.half_width_after)}"
        )
        if self.compare and not math.isnan(self.mcnemar_p_after):
            text += (
                f"; McNemar's p between the versions goes from {self.mcnemar_p_now:.2g} to "
                f"about {self.mcnemar_p_after:.2g}"
            )
        return text

    def to_dict(self) -> dict[str, Any]:
        def num(x: float) -> float | None:
            return None if math.isnan(x) else float(x)

        return {
            "metric": self.metric,
            "n_requested": self.n_requested,
            "n_eligible": self.n_eligible,
            "n_labelled": self.n_labelled,
            "items": [c.to_dict() for c in self.items],
            "value_now": num(self.value_now),
            "half_width_now": num(self.half_width_now),
            "half_width_after": num(self.half_width_after),
            "compare": self.compare,
            "mcnemar_p_now": num(self.mcnemar_p_now),
            "mcnemar_p_after": num(self.mcnemar_p_after),
            "n_sim": self.n_sim,
            "n_boot": self.n_boot,
            "confidence": self.confidence,
            "seed": self.seed,
            "interval_method": "percentile bootstrap over the count table",
            "summary": self.summary(),
        }


def _pm(x: float) -> str:
    return "±–" if math.isnan(x) else f"±{x:.2f}"


def _optional_column(values: LabelArray | None, name: str, n: int) -> Any:
    if values is None:
        return None
    column = normalize_column(values, name)
    if len(column) != n:
        raise MetricError(f"{name} has {len(column)} rows; y_true has {n}")
    return column


def _members(values: npt.ArrayLike | pd.DataFrame | None, n: int) -> list[Any]:
    if values is None:
        return []
    frame = (
        values
        if isinstance(values, pd.DataFrame)
        else pd.DataFrame(np.asarray(values, dtype=object))
    )
    if frame.ndim != 2 or len(frame) != n:
        raise MetricError(f"y_members must have one row per item ({n}) and one column per member")
    return [
        normalize_column(frame.iloc[:, j].to_numpy(dtype=object), f"member {j}")
        for j in range(frame.shape[1])
    ]


def _half_width(
    fn: Any, table: IntArray, n_boot: int, confidence: float, rng: np.random.Generator
) -> float:
    if int(table.sum()) == 0:
        return math.nan
    values = fn(multinomial_tables(table, n_boot, rng))
    low, high = percentile_interval(values, confidence)
    return (high - low) / 2.0


def label_next(
    y_true: LabelArray,
    y_pred: LabelArray,
    *,
    n: int,
    metric: str = "cohen_kappa",
    y_conf: ConfidenceArray | None = None,
    y_other: LabelArray | None = None,
    y_members: npt.ArrayLike | pd.DataFrame | None = None,
    exclude: Sequence[bool] | npt.NDArray[np.bool_] | None = None,
    slices: Sequence[Any] | npt.NDArray[Any] | pd.Series | None = None,
    item_ids: Sequence[Any] | None = None,
    labels: LabelList = None,
    positive: Label | None = None,
    n_sim: int = 50,
    n_boot: int = 500,
    confidence: float = 0.95,
    seed: int = 0,
) -> LabelNext:
    """Propose the next ``n`` items to label for ``metric`` (a key of the declared table,
    :data:`~evalcore.metrics.CALIBRATION_METRICS`) of the judge ``y_pred`` against people
    ``y_true`` (missing where nobody labelled the item yet).

    Eligible: items without a human label, not ``exclude``-d (pass the stored test part here: its
    items are never proposed) and with a judge label. ``y_conf`` is the judge's confidence per item,
    ``y_members`` the labels of a jury's members (items x members) when the judge is a jury,
    ``y_other`` a second version under comparison; ``slices`` a slice value per item (the ranking
    is taken round-robin over the slices, best slice first); ``item_ids`` the ids to report (default
    the row positions). ``positive`` is the positive label of a binary metric (``tpr``/``tnr``).

    See the module for the scores and the simulation; ``n_sim`` simulated batches of human labels,
    each interval a percentile bootstrap of ``n_boot`` count-table resamples at ``confidence``,
    seeded by ``seed``.

    >>> r = label_next([1, 2, None, None, None], [1, 2, 1, 2, 2], n=2, metric="accuracy",
    ...     y_conf=[0.9, 0.9, 0.55, 0.99, 0.7], n_sim=5, n_boot=50)
    >>> r.item_ids, [round(c.score, 4) for c in r.items]  # 4 q (1 - q): q 0.55, then 0.7
    (('2', '4'), [0.99, 0.84])
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise MetricError(f"n must be a whole number of at least 1 (got {n!r})")
    if isinstance(n_sim, bool) or not isinstance(n_sim, int | np.integer) or n_sim < 1:
        raise MetricError(f"n_sim must be a whole number of at least 1 (got {n_sim!r})")
    check_bootstrap(n_boot, confidence, seed, allow_zero=False)
    declared = metric_def(metric)
    human_col = normalize_column(y_true, "y_true")
    rows = len(human_col)
    judge_col = _optional_column(y_pred, "y_pred", rows)
    other_col = _optional_column(y_other, "y_other", rows)
    member_cols = _members(y_members, rows)
    columns = [human_col, judge_col] + ([other_col] if other_col is not None else []) + member_cols
    names = ["y_true", "y_pred"] + (["y_other"] if other_col is not None else [])
    names += [f"member {j}" for j in range(len(member_cols))]
    axis, coded = encode_columns(columns, names, labels)
    k = len(axis)
    if k < 1:
        raise MetricError("there is no label at all: nothing to propose")
    human, judge = coded[0], coded[1]
    other = coded[2] if other_col is not None else None
    members = coded[3 if other is not None else 2 :]
    conf = np.full(rows, np.nan) if y_conf is None else confidence_values(y_conf)
    if len(conf) != rows:
        raise MetricError(f"y_conf has {len(conf)} rows; y_true has {rows}")
    excluded = np.zeros(rows, dtype=bool) if exclude is None else np.asarray(exclude, dtype=bool)
    if excluded.shape != (rows,):
        raise MetricError(f"exclude must have one value per item ({rows})")
    ids = [str(i) for i in range(rows)] if item_ids is None else [str(x) for x in item_ids]
    if len(ids) != rows:
        raise MetricError(f"item_ids has {len(ids)} values; y_true has {rows}")
    slice_of = _slice_values(slices, rows)
    pos_index = 0
    if positive is not None:
        wanted = normalize_label(positive)
        if wanted not in axis:
            raise MetricError(f"positive label {positive!r} is not one of the labels seen")
        pos_index = axis.index(wanted)

    def evaluate(tables: npt.ArrayLike) -> FloatArray:
        return declared.evaluate(tables, pos_index)

    # P(human = h | judge said j): the labelled items' table, half a count in every cell
    labelled = (human >= 0) & (judge >= 0)
    table = np.bincount(human[labelled] * k + judge[labelled], minlength=k * k).reshape(k, k)
    smoothed = table + SMOOTHING
    given_judge = smoothed / smoothed.sum(axis=0, keepdims=True)  # columns sum to 1

    # members' vote share for the judge's label, where no confidence is given
    vote_share = np.full(rows, np.nan)
    n_votes = np.zeros(rows, dtype=np.int64)
    if members:
        votes = np.stack(members, axis=1)
        n_votes = (votes >= 0).sum(axis=1)
        same = (votes == judge[:, None]) & (votes >= 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            vote_share = np.where(n_votes > 0, same.sum(axis=1) / n_votes, np.nan)
    q_source = np.where(~np.isnan(conf), 0, np.where(~np.isnan(vote_share), 1, 2))

    eligible = (human < 0) & ~excluded & (judge >= 0)
    at = np.flatnonzero(eligible)
    known = np.where(
        q_source[at] == 0, conf[at], np.where(q_source[at] == 1, vote_share[at], np.nan)
    )
    model = _human_model(given_judge, judge[at], known)  # rows: eligible items; columns: labels
    q = model[np.arange(len(at)), judge[at]]
    uncertainty = 4.0 * q * (1.0 - q)
    compare = other is not None
    if other is not None:
        o = other[at]
        differ = (o >= 0) & (o != judge[at])
        separate = np.where(
            differ,
            model[np.arange(len(at)), judge[at]] + model[np.arange(len(at)), np.maximum(o, 0)],
            0.0,
        )
        score = np.minimum(separate, 1.0)
    else:
        score = uncertainty

    # rank: score, then uncertainty, then input order; then round-robin over the slices
    order = np.lexsort((at, -uncertainty, -score))
    chosen = _round_robin(order, [slice_of[i] for i in at], int(n))
    shown = [format_label(x) for x in axis]

    def reason(j: int) -> str:
        item = int(at[j])
        parts = []
        said = shown[judge[item]]
        if other is not None and other[item] >= 0 and other[item] != judge[item]:
            parts.append(
                f"the versions disagree ({said} vs {shown[other[item]]}); exactly one is right "
                f"with probability {score[j]:.2f}"
            )
        if q_source[item] == 0:
            parts.append(f"the judge's confidence in {said} is {conf[item]:.2f}")
        elif q_source[item] == 1:
            agreeing = round(vote_share[item] * n_votes[item])
            parts.append(f"the jury is split: {agreeing} of {n_votes[item]} members gave {said}")
        else:
            parts.append(f"when the judge says {said}, people agree {q[j]:.0%} of the time so far")
        return "; ".join(parts)

    items = tuple(
        LabelCandidate(
            rank=r + 1,
            position=int(at[j]),
            item_id=ids[at[j]],
            slice=slice_of[at[j]],
            score=float(score[j]),
            reason=reason(j),
        )
        for r, j in enumerate(chosen)
    )

    # what the batch buys: simulate the batch's human labels from the model
    rng = np.random.default_rng(seed)
    value_now = float(evaluate(table)) if table.sum() else math.nan
    now = _half_width(evaluate, table, n_boot, confidence, rng)
    batch = np.asarray(chosen, dtype=np.int64)
    probabilities = model[batch] if len(batch) else np.zeros((0, k))
    draws = _draw_labels(probabilities, n_sim, rng)  # (n_sim, batch)
    batch_judge = judge[at[batch]] if len(batch) else np.zeros(0, dtype=np.int64)
    after = []
    for s in range(n_sim):
        added = np.bincount(draws[s] * k + batch_judge, minlength=k * k).reshape(k, k)
        after.append(_half_width(evaluate, table + added, n_boot, confidence, rng))
    p_now = p_after = math.nan
    if other is not None:
        both = labelled & (other >= 0)
        judge_right = both & (human == judge) & (human != other)
        other_right = both & (human == other) & (human != judge)
        p_now = mcnemar_exact_p(int(judge_right.sum()), int(other_right.sum()))
        batch_other = other[at[batch]] if len(batch) else np.zeros(0, dtype=np.int64)
        pair = batch_other >= 0
        p_values = []
        for s in range(n_sim):
            drawn = draws[s][pair]
            j_, o_ = batch_judge[pair], batch_other[pair]
            b = int(judge_right.sum()) + int(((drawn == j_) & (drawn != o_)).sum())
            c = int(other_right.sum()) + int(((drawn == o_) & (drawn != j_)).sum())
            p_values.append(mcnemar_exact_p(b, c))
        p_after = float(np.median(p_values))
    return LabelNext(
        metric=declared.key,
        metric_name=declared.name,
        n_requested=int(n),
        n_eligible=len(at),
        n_labelled=int(table.sum()),
        items=items,
        value_now=value_now,
        half_width_now=now,
        half_width_after=_mean(after),
        compare=compare,
        mcnemar_p_now=p_now,
        mcnemar_p_after=p_after,
        n_sim=int(n_sim),
        n_boot=int(n_boot),
        confidence=float(confidence),
        seed=int(seed),
    )


def _mean(values: Sequence[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return float(np.mean(finite)) if finite else math.nan


def _slice_values(slices: Any, rows: int) -> list[str | None]:
    if slices is None:
        return [None] * rows
    values = list(slices.to_numpy() if isinstance(slices, pd.Series) else slices)
    if len(values) != rows:
        raise MetricError(f"slices has {len(values)} values; y_true has {rows}")
    return [
        "(none)" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
        for v in values
    ]


def _human_model(given_judge: FloatArray, judged: IntArray, known: FloatArray) -> FloatArray:
    """Per item, the distribution of the human label over the axis: column ``judged[i]`` of
    ``given_judge`` (P(human | judge said it), from the labelled items); where ``known[i]`` (the
    judge's confidence or the jury's vote share) is given, the judge's own label gets that
    probability and the rest is spread as the column's other cells are (evenly when they are
    empty)."""
    k = given_judge.shape[0]
    model = np.array(given_judge[:, judged].T, dtype=np.float64)
    has = ~np.isnan(known)
    if not has.any() or k == 1:
        return model
    rows = np.arange(int(has.sum()))
    rest = model[has]
    rest[rows, judged[has]] = 0.0
    total = rest.sum(axis=1, keepdims=True)
    rest = np.divide(rest, total, out=np.full_like(rest, 1.0 / (k - 1)), where=total > 0)
    rest[rows, judged[has]] = 0.0
    rest *= (1.0 - known[has])[:, None]
    rest[rows, judged[has]] = known[has]
    model[has] = rest
    return model


def _round_robin(order: IntArray, slice_of: Sequence[str | None], n: int) -> list[int]:
    """Take ``n`` of ``order`` (indices, best first) in turns over the slices: each slice's best
    not yet taken, the slices in the order of their best item."""
    queues: dict[str | None, list[int]] = {}
    for j in order.tolist():
        queues.setdefault(slice_of[j], []).append(j)
    lanes = list(queues.values())  # dict order: the slice of the best item first
    chosen: list[int] = []
    depth = 0
    while len(chosen) < n and any(depth < len(lane) for lane in lanes):
        for lane in lanes:
            if depth < len(lane) and len(chosen) < n:
                chosen.append(lane[depth])
        depth += 1
    return chosen


def _draw_labels(probabilities: FloatArray, n_sim: int, rng: np.random.Generator) -> IntArray:
    """``n_sim`` draws of one label per row of ``probabilities`` (rows sum to 1): shape
    ``(n_sim, rows)``, by inverting each row's cumulative distribution."""
    rows, _k = probabilities.shape
    if rows == 0:
        return np.zeros((n_sim, 0), dtype=np.int64)
    cumulative = np.cumsum(probabilities, axis=1)
    cumulative[:, -1] = 1.0
    u = rng.random((n_sim, rows, 1))
    return np.asarray((u > cumulative[None, :, :]).sum(axis=2), dtype=np.int64)
