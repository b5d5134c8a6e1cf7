"""The one job protocol of :mod:`evalcore.runs`: claim, heartbeat, progress, cancel, finish, resume.

Every piece of background work is a :class:`Job`:

- :class:`RunJob`: a stored judge run carried out in a server process, live or through a Batch API
  (one ``judge_runs`` row, held by a lease);
- :class:`ImproveJob`: an optimisation (one ``improve_jobs`` row, held by a lease);
- :class:`ChunkJob`: one chunk of a run on the PostgreSQL task queue, carried out by an ``evalcore
  worker`` process (one ``judge_run_chunks`` row; the queue holds its lease: a chunk whose
  worker stops beating goes back to the queue).

The protocol, the same for each:

- :meth:`Job.claim` takes the job: a lease for ``lease_s`` seconds in the store
  (:meth:`~evalcore.store.Store.claim_lease`), refused while a live worker holds it;
- :meth:`Job.renew`, the heartbeat, called every second by a :class:`LeaseKeeper` thread while the
  job runs: it extends the lease, marks the job alive, and answers ``"go"``, ``"cancel"`` (someone
  asked the job to stop, from any process) or ``"lost"`` (another worker took the job over: stop and
  change nothing);
- :meth:`Job.progress` reads how far the job is, from the store;
- :meth:`Job.request_cancel` asks it to stop, from any process;
- :meth:`Job.finish` records how it ended and gives the lease up;
- :meth:`Job.release` gives the lease up without ending it (the server is stopping: the next
  worker resumes it);
- :func:`takeovers` lists the jobs of a kind that a worker may take over: nobody holds them, their
  lease expired, or their owner is a process of this host that is gone.

An owner is named ``host:pid:nonce:worker`` (:func:`process_owner`). The nonce is drawn when the
process starts, so a process that is given the process id of a dead one still tells them apart;
a process on the same host that is gone is seen at once (:func:`owner_is_gone`), so a server killed
with SIGKILL and started again at once resumes its runs without waiting for their leases to expire.
An owner on another host is waited for until its lease expires (:data:`RUN_LEASE_S`).
"""

from __future__ import annotations

import abc
import itertools
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, ClassVar, Literal, TypeAlias

from evalcore.store import ChunkState, LeaseKind, LeaseRecord, RunStatus, Store

__all__ = [
    "RENEW_S",
    "RUN_LEASE_S",
    "ChunkJob",
    "ImproveJob",
    "Job",
    "JobProgress",
    "LeaseKeeper",
    "RunJob",
    "Signal",
    "Takeover",
    "owner_is_gone",
    "process_owner",
    "takeovers",
]

log = logging.getLogger(__name__)

#: Seconds a run's or an optimisation's lease lasts unless renewed; a worker on another host takes
#: over a job whose owner stopped renewing it after this long.
RUN_LEASE_S = 15.0
#: Seconds between two renewals of a lease (the job's heartbeat).
RENEW_S = 1.0

#: What a renewal tells the worker carrying the job out.
Signal: TypeAlias = Literal["go", "cancel", "lost"]

_HOST = socket.gethostname()
_NONCE = secrets.token_hex(6)
_PID = os.getpid()
_WORKERS = itertools.count(1)


def _new_process() -> None:
    """A forked child is another process: its own pid and nonce."""
    global _NONCE, _PID
    _NONCE, _PID = secrets.token_hex(6), os.getpid()


os.register_at_fork(after_in_child=_new_process)


def process_owner(worker: str | None = None) -> str:
    """A lease owner name of this process: ``host:pid:nonce:worker`` (``worker`` default: a new
    number, so two workers of one process never share a lease)."""
    tag = worker if worker is not None else f"w{next(_WORKERS)}"
    return f"{_HOST}:{_PID}:{_NONCE}:{tag}"


def owner_is_gone(owner: str | None) -> bool:
    """Whether the process named by ``owner`` is known to have ended: it ran on this host, and no
    process has its id any more, or this process has its id but another nonce (the id was given
    again). An owner on another host, or a name of another form, is never known to be gone.

    >>> owner_is_gone(process_owner()), owner_is_gone(f"{_HOST}:{_PID}:another-nonce:w1")
    (False, True)
    """
    if not owner:
        return False
    parts = owner.split(":")
    if len(parts) < 4 or ":".join(parts[:-3]) != _HOST:
        return False
    try:
        pid = int(parts[-3])
    except ValueError:
        return False
    if pid == os.getpid():
        return parts[-2] != _NONCE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # a process of another user has that id: alive
        return False
    return False


