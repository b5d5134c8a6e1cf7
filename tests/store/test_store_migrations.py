"""Alembic migrations: an empty database reaches head and matches the models; data survives upgrades."""

from __future__ import annotations

import json
import multiprocessing
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from evalcore.labels import LIKERT_5
from evalcore.store import Store, head_revision
from evalcore.store._models import Base
from tests.store.store_helpers import concurrent_opener


def test_empty_database_migrates_to_head_matching_the_models(empty_url: str) -> None:
    store = Store(empty_url)
    try:
        assert store.schema_revision() is None
        assert not store.is_up_to_date()
        store.migrate()
        assert store.schema_revision() == head_revision() == "0013"
        with store.engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            assert compare_metadata(context, Base.metadata) == []
        store.migrate()  # at head: nothing to do
        assert store.is_up_to_date()
    finally:
        store.close()


def test_a_0001_database_with_data_upgrades_keeping_it(empty_url: str) -> None:
    store = Store(empty_url)
    try:
        store.migrate("0001")
        assert store.schema_revision() == "0001"
        now = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
        with store.engine.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO projects (id, name, description, settings, created_at) "
                    "VALUES (1, 'old', '', :settings, :now)"
                ),
                {"settings": '{"annotators_per_item": 2}', "now": now},
            )
            conn.execute(
                sa.text(
                    "INSERT INTO datasets (id, project_id, name, version, kind, metadata_columns, "
                    "n_items, created_at) VALUES (1, 1, 'd', 1, 'pointwise', '[\"topic\"]', 2, :now)"
                ),
                {"now": now},
            )
            for n in range(2):
                conn.execute(
                    sa.text(
                        "INSERT INTO items (id, dataset_id, external_id, position, response, "
                        "metadata, created_at) VALUES (:id, 1, :ext, :pos, :resp, :meta, :now)"
                    ),
                    {
                        "id": n + 1,
                        "ext": f"i{n}",
                        "pos": n,
                        "resp": f"answer {n}",
                        "meta": '{"topic": "t"}',
                        "now": now,
                    },
                )
            conn.execute(
                sa.text(
                    "INSERT INTO criteria (id, project_id, name, kind, scale, rubric, created_at) "
                    "VALUES (1, 1, 'fluency', 'pointwise', :scale, '', :now)"
                ),
                {"scale": json.dumps(LIKERT_5.to_dict()), "now": now},
            )
            conn.execute(
                sa.text("INSERT INTO annotators (id, name, created_at) VALUES (1, 'ada', :now)"),
                {"now": now},
            )
            conn.execute(
                sa.text(
                    "INSERT INTO annotations (item_id, criterion_id, annotator_id, revision, label, "
                    "display_swapped, source, created_at) VALUES (2, 1, 1, 1, '4', false, 'ui', :now)"
                ),
                {"now": now},
            )
            if store.dialect == "postgresql":
                for table in ("projects", "datasets", "items", "criteria", "annotators"):
                    conn.execute(
                        sa.text(
                            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                            f"(SELECT max(id) FROM {table}))"
                        )
                    )
        store.migrate()
        assert store.schema_revision() == head_revision()
        project = store.get_project_by_name("old")
        assert project.annotators_per_item == 2
        items = store.items_frame(1)
        assert items["item_id"].tolist() == ["i0", "i1"]
        assert items["topic"].tolist() == ["t", "t"]
        matrix = store.annotation_matrix(1, 1)
        assert matrix.loc["i1", "ada"] == 4.0
        # The new tables work alongside the old data.
        run = store.create_run(1, 1, name="after upgrade")
        assert run.n_planned == 2
        assert store.create_project("new").id == 2
    finally:
        store.close()


@pytest.mark.slow
def test_concurrent_openers_migrate_once(empty_url: str) -> None:
    context = multiprocessing.get_context("spawn")
    with context.Pool(8) as pool:
        revisions = pool.map(concurrent_opener, [empty_url] * 8)
    assert revisions == [head_revision()] * 8
    store = Store(empty_url)
    try:
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM alembic_version").scalar_one() == 1
    finally:
        store.close()
