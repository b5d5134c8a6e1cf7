"""The judge runner's sink and cache, backed by the store.

:class:`StoreSink` writes each result to the ``judge_results`` table the moment it arrives (one short
transaction), reports what a run has already finished (so a restart resumes), and turns a cancel request
made from any process (a page's stop button sets the run to ``cancelling``) into the runner's stop
signal. It also keeps the run's heartbeat fresh, so a crashed worker is noticed and its run resumed.

:class:`StoreCache` is the content-addressed reply cache in the ``judge_cache`` table, shared by every
run of every project on the same database: an unchanged request is never paid for twice.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evalcore.judge import JudgeResult
from evalcore.store import JudgeResultInput, Store

__all__ = ["StoreCache", "StoreSink"]


class StoreCache:
    """:class:`evalcore.judge.ReplyCache` over the store's ``judge_cache`` table."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, key: str) -> dict[str, Any] | None:
        return self.store.cache_get(key)

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        return self.store.cache_get_many(keys)

    def put(self, key: str, model: str, payload: dict[str, Any]) -> None:
        self.store.cache_put(key, model, payload)


class StoreSink:
    """:class:`evalcore.judge.ResultSink` writing one run's results to the store as they arrive.

    ``item_ids`` maps the runner's item ids (the dataset's own ids) to database ids. The database is
    asked at most every ``poll_s`` seconds whether the run was cancelled (the runner polls often); the
    same call refreshes the run's heartbeat.
    """

    def __init__(
        self,
        store: Store,
        run_id: int,
        item_ids: Mapping[str, int],
        *,
        cancel_event: threading.Event | None = None,
        poll_s: float = 1.0,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self._db_ids = dict(item_ids)
        self._external = {db: ext for ext, db in self._db_ids.items()}
        self._cancel = cancel_event or threading.Event()
        self._poll_s = poll_s
        self._last_poll = 0.0
        self.recorded = 0

    def finished(self) -> set[tuple[str, str]]:
        done = self.store.finished_keys(self.run_id)
        return {(self._external[i], order) for i, order in done if i in self._external}

    def record(self, result: JudgeResult) -> None:
        self.store.record_results(self.run_id, [self._input(result)])
        self.recorded += 1

    def record_many(self, results: Iterable[JudgeResult]) -> None:
        batch = [self._input(r) for r in results]
        self.store.record_results(self.run_id, batch)
        self.recorded += len(batch)

    def is_cancelled(self) -> bool:
        if self._cancel.is_set():
            return True
        now = time.monotonic()
        if now - self._last_poll >= self._poll_s:
            self._last_poll = now
            if self.store.heartbeat(self.run_id) == "cancelling":
                self._cancel.set()
        return self._cancel.is_set()

    def cancel(self) -> None:
        self._cancel.set()

    def _input(self, r: JudgeResult) -> JudgeResultInput:
        return JudgeResultInput(
            item_id=self._db_ids[r.item_id],
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
        )
