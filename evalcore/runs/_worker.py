"""The server's background worker: run slots shared fairly, and runs that always resume.

One :class:`RunWorker` per server process carries out judge runs (live and batch) and
optimisations in its threads, each as a job of the one job protocol (:mod:`evalcore.runs._jobs`):
claimed under a lease in the worker's name, renewed every second while it runs.

Slots. At most :attr:`SlotPolicy.slots` live jobs run at once (:func:`slot_policy`: the server
setting ``run_slots``, else ``$EVALCORE_RUN_SLOTS``, else 4). They are shared fairly across
projects: a free slot goes to the project with the fewest jobs running here (the one served
longest ago on a tie), and when a project waits while another holds two or more slots more than it,
that project's newest job yields its slot (it stops as at a shutdown, keeps what it judged, and goes
back to the head of its queue; it resumes from its results and the reply cache). At most
:attr:`SlotPolicy.per_endpoint` jobs use one endpoint at once (``run_slots_per_endpoint``, default
one less than the slots), so runs against a slow endpoint always leave a slot for the others.
Batch runs only poll their provider and take no slot.

Resuming. A thread of the worker looks every :data:`CHECK_S` seconds, for as long as the server
runs, for jobs nobody carries out (:func:`~evalcore.runs._jobs.takeovers`): a job whose owner's
process on this host is gone is taken over at once, one whose lease expired (an owner on another
host) when it expired, a pending one nobody started within a lease. So a server killed with SIGKILL
and started again at once finishes its runs, each item judged once.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from evalcore.errors import ConfigError
from evalcore.runs._batch import is_batch_run
from evalcore.runs._common import Client
from evalcore.runs._improve import execute_optimization
from evalcore.runs._jobs import (
    RUN_LEASE_S,
    ImproveJob,
    RunJob,
    Takeover,
    process_owner,
    takeovers,
)
from evalcore.runs._queue import enqueue_run, uses_external_workers
from evalcore.runs._service import execute_run
from evalcore.store import Store

__all__ = [
    "CHECK_S",
    "DEFAULT_SLOTS",
    "ENDPOINT_SLOTS_ENV",
    "ENDPOINT_SLOTS_SETTING",
    "SLOTS_ENV",
    "SLOTS_SETTING",
    "JobSlot",
    "RunWorker",
    "SlotPolicy",
    "slot_policy",
]

log = logging.getLogger(__name__)

#: Seconds between two looks for jobs to take over (and for a changed slot setting).
CHECK_S = 2.0
#: Live jobs at once in one server process, unless set otherwise.
DEFAULT_SLOTS = 4
#: The server setting (:meth:`~evalcore.store.Store.set_server_setting`) of the number of slots.
SLOTS_SETTING = "run_slots"
#: The environment variable of the number of slots (when the server setting is not set).
SLOTS_ENV = "EVALCORE_RUN_SLOTS"
#: The server setting of the most jobs one endpoint may hold at once.
ENDPOINT_SLOTS_SETTING = "run_slots_per_endpoint"
#: Its environment variable.
ENDPOINT_SLOTS_ENV = "EVALCORE_RUN_SLOTS_PER_ENDPOINT"
#: Seconds between two checks at most while the database cannot be reached.
_MAX_CHECK_S = 60.0
#: Threads at most (live jobs are limited by the slots; batch runs, which only poll, are not).
_MAX_THREADS = 64

JobKind = Literal["run", "improve"]


@dataclass(frozen=True)
class SlotPolicy:
    """How many live jobs run at once in a server process (``slots``), and at most how many of
    them use one endpoint (``per_endpoint``); ``source`` says where the numbers came from."""

    slots: int
    per_endpoint: int
    source: str = "default"

    def __post_init__(self) -> None:
        if self.slots < 1:
            raise ConfigError(f"a server runs at least one job at a time, not {self.slots}")
        if self.per_endpoint < 1:
            raise ConfigError(f"an endpoint gets at least one slot, not {self.per_endpoint}")


def _whole(value: Any, where: str) -> int | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where} is a whole number of slots, not {value!r}") from None
    if not number.is_integer() or number < 1:
        raise ConfigError(f"{where} is a whole number of slots (1 or more), not {value!r}")
    return int(number)


def slot_policy(
    store: Store, *, slots: int | None = None, per_endpoint: int | None = None
) -> SlotPolicy:
    """The run slots of this server: ``slots`` when given, else the server setting
    :data:`SLOTS_SETTING` (an admin's choice, kept in the store), else ``$EVALCORE_RUN_SLOTS``,
    else :data:`DEFAULT_SLOTS`; the slots of one endpoint likewise (:data:`ENDPOINT_SLOTS_SETTING`,
    ``$EVALCORE_RUN_SLOTS_PER_ENDPOINT``), by default one less than the slots (at least one), and
    never more than the slots. A value that is not a whole number of 1 or more is a
    :class:`~evalcore.errors.ConfigError` naming where it came from."""

    def chosen(given: int | None, setting: str, env: str) -> tuple[int | None, str]:
        if given is not None:
            return _whole(given, "the number of slots"), "argument"
        stored = _whole(store.get_server_setting(setting), f"the server setting {setting}")
        if stored is not None:
            return stored, f"server setting {setting}"
        from_env = _whole(os.environ.get(env), f"${env}")
        return from_env, (env if from_env is not None else "default")

    total, source = chosen(slots, SLOTS_SETTING, SLOTS_ENV)
    total = total or DEFAULT_SLOTS
    endpoint, _ = chosen(per_endpoint, ENDPOINT_SLOTS_SETTING, ENDPOINT_SLOTS_ENV)
    endpoint = min(total, endpoint or max(1, total - 1))
    return SlotPolicy(total, endpoint, source)


@dataclass(frozen=True)
class JobSlot:
    """A job this worker holds or queues, for a page: its kind and id, its project and endpoint,
    whether it is ``running`` (else waiting for a slot) and whether it is a batch run."""

    kind: JobKind
    job_id: int
    project_id: int
    endpoint_id: int | None
    running: bool
    batch: bool


@dataclass(eq=False)
class _Entry:
    """A job handed to this worker: waiting for a slot or running in a thread."""

    kind: JobKind
    job_id: int
    dataset_id: int
    project_id: int
    endpoint_id: int | None
    batch: bool
    seq: int
    replacing: str | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    later: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    running: bool = False
    yielding: bool = False
    started_at: float = 0.0
    result: Any = None
    error: BaseException | None = None

    @property
    def key(self) -> tuple[str, int]:
        return (self.kind, self.job_id)


def _next_job(
    waiting: Sequence[_Entry],
    running: Sequence[_Entry],
    policy: SlotPolicy,
    served: Mapping[int, float],
) -> _Entry | None:
    """The waiting job a free slot goes to: among those whose endpoint has a slot left, one of the
    project with the fewest jobs running, the project served longest ago on a tie, first come
    first."""
    projects = Counter(e.project_id for e in running)
    endpoints = Counter(e.endpoint_id for e in running if e.endpoint_id is not None)
    eligible = [
        w
        for w in waiting
        if w.endpoint_id is None or endpoints[w.endpoint_id] < policy.per_endpoint
    ]
    if not eligible:
        return None
    return min(
        eligible,
        key=lambda w: (projects[w.project_id], served.get(w.project_id, -math.inf), w.seq),
    )


def _to_yield(
    waiting: Sequence[_Entry],
    running: Sequence[_Entry],
    policy: SlotPolicy,
    served: Mapping[int, float],
) -> _Entry | None:
    """The running job that gives its slot up so that a waiting project gets one: the newest job
    of a project holding two or more slots more than the project whose job would take the slot
    it frees (that job's endpoint counted without the one that yields)."""
    live = [e for e in running if not e.yielding]
    projects = Counter(e.project_id for e in live)
    for victim in sorted(live, key=lambda e: (-projects[e.project_id], -e.started_at)):
        others = [e for e in live if e is not victim]
        candidate = _next_job(waiting, others, policy, served)
        if candidate is not None and (
            projects[victim.project_id] >= projects[candidate.project_id] + 2
        ):
            return victim
    return None


class RunWorker:
    """Background threads owned by the server that carry out judge runs and optimisations.

    One worker per server process (the dashboard keeps it in ``st.cache_resource``). :meth:`submit`
    hands it a run and :meth:`submit_improve` an optimisation; they wait for a slot (see the module
    docstring for how slots are shared) and run under a lease in the worker's name
    (:attr:`owner`). :meth:`cancel` asks a run to stop (from any process: the request goes through
    the store). A thread looks every ``check_s`` seconds for jobs nobody carries out and takes them
    over, so the runs of a server that died are finished by whichever worker is running;
    :meth:`resume_stale` does the same at once.

    ``max_parallel`` is the number of slots (default: :func:`slot_policy`, read again at every
    check, so a changed server setting applies without a restart). With external workers
    (``workers="external"``, default ``$EVALCORE_WORKERS``; PostgreSQL only, see
    :func:`evalcore.runs.uses_external_workers`) runs are not judged in this process:
    :meth:`submit` splits a run into chunks on the task queue and ``evalcore worker`` processes
    carry them out; batch runs and optimisations still run here.
    """

    def __init__(
        self,
        store: Store,
        *,
        secrets: Mapping[str, Any] | None = None,
        max_parallel: int | None = None,
        client: Client | None = None,
        workers: str | None = None,
        lease_s: float = RUN_LEASE_S,
        check_s: float = CHECK_S,
        per_endpoint: int | None = None,
    ) -> None:
        if lease_s <= 0 or check_s <= 0:
            raise ConfigError("the lease and the check interval are positive numbers of seconds")
        self.store = store
        self.secrets = secrets
        #: whether runs go to the task queue for ``evalcore worker`` processes
        self.external = uses_external_workers(store, workers)
        #: the name this worker's leases are held in
        self.owner = process_owner()
        self.lease_s = lease_s
        self.check_s = check_s
        self._client = client
        self._slots_given = max_parallel
        self._endpoint_given = per_endpoint
        self.policy = slot_policy(store, slots=max_parallel, per_endpoint=per_endpoint)
        self._pool = ThreadPoolExecutor(max_workers=_MAX_THREADS, thread_name_prefix="judge-run")
        self._lock = threading.RLock()
        self._entries: dict[tuple[str, int], _Entry] = {}
        self._served: dict[int, float] = {}
        self._seq = itertools.count()
        self._closing = threading.Event()
        _LIVE_WORKERS.add(self)
        self._watcher = threading.Thread(target=self._watch, name="judge-watch", daemon=True)
        self._watcher.start()

    # --- handing jobs over ------------------------------------------------------------------

    def submit(self, run_id: int) -> None:
        """Start (or resume) a run in the background when a slot is free; a run this worker holds
        or queues already is left alone.

        With external workers: queue the run's chunks that no job is carrying out yet."""
        run = self.store.get_run(run_id)
        batch = is_batch_run(run)
        if self.external and not batch:
            enqueue_run(self.store, run_id)
            return
        self._queue("run", run_id, run.dataset_id, run.project_id, run.endpoint_id, batch=batch)

    def submit_improve(self, dataset_id: int, job_id: int) -> None:
        """Carry out an optimisation job (:func:`evalcore.runs.start_optimization`) in a thread
        of this worker when a slot is free, also with external workers; a job this worker holds
        or queues already is left alone."""
        job = self.store.get_improve_job(dataset_id, job_id)
        endpoint = job.settings.get("endpoint_id")
        self._queue(
            "improve",
            job_id,
            dataset_id,
            job.project_id,
            None if endpoint is None else int(endpoint),
            batch=False,
        )

    def _queue(
        self,
        kind: JobKind,
        job_id: int,
        dataset_id: int,
        project_id: int,
        endpoint_id: int | None,
        *,
        batch: bool,
        replacing: str | None = None,
    ) -> bool:
        """Queue a job unless it is queued or running here; whether it was queued."""
        with self._lock:
            if self._closing.is_set() or (kind, job_id) in self._entries:
                return False
            entry = _Entry(
                kind,
                job_id,
                dataset_id,
                project_id,
                endpoint_id,
                batch,
                next(self._seq),
                replacing=replacing,
            )
            self._entries[entry.key] = entry
        self._schedule()
        return True

    # --- asking and waiting -----------------------------------------------------------------

    def cancel(self, run_id: int) -> None:
        """Ask a run to stop; it ends ``cancelled`` with everything judged so far kept."""
        self.store.request_cancel(run_id)
        self._cancel_here("run", run_id)

    def cancel_improve(self, dataset_id: int, job_id: int) -> None:
        """Ask an optimisation to stop (from any process); its report keeps what was done."""
        self.store.request_improve_cancel(dataset_id, job_id)
        self._cancel_here("improve", job_id)

    def _cancel_here(self, kind: JobKind, job_id: int) -> None:
        with self._lock:
            entry = self._entries.get((kind, job_id))
            if entry is None:
                return
            if entry.running:
                entry.cancel.set()
                return
            del self._entries[entry.key]  # waiting: it ends here, without a slot
        job = self._job(entry)
        if job.claim(replacing=entry.replacing):
            status = self._status(entry)
            if status in ("pending", "running", "cancelling"):
                job.finish("cancelled")
            else:
                job.release()
        entry.done.set()

    def is_active(self, run_id: int) -> bool:
        """Whether a run is held or queued by this worker (with external workers: not over)."""
        if self.external:
            run = self.store.get_run(run_id)
            if not is_batch_run(run):
                return not run.is_terminal
        with self._lock:
            return ("run", run_id) in self._entries

    def wait(self, run_id: int, timeout: float | None = None) -> Any:
        """Block until a run handed to this worker ends (tests and scripts); its summary (``None``
        when it was over already or another worker carries it out). Raises ``TimeoutError``."""
        return self._wait("run", run_id, timeout)

    def wait_improve(self, job_id: int, timeout: float | None = None) -> Any:
        """Block until an optimisation handed to this worker ends (tests and scripts); its report."""
        return self._wait("improve", job_id, timeout)

    def _wait(self, kind: JobKind, job_id: int, timeout: float | None) -> Any:
        with self._lock:
            entry = self._entries.get((kind, job_id))
        if entry is None:
            return None
        if not entry.done.wait(timeout):
            raise TimeoutError(f"{kind} {job_id} did not end within {timeout} s")
        if entry.error is not None:
            raise entry.error
        return entry.result

    def jobs(self) -> list[JobSlot]:
        """What this worker holds and queues: running jobs first, then the waiting ones in the
        order they came."""
        with self._lock:
            entries = sorted(self._entries.values(), key=lambda e: (not e.running, e.seq))
        return [
            JobSlot(e.kind, e.job_id, e.project_id, e.endpoint_id, e.running, e.batch)
            for e in entries
        ]

    # --- taking over --------------------------------------------------------------------------

    def resume_stale(self, *, stale_after_s: float | None = None) -> list[int]:
        """Take over, now, the runs and optimisations nobody carries out (see
        :func:`~evalcore.runs._jobs.takeovers`; pending ones at once, as at a server's start);
        ``stale_after_s`` also takes those whose last sign of life is older than that. Returns
        the runs queued by this call (the worker's own check, every ``check_s`` seconds from its
        start, may have queued some already)."""
        return self._take_over(wait_pending_s=0.0, stale_after_s=stale_after_s, enqueue=True)

    def _take_over(
        self, *, wait_pending_s: float, stale_after_s: float | None = None, enqueue: bool = False
    ) -> list[int]:
        """Queue the jobs to take over; with external workers, a run's chunks go to the task queue
        when ``enqueue`` (the periodic check leaves those runs to the ``evalcore worker``
        processes, which look for them themselves)."""
        taken: list[int] = []
        for found in takeovers(
            self.store, "run", wait_pending_s=wait_pending_s, stale_after_s=stale_after_s
        ):
            record = found.record
            if self.external and not record.batch:
                if enqueue:
                    enqueue_run(self.store, record.job_id)  # the chunks' workers do the rest
                    taken.append(record.job_id)
                continue
            if self._take(found, "run"):
                taken.append(record.job_id)
        for found in takeovers(
            self.store, "improve", wait_pending_s=wait_pending_s, stale_after_s=stale_after_s
        ):
            self._take(found, "improve")
        return taken

    def _take(self, found: Takeover, kind: JobKind) -> bool:
        record = found.record
        if found.replacing is not None:
            log.info(
                "%s %s: its worker %s is gone; taking it over", kind, record.job_id, found.replacing
            )
        return self._queue(
            kind,
            record.job_id,
            record.dataset_id,
            record.project_id,
            record.endpoint_id,
            batch=record.batch,
            replacing=found.replacing,
        )

    def _watch(self) -> None:
        """The periodic check: the slot setting, jobs to take over, slots to share. The first
        comes one interval after the start (a server calls :meth:`resume_stale` as it starts).
        While the database cannot be reached, the checks space out (doubling up to a minute)."""
        wait = self.check_s
        failures = 0
        while not self._closing.wait(wait):
            try:
                self.policy = slot_policy(
                    self.store, slots=self._slots_given, per_endpoint=self._endpoint_given
                )
                self._take_over(wait_pending_s=self.lease_s)
                self._schedule()
                failures, wait = 0, self.check_s
            except Exception:  # the database may be restarting: look again later
                failures += 1
                wait = min(_MAX_CHECK_S, self.check_s * 2**failures)
                log.log(
                    logging.WARNING if failures == 1 else logging.DEBUG,
                    "the run worker's check failed; next try in %.0f s",
                    wait,
                    exc_info=True,
                )

    # --- slots ----------------------------------------------------------------------------------

    def _schedule(self) -> None:
        """Start what the slots allow: every batch run, then the fair next live job while a slot is
        free; then, with no slot free, let a job of a project holding too many yield."""
        while True:
            with self._lock:
                if self._closing.is_set():
                    return
                waiting = [e for e in self._entries.values() if not e.running]
                running = [e for e in self._entries.values() if e.running and not e.batch]
                batch = next((e for e in waiting if e.batch), None)
                if batch is not None:
                    chosen: _Entry | None = batch
                elif len(running) < self.policy.slots:
                    chosen = _next_job(waiting, running, self.policy, self._served)
                else:
                    chosen = None
                    victim = _to_yield(waiting, running, self.policy, self._served)
                    if victim is not None:
                        victim.yielding = True
                        victim.later.set()
                        victim.cancel.set()
                        log.info(
                            "%s %s yields its slot to another project", victim.kind, victim.job_id
                        )
                if chosen is None:
                    return
                chosen.running = True
                chosen.started_at = time.monotonic()
                if not chosen.batch:
                    self._served[chosen.project_id] = chosen.started_at
            self._start(chosen)

    def _job(self, entry: _Entry) -> RunJob | ImproveJob:
        if entry.kind == "run":
            return RunJob(self.store, entry.job_id, self.owner, lease_s=self.lease_s)
        return ImproveJob(
            self.store, entry.dataset_id, entry.job_id, self.owner, lease_s=self.lease_s
        )

    def _status(self, entry: _Entry) -> str:
        if entry.kind == "run":
            return self.store.get_run(entry.job_id).status
        return self.store.get_improve_job(entry.dataset_id, entry.job_id).status

    def _start(self, entry: _Entry) -> None:
        """Claim the job's lease and run it in a thread; a job someone alive holds is dropped."""
        try:
            claimed = self._job(entry).claim(replacing=entry.replacing)
        except Exception as exc:
            log.warning("could not claim %s %s", entry.kind, entry.job_id, exc_info=True)
            self._end(entry, error=exc)
            return
        if not claimed:
            log.info("%s %s is carried out by another worker", entry.kind, entry.job_id)
            self._end(entry)
            return
        entry.replacing = None
        try:
            self._pool.submit(self._body, entry)
        except RuntimeError:  # the worker is shutting down: the next one resumes the job
            self._job(entry).release()
            self._end(entry)

    def _body(self, entry: _Entry) -> None:
        result: Any = None
        error: BaseException | None = None
        try:
            if entry.kind == "run":
                result = execute_run(
                    self.store,
                    entry.job_id,
                    secrets=self.secrets,
                    client=self._client,
                    cancel_event=entry.cancel,
                    shutdown_event=entry.later,
                    owner=self.owner,
                    lease_s=self.lease_s,
                )
            else:
                result = execute_optimization(
                    self.store,
                    entry.dataset_id,
                    entry.job_id,
                    secrets=self.secrets,
                    client=self._client,
                    cancel_event=entry.cancel,
                    shutdown_event=entry.later,
                    owner=self.owner,
                    lease_s=self.lease_s,
                )
        except BaseException as exc:  # kept for wait(); the job's status says what happened
            log.exception("%s %s stopped", entry.kind, entry.job_id)
            error = exc
        with self._lock:
            requeue = entry.yielding and error is None and not self._closing.is_set()
            if requeue:  # it gave its slot up: back to the head of its project's queue
                entry.running = entry.yielding = False
                entry.cancel, entry.later = threading.Event(), threading.Event()
        if requeue:
            self._schedule()
            return
        self._end(entry, result=result, error=error)
        self._schedule()

    def _end(
        self, entry: _Entry, *, result: Any = None, error: BaseException | None = None
    ) -> None:
        with self._lock:
            self._entries.pop(entry.key, None)
        entry.result, entry.error = result, error
        entry.done.set()

    # --- stopping -------------------------------------------------------------------------------

    def shutdown(self, *, wait: bool = True) -> None:
        """Stop every job and the threads. The jobs stopped here are not cancelled: they keep their
        status and give their leases up, and the next worker on this database resumes them."""
        self._closing.set()
        _LIVE_WORKERS.discard(self)
        with self._lock:
            entries = list(self._entries.values())
        for entry in entries:
            if entry.running:
                entry.later.set()
                entry.cancel.set()
            else:
                self._end(entry)
        self._pool.shutdown(wait=wait)
        if wait and self._watcher.is_alive() and self._watcher is not threading.current_thread():
            self._watcher.join()


#: Every worker of this process not shut down yet, so that an exiting interpreter can stop their runs
#: (held strongly: a worker nobody refers to any more still has runs going in its threads).
_LIVE_WORKERS: set[RunWorker] = set()


def _stop_workers_at_exit() -> None:
    """Stop the runs of every worker before the interpreter waits for its threads.

    The thread pool's own exit hook joins its threads; a run waiting out a long retry would hold
    the process (a server stopped with Ctrl-C, a test session) for minutes. Hooks registered with
    ``threading._register_atexit`` run in reverse order, so this one, registered after
    :mod:`concurrent.futures` was imported, runs before that join.
    """
    for worker in list(_LIVE_WORKERS):
        worker.shutdown(wait=False)


threading._register_atexit(_stop_workers_at_exit)  # type: ignore[attr-defined]
