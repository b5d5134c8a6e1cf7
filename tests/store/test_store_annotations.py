"""Annotations: revisions, idempotent submits, skips, imports, exports and the label matrix."""

from __future__ import annotations

import pandas as pd
import pytest

from evalcore.errors import (
    DataError,
    DuplicateIdError,
    LabelOutOfScaleError,
    MissingColumnError,
    NotFoundError,
    StoreError,
)
from evalcore.labels import PASS_FAIL
from evalcore.store import (
    CriterionRecord,
    DatasetRecord,
    ProjectRecord,
    RevisionConflictError,
    Store,
)


def _pk(store: Store, dataset: DatasetRecord, external: str) -> int:
    return store.get_item_by_external_id(dataset.id, external).id


def _count(store: Store, table: str) -> int:
    with store.engine.connect() as conn:
        return int(conn.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar_one())


def test_submit_stores_the_canonical_label(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    item = _pk(store, dataset, "q0")
    record = store.submit_annotation(
        item, fluency.id, "ada", label="4.0", base_revision=0, comment="ok", time_spent_s=3.5
    )
    assert (record.revision, record.label, record.comment) == (1, "4", "ok")
    assert (record.source, record.flag, record.time_spent_s) == ("ui", None, 3.5)
    assert record.annotator == "ada"
    assert record.created_at.tzinfo is not None


def test_a_change_is_a_new_revision_and_the_latest_counts(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    item = _pk(store, dataset, "q1")
    first = store.submit_annotation(item, fluency.id, "ada", label=2, base_revision=0)
    second = store.submit_annotation(item, fluency.id, "ada", label=5, base_revision=first.revision)
    assert second.revision == 2
    history = store.annotation_history(item, fluency.id)
    assert [(a.revision, a.label) for a in history] == [(1, "2"), (2, "5")]
    assert _count(store, "annotations") == 2
    matrix = store.annotation_matrix(dataset.id, fluency.id)
    assert matrix.loc["q1", "ada"] == 5.0


def test_replaying_a_submit_writes_one_row(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    item = _pk(store, dataset, "q2")
    first = store.submit_annotation(item, fluency.id, "ada", label=3, base_revision=0)
    replay = store.submit_annotation(item, fluency.id, "ada", label="3", base_revision=0)
    assert replay == first
    assert _count(store, "annotations") == 1
    # A replay of an older submit after a newer one still returns what it wrote.
    newer = store.submit_annotation(item, fluency.id, "ada", label=4, base_revision=1)
    assert store.submit_annotation(item, fluency.id, "ada", label=3, base_revision=0) == first
    assert store.submit_annotation(item, fluency.id, "ada", label=4, base_revision=1) == newer
    assert _count(store, "annotations") == 2


def test_a_different_answer_on_a_replaced_revision_is_a_conflict(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    item = _pk(store, dataset, "q3")
    store.submit_annotation(item, fluency.id, "ada", label=3, base_revision=0)
    with pytest.raises(RevisionConflictError) as caught:
        store.submit_annotation(item, fluency.id, "ada", label=1, base_revision=0)
    assert caught.value.item_id == "q3"
    assert caught.value.latest.label == "3"
    with pytest.raises(StoreError, match="does not exist"):
        store.submit_annotation(item, fluency.id, "ada", label=1, base_revision=5)
    assert _count(store, "annotations") == 1


def test_label_off_the_scale_names_the_item(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    item = _pk(store, dataset, "q4")
    with pytest.raises(LabelOutOfScaleError, match="q4") as caught:
        store.submit_annotation(item, fluency.id, "ada", label=7, base_revision=0)
    assert caught.value.item_id == "q4"
    with pytest.raises(DataError, match="flag"):
        store.submit_annotation(item, fluency.id, "ada", label=None, base_revision=0)
    with pytest.raises(StoreError):
        store.submit_annotation(item, fluency.id, "ada", label=1, base_revision=0, flag="meh")  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        store.submit_annotation(99_999, fluency.id, "ada", label=1, base_revision=0)
    assert _count(store, "annotations") == 0


def test_criterion_of_another_project_is_refused(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    other = store.create_project("other")
    foreign = store.create_criterion(other.id, "c", kind="pointwise", scale=PASS_FAIL)
    with pytest.raises(NotFoundError, match="another project"):
        store.submit_annotation(
            _pk(store, dataset, "q0"), foreign.id, "ada", label="pass", base_revision=0
        )


def test_a_skip_is_a_label_less_revision(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    item = _pk(store, dataset, "q5")
    skip = store.submit_annotation(
        item, fluency.id, "ada", label=None, flag="skip", base_revision=0
    )
    assert (skip.label, skip.flag, skip.revision) == (None, "skip", 1)
    unsure = store.submit_annotation(
        item, fluency.id, "ada", label=2, flag="unsure", base_revision=1
    )
    assert (unsure.label, unsure.flag) == ("2", "unsure")
    store.submit_annotation(item, fluency.id, "bob", label=None, flag="broken", base_revision=0)
    matrix = store.annotation_matrix(dataset.id, fluency.id)
    assert matrix.loc["q5", "ada"] == 2.0
    assert "bob" not in matrix.columns  # bob's only revision is a flag without a label
    counts = store.annotator_label_counts(dataset.id, fluency.id)
    assert counts.loc["ada", "2"] == 1
    assert counts.loc["bob", "skipped"] == 1
    assert list(counts.columns) == ["1", "2", "3", "4", "5", "skipped", "total"]


def test_annotation_matrix_shape_and_types(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord, project: ProjectRecord
) -> None:
    for ext, ada, bob in [("q0", 5, 4), ("q2", 1, None), ("q1", 3, 3)]:
        store.submit_annotation(
            _pk(store, dataset, ext), fluency.id, "ada", label=ada, base_revision=0
        )
        if bob is not None:
            store.submit_annotation(
                _pk(store, dataset, ext), fluency.id, "bob", label=bob, base_revision=0
            )
    matrix = store.annotation_matrix(dataset.id, fluency.id)
    assert matrix.index.tolist() == ["q0", "q1", "q2"]  # dataset order
    assert matrix.columns.tolist() == ["ada", "bob"]
    assert matrix["ada"].tolist() == [5.0, 3.0, 1.0]
    assert pd.isna(matrix.loc["q2", "bob"])
    words = store.create_criterion(project.id, "correct", kind="pointwise", scale=PASS_FAIL)
    store.submit_annotation(
        _pk(store, dataset, "q0"), words.id, "ada", label="yes", base_revision=0
    )
    assert store.annotation_matrix(dataset.id, words.id).loc["q0", "ada"] == "pass"
    empty = store.annotation_matrix(
        dataset.id,
        store.create_criterion(project.id, "empty", kind="pointwise", scale=PASS_FAIL).id,
    )
    assert empty.empty
    assert empty.index.name == "item_id"


def test_import_labels_in_bulk(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    store.submit_annotation(_pk(store, dataset, "q0"), fluency.id, "ada", label=1, base_revision=0)
    long = pd.DataFrame(
        {
            "item_id": ["q0", "q0", "q1", "q2", "q3"],
            "annotator": ["ada", "bob", "ada", "bob", "bob"],
            "label": [5, "4", 3.0, None, "2"],
            "comment": ["changed", None, "", None, "hm"],
        }
    )
    summary = store.import_labels(dataset.id, fluency.id, long)
    assert (summary.rows, summary.imported, summary.missing) == (5, 4, 1)
    assert summary.annotators == ("ada", "bob")
    history = store.annotation_history(_pk(store, dataset, "q0"), fluency.id, annotator="ada")
    assert [(a.revision, a.label, a.source) for a in history] == [
        (1, "1", "ui"),
        (2, "5", "import"),
    ]
    assert history[1].comment == "changed"
    matrix = store.annotation_matrix(dataset.id, fluency.id)
    assert matrix.loc["q0"].tolist() == [5.0, 4.0]


@pytest.mark.parametrize(
    ("frame", "error", "rows"),
    [
        (
            pd.DataFrame({"item_id": ["q0", "nope"], "annotator": ["a", "a"], "label": [1, 2]}),
            DataError,
            (2,),
        ),
        (
            pd.DataFrame({"item_id": ["q0", "q1"], "annotator": ["a", "a"], "label": [1, 9]}),
            LabelOutOfScaleError,
            (2,),
        ),
        (
            pd.DataFrame(
                {"item_id": ["q0", "q1", "q0"], "annotator": ["a", "a", "a"], "label": [1, 2, 3]}
            ),
            DuplicateIdError,
            (1, 3),
        ),
        (
            pd.DataFrame({"item_id": ["q0"], "annotator": [None], "label": [1]}),
            DataError,
            (1,),
        ),
    ],
)
def test_import_errors_name_the_rows_and_import_nothing(
    store: Store,
    dataset: DatasetRecord,
    fluency: CriterionRecord,
    frame: pd.DataFrame,
    error: type[Exception],
    rows: tuple[int, ...],
) -> None:
    with pytest.raises(error) as caught:
        store.import_labels(dataset.id, fluency.id, frame)
    assert caught.value.rows == rows  # type: ignore[attr-defined]
    assert _count(store, "annotations") == 0


def test_import_needs_the_columns(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    with pytest.raises(MissingColumnError, match="annotator"):
        store.import_labels(dataset.id, fluency.id, pd.DataFrame({"item_id": [], "label": []}))


def test_export_has_every_revision(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord, project: ProjectRecord
) -> None:
    item = _pk(store, dataset, "q1")
    store.submit_annotation(item, fluency.id, "ada", label=2, base_revision=0, time_spent_s=1.0)
    store.submit_annotation(item, fluency.id, "ada", label=3, base_revision=1, comment="better")
    store.submit_annotation(item, fluency.id, "bob", label=None, flag="skip", base_revision=0)
    frame = store.export_annotations(project_id=project.id)
    assert list(frame.columns) == [
        "dataset",
        "dataset_version",
        "item_id",
        "criterion",
        "annotator",
        "revision",
        "latest",
        "label",
        "flag",
        "comment",
        "time_spent_s",
        "display_swapped",
        "source",
        "created_at",
    ]
    assert frame[["annotator", "revision", "latest"]].values.tolist() == [
        ["ada", 1, False],
        ["ada", 2, True],
        ["bob", 1, True],
    ]
    assert frame["label"].tolist()[:2] == ["2", "3"]
    assert pd.isna(frame["label"].iloc[2])
    assert frame["flag"].iloc[2] == "skip"
    assert frame["item_id"].unique().tolist() == ["q1"]
    assert frame["criterion"].unique().tolist() == ["fluency"]
    assert len(store.export_annotations(dataset_id=dataset.id)) == 3
    assert store.export_annotations(criterion_id=fluency.id + 1000).empty
    with pytest.raises(StoreError):
        store.export_annotations()


def test_import_keeps_time_spent_and_when(store, dataset, fluency) -> None:
    import pandas as pd

    labels = pd.DataFrame(
        {
            "item_id": ["q1", "q2"],
            "annotator": ["ann", "ann"],
            "label": [4, 2],
            "time_spent_s": [12.5, None],
            "created_at": ["2025-05-12 09:59:14+00:00", "2025-05-13 10:00:00"],
        }
    )
    store.import_labels(dataset.id, fluency.id, labels)
    exported = store.export_annotations(dataset_id=dataset.id).set_index("item_id")
    assert exported.loc["q1", "time_spent_s"] == 12.5
    assert pd.isna(exported.loc["q2", "time_spent_s"])
    # a naive time is read as UTC
    assert pd.Timestamp(exported.loc["q2", "created_at"]).tz_convert("UTC").day == 13
    assert pd.Timestamp(exported.loc["q1", "created_at"]).tz_convert("UTC").hour == 9
