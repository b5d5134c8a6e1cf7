"""The Judge page's workflow (:mod:`evalcore.workflows.judge`) without Streamlit: every function as
the page calls it, runs carried out by the server's real worker against
:class:`~evalcore.testing.FakeOpenAI`, and every command refused for those who may not."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, replace

import pandas as pd
import pytest

from evalcore.errors import ConfigError, JudgeError, TemplateError
from evalcore.labels import LIKERT_5
from evalcore.store import JudgeResultInput, Store
from evalcore.testing import FakeOpenAI, Fault
from evalcore.workflows import judge as flow
from tests.workflows.conftest import People, assert_refused

KEY_ENV = "WORKFLOW_JUDGE_API_KEY"
N_ITEMS = 6
TEMPLATE = {
    "name": "helpful-judge",
    "criterion": "helpful",
    "kind": "pointwise",
    "scale": [1, 2, 3, 4, 5],
    "system": "Rate how helpful the answer is.",
    "user": 'Answer: {{ response }} expect=4\nReply as JSON: {"reason": "...", "score": 3}',
    "output": {"parser": "auto", "label_field": "score"},
    "model": {"model": "fake-judge"},
}


@dataclass
class World:
    people: People
    store: Store
    fake: FakeOpenAI
    dataset: int
    criterion: int
    template: int
    version: int
    endpoint: int


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def world(people: People, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> World:
    return build_world(people, fake, monkeypatch)


def build_world(people: People, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> World:
    """A criterion, a dataset of :data:`N_ITEMS` items, a template version and an endpoint on
    ``fake`` whose key variable (:data:`KEY_ENV`) is set."""
    monkeypatch.setenv(KEY_ENV, "workflow-judge-secret")
    store = people.server.store
    criterion = store.create_criterion(people.project, "helpful", kind="pointwise", scale=LIKERT_5)
    items = pd.DataFrame(
        {
            "item_id": [f"i{k}" for k in range(N_ITEMS)],
            "prompt": [f"Question {k}?" for k in range(N_ITEMS)],
            "response": [f"Answer number {k}." for k in range(N_ITEMS)],
            "reference": [f"Answer number {k}." for k in range(N_ITEMS)],
            "topic": ["returns"] * N_ITEMS,
        }
    )
    dataset = store.save_dataset(people.project, "answers", items, kind="pointwise")
    template = store.create_template(people.project, "helpful-judge", criterion.id)
    version = store.save_template_version(template.id, TEMPLATE, author="eve")
    endpoint = store.upsert_endpoint("fake", base_url=fake.base_url, api_key_env=KEY_ENV)
    return World(
        people, store, fake, dataset.id, criterion.id, template.id, version.id, endpoint.id
    )


def _wait(store: Store, run_id: int, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = store.get_run(run_id)
        if run.is_terminal:
            return run.status
        time.sleep(0.02)
    raise AssertionError(f"run {run_id} did not end: {store.get_run(run_id).status}")


def _request(w: World, **changes: object) -> flow.RunRequest:
    return replace(flow.RunRequest(w.dataset, w.version, w.endpoint), **changes)  # type: ignore[arg-type]


# --- the context --------------------------------------------------------------------------------------


def test_only_an_admin_learns_whether_keys_are_set_and_the_default_endpoint_is_hosted(
    world: World,
) -> None:
    store = world.store
    store.upsert_endpoint("a local server", base_url="http://127.0.0.1:9/v1")
    store.upsert_endpoint("missing", base_url="http://127.0.0.1:8/v1", api_key_env="GONE_API_KEY")
    admin = flow.context(world.people.admin(), world.people.project)
    assert [e.name for e in admin.endpoints] == ["fake", "missing", "a local server"]
    notes = {e.name: e.key for e in admin.endpoints}
    assert notes["fake"] == flow.KeyNote("ok", f"`{KEY_ENV}` is set")
    assert notes["missing"] is not None
    assert notes["missing"].level == "error"
    assert "`GONE_API_KEY` is not set" in notes["missing"].text
    assert notes["a local server"] == flow.KeyNote("info", "No API key needed.")
    engineer = flow.context(world.people.engineer(), world.people.project)
    assert all(e.key is None for e in engineer.endpoints)  # nobody else learns which exist
    assert engineer.endpoints[-1].name == "a local server"  # hosted (a key variable) first
    assert [d.name for d in engineer.datasets] == ["answers"]
    assert engineer.dataset(world.dataset) is not None
    assert engineer.endpoint(0) is None


# --- the editor ---------------------------------------------------------------------------------------


def test_a_version_opens_with_its_fields_and_a_draft_is_dirty_only_when_changed(
    world: World,
) -> None:
    session = world.people.engineer()
    found = flow.templates(session, world.people.project)
    assert found.label(world.template) == "helpful-judge · helpful"
    assert found.criterion_label(world.criterion) == "helpful (1, 2, 3, 4, 5)"
    [record] = flow.versions(session, world.template)
    view = flow.open_version(session, record.id)
    assert view.editable
    assert view.fields is not None
    assert (view.fields.user, view.fields.parser, view.fields.label_field) == (
        TEMPLATE["user"], "auto", "score",
    )  # fmt: skip
    assert (view.criterion, view.scale) == ("helpful", ("1", "2", "3", "4", "5"))
    assert view.options == flow.RunOptions(
        needs_endpoint=True, pairwise=False, order="single", batch=True
    )
    assert view.threshold_label is None
    same = flow.draft(view, view.fields)
    assert same.content is not None
    assert same.error is None
    assert not same.dirty
    changed = flow.draft(view, replace(view.fields, system="Be strict."))
    assert changed.dirty
    assert changed.content is not None
    assert changed.content["system"] == "Be strict."
    bad = flow.draft(view, replace(view.fields, seed="soon"))
    assert bad.content is None
    assert isinstance(bad.error, TemplateError)
    assert "soon" in str(bad.error)


def test_variables_and_a_preview_name_what_is_missing_and_reuse_what_is_unchanged(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = world.people.engineer()
    content = {**TEMPLATE, "user": "{{ response }} on {{ topicc }}"}
    found = flow.variables(session, world.dataset, content)
    assert {"response", "topic", "criterion", "rubric"} <= set(found.available)
    assert found.unknown == ("topicc",)
    assert found.item_ids[:2] == ("i0", "i1")
    failed = flow.preview(session, world.dataset, content, "i1")
    assert failed.messages == ()
    assert failed.error is not None
    assert "topicc" in str(failed.error)
    assert "i1" in str(failed.error)
    rendered: list[str] = []
    real = flow.runs.preview_messages
    monkeypatch.setattr(
        flow.runs, "preview_messages", lambda c, i: rendered.append(i.item_id) or real(c, i)
    )
    shown = flow.preview(session, world.dataset, TEMPLATE, "i1", kept=failed)
    assert rendered == ["i1"]
    assert [m["role"] for m in shown.messages] == ["system", "user"]
    assert "Answer number 1." in shown.messages[1]["content"]
    again = flow.preview(session, world.dataset, TEMPLATE, "i1", kept=shown)
    assert again is shown
    assert rendered == ["i1"]
    assert flow.preview(session, world.dataset, TEMPLATE, "nope").error is not None


def test_create_save_restore_and_diff_versions(world: World) -> None:
    session = world.people.engineer()
    with pytest.raises(ConfigError, match="name"):
        flow.create_template(session, world.people.project, "  ", world.criterion)
    first = flow.create_template(session, world.people.project, "brief", world.criterion)
    assert (first.number, first.author, first.note) == (1, "eve", "created")
    assert "{{ response }}" in first.content["user"]
    view = flow.open_version(session, world.version)
    assert view.fields is not None
    edited = flow.draft(view, replace(view.fields, system="Judge only the facts."))
    assert edited.content is not None
    saved = flow.save_version(session, world.version, edited.content, note=" facts ")
    assert saved.created
    assert (saved.version.number, saved.version.note) == (2, "facts")
    unchanged = flow.save_version(session, saved.version.id, edited.content)
    assert not unchanged.created
    assert unchanged.version.id == saved.version.id
    text = flow.diff(session, world.version, saved.version.id)
    assert "--- helpful-judge v1" in text
    assert "+++ helpful-judge v2" in text
    assert "Judge only the facts." in text
    restored = flow.restore_version(session, world.version)
    assert restored.created
    assert restored.version.note == "restored version 1"
    assert restored.version.content == world.store.get_template_version(world.version).content


def test_try_judges_the_first_items_and_saves_no_run(world: World) -> None:
    session = world.people.engineer()
    trial = flow.try_version(
        session, world.dataset, TEMPLATE, endpoint_id=world.endpoint, model=" "
    )
    assert trial.model == "fake-judge"
    assert list(trial.table.columns) == list(flow.RESULT_COLUMNS)
    assert trial.table["item_id"].tolist() == [f"i{k}" for k in range(flow.TRIAL_ITEMS)]
    assert set(trial.table["status"]) == {"ok"}
    assert set(trial.table["label"]) == {"4"}
    assert trial.requests == flow.TRIAL_ITEMS == world.fake.count
    assert world.store.list_runs() == []
    again = flow.try_version(session, world.dataset, TEMPLATE, endpoint_id=world.endpoint)
    assert again.requests == 0  # the replies come from the cache


def test_a_run_is_estimated_started_in_the_worker_and_read_back(world: World) -> None:
    session = world.people.engineer()
    estimate = flow.estimate_run(session, _request(world, limit=3))
    assert (estimate.model, estimate.typed) == ("fake-judge", False)
    assert (estimate.estimate.n_units, estimate.estimate.n_requests) == (3, 3)
    assert estimate.notes == (
        "No price for fake-judge: ask an admin of this server (root) to add a price for "
        "fake-judge.",
    )
    typed = flow.estimate_run(session, _request(world, model="other-model", mode="batch"))
    assert (typed.model, typed.typed, typed.estimate.n_units) == ("other-model", True, N_ITEMS)
    assert typed.notes[0].startswith("Batch price not set for other-model")
    run = flow.start_run(session, _request(world, limit=3, concurrency=2))
    assert (run.n_planned, run.model, run.settings["item_ids"]) == (
        3,
        "fake-judge",
        ["i0", "i1", "i2"],
    )
    assert _wait(world.store, run.id) == "done"
    overview = flow.runs_overview(session, world.people.project)
    assert not overview.live
    assert overview.workers is None
    assert overview.label(run.id) == f"#{run.id} {run.name}"
    assert overview.table.set_index("run").loc[run.id, "done"] == "3 / 3"
    view = flow.run_view(session, run.id)
    assert view.progress_text == "3 of 3 results · done"
    assert (view.can_cancel, view.can_resume, view.failed, view.error) == (False, False, 0, None)
    found = flow.results(session, run.id)
    assert found.table["label"].tolist() == ["4", "4", "4"]
    assert [r.key for r in found.rows] == ["i0", "i1", "i2"]
    assert found.caption == "3 results."
    assert found.csv().startswith(b'"item_id",')
    assert flow.results(session, run.id, "Failed").table.empty
    with pytest.raises(ConfigError, match="no filter"):
        flow.results(session, run.id, "Broken")


def test_a_run_is_cancelled_and_resumed_to_its_end(world: World) -> None:
    session = world.people.engineer()
    world.fake.latency = 0.2
    run = flow.start_run(session, _request(world, concurrency=1))
    deadline = time.monotonic() + 30
    while world.store.run_progress(run.id).finished < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert flow.run_view(session, run.id).can_cancel
    flow.cancel_run(session, run.id)
    assert _wait(world.store, run.id) == "cancelled"
    assert flow.run_view(session, run.id).can_resume
    world.fake.latency = 0.0
    resumed = flow.resume_run(session, run.id)
    assert resumed.status == "pending"
    assert _wait(world.store, run.id) == "done"
    assert world.store.run_progress(run.id).finished == N_ITEMS
    with pytest.raises(ConfigError, match="only a stopped run"):
        flow.resume_run(session, run.id)


def test_the_failed_items_of_a_run_are_run_again(world: World) -> None:
    session = world.people.engineer()
    # a 400 is not retried: the item fails at once and the run goes on
    world.fake.faults = (Fault.status_code(400, match="Answer number 2."),)
    run = flow.start_run(session, _request(world))
    assert _wait(world.store, run.id) == "done"
    view = flow.run_view(session, run.id)
    assert view.failed == 1
    failed = flow.results(session, run.id, "Failed")
    assert failed.table["item_id"].tolist() == ["i2"]
    assert "400" in failed.rows[0].error
    world.fake.faults = ()
    again = flow.rerun_failed(session, run.id)
    assert again is not None
    assert again.n_planned == 1
    assert _wait(world.store, again.id) == "done"
    assert flow.rerun_failed(session, again.id) is None  # nothing failed there


# --- the metric catalogue -----------------------------------------------------------------------------


def test_a_metric_is_explained_configured_copied_and_run(world: World) -> None:
    session = world.people.engineer()
    found = flow.catalogue(session)
    assert "f1_score" in found.table["metric"].tolist()
    assert found.entry("f1_score").title == "Token F1"
    factual = flow.metric(session, "factual_correctness")
    params = {p.name: p for p in factual.parameters}
    assert params["mode"].choices == ("precision", "recall", "f1")
    assert params["beta"].choices is None
    assert params["beta"].value == 1.0
    assert any(f.startswith("- **Inputs**") for f in factual.facts)
    with pytest.raises(ConfigError):
        flow.configure(session, "factual_correctness", {"mode": "sideways"})
    spec = flow.configure(session, "f1_score", {}, "0.6")
    assert spec.threshold == 0.6
    assert flow.metric_criteria(session, world.people.project, spec) == ()
    copied = flow.copy_metric(session, world.people.project, spec, name="my f1")
    assert copied.template.name == "my f1"
    assert copied.version.content["builtin"] == "f1_score"
    with pytest.raises(ConfigError, match="dataset"):
        flow.start_metric_run(session, world.people.project, None, spec)
    run = flow.start_metric_run(session, world.people.project, world.dataset, spec)
    assert _wait(world.store, run.id) == "done"
    assert set(world.store.results_frame(run.id)["status"]) == {"ok"}
    view = flow.open_version(session, run.template_version_id or 0)
    assert not view.editable
    assert view.kind == "function"
    assert not view.options.needs_endpoint
    assert "not a judge template" in view.summary
    trial = flow.try_metric(session, world.dataset, spec, endpoint_id=None)
    assert trial.requests == 0
    assert len(trial.table) == flow.TRIAL_ITEMS


# --- refusals -----------------------------------------------------------------------------------------


def test_every_command_is_refused_to_those_who_may_not_manage_the_project(world: World) -> None:
    store, project = world.store, world.people.project
    run = store.create_run(
        world.dataset, world.criterion, name="r", template_version_id=world.version,
        endpoint_id=world.endpoint,
    )  # fmt: skip
    item = int(store.items_frame(world.dataset).index[0])
    store.record_results(run.id, [JudgeResultInput(item, "failed", error="boom")])
    store.set_run_status(run.id, "failed", error="boom")
    spec = flow.configure(world.people.engineer(), "f1_score", {})
    commands = {
        "create a template": lambda s: flow.create_template(s, project, "t2", world.criterion),
        "save a version": lambda s: flow.save_version(s, world.version, TEMPLATE),
        "restore a version": lambda s: flow.restore_version(s, world.version),
        "try": lambda s: flow.try_version(s, world.dataset, TEMPLATE, endpoint_id=world.endpoint),
        "try a metric": lambda s: flow.try_metric(s, world.dataset, spec, endpoint_id=None),
        "start a run": lambda s: flow.start_run(s, _request(world)),
        "cancel a run": lambda s: flow.cancel_run(s, run.id),
        "resume a run": lambda s: flow.resume_run(s, run.id),
        "re-run failed items": lambda s: flow.rerun_failed(s, run.id),
        "copy a metric": lambda s: flow.copy_metric(s, project, spec),
        "run a metric": lambda s: flow.start_metric_run(s, project, world.dataset, spec),
    }
    for what, command in commands.items():
        try:
            assert_refused(world.people, command)
        except BaseException as exc:
            raise AssertionError(f"{what}: {exc!r}") from exc
    assert store.get_run(run.id).status == "failed"  # nothing refused changed anything
    assert len(store.list_runs()) == 1
    assert len(store.list_template_versions(world.template)) == 1
    assert world.fake.count == 0


def test_a_try_without_a_key_says_so_without_naming_the_variable(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(JudgeError, match="not available on the server") as caught:
        flow.try_version(
            world.people.engineer(), world.dataset, TEMPLATE, endpoint_id=world.endpoint
        )
    assert KEY_ENV not in str(caught.value)
