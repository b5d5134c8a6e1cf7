"""Stored judge runs end to end: the fake OpenAI-compatible server over HTTP, a real store.

Nothing of evalcore is mocked: the worker thread runs the real runner with the real ``openai`` client,
and results, progress and the reply cache go through the store (SQLite file and PostgreSQL).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pandas as pd
import pytest

from evalcore.errors import MissingVariableError
from evalcore.judge import RunSettings
from evalcore.labels import LIKERT_5
from evalcore.runs import RunWorker, estimate_run, execute_run, failed_item_ids, plan_run
from evalcore.store import Store
from evalcore.testing import FakeOpenAI, Fault

FAST = RunSettings(concurrency=4, backoff_base=0.01, backoff_max=0.05, timeout=5.0, max_attempts=3)
KEY_ENV = "JUDGE_TEST_API_KEY"
SECRET = "test-secret-value-0123456789"

TEMPLATE = {
    "name": "fluency",
    "criterion": "fluency",
    "kind": "pointwise",
    "scale": [1, 2, 3, 4, 5],
    "system": "Rate the fluency of an answer from 1 to 5.",
    "user": "Question: {{ prompt }}\nAnswer: {{ response }}\n{{ hint }}",
    "output": {"parser": "json", "label_field": "score", "structured": True},
    "model": {"model": "fake-judge", "temperature": 0.0},
}


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def world(store: Store, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv(KEY_ENV, SECRET)
    project = store.create_project("runs")
    criterion = store.create_criterion(project.id, "fluency", kind="pointwise", scale=LIKERT_5)
    items = pd.DataFrame(
        {
            "item_id": [f"i{n}" for n in range(12)],
            "prompt": [f"question {n}" for n in range(12)],
            "response": [f"answer {n}" for n in range(12)],
            # the fake server answers with the label named by "expect=" in the prompt
            "hint": [f"expect={1 + n % 5}" for n in range(12)],
        }
    )
    dataset = store.save_dataset(project.id, "answers", items, kind="pointwise")
    template = store.create_template(project.id, "fluency", criterion.id)
    version = store.save_template_version(template.id, TEMPLATE, author="eve")
    endpoint = store.upsert_endpoint(
        "fake", kind="openai", base_url=fake.base_url, api_key_env=KEY_ENV
    )
    return {"dataset": dataset, "version": version, "endpoint": endpoint, "criterion": criterion}


def _plan(store: Store, world: dict, **kwargs) -> int:
    return plan_run(
        store,
        dataset_id=world["dataset"].id,
        template_version_id=world["version"].id,
        endpoint_id=world["endpoint"].id,
        settings=kwargs.pop("settings", FAST),
        **kwargs,
    ).id


def test_run_writes_every_result_and_the_cache_makes_a_rerun_free(
    store: Store, world: dict, fake: FakeOpenAI
) -> None:
    run_id = _plan(store, world)
    summary = execute_run(store, run_id)
    assert summary is not None
    assert summary.complete
    run = store.get_run(run_id)
    assert run.status == "done"
    frame = store.results_frame(run_id)
    assert len(frame) == 12
    # expect=1..5 cycling over 12 items: labels follow the markers
    assert frame.set_index("item_id").loc["i7", "label"] == "3"
    progress = store.run_progress(run_id)
    assert (progress.ok, progress.unparsed, progress.failed) == (12, 0, 0)
    requests_before = fake.count
    # a second run of the same template version costs no request at all
    second = _plan(store, world, name="again")
    assert (
        estimate_run(
            store,
            dataset_id=world["dataset"].id,
            template_version_id=world["version"].id,
            model="fake-judge",
            endpoint_id=world["endpoint"].id,
        ).n_cached
        == 12
    )
    summary2 = execute_run(store, second)
    assert summary2 is not None
    assert summary2.cached == 12
    assert fake.count == requests_before
    assert store.run_progress(second).ok == 12


def test_missing_variable_is_refused_before_the_run_exists(store: Store, world: dict) -> None:
    broken = dict(TEMPLATE, user="{{ prompt }} {{ respnse }}")
    version = store.save_template_version(world["version"].template_id, broken, author="eve")
    with pytest.raises(MissingVariableError, match="respnse"):
        plan_run(
            store,
            dataset_id=world["dataset"].id,
            template_version_id=version.id,
            endpoint_id=world["endpoint"].id,
        )
    assert store.list_runs(dataset_id=world["dataset"].id) == []


def test_missing_key_fails_the_run_naming_the_endpoint_not_the_variable(
    store: Store, world: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV)
    run_id = _plan(store, world)
    assert execute_run(store, run_id) is None
    run = store.get_run(run_id)
    assert run.status == "failed"
    assert "API key is not available on the server" in (run.error or "")
    assert "'fake'" in (run.error or "")
    assert KEY_ENV not in (run.error or "")


def test_the_key_is_never_written_anywhere(store: Store, world: dict) -> None:
    run_id = _plan(store, world)
    execute_run(store, run_id)
    dumped = []
    with store.engine.connect() as conn:
        for table in (
            "endpoints",
            "judge_runs",
            "judge_results",
            "judge_cache",
            "template_versions",
        ):
            dumped += [repr(tuple(row)) for row in conn.exec_driver_sql(f"SELECT * FROM {table}")]
    assert dumped
    assert not any(SECRET in row for row in dumped)


def test_cancel_then_resume_judges_every_item_exactly_once(
    store: Store, world: dict, fake: FakeOpenAI
) -> None:
    fake.latency = 0.15
    settings = RunSettings(concurrency=2, timeout=5.0, max_attempts=2, cancel_grace=2.0)
    run_id = _plan(store, world, settings=settings)
    worker = RunWorker(store)
    try:
        worker.submit(run_id)
        deadline = time.monotonic() + 20
        while store.run_progress(run_id).ok < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        worker.cancel(run_id)
        worker.wait(run_id, timeout=30)
        assert store.get_run(run_id).status == "cancelled"
        done_before = store.run_progress(run_id).ok
        assert 3 <= done_before < 12
        # resume: the run goes back to work and only pays for what is missing
        store.set_run_status(run_id, "pending")
        worker.submit(run_id)
        worker.wait(run_id, timeout=60)
    finally:
        worker.shutdown()
    assert store.get_run(run_id).status == "done"
    frame = store.results_frame(run_id)
    assert sorted(frame["item_id"]) == sorted(f"i{n}" for n in range(12))
    prompts = [r.body["messages"][-1]["content"] for r in fake.requests if r.body]
    # no item was requested twice (a request in flight at the cancel may be its only one)
    assert len(prompts) == len(set(prompts))


def test_a_cancel_requested_through_the_store_alone_stops_the_run(
    store: Store, world: dict, fake: FakeOpenAI
) -> None:
    """Another server process can only set the run to ``cancelling``; the writer's heartbeat sees it."""
    fake.latency = 0.5  # 12 items, 2 at a time: 3 s, long enough for a heartbeat (1 s) to see it
    settings = RunSettings(concurrency=2, timeout=5.0, max_attempts=2, cancel_grace=2.0)
    run_id = _plan(store, world, settings=settings)
    outcome: list[object] = []
    thread = threading.Thread(target=lambda: outcome.append(execute_run(store, run_id)))
    thread.start()
    deadline = time.monotonic() + 20
    while store.run_progress(run_id).ok < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert store.get_run(run_id).heartbeat_at is not None  # the writer keeps the run alive
    store.request_cancel(run_id)  # no event, no worker: only the database knows
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert store.get_run(run_id).status == "cancelled"
    assert 2 <= store.run_progress(run_id).ok < 12


