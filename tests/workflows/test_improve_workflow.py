"""The Improve workflow (:mod:`evalcore.workflows.improve`) without Streamlit: an optimisation in
the server's real worker against the scripted fake judge and optimiser, its typed report, saving
a winner, cancelling and starting again, and every command refused for those who may not."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, replace

import pandas as pd
import pytest

from evalcore.errors import ConfigError
from evalcore.improve import OPTIMIZE_SETTINGS, OptimizeSettings
from evalcore.labels import PASS_FAIL
from evalcore.store import ImproveJobRecord, Store
from evalcore.testing import FakeOpenAI, Scripted, truth_marker
from evalcore.workflows import improve as flow
from tests.workflows.conftest import People, assert_refused

KEY_ENV = "WORKFLOW_IMPROVE_API_KEY"
OPTIMIZER = "fake-optimizer"
N_ITEMS = 80
SMALL = {"fewshot_candidates": 2, "rewrites": 1, "finalists": 2}
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


@dataclass
class World:
    people: People
    store: Store
    fake: FakeOpenAI
    request: flow.ImproveRequest
    template: int


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    # "pass" is judged well already, "fail" only half the time unless a rule or an example helps
    with FakeOpenAI(Scripted(base={"pass": 0.9, "fail": 0.5}, optimizer_model=OPTIMIZER)) as s:
        yield s


@pytest.fixture
def world(people: People, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> World:
    monkeypatch.setenv(KEY_ENV, "workflow-improve-secret")
    store = people.server.store
    criterion = store.create_criterion(
        people.project, "grounded", kind="pointwise", scale=PASS_FAIL
    )
    ids = [f"c{i:03d}" for i in range(N_ITEMS)]
    truth = ["fail" if i % 2 else "pass" for i in range(N_ITEMS)]
    replies = [
        f"Reply {i}. {truth_marker(k, t)}" for i, (k, t) in enumerate(zip(ids, truth, strict=True))
    ]
    dataset = store.save_dataset(
        people.project, "replies", pd.DataFrame({"item_id": ids, "response": replies})
    )
    store.import_labels(
        dataset.id, criterion.id, pd.DataFrame({"item_id": ids, "annotator": "ann", "label": truth})
    )
    template = store.create_template(people.project, "grounded", criterion.id)
    version = store.save_template_version(template.id, TEMPLATE, author="eve")
    endpoint = store.upsert_endpoint("fake", base_url=fake.base_url, api_key_env=KEY_ENV)
    request = flow.ImproveRequest(
        dataset_id=dataset.id,
        criterion_id=criterion.id,
        version_id=version.id,
        endpoint_id=endpoint.id,
        optimizer_endpoint_id=endpoint.id,
        optimizer_model=OPTIMIZER,
        values=SMALL,
    )
    return World(people, store, fake, request, template.id)


def _wait(store: Store, dataset_id: int, job_id: int, timeout: float = 120.0) -> ImproveJobRecord:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = store.get_improve_job(dataset_id, job_id)
        if job.is_terminal:
            return job
        time.sleep(0.05)
    raise AssertionError(f"optimisation {job_id} did not end")


def test_the_settings_a_person_chooses_are_the_librarys_declared_ones(world: World) -> None:
    assert tuple(s for s in OPTIMIZE_SETTINGS if s.name != "metric") == flow.SETTINGS
    assert world.request.settings() == OptimizeSettings(**SMALL)


def test_what_can_be_improved_and_the_models_it_would_use(world: World) -> None:
    session = world.people.engineer()
    found = flow.choices(session, world.people.project)
    assert [c.name for c in found.criteria] == ["grounded"]
    assert [e.name for e in found.endpoints] == ["fake"]
    [choice] = flow.versions(session, world.people.project, world.request.criterion_id)
    assert (choice.id, choice.label) == (world.request.version_id, "grounded v1")
    models = flow.models(session, world.request)
    assert (models.judge, models.optimizer) == ("fake-judge", OPTIMIZER)
    own = flow.models(session, replace(world.request, model="mine", optimizer_model=""))
    assert (own.judge, own.optimizer) == ("mine", "mine")
    estimate = flow.estimate(session, world.request)
    assert estimate.labelled == N_ITEMS
    assert estimate.requests > 0
    assert estimate.cost is None
    assert estimate.note is not None
    assert "price" in estimate.note
    with pytest.raises(ConfigError, match="Finalists"):
        flow.estimate(session, replace(world.request, values={"finalists": 9}))


def test_an_optimisation_runs_in_the_worker_and_its_report_is_typed(world: World) -> None:
    session = world.people.engineer()
    dataset_id = world.request.dataset_id
    job_id = flow.start(session, world.request)
    assert [j.id for j in flow.jobs(session, dataset_id)] == [job_id]
    job = _wait(world.store, dataset_id, job_id)
    assert job.status == "done", job.error
    view = flow.job(session, dataset_id, job_id)
    assert (view.fraction, view.line, view.can_cancel, view.can_restart) == (
        1.0, "done", False, False,
    )  # fmt: skip
    assert view.done == view.total > 0
    report = view.report
    assert report is not None
    assert report.n_dev + report.n_test == N_ITEMS
    assert report.metric == "accuracy_balanced"
    assert report.metric_name != report.metric
    assert report.candidates[0].kind == "start"
    assert {"fewshot", "rewrite"} & {c.kind for c in report.candidates}
    assert report.finalists[0].kind == "start"
    assert len(report.finalists) <= 3
    assert report.stopped is None
    assert report.stopped_text is None
    table = report.candidate_table()
    assert list(table.columns)[:3] == ["candidate", "kind", f"{report.metric_name} (dev)"]
    assert "McNemar p" in report.test_table().columns
    assert report.winners, report
    assert view.saveable == report.winners
    before = len(world.store.list_template_versions(world.template))
    saved = flow.save(session, dataset_id, job_id, report.winners[0])
    assert saved.number == before + 1
    assert report.split in (saved.note or "")
    with pytest.raises(ConfigError):
        flow.save(session, dataset_id, job_id, "start")


def test_an_optimisation_is_cancelled_and_started_again(world: World) -> None:
    session = world.people.engineer()
    dataset_id = world.request.dataset_id
    world.fake.latency = 0.05
    job_id = flow.start(session, world.request)
    deadline = time.monotonic() + 60
    while world.fake.count < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    flow.cancel(session, dataset_id, job_id)
    job = _wait(world.store, dataset_id, job_id)
    assert job.status == "cancelled"
    view = flow.job(session, dataset_id, job_id)
    assert view.can_restart
    assert view.saveable == ()
    assert view.report is not None
    assert view.report.stopped == "cancelled"
    assert view.report.stopped_text is not None
    world.fake.latency = 0.0
    again = flow.restart(session, dataset_id, job_id)
    assert again != job_id
    assert _wait(world.store, dataset_id, again).status == "done"


def test_every_command_is_refused_to_those_who_may_not_manage_the_project(world: World) -> None:
    dataset_id = world.request.dataset_id
    request = world.request
    job = world.store.create_improve_job(
        dataset_id,
        request.criterion_id,
        request.version_id,
        settings={
            "endpoint_id": request.endpoint_id,
            "model": "fake-judge",
            "optimizer_endpoint_id": request.optimizer_endpoint_id,
            "optimizer_model": OPTIMIZER,
            "optimize": SMALL,
        },
    )
    commands = {
        "start": lambda s: flow.start(s, world.request),
        "cancel": lambda s: flow.cancel(s, dataset_id, job.id),
        "start again": lambda s: flow.restart(s, dataset_id, job.id),
        "save a candidate": lambda s: flow.save(s, dataset_id, job.id, "rewrite-1"),
    }
    for what, command in commands.items():
        try:
            assert_refused(world.people, command)
        except BaseException as exc:
            raise AssertionError(f"{what}: {exc!r}") from exc
    assert [j.id for j in world.store.list_improve_jobs(dataset_id)] == [job.id]
    assert world.store.get_improve_job(dataset_id, job.id).status == "pending"
    assert world.fake.count == 0


def test_a_job_is_done_only_when_every_step_ended_and_its_report_lists_what_was_dropped(
    world: World,
) -> None:
    session = world.people.engineer()
    dataset_id = world.request.dataset_id
    scripted = world.fake.reply

    def reply(request: dict[str, object]) -> object:
        if request.get("model") == OPTIMIZER:
            return "Here are some thoughts, but no JSON."
        return scripted(request)  # type: ignore[operator]

    world.fake.reply = reply
    request = replace(
        world.request, values={"fewshot_candidates": 1, "rewrites": 3, "finalists": 1}
    )
    job_id = flow.start(session, request)
    assert _wait(world.store, dataset_id, job_id).status == "done"
    view = flow.job(session, dataset_id, job_id)
    # planned: start, 1 few-shot, 3 rewrites of 2 steps, start on test, 1 finalist = 10 steps;
    # the 3 rewrites' judging did not happen: 7 ran, and the job says 7 of 7
    assert (view.done, view.total, view.fraction) == (7, 7, 1.0)
    report = view.report
    assert report is not None
    assert (report.planned_steps, report.steps) == (10, 7)
    assert [(d.kind, d.name, d.steps) for d in report.dropped] == [
        ("rewrite", f"rewrite {k} of 3", 1) for k in (1, 2, 3)
    ]
    assert {d.reason for d in report.dropped} == {
        "the optimiser's reply held no JSON object with a system or rubric text"
    }
    assert report.steps_text == (
        "7 of the 10 planned steps ran; 3 were dropped. 3 candidates planned were not judged or "
        "not ranked; each is listed with why."
    )
    table = report.dropped_table()
    assert list(table.columns) == ["candidate", "kind", "why"]
    assert table["candidate"].tolist() == ["rewrite 1 of 3", "rewrite 2 of 3", "rewrite 3 of 3"]


def test_a_report_saved_before_dropped_candidates_were_kept_still_reads() -> None:
    old = {"split": {"name": "s", "dev": ["a"], "test": ["b"]}, "metric": "accuracy_balanced"}
    report = flow.Report.from_json(old)
    assert (report.dropped, report.planned_steps, report.steps) == ((), 0, 0)
    assert report.steps_text is None
    assert report.dropped_table().empty


def test_the_estimate_tells_an_engineer_whom_to_ask_for_a_price(world: World) -> None:
    told = flow.estimate(world.people.engineer(), world.request).note
    assert told == (
        "A model has no price, so the cost is unknown and a budget cannot cap it: ask an admin of "
        f"this server (root) to add prices for fake-judge and {OPTIMIZER}."
    )
    admin = flow.estimate(world.people.admin(), world.request).note
    assert admin is not None
    assert admin.endswith("add one on the Settings page.")
