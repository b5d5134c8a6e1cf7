"""The upload service: a file into the store (items and labels), and labels into a saved dataset.

Runs on a real SQLite file and on PostgreSQL (the ``store`` fixture), through the public
``evalcore.store`` functions that the Datasets page calls.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from evalcore.data import ColumnMapping
from evalcore.errors import ConfigError, DataError, EvalcoreError, LabelOutOfScaleError
from evalcore.labels import PASS_FAIL
from evalcore.store import (
    CriterionRecord,
    DatasetRecord,
    ProjectRecord,
    Store,
    UploadPlan,
    import_plan,
    load_upload,
    plan_label_import,
    plan_upload,
    save_upload,
)

# three items; two annotators and one judge on a 1-5 scale; "r2" leaves item b unlabelled
FILE = (
    b"id,question,answer,r1,r2,judge_x,judge_x_reason\n"
    b"a,q1?,ans1,4,5,4,fine\n"
    b"b,q2?,ans2,2,,3,meh\n"
    b"c,q3?,ans3,5,4,5,good\n"
)
MAPPING = ColumnMapping(
    item_id="id",
    prompt="question",
    response="answer",
    human=("r1", "r2"),
    judge=("judge_x",),
    metric="labels",
)


def _plan(targets: dict[str, CriterionRecord | None]) -> UploadPlan:
    """FILE checked for a new dataset, its labels going to ``targets``."""
    loaded = load_upload(FILE, name="answers.csv", mapping=MAPPING, targets=targets)
    return plan_upload(loaded, kind="pointwise", targets=targets)


def _count(store: Store, table: str) -> int:
    with store.engine.connect() as conn:
        return int(conn.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar_one())


def test_upload_saves_items_human_labels_and_an_imported_judge_run(
    store: Store, project: ProjectRecord, fluency: CriterionRecord
) -> None:
    targets = {"labels": fluency}
    loaded = load_upload(FILE, name="answers.csv", mapping=MAPPING, targets=targets)
    plan = plan_upload(loaded, kind="pointwise", targets=targets)
    # 3 labels from r1 + 2 from r2 (item b is empty) = 5 human labels
    assert plan.describe() == ["5 human labels for fluency", "judge judge_x for fluency"]

    dataset = save_upload(store, project.id, "answers", plan)

    assert (dataset.name, dataset.version, dataset.n_items) == ("answers", 1, 3)
    assert (dataset.source_filename, dataset.layout) == ("answers.csv", loaded.layout)
    matrix = store.annotation_matrix(dataset.id, fluency.id)
    assert sorted(matrix.columns) == ["r1", "r2"]
    assert int(matrix.notna().sum().sum()) == 5
    runs = store.list_runs(project_id=project.id)
    assert [r.name for r in runs] == ["imported: judge_x"]
    progress = store.run_progress(runs[0].id)
    assert (progress.finished, progress.failed) == (3, 0)


def test_a_label_set_without_a_decision_is_an_error_not_dropped(
    store: Store, project: ProjectRecord
) -> None:
    loaded = load_upload(FILE, name="answers.csv", mapping=MAPPING)
    with pytest.raises(DataError, match="choose the criterion the labels 'labels' go to"):
        plan_upload(loaded, kind="pointwise", targets={})
    assert _count(store, "datasets") == 0


def test_labels_left_out_on_purpose_are_named_in_the_plan(
    store: Store, project: ProjectRecord
) -> None:
    loaded = load_upload(FILE, name="answers.csv", mapping=MAPPING)
    plan = plan_upload(loaded, kind="pointwise", targets={"labels": None})
    assert (plan.imports, plan.left_out, plan.describe()) == ((), ("labels",), [])
    dataset = save_upload(store, project.id, "answers", plan)
    assert dataset.n_items == 3
    assert _count(store, "annotations") == 0


def test_a_label_off_the_criterion_scale_names_its_row_and_saves_nothing(
    store: Store, project: ProjectRecord, fluency: CriterionRecord
) -> None:
    bad = FILE.replace(b"c,q3?,ans3,5,4", b"c,q3?,ans3,7,4")
    with pytest.raises(LabelOutOfScaleError) as caught:
        load_upload(bad, name="answers.csv", mapping=MAPPING, targets={"labels": fluency})
    assert 3 in caught.value.rows  # the third data row holds the 7
    assert _count(store, "datasets") == 0


def test_a_file_read_without_the_targets_scales_is_refused(
    store: Store, project: ProjectRecord
) -> None:
    yes_no = store.create_criterion(project.id, "ok", kind="pointwise", scale=PASS_FAIL)
    loaded = load_upload(FILE, name="answers.csv", mapping=MAPPING)  # inferred 2..5 scale
    with pytest.raises(ConfigError, match="not read on the scale of criterion 'ok'"):
        plan_upload(loaded, kind="pointwise", targets={"labels": yes_no})


def test_a_criterion_of_the_other_kind_is_refused(
    store: Store, project: ProjectRecord, preference: CriterionRecord
) -> None:
    loaded = load_upload(FILE, name="answers.csv", mapping=MAPPING)
    with pytest.raises(DataError, match="criterion 'preference' is pairwise"):
        plan_upload(loaded, kind="pointwise", targets={"labels": preference})


def test_a_pairwise_upload_needs_both_responses(store: Store, project: ProjectRecord) -> None:
    loaded = load_upload(FILE, name="answers.csv", mapping=MAPPING)
    with pytest.raises(DataError, match="choose the response_a and response_b column"):
        plan_upload(loaded, kind="pairwise", targets={"labels": None})


def test_a_second_upload_of_the_same_name_is_the_next_version(
    store: Store, project: ProjectRecord, fluency: CriterionRecord
) -> None:
    plan = _plan({"labels": fluency})
    first = save_upload(store, project.id, "answers", plan)
    second = save_upload(store, project.id, "answers", plan)
    assert (first.version, second.version) == (1, 2)
    # each version has its own labels: 5 human labels each
    assert int(store.annotation_matrix(second.id, fluency.id).notna().sum().sum()) == 5


LABELS = b"item,annotator,grade\na,kim,3\nc,kim,1\nc,lee,2\n"
LONG = ColumnMapping(item_id="item", annotator="annotator", label="grade", metric="fluency")


def _saved(store: Store, project: ProjectRecord) -> DatasetRecord:
    return save_upload(store, project.id, "answers", _plan({"labels": None}))


def test_labels_import_into_a_saved_dataset_through_the_same_path(
    store: Store, project: ProjectRecord, fluency: CriterionRecord
) -> None:
    dataset = _saved(store, project)
    loaded = load_upload(LABELS, name="more.csv", mapping=LONG, targets={"fluency": fluency})
    plan = plan_label_import(store, dataset, fluency, loaded)
    assert plan.items is None
    assert plan.describe() == ["3 human labels for fluency"]

    assert import_plan(store, dataset, plan) == ["3 human labels for fluency"]

    matrix = store.annotation_matrix(dataset.id, fluency.id)
    assert sorted(matrix.columns) == ["kim", "lee"]
    assert int(matrix.notna().sum().sum()) == 3


def test_a_label_import_naming_an_unknown_item_imports_nothing(
    store: Store, project: ProjectRecord, fluency: CriterionRecord
) -> None:
    dataset = _saved(store, project)
    extra = LABELS + b"zz,kim,4\n"
    loaded = load_upload(extra, name="more.csv", mapping=LONG, targets={"fluency": fluency})
    with pytest.raises(
        DataError, match=r"has no item 'zz' \(the file has 1 item the dataset lacks\)"
    ):
        plan_label_import(store, dataset, fluency, loaded)
    assert _count(store, "annotations") == 0


def test_a_failure_part_way_says_what_was_saved(
    store: Store, project: ProjectRecord, fluency: CriterionRecord
) -> None:
    dataset = _saved(store, project)
    plan = _plan({"labels": fluency})
    # a judge label off the scale, past the checks of load_upload: the store refuses it
    part = plan.imports[0]
    judge = part.judges[0]
    broken = replace(judge, labels=judge.labels.replace({5.0: 9.0}))
    plan = replace(plan, imports=(replace(part, judges=(broken,)),))
    with pytest.raises(EvalcoreError) as caught:
        import_plan(store, dataset, plan)
    message = str(caught.value)
    assert "has 5 human labels for fluency from answers.csv" in message
    assert "Import the remaining labels under Labels" in message
    assert int(store.annotation_matrix(dataset.id, fluency.id).notna().sum().sum()) == 5


def test_the_plan_counts_the_labels_of_each_annotator_and_judge(
    store: Store, project: ProjectRecord, fluency: CriterionRecord
) -> None:
    plan = _plan({"labels": fluency})
    counts = plan.label_counts()
    # r1 labels a, b, c; r2 labels a and c; the judge labels all three
    assert counts["labels"].to_dict() == {"r1": 3, "r2": 2, "judge_x (judge)": 3}
    assert set(counts["criterion"]) == {"fluency"}
