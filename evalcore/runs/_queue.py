"""Judge runs carried out by ``evalcore worker`` processes, through a PostgreSQL task queue.

On PostgreSQL, with external workers configured (``EVALCORE_WORKERS=external``, see
:func:`uses_external_workers`), :meth:`~evalcore.runs.RunWorker.submit` does not judge in the app's
process: :func:`enqueue_run` splits the run into chunks of :data:`CHUNK_SIZE` items
(``judge_run_chunks``) and defers one job of the task queue (`procrastinate
<https://procrastinate.readthedocs.io>`_, in the PostgreSQL schema :data:`QUEUE_SCHEMA`) per chunk.
Any number of :class:`ChunkWorker` processes, on any host that reaches the database, take the jobs.

A worker judges a chunk with the same runner, :class:`~evalcore.runs.StoreSink` and
:class:`~evalcore.runs.StoreCache` as the in-process worker
(:func:`~evalcore.runs.judge_run_items` restricted to the chunk's items), so results and the reply
cache are the shared database's: a chunk judged again skips its finished items and finds the replies
that arrived in the cache. Cancel, progress and resume go through the run's row as before.

Each chunk is a :class:`~evalcore.runs._jobs.ChunkJob` of the one job protocol: claimed, kept alive
by a heartbeat on the run's row (which also brings a cancel request), finished or put back.
Losing a worker loses nothing: procrastinate's workers keep a heartbeat, and every worker looks
for jobs whose worker has been silent for the lease (:data:`LEASE_S`) and puts them back in the
queue, where another worker takes them. Once per lease every worker also queues the chunks of runs
that nobody carries out (:meth:`ChunkWorker.take_over_runs`: a run whose chunks were never queued,
because the app that planned it died first). A worker that is stopped (SIGTERM, Ctrl-C) stops its
chunks at once and puts them back itself. Whether a run is over is decided in the database when a
chunk ends (:meth:`~evalcore.store.Store.finish_chunk`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pandas as pd
from openai import AsyncOpenAI

from evalcore.errors import ConfigError
from evalcore.judge import Progress
from evalcore.runs._jobs import ChunkJob, LeaseKeeper
from evalcore.runs._service import judge_run_items
from evalcore.store import Store, WorkerRecord

if TYPE_CHECKING:
    from procrastinate import App, JobContext

__all__ = [
    "CHUNK_SIZE",
    "LEASE_S",
    "QUEUE_SCHEMA",
    "WORKERS_ENV",
    "WORKER_COLUMNS",
    "ChunkWorker",
    "enqueue_run",
    "list_workers",
    "queue_app",
    "uses_external_workers",
    "workers_table",
]

log = logging.getLogger(__name__)

#: Items per chunk (one task-queue job): long enough that a chunk's start costs little, short
#: enough that a lost worker's chunk is redone quickly and several workers share a run.
CHUNK_SIZE = 250
#: The PostgreSQL schema of the task queue's tables (created by the store's migration 0005).
QUEUE_SCHEMA = "evalcore_queue"
#: The environment variable that turns external workers on: ``external`` (else in-process).
WORKERS_ENV = "EVALCORE_WORKERS"
#: Seconds without a heartbeat after which a worker's chunks go to another worker.
LEASE_S = 20.0
#: Seconds between two heartbeats of a worker's row (``judge_workers``).
BEAT_S = 2.0
#: A worker whose row has not beaten for this long is not listed as alive.
ALIVE_S = 15.0
#: The task's name in the queue.
CHUNK_TASK = "evalcore.judge_chunk"
#: Columns of :func:`workers_table`.
WORKER_COLUMNS = ["name", "host", "pid", "started", "last seen", "run", "chunk", "items done"]
_LIVE_JOB_STATES = ("todo", "doing")


def uses_external_workers(store: Store, setting: str | None = None) -> bool:
    """Whether runs go to ``evalcore worker`` processes instead of the app's own threads.

    The rule: ``setting`` (default ``$EVALCORE_WORKERS``) is ``external`` and the database is
    PostgreSQL. On SQLite runs always stay in the app's process (the setting is ignored, with a
    warning); any other value means in-process.
    """
    chosen = (setting if setting is not None else os.environ.get(WORKERS_ENV, "")).strip().lower()
    if chosen not in ("", "external", "embedded"):
        raise ConfigError(f"{WORKERS_ENV} is 'external' or 'embedded', not {chosen!r}")
    if chosen != "external":
        return False
    if store.dialect != "postgresql":
        log.warning("%s=external needs PostgreSQL; runs stay in this process", WORKERS_ENV)
        return False
    return True


def _conninfo(store: Store) -> str:
    """The store's database as a libpq connection string (the task queue uses psycopg itself)."""
    return store.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)


