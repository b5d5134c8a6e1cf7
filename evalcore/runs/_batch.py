"""Stored runs in batch mode: a run's requests go through the endpoint's Batch API.

A run planned with ``batch=BatchSettings(...)`` (:func:`~evalcore.runs.plan_run`) keeps
``mode="batch"`` with its poll interval and retry choice in its settings. The :class:`RunWorker`
carries it out like any run (in the app's process: the provider does the work, the run only polls
it), through :func:`execute_batch_run`: :func:`evalcore.judge.run_batch` with the run's batches kept
in the database (``judge_run_batches``, :class:`StoreBatchLedger`), so any process that resumes the
run resumes the same batches. The results go through the same sink and cache as a live run; a
cancel from any page cancels the provider's batches and keeps what they answered.
:func:`batch_progress` is what a page shows: batches submitted and done, requests answered.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalcore.errors import ConfigError, EvalcoreError, JudgeError
from evalcore.judge import (
    BatchEntry,
    BatchOptions,
    BatchReplies,
    BatchRetry,
    Progress,
    RunSummary,
    base_urls,
    client_factory,
    run_batch,
)
from evalcore.runs._common import (
    Client,
    endpoint_of,
    judge_items,
    key_policy,
    make_runner,
    run_settings,
    store_prices,
)
from evalcore.runs._io import StoreCache, StoreSink, StoreWriter
from evalcore.store import JudgeRunRecord, Store

__all__ = [
    "BATCH_MODE",
    "BatchProgress",
    "BatchSettings",
    "StoreBatchLedger",
    "batch_prices",
    "batch_progress",
    "execute_batch_run",
    "is_batch_run",
]

log = logging.getLogger(__name__)

#: The value of a run's ``mode`` setting when it goes through the Batch API.
BATCH_MODE = "batch"


@dataclass(frozen=True)
class BatchSettings:
    """How a stored batch run polls (``poll_s`` seconds) and what it does with requests the
    provider failed or let expire (``retry``: ``live``, ``batch`` or ``none``)."""

    poll_s: float = 60.0
    retry: BatchRetry = "live"

    def __post_init__(self) -> None:
        BatchOptions(poll_s=self.poll_s, retry=self.retry)  # the same checks

    def stored(self) -> dict[str, Any]:
        """The run settings that record batch mode."""
        return {"mode": BATCH_MODE, "batch_poll_s": self.poll_s, "batch_retry": self.retry}

    @classmethod
    def of_run(cls, run: JudgeRunRecord) -> BatchSettings:
        settings = run.settings
        return cls(
            poll_s=float(settings.get("batch_poll_s", 60.0)),
            retry=settings.get("batch_retry", "live"),
        )


def is_batch_run(run: JudgeRunRecord) -> bool:
    """Whether a stored run goes through the Batch API."""
    return run.settings.get("mode") == BATCH_MODE


def batch_prices(store: Store) -> dict[str, tuple[float, float]]:
    """The batch prices set on the Settings page, by model (a model without one: no cost)."""
    return store.get_batch_prices()


class StoreBatchLedger:
    """The batches of one stored run, in ``judge_run_batches`` (see :class:`~evalcore.judge.BatchLedger`).

    They stay after the import (the run's record of what it sent): a finished run is never resumed.
    """

    def __init__(self, store: Store, run_id: int) -> None:
        self.store = store
        self.run_id = run_id

    def load(self) -> list[BatchEntry]:
        return [
            BatchEntry(
                round=r.round,
                index=r.part,
                path=r.path,
                requests=r.requests,
                file_id=r.file_id,
                batch_id=r.batch_id,
                status=r.status,
                completed=r.completed,
                failed=r.failed,
                output_file_id=r.output_file_id,
                error_file_id=r.error_file_id,
                error=r.error,
            )
            for r in self.store.run_batches(self.run_id)
        ]

    def save(self, entries: list[BatchEntry]) -> None:
        rows = []
        for entry in entries:
            row = entry.to_dict()
            row["part"] = row.pop("index")
            rows.append(row)
        self.store.save_run_batches(self.run_id, rows)

    def clear(self) -> None:
        """Nothing to forget: the rows are the run's history."""


@dataclass(frozen=True)
class BatchProgress:
    """A batch run's batches as a page shows them."""

    batches: int
    done: int
    requests: int
    answered: int
    failed: int
    statuses: tuple[str, ...]

    @property
    def summary(self) -> str:
        """One line: ``2 batches (1 done) · 1,200 of 1,500 requests answered, 3 failed``."""
        if not self.batches:
            return "no batch submitted yet"
        return (
            f"{self.batches} batch{'es' if self.batches != 1 else ''} ({self.done} done) · "
            f"{self.answered:,} of {self.requests:,} requests answered, {self.failed:,} failed"
        )


def batch_progress(store: Store, run_id: int) -> BatchProgress:
    """How far a batch run's provider batches are (from the store: any process may ask)."""
    rows = [r for r in store.run_batches(run_id) if r.batch_id]
    terminal = {"completed", "failed", "expired", "cancelled"}
    return BatchProgress(
        batches=len(rows),
        done=sum(1 for r in rows if r.status in terminal),
        requests=sum(r.requests for r in rows),
        answered=sum(r.completed for r in rows),
        failed=sum(r.failed for r in rows),
        statuses=tuple(r.status for r in rows),
    )


def execute_batch_run(
    store: Store,
    run: JudgeRunRecord,
    *,
    secrets: Mapping[str, Any] | None = None,
    client: Client | None = None,
    cancel_event: threading.Event | None = None,
    progress: Callable[[Progress], None] | None = None,
    work_dir: Path | None = None,
) -> tuple[RunSummary | None, str | None]:
    """Carry out (or resume) a stored batch run: the counterpart of
    :func:`~evalcore.runs.judge_run_items` for ``mode="batch"`` (its status is the caller's to
    set, but ``running`` here; the caller holds the run's lease, whose heartbeat sets
    ``cancel_event`` when the run is to stop). ``client`` replaces the endpoint's client (tests,
    benchmarks).

    Returns the summary, or ``None`` and the reason when the run cannot go on.
    """
    settings = BatchSettings.of_run(run)
    try:
        if run.template_version_id is None:
            raise ConfigError(f"run {run.name!r} has no template version to run")
        content = store.get_template_version(run.template_version_id).parsed
        endpoint = store.get_endpoint(run.endpoint_id) if run.endpoint_id is not None else None
        source = client
        if source is None:
            if endpoint is None:
                raise ConfigError("choose an endpoint to send the judge requests to")
            if len(base_urls(endpoint.base_url or "")) > 1:
                raise ConfigError(
                    f"endpoint {endpoint.name!r} is a pool of several base URLs: a batch goes to "
                    "one Batch API, so choose an endpoint with one base URL"
                )
            source = client_factory(endpoint_of(endpoint, key_policy(store)), secrets=secrets)
        replies = BatchReplies(source)
        replies.live = settings.retry == "live"
        runner = make_runner(
            content,
            endpoint=endpoint,
            model=run.model,
            settings=run_settings(run),
            prices=store_prices(store),
            client=replies,
        )
        if not runner.model:
            raise ConfigError("a function metric sends no request: run it without batch mode")
        items, db_ids = judge_items(store, run.dataset_id, run.settings.get("item_ids"))
    except EvalcoreError as exc:
        return None, str(exc)
    store.set_run_status(run.id, "running")
    folder = work_dir or Path(tempfile.mkdtemp(prefix=f"evalcore-batch-{run.id}-"))
    options = BatchOptions(
        poll_s=settings.poll_s,
        retry=settings.retry,
        work_dir=folder,
        prices=batch_prices(store),
        metadata={"evalcore_run": str(run.id)},
    )
    writer = StoreWriter(store, run.id)
    sink = StoreSink(store, run.id, db_ids, writer, cancel_event=cancel_event)
    try:
        try:
            summary = asyncio.run(
                run_batch(
                    runner,
                    items,
                    sink,
                    StoreCache(store, writer),
                    replies=replies,
                    ledger=StoreBatchLedger(store, run.id),
                    options=options,
                    progress=progress,
                    notify=lambda message: log.info("judge run %s: %s", run.id, message),
                    is_cancel=lambda: store.get_run(run.id).status == "cancelling",
                )
            )
        finally:
            runner.close()
            writer.close()
            if work_dir is None:
                shutil.rmtree(folder, ignore_errors=True)
    except (JudgeError, EvalcoreError) as exc:
        return None, str(exc)
    except Exception as exc:  # an unexpected fault (the provider's API): keep what was saved
        log.exception("judge run %s stopped", run.id)
        return None, f"{type(exc).__name__}: {exc}"
    return summary, None
