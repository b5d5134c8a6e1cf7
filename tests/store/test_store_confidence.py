"""Confidence in the store (migration 0009): result probabilities, jury runs and queue orders, on
SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
import sqlalchemy as sa
from alembic import command

from evalcore.errors import ConfigError, DataError, LabelOutOfScaleError, NotFoundError
from evalcore.labels import LIKERT_5
from evalcore.store import (
    AnnotationTask,
    CriterionRecord,
    DatasetRecord,
    JudgeResultInput,
    ProjectRecord,
    Store,
)
from evalcore.store._migrate import alembic_config, locked_migration_connection


def _ids(store: Store, dataset: DatasetRecord) -> dict[str, int]:
    frame = store.items_frame(dataset.id)
    return {str(ext): int(pk) for pk, ext in zip(frame.index, frame["item_id"], strict=True)}


# --- results ------------------------------------------------------------------------------------


def test_results_keep_their_probabilities_and_confidence(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    ids = _ids(store, dataset)
    run = store.create_run(dataset.id, fluency.id, name="r")
    store.record_results(
        run.id,
        [
            JudgeResultInput(
                item_id=ids["q0"],
                status="ok",
                label=4,
                probabilities={4: 0.6, "5": 0.3, 3.0: 0.1},
                confidence=0.6,
            ),
            JudgeResultInput(item_id=ids["q1"], status="ok", label=2),
        ],
    )
    frame = store.results_frame(run.id).set_index("item_id")
    # labels are stored as their canonical text, whatever form they were given in
    assert frame.loc["q0", "probabilities"] == {"4": 0.6, "5": 0.3, "3": 0.1}
    assert frame.loc["q0", "confidence"] == 0.6
    assert frame.loc["q1", "probabilities"] is None
    assert frame["confidence"].isna().tolist() == [False, True]


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        ({"confidence": 1.5}, DataError, "confidence must be a probability"),
        ({"confidence": float("nan")}, DataError, "confidence must be a probability"),
        ({"probabilities": {4: -0.1}}, DataError, "probability of '4'"),
        ({"probabilities": {9: 0.5}}, LabelOutOfScaleError, "item 'q0'"),
    ],
)
def test_a_probability_out_of_range_is_refused_naming_the_item(
    store: Store,
    dataset: DatasetRecord,
    fluency: CriterionRecord,
    fields: dict[str, object],
    error: type[Exception],
    message: str,
) -> None:
    ids = _ids(store, dataset)
    run = store.create_run(dataset.id, fluency.id, name="r")
    store.record_results(run.id, [JudgeResultInput(item_id=ids["q1"], status="ok", label=3)])
    with pytest.raises(error, match=message):
        store.record_results(
            run.id,
            [JudgeResultInput(item_id=ids["q0"], status="ok", label=4, **fields)],  # type: ignore[arg-type]
        )
    assert len(store.results_frame(run.id)) == 1  # what was saved before is kept


# --- juries -------------------------------------------------------------------------------------


def test_a_jury_run_keeps_its_members_weights_and_results(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    ids = _ids(store, dataset)
    a = store.create_run(dataset.id, fluency.id, name="a")
    b = store.create_run(dataset.id, fluency.id, name="b")
    jury = store.create_jury_run(
        dataset.id,
        fluency.id,
        name="the jury",
        members=[b.id, a.id],
        weights=[1.0, 2.5],
        settings={"jury": {"method": "weighted"}},
        results=[
            JudgeResultInput(
                item_id=ids["q3"], status="ok", label=5, probabilities={5: 1.0}, confidence=1.0
            )
        ],
    )
    assert (jury.source, jury.status, jury.order_mode) == ("jury", "done", "single")
    assert jury.finished_at is not None
    assert jury.settings == {"jury": {"method": "weighted"}}
    members = store.jury_members(jury.id)
    assert [(m.member_run_id, m.name, m.position, m.weight) for m in members] == [
        (b.id, "b", 0, 1.0),
        (a.id, "a", 1, 2.5),
    ]
    assert store.jury_members(a.id) == []
    frame = store.results_frame(jury.id)
    assert frame["item_id"].tolist() == ["q3"]
    assert frame["confidence"].tolist() == [1.0]
    # a jury can be a member of another jury
    again = store.create_jury_run(dataset.id, fluency.id, name="jury²", members=[jury.id, a.id])
    assert [m.member_run_id for m in store.jury_members(again.id)] == [jury.id, a.id]


def test_a_bad_jury_is_refused_and_saves_nothing(
    store: Store,
    project: ProjectRecord,
    make_dataset: object,
    dataset: DatasetRecord,
    fluency: CriterionRecord,
) -> None:
    other_dataset = make_dataset(3, name="other")  # type: ignore[operator]
    a = store.create_run(dataset.id, fluency.id, name="a")
    b = store.create_run(dataset.id, fluency.id, name="b")
    stranger = store.create_run(other_dataset.id, fluency.id, name="elsewhere")
    before = len(store.list_runs(project_id=project.id))
    cases = [
        ({"members": [a.id]}, ConfigError, "at least two"),
        ({"members": [a.id, a.id]}, ConfigError, f"Run {a.id} is named twice"),
        ({"members": [a.id, b.id], "weights": [1.0]}, ConfigError, "needs 2 weights"),
        ({"members": [a.id, b.id], "weights": [1.0, 0.0]}, ConfigError, "must be positive"),
        ({"members": [a.id, stranger.id]}, ConfigError, "'elsewhere'.*another dataset"),
        ({"members": [a.id, 999_999]}, NotFoundError, "999999"),
        (
            {"members": [a.id, b.id], "results": [JudgeResultInput(item_id=10**9, status="ok")]},
            NotFoundError,
            "not in its dataset",
        ),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            store.create_jury_run(dataset.id, fluency.id, name="bad", **kwargs)  # type: ignore[arg-type]
    assert len(store.list_runs(project_id=project.id)) == before
    with pytest.raises(ConfigError, match="create_jury_run"):
        store.create_run(dataset.id, fluency.id, name="x", source="jury")  # type: ignore[arg-type]


# --- queue orders -------------------------------------------------------------------------------


def _positions(
    store: Store, dataset: DatasetRecord, criterion: CriterionRecord, who: str
) -> list[str]:
    status = store.queue_status(dataset.id, criterion.id, who)
    out = []
    for position in range(status.total):
        task = store.queue_item(dataset.id, criterion.id, who, position)
        assert task is not None
        out.append(task.external_id)
    return out


def test_an_active_order_decides_which_items_a_queue_hands_out_and_when(
    store: Store, project: ProjectRecord, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    store.update_project_settings(project.id, {"claim_batch": 2})
    ids = _ids(store, dataset)
    order = store.save_queue_order(
        dataset.id,
        fluency.id,
        "unsure first",
        [ids["q7"], ids["q2"], ids["q9"]],
        reason="confidence 0.31, 0.40, 0.52 in run 4",
        source="escalation",
        author="eve",
    )
    assert order.active
    assert order.n_items == 3
    assert order.item_ids == (ids["q7"], ids["q2"], ids["q9"])
    status = store.ensure_queue(dataset.id, fluency.id, "ana")
    assert status.total == 2
    assert status.team_left == 3
    assert _positions(store, dataset, fluency, "ana") == ["q7", "q2"]
    store.ensure_queue(dataset.id, fluency.id, "bob")
    assert _positions(store, dataset, fluency, "bob") == ["q9"]  # q7, q2 are ana's
    for external in ("q7", "q2"):
        store.submit_annotation(ids[external], fluency.id, "ana", label=2, base_revision=0)
    status = store.ensure_queue(dataset.id, fluency.id, "ana")
    assert status.total == 2
    assert status.finished
    assert store.queue_status(dataset.id, fluency.id, "ana").team_left == 1  # q9, held by bob
    # back to dataset order: the rest of the dataset comes after what ana had
    assert store.deactivate_queue_order(dataset.id, fluency.id)
    assert not store.deactivate_queue_order(dataset.id, fluency.id)
    store.ensure_queue(dataset.id, fluency.id, "ana")
    assert _positions(store, dataset, fluency, "ana") == ["q7", "q2", "q0", "q1"]
    assert store.active_queue_order(dataset.id, fluency.id) is None


def test_activating_an_order_gives_back_open_claims_outside_it(
    store: Store, project: ProjectRecord, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    store.update_project_settings(project.id, {"claim_batch": 3})
    ids = _ids(store, dataset)
    store.ensure_queue(dataset.id, fluency.id, "ana")  # q0, q1, q2 in dataset order
    store.submit_annotation(ids["q0"], fluency.id, "ana", label=4, base_revision=0)
    store.save_queue_order(dataset.id, fluency.id, "next", [ids["q5"], ids["q1"]])
    status = store.queue_status(dataset.id, fluency.id, "ana")
    # q1 is in the order and stays open; q2 went back to the pool; q0 was answered and stays
    assert (status.done, status.released, status.next_position) == (1, 1, 1)
    store.submit_annotation(ids["q1"], fluency.id, "ana", label=4, base_revision=0)
    store.ensure_queue(dataset.id, fluency.id, "ana")
    assert _positions(store, dataset, fluency, "ana") == ["q0", "q1", "q2", "q5"]
    # a late answer to the released item is still kept
    store.submit_annotation(ids["q2"], fluency.id, "ana", label=1, base_revision=0)
    assert store.annotation_matrix(dataset.id, fluency.id).loc["q2", "ana"] == 1.0


def test_saving_an_order_again_replaces_it_and_only_one_is_active(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    ids = _ids(store, dataset)
    store.save_queue_order(dataset.id, fluency.id, "a", [ids["q1"]])
    store.save_queue_order(dataset.id, fluency.id, "b", [ids["q2"]], activate=False)
    assert store.active_queue_order(dataset.id, fluency.id).name == "a"  # type: ignore[union-attr]
    store.activate_queue_order(dataset.id, fluency.id, "b")
    listed = {o.name: o for o in store.list_queue_orders(dataset.id, fluency.id)}
    assert (listed["a"].active, listed["b"].active) == (False, True)
    assert listed["a"].item_ids == ()  # a list leaves the items out
    again = store.save_queue_order(
        dataset.id, fluency.id, "a", [ids["q4"], ids["q3"]], reason="newer", activate=False
    )
    assert again.id == listed["a"].id
    assert again.n_items == 2
    assert store.get_queue_order(dataset.id, fluency.id, "a").item_ids == (ids["q4"], ids["q3"])
    assert store.get_queue_order(dataset.id, fluency.id, "a").reason == "newer"
    with pytest.raises(NotFoundError, match="'nope'"):
        store.activate_queue_order(dataset.id, fluency.id, "nope")


def test_a_bad_order_is_refused_naming_the_item(
    store: Store, make_dataset: object, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    other = make_dataset(2, name="other")  # type: ignore[operator]
    ids = _ids(store, dataset)
    stranger = next(iter(_ids(store, other).values()))
    with pytest.raises(DataError, match=f"item {stranger} is not an item of dataset"):
        store.save_queue_order(dataset.id, fluency.id, "x", [ids["q1"], stranger])
    with pytest.raises(DataError, match=f"names item {ids['q1']} twice"):
        store.save_queue_order(dataset.id, fluency.id, "x", [ids["q1"], ids["q1"]])
    with pytest.raises(ConfigError, match="lists no item"):
        store.save_queue_order(dataset.id, fluency.id, "x", [])
    with pytest.raises(ConfigError, match="comes from"):
        store.save_queue_order(dataset.id, fluency.id, "x", [ids["q1"]], source="oracle")
    assert store.list_queue_orders(dataset.id) == []


def test_annotators_never_see_the_order_or_its_reason(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    ids = _ids(store, dataset)
    reason = "SECRET: the judge said 4 with confidence 0.12"
    store.save_queue_order(dataset.id, fluency.id, "why-hidden", [ids["q6"]], reason=reason)
    store.ensure_queue(dataset.id, fluency.id, "ana")
    task = store.queue_item(dataset.id, fluency.id, "ana", 0)
    assert task is not None
    assert task.external_id == "q6"
    shown = {f.name for f in dataclasses.fields(AnnotationTask)}
    assert not shown & {"reason", "order", "confidence", "rank", "score", "source", "name"}
    assert "SECRET" not in repr(task)
    assert "why-hidden" not in repr(task)
    status = store.queue_status(dataset.id, fluency.id, "ana")
    assert "SECRET" not in repr(status)
    assert "why-hidden" not in repr(status)


def test_deleting_a_dataset_removes_its_orders(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    ids = _ids(store, dataset)
    store.save_queue_order(dataset.id, fluency.id, "o", [ids["q1"]])
    with store.engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM datasets WHERE id = :d"), {"d": dataset.id})
        left = conn.execute(sa.text("SELECT count(*) FROM queue_order_items")).scalar_one()
    assert left == 0


# --- the migration ------------------------------------------------------------------------------


def test_0012_keeps_every_result_and_allows_jury_runs(empty_url: str) -> None:
    store = Store(empty_url)
    try:
        store.migrate("0011")
        project = store.create_project("p")
        criterion = store.create_criterion(project.id, "c", kind="pointwise", scale=LIKERT_5)
        # an 0011 database has neither the datasets' column roles (0013) nor the confidence
        # columns (0012): write its dataset, items and results as it would
        with store.engine.begin() as conn:
            dataset_id = conn.execute(
                sa.text(
                    "INSERT INTO datasets (project_id, name, version, kind, metadata_columns, "
                    "n_items, created_at) VALUES (:p, 'd', 1, 'pointwise', '[]', 2, "
                    "CURRENT_TIMESTAMP) RETURNING id"
                ),
                {"p": project.id},
            ).scalar_one()
            for position, external in enumerate(["a", "b"]):
                conn.execute(
                    sa.text(
                        "INSERT INTO items (dataset_id, external_id, position, metadata, "
                        "created_at) VALUES (:d, :e, :n, '{}', CURRENT_TIMESTAMP)"
                    ),
                    {"d": dataset_id, "e": external, "n": position},
                )
            item_pks = [
                row[0]
                for row in conn.execute(
                    sa.text("SELECT id FROM items WHERE dataset_id = :d"), {"d": dataset_id}
                )
            ]
            run_id = conn.execute(
                sa.text(
                    "INSERT INTO judge_runs (project_id, dataset_id, criterion_id, name, settings, "
                    "order_mode, status, n_planned, source, created_at) VALUES (:p, :d, :c, "
                    "'old run', '{}', 'single', 'done', 2, 'run', CURRENT_TIMESTAMP) RETURNING id"
                ),
                {"p": project.id, "d": dataset_id, "c": criterion.id},
            ).scalar_one()
        dataset, run = SimpleNamespace(id=dataset_id), SimpleNamespace(id=run_id)
        with store.engine.begin() as conn:
            for pk in item_pks:
                conn.execute(
                    sa.text(
                        'INSERT INTO judge_results (run_id, item_id, "order", status, label, '
                        "attempts, cached, created_at) VALUES (:r, :i, 'AB', 'ok', '4', 1, false, "
                        "CURRENT_TIMESTAMP)"
                    ),
                    {"r": run.id, "i": int(pk)},
                )
        with pytest.raises(sa.exc.IntegrityError), store.engine.begin() as conn:
            conn.execute(
                sa.text("UPDATE judge_runs SET source = 'jury' WHERE id = :r"), {"r": run.id}
            )
        store.migrate("0012")
        assert store.schema_revision() == "0012"
        store.migrate()  # and on to the newest, where the store's models are at home
        frame = store.results_frame(run.id)
        assert frame["label"].tolist() == ["4", "4"]  # nothing was lost on the way
        assert frame["confidence"].isna().all()
        other = store.create_run(dataset.id, criterion.id, name="other")
        jury = store.create_jury_run(dataset.id, criterion.id, name="j", members=[run.id, other.id])
        assert store.get_run(jury.id).source == "jury"
        with store.engine.connect() as conn:
            if store.dialect == "sqlite":
                assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
        with pytest.raises(sa.exc.IntegrityError), store.engine.begin() as conn:
            conn.execute(
                sa.text("UPDATE judge_runs SET source = 'guess' WHERE id = :r"), {"r": run.id}
            )
        # and back: juries go, the other runs stay with their results
        with locked_migration_connection(store.engine) as conn:
            command.downgrade(alembic_config(conn), "0011")
        assert store.schema_revision() == "0011"
        with store.engine.connect() as conn:
            names = conn.execute(sa.text("SELECT name FROM judge_runs ORDER BY id")).scalars()
            assert list(names) == ["old run", "other"]
            labels = conn.execute(
                sa.text("SELECT label FROM judge_results WHERE run_id = :r"), {"r": run.id}
            ).scalars()
            assert list(labels) == ["4", "4"]
    finally:
        store.close()
