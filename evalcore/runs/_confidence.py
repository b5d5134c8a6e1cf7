"""Juries and escalation over the store: what a run's confidence is for.

- :func:`create_jury` saves a run combined from other runs of the same dataset and criterion
  (majority, mean or weighted votes, :func:`evalcore.judge.jury_results`); it is stored as a run
  with ``source="jury"`` and its members (``store.jury_members``), so every calibration reads it
  like any run, and can put each member beside it.
- :func:`escalate` puts the items a run is least sure of into the annotation queue of its dataset
  and criterion: a saved, active queue order (``store.save_queue_order``) of the items below a
  confidence threshold, lowest confidence first. Annotators see the items, never why or in which
  rank; their labels are ordinary annotations and flow back into every calibration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from evalcore.errors import ConfigError
from evalcore.judge import JudgeResult, JuryMethod, check_jury, jury_results, member_verdicts
from evalcore.labels import Label, Scale
from evalcore.runs._io import result_input
from evalcore.store import JudgeRunRecord, QueueOrderRecord, Store

__all__ = ["Escalation", "create_jury", "escalate", "jury_member_ids"]


def _member_results(frame: pd.DataFrame, scale: Scale) -> list[JudgeResult]:
    """A stored run's results as the runner's results, keyed by the item's database id."""
    labels: dict[object, Label | None] = {}
    out = []
    for pk, order, status, text in zip(
        frame["item_pk"].tolist(),
        frame["order"].tolist(),
        frame["status"].tolist(),
        frame["label"].tolist(),
        strict=True,
    ):
        if text not in labels:
            try:
                labels[text] = None if text is None else scale.coerce(text)
            except ValueError:
                labels[text] = None
        label = labels[text]
        out.append(
            JudgeResult(
                item_id=str(int(pk)),
                order=order,
                status=status if label is not None or status != "ok" else "unparsed",
                label=label,
            )
        )
    return out


def create_jury(
    store: Store,
    members: Sequence[int],
    *,
    name: str | None = None,
    method: JuryMethod = "majority",
    weights: Sequence[float] | None = None,
) -> JudgeRunRecord:
    """Save a jury of ``members`` (run ids of one dataset and criterion) as a finished run.

    Each member's verdict on an item is its first-order result (a ``flip`` run's only one); an
    item a member lacks, or did not answer, is missing for it, not a vote. The jury has one result
    per item that any member judged: ``ok`` with the combined label, its ``probabilities`` (the
    vote shares) and its ``confidence`` (the share that agrees with the label), or ``failed``
    when no member gave a label. ``weights`` are one positive number per member, for
    ``method="weighted"`` (and, optionally, a weighted ``"mean"``).

    Raises :class:`~evalcore.errors.ConfigError` before saving anything when the members are fewer
    than two, of different datasets or criteria, or the method does not fit the scale.
    """
    runs = [store.get_run(int(m)) for m in members]
    if not runs:
        raise ConfigError("a jury needs at least two member runs, not 0")
    first = runs[0]
    for run in runs[1:]:
        if (run.dataset_id, run.criterion_id) != (first.dataset_id, first.criterion_id):
            raise ConfigError(
                f"jury member {run.name!r} (run {run.id}) judges another dataset or criterion "
                f"than {first.name!r} (run {first.id}); a jury's members judge the same items"
            )
    scale = store.get_criterion(first.criterion_id).scale
    check_jury(len(runs), scale, method=method, weights=weights)
    verdicts = []
    for run in runs:
        store.authorize("read", run_id=run.id)
        verdicts.append(member_verdicts(_member_results(store.results_frame(run.id), scale)))
    item_ids = sorted({i for member in verdicts for i in member}, key=int)
    results = jury_results(
        verdicts,
        item_ids,
        scale,
        names=[str(run.id) for run in runs],
        method=method,
        weights=weights,
    )
    title = name or f"jury of {', '.join(run.name for run in runs)} ({method})"
    return store.create_jury_run(
        first.dataset_id,
        first.criterion_id,
        name=title,
        members=[run.id for run in runs],
        weights=None if weights is None else [float(w) for w in weights],
        settings={"jury": {"method": method}},
        results=[result_input(r, int(r.item_id)) for r in results],
    )


def jury_member_ids(store: Store, run_ids: Sequence[int]) -> list[int]:
    """``run_ids`` with each jury's members right after it (each run once), so a calibration
    shows every member beside its jury."""
    out: list[int] = []
    for run_id in run_ids:
        for found in (run_id, *(m.member_run_id for m in store.jury_members(run_id))):
            if found not in out:
                out.append(found)
    return out


