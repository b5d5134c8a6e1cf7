"""Trust or escalate, and what to label next: the Calibrate page's confidence section.

:func:`confidence` shows, for each run of a (dataset, criterion), how well the judge's confidence
is calibrated (ECE, Brier, the reliability diagram) and where the judge can decide alone: the
threshold chosen on the dev part of a split, what it gives on the test part, and the curve of
coverage against agreement (:func:`evalcore.report.confidence_view`). :func:`escalate` puts the
items below that threshold into the annotation queue (:func:`evalcore.runs.escalate`);
:func:`label_next` proposes the next items to label and what they buy, and
:func:`queue_label_next` makes them the queue's order. Annotators see only the order.

The split is the saved one of the test share and seed (the prompt optimiser's,
:func:`evalcore.runs.split_name`) when there is one, else a seeded, stratified split of the items
labelled now (:func:`evalcore.improve.make_split`), not saved: reading writes nothing.

The settings, their defaults and bounds are :data:`SETTINGS`; the pages show them from there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Final

from evalcore import report as R
from evalcore import runs
from evalcore.errors import ConfigError, NotFoundError
from evalcore.improve import Split, SplitTooSmallError, make_split
from evalcore.metrics import MIN_DECIDED, headline_kappa
from evalcore.words import plural
from evalcore.workflows._session import Caller, Session, caller
from evalcore.workflows.calibrate import Selection, _calibrated

__all__ = [
    "NO_CONFIDENCE",
    "SETTINGS",
    "ConfidenceSettings",
    "ConfidenceView",
    "Escalated",
    "LabelNextView",
    "RunTrust",
    "Setting",
    "confidence",
    "escalate",
    "label_metrics",
    "label_next",
    "queue_label_next",
]

#: Why a run has nothing to show, and how to get confidences.
NO_CONFIDENCE: Final = (
    "no verdict of this run has a confidence: run the judge with --logprobs (or logprobs = true in "
    "the template), with several samples (--samples N), or make a jury of several runs "
    "(evalcore judge jury)"
)


@dataclass(frozen=True)
class Setting:
    """One setting of the section: its default and bounds (inclusive), as the inputs show them."""

    label: str
    default: float
    low: float
    high: float
    step: float
    help: str


#: The section's settings; the selective procedure's minimum is the library's MIN_DECIDED.
SETTINGS: Final[dict[str, Setting]] = {
    "target_agreement": Setting(
        "target agreement", 0.9, 0.5, 0.99, 0.01,
        "the agreement with people the judge must reach on the items it decides alone",
    ),
    "risk": Setting(
        "risk", 0.05, 0.01, 0.2, 0.01,
        "the chance that the guarantee fails (one-sided Clopper–Pearson bound at 1 − risk)",
    ),
    "bins": Setting("bins", 10, 2, 30, 1, "equal-width bins of the ECE and the reliability diagram"),
    "min_decided": Setting(
        "fewest decided", MIN_DECIDED, 1, 1000, 1,
        "thresholds that decide fewer dev items than this are skipped",
    ),
    "test_share": Setting(
        "test share", 0.4, 0.1, 0.9, 0.05, "share of the labelled items in the test part"
    ),
    "split_seed": Setting("split seed", 0, 0, 2**31 - 1, 1, "seed of the dev/test split"),
    "n": Setting("items to label", 30, 1, 500, 1, "how many items to propose"),
}  # fmt: skip


def _check(name: str, value: float) -> None:
    s = SETTINGS[name]
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ConfigError(f"the {s.label} must be a number, not {value!r}")
    if not s.low <= value <= s.high or (s.step == 1 and value != int(value)):
        kind = "a whole number" if s.step == 1 else "a number"
        raise ConfigError(
            f"the {s.label} must be {kind} from {s.low:g} to {s.high:g}, not {value!r}"
        )


@dataclass(frozen=True)
class ConfidenceSettings:
    """The settings of one view (each checked against :data:`SETTINGS`)."""

    target_agreement: float = SETTINGS["target_agreement"].default
    risk: float = SETTINGS["risk"].default
    bins: int = int(SETTINGS["bins"].default)
    min_decided: int = MIN_DECIDED
    test_share: float = SETTINGS["test_share"].default
    split_seed: int = int(SETTINGS["split_seed"].default)

    def __post_init__(self) -> None:
        for name in ("target_agreement", "risk", "bins", "min_decided", "test_share", "split_seed"):
            _check(name, getattr(self, name))


@dataclass(frozen=True)
class RunTrust:
    """One run's confidence: ``summary`` and the figures, or ``missing`` (why there is nothing).

    ``sentence`` is what the judge decides ("decides 78% of items at ≥ 90% agreement; people get
    the other 22%"), ``threshold`` the confidence chosen on dev (``None``: none passed),
    ``to_escalate`` how many items an escalation would send now (no human label yet, and below
    the threshold or without a verdict or confidence)."""

    run_id: int
    title: str
    missing: str | None = None
    summary: R.ConfidenceSummary | None = None
    selective: R.SelectiveReport | None = None
    reliability: Any = None
    coverage: Any = None
    notes: tuple[str, ...] = ()
    to_escalate: int = 0

    @property
    def sentence(self) -> str | None:
        return None if self.selective is None else self.selective.sentence()

    @property
    def threshold(self) -> float | None:
        return None if self.selective is None else self.selective.threshold


@dataclass(frozen=True)
class ConfidenceView:
    """Every run's :class:`RunTrust`, the settings and the split they were computed on."""

    runs: tuple[RunTrust, ...]
    settings: ConfidenceSettings
    split: str
    #: whether the caller may escalate and queue (the "manage" permission); the commands decide
    may_manage: bool = False

    def run(self, run_id: int) -> RunTrust:
        for found in self.runs:
            if found.run_id == run_id:
                return found
        raise NotFoundError(f"run {run_id} is not in this comparison")


def _selection(
    who: Caller, project_id: int, dataset_id: int, criterion_id: int, run_ids: tuple[int, ...]
) -> Selection:
    dataset = who.store.get_dataset(dataset_id)
    if dataset.project_id != project_id:
        raise NotFoundError(f"dataset {dataset_id} is not in project {project_id}")
    for run_id in run_ids:
        run = who.store.get_run(run_id)
        if (run.dataset_id, run.criterion_id) != (dataset_id, criterion_id):
            raise ConfigError(
                f"run {run.name!r} (run {run_id}) judges another dataset or criterion"
            )
    return Selection(dataset_id, criterion_id, run_ids)


def _split(who: Caller, calibration: R.Calibration, s: ConfidenceSettings) -> tuple[Any, str]:
    """The saved split of this share and seed, else a fresh seeded one (``None`` when too few
    items are labelled), and how it is described."""
    data = calibration.data
    name = runs.split_name(s.test_share, s.split_seed)
    try:
        saved = who.store.get_split(data.dataset.id, data.criterion.id, name)
        return saved, f"saved split {name!r}: {len(saved.dev)} dev, {len(saved.test)} test items"
    except NotFoundError:
        pass
    human = calibration.human
    labelled = human.notna().to_numpy()
    ids = data.items["item_id"].reindex(human.index).astype(str)
    try:
        split: Split = make_split(
            list(ids[labelled]),
            list(human[labelled]),
            test_share=s.test_share,
            seed=s.split_seed,
            name=name,
        )
    except SplitTooSmallError as exc:
        return None, f"no dev/test split: {exc}"
    return split, (
        f"seeded split (seed {s.split_seed}) of the {int(labelled.sum())} labelled items: "
        f"{len(split.dev)} dev, {len(split.test)} test"
    )


def _pending(calibration: R.Calibration, run_id: int, threshold: float) -> int:
    """Items without a human label that escalating at ``threshold`` would send."""
    results = calibration.data.run(run_id).results
    # like evalcore.runs.escalate: an item any annotator labelled is left out, and so is an item
    # the run has no result on (not the run's to escalate)
    unlabelled = ~calibration.data.human.reindex(results.index).notna().any(axis=1)
    conf = results.get(R.CONFIDENCE_COLUMN)
    if conf is None:
        return 0
    ok = results["status"] == "ok"
    judged = results["status"] != "missing"
    send = judged & (~ok | conf.isna() | (conf < threshold))
    return int((send & unlabelled).sum())


def _view(who: Caller, sel: Selection, s: ConfidenceSettings) -> ConfidenceView:
    calibration, settled, version = _calibrated(who, sel)
    split, described = _split(who, calibration, s)
    parts = None if split is None else (tuple(split.dev), tuple(split.test))

    def make() -> ConfidenceView:
        view = R.confidence_view(
            calibration,
            split=split,
            n_bins=s.bins,
            target=s.target_agreement,
            risk=s.risk,
            min_decided=s.min_decided,
            recalibration=None,
        )
        out = []
        for run in view.runs:
            run_id = run.info.id
            if run.summary is None:
                out.append(RunTrust(run_id, run.title, missing=NO_CONFIDENCE))
                continue
            chosen = run.selective
            pending = 0
            if chosen is not None and chosen.threshold is not None:
                pending = _pending(calibration, run_id, chosen.threshold)
            out.append(
                RunTrust(
                    run_id,
                    run.title,
                    summary=run.summary,
                    selective=chosen,
                    reliability=R.reliability_figure([run]),
                    coverage=None if chosen is None else R.coverage_figure([chosen]),
                    notes=run.notes,
                    to_escalate=pending,
                )
            )
        return ConfidenceView(tuple(out), s, described)

    return who.server.memo.get(("trust", version, settled, s, parts), make)  # type: ignore[no-any-return]


def confidence(
    session: Session,
    project_id: int,
    dataset_id: int,
    criterion_id: int,
    run_ids: tuple[int, ...] | list[int],
    *,
    target_agreement: float = SETTINGS["target_agreement"].default,
    risk: float = SETTINGS["risk"].default,
    bins: int = int(SETTINGS["bins"].default),
    min_decided: int = MIN_DECIDED,
    test_share: float = SETTINGS["test_share"].default,
    split_seed: int = int(SETTINGS["split_seed"].default),
) -> ConfidenceView:
    """The confidence of each run against the people's labels (see the module). Needs "read"."""
    who = caller(session)
    settings = ConfidenceSettings(target_agreement, risk, bins, min_decided, test_share, split_seed)
    sel = _selection(who, project_id, dataset_id, criterion_id, tuple(run_ids))
    return replace(_view(who, sel, settings), may_manage=who.actor.can("manage", project_id))


@dataclass(frozen=True)
class Escalated:
    """What an escalation sent to people: ``sent`` items (``undecided`` of them without a verdict
    or a confidence, ``below`` under the ``threshold``); ``labelled`` were left out."""

    run_id: int
    threshold: float
    sent: int
    below: int
    undecided: int
    labelled: int

    def sentence(self) -> str:
        if not self.sent:
            return "No item needed people: every item below the threshold is labelled already."
        return (
            f"{plural(self.sent, 'item')} went to the annotation queue, least confident first; "
            "annotators get them next."
        )


def escalate(
    session: Session,
    project_id: int,
    dataset_id: int,
    criterion_id: int,
    run_id: int,
    *,
    settings: ConfidenceSettings | None = None,
) -> Escalated:
    """Put the items of ``run_id`` below the threshold the view chose (with ``settings``), and the
    items it could not decide, into the criterion's annotation queue, least confident first.
    Needs "manage"; refused when no threshold passed."""
    who = caller(session)
    who.store.authorize("manage", dataset_id=dataset_id)
    sel = _selection(who, project_id, dataset_id, criterion_id, (run_id,))
    found = _view(who, sel, settings or ConfidenceSettings()).run(run_id)
    if found.missing is not None:
        raise ConfigError(f"{found.title}: {found.missing}")
    if found.threshold is None:
        raise ConfigError(
            f"{found.title}: no confidence threshold reaches the target on dev, so there is no "
            "line between the judge and people; label more items or lower the target"
        )
    done = runs.escalate(
        who.store,  # type: ignore[arg-type]
        run_id,
        threshold=found.threshold,
        criterion_id=criterion_id,
        author=who.name,
    )
    return Escalated(
        run_id, found.threshold, len(done.item_ids), done.below, done.undecided, done.labelled
    )


@dataclass(frozen=True)
class LabelNextView:
    """The next items to label for one run and metric: their database ids (``item_pks``) and the
    dataset's ids, in order, and what the batch buys (``sentence``)."""

    run_id: int
    metric: str
    metric_name: str
    item_pks: tuple[int, ...]
    item_ids: tuple[str, ...]
    sentence: str
    split: str


def label_metrics(kind: str) -> dict[str, str]:
    """The metrics a batch can be proposed for, key -> name, the headline kappa first."""
    names = dict(R.slice_metrics(kind))
    first = headline_kappa(kind).key
    return {first: names.get(first, first), **{k: v for k, v in names.items() if k != first}}


def _proposal(
    who: Caller, sel: Selection, run_id: int, n: int, metric: str | None, s: ConfidenceSettings
) -> LabelNextView:
    _check("n", n)
    calibration, settled, version = _calibrated(who, sel)
    choices = label_metrics(calibration.kind)
    key = metric or next(iter(choices))
    if key not in choices:
        raise ConfigError(
            f"no metric {key!r} for this criterion (choose from {', '.join(choices)})"
        )
    split, described = _split(who, calibration, s)
    parts = None if split is None else (tuple(split.dev), tuple(split.test))

    def make() -> LabelNextView:
        found = R.run_label_next(calibration, run_id, n=int(n), metric=key, split=split)
        index = calibration.human.index
        pks = tuple(int(index[c.position]) for c in found.items)
        return LabelNextView(
            run_id, key, found.metric_name, pks, found.item_ids, found.summary(), described
        )

    memo_key = ("label-next", version, settled, run_id, int(n), key, s, parts)
    return who.server.memo.get(memo_key, make)  # type: ignore[no-any-return]


def label_next(
    session: Session,
    project_id: int,
    dataset_id: int,
    criterion_id: int,
    run_id: int,
    *,
    n: int = int(SETTINGS["n"].default),
    metric: str | None = None,
    settings: ConfidenceSettings | None = None,
) -> LabelNextView:
    """The next ``n`` items to label for ``metric`` of ``run_id`` (default the headline kappa),
    never an item of the test part, and what the batch buys. Needs "read"."""
    who = caller(session)
    sel = _selection(who, project_id, dataset_id, criterion_id, (run_id,))
    return _proposal(who, sel, run_id, n, metric, settings or ConfidenceSettings())


def queue_label_next(
    session: Session,
    project_id: int,
    dataset_id: int,
    criterion_id: int,
    run_id: int,
    *,
    n: int = int(SETTINGS["n"].default),
    metric: str | None = None,
    settings: ConfidenceSettings | None = None,
) -> int:
    """Make the proposed batch the annotation queue's order (source "label_next"); annotators get
    those items next, without seeing why. Returns how many items were queued. Needs "manage"."""
    who = caller(session)
    who.store.authorize("manage", dataset_id=dataset_id)
    sel = _selection(who, project_id, dataset_id, criterion_id, (run_id,))
    found = _proposal(who, sel, run_id, n, metric, settings or ConfidenceSettings())
    if not found.item_pks:
        raise ConfigError(f"nothing to queue: {found.sentence}")
    who.store.save_queue_order(
        dataset_id,
        criterion_id,
        f"label next for run {run_id} ({found.metric})",
        list(found.item_pks),
        reason=found.sentence,
        source="label_next",
        author=who.name,
        activate=True,
    )
    return len(found.item_pks)
