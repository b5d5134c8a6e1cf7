"""Optimisation jobs over the store ("Improve"), against the scripted fake judge and optimiser.

Each job runs in a real :class:`~evalcore.runs.RunWorker` thread, talking HTTP through the real
``openai`` client to :class:`~evalcore.testing.FakeOpenAI`, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pandas as pd
import pytest

from evalcore.errors import ConfigError, PermissionDeniedError
from evalcore.improve import OptimizeSettings, SplitTooSmallError
from evalcore.labels import PASS_FAIL
from evalcore.runs import (
    RunWorker,
    estimate_optimization,
    execute_optimization,
    restart_optimization,
    save_optimized_version,
    split_name,
    start_optimization,
)
from evalcore.store import Actor, ImproveJobRecord, Store
from evalcore.testing import FakeOpenAI, Scripted, truth_marker

KEY_ENV = "IMPROVE_TEST_API_KEY"
OPTIMIZER = "fake-optimizer"
N_ITEMS = 120

TEMPLATE = {
    "name": "grounded",
    "criterion": "grounded",
    "kind": "pointwise",
    "scale": ["pass", "fail"],
    "system": "You check whether a reply sticks to its source.",
    "user": 'Reply:\n{{ response }}\n\nAnswer with JSON only: {"reason": "...", "label": "pass"}',
    "output": {"parser": "json", "label_field": "label"},
    "model": {"model": "fake-judge", "temperature": 0.0},
}
SMALL = OptimizeSettings(fewshot_candidates=2, fewshot_max=2, rewrites=1, finalists=2)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    # "pass" is judged well already, "fail" only half the time unless a rule or an example helps
    server = FakeOpenAI(
        Scripted(base={"pass": 0.9, "fail": 0.5}, optimizer_model=OPTIMIZER)
    ).start()
    yield server
    server.stop()


@pytest.fixture
def world(store: Store, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv(KEY_ENV, "improve-test-secret")
    project = store.create_project("improve")
    criterion = store.create_criterion(project.id, "grounded", kind="pointwise", scale=PASS_FAIL)
    ids = [f"c{i:03d}" for i in range(N_ITEMS)]
    truth = ["fail" if i % 2 else "pass" for i in range(N_ITEMS)]
    items = pd.DataFrame(
        {
            "item_id": ids,
            "response": [
                f"Reply {i}. {truth_marker(item_id, label)}"
                for i, (item_id, label) in enumerate(zip(ids, truth, strict=True))
            ],
        }
    )
    dataset = store.save_dataset(project.id, "replies", items, kind="pointwise")
    labels = pd.DataFrame(
        {
            "item_id": ids,
            "annotator": "ann",
            "label": truth,
            "comment": [f"note {i}" if i % 10 == 0 else None for i in range(N_ITEMS)],
        }
    )
    store.import_labels(dataset.id, criterion.id, labels)
    template = store.create_template(project.id, "grounded", criterion.id)
    version = store.save_template_version(template.id, TEMPLATE, author="eve")
    endpoint = store.upsert_endpoint(
        "fake", kind="openai", base_url=fake.base_url, api_key_env=KEY_ENV
    )
    return {
        "project": project,
        "dataset": dataset,
        "criterion": criterion,
        "version": version,
        "endpoint": endpoint,
    }


def _start(store: Store, world: dict, worker: RunWorker | None, **settings: object) -> int:
    return start_optimization(
        store,
        dataset_id=world["dataset"].id,
        criterion_id=world["criterion"].id,
        template_version_id=world["version"].id,
        endpoint_id=world["endpoint"].id,
        model="fake-judge",
        optimizer_endpoint_id=world["endpoint"].id,
        optimizer_model=OPTIMIZER,
        settings=OptimizeSettings(**{**SMALL.__dict__, **settings}),
        author="eve",
        worker=worker,
    )


def _wait(store: Store, dataset_id: int, job_id: int, timeout: float = 120.0) -> ImproveJobRecord:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = store.get_improve_job(dataset_id, job_id)
        if job.is_terminal:
            return job
        time.sleep(0.05)
    raise AssertionError(f"optimisation {job_id} did not end")


def test_a_job_in_the_worker_finds_a_better_version_and_saves_it(
    store: Store, world: dict, fake: FakeOpenAI
) -> None:
    dataset_id = world["dataset"].id
    worker = RunWorker(store)
    try:
        job_id = _start(store, world, worker)
        job = _wait(store, dataset_id, job_id)
    finally:
        worker.shutdown()
    assert job.status == "done", job.error
    report = job.report
    assert report is not None
    assert job.progress["requests"] == report["requests"] > 0
    # the split is saved under the share and seed, with every labelled item on one side
    split = store.get_split(dataset_id, world["criterion"].id, split_name(0.4, 0))
    assert len(split.dev) + len(split.test) == N_ITEMS
    assert report["split"]["test"] == list(split.test)
    winners = [f for f in report["finalists"] if f["beats_start"]]
    assert winners, report["finalists"]
    before = len(store.list_template_versions(world["version"].template_id))
    saved = save_optimized_version(store, dataset_id, job_id, winners[0]["id"], author="eve")
    assert saved.number == before + 1
    assert split.name in (saved.note or "")
    # a candidate that did not beat the start is refused
    won = {w["id"] for w in winners}
    losers = [c["id"] for c in report["candidates"] if c["id"] not in won]
    if losers:
        with pytest.raises(ConfigError, match="did not beat"):
            save_optimized_version(store, dataset_id, job_id, losers[0], author="eve")


def test_a_second_job_with_the_same_settings_is_answered_from_the_cache(
    store: Store, world: dict, fake: FakeOpenAI
) -> None:
    dataset_id = world["dataset"].id
    first = _start(store, world, None)
    execute_optimization(store, dataset_id, first)
    sent = fake.count
    again = restart_optimization(store, dataset_id, first, author="eve")
    execute_optimization(store, dataset_id, again)
    assert store.get_improve_job(dataset_id, again).status == "done"
    assert fake.count == sent
    a = store.get_improve_job(dataset_id, first).report
    b = store.get_improve_job(dataset_id, again).report
    assert a is not None
    assert b is not None
    assert a["finalists"] == b["finalists"]
    assert a["split"] == b["split"]


def test_cancel_keeps_what_is_done_and_a_restart_goes_on_from_the_cache(
    store: Store, world: dict, fake: FakeOpenAI
) -> None:
    dataset_id = world["dataset"].id
    fake.latency = 0.02
    worker = RunWorker(store)
    try:
        job_id = _start(store, world, worker)
        deadline = time.monotonic() + 60
        while fake.count < 20 and time.monotonic() < deadline:
            time.sleep(0.01)
        worker.cancel_improve(dataset_id, job_id)
        job = _wait(store, dataset_id, job_id)
    finally:
        worker.shutdown()
    assert job.status == "cancelled"
    assert job.report is not None
    assert job.report["stopped"] == "cancelled"
    before = {r.prompt for r in fake.requests}
    sent = fake.count
    fake.latency = 0.0
    again = restart_optimization(store, dataset_id, job_id, author="eve")
    execute_optimization(store, dataset_id, again)
    done = store.get_improve_job(dataset_id, again)
    assert done.status == "done"
    assert done.report is not None
    # the restart sent only what the cache could not answer: nothing asked before the cancel
    # (bar the requests still in flight when it came) went out again
    assert fake.count - sent == done.report["requests"]
    repeated = [r for r in fake.requests[sent:] if r.prompt in before]
    assert len(repeated) <= 2


def test_a_job_stopped_with_the_server_is_resumed_by_the_next_worker_from_the_cache(
    store: Store, world: dict, fake: FakeOpenAI
) -> None:
    dataset_id = world["dataset"].id
    fake.latency = 0.02
    worker = RunWorker(store)
    job_id = _start(store, world, worker)
    deadline = time.monotonic() + 60
    while fake.count < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    worker.shutdown()  # the server exits mid-job
    assert store.get_improve_job(dataset_id, job_id).status == "running"
    before = {r.prompt for r in fake.requests}
    sent = fake.count
    fake.latency = 0.0
    restarted = RunWorker(store)
    try:
        restarted.resume_stale(stale_after_s=0.0)
        job = _wait(store, dataset_id, job_id)
    finally:
        restarted.shutdown()
    assert job.status == "done", job.error
    assert job.report is not None
    assert sent > 0
    assert fake.count - sent == job.report["requests"]
    # what was judged before the shutdown came from the cache
    assert len([r for r in fake.requests[sent:] if r.prompt in before]) <= 2


def test_the_budget_cap_stops_the_job(store: Store, world: dict) -> None:
    dataset_id = world["dataset"].id
    job_id = _start(store, world, None, max_requests=30)
    execute_optimization(store, dataset_id, job_id)
    job = store.get_improve_job(dataset_id, job_id)
    assert job.report is not None
    assert job.report["stopped"] == "budget"
    assert job.report["requests"] <= 30


def test_too_few_labels_are_refused_before_a_job_exists(store: Store, world: dict) -> None:
    project = world["project"]
    items = pd.DataFrame({"item_id": ["a", "b", "c"], "response": ["x", "y", "z"]})
    tiny = store.save_dataset(project.id, "tiny", items, kind="pointwise")
    store.import_labels(
        tiny.id,
        world["criterion"].id,
        pd.DataFrame({"item_id": ["a", "b", "c"], "annotator": "ann", "label": ["pass"] * 3}),
    )
    with pytest.raises(SplitTooSmallError):
        _start(store, {**world, "dataset": tiny}, None)
    assert store.list_improve_jobs(tiny.id) == []


def test_an_estimate_counts_requests_and_labelled_items(store: Store, world: dict) -> None:
    estimate = estimate_optimization(
        store,
        dataset_id=world["dataset"].id,
        criterion_id=world["criterion"].id,
        template_version_id=world["version"].id,
        model="fake-judge",
        optimizer_model=OPTIMIZER,
        settings=SMALL,
    )
    assert estimate.labelled == N_ITEMS
    assert estimate.requests >= N_ITEMS  # at least the start on every item
    assert estimate.tokens_in > 0


def test_a_viewer_cannot_start_an_optimisation(store: Store, world: dict) -> None:
    viewer = store.acting_as(Actor("vic", "viewer", {world["project"].id: "viewer"}))
    with pytest.raises(PermissionDeniedError):
        _start(viewer, world, None)