def queue_app(store: Store, *, pool_size: int = 2) -> App:
    """The procrastinate app over the store's PostgreSQL database, with the chunk task.

    Its connections see only :data:`QUEUE_SCHEMA`. Open it (``with app.open():`` or
    ``async with app.open_async():``) before use.
    """
    from procrastinate import App, PsycopgConnector, RetryStrategy

    if store.dialect != "postgresql":
        raise ConfigError("the task queue needs a PostgreSQL database")
    connector = PsycopgConnector(
        conninfo=_conninfo(store),
        kwargs={"options": f"-c search_path={QUEUE_SCHEMA}"},
        min_size=1,
        max_size=max(2, pool_size),
    )
    app = App(connector=connector)
    # A chunk stopped with its worker raises ChunkStopped: the job goes back to the queue at once.
    app.task(
        name=CHUNK_TASK,
        pass_context=True,
        retry=RetryStrategy(max_attempts=1_000_000, retry_exceptions={ChunkStopped}),
    )(_judge_chunk)
    return app


def enqueue_run(store: Store, run_id: int, *, chunk_size: int = CHUNK_SIZE) -> int:
    """Queue the chunks of a run that no job is carrying out; returns how many were queued.

    The first call splits the run into chunks; a later one (a resume, or the app restarting)
    queues only the chunks not finished whose job is gone or over, so calling it again never puts
    a chunk in the queue twice. A run that is over, or being cancelled, queues nothing.
    """
    from procrastinate.exceptions import AlreadyEnqueued

    run = store.get_run(run_id)
    if run.is_terminal or run.status == "cancelling":
        return 0
    frame = store.items_frame(run.dataset_id)
    ids = [str(i) for i in frame["item_id"].tolist()]
    wanted = run.settings.get("item_ids")
    if wanted is not None:
        keep = {str(i) for i in wanted}
        ids = [i for i in ids if i in keep]
    chunks = [c for c in store.plan_chunks(run_id, ids, size=chunk_size) if not c.is_final]
    if not chunks:
        return 0
    app = queue_app(store)
    queued = 0
    with app.open():
        live = _live_jobs(app, [c.job_id for c in chunks if c.job_id is not None])
        deferrer = app.configure_task
        for chunk in chunks:
            if chunk.job_id is not None and chunk.job_id in live:
                continue
            lock = f"evalcore-run-{run_id}-chunk-{chunk.chunk}"
            try:
                job_id = deferrer(CHUNK_TASK, lock=lock, queueing_lock=lock).defer(
                    run_id=run_id, chunk=chunk.chunk
                )
            except AlreadyEnqueued:
                continue
            store.set_chunk_job(run_id, chunk.chunk, job_id)
            queued += 1
    return queued


def _live_jobs(app: App, job_ids: list[int]) -> set[int]:
    """Those of ``job_ids`` still waiting or being carried out."""
    if not job_ids:
        return set()
    rows = app.connector.get_sync_connector().execute_query_all(
        "SELECT id FROM procrastinate_jobs WHERE id = ANY(%(ids)s) AND status::text = ANY(%(s)s)",
        ids=job_ids,
        s=list(_LIVE_JOB_STATES),
    )
    return {int(r["id"]) for r in rows}


def list_workers(store: Store, *, alive_within_s: float | None = ALIVE_S) -> list[WorkerRecord]:
    """The worker processes alive now (heartbeat within ``alive_within_s``; ``None``: all)."""
    return store.list_workers(alive_within_s=alive_within_s)


def workers_table(store: Store) -> pd.DataFrame:
    """The live workers as a table (:data:`WORKER_COLUMNS`): who, where, and what each is doing."""
    rows = [
        {
            "name": w.name,
            "host": w.host,
            "pid": w.pid,
            "started": w.started_at,
            "last seen": w.heartbeat_at,
            "run": w.run_id,
            "chunk": None if w.chunk is None else w.chunk + 1,
            "items done": w.items_done,
        }
        for w in list_workers(store)
    ]
    return pd.DataFrame(rows, columns=WORKER_COLUMNS)


class ChunkStopped(Exception):
    """A chunk stopped because its worker is stopping; the queue gives the job to another."""