@dataclass(frozen=True)
class Escalation:
    """What :func:`escalate` put into the annotation queue.

    ``order`` is the saved queue order (None when no item needed people). Of the items sent,
    ``undecided`` are those the judge gave no verdict (unparsed or failed) or a verdict without a
    confidence, and ``below`` those whose confidence is below the threshold; ``labelled`` counts
    the items left out because they already have a human label.
    """

    run_id: int
    threshold: float
    order: QueueOrderRecord | None
    below: int
    undecided: int
    labelled: int

    @property
    def item_ids(self) -> tuple[int, ...]:
        """The escalated items (database ids) in the queue's order."""
        return () if self.order is None else self.order.item_ids


def escalate(
    store: Store,
    run_id: int,
    *,
    threshold: float,
    criterion_id: int | None = None,
    name: str | None = None,
    author: str = "",
    include_undecided: bool = True,
    skip_labelled: bool = True,
    activate: bool = True,
) -> Escalation:
    """Put the items of run ``run_id`` whose confidence is below ``threshold`` into the
    annotation queue of the run's dataset and criterion, lowest confidence first.

    An item's confidence is its lowest among the run's results on it (both orders of a pairwise
    run); ties keep dataset order. Unless ``include_undecided=False``, the items the judge could
    not decide go first, in dataset order: no verdict (unparsed or failed), then a verdict whose
    confidence is unknown (its logprobs did not show the label). Items without a result are not
    the run's to escalate. Items that already have a human label of the criterion are left out
    (``skip_labelled``). The order is saved under ``name`` (default "escalation of run N below T";
    saving again replaces it) and, with ``activate``, annotators' next claims follow it (see
    :meth:`evalcore.store.Store.save_queue_order`).

    Raises :class:`~evalcore.errors.ConfigError` for a threshold outside [0, 1], a criterion that
    is not the run's, or a run with no confidence at all (ask the endpoint for logprobs, take
    several samples, or make a jury).
    """
    if not (isinstance(threshold, int | float) and 0.0 <= float(threshold) <= 1.0):
        raise ConfigError(f"an escalation threshold is a confidence in [0, 1], not {threshold!r}")
    threshold = float(threshold)
    run = store.get_run(run_id)
    if criterion_id is not None and criterion_id != run.criterion_id:
        criterion = store.get_criterion(criterion_id)
        raise ConfigError(
            f"run {run.name!r} (run {run.id}) judges another criterion than {criterion.name!r}"
        )
    store.authorize("read", run_id=run.id)
    frame = store.results_frame(run.id)
    verdicts = frame["status"] == "ok"
    if verdicts.any() and frame.loc[verdicts, "confidence"].isna().all():
        raise ConfigError(
            f"run {run.name!r} (run {run.id}) has no confidence on any verdict: ask the endpoint "
            "for logprobs, take several samples, or make a jury"
        )
    if frame.empty:
        return Escalation(run.id, threshold, None, 0, 0, 0)
    per_item = (
        frame.assign(unknown=verdicts & frame["confidence"].isna())
        .groupby("item_pk", sort=False)
        .agg(
            position=("position", "min"),
            ok=("status", lambda s: bool((s == "ok").all())),
            unknown=("unknown", "any"),
            confidence=("confidence", "min"),
        )
    )
    labelled: set[int] = set()
    if skip_labelled:
        matrix = store.annotation_matrix(run.dataset_id, run.criterion_id)
        humans = set(matrix.index[matrix.notna().any(axis=1)].astype(str))
        external = frame.drop_duplicates("item_pk").set_index("item_pk")["item_id"]
        labelled = {int(pk) for pk, ext in external.items() if str(ext) in humans}
    by_position = per_item.sort_values("position", kind="stable")
    undecided: list[int] = []
    if include_undecided:
        no_verdict = by_position[~by_position["ok"]]
        unknown = by_position[by_position["ok"] & by_position["unknown"]]
        undecided = [int(i) for i in (*no_verdict.index, *unknown.index)]
    low = by_position[
        by_position["ok"] & ~by_position["unknown"] & (by_position["confidence"] < threshold)
    ]
    below = [int(i) for i in low.sort_values("confidence", kind="stable").index]
    left_out = sum(1 for i in (*undecided, *below) if i in labelled)
    undecided = [i for i in undecided if i not in labelled]
    below = [i for i in below if i not in labelled]
    if not undecided and not below:
        return Escalation(run.id, threshold, None, 0, 0, left_out)
    parts = [f"{len(below)} with confidence below {float(threshold):.3g}, lowest first"]
    if undecided:
        parts.insert(0, f"{len(undecided)} the judge could not decide, first")
    order = store.save_queue_order(
        run.dataset_id,
        run.criterion_id,
        name or f"escalation of run {run.id} below {float(threshold):.3g}",
        [*undecided, *below],
        reason=f"escalated from run {run.name!r} (run {run.id}): " + "; ".join(parts),
        source="escalation",
        author=author,
        activate=activate,
    )
    return Escalation(run.id, threshold, order, len(below), len(undecided), left_out)
