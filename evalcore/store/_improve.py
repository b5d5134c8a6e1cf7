"""Optimisation jobs: an "Improve" run of a template over a dataset's labels (migration 0008).

A job row records what was asked (the starting version, the judge and optimiser endpoints and
models, the optimisation settings), how far it got (``progress``: phase, done/total, requests and
cost so far) and, once it ends, the report as JSON. The job itself is carried out by
:mod:`evalcore.runs` in the server's background worker; pages only read the row. Every method takes
the job's dataset, so the access rule of the dataset decides who may read or change a job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any, Literal, TypeAlias

from sqlalchemy import (
    JSON,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    select,
    update,
)
from sqlalchemy.orm import Mapped, mapped_column

from evalcore.errors import ConfigError, NotFoundError
from evalcore.store._base import StoreBase
from evalcore.store._models import Base, Criterion, Dataset, UTCDateTime, utcnow

__all__ = ["IMPROVE_STATUSES", "ImproveJobRecord", "ImproveMixin", "ImproveStatus"]

ImproveStatus: TypeAlias = Literal[
    "pending", "running", "cancelling", "done", "cancelled", "failed"
]
IMPROVE_STATUSES: tuple[str, ...] = (
    "pending",
    "running",
    "cancelling",
    "done",
    "cancelled",
    "failed",
)
_TERMINAL = frozenset({"done", "cancelled", "failed"})
_MAX_ERROR = 2_000


class ImproveJob(Base):
    """One optimisation of a template version against a dataset's human labels."""

    __tablename__ = "improve_jobs"
    __table_args__ = (
        CheckConstraint(
            "status IN ('pending', 'running', 'cancelling', 'done', 'cancelled', 'failed')",
            name="status",
        ),
        Index(None, "dataset_id", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    criterion_id: Mapped[int] = mapped_column(ForeignKey("criteria.id", ondelete="CASCADE"))
    template_version_id: Mapped[int] = mapped_column(
        ForeignKey("template_versions.id", ondelete="CASCADE")
    )
    status: Mapped[str] = mapped_column(String(16), default="pending")
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    progress: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    report: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)
    author: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # who carries the job out, until when (migration 0009; see evalcore.store._leases)
    lease_owner: Mapped[str | None] = mapped_column(String(200))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


@dataclass(frozen=True)
class ImproveJobRecord:
    """An optimisation job as last saved (``report`` is the report's JSON once it ended)."""

    id: int
    project_id: int
    dataset_id: int
    criterion_id: int
    template_version_id: int
    status: ImproveStatus
    settings: dict[str, Any]
    progress: dict[str, Any]
    report: dict[str, Any] | None
    error: str | None
    author: str
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None
    #: the worker carrying the job out and until when it holds it (see evalcore.store._leases)
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None

    @property
    def is_terminal(self) -> bool:
        """Over: done, cancelled or failed."""
        return self.status in _TERMINAL


def _record(row: ImproveJob) -> ImproveJobRecord:
    values = {f.name: getattr(row, f.name) for f in fields(ImproveJobRecord)}
    values["settings"] = dict(row.settings or {})
    values["progress"] = dict(row.progress or {})
    values["report"] = dict(row.report) if row.report is not None else None
    return ImproveJobRecord(**values)


class ImproveMixin(StoreBase):
    """Optimisation jobs (``Store`` mixes this in)."""

    def create_improve_job(
        self,
        dataset_id: int,
        criterion_id: int,
        template_version_id: int,
        *,
        settings: Mapping[str, Any],
        author: str = "",
    ) -> ImproveJobRecord:
        """Register a pending optimisation of a template version on a dataset and criterion."""
        with self._write() as s:
            dataset = s.get(Dataset, dataset_id)
            if dataset is None:
                raise NotFoundError(f"Dataset {dataset_id} does not exist.")
            criterion = s.get(Criterion, criterion_id)
            if criterion is None or criterion.project_id != dataset.project_id:
                raise ConfigError(f"Criterion {criterion_id} is not one of the dataset's project.")
            row = ImproveJob(
                project_id=dataset.project_id,
                dataset_id=dataset_id,
                criterion_id=criterion_id,
                template_version_id=template_version_id,
                status="pending",
                settings=dict(settings),
                progress={},
                author=str(author or "")[:200],
            )
            s.add(row)
            s.flush()
            return _record(row)

    def get_improve_job(self, dataset_id: int, job_id: int) -> ImproveJobRecord:
        """One job of a dataset; :class:`~evalcore.errors.NotFoundError` when it has none by that id."""
        with self._read() as s:
            row = s.get(ImproveJob, job_id)
            if row is None or row.dataset_id != dataset_id:
                raise NotFoundError(f"Optimisation {job_id} does not exist on this dataset.")
            return _record(row)

    def list_improve_jobs(self, dataset_id: int) -> list[ImproveJobRecord]:
        """A dataset's optimisation jobs, newest first."""
        with self._read() as s:
            rows = s.scalars(
                select(ImproveJob)
                .where(ImproveJob.dataset_id == dataset_id)
                .order_by(ImproveJob.created_at.desc(), ImproveJob.id.desc())
            ).all()
            return [_record(r) for r in rows]

    def update_improve_job(
        self,
        dataset_id: int,
        job_id: int,
        *,
        status: ImproveStatus | None = None,
        progress: Mapping[str, Any] | None = None,
        report: Mapping[str, Any] | None = None,
        error: str | None = None,
    ) -> ImproveStatus:
        """Save a job's status, progress, report or error; returns its status after the change.

        A job someone asked to stop stays ``cancelling`` when the worker reports ``running``, so the
        worker sees the request in the status returned here. A terminal status sets ``finished_at``.
        """
        if status is not None and status not in IMPROVE_STATUSES:
            raise ConfigError(f"unknown optimisation status {status!r}")
        with self._write() as s:
            row = s.get(ImproveJob, job_id)
            if row is None or row.dataset_id != dataset_id:
                raise NotFoundError(f"Optimisation {job_id} does not exist on this dataset.")
            if status is not None and not (status == "running" and row.status == "cancelling"):
                row.status = status
                if status in _TERMINAL:
                    row.finished_at = utcnow()
            if progress is not None:
                row.progress = dict(progress)
            if report is not None:
                row.report = dict(report)
            if error is not None:
                row.error = error[:_MAX_ERROR]
            row.updated_at = utcnow()
            return row.status  # type: ignore[return-value]

    def request_improve_cancel(self, dataset_id: int, job_id: int) -> ImproveStatus:
        """Ask a job to stop (from any process); what it has done is kept. Returns its status."""
        with self._write() as s:
            row = s.get(ImproveJob, job_id)
            if row is None or row.dataset_id != dataset_id:
                raise NotFoundError(f"Optimisation {job_id} does not exist on this dataset.")
            if row.status == "pending":
                row.status = "cancelled"
                row.finished_at = utcnow()
            elif row.status == "running":
                row.status = "cancelling"
            row.updated_at = utcnow()
            return row.status  # type: ignore[return-value]

    def improve_jobs_to_resume(self, *, stale_after_s: float = 60.0) -> list[ImproveJobRecord]:
        """Jobs a worker should (re)start: pending or running without a sign of life (its row
        is touched at least every second while it runs) for ``stale_after_s``. A stale
        ``cancelling`` job has nobody left to stop it; it is marked ``cancelled`` here."""
        now = utcnow()
        cutoff = now - timedelta(seconds=stale_after_s)
        with self._write() as s:
            s.execute(
                update(ImproveJob)
                .where(ImproveJob.status == "cancelling", ImproveJob.updated_at < cutoff)
                .values(status="cancelled", finished_at=now, updated_at=now)
            )
            rows = s.scalars(
                select(ImproveJob)
                .where(
                    ImproveJob.status.in_(("pending", "running")), ImproveJob.updated_at < cutoff
                )
                .order_by(ImproveJob.created_at, ImproveJob.id)
            ).all()
            return [_record(r) for r in rows]
