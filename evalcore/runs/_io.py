"""The judge runner's sink and cache, backed by the store.

:class:`StoreSink` records each result as it arrives, reports what a run has already finished (so a
restart resumes), and turns a cancel request made from any process (a page's stop button sets the run
to ``cancelling``) into the runner's stop signal.

:class:`StoreCache` is the content-addressed reply cache in the ``judge_cache`` table, shared by every
run of every project on the same database: an unchanged request is never paid for twice.

The sink hands its writes to a :class:`StoreWriter` (the cache can too): one thread that commits what
arrived since its last commit in one transaction (replies to the cache first, then results, so a
result is never saved without its reply). A result is on disk at most 0.1 s after it arrives, and
the runner's event loop never waits for the database: without the writer, 32 requests in flight
would queue up behind one commit after another. The run's heartbeat and lease are not the writer's:
they belong to the job that carries the run out (:mod:`evalcore.runs._jobs`).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evalcore.judge import JudgeResult
from evalcore.store import JudgeResultInput, Store

__all__ = ["StoreCache", "StoreSink", "StoreWriter", "result_input"]

_CacheEntry = tuple[str, str | None, Mapping[str, Any]]
#: Seconds the writer's thread waits for work before looking again.
_IDLE_S = 1.0


class StoreWriter:
    """A background thread that commits one run's results and cached replies in groups.

    :meth:`results` and :meth:`cache` only queue; the thread takes what arrived, writes it in one
    transaction per table and starts over, at most once per ``interval`` seconds (so a result is
    committed within ``interval`` of its arrival, and a fast run does not spend its time in commits). :meth:`flush` waits until what was queued before it is
    committed; :meth:`close` flushes and ends the thread. A write that fails stops the writer: the
    next call raises the error, so the run stops instead of judging items it cannot save.
    """

    def __init__(
        self,
        store: Store,
        run_id: int,
        *,
        interval: float = 0.1,
        max_batch: int = 2_000,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.interval = interval
        self.max_batch = max_batch
        self.commits = 0
        self._last_commit = 0.0
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(
            target=self._loop, name=f"judge-writer-{run_id}", daemon=True
        )
        self._thread.start()

    def results(self, batch: Sequence[JudgeResultInput]) -> None:
        self._check()
        if batch:
            self._queue.put(("result", list(batch)))

    def cache(self, entries: Sequence[_CacheEntry]) -> None:
        self._check()
        if entries:
            self._queue.put(("cache", list(entries)))

    def flush(self) -> None:
        """Block until everything queued so far is committed (or raise the writer's error)."""
        if self._thread.is_alive():
            done = threading.Event()
            self._queue.put(("flush", done))
            done.wait()
        self._check()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put(("stop", None))
            self._thread.join()
        self._check()

    def _check(self) -> None:
        if self._error is not None:
            raise self._error

    def _take(self) -> list[Any]:
        """What to commit next: the first request, then what arrives until ``interval`` has passed
        since the last commit (a flush or stop ends the wait at once)."""
        try:
            taken = [self._queue.get(timeout=_IDLE_S)]
        except queue.Empty:
            return []
        deadline = self._last_commit + self.interval
        while len(taken) < self.max_batch and taken[-1][0] not in ("flush", "stop"):
            remaining = deadline - time.monotonic()
            try:
                if remaining > 0:
                    taken.append(self._queue.get(timeout=remaining))
                else:
                    taken.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return taken

    def _loop(self) -> None:
        stop = False
        while not stop:
            taken = self._take()
            results: list[JudgeResultInput] = []
            entries: list[_CacheEntry] = []
            waiting: list[threading.Event] = []
            for kind, payload in taken:
                if kind == "result":
                    results.extend(payload)
                elif kind == "cache":
                    entries.extend(payload)
                elif kind == "flush":
                    waiting.append(payload)
                else:
                    stop = True
            if self._error is None:
                try:
                    if entries:
                        self.store.cache_put_many(entries)
                    if results:
                        self.store.record_results(self.run_id, results)
                    if entries or results:
                        self.commits += 1
                except BaseException as exc:  # kept and raised in the runner's thread
                    self._error = exc
                self._last_commit = time.monotonic()
            for event in waiting:
                event.set()


class StoreCache:
    """:class:`evalcore.judge.ReplyCache` over the store's ``judge_cache`` table.

    With a ``writer``, new replies are queued to it instead of committed one by one.
    """

    def __init__(self, store: Store, writer: StoreWriter | None = None) -> None:
        self.store = store
        self.writer = writer

    def get(self, key: str) -> dict[str, Any] | None:
        return self.store.cache_get(key)

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        return self.store.cache_get_many(keys)

    def put(self, key: str, model: str, payload: dict[str, Any]) -> None:
        if self.writer is not None:
            self.writer.cache([(key, model, payload)])
        else:
            self.store.cache_put(key, model, payload)


class StoreSink:
    """:class:`evalcore.judge.ResultSink` writing one run's results to the store as they arrive.

    ``item_ids`` maps the runner's item ids (the dataset's own ids) to database ids. Results are
    queued to ``writer``, which commits them within its ``interval``. ``cancel_event`` is the
    run's stop signal: the job's heartbeat sets it when someone asked the run to stop, from any
    process (see :class:`~evalcore.runs._jobs.LeaseKeeper`).
    """

    def __init__(
        self,
        store: Store,
        run_id: int,
        item_ids: Mapping[str, int],
        writer: StoreWriter,
        *,
        cancel_event: threading.Event | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.writer = writer
        self._db_ids = dict(item_ids)
        self._external = {db: ext for ext, db in self._db_ids.items()}
        self._cancel = cancel_event or threading.Event()
        self.recorded = 0

    def finished(self) -> set[tuple[str, str]]:
        done = self.store.finished_keys(self.run_id)
        return {(self._external[i], order) for i, order in done if i in self._external}

    def record(self, result: JudgeResult) -> None:
        self.writer.results([self._input(result)])
        self.recorded += 1

    def record_many(self, results: Iterable[JudgeResult]) -> None:
        batch = [self._input(r) for r in results]
        self.writer.results(batch)
        self.recorded += len(batch)

    def is_cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        self._cancel.set()

    def _input(self, r: JudgeResult) -> JudgeResultInput:
        return result_input(r, self._db_ids[r.item_id])


def result_input(r: JudgeResult, item_id: int) -> JudgeResultInput:
    """What the store records of a runner's result, for the item with database id ``item_id``
    (the cost is what the result cost this run: nothing when it came from the cache)."""
    return JudgeResultInput(
        item_id=item_id,
        status=r.status,  # type: ignore[arg-type]
        order=r.order,  # type: ignore[arg-type]
        label=r.label,  # type: ignore[arg-type]  # the store reads it on the scale
        score=r.score,
        reason=r.reason,
        raw=r.raw,
        error=r.error,
        tokens_in=r.tokens_in,
        tokens_out=r.tokens_out,
        cost=r.cost_this_run,
        latency_s=r.latency_s,
        attempts=r.attempts,
        cache_key=r.cache_key,
        cached=r.cached,
        samples=list(r.samples) if r.samples is not None else None,
        details=dict(r.details) if r.details else None,
        probabilities=dict(r.probabilities) if r.probabilities is not None else None,
        confidence=r.confidence,
    )
