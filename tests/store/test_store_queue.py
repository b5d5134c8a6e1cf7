"""The annotation queue: assignment, k annotators per item, resume, and the blind rule."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pandas as pd
import pytest
import sqlalchemy as sa

from evalcore.store import (
    AnnotationTask,
    CriterionRecord,
    DatasetRecord,
    ProjectRecord,
    Store,
)


def _assignments(store: Store, dataset: DatasetRecord) -> list[tuple[str, int, int]]:
    with store.engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT a.name, s.item_id, s.position FROM assignments s "
                "JOIN annotators a ON a.id = s.annotator_id WHERE s.dataset_id = :d"
            ),
            {"d": dataset.id},
        ).all()
    return [(str(n), int(i), int(p)) for n, i, p in rows]


def test_first_call_queues_every_item_in_dataset_order(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    status = store.ensure_queue(dataset.id, fluency.id, "ada")
    assert (status.total, status.done, status.skipped, status.next_position) == (10, 0, 0, 0)
    assert status.remaining == 10
    assert not status.finished
    tasks = [store.queue_item(dataset.id, fluency.id, "ada", p) for p in range(10)]
    assert [t.external_id for t in tasks if t] == [f"q{i}" for i in range(10)]
    assert store.queue_item(dataset.id, fluency.id, "ada", 10) is None
    assert not any(t.swapped for t in tasks if t)  # pointwise items are never swapped


def test_ensure_queue_is_idempotent(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    first = store.ensure_queue(dataset.id, fluency.id, "ada")
    again = store.ensure_queue(dataset.id, fluency.id, "ada")
    assert first == again
    assert len(_assignments(store, dataset)) == 10


def test_annotators_per_item_is_respected(
    store: Store, project: ProjectRecord, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    store.update_project_settings(project.id, {"annotators_per_item": 2})
    totals = [store.ensure_queue(dataset.id, fluency.id, who).total for who in ("a", "b", "c")]
    assert totals == [10, 10, 0]
    per_item = Counter(item for _who, item, _pos in _assignments(store, dataset))
    assert set(per_item.values()) == {2}
    assert len(per_item) == 10


def test_limit_shares_the_work(
    store: Store, project: ProjectRecord, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    assert store.ensure_queue(dataset.id, fluency.id, "a", limit=4).total == 4
    assert store.ensure_queue(dataset.id, fluency.id, "b", limit=4).total == 4
    assert store.ensure_queue(dataset.id, fluency.id, "c").total == 2
    rows = _assignments(store, dataset)
    assert Counter(item for _w, item, _p in rows).most_common(1)[0][1] == 1
    # Positions are 0..n-1 within each annotator's queue.
    assert sorted(p for w, _i, p in rows if w == "c") == [0, 1]


def test_pairwise_order_is_a_stable_personal_coin(
    store: Store,
    pairwise_dataset: DatasetRecord,
    preference: CriterionRecord,
    project: ProjectRecord,
) -> None:
    store.update_project_settings(project.id, {"annotators_per_item": 2})
    store.ensure_queue(pairwise_dataset.id, preference.id, "ada")
    store.ensure_queue(pairwise_dataset.id, preference.id, "bob")

    def swaps(who: str) -> list[bool]:
        return [
            t.swapped
            for p in range(20)
            if (t := store.queue_item(pairwise_dataset.id, preference.id, who, p)) is not None
        ]

    ada, bob = swaps("ada"), swaps("bob")
    assert 0 < sum(ada) < 20  # both orders occur
    assert ada != bob  # the coin is per annotator
    assert swaps("ada") == ada  # and stable


def test_resume_where_the_annotator_left_off(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    store.ensure_queue(dataset.id, fluency.id, "ada")

    def submit(position: int, label: int | None, flag: str | None = None) -> None:
        task = store.queue_item(dataset.id, fluency.id, "ada", position)
        assert task is not None
        store.submit_annotation(
            task.item_id,
            fluency.id,
            "ada",
            label=label,
            flag=flag,
            base_revision=task.revision,  # type: ignore[arg-type]
        )

    for position in range(3):
        submit(position, 4)
    submit(3, None, "skip")
    submit(4, 2)
    status = store.queue_status(dataset.id, fluency.id, "ada")
    assert (status.total, status.done, status.skipped, status.next_position) == (10, 4, 1, 5)
    assert store.next_open_position(dataset.id, fluency.id, "ada") == 5
    assert store.next_open_position(dataset.id, fluency.id, "ada", 2, include_skipped=True) == 3
    assert store.next_open_position(dataset.id, fluency.id, "ada", 7) == 7

    # A new Store (a restart) resumes at the same place.
    reopened = Store.open(store.engine.url.render_as_string(hide_password=False))
    try:
        assert reopened.queue_status(dataset.id, fluency.id, "ada").next_position == 5
    finally:
        reopened.close()

    for position in range(5, 10):
        submit(position, 1)
    status = store.queue_status(dataset.id, fluency.id, "ada")
    assert (status.done, status.skipped, status.next_position) == (9, 1, 3)  # back to the skip
    submit(3, 5)
    status = store.queue_status(dataset.id, fluency.id, "ada")
    assert (status.done, status.next_position, status.finished) == (10, None, True)
    assert store.next_open_position(dataset.id, fluency.id, "ada") is None


def test_queue_item_shows_the_annotators_own_latest_answer(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    store.ensure_queue(dataset.id, fluency.id, "ada")
    task = store.queue_item(dataset.id, fluency.id, "ada", 1)
    assert task is not None
    assert (task.label, task.revision) == (None, 0)
    assert (task.prompt, task.response) == ("question 1?", "answer 1")
    assert task.metadata == {"topic": "news", "length": 10}
    store.submit_annotation(task.item_id, fluency.id, "ada", label=2, base_revision=0)
    store.submit_annotation(
        task.item_id, fluency.id, "ada", label=3, base_revision=1, comment="on reflection"
    )
    again = store.queue_item(dataset.id, fluency.id, "ada", 1)
    assert again is not None
    assert (again.label, again.comment, again.revision) == ("3", "on reflection", 2)


def test_unknown_annotator_has_an_empty_queue(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    status = store.queue_status(dataset.id, fluency.id, "nobody")
    assert (status.total, status.next_position) == (0, None)
    assert store.queue_item(dataset.id, fluency.id, "nobody", 0) is None
    assert store.next_open_position(dataset.id, fluency.id, "nobody") is None


def test_queue_item_is_blind(
    store: Store,
    dataset: DatasetRecord,
    fluency: CriterionRecord,
) -> None:
    # The task type has no room for anything but the item and this annotator's own answer.
    fields = {f.name for f in dataclasses.fields(AnnotationTask)}
    for forbidden in ("judge", "result", "run", "annotator", "others", "labels", "agreement"):
        assert not any(forbidden in name for name in fields), forbidden

    store.ensure_queue(dataset.id, fluency.id, "ada")
    task = store.queue_item(dataset.id, fluency.id, "ada", 0)
    assert task is not None
    # Another annotator and a judge have labelled the same item.
    store.submit_annotation(task.item_id, fluency.id, "bob", label=1, base_revision=0)
    run = store.create_run(dataset.id, fluency.id, name="judge", model="m")
    store.record_result(run.id, task.item_id, status="ok", label=5, reason="great")

    statements: list[str] = []

    def capture(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        statements.append(statement.lower())

    sa.event.listen(store.engine, "before_cursor_execute", capture)
    try:
        seen = store.queue_item(dataset.id, fluency.id, "ada", 0)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", capture)
    assert seen is not None
    assert (seen.label, seen.revision) == (None, 0)  # bob's label is not ada's
    assert statements
    assert not [s for s in statements if "judge" in s]
    assert "great" not in repr(seen)
    assert "bob" not in repr(seen)


@pytest.mark.parametrize("position", [-1, 10_000])
def test_positions_out_of_range_give_none(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord, position: int
) -> None:
    store.ensure_queue(dataset.id, fluency.id, "ada")
    assert store.queue_item(dataset.id, fluency.id, "ada", position) is None


def test_queue_counts_answers_given_before_and_after_it_was_made(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    def pk(external: str) -> int:
        return store.get_item_by_external_id(dataset.id, external).id

    # Answers given before the queue exists (a submit and an import) count once it is made.
    store.submit_annotation(pk("q0"), fluency.id, "ada", label=3, base_revision=0)
    store.submit_annotation(pk("q2"), fluency.id, "ada", label=None, flag="broken", base_revision=0)
    store.import_labels(
        dataset.id,
        fluency.id,
        pd.DataFrame({"item_id": ["q1"], "annotator": ["ada"], "label": [5]}),
    )
    status = store.ensure_queue(dataset.id, fluency.id, "ada")
    assert (status.total, status.done, status.skipped, status.next_position) == (10, 2, 1, 3)
    # An import after the queue exists moves it on too, including over a skip.
    store.import_labels(
        dataset.id,
        fluency.id,
        pd.DataFrame({"item_id": ["q2", "q3"], "annotator": ["ada", "ada"], "label": [1, 2]}),
    )
    status = store.queue_status(dataset.id, fluency.id, "ada")
    assert (status.done, status.skipped, status.next_position) == (4, 0, 4)
    # A later skip of a labelled item counts as skipped again: the latest revision counts.
    task = store.queue_item(dataset.id, fluency.id, "ada", 0)
    assert task is not None
    assert task.revision == 1
    store.submit_annotation(
        task.item_id, fluency.id, "ada", label=None, flag="skip", base_revision=task.revision
    )
    status = store.queue_status(dataset.id, fluency.id, "ada")
    assert (status.done, status.skipped, status.next_position) == (3, 1, 4)
    assert store.next_open_position(dataset.id, fluency.id, "ada", include_skipped=True) == 0
