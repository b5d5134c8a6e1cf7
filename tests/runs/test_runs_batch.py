"""Stored runs in batch mode, carried out by the RunWorker through the fake server's Batch API
(real ``openai`` client over HTTP), on SQLite and PostgreSQL."""

from __future__ import annotations

import time

import pytest

from evalcore.judge import RunSettings, RunSummary
from evalcore.runs import (
    BatchSettings,
    RunWorker,
    batch_progress,
    estimate_run,
    execute_run,
    is_batch_run,
    plan_run,
)
from evalcore.store import Store
from evalcore.testing import FakeOpenAI
from tests.runs import test_runs_service as service
from tests.runs.test_runs_service import FAST

# the run-service tests' fixtures (a fake server; 12 items, a template and an endpoint on it)
fake = service.fake
world = service.world


def _plan(
    store: Store, world: dict, batch: BatchSettings | None, settings: RunSettings = FAST
) -> int:
    return plan_run(
        store,
        dataset_id=world["dataset"].id,
        template_version_id=world["version"].id,
        endpoint_id=world["endpoint"].id,
        settings=settings,
        batch=batch,
    ).id


def _in_worker(store: Store, run_id: int) -> RunSummary:
    """Carry out a run in a RunWorker, as the app does, and wait for its end."""
    worker = RunWorker(store)
    try:
        worker.submit(run_id)
        summary = worker.wait(run_id, timeout=120)
    finally:
        worker.shutdown()
    assert summary is not None
    return summary


