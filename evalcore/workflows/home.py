"""Where to start: the caller's own queues (an annotator sees nothing else), or the project at a
glance for those who read it."""

from __future__ import annotations

from dataclasses import dataclass

from evalcore.store import CriterionRecord, DatasetRecord, ProjectRecord
from evalcore.workflows import reports
from evalcore.workflows._session import Session, caller

__all__ = ["FirstStep", "Overview", "QueueCard", "Trust", "first_steps", "overview", "trust"]


@dataclass(frozen=True)
class QueueCard:
    """One of the caller's queues: how far they are."""

    dataset: DatasetRecord
    criterion: CriterionRecord
    done: int
    total: int

    @property
    def share(self) -> float:
        return self.done / self.total if self.total else 0.0


@dataclass(frozen=True)
class Overview:
    """The Home page's content for the caller in one project."""

    project: ProjectRecord
    datasets: tuple[DatasetRecord, ...]
    criteria: tuple[CriterionRecord, ...]
    queues: tuple[QueueCard, ...]
    n_runs: int | None
    can_read: bool
    can_manage: bool
    can_annotate: bool


def overview(session: Session, project_id: int) -> Overview:
    """The project's datasets and criteria; the caller's queues when they annotate and may not
    read the project; the number of judge runs when they may."""
    who = caller(session)
    actor = who.actor
    project = who.store.get_project(project_id)
    datasets = tuple(who.store.list_datasets(project_id, latest_only=True))
    criteria = tuple(who.store.list_criteria(project_id))
    can_read = actor.can("read", project_id)
    cards: list[QueueCard] = []
    if not can_read and actor.can("annotate", project_id):
        for dataset in datasets:
            for criterion in criteria:
                if criterion.kind != dataset.kind:
                    continue
                status = who.store.queue_status(dataset.id, criterion.id, who.name, team=False)
                cards.append(
                    QueueCard(dataset, criterion, status.done, status.total or dataset.n_items)
                )
    return Overview(
        project=project,
        datasets=datasets,
        criteria=criteria,
        queues=tuple(cards),
        n_runs=len(who.store.list_runs(project_id=project_id)) if can_read else None,
        can_read=can_read,
        can_manage=actor.can("manage", project_id),
        can_annotate=actor.can("annotate", project_id),
    )


@dataclass(frozen=True)
class Trust:
    """ "Can I trust this judge?" for one criterion: the best run's light and one line, or what is
    missing (``light == "none"``)."""

    criterion: str
    light: str
    line: str


def trust(session: Session, project_id: int) -> tuple[Trust, ...]:
    """Per criterion of the project: its best run's light against the project's thresholds (the
    rule of :func:`evalcore.report.verdict`) and one line saying why, or what is missing: no judge
    run yet, or no human label to compare with."""
    who = caller(session)
    who.store.authorize("read", project_id=project_id)
    criteria = who.store.list_criteria(project_id)
    runs = who.store.list_runs(project_id=project_id)
    found = reports.project_report(session, project_id)
    by_criterion: dict[int, list[reports.CriterionSummary]] = {}
    if found.summary is not None:
        for row in found.summary.criteria:
            by_criterion.setdefault(row.criterion.id, []).append(row)
    out = []
    for criterion in criteria:
        rows = [r for r in by_criterion.get(criterion.id, []) if r.best is not None]
        if not any(r.criterion_id == criterion.id for r in runs):
            out.append(
                Trust(criterion.name, "none", "No judge run yet: run a judge on the Judge page.")
            )
            continue
        if not rows:
            out.append(Trust(criterion.name, "none",
                             "No human label to compare the judge with yet: rate items on the Annotate page."))  # fmt: skip
            continue
        order = {"green": 0, "amber": 1, "red": 2, "none": 3}
        best = min(rows, key=lambda r: order[r.verdict.light])
        assert best.best is not None
        line = f"{best.best.title} on {best.dataset.name}: {best.verdict.words}"
        out.append(Trust(criterion.name, best.verdict.light, line))
    return tuple(out)


@dataclass(frozen=True)
class FirstStep:
    """One numbered first step: what to do, the page to do it on (``None`` when the caller may not
    open it: someone else does it), and whether it is done."""

    number: int
    text: str
    page: str | None
    done: bool


def first_steps(session: Session, project_id: int) -> tuple[FirstStep, ...]:
    """The four first steps of a project (import a dataset, label, run a judge, calibrate), each
    naming its page when the caller may open it; empty once the project has a dataset and a run."""
    who = caller(session)
    actor = who.actor
    datasets = who.store.list_datasets(project_id, latest_only=True)
    runs = who.store.list_runs(project_id=project_id)
    if datasets and runs:
        return ()
    manage = actor.can("manage", project_id)
    steps = (
        ("Import a dataset of prompts and responses", "datasets" if manage else None, bool(datasets)),
        ("Label some items yourself (people are the reference)",
         "annotate" if actor.can("annotate", project_id) else None, False),
        ("Run a judge template over the dataset", "judge" if manage else None, bool(runs)),
        ("Calibrate: compare the judge with the people",
         "calibrate" if actor.can("read", project_id) else None, False),
    )  # fmt: skip
    return tuple(FirstStep(i, text, page, done) for i, (text, page, done) in enumerate(steps, 1))