def test_a_stale_run_is_resumed_by_a_new_worker(store: Store, world: dict) -> None:
    run_id = _plan(store, world)
    store.set_run_status(run_id, "running")  # a server that died mid-run leaves this behind
    worker = RunWorker(store)
    try:
        assert worker.resume_stale(stale_after_s=0.0) == [run_id]
        worker.wait(run_id, timeout=60)
    finally:
        worker.shutdown()
    assert store.get_run(run_id).status == "done"
    assert store.run_progress(run_id).ok == 12


def test_failed_items_are_recorded_and_can_be_rerun_alone(
    store: Store, world: dict, fake: FakeOpenAI
) -> None:
    fake.faults = (Fault.status_code(500, match="question 4"),)
    run_id = _plan(store, world)
    execute_run(store, run_id)
    progress = store.run_progress(run_id)
    assert (progress.ok, progress.failed) == (11, 1)
    assert failed_item_ids(store, run_id) == ["i4"]
    fake.faults = ()
    rerun = _plan(store, world, item_ids=failed_item_ids(store, run_id), name="retry failed")
    execute_run(store, rerun)
    frame = store.results_frame(rerun)
    assert frame["item_id"].tolist() == ["i4"]
    assert frame["status"].tolist() == ["ok"]


def test_a_run_whose_items_all_failed_ends_failed_with_the_first_reason(
    store: Store, world: dict, fake: FakeOpenAI
) -> None:
    fake.faults = (Fault.status_code(400, match="question"),)  # every item: a 400 at once
    run_id = _plan(store, world)
    summary = execute_run(store, run_id)
    assert summary is not None
    assert summary.complete
    assert summary.failed == 12
    run = store.get_run(run_id)
    assert run.status == "failed"
    assert run.error is not None
    assert run.error.startswith("every item failed; the first: HTTP 400")
    assert store.first_failure(run_id) == store.results_frame(run_id)["error"].iloc[0]


