"""Chunks of a run and the workers that carry them out (migration 0005).

On PostgreSQL a run can be split into chunks, each one a job of the task queue (see
:mod:`evalcore.runs`): ``judge_run_chunks`` holds which items each chunk judges and how far it got,
and ``judge_workers`` the worker processes with their heartbeat and what each is doing. Whether a
run is over is decided here, in one transaction that holds the run's row
(:meth:`WorkersMixin.finish_chunk`), so two workers finishing the last chunks at once cannot both
miss, or both make, the final move.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, TypeAlias, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
    case,
    func,
    select,
    update,
)
from sqlalchemy.orm import Mapped, mapped_column

from evalcore.errors import ConfigError, NotFoundError
from evalcore.store._base import StoreBase
from evalcore.store._models import (
    Base,
    Item,
    JudgeResult,
    JudgeRun,
    UTCDateTime,
    utcnow,
)
from evalcore.store._records import TERMINAL_RUN_STATUSES, RunStatus

__all__ = ["ChunkState", "RunChunkRecord", "WorkerRecord", "WorkersMixin"]

ChunkState: TypeAlias = Literal["pending", "running", "done", "cancelled", "failed"]
CHUNK_STATES: tuple[str, ...] = ("pending", "running", "done", "cancelled", "failed")
#: States a chunk does not leave again (nothing more to judge in it).
FINAL_CHUNK_STATES = frozenset({"done", "cancelled", "failed"})


class RunChunk(Base):
    """A slice of a run's items that one task-queue job judges."""

    __tablename__ = "judge_run_chunks"
    __table_args__ = (
        UniqueConstraint("run_id", "chunk"),
        CheckConstraint(
            "state IN ('pending', 'running', 'done', 'cancelled', 'failed')", name="state"
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("judge_runs.id", ondelete="CASCADE"))
    chunk: Mapped[int] = mapped_column(Integer)
    item_ids: Mapped[list[str]] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(16), default="pending")
    job_id: Mapped[int | None] = mapped_column(BigInteger)
    worker: Mapped[str | None] = mapped_column(String(200))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class JudgeWorker(Base):
    """A worker process (``evalcore worker``), alive while its heartbeat is fresh."""

    __tablename__ = "judge_workers"
    __table_args__ = (Index(None, "heartbeat_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    concurrency: Mapped[int] = mapped_column(Integer, default=1)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    stopped_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # what it is doing (no foreign key: a worker's row outlives a deleted run)
    run_id: Mapped[int | None] = mapped_column(Integer)
    chunk: Mapped[int | None] = mapped_column(Integer)
    items_done: Mapped[int] = mapped_column(Integer, default=0)


@dataclass(frozen=True)
class RunChunkRecord:
    run_id: int
    chunk: int
    item_ids: tuple[str, ...]
    state: ChunkState
    job_id: int | None
    worker: str | None
    attempts: int
    started_at: datetime | None
    finished_at: datetime | None

    @property
    def is_final(self) -> bool:
        return self.state in FINAL_CHUNK_STATES


@dataclass(frozen=True)
class WorkerRecord:
    id: int
    name: str
    host: str
    pid: int
    concurrency: int
    started_at: datetime
    heartbeat_at: datetime
    stopped_at: datetime | None
    run_id: int | None
    chunk: int | None
    items_done: int


def _chunk_record(row: RunChunk) -> RunChunkRecord:
    return RunChunkRecord(
        run_id=row.run_id,
        chunk=row.chunk,
        item_ids=tuple(str(i) for i in row.item_ids or ()),
        state=cast(ChunkState, row.state),
        job_id=row.job_id,
        worker=row.worker,
        attempts=row.attempts,
        started_at=row.started_at,
        finished_at=row.finished_at,
    )


def _worker_record(row: JudgeWorker) -> WorkerRecord:
    return WorkerRecord(
        id=row.id,
        name=row.name,
        host=row.host,
        pid=row.pid,
        concurrency=row.concurrency,
        started_at=row.started_at,
        heartbeat_at=row.heartbeat_at,
        stopped_at=row.stopped_at,
        run_id=row.run_id,
        chunk=row.chunk,
        items_done=row.items_done,
    )


class WorkersMixin(StoreBase):
    """Run chunks and worker heartbeats (``Store`` mixes this in)."""

    # --- chunks -----------------------------------------------------------------------------

    def plan_chunks(
        self, run_id: int, item_ids: Sequence[str], *, size: int
    ) -> list[RunChunkRecord]:
        """Split a run into chunks of ``size`` items, in the order given; idempotent.

        A run already split keeps its chunks (two processes submitting at once get the same ones:
        the run's row is held while deciding); when the run is ``pending`` or ``running`` again (a
        resume), its cancelled and failed chunks go back to ``pending``.
        """
        if size < 1:
            raise ConfigError(f"a chunk holds at least one item, not {size}")
        with self._write() as s:
            run = self._run_row(s, run_id)
            existing = s.scalars(
                select(RunChunk).where(RunChunk.run_id == run_id).order_by(RunChunk.chunk)
            ).all()
            if existing:
                for row in existing:
                    if run.status in ("pending", "running") and row.state in (
                        "cancelled",
                        "failed",
                    ):
                        row.state = "pending"
                        row.finished_at = None
                s.flush()
                return [_chunk_record(r) for r in existing]
            ids = [str(i) for i in item_ids]
            rows = [
                RunChunk(run_id=run_id, chunk=n, item_ids=ids[start : start + size], attempts=0)
                for n, start in enumerate(range(0, len(ids), size))
            ]
            s.add_all(rows)
            s.flush()
            return [_chunk_record(r) for r in rows]

    def run_chunks(self, run_id: int) -> list[RunChunkRecord]:
        """A run's chunks in order (empty for a run that was never split)."""
        with self._read() as s:
            rows = s.scalars(
                select(RunChunk).where(RunChunk.run_id == run_id).order_by(RunChunk.chunk)
            ).all()
            return [_chunk_record(r) for r in rows]

    def set_chunk_job(self, run_id: int, chunk: int, job_id: int) -> None:
        """Record the task-queue job that carries out a chunk."""
        with self._write() as s:
            s.execute(
                update(RunChunk)
                .where(RunChunk.run_id == run_id, RunChunk.chunk == chunk)
                .values(job_id=job_id)
            )

    def start_chunk(self, run_id: int, chunk: int, *, worker: str) -> RunChunkRecord:
        """A worker takes a chunk: ``running`` (unless it is over already), one more attempt."""
        with self._write() as s:
            row = self._chunk_row(s, run_id, chunk)
            if row.state not in FINAL_CHUNK_STATES:
                row.state = "running"
                row.worker = worker
                row.attempts += 1
                row.started_at = utcnow()
                s.flush()
            return _chunk_record(row)

    def finish_chunk(
        self,
        run_id: int,
        chunk: int,
        state: ChunkState,
        *,
        run_status: RunStatus | None = None,
        error: str | None = None,
    ) -> RunStatus:
        """Record how a chunk ended and decide, holding the run's row, whether the run is over.

        - ``done``: when it was the last chunk not done, the run ends ``done`` (``failed`` when
          every result failed, with the first failure as the reason);
        - ``cancelled``: a cancel request stopped it; the run ends ``cancelled`` once no chunk is
          still running;
        - ``failed``: the run ends ``run_status`` (default ``failed``) with ``error``;
        - ``pending``: the chunk goes back to the queue (its worker is stopping).

        Returns the run's status after the decision.
        """
        if state not in CHUNK_STATES:
            raise ConfigError(f"a chunk's state is one of {', '.join(CHUNK_STATES)}, not {state!r}")
        with self._write() as s:
            run = self._run_row(s, run_id)
            row = self._chunk_row(s, run_id, chunk)
            now = utcnow()
            row.state = state
            row.finished_at = now if state in FINAL_CHUNK_STATES else None
            s.flush()
            if run.status in TERMINAL_RUN_STATUSES:
                return cast(RunStatus, run.status)
            if state == "failed":
                run.status = run_status or "failed"
                run.error = error or run.error
                run.finished_at = now
            elif state == "cancelled" or run.status == "cancelling":
                if not self._chunks_in(s, run_id, ("running",)):
                    run.status = "cancelled"
                    run.finished_at = now
            elif (
                state == "done"
                and not self._chunks_in(s, run_id, ("pending", "running"))
                and not self._chunks_in(s, run_id, ("cancelled", "failed"))
            ):
                self._finish_run(s, run)
            s.flush()
            return cast(RunStatus, run.status)

    def _finish_run(self, s: Any, run: JudgeRun) -> None:
        """Every chunk is done: the run is ``done``, or ``failed`` when every result failed."""
        ok, failed = s.execute(
            select(
                func.coalesce(func.sum(case((JudgeResult.status != "failed", 1), else_=0)), 0),
                func.coalesce(func.sum(case((JudgeResult.status == "failed", 1), else_=0)), 0),
            ).where(JudgeResult.run_id == run.id)
        ).one()
        run.finished_at = utcnow()
        if failed and not ok:
            first = s.scalar(
                select(JudgeResult.error)
                .join(Item, Item.id == JudgeResult.item_id)
                .where(JudgeResult.run_id == run.id, JudgeResult.status == "failed")
                .order_by(Item.position, JudgeResult.order)
                .limit(1)
            )
            run.status = "failed"
            run.error = f"every item failed; the first: {first or 'no reason recorded'}"
        else:
            run.status = "done"

    def _chunks_in(self, s: Any, run_id: int, states: Sequence[str]) -> int:
        return int(
            s.scalar(
                select(func.count())
                .select_from(RunChunk)
                .where(RunChunk.run_id == run_id, RunChunk.state.in_(list(states)))
            )
            or 0
        )

    def _run_row(self, s: Any, run_id: int) -> JudgeRun:
        """The run's row, held until the transaction ends (``FOR UPDATE`` on PostgreSQL; a SQLite
        write transaction holds the whole database already)."""
        row = s.get(JudgeRun, run_id, with_for_update=self.dialect == "postgresql")
        if row is None:
            raise NotFoundError(f"Judge run {run_id} does not exist.")
        return cast(JudgeRun, row)

    @staticmethod
    def _chunk_row(s: Any, run_id: int, chunk: int) -> RunChunk:
        row = s.scalar(select(RunChunk).where(RunChunk.run_id == run_id, RunChunk.chunk == chunk))
        if row is None:
            raise NotFoundError(f"Judge run {run_id} has no chunk {chunk}.")
        return cast(RunChunk, row)

    # --- workers ----------------------------------------------------------------------------

    def register_worker(
        self, name: str, *, host: str, pid: int, concurrency: int = 1
    ) -> WorkerRecord:
        """A worker process starts: its row, with a fresh heartbeat."""
        now = utcnow()
        with self._write() as s:
            row = JudgeWorker(
                name=str(name)[:200],
                host=str(host)[:255],
                pid=int(pid),
                concurrency=int(concurrency),
                started_at=now,
                heartbeat_at=now,
                items_done=0,
            )
            s.add(row)
            s.flush()
            return _worker_record(row)

    def worker_heartbeat(
        self,
        worker_id: int,
        *,
        run_id: int | None = None,
        chunk: int | None = None,
        items_done: int = 0,
    ) -> None:
        """A worker is alive now, on ``run_id``/``chunk`` (``None``: idle), with ``items_done``."""
        with self._write() as s:
            s.execute(
                update(JudgeWorker)
                .where(JudgeWorker.id == worker_id)
                .values(heartbeat_at=utcnow(), run_id=run_id, chunk=chunk, items_done=items_done)
            )

    def retire_worker(self, worker_id: int) -> None:
        """A worker process stopped cleanly."""
        with self._write() as s:
            s.execute(
                update(JudgeWorker)
                .where(JudgeWorker.id == worker_id)
                .values(stopped_at=utcnow(), run_id=None, chunk=None)
            )

    def list_workers(self, *, alive_within_s: float | None = 30.0) -> list[WorkerRecord]:
        """Workers whose heartbeat is at most ``alive_within_s`` old and that have not stopped
        (``None``: every worker ever registered), newest first."""
        query = select(JudgeWorker)
        if alive_within_s is not None:
            cutoff = utcnow() - timedelta(seconds=alive_within_s)
            query = query.where(
                JudgeWorker.heartbeat_at >= cutoff, JudgeWorker.stopped_at.is_(None)
            )
        with self._read() as s:
            rows = s.scalars(query.order_by(JudgeWorker.started_at.desc(), JudgeWorker.id.desc()))
            return [_worker_record(r) for r in rows]