def _wait_until(condition: object, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_batch_run_through_the_worker_equals_a_live_run(
    store: Store, world: dict, fake: FakeOpenAI
) -> None:
    live_id = _plan(store, world, None)
    assert execute_run(store, live_id) is not None
    live = store.results_frame(live_id).set_index("item_id")
    fake.reset()
    store.set_batch_price("fake-judge", input_per_mtok=1.0, output_per_mtok=2.0)
    run_id = _plan(store, world, BatchSettings(poll_s=0, retry="none"))
    assert is_batch_run(store.get_run(run_id))
    # the live run's replies are in the shared cache: a batch run of the same requests sends none
    summary = _in_worker(store, run_id)
    assert summary.cached == 12
    assert store.get_run(run_id).status == "done"
    assert fake.batch_calls("create") == 0

    # another replicate: every request goes into the batch
    fresh = _plan(store, world, BatchSettings(poll_s=0, retry="none"), RunSettings(replicate=1))
    summary = _in_worker(store, fresh)
    assert (summary.ok, summary.cached) == (12, 0)
    assert store.get_run(fresh).status == "done"
    assert fake.batch_calls("create") == 1
    assert all(r.batch_id for r in fake.requests)
    frame = store.results_frame(fresh).set_index("item_id")
    assert frame["label"].to_dict() == live["label"].to_dict()
    assert (frame["status"] == "ok").all()
    # the batch price: every result has a cost
    assert frame["cost"].notna().all()
    assert (frame["cost"] > 0).all()
    progress = batch_progress(store, fresh)
    assert (progress.batches, progress.done, progress.requests, progress.answered) == (1, 1, 12, 12)
    assert "1 batch (1 done)" in progress.summary


def test_a_resumed_batch_run_never_submits_twice_and_a_cancel_keeps_what_came_back(
    store: Store, world: dict, fake: FakeOpenAI
) -> None:
    fake.batch_polls_to_complete = 1_000_000  # in progress until the test says otherwise
    run_id = _plan(store, world, BatchSettings(poll_s=0.05, retry="live"))
    worker = RunWorker(store)
    try:
        worker.submit(run_id)
        _wait_until(lambda: fake.batch_calls("retrieve") >= 2)
    finally:
        worker.shutdown()  # a shutdown is not a cancel: the run stays running
    assert store.get_run(run_id).status == "running"
    assert [b.batch_id for b in store.run_batches(run_id)] == ["batch_fake000001"]
    # another process resumes it; this time the batch answers half its lines per retrieve
    fake.batch_polls_to_complete = 2
    summary = _in_worker(store, run_id)
    assert summary.ok == 12
    assert fake.batch_calls("create") == 1
    assert store.get_run(run_id).status == "done"

    # a cancel from the page: the provider's batch is cancelled, what it answered is kept
    fake.batch_polls_to_complete = 3
    cancelled = _plan(
        store, world, BatchSettings(poll_s=0.05, retry="live"), RunSettings(replicate=2)
    )
    worker = RunWorker(store)
    try:
        worker.submit(cancelled)
        _wait_until(lambda: batch_progress(store, cancelled).answered > 0)
        worker.cancel(cancelled)
        summary = worker.wait(cancelled, timeout=120)
    finally:
        worker.shutdown()
    assert summary is not None
    assert summary.cancelled
    assert store.get_run(cancelled).status == "cancelled"
    assert fake.batch_calls("cancel") == 1
    kept = store.run_progress(cancelled)
    assert 0 < kept.ok < 12
    assert all(r.batch_id for r in fake.requests)


def test_batch_prices_are_kept_apart_from_live_prices(store: Store) -> None:
    store.set_model_price("m", input_per_mtok=2.0, output_per_mtok=8.0)
    assert store.get_batch_prices() == {}
    store.set_batch_price("m", input_per_mtok=1.0, output_per_mtok=4.0)
    store.set_model_price("m", input_per_mtok=3.0, output_per_mtok=9.0)
    assert store.get_batch_prices() == {"m": (1.0, 4.0)}
    store.delete_batch_price("m")
    assert store.get_batch_prices() == {}
    assert store.get_model_prices()["m"].input_per_mtok == 3.0


def test_the_estimate_of_a_batch_run_uses_the_batch_price(store: Store, world: dict) -> None:
    common = {
        "dataset_id": world["dataset"].id,
        "template_version_id": world["version"].id,
        "model": "fake-judge",
    }
    assert estimate_run(store, **common, batch=True).expected_cost is None
    store.set_model_price("fake-judge", input_per_mtok=2.0, output_per_mtok=8.0)
    store.set_batch_price("fake-judge", input_per_mtok=1.0, output_per_mtok=4.0)
    live = estimate_run(store, **common).expected_cost
    batch = estimate_run(store, **common, batch=True).expected_cost
    assert live is not None
    assert batch is not None
    assert batch == pytest.approx(live / 2)


def test_the_price_editor_keeps_optional_batch_prices(store: Store) -> None:
    from evalcore.errors import ConfigError
    from evalcore.runs import price_table, save_prices

    store.set_model_price("a", input_per_mtok=2.0, output_per_mtok=8.0)
    store.set_model_price("b", input_per_mtok=1.0, output_per_mtok=4.0)
    table = price_table(store)
    assert table["batch_input_per_mtok"].isna().all()
    table.loc[table["model"] == "a", ["batch_input_per_mtok", "batch_output_per_mtok"]] = [1, 4]
    assert save_prices(store, table) == {"set": 1, "removed": 0}
    assert store.get_batch_prices() == {"a": (1.0, 4.0)}
    # a table without the batch columns leaves them alone; one with blanks clears them
    save_prices(store, price_table(store)[["model", "input_per_mtok", "output_per_mtok"]])
    assert store.get_batch_prices() == {"a": (1.0, 4.0)}
    table = price_table(store)
    table["batch_input_per_mtok"] = None
    table["batch_output_per_mtok"] = None
    save_prices(store, table)
    assert store.get_batch_prices() == {}
    half = price_table(store)
    half.loc[0, "batch_input_per_mtok"] = 1.0
    with pytest.raises(ConfigError, match="batch output price of 'a' is missing"):
        save_prices(store, half)


def test_a_pool_endpoint_is_refused_in_batch_mode(store: Store, world: dict) -> None:
    pool = store.upsert_endpoint(
        "pool", kind="openai", base_url="http://127.0.0.1:9/v1\nhttp://127.0.0.1:10/v1"
    )
    run_id = plan_run(
        store,
        dataset_id=world["dataset"].id,
        template_version_id=world["version"].id,
        endpoint_id=pool.id,
        settings=FAST,
        batch=BatchSettings(poll_s=0),
    ).id
    assert execute_run(store, run_id) is None
    run = store.get_run(run_id)
    assert run.status == "failed"
    assert "a pool of several base URLs" in (run.error or "")