def test_a_run_with_some_failures_is_done(store: Store, world: dict, fake: FakeOpenAI) -> None:
    fake.faults = (Fault.status_code(400, match="question 3\n"),)
    run_id = _plan(store, world)
    execute_run(store, run_id)
    assert store.get_run(run_id).status == "done"
    assert store.first_failure(run_id) is not None
    assert store.run_progress(run_id).failed == 1


def test_worker_threads_leave_no_run_behind_on_shutdown(store: Store, world: dict) -> None:
    # Other tests' cached workers may still be alive in this process, so only
    # the threads this worker started are checked.
    before = set(threading.enumerate())
    run_id = _plan(store, world)
    worker = RunWorker(store)
    worker.submit(run_id)
    worker.shutdown(wait=True)
    # a shutdown is not a cancel: a run it stopped stays "running" for the next worker to resume
    status = store.get_run(run_id).status
    assert status in {"done", "running"}
    if status == "running":
        assert [r.id for r in store.runs_to_resume(stale_after_s=0.0)] == [run_id]
    started = [t for t in threading.enumerate() if t not in before]
    assert not [t.name for t in started if t.name.startswith("judge-run")]


def test_a_replicate_run_of_the_same_version_samples_again(
    store: Store, world: dict, fake: FakeOpenAI
) -> None:
    from dataclasses import replace

    from evalcore.runs import run_settings

    first = _plan(store, world)
    assert execute_run(store, first) is not None
    assert fake.count == 12
    second = _plan(store, world, name="replicate 1", settings=replace(FAST, replicate=1))
    record = store.get_run(second)
    assert record.settings["replicate"] == 1  # kept in the run's configuration
    assert run_settings(record).replicate == 1
    summary = execute_run(store, second)
    assert summary is not None
    assert (summary.cached, summary.requests) == (0, 12)  # really asked again
    assert fake.count == 24
    # resuming the replicate run costs nothing: every item is finished
    again = execute_run(store, second)
    assert again is None or again.requests == 0
    assert fake.count == 24
    assert store.run_progress(second).ok == 12
