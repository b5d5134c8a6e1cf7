"""Loading a calibration from the store, on SQLite and PostgreSQL: labels, results, versions, items."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from evalcore.errors import EvalcoreError
from evalcore.labels import LIKERT_5
from evalcore.report import (
    data_version,
    item_detail,
    load_calibration_data,
    load_human,
    load_items,
    load_metadata,
)
from evalcore.store import JudgeResultInput
from tests.report.conftest import Tiny, build_pairwise


def test_items_in_dataset_order(tiny: Tiny) -> None:
    items = load_items(tiny.store, tiny.dataset_id)
    assert items["item_id"].tolist() == [f"q{i}" for i in range(8)]
    assert items["position"].tolist() == list(range(8))
    assert items.index.tolist() == [tiny.pk[f"q{i}"] for i in range(8)]


def test_human_matrix_takes_latest_revisions_and_drops_skips(tiny: Tiny) -> None:
    data = load_calibration_data(tiny.store, tiny.dataset_id, tiny.criterion_id)
    # carl only skipped, so he has no column; ana's q1 is her revised 2, not her first 3
    assert list(data.human.columns) == ["ana", "ben"]
    ana = data.human["ana"].tolist()
    assert ana[:7] == [1.0, 2.0, 3.0, 3.0, 1.0, 2.0, 3.0]
    assert math.isnan(ana[7])
    assert data.human["ben"].notna().tolist() == [True] * 4 + [False] * 4
    assert data.human.index.equals(data.items.index)


def test_human_labels_of_another_dataset_are_left_out(tiny: Tiny) -> None:
    store = tiny.store
    other = store.save_dataset(tiny.project_id, "other", pd.DataFrame({"item_id": ["x1"]}))
    store.import_labels(
        other.id,
        tiny.criterion_id,
        pd.DataFrame({"item_id": ["x1"], "annotator": ["zoe"], "label": [3]}),
    )
    criterion = store.get_criterion(tiny.criterion_id)
    human = load_human(store, tiny.dataset_id, criterion)
    assert list(human.columns) == ["ana", "ben"]
    assert len(human) == 8


def test_run_results_with_statuses_and_scores(tiny: Tiny) -> None:
    data = load_calibration_data(tiny.store, tiny.dataset_id, tiny.criterion_id)
    assert [r.info.title for r in data.runs] == ["v1", "v2"]  # oldest first
    v1, v2 = data.runs
    assert v1.results["status"].tolist() == ["ok"] * 5 + ["unparsed"] + ["ok"] * 2
    assert v2.results["status"].tolist() == ["ok"] * 6 + ["failed", "missing"]
    assert v1.results["label"].tolist()[:5] == [1.0, 3.0, 2.0, 3.0, 3.0]
    assert math.isnan(v1.results["label"].iloc[5])  # unparsed: no label, never a wrong one
    # scores are read for binary scales only, unless asked for
    assert v1.results["score"].isna().all()
    scored = load_calibration_data(tiny.store, tiny.dataset_id, tiny.criterion_id, scores=True)
    assert scored.runs[0].results["score"].iloc[0] == pytest.approx(1.2)
    assert math.isnan(scored.runs[0].results["score"].iloc[5])  # unparsed
    assert scored.runs[1].results["score"].isna().all()
    assert v1.info.template == "fluency-judge"
    assert v1.info.version == 1
    assert v2.info.version == 2
    assert v2.info.version_created_at.day == 2
    assert not v1.both_orders


def test_runs_are_chosen_and_ordered_as_asked(tiny: Tiny) -> None:
    data = load_calibration_data(tiny.store, tiny.dataset_id, tiny.criterion_id, [tiny.v2, tiny.v1])
    assert [r.info.id for r in data.runs] == [tiny.v2, tiny.v1]
    with pytest.raises(EvalcoreError, match="is not a run of criterion 'fluency'"):
        load_calibration_data(tiny.store, tiny.dataset_id, tiny.criterion_id, [999])


def test_metadata_columns_are_read_one_by_one(tiny: Tiny) -> None:
    meta = load_metadata(tiny.store, tiny.dataset_id, ["topic"])
    assert meta["topic"].tolist() == ["a"] * 4 + ["b"] * 4
    assert meta.index.tolist() == [tiny.pk[f"q{i}"] for i in range(8)]


def test_numbers_in_metadata_read_as_people_write_them(store) -> None:
    project = store.create_project("meta")
    frame = pd.DataFrame(
        {"item_id": ["a", "b", "c"], "n": [3, 4.5, None], "flag": [True, False, True]}
    )
    dataset = store.save_dataset(project.id, "m", frame)
    meta = load_metadata(store, dataset.id, ["n"])
    assert meta["n"].tolist() == ["3", "4.5", None]


def test_both_order_runs_keep_the_second_verdict(store) -> None:
    world = build_pairwise(store)
    data = load_calibration_data(store, world.dataset_id, world.criterion_id, [world.both])
    (run,) = data.runs
    assert run.both_orders
    assert run.results["label"].tolist() == ["A", "B", "A", "A", "A"]
    assert run.results["label_swapped"].tolist() == ["A", "A", "TIE", "B", "A"]


def test_flip_runs_take_the_one_verdict_whatever_its_order(store) -> None:
    world = build_pairwise(store)
    pk = load_items(store, world.dataset_id).index.tolist()
    flip = store.create_run(world.dataset_id, world.criterion_id, name="flip", order_mode="flip")
    store.record_results(
        flip.id,
        [
            JudgeResultInput(item_id=pk[i], status="ok", label=v, order="AB" if i % 2 else "BA")
            for i, v in enumerate(["B", "B", "TIE", "A", "A"])
        ],
    )
    data = load_calibration_data(store, world.dataset_id, world.criterion_id, [flip.id])
    assert data.runs[0].results["label"].tolist() == ["B", "B", "TIE", "A", "A"]
    assert data.runs[0].results["label_swapped"].isna().all()


def test_data_version_changes_with_a_label_or_a_result(tiny: Tiny) -> None:
    store = tiny.store
    before = data_version(store, tiny.dataset_id, tiny.criterion_id, [tiny.v1, tiny.v2])
    assert before == data_version(store, tiny.dataset_id, tiny.criterion_id, [tiny.v1, tiny.v2])
    store.submit_annotation(tiny.pk["q7"], tiny.criterion_id, "ben", label=1, base_revision=0)
    after_label = data_version(store, tiny.dataset_id, tiny.criterion_id, [tiny.v1, tiny.v2])
    assert after_label != before
    store.record_results(tiny.v2, [JudgeResultInput(item_id=tiny.pk["q7"], status="ok", label="1")])
    after_result = data_version(store, tiny.dataset_id, tiny.criterion_id, [tiny.v1, tiny.v2])
    assert after_result != after_label
    assert after_result.humans == after_label.humans  # the humans did not change
    assert after_result.run(tiny.v2) != after_label.run(tiny.v2)
    assert after_result.run(tiny.v1) == after_label.run(tiny.v1)


def test_item_detail_has_texts_labels_comments_and_every_run(tiny: Tiny) -> None:
    data = load_calibration_data(tiny.store, tiny.dataset_id, tiny.criterion_id)
    detail = item_detail(tiny.store, tiny.pk["q1"], tiny.criterion_id, [r.info for r in data.runs])
    assert detail.item.prompt == "question 1?"
    assert detail.item.response == "answer 1"
    ana = next(h for h in detail.humans if h.annotator == "ana")
    assert (ana.label, ana.revision, ana.comment) == ("2", 2, "on second thought, a 2")
    assert [(r.run, r.status, r.label) for r in detail.results] == [
        ("v1", "ok", "3"),
        ("v2", "ok", "2"),
    ]
    assert detail.results[0].reason == "reason 1.1"
    assert detail.results[0].raw == '{"score": 3}'
    q7 = item_detail(tiny.store, tiny.pk["q7"], tiny.criterion_id, {tiny.v2: "v2"})
    assert [(r.run, r.status) for r in q7.results] == [("v2", "missing")]


def test_large_item_ids_survive_the_packed_read(store) -> None:
    # the bulk reads pack ids and codes into one number per row; the values must come back exact
    project = store.create_project("many")
    n = 3000
    dataset = store.save_dataset(
        project.id, "d", pd.DataFrame({"item_id": [f"i{k}" for k in range(n)]})
    )
    criterion = store.create_criterion(project.id, "c", kind="pointwise", scale=LIKERT_5)
    rng = np.random.default_rng(1)
    labels = rng.integers(1, 6, size=n)
    store.import_labels(
        dataset.id,
        criterion.id,
        pd.DataFrame({"item_id": [f"i{k}" for k in range(n)], "annotator": "ana", "label": labels}),
    )
    data = load_calibration_data(store, dataset.id, criterion.id)
    assert data.human["ana"].astype(int).tolist() == labels.tolist()


# --- confidence (issue 22): each verdict's confidence and probabilities, juries ------------------


def test_each_verdict_has_its_confidence_and_on_request_its_probabilities(tiny: Tiny) -> None:
    store = tiny.store
    run = store.create_run(tiny.dataset_id, tiny.criterion_id, name="confident")
    store.record_results(
        run.id,
        [
            JudgeResultInput(
                item_id=tiny.pk["q0"],
                status="ok",
                label=1,
                probabilities={1: 0.7, 2: 0.2, 3: 0.1},
                confidence=0.7,
            ),
            JudgeResultInput(item_id=tiny.pk["q1"], status="ok", label=2, confidence=0.55),
            # an unparsed verdict has no label, so its confidence is not read either
            JudgeResultInput(item_id=tiny.pk["q2"], status="unparsed", confidence=0.9),
        ],
    )
    data = load_calibration_data(store, tiny.dataset_id, tiny.criterion_id, [run.id, tiny.v1])
    confident, v1 = data.runs
    # read in bulk as text: on SQLite to 15 significant digits
    assert confident.results["confidence"].tolist()[:2] == pytest.approx([0.7, 0.55], rel=1e-15)
    assert confident.results["confidence"].iloc[2:].isna().all()
    assert v1.results["confidence"].isna().all()  # a run without confidences: NaN throughout
    assert confident.probabilities is None  # read only when asked
    asked = load_calibration_data(
        store, tiny.dataset_id, tiny.criterion_id, [run.id], probabilities=True
    )
    matrix = asked.runs[0].probabilities
    assert matrix is not None
    assert list(matrix.columns) == [1.0, 2.0, 3.0]
    assert matrix.loc[tiny.pk["q0"]].tolist() == [0.7, 0.2, 0.1]
    assert matrix.drop(index=tiny.pk["q0"]).isna().all().all()
    detail = item_detail(store, tiny.pk["q0"], tiny.criterion_id, {run.id: "confident"})
    assert detail.results[0].confidence == 0.7
    assert detail.results[0].probabilities == {"1": 0.7, "2": 0.2, "3": 0.1}


def test_a_frame_without_confidences_gets_a_column_of_nan() -> None:
    from datetime import UTC, datetime

    from evalcore.report import RunData, RunInfo

    when = datetime(2025, 1, 1, tzinfo=UTC)
    info = RunInfo(1, "f", "f", None, None, None, None, when, "file", "done", "AB")
    run = RunData(info, pd.DataFrame({"status": ["ok"], "label": [1.0]}))
    assert run.results["confidence"].isna().all()
    assert run.info.members == ()


def test_a_jury_knows_its_members(tiny: Tiny) -> None:
    store = tiny.store
    jury = store.create_jury_run(
        tiny.dataset_id,
        tiny.criterion_id,
        name="jury",
        members=[tiny.v2, tiny.v1],
        results=[JudgeResultInput(item_id=tiny.pk["q0"], status="ok", label=1, confidence=1.0)],
    )
    data = load_calibration_data(store, tiny.dataset_id, tiny.criterion_id)
    by_id = {r.info.id: r for r in data.runs}
    assert by_id[jury.id].info.members == (tiny.v2, tiny.v1)
    assert by_id[jury.id].info.source == "jury"
    assert by_id[tiny.v1].info.members == ()
    assert by_id[jury.id].results["confidence"].iloc[0] == 1.0
