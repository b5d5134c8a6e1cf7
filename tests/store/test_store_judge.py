"""The judge side: template versions, endpoints, prices, runs, results, cache, imported labels."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from evalcore.errors import (
    ConfigError,
    DataError,
    DuplicateIdError,
    LabelOutOfScaleError,
    NotFoundError,
    StoreError,
)
from evalcore.labels import PASS_FAIL
from evalcore.store import (
    RESULT_COLUMNS,
    CriterionRecord,
    DatasetRecord,
    JudgeResultInput,
    MetricVersionContent,
    ProjectRecord,
    Store,
    TemplateVersionContent,
    content_hash,
)

CONTENT = {
    "system": "You grade fluency.",
    "user": "Rate {{ response }} from 1 to 5.",
    "output": {"kind": "json", "field": "score"},
    "model": {"temperature": 0},
}


def _pks(store: Store, dataset: DatasetRecord) -> list[int]:
    return [int(i) for i in store.items_frame(dataset.id).index]


# --- templates --------------------------------------------------------------------------------------


def test_template_versions_are_numbered_and_hashed(
    store: Store, project: ProjectRecord, fluency: CriterionRecord
) -> None:
    template = store.create_template(project.id, "fluency judge", fluency.id)
    v1 = store.save_template_version(template.id, CONTENT, author="ada", note="first")
    assert (v1.number, v1.content, v1.author, v1.note) == (1, CONTENT, "ada", "first")
    assert v1.content_hash == content_hash(CONTENT)
    # The same content again (keys in another order) is not a new version.
    same = store.save_template_version(template.id, dict(reversed(CONTENT.items())), author="bob")
    assert same == v1
    v2 = store.save_template_version(template.id, {**CONTENT, "system": "Be strict."}, author="bob")
    assert v2.number == 2
    assert v2.content_hash != v1.content_hash
    # Going back to the first content is a new version 3: only the latest is compared.
    v3 = store.save_template_version(template.id, CONTENT, author="ada")
    assert (v3.number, v3.content_hash) == (3, v1.content_hash)
    assert [v.number for v in store.list_template_versions(template.id)] == [1, 2, 3]
    assert store.get_template_version(v2.id) == v2
    assert store.list_templates(project.id) == [template]
    assert store.get_template(template.id) == template


def test_template_names_are_unique_and_content_is_json(
    store: Store, project: ProjectRecord, fluency: CriterionRecord
) -> None:
    template = store.create_template(project.id, "t", fluency.id)
    with pytest.raises(StoreError, match="already has"):
        store.create_template(project.id, "t", fluency.id)
    with pytest.raises(StoreError, match="JSON"):
        store.save_template_version(template.id, {"x": object()}, author="a")
    with pytest.raises(NotFoundError):
        store.save_template_version(999, CONTENT, author="a")


# --- endpoints and prices ---------------------------------------------------------------------------


def test_endpoint_upsert(store: Store) -> None:
    created = store.upsert_endpoint(
        "local", base_url="http://localhost:8000/v1", api_key_env="LOCAL_API_KEY", default_model="m"
    )
    assert (created.kind, created.api_key_env, created.default_model) == (
        "openai",
        "LOCAL_API_KEY",
        "m",
    )
    updated = store.upsert_endpoint(
        "local", kind="azure", base_url="https://x.openai.azure.com", api_version="2024-06-01"
    )
    assert updated.id == created.id
    assert (updated.kind, updated.api_key_env, updated.api_version) == ("azure", None, "2024-06-01")
    assert store.get_endpoint(created.id) == updated
    assert store.get_endpoint_by_name("local") == updated
    assert [e.name for e in store.list_endpoints()] == ["local"]


@pytest.mark.parametrize(
    "value",
    [
        "sk-proj-abc123def456",
        "sk_live_0123456789",
        "3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
        "Bearer abc",
        "my key",
    ],
)
def test_endpoint_refuses_a_key_in_api_key_env(store: Store, value: str) -> None:
    with pytest.raises(ConfigError, match="NAME"):
        store.upsert_endpoint("e", api_key_env=value)
    assert store.list_endpoints() == []


def test_endpoint_refuses_secrets_in_extra(store: Store) -> None:
    with pytest.raises(ConfigError, match="secrets"):
        store.upsert_endpoint("e", extra={"api_key": "x"})
    assert store.upsert_endpoint("e", extra={"timeout": 30}).extra == {"timeout": 30}


def test_model_prices(store: Store) -> None:
    price = store.set_model_price("gpt-4o-mini", input_per_mtok=0.15, output_per_mtok=0.6)
    assert price.cost(1_000_000, 500_000) == pytest.approx(0.45)
    store.set_model_price("gpt-4o-mini", input_per_mtok=0.2, output_per_mtok=0.8)
    store.set_model_price("other", input_per_mtok=1, output_per_mtok=2)
    prices = store.get_model_prices()
    assert list(prices) == ["gpt-4o-mini", "other"]
    assert prices["gpt-4o-mini"].input_per_mtok == 0.2
    store.delete_model_price("other")
    assert list(store.get_model_prices()) == ["gpt-4o-mini"]
    with pytest.raises(ConfigError):
        store.set_model_price("x", input_per_mtok=-1, output_per_mtok=0)


# --- runs ---------------------------------------------------------------------------------------


def test_run_lifecycle(
    store: Store, project: ProjectRecord, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    template = store.create_template(project.id, "t", fluency.id)
    version = store.save_template_version(template.id, CONTENT, author="ada")
    endpoint = store.upsert_endpoint("local", api_key_env="LOCAL_API_KEY")
    run = store.create_run(
        dataset.id,
        fluency.id,
        name="fluency v1 · m",
        model="m",
        template_version_id=version.id,
        endpoint_id=endpoint.id,
        settings={"temperature": 0},
        seed=7,
    )
    assert (run.status, run.n_planned, run.source, run.project_id) == (
        "pending",
        10,
        "run",
        project.id,
    )
    assert run.started_at is None
    assert not run.is_terminal
    running = store.set_run_status(run.id, "running")
    assert running.started_at is not None
    assert running.heartbeat_at is not None
    assert store.heartbeat(run.id) == "running"
    cancelling = store.request_cancel(run.id)
    assert cancelling.status == "cancelling"
    # The worker's late "running" does not undo the cancel request.
    assert store.set_run_status(run.id, "running").status == "cancelling"
    assert store.heartbeat(run.id) == "cancelling"
    done = store.set_run_status(run.id, "cancelled")
    assert done.finished_at is not None
    assert done.is_terminal
    failed = store.set_run_status(run.id, "failed", error="boom")
    assert failed.error == "boom"
    assert store.get_run(run.id) == failed
    both = store.create_run(dataset.id, fluency.id, name="both", order_mode="both")
    assert both.n_planned == 20
    assert [r.id for r in store.list_runs(dataset_id=dataset.id)] == [both.id, run.id]
    assert [r.id for r in store.list_runs(project_id=project.id, status="pending")] == [both.id]
    with pytest.raises(ConfigError):
        store.set_run_status(run.id, "weird")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        store.create_run(dataset.id, fluency.id, name="x", order_mode="sideways")  # type: ignore[arg-type]


def test_a_resumed_run_starts_a_new_attempt_without_the_error_of_the_last(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    run = store.create_run(dataset.id, fluency.id, name="run")
    failed = store.set_run_status(run.id, "failed", error="the key is not available")
    assert failed.error == "the key is not available"
    resumed = store.set_run_status(run.id, "pending")  # a resume: a new attempt
    assert resumed.error is None
    store.set_run_status(run.id, "running")
    assert store.set_run_status(run.id, "done").error is None
    # within an attempt, a later status keeps the error until one replaces it
    store.set_run_status(run.id, "interrupted", error="stopped before every item")
    assert store.set_run_status(run.id, "cancelled").error == "stopped before every item"


def test_run_template_must_judge_the_same_criterion(
    store: Store, project: ProjectRecord, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    other = store.create_criterion(project.id, "correct", kind="pointwise", scale=PASS_FAIL)
    template = store.create_template(project.id, "t", other.id)
    version = store.save_template_version(template.id, CONTENT, author="a")
    with pytest.raises(ConfigError, match="another criterion"):
        store.create_run(dataset.id, fluency.id, name="x", template_version_id=version.id)


def test_runs_to_resume(store: Store, dataset: DatasetRecord, fluency: CriterionRecord) -> None:
    pending = store.create_run(dataset.id, fluency.id, name="pending")
    alive = store.create_run(dataset.id, fluency.id, name="alive")
    store.set_run_status(alive.id, "running")
    finished = store.create_run(dataset.id, fluency.id, name="finished")
    store.set_run_status(finished.id, "done")
    abandoned = store.create_run(dataset.id, fluency.id, name="abandoned cancel")
    store.request_cancel(abandoned.id)
    assert [r.id for r in store.runs_to_resume(stale_after_s=60)] == [pending.id]
    assert store.get_run(abandoned.id).status == "cancelled"
    time.sleep(0.05)
    assert [r.id for r in store.runs_to_resume(stale_after_s=0.01)] == [pending.id, alive.id]


# --- results ------------------------------------------------------------------------------------


def test_record_result_is_idempotent_per_item_and_order(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    run = store.create_run(dataset.id, fluency.id, name="r", order_mode="both")
    a, b, c = _pks(store, dataset)[:3]
    store.record_result(
        run.id,
        a,
        status="ok",
        label="4.0",
        reason="good",
        tokens_in=100,
        tokens_out=20,
        cost=0.01,
        latency_s=0.5,
        samples=[4, 4, 5],
        details={"steps": ["x"]},
        cache_key="k1",
        cached=False,
    )
    store.record_result(run.id, a, status="ok", label=1, reason="replayed")  # a replay: ignored
    store.record_result(run.id, a, order="BA", status="ok", label=5)
    store.record_result(run.id, b, status="failed", error="timeout", attempts=3)
    # Retried: a success replaces the failure.
    store.record_result(run.id, b, status="ok", label=2, attempts=1)
    store.record_result(run.id, c, status="unparsed", raw="no idea")
    frame = store.results_frame(run.id)
    assert list(frame.columns) == list(RESULT_COLUMNS)
    assert frame[["item_id", "order", "status"]].values.tolist() == [
        ["q0", "AB", "ok"],
        ["q0", "BA", "ok"],
        ["q1", "AB", "ok"],
        ["q2", "AB", "unparsed"],
    ]
    assert frame["label"].tolist()[:3] == ["4", "5", "2"]
    assert pd.isna(frame["label"].iloc[3])
    assert frame["raw"].iloc[3] == "no idea"
    first = frame.iloc[0]
    assert (first["reason"], first["samples"], first["details"]) == (
        "good",
        [4, 4, 5],
        {"steps": ["x"]},
    )
    assert frame.iloc[1]["samples"] is None
    assert store.finished_keys(run.id) == {(a, "AB"), (a, "BA"), (b, "AB"), (c, "AB")}

    progress = store.run_progress(run.id)
    assert (progress.planned, progress.ok, progress.unparsed, progress.failed) == (20, 3, 1, 0)
    assert (progress.tokens_in, progress.tokens_out, progress.cost) == (100, 20, 0.01)
    assert progress.first_at is not None
    assert progress.last_at >= progress.first_at
    assert progress.fraction == pytest.approx(4 / 20)


def test_first_failure_is_the_error_of_the_first_failed_item_in_dataset_order(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    run = store.create_run(dataset.id, fluency.id, name="r")
    a, b, c = _pks(store, dataset)[:3]
    assert store.first_failure(run.id) is None
    store.record_result(run.id, c, status="failed", error="third")  # recorded first
    store.record_result(run.id, a, status="ok", label=1)
    store.record_result(run.id, b, status="failed", error="second")
    assert store.first_failure(run.id) == "second"  # b comes before c in the dataset


def test_versions_are_handed_out_with_their_typed_content(
    store: Store, project: ProjectRecord, fluency: CriterionRecord
) -> None:
    template = store.create_template(project.id, "typed", fluency.id)
    plain = store.save_template_version(template.id, CONTENT, author="ada")
    assert isinstance(plain.parsed, TemplateVersionContent)
    assert plain.parsed.to_dict() == CONTENT
    metric = store.save_template_version(
        template.id, {"builtin": "f1_score", "kind": "function", "threshold": 0.5}, author="ada"
    )
    again = store.get_template_version(metric.id)
    assert again.parsed == MetricVersionContent("f1_score", {"kind": "function", "threshold": 0.5})
    assert again.parsed.to_dict() == again.content


def test_record_results_batch(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    run = store.create_run(dataset.id, fluency.id, name="r")
    pks = _pks(store, dataset)
    batch = [JudgeResultInput(item_id=pk, status="ok", label=1 + i % 5) for i, pk in enumerate(pks)]
    batch.append(
        JudgeResultInput(item_id=pks[0], status="ok", label=5)
    )  # duplicate key in the batch
    batch.append(JudgeResultInput(item_id=pks[1], status="failed", error="x"))
    store.record_results(run.id, batch)
    store.record_results(run.id, batch)  # the whole batch replayed
    frame = store.results_frame(run.id)
    assert len(frame) == 10
    assert frame["label"].tolist()[:2] == ["1", "2"]
    failed = store.create_run(dataset.id, fluency.id, name="f")
    store.record_results(failed.id, [JudgeResultInput(item_id=pks[0], status="failed", error="x")])
    assert store.finished_keys(failed.id) == set()
    assert store.finished_keys(failed.id, include_failed=True) == {(pks[0], "AB")}
    assert store.run_progress(failed.id).failed == 1


def test_record_result_validation(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord, project: ProjectRecord
) -> None:
    run = store.create_run(dataset.id, fluency.id, name="r")
    pk = _pks(store, dataset)[0]
    with pytest.raises(LabelOutOfScaleError, match="q0"):
        store.record_result(run.id, pk, status="ok", label=9)
    with pytest.raises(ConfigError):
        store.record_result(run.id, pk, status="great", label=1)
    with pytest.raises(ConfigError):
        store.record_result(run.id, pk, status="ok", order="CA", label=1)
    other = store.save_dataset(project.id, "other", pd.DataFrame({"item_id": ["z"]}))
    stranger = store.get_item_by_external_id(other.id, "z").id
    with pytest.raises(NotFoundError, match="not in its dataset"):
        store.record_result(run.id, stranger, status="ok", label=1)
    assert store.results_frame(run.id).empty


# --- cache --------------------------------------------------------------------------------------


def test_cache(store: Store) -> None:
    assert store.cache_get("k") is None
    reply = {"text": '{"score": 4}', "logprobs": [[-0.1, "4"]], "tokens": {"in": 10, "out": 3}}
    store.cache_put("k", "m", reply)
    store.cache_put("k", "m", {"text": "other"})  # an existing entry is kept
    assert store.cache_get("k") == reply
    store.cache_put("k2", None, {"text": "x"})
    keys = [f"missing{i}" for i in range(1200)] + ["k", "k2"]
    assert store.cache_get_many(keys) == {"k": reply, "k2": {"text": "x"}}


def test_cache_put_many_keeps_the_first_payload_of_a_key(store: Store) -> None:
    store.cache_put("old", "m", {"text": "kept"})
    entries = [(f"k{i}", "m", {"text": str(i)}) for i in range(6000)]  # more than one insert batch
    entries += [("k0", "m", {"text": "a later copy"}), ("old", "m", {"text": "replacement"})]
    store.cache_put_many(entries)
    found = store.cache_get_many([f"k{i}" for i in range(6000)] + ["old"])
    assert len(found) == 6001
    assert found["k0"] == {"text": "0"}
    assert found["k5999"] == {"text": "5999"}
    assert found["old"] == {"text": "kept"}
    store.cache_put_many([])  # nothing to do, no error


# --- imported judge labels ----------------------------------------------------------------------


def test_import_judge_labels(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    labels = pd.Series({"q0": 5, "q1": "4", "q2": None, "q3": 2.0})
    reasons = pd.Series({"q0": "fluent", "q3": "clumsy"})
    run = store.import_judge_labels(
        dataset.id, fluency.id, "imported: judge_gpt35", labels, reasons
    )
    assert (run.source, run.status, run.n_planned, run.template_version_id) == (
        "import",
        "done",
        10,
        None,
    )
    assert run.finished_at is not None
    frame = store.results_frame(run.id).set_index("item_id")
    assert len(frame) == 10  # every item has a result, so coverage shows
    assert frame.loc["q0", "label"] == "5"
    assert frame.loc["q0", "reason"] == "fluent"
    assert frame.loc["q3", "label"] == "2"
    assert frame.loc["q2", "status"] == "failed"
    assert frame.loc["q2", "error"] == "missing in file"
    assert frame.loc["q9", "status"] == "failed"
    progress = store.run_progress(run.id)
    assert (progress.ok, progress.failed) == (3, 7)


def test_import_judge_labels_errors(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    with pytest.raises(DataError, match="nope"):
        store.import_judge_labels(dataset.id, fluency.id, "j", pd.Series({"q0": 1, "nope": 2}))
    with pytest.raises(LabelOutOfScaleError, match="q1"):
        store.import_judge_labels(dataset.id, fluency.id, "j", pd.Series({"q0": 1, "q1": 8}))
    with pytest.raises(DuplicateIdError):
        store.import_judge_labels(
            dataset.id, fluency.id, "j", pd.Series([1, 2], index=["q0", "q0"])
        )
    assert store.list_runs(dataset_id=dataset.id) == []
