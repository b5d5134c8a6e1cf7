"""Where to start: the caller's own queues (an annotator sees nothing else), or the project at a
glance for those who read it."""

from __future__ import annotations

from dataclasses import dataclass

from evalcore.store import CriterionRecord, DatasetRecord, ProjectRecord
from evalcore.workflows._session import Session, caller

__all__ = ["Overview", "QueueCard", "overview"]


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