def _judge_chunk(context: JobContext, run_id: int, chunk: int) -> str:
    """The task: judge one chunk in the worker of this process."""
    worker = context.additional_context["evalcore"]
    assert isinstance(worker, ChunkWorker)
    return worker.judge_chunk(run_id, chunk)


@dataclass
class _Current:
    """A chunk this worker is judging."""

    run_id: int
    chunk: int
    stop: threading.Event = field(default_factory=threading.Event)
    done: int = 0


class ChunkWorker:
    """One ``evalcore worker`` process: takes chunk jobs from the queue and judges them.

    ``concurrency`` chunks at once (each sends at most its run's ``concurrency`` requests at a
    time). :meth:`run` blocks until :meth:`stop` (or SIGTERM/SIGINT when ``signals``); the chunks
    in progress then stop and go back to the queue. ``client`` replaces the endpoints' clients
    (tests, benchmarks).
    """

    def __init__(
        self,
        store: Store,
        *,
        name: str | None = None,
        concurrency: int = 1,
        lease_s: float = LEASE_S,
        secrets: Mapping[str, Any] | None = None,
        client: AsyncOpenAI | Callable[[], AsyncOpenAI] | None = None,
        poll_s: float = 2.0,
    ) -> None:
        if concurrency < 1:
            raise ConfigError(
                f"a worker carries out at least one chunk at a time, not {concurrency}"
            )
        if lease_s <= 0:
            raise ConfigError(f"the lease is a positive number of seconds, not {lease_s}")
        self.store = store
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.name = name or f"{self.host}:{self.pid}"
        self.concurrency = concurrency
        self.lease_s = lease_s
        self.poll_s = poll_s
        self.secrets = secrets
        self._client = client
        self._lock = threading.Lock()
        self._current: dict[tuple[int, int], _Current] = {}
        self._finished_items = 0
        self._stopping = threading.Event()
        self._procrastinate_worker: Any = None
        self.record: WorkerRecord | None = None

    # --- the process ------------------------------------------------------------------------

    def run(self, *, signals: bool = True) -> None:
        """Register, take jobs until stopped, then retire (blocks)."""
        previous: dict[signal.Signals, Any] = {}
        if signals:  # a stop asked for while starting up is kept too
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, lambda *_: self.stop())
        self.record = self.store.register_worker(
            self.name, host=self.host, pid=self.pid, concurrency=self.concurrency
        )
        beat = threading.Thread(target=self._beat_loop, name="worker-heartbeat", daemon=True)
        beat.start()
        try:
            asyncio.run(self._main(signals))
        finally:
            self._stopping.set()
            beat.join()
            self.store.retire_worker(self.record.id)
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def stop(self) -> None:
        """Stop taking jobs; the chunks in progress stop and go back to the queue."""
        self._stopping.set()
        with self._lock:
            for current in self._current.values():
                current.stop.set()
        if self._procrastinate_worker is not None:
            self._procrastinate_worker.stop()

    async def _main(self, signals: bool) -> None:
        from procrastinate.worker import Worker

        app = queue_app(self.store, pool_size=self.concurrency + 4)
        async with app.open_async():
            worker = Worker(
                app,
                name=self.name,
                concurrency=self.concurrency,
                install_signal_handlers=False,
                update_heartbeat_interval=self.lease_s / 4,
                stalled_worker_timeout=self.lease_s,
                fetch_job_polling_interval=self.poll_s,
                abort_job_polling_interval=self.poll_s,
                additional_context={"evalcore": self},
                delete_jobs="successful",
            )
            self._procrastinate_worker = worker
            if self._stopping.is_set():
                return
            loop = asyncio.get_running_loop()
            if signals:
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.add_signal_handler(sig, self.stop)
            recover = asyncio.create_task(self._recover_loop(app))
            try:
                await worker.run()
            finally:
                recover.cancel()
                if signals:
                    for sig in (signal.SIGTERM, signal.SIGINT):
                        loop.remove_signal_handler(sig)

    async def _recover_loop(self, app: App) -> None:
        """Put back in the queue the jobs of workers silent for longer than the lease, and, once
        per lease, queue the runs nobody is carrying out (:meth:`take_over_runs`)."""
        next_takeover = 0.0
        while True:
            if time.monotonic() >= next_takeover:
                next_takeover = time.monotonic() + self.lease_s
                try:
                    await asyncio.to_thread(self.take_over_runs)
                except Exception:  # the database may be restarting: try again later
                    log.warning("could not look for runs to take over", exc_info=True)
            try:
                stalled = await app.job_manager.get_stalled_jobs(
                    task_name=CHUNK_TASK, seconds_since_heartbeat=self.lease_s
                )
                for job in stalled:
                    try:
                        await app.job_manager.retry_job(job)
                        log.info("chunk job %s of a silent worker goes back to the queue", job.id)
                    except Exception:  # another worker was quicker
                        log.debug("job %s was already put back", job.id)
            except Exception:  # the database may be restarting: try again later
                log.warning("could not look for stalled jobs", exc_info=True)
            await asyncio.sleep(max(0.5, self.lease_s / 4))

    def take_over_runs(self) -> list[int]:
        """Queue the chunks of every run that is not over and that nobody carries out: silent (no
        heartbeat) for longer than the lease, older than the lease, held by no live app worker,
        and not a batch run (those are the app's to poll). Returns the runs that got chunks
        queued; a run whose chunks are all in the queue already gets none (see
        :func:`enqueue_run`)."""
        now = datetime.now(UTC)
        cutoff = now - timedelta(seconds=self.lease_s)
        queued: list[int] = []
        for record in self.store.open_leases("run"):
            held = record.owner is not None and not record.expired(now)
            silent = record.beat_at is None or record.beat_at <= cutoff
            if record.batch or held or not silent or record.created_at > cutoff:
                continue
            if enqueue_run(self.store, record.job_id):
                log.info("run %s had nobody carrying it out: its chunks are queued", record.job_id)
                queued.append(record.job_id)
        return queued

    def _beat_loop(self) -> None:
        """Refresh this worker's row every :data:`BEAT_S` seconds until the worker stops."""
        assert self.record is not None
        while True:
            with self._lock:
                current = next(iter(self._current.values()), None)
                done = self._finished_items + sum(c.done for c in self._current.values())
            try:
                self.store.worker_heartbeat(
                    self.record.id,
                    run_id=None if current is None else current.run_id,
                    chunk=None if current is None else current.chunk,
                    items_done=done,
                )
            except Exception:
                log.warning("could not refresh the worker's heartbeat", exc_info=True)
            if self._stopping.wait(BEAT_S):
                return

    # --- one chunk --------------------------------------------------------------------------

    def judge_chunk(self, run_id: int, chunk: int) -> str:
        """Judge one chunk of a run and record how it ended; returns the chunk's state.

        The chunk is a :class:`~evalcore.runs._jobs.ChunkJob`: claimed, kept alive (the run's
        heartbeat, which also brings a cancel request) while it is judged, and finished. Raises
        :class:`ChunkStopped` when this worker is stopping (the job goes back to the queue), after
        putting the chunk back to ``pending``.
        """
        store = self.store
        job = ChunkJob(store, run_id, chunk, self.name)
        if not job.claim():
            return str(job.state)
        run = store.get_run(run_id)
        if run.is_terminal or run.status == "cancelling":
            return self._end(job, "cancelled")
        current = _Current(run_id, chunk)
        with self._lock:
            self._current[(run_id, chunk)] = current
        if self._stopping.is_set():
            current.stop.set()

        def progress(p: Progress) -> None:
            current.done = p.done - p.skipped

        try:
            with LeaseKeeper(job, current.stop) as keeper:
                summary, error = judge_run_items(
                    store,
                    run,
                    list(job.item_ids),
                    secrets=self.secrets,
                    client=self._client,
                    cancel_event=current.stop,
                    progress=progress,
                )
        finally:
            with self._lock:
                self._current.pop((run_id, chunk), None)
                self._finished_items += current.done
        if summary is None:
            return self._end(job, "failed", error=error)
        user_cancel = keeper.cancel_requested.is_set() or store.get_run(run_id).status in (
            "cancelling",
            "cancelled",
        )
        if summary.cancelled and not user_cancel and self._stopping.is_set():
            job.release()
            raise ChunkStopped(f"run {run_id} chunk {chunk}: the worker is stopping")
        if summary.cancelled or user_cancel:
            return self._end(job, "cancelled")
        if not summary.complete:
            return self._end(
                job, "failed", run_status="interrupted", error="the run stopped before every item"
            )
        return self._end(job, "done")

    def _end(self, job: ChunkJob, state: str, **how: Any) -> str:
        job.finish(state, **how)
        log.info("run %s chunk %s: %s (run %s)", job.run_id, job.chunk, state, job.outcome)
        return state