@dataclass(frozen=True)
class JobProgress:
    """How far a job is: ``done`` of ``total`` steps (items, or an optimisation's steps)."""

    done: int
    total: int

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.total else 0.0


class Job(abc.ABC):
    """One piece of background work and its lease (see the module docstring)."""

    #: the kind of job: ``"run"``, ``"improve"`` or ``"chunk"``
    kind: ClassVar[str]

    def __init__(self, store: Store, owner: str, *, lease_s: float = RUN_LEASE_S) -> None:
        self.store = store
        self.owner = owner
        self.lease_s = lease_s

    @abc.abstractmethod
    def claim(self) -> bool:
        """Take the job; ``False`` when a live worker holds it or it is over."""

    @abc.abstractmethod
    def renew(self) -> Signal:
        """The heartbeat: keep the job, mark it alive, and say whether to go on."""

    @abc.abstractmethod
    def progress(self) -> JobProgress:
        """How far the job is, from the store."""

    @abc.abstractmethod
    def request_cancel(self) -> None:
        """Ask the job to stop (whoever carries it out sees it at its next renewal)."""

    @abc.abstractmethod
    def finish(self, status: str, *, error: str | None = None) -> None:
        """Record how the job ended and give up its lease."""

    @abc.abstractmethod
    def release(self) -> None:
        """Give up the lease without ending the job: the next worker resumes it."""


class _LeasedJob(Job):
    """A job held by a lease on its own row (a run or an optimisation)."""

    lease_kind: ClassVar[LeaseKind]

    def __init__(
        self, store: Store, job_id: int, owner: str, *, lease_s: float = RUN_LEASE_S
    ) -> None:
        super().__init__(store, owner, lease_s=lease_s)
        self.job_id = job_id

    def claim(self, *, replacing: str | None = None) -> bool:
        """Take the lease; ``replacing`` names an owner known to be gone, whose lease is taken
        even before it expires."""
        return self.store.claim_lease(
            self.lease_kind, self.job_id, self.owner, lease_s=self.lease_s, replacing=replacing
        )

    def renew(self) -> Signal:
        status = self.store.renew_lease(
            self.lease_kind, self.job_id, self.owner, lease_s=self.lease_s
        )
        if status is None:
            return "lost"
        return "cancel" if status in ("cancelling", "cancelled") else "go"

    def release(self) -> None:
        self.store.release_lease(self.lease_kind, self.job_id, self.owner)


class RunJob(_LeasedJob):
    """A stored judge run carried out in one process (live or batch)."""

    kind = "run"
    lease_kind = "run"

    def progress(self) -> JobProgress:
        found = self.store.run_progress(self.job_id)
        return JobProgress(found.finished, found.planned)

    def request_cancel(self) -> None:
        self.store.request_cancel(self.job_id)

    def finish(self, status: str, *, error: str | None = None) -> None:
        run_status: RunStatus = status  # type: ignore[assignment]
        self.store.set_run_status(self.job_id, run_status, error=error)
        self.release()


class ImproveJob(_LeasedJob):
    """An optimisation of a template version (``dataset_id`` is the dataset it belongs to)."""

    kind = "improve"
    lease_kind = "improve"

    def __init__(
        self,
        store: Store,
        dataset_id: int,
        job_id: int,
        owner: str,
        *,
        lease_s: float = RUN_LEASE_S,
    ) -> None:
        super().__init__(store, job_id, owner, lease_s=lease_s)
        self.dataset_id = dataset_id

    def progress(self) -> JobProgress:
        found = self.store.get_improve_job(self.dataset_id, self.job_id).progress
        return JobProgress(int(found.get("done") or 0), int(found.get("total") or 0))

    def save_progress(self, progress: Mapping[str, Any], **extra: Any) -> str:
        """Save the job's progress (and a report); returns its status (``cancelling``: stop)."""
        return self.store.update_improve_job(
            self.dataset_id, self.job_id, progress=progress, **extra
        )

    def request_cancel(self) -> None:
        self.store.request_improve_cancel(self.dataset_id, self.job_id)

    def finish(
        self, status: str, *, error: str | None = None, report: Mapping[str, Any] | None = None
    ) -> None:
        self.store.update_improve_job(
            self.dataset_id,
            self.job_id,
            status=status,  # type: ignore[arg-type]
            error=error,
            report=report,
        )
        self.release()


