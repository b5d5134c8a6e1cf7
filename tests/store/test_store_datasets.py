"""Datasets: atomic bulk saves, versions, items in order, metadata kept."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from evalcore.errors import (
    DataError,
    DuplicateIdError,
    EmptyFileError,
    MissingColumnError,
    NotFoundError,
)
from evalcore.store import ITEM_FIELDS, DatasetRecord, ProjectRecord, Store
from tests.store.store_helpers import items_frame_for


def _count(store: Store, table: str) -> int:
    with store.engine.connect() as conn:
        return int(conn.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar_one())


def test_save_dataset_round_trip(store: Store, project: ProjectRecord) -> None:
    frame = items_frame_for(5)
    saved = store.save_dataset(
        project.id, "answers", frame, kind="pointwise", source_filename="a.csv", layout="plain"
    )
    assert (saved.version, saved.n_items, saved.kind) == (1, 5, "pointwise")
    assert saved.metadata_columns == ("topic", "length")
    assert (saved.source_filename, saved.layout) == ("a.csv", "plain")
    assert store.get_dataset(saved.id) == saved
    assert store.count_items(saved.id) == 5

    items = store.items_frame(saved.id)
    assert list(items.columns) == ["item_id", *ITEM_FIELDS, "topic", "length"]
    assert items.index.name == "item_pk"
    assert items["item_id"].tolist() == ["q0", "q1", "q2", "q3", "q4"]
    assert items["response"].tolist() == frame["response"].tolist()
    assert items["context"].isna().tolist() == [True, False, False, True, False]
    assert items["response_a"].isna().all()
    assert items["length"].tolist() == [0, 10, 20, 30, 40]

    first = store.get_item(int(items.index[0]))
    assert (first.external_id, first.position, first.prompt) == ("q0", 0, "question 0?")
    assert first.metadata == {"topic": "sports", "length": 0}
    assert store.get_item_by_external_id(saved.id, "q3").position == 3


def test_items_frame_saves_back_to_the_same_items(store: Store, project: ProjectRecord) -> None:
    first = store.save_dataset(project.id, "a", items_frame_for(4))
    again = store.save_dataset(project.id, "b", store.items_frame(first.id))
    left = store.items_frame(first.id).reset_index(drop=True)
    right = store.items_frame(again.id).reset_index(drop=True)
    pd.testing.assert_frame_equal(left, right)


def test_same_name_is_a_new_version(store: Store, project: ProjectRecord) -> None:
    v1 = store.save_dataset(project.id, "answers", items_frame_for(3))
    v2 = store.save_dataset(project.id, "answers", items_frame_for(4))
    other = store.save_dataset(project.id, "other", items_frame_for(2))
    assert (v1.version, v2.version, other.version) == (1, 2, 1)
    assert store.get_dataset_by_name(project.id, "answers") == v2
    assert store.get_dataset_by_name(project.id, "answers", version=1) == v1
    assert [(d.name, d.version) for d in store.list_datasets(project.id)] == [
        ("answers", 2),
        ("answers", 1),
        ("other", 1),
    ]
    assert [d.version for d in store.list_datasets(project.id, latest_only=True)] == [2, 1]
    # Versions are immutable: the first still has its own 3 items.
    assert store.count_items(v1.id) == 3
    with pytest.raises(NotFoundError):
        store.get_dataset_by_name(project.id, "answers", version=9)


@pytest.mark.slow
def test_a_failure_midway_leaves_nothing_behind(store: Store, project: ProjectRecord) -> None:
    frame = items_frame_for(60_000)
    frame.loc[50_000, "item_id"] = "q7"  # row 50 001 repeats the id of row 8
    with pytest.raises(DuplicateIdError) as caught:
        store.save_dataset(project.id, "big", frame, source_filename="big.csv")
    assert caught.value.rows == (8, 50_001)
    assert caught.value.item_id == "q7"
    assert "nothing was saved" in str(caught.value)
    assert store.list_datasets(project.id) == []
    assert _count(store, "items") == 0
    assert _count(store, "datasets") == 0
    # The failed upload took no version number.
    assert store.save_dataset(project.id, "big", items_frame_for(3)).version == 1


def test_bad_frames_are_refused_with_a_clear_message(store: Store, project: ProjectRecord) -> None:
    with pytest.raises(MissingColumnError, match="item_id"):
        store.save_dataset(project.id, "x", pd.DataFrame({"prompt": ["p"]}))
    with pytest.raises(MissingColumnError, match="response_b"):
        store.save_dataset(
            project.id, "x", pd.DataFrame({"item_id": [1], "response_a": ["a"]}), kind="pairwise"
        )
    with pytest.raises(EmptyFileError):
        store.save_dataset(project.id, "x", pd.DataFrame({"item_id": []}))
    with pytest.raises(DataError, match="row 2"):
        store.save_dataset(project.id, "x", pd.DataFrame({"item_id": ["a", None, "c"]}))
    with pytest.raises(NotFoundError):
        store.save_dataset(404, "x", items_frame_for(2))
    assert _count(store, "datasets") == 0


def test_values_are_cleaned_for_the_database(store: Store, project: ProjectRecord) -> None:
    frame = pd.DataFrame(
        {
            "item_id": [1, 2.0, np.int64(3)],
            "response": ["text", 4.0, None],
            "score": [np.float64(0.5), np.nan, np.int64(7)],
            "when": pd.to_datetime(["2024-01-02", "2024-01-03", None]),
            "tags": [["a", "b"], [], None],
        }
    )
    saved = store.save_dataset(project.id, "messy", frame)
    items = store.items_frame(saved.id)
    assert items["item_id"].tolist() == ["1", "2", "3"]
    assert items["response"].tolist()[:2] == ["text", "4"]
    meta = store.get_item_by_external_id(saved.id, "1").metadata
    assert meta == {"score": 0.5, "when": "2024-01-02T00:00:00", "tags": ["a", "b"]}
    assert store.get_item_by_external_id(saved.id, "2").metadata["score"] is None
    assert store.get_item_by_external_id(saved.id, "3").metadata == {
        "score": 7,
        "when": None,
        "tags": None,
    }


def test_pairwise_items(
    store: Store, pairwise_dataset: DatasetRecord, make_dataset: Callable[..., DatasetRecord]
) -> None:
    items = store.items_frame(pairwise_dataset.id)
    assert pairwise_dataset.kind == "pairwise"
    assert items["response_a"].iloc[0] == "answer A0"
    assert items["response_b"].iloc[0] == "answer B0"


def test_items_keep_row_order_and_unique_positions(store: Store, project: ProjectRecord) -> None:
    frame = items_frame_for(20).sample(frac=1.0, random_state=3)
    saved = store.save_dataset(project.id, "shuffled", frame)
    assert store.items_frame(saved.id)["item_id"].tolist() == frame["item_id"].tolist()
    with store.engine.connect() as conn:
        positions = conn.execute(
            sa.text("SELECT position FROM items WHERE dataset_id = :d ORDER BY position"),
            {"d": saved.id},
        ).scalars()
        assert list(positions) == list(range(20))
