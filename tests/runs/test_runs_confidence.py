"""Confidence over the store, end to end (issue 22, parts 1, 2 and 5): a stored run asks the fake
endpoint for logprobs and keeps every verdict's probabilities; a jury of runs is a run; the verdicts
a run is least sure of go to the annotation queue, and the labels given there count in the
calibration. The fake server is real HTTP, the store a real SQLite file and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from evalcore.errors import ConfigError
from evalcore.judge import RunSettings
from evalcore.labels import PASS_FAIL
from evalcore.report import load_calibration_data
from evalcore.runs import create_jury, escalate, execute_run, jury_member_ids, plan_run
from evalcore.store import JudgeResultInput, Store
from evalcore.testing import CalibratedJudge, FakeOpenAI, truth_marker

FAST = RunSettings(concurrency=4, backoff_base=0.01, backoff_max=0.05, timeout=5.0, max_attempts=3)
N = 16

TEMPLATE = {
    "name": "grounded",
    "criterion": "grounded",
    "kind": "pointwise",
    "scale": ["pass", "fail"],
    "system": "Say whether the answer is grounded.",
    "user": "Answer: {{ response }}",
    "output": {"parser": "json", "label_field": "label", "structured": True},
    "model": {"model": "fake-judge", "temperature": 0.0, "logprobs": True, "top_logprobs": 5},
}


@pytest.fixture
def judge() -> CalibratedJudge:
    return CalibratedJudge(confidence=(0.5, 1.0), off_scale=0.05, seed=9)


@pytest.fixture
def fake(judge: CalibratedJudge) -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(judge).start()
    yield server
    server.stop()


@pytest.fixture
def world(store: Store, fake: FakeOpenAI) -> dict[str, Any]:
    project = store.create_project("trust")
    criterion = store.create_criterion(project.id, "grounded", kind="pointwise", scale=PASS_FAIL)
    truths = ["pass" if n % 3 else "fail" for n in range(N)]
    items = pd.DataFrame(
        {
            "item_id": [f"i{n}" for n in range(N)],
            "response": [truth_marker(f"i{n}", t) for n, t in enumerate(truths)],
        }
    )
    dataset = store.save_dataset(project.id, "answers", items, kind="pointwise")
    template = store.create_template(project.id, "grounded", criterion.id)
    version = store.save_template_version(template.id, TEMPLATE, author="eve")
    endpoint = store.upsert_endpoint("fake", kind="openai", base_url=fake.base_url)
    frame = store.items_frame(dataset.id)
    ids = {str(ext): int(pk) for pk, ext in zip(frame.index, frame["item_id"], strict=True)}
    return {
        "project": project,
        "dataset": dataset,
        "criterion": criterion,
        "version": version,
        "endpoint": endpoint,
        "ids": ids,
    }


def _run(store: Store, world: dict[str, Any]) -> int:
    run = plan_run(
        store,
        dataset_id=world["dataset"].id,
        template_version_id=world["version"].id,
        endpoint_id=world["endpoint"].id,
        settings=FAST,
    )
    summary = execute_run(store, run.id)
    assert summary is not None
    assert summary.complete
    return run.id


def _stored_run(store: Store, world: dict[str, Any], name: str, verdicts: dict[str, tuple]) -> int:
    """A run recorded by hand: item → (status, label, confidence)."""
    run = store.create_run(world["dataset"].id, world["criterion"].id, name=name)
    store.record_results(
        run.id,
        [
            JudgeResultInput(item_id=world["ids"][item], status=status, label=label, confidence=c)
            for item, (status, label, c) in verdicts.items()
        ],
    )
    return run.id


def test_a_stored_run_keeps_the_served_probabilities(
    store: Store, world: dict[str, Any], judge: CalibratedJudge
) -> None:
    run_id = _run(store, world)
    frame = store.results_frame(run_id).set_index("item_id")
    served = judge.served()
    assert len(frame) == N
    for item, row in frame.iterrows():
        truth = served[str(item)]
        assert row["label"] == truth.label
        assert row["confidence"] == pytest.approx(truth.confidence, abs=1e-12)
        assert row["probabilities"] == pytest.approx(dict(truth.probabilities), abs=1e-12)
        assert row["details"]["confidence"]["off_scale"] == pytest.approx(0.05)
    # the calibration loader reads each verdict's confidence beside its label
    data = load_calibration_data(
        store, world["dataset"].id, world["criterion"].id, probabilities=True
    )
    (run,) = data.runs
    by_item = data.items.reset_index().set_index("item_id")["item_pk"]
    for item, truth in served.items():
        pk = by_item[item]
        assert run.results.loc[pk, "confidence"] == pytest.approx(truth.confidence)
        assert run.probabilities is not None
        assert run.probabilities.loc[pk, "pass"] == pytest.approx(truth.probabilities["pass"])


def test_a_jury_of_stored_runs_is_a_run_calibrated_beside_its_members(
    store: Store, world: dict[str, Any]
) -> None:
    a = _stored_run(
        store,
        world,
        "a",
        {"i0": ("ok", "pass", 0.9), "i1": ("ok", "fail", 0.6), "i2": ("ok", "pass", None)},
    )
    b = _stored_run(store, world, "b", {"i0": ("ok", "pass", None), "i1": ("ok", "pass", None)})
    c = _stored_run(
        store,
        world,
        "c",
        {"i0": ("ok", "fail", None), "i1": ("failed", None, None), "i2": ("unparsed", None, None)},
    )
    jury = create_jury(store, [a, b, c])
    assert (jury.source, jury.status) == ("jury", "done")
    assert jury.name == "jury of a, b, c (majority)"
    frame = store.results_frame(jury.id).set_index("item_id")
    # i0: pass, pass, fail → pass with 2 of 3; i1: fail, pass, (failed) → a tie of one each,
    # which goes to pass, the first label of the scale, with 1 of 2; i2: only a voted → pass
    assert frame["label"].to_dict() == {"i0": "pass", "i1": "pass", "i2": "pass"}
    assert frame["confidence"].tolist() == pytest.approx([2 / 3, 1 / 2, 1.0])
    assert frame.loc["i0", "probabilities"] == pytest.approx({"pass": 2 / 3, "fail": 1 / 3})
    assert frame.loc["i1", "details"]["jury"]["votes"] == {
        str(a): "fail",
        str(b): "pass",
        str(c): "failed",
    }
    assert [m.member_run_id for m in store.jury_members(jury.id)] == [a, b, c]
    # the calibration loads the jury like any run, and its members beside it
    runs = jury_member_ids(store, [jury.id])
    assert runs == [jury.id, a, b, c]
    data = load_calibration_data(store, world["dataset"].id, world["criterion"].id, runs)
    assert data.runs[0].info.members == (a, b, c)
    assert data.runs[0].info.source == "jury"
    assert data.runs[0].results["status"].value_counts()["missing"] == N - 3


def test_a_weighted_jury_and_its_errors(store: Store, world: dict[str, Any]) -> None:
    a = _stored_run(store, world, "a", {"i0": ("ok", "pass", None)})
    b = _stored_run(store, world, "b", {"i0": ("ok", "fail", None)})
    jury = create_jury(store, [a, b], method="weighted", weights=[1, 3], name="weighted")
    row = store.results_frame(jury.id).iloc[0]
    assert (row["label"], row["confidence"]) == ("fail", 0.75)  # 3 of 4 units of weight
    assert [m.weight for m in store.jury_members(jury.id)] == [1.0, 3.0]
    with pytest.raises(ConfigError, match="numeric scale"):
        create_jury(store, [a, b], method="mean")
    with pytest.raises(ConfigError, match="at least two"):
        create_jury(store, [a])
    other = store.save_dataset(
        world["project"].id, "other", pd.DataFrame({"item_id": ["x"]}), kind="pointwise"
    )
    stranger = store.create_run(other.id, world["criterion"].id, name="stranger")
    before = len(store.list_runs(dataset_id=world["dataset"].id))
    with pytest.raises(ConfigError, match=r"'stranger'.*another dataset"):
        create_jury(store, [a, stranger.id])
    assert len(store.list_runs(dataset_id=world["dataset"].id)) == before


def test_escalation_sends_the_least_sure_first_and_their_labels_flow_back(
    store: Store, world: dict[str, Any]
) -> None:
    run = _stored_run(
        store,
        world,
        "judge",
        {
            "i0": ("ok", "pass", 0.95),
            "i1": ("ok", "fail", 0.55),
            "i2": ("ok", "pass", 0.70),
            "i3": ("unparsed", None, None),
            "i4": ("ok", "pass", 0.55),
            "i5": ("ok", "fail", 0.51),
            "i6": ("ok", "pass", None),  # a verdict whose confidence is unknown
        },
    )
    ids = world["ids"]
    # i5 already has a human label: it is left out
    store.import_labels(
        world["dataset"].id,
        world["criterion"].id,
        pd.DataFrame({"item_id": ["i5"], "annotator": ["ref"], "label": ["fail"]}),
    )
    found = escalate(store, run, threshold=0.8, criterion_id=world["criterion"].id, author="eve")
    assert found.order is not None
    # i3 gave no verdict and i6's confidence is unknown: first; then 0.55 (i1, i4 in dataset
    # order) and 0.70 (i2); i0 (0.95) is trusted
    assert found.item_ids == (ids["i3"], ids["i6"], ids["i1"], ids["i4"], ids["i2"])
    assert (found.undecided, found.below, found.labelled) == (2, 3, 1)
    assert found.order.source == "escalation"
    assert found.order.active
    assert "below 0.8" in found.order.reason
    assert found.order.author == "eve"
    # annotators get exactly those items, in that order, and see nothing of why
    dataset, criterion = world["dataset"].id, world["criterion"].id
    store.ensure_queue(dataset, criterion, "ana")
    tasks = [store.queue_item(dataset, criterion, "ana", p) for p in range(5)]
    assert [t.external_id for t in tasks if t is not None] == ["i3", "i6", "i1", "i4", "i2"]
    assert store.queue_item(dataset, criterion, "ana", 5) is None
    for task in tasks:
        assert task is not None
        store.submit_annotation(task.item_id, criterion, "ana", label="fail", base_revision=0)
    # the labels given in the queue are ordinary annotations: the calibration reads them
    data = load_calibration_data(store, dataset, criterion, [run])
    by_item = data.items.reset_index().set_index("item_id")["item_pk"]
    assert data.human.loc[by_item["i1"], "ana"] == "fail"
    assert data.runs[0].results.loc[by_item["i1"], "confidence"] == 0.55
    # escalating again with nothing new to send saves nothing
    again = escalate(store, run, threshold=0.8, name="second pass")
    assert again.order is None
    assert again.labelled == 6
    only_low = escalate(store, run, threshold=0.99, include_undecided=False, skip_labelled=False)
    # i0 (0.95) joins the others below 0.99, lowest first; i3 and i6 stay out
    assert only_low.item_ids == (ids["i5"], ids["i1"], ids["i4"], ids["i2"], ids["i0"])


def test_escalation_needs_a_run_with_confidences(store: Store, world: dict[str, Any]) -> None:
    plain = _stored_run(store, world, "no confidence", {"i0": ("ok", "pass", None)})
    with pytest.raises(ConfigError, match="no confidence on any verdict"):
        escalate(store, plain, threshold=0.5)
    with pytest.raises(ConfigError, match=r"in \[0, 1\]"):
        escalate(store, plain, threshold=1.5)
    other = store.create_criterion(world["project"].id, "other", kind="pointwise", scale=PASS_FAIL)
    with pytest.raises(ConfigError, match="another criterion than 'other'"):
        escalate(store, plain, threshold=0.5, criterion_id=other.id)
    assert store.list_queue_orders(world["dataset"].id) == []


def test_a_served_run_escalates_exactly_its_items_below_the_threshold(
    store: Store, world: dict[str, Any], judge: CalibratedJudge
) -> None:
    run = _run(store, world)
    found = escalate(store, run, threshold=0.75)
    served = judge.served()
    low = sorted(
        (v for v in served.values() if v.confidence < 0.75),
        key=lambda v: (v.confidence, int(v.item_id[1:])),
    )
    assert found.item_ids == tuple(world["ids"][v.item_id] for v in low)
