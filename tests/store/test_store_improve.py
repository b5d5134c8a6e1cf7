"""Optimisation jobs in the store (migration 0008), on SQLite and PostgreSQL."""

from __future__ import annotations

import pandas as pd
import pytest

from evalcore.errors import ConfigError, NotFoundError
from evalcore.labels import PASS_FAIL
from evalcore.store import Store

TEMPLATE = {
    "name": "t",
    "criterion": "grounded",
    "kind": "pointwise",
    "scale": ["pass", "fail"],
    "user": "{{ response }}",
    "output": {"parser": "json", "label_field": "label"},
    "model": {"model": "m"},
}


@pytest.fixture
def ids(store: Store) -> tuple[int, int, int]:
    project = store.create_project("p")
    criterion = store.create_criterion(project.id, "grounded", kind="pointwise", scale=PASS_FAIL)
    items = pd.DataFrame({"item_id": ["a"], "response": ["x"]})
    dataset = store.save_dataset(project.id, "d", items)
    template = store.create_template(project.id, "t", criterion_id=criterion.id)
    version = store.save_template_version(template.id, TEMPLATE, author="eve")
    return dataset.id, criterion.id, version.id


def test_a_job_keeps_its_settings_progress_and_report(store: Store, ids) -> None:
    dataset, criterion, version = ids
    job = store.create_improve_job(
        dataset, criterion, version, settings={"model": "m"}, author="eve"
    )
    assert (job.status, job.settings, job.progress, job.report) == (
        "pending",
        {"model": "m"},
        {},
        None,
    )
    assert store.update_improve_job(dataset, job.id, status="running") == "running"
    store.update_improve_job(dataset, job.id, progress={"phase": "dev", "done": 1, "total": 4})
    store.update_improve_job(dataset, job.id, status="done", report={"best": None})
    saved = store.get_improve_job(dataset, job.id)
    assert saved.progress == {"phase": "dev", "done": 1, "total": 4}
    assert saved.report == {"best": None}
    assert saved.is_terminal
    assert saved.finished_at is not None
    assert [j.id for j in store.list_improve_jobs(dataset)] == [job.id]


def test_a_cancel_request_wins_over_a_running_report(store: Store, ids) -> None:
    dataset, criterion, version = ids
    job = store.create_improve_job(dataset, criterion, version, settings={})
    store.update_improve_job(dataset, job.id, status="running")
    assert store.request_improve_cancel(dataset, job.id) == "cancelling"
    assert store.update_improve_job(dataset, job.id, status="running") == "cancelling"
    assert store.update_improve_job(dataset, job.id, status="cancelled") == "cancelled"
    pending = store.create_improve_job(dataset, criterion, version, settings={})
    assert store.request_improve_cancel(dataset, pending.id) == "cancelled"


def test_a_job_is_found_only_through_its_dataset(store: Store, ids) -> None:
    dataset, criterion, version = ids
    job = store.create_improve_job(dataset, criterion, version, settings={})
    project = store.get_dataset(dataset).project_id
    other = store.save_dataset(
        project, "other", pd.DataFrame({"item_id": ["z"], "response": ["y"]})
    )
    with pytest.raises(NotFoundError):
        store.get_improve_job(other.id, job.id)
    with pytest.raises(NotFoundError):
        store.update_improve_job(other.id, job.id, status="done")
    with pytest.raises(ConfigError):
        store.update_improve_job(dataset, job.id, status="finished")  # type: ignore[arg-type]


def test_stale_jobs_are_offered_for_resuming(store: Store, ids) -> None:
    dataset, criterion, version = ids
    running = store.create_improve_job(dataset, criterion, version, settings={})
    store.update_improve_job(dataset, running.id, status="running")
    stopping = store.create_improve_job(dataset, criterion, version, settings={})
    store.update_improve_job(dataset, stopping.id, status="running")
    store.request_improve_cancel(dataset, stopping.id)
    done = store.create_improve_job(dataset, criterion, version, settings={})
    store.update_improve_job(dataset, done.id, status="done")
    assert store.improve_jobs_to_resume(stale_after_s=3600) == []
    assert [j.id for j in store.improve_jobs_to_resume(stale_after_s=-1)] == [running.id]
    assert store.get_improve_job(dataset, stopping.id).status == "cancelled"
