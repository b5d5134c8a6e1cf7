"""Stored runs of built-in metrics, "try it" runs, re-runs of failed items and progress snapshots.

Against the fake OpenAI-compatible server over real HTTP, with a real store (SQLite and PostgreSQL);
nothing of evalcore is mocked.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta

import pandas as pd
import pytest

from evalcore.errors import ConfigError, MissingVariableError
from evalcore.judge import JudgeTemplate, RunSettings
from evalcore.judge.builtins import configure_metric, get_metric
from evalcore.labels import LIKERT_5, PAIRWISE, PASS_FAIL
from evalcore.runs import (
    api_key_is_set,
    estimate_content,
    estimate_run,
    execute_run,
    metric_content,
    metric_version,
    plan_run,
    rerun_failed,
    run_snapshot,
    try_version,
)
from evalcore.store import JudgeResultInput, Store
from evalcore.testing import FakeOpenAI, Fault
from tests.runs.metric_replies import metric_reply

FAST = RunSettings(concurrency=4, backoff_base=0.01, backoff_max=0.05, timeout=5.0, max_attempts=2)
KEY_ENV = "METRIC_TEST_API_KEY"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(metric_reply).start()
    yield server
    server.stop()


@pytest.fixture
def world(store: Store, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv(KEY_ENV, "secret-for-tests")
    project = store.create_project("metrics")
    helpful = store.create_criterion(project.id, "helpfulness", kind="pointwise", scale=LIKERT_5)
    store.create_criterion(project.id, "grounded", kind="pointwise", scale=PASS_FAIL)
    store.create_criterion(project.id, "preference", kind="pairwise", scale=PAIRWISE)
    n = 6
    points = pd.DataFrame(
        {
            "item_id": [f"p{i}" for i in range(n)],
            "prompt": [f"Question {i} about returns? expect={1 + i % 5}" for i in range(n)],
            "response": [f"You can return boots within 30 days. Item {i}." for i in range(n)],
            "context": ["Northwind accepts returns within 30 days of delivery."] * n,
            "reference": ["Returns are accepted within 30 days. Refunds take 5 days."] * n,
        }
    )
    pairs = pd.DataFrame(
        {
            "item_id": [f"q{i}" for i in range(4)],
            "prompt": [f"Which reply is better? {i}" for i in range(4)],
            "response_a": [f"Reply A {i}" for i in range(4)],
            "response_b": [f"Reply B {i}" for i in range(4)],
        }
    )
    return {
        "project": project,
        "helpful": helpful,
        "points": store.save_dataset(project.id, "points", points, kind="pointwise"),
        "pairs": store.save_dataset(project.id, "pairs", pairs, kind="pairwise"),
        "endpoint": store.upsert_endpoint(
            "fake", kind="openai", base_url=fake.base_url, api_key_env=KEY_ENV
        ),
    }


def _run(store: Store, world: dict, spec, dataset: str = "points", **kwargs) -> int:
    version = metric_version(store, world["project"].id, spec, author="eve")
    run = plan_run(
        store,
        dataset_id=world[dataset].id,
        template_version_id=version.id,
        endpoint_id=kwargs.pop("endpoint_id", world["endpoint"].id),
        model=kwargs.pop("model", "fake-judge"),
        settings=kwargs.pop("settings", FAST),
        **kwargs,
    )
    return run.id


def test_a_builtin_template_metric_runs_stored_with_its_verdicts(store: Store, world: dict) -> None:
    run_id = _run(store, world, get_metric("groundedness"))
    summary = execute_run(store, run_id)
    assert summary is not None
    assert summary.complete
    assert store.get_run(run_id).status == "done"
    frame = store.results_frame(run_id).set_index("item_id")
    # the fake answers the label of the expect= marker in the question
    assert frame["label"].tolist() == ["1", "2", "3", "4", "5", "1"]
    details = frame.loc["p2", "details"]
    details = json.loads(details) if isinstance(details, str) else details
    assert (details["threshold"], details["result"]) == (3.0, "pass")
    assert store.get_run(run_id).settings["metric"] == "groundedness"


def test_a_pipeline_metric_keeps_every_intermediate_per_item(
    store: Store, world: dict, fake: FakeOpenAI
) -> None:
    run_id = _run(store, world, get_metric("factual_correctness"))
    execute_run(store, run_id)
    assert store.get_run(run_id).status == "done"
    frame = store.results_frame(run_id)
    assert frame["status"].tolist() == ["ok"] * 6
    assert set(frame["label"]) <= {"pass", "fail"}
    first = frame.iloc[0]
    details = (
        first["details"] if isinstance(first["details"], dict) else json.loads(first["details"])
    )
    for key in ("response_claims", "response_verdicts", "reference_claims", "tp", "fp", "fn"):
        assert key in details
    assert details["response_claims"][0] == "You can return boots within 30 days."
    assert "[decompose]" in first["raw"]
    assert "[verify]" in first["raw"]
    # a re-run of the same configuration is answered from the cache
    before = fake.count
    second = _run(store, world, get_metric("factual_correctness"))
    execute_run(store, second)
    assert fake.count == before
    assert store.run_progress(second).ok == 6


def test_summarization_parameters_are_part_of_the_version(store: Store, world: dict) -> None:
    spec = configure_metric("summarization_score", {"coeff": 0.2})
    run_id = _run(store, world, spec)
    execute_run(store, run_id)
    frame = store.results_frame(run_id)
    details = frame.iloc[0]["details"]
    details = details if isinstance(details, dict) else json.loads(details)
    assert details["coeff"] == 0.2
    assert details["keyphrases"]
    assert details["questions"]
    assert details["answers"]


def test_a_function_metric_needs_no_endpoint_and_no_model(store: Store, world: dict) -> None:
    run_id = _run(store, world, get_metric("f1_score"), endpoint_id=None, model=None)
    run = store.get_run(run_id)
    assert run.model is None
    assert run.endpoint_id is None
    execute_run(store, run_id)
    assert store.get_run(run_id).status == "done"
    frame = store.results_frame(run_id)
    assert frame["score"].between(0, 1).all()
    assert (
        estimate_run(
            store,
            dataset_id=world["points"].id,
            template_version_id=run.template_version_id,
            model="",
        ).n_requests
        == 0
    )


def test_a_pairwise_metric_flips_half_of_the_items_by_default(store: Store, world: dict) -> None:
    spec = get_metric("pairwise_instruction_following")
    version = metric_version(store, world["project"].id, spec, author="eve")
    run = plan_run(
        store,
        dataset_id=world["pairs"].id,
        template_version_id=version.id,
        endpoint_id=world["endpoint"].id,
        model="fake-judge",
    )
    assert run.order_mode == "flip"
    execute_run(store, run.id)
    frame = store.results_frame(run.id)
    assert len(frame) == 4
    assert set(frame["order"]) <= {"AB", "BA"}
    assert store.get_run(run.id).status == "done"


def test_a_missing_input_is_refused_before_the_run_exists(store: Store, world: dict) -> None:
    spec = get_metric("similarity")
    version = metric_version(store, world["project"].id, spec, author="eve")
    with pytest.raises(MissingVariableError, match="ground_truth"):
        plan_run(
            store,
            dataset_id=world["pairs"].id,
            template_version_id=version.id,
            endpoint_id=world["endpoint"].id,
            model="fake-judge",
        )
    assert store.list_runs(dataset_id=world["pairs"].id) == []
    with pytest.raises(ConfigError, match="endpoint"):
        _run(store, world, get_metric("coherence"), endpoint_id=None)


def test_try_it_judges_five_items_saves_no_run_and_warms_the_cache(
    store: Store, world: dict, fake: FakeOpenAI
) -> None:
    content = JudgeTemplate(
        "draft", "helpfulness", LIKERT_5, "Rate it.", "{{ prompt }} / {{ response }}"
    ).content_dict()
    trial = try_version(
        store,
        content,
        dataset_id=world["points"].id,
        endpoint_id=world["endpoint"].id,
        model="fake-judge",
    )
    assert [r.item_id for r in trial.results] == ["p0", "p1", "p2", "p3", "p4"]
    table = trial.table()
    assert table["label"].tolist() == ["1", "2", "3", "4", "5"]
    assert table["raw"].str.contains("Score:").all()
    assert store.list_runs(project_id=world["project"].id) == []
    assert fake.count == 5
    # the same draft again costs nothing, and a full run's estimate sees those replies cached
    again = try_version(
        store,
        content,
        dataset_id=world["points"].id,
        endpoint_id=world["endpoint"].id,
        model="fake-judge",
    )
    assert fake.count == 5
    assert all(r.cached for r in again.results)
    estimate = estimate_content(
        store,
        content,
        dataset_id=world["points"].id,
        model=trial.model,
        endpoint_id=world["endpoint"].id,
    )
    assert (estimate.n_units, estimate.n_cached, estimate.n_requests) == (6, 5, 1)
    # replies are kept per endpoint: an estimate that names none finds none of them
    unknown = estimate_content(store, content, dataset_id=world["points"].id, model=trial.model)
    assert (unknown.n_cached, unknown.n_requests) == (0, 6)


def test_try_it_shows_unparsed_replies_and_works_for_pipelines(
    store: Store, world: dict, fake: FakeOpenAI
) -> None:
    fake.reply = "I would rather not say."
    content = JudgeTemplate("draft", "helpfulness", LIKERT_5, "", "{{ response }}").content_dict()
    trial = try_version(
        store,
        content,
        dataset_id=world["points"].id,
        endpoint_id=world["endpoint"].id,
        model="fake-judge",
        n_items=2,
    )
    assert [r.status for r in trial.results] == ["unparsed", "unparsed"]
    assert all(r.raw == "I would rather not say." and r.error for r in trial.results)
    fake.reply = metric_reply
    trial = try_version(
        store,
        metric_content(get_metric("summarization_score")),
        dataset_id=world["points"].id,
        endpoint_id=world["endpoint"].id,
        model="fake-judge",
        n_items=1,
    )
    assert trial.results[0].details["questions"]


def test_try_it_refuses_a_missing_key_by_its_name(
    store: Store, world: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV)
    assert api_key_is_set(KEY_ENV) is False
    assert api_key_is_set(KEY_ENV, {KEY_ENV: "from-secrets"}) is True
    assert api_key_is_set(None) is None
    content = JudgeTemplate("d", "helpfulness", LIKERT_5, "", "{{ response }}").content_dict()
    with pytest.raises(Exception, match="not available on the server"):
        try_version(
            store,
            content,
            dataset_id=world["points"].id,
            endpoint_id=world["endpoint"].id,
            model="fake-judge",
        )


def test_rerun_failed_judges_only_the_failed_items_with_the_same_version(
    store: Store, world: dict, fake: FakeOpenAI
) -> None:
    fake.faults = (Fault.status_code(500, match="Question 3 "),)
    run_id = _run(store, world, get_metric("coherence"))
    execute_run(store, run_id)
    assert store.run_progress(run_id).failed == 1
    fake.faults = ()
    rerun = rerun_failed(store, run_id)
    assert rerun is not None
    original = store.get_run(run_id)
    assert rerun.template_version_id == original.template_version_id
    assert rerun.settings["item_ids"] == ["p3"]
    assert rerun.n_planned == 1
    execute_run(store, rerun.id)
    frame = store.results_frame(rerun.id)
    assert frame["item_id"].tolist() == ["p3"]
    assert frame["status"].tolist() == ["ok"]
    assert rerun_failed(store, rerun.id) is None


def test_a_snapshot_gives_rate_and_time_left_from_the_store(store: Store, world: dict) -> None:
    run_id = _run(store, world, get_metric("fluency"))
    snap = run_snapshot(store, run_id)
    assert (snap.is_active, snap.fraction, snap.rate, snap.eta_s) == (True, 0.0, None, None)
    # half-way: 3 of 6 results, 6 seconds after the start -> 0.5 per second, 6 seconds left
    run = store.set_run_status(run_id, "running")
    pks = store.items_frame(world["points"].id).index.tolist()
    store.record_results(
        run_id, [JudgeResultInput(item_id=pk, status="ok", label="3") for pk in pks[:3]]
    )
    assert run.started_at is not None
    half = run_snapshot(store, run_id, now=run.started_at + timedelta(seconds=6))
    assert half.fraction == 0.5
    assert half.rate == pytest.approx(0.5)
    assert half.eta_s == pytest.approx(6.0)
    execute_run(store, run_id)
    done = run_snapshot(store, run_id)
    assert not done.is_active
    assert done.fraction == 1.0
    assert done.eta_s is None