class ChunkJob(Job):
    """One chunk of a run on the task queue; the queue's worker heartbeat is its lease, the run's
    row its sign of life and the place a cancel request is seen."""

    kind = "chunk"

    def __init__(self, store: Store, run_id: int, chunk: int, owner: str) -> None:
        super().__init__(store, owner)
        self.run_id = run_id
        self.chunk = chunk
        self.item_ids: tuple[str, ...] = ()
        #: the chunk's state when it was claimed (``done`` …: nothing left to judge)
        self.state: ChunkState | None = None
        #: the run's status after :meth:`finish` decided it
        self.outcome: RunStatus | None = None

    def claim(self) -> bool:
        record = self.store.start_chunk(self.run_id, self.chunk, worker=self.owner)
        self.item_ids, self.state = record.item_ids, record.state
        return not record.is_final

    def renew(self) -> Signal:
        status = self.store.heartbeat(self.run_id)
        return "cancel" if status in ("cancelling", "cancelled") else "go"

    def progress(self) -> JobProgress:
        chunks = {c.chunk: c for c in self.store.run_chunks(self.run_id)}
        found = chunks.get(self.chunk)
        total = 0 if found is None else len(found.item_ids)
        done = total if found is not None and found.is_final else 0
        return JobProgress(done, total)

    def request_cancel(self) -> None:
        self.store.request_cancel(self.run_id)

    def finish(
        self,
        status: str,
        *,
        error: str | None = None,
        run_status: RunStatus | None = None,
    ) -> None:
        state: ChunkState = status  # type: ignore[assignment]
        self.outcome = self.store.finish_chunk(
            self.run_id, self.chunk, state, run_status=run_status, error=error
        )

    def release(self) -> None:
        self.store.finish_chunk(self.run_id, self.chunk, "pending")


class LeaseKeeper:
    """A thread that renews a job's lease every ``every_s`` seconds while it runs.

    A cancel request sets :attr:`cancel_requested` and ``stop``; a lost lease (another worker took
    the job over) sets :attr:`lost` and ``stop``. Renewals that fail (the database is restarting)
    are tried again; when they have failed for longer than the lease, the job counts as lost.
    Use it as a context manager around the work.
    """

    def __init__(self, job: Job, stop: threading.Event, *, every_s: float = RENEW_S) -> None:
        self.job = job
        self.stop = stop
        self.every_s = every_s
        self.cancel_requested = threading.Event()
        self.lost = threading.Event()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"lease-{job.kind}", daemon=True)

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._closed.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        failing_since: float | None = None
        while not self._closed.wait(self.every_s):
            try:
                signal = self.job.renew()
                failing_since = None
            except Exception:
                log.warning("could not renew the lease of a %s", self.job.kind, exc_info=True)
                failing_since = failing_since or time.monotonic()
                if time.monotonic() - failing_since < self.job.lease_s:
                    continue
                signal = "lost"
            if signal == "cancel":
                self.cancel_requested.set()
                self.stop.set()
            elif signal == "lost":
                self.lost.set()
                self.stop.set()
                return


@dataclass(frozen=True)
class Takeover:
    """A job a worker may take: ``record`` as the store has it, and ``replacing``, the owner it
    is taken from (``None`` when nobody holds it or the lease expired)."""

    record: LeaseRecord
    replacing: str | None


def takeovers(
    store: Store,
    kind: LeaseKind,
    *,
    wait_pending_s: float = RUN_LEASE_S,
    stale_after_s: float | None = None,
    now: datetime | None = None,
) -> list[Takeover]:
    """The jobs of ``kind`` that are not over and that a worker may take over, oldest first.

    - held by an owner that is gone (:func:`owner_is_gone`): at once;
    - held under a lease that expired: at once;
    - held by nobody: a running or cancelling job at once (its worker released it when it
      stopped); a pending one once it has waited ``wait_pending_s`` (the worker it was handed to
      starts it before then, when it has a free slot);
    - with ``stale_after_s``, also a job whose last sign of life is older than that, whoever
      holds it.

    A job held by a live worker (this process's own included) is left alone.
    """
    now = now or datetime.now(UTC)
    found: list[Takeover] = []
    for record in store.open_leases(kind):
        stale = stale_after_s is not None and (
            record.beat_at is None or record.beat_at <= now - timedelta(seconds=stale_after_s)
        )
        if record.owner is None:
            waited = record.created_at <= now - timedelta(seconds=wait_pending_s)
            if record.status != "pending" or waited or stale:
                found.append(Takeover(record, None))
        elif owner_is_gone(record.owner) or stale:
            found.append(Takeover(record, record.owner))
        elif record.expired(now):
            found.append(Takeover(record, None))
    return found
