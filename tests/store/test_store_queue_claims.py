"""Queue claims: batches, k annotators per item, release, lease takeover, and many processes at once."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa

from bench.load_annotators import (
    ClientLog,
    create_database,
    drop_database,
    seed,
    service_client,
    verify,
)
from evalcore.errors import ConfigError, PermissionDeniedError
from evalcore.labels import LIKERT_5
from evalcore.store import Actor, CriterionRecord, DatasetRecord, ProjectRecord, Store
from evalcore.store._models import Annotator, Assignment
from tests.store.store_helpers import items_frame_for


def _rows(store: Store, dataset_id: int) -> list[tuple[str, str, int, str]]:
    """(annotator, item's own id, position, state) of every assignment of a dataset."""
    with store.engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT a.name, i.external_id, s.position, s.state FROM assignments s "
                "JOIN annotators a ON a.id = s.annotator_id JOIN items i ON i.id = s.item_id "
                "WHERE s.dataset_id = :d ORDER BY a.name, s.position"
            ),
            {"d": dataset_id},
        ).all()
    return [(str(n), str(i), int(p), str(s)) for n, i, p, s in rows]


def _held(store: Store, dataset_id: int, who: str) -> list[str]:
    """The items ``who`` holds (not released), in queue order."""
    return [i for n, i, _p, s in _rows(store, dataset_id) if n == who and s != "released"]


def _label_all(store: Store, dataset: DatasetRecord, criterion: CriterionRecord, who: str) -> int:
    """Label every open item ``who`` holds; how many."""
    n = 0
    while (position := store.next_open_position(dataset.id, criterion.id, who)) is not None:
        task = store.queue_item(dataset.id, criterion.id, who, position)
        assert task is not None
        store.submit_annotation(task.item_id, criterion.id, who, label=3, base_revision=0)
        n += 1
    return n


def _set_batch(store: Store, project: ProjectRecord, **settings: object) -> None:
    store.update_project_settings(project.id, dict(settings))


def test_one_annotator_per_item_gives_disjoint_batches_that_cover_the_dataset(
    store: Store, project: ProjectRecord, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    _set_batch(store, project, annotators_per_item=1, claim_batch=4)
    totals = [store.ensure_queue(dataset.id, fluency.id, who).total for who in ("a", "b", "c")]
    assert totals == [4, 4, 2]
    held = {who: _held(store, dataset.id, who) for who in ("a", "b", "c")}
    assert held == {
        "a": ["q0", "q1", "q2", "q3"],
        "b": ["q4", "q5", "q6", "q7"],
        "c": ["q8", "q9"],
    }
    # Holding open items, nobody grows; with every item held, a finished annotator gets nothing.
    assert store.ensure_queue(dataset.id, fluency.id, "a").total == 4
    assert _label_all(store, dataset, fluency, "a") == 4
    status = store.ensure_queue(dataset.id, fluency.id, "a")
    assert (status.total, status.done, status.next_position, status.finished) == (4, 4, None, True)
    assert status.team_left == 6  # q4..q9 still need their label


def test_the_next_batch_comes_when_the_last_one_is_answered(
    store: Store, project: ProjectRecord, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    _set_batch(store, project, claim_batch=3)
    assert store.ensure_queue(dataset.id, fluency.id, "ada").total == 3
    seen = []
    for _ in range(4):
        _label_all(store, dataset, fluency, "ada")
        status = store.ensure_queue(dataset.id, fluency.id, "ada")
        seen.append((status.total, status.done, status.next_position))
    # Positions keep growing over everything ada has had; the last batch is the dataset's tail.
    assert seen == [(6, 3, 3), (9, 6, 6), (10, 9, 9), (10, 10, None)]
    assert [p for _n, _i, p, _s in _rows(store, dataset.id)] == list(range(10))
    assert store.queue_status(dataset.id, fluency.id, "ada").team_left == 0


def test_two_annotators_per_item_gives_each_item_to_exactly_two(
    store: Store, project: ProjectRecord, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    _set_batch(store, project, annotators_per_item=2, claim_batch=3)
    people = ("a", "b", "c", "d")
    for _round in range(10):
        for who in people:
            store.ensure_queue(dataset.id, fluency.id, who)
            _label_all(store, dataset, fluency, who)
    holders = Counter(i for _n, i, _p, s in _rows(store, dataset.id) if s != "released")
    assert holders == {f"q{n}": 2 for n in range(10)}
    matrix = store.annotation_matrix(dataset.id, fluency.id)
    assert (matrix.notna().sum(axis=1) == 2).all()
    assert len(matrix) == 10
    for who in people:  # nobody holds an item twice
        mine = _held(store, dataset.id, who)
        assert len(mine) == len(set(mine))


def test_release_gives_open_items_back_and_keeps_the_answered_ones(
    store: Store, project: ProjectRecord, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    _set_batch(store, project, claim_batch=5)
    store.ensure_queue(dataset.id, fluency.id, "ada")
    first = store.queue_item(dataset.id, fluency.id, "ada", 0)
    assert first is not None
    store.submit_annotation(first.item_id, fluency.id, "ada", label=4, base_revision=0)
    skipped = store.queue_item(dataset.id, fluency.id, "ada", 1)
    assert skipped is not None
    store.submit_annotation(
        skipped.item_id, fluency.id, "ada", label=None, flag="skip", base_revision=0
    )

    assert store.release_claims(dataset.id, fluency.id, "ada") == 3
    assert store.release_claims(dataset.id, fluency.id, "ada") == 0  # nothing open any more
    assert store.release_claims(dataset.id, fluency.id, "nobody") == 0
    status = store.queue_status(dataset.id, fluency.id, "ada")
    assert (status.total, status.done, status.skipped, status.released) == (5, 1, 1, 3)
    assert status.remaining == 0
    assert status.next_position == 1  # the skipped item is still hers

    # The released items go to the next annotator first, in dataset order.
    store.ensure_queue(dataset.id, fluency.id, "bob")
    assert _held(store, dataset.id, "bob") == ["q2", "q3", "q4", "q5", "q6"]
    # ada's next claim takes back her own released items if they are free (none is), then new ones
    # after her last position: the positions she had stay where they were.
    store.ensure_queue(dataset.id, fluency.id, "ada", limit=2)
    assert _held(store, dataset.id, "ada") == ["q0", "q1", "q7", "q8"]
    assert [p for n, _i, p, _s in _rows(store, dataset.id) if n == "ada"] == list(range(7))


def test_own_released_items_come_back_first(
    store: Store, project: ProjectRecord, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    _set_batch(store, project, claim_batch=4)
    store.ensure_queue(dataset.id, fluency.id, "ada")
    store.release_claims(dataset.id, fluency.id, "ada")  # signed out
    status = store.ensure_queue(dataset.id, fluency.id, "ada")  # and in again
    assert (status.total, status.released, status.next_position) == (4, 0, 0)
    assert _held(store, dataset.id, "ada") == ["q0", "q1", "q2", "q3"]


def test_a_late_answer_to_a_released_item_is_stored(
    store: Store, project: ProjectRecord, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    _set_batch(store, project, claim_batch=2)
    store.ensure_queue(dataset.id, fluency.id, "ada")
    task = store.queue_item(dataset.id, fluency.id, "ada", 0)
    assert task is not None
    store.release_claims(dataset.id, fluency.id, "ada")
    store.ensure_queue(dataset.id, fluency.id, "bob")
    assert _held(store, dataset.id, "bob") == ["q0", "q1"]
    # ada's window still showed item 0: her answer counts, and the item has one more label.
    record = store.submit_annotation(task.item_id, fluency.id, "ada", label=5, base_revision=0)
    assert record.revision == 1
    status = store.queue_status(dataset.id, fluency.id, "ada")
    assert (status.done, status.released) == (1, 1)
    store.submit_annotation(task.item_id, fluency.id, "bob", label=2, base_revision=0)
    assert store.annotation_matrix(dataset.id, fluency.id).loc["q0"].tolist() == [5.0, 2.0]


def _age_claims(store: Store, dataset_id: int, who: str, seconds: int) -> None:
    """Make ``who``'s claims of a dataset look ``seconds`` old (instead of waiting for them)."""
    with store.engine.begin() as conn:
        rows = conn.execute(
            sa.select(Assignment.id, Assignment.claimed_at)
            .join(Annotator, Annotator.id == Assignment.annotator_id)
            .where(Annotator.name == who, Assignment.dataset_id == dataset_id)
        ).all()
        for row_id, claimed_at in rows:
            conn.execute(
                sa.update(Assignment)
                .where(Assignment.id == row_id)
                .values(claimed_at=claimed_at - timedelta(seconds=seconds))
            )


def test_a_claim_older_than_the_lease_is_taken_over(
    store: Store, project: ProjectRecord, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    _set_batch(store, project, claim_batch=3, claim_lease_s=600)
    store.ensure_queue(dataset.id, fluency.id, "ada")
    first = store.queue_item(dataset.id, fluency.id, "ada", 0)
    assert first is not None
    store.submit_annotation(first.item_id, fluency.id, "ada", label=4, base_revision=0)
    _age_claims(store, dataset.id, "ada", 601)  # ada went to lunch
    store.ensure_queue(dataset.id, fluency.id, "bob")
    # bob takes over ada's two stale open claims (q1, q2), then the next free item; the answered
    # q0 stays ada's.
    assert _held(store, dataset.id, "bob") == ["q1", "q2", "q3"]
    assert _held(store, dataset.id, "ada") == ["q0"]
    status = store.queue_status(dataset.id, fluency.id, "ada")
    assert (status.total, status.done, status.released, status.next_position) == (3, 1, 2, None)
    # ada's answer on a taken-over item is still stored, through the guarded store too.
    late = store.queue_item(dataset.id, fluency.id, "ada", 1)
    assert late is not None
    ada = store.acting_as(Actor("ada", "annotator", {project.id: "annotator"}))
    ada.submit_annotation(late.item_id, fluency.id, "ada", label=1, base_revision=0)
    assert store.queue_status(dataset.id, fluency.id, "ada").done == 2


def test_a_submit_renews_the_lease_of_the_queue(
    store: Store, project: ProjectRecord, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    _set_batch(store, project, claim_batch=3, claim_lease_s=600)
    store.ensure_queue(dataset.id, fluency.id, "ada")
    _age_claims(store, dataset.id, "ada", 601)
    task = store.queue_item(dataset.id, fluency.id, "ada", 0)
    assert task is not None
    store.submit_annotation(task.item_id, fluency.id, "ada", label=4, base_revision=0)
    store.ensure_queue(dataset.id, fluency.id, "bob")
    assert _held(store, dataset.id, "ada") == ["q0", "q1", "q2"]  # renewed: nothing taken over
    assert _held(store, dataset.id, "bob") == ["q3", "q4", "q5"]


def test_imported_labels_count_as_holders(
    store: Store, project: ProjectRecord, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    store.import_labels(
        dataset.id,
        fluency.id,
        pd.DataFrame({"item_id": ["q0", "q1"], "annotator": ["old", "old"], "label": [1, 2]}),
    )
    _set_batch(store, project, claim_batch=3)
    store.ensure_queue(dataset.id, fluency.id, "ada")
    assert _held(store, dataset.id, "ada") == ["q2", "q3", "q4"]
    assert store.queue_status(dataset.id, fluency.id, "ada").team_left == 8


@pytest.mark.parametrize(
    "settings",
    [{"claim_batch": 0}, {"claim_batch": 2.5}, {"claim_lease_s": 0}, {"claim_lease_s": "long"}],
)
def test_bad_claim_settings_are_refused_with_their_name(
    store: Store,
    project: ProjectRecord,
    dataset: DatasetRecord,
    fluency: CriterionRecord,
    settings: dict[str, object],
) -> None:
    store.update_project_settings(project.id, settings)
    with pytest.raises(ConfigError, match=next(iter(settings))):
        store.ensure_queue(dataset.id, fluency.id, "ada")


def test_an_annotator_releases_only_their_own_claims(
    store: Store, project: ProjectRecord, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    store.ensure_queue(dataset.id, fluency.id, "bob", limit=2)
    ada = store.acting_as(Actor("ada", "annotator", {project.id: "annotator"}))
    ada.ensure_queue(dataset.id, fluency.id, "ada")
    assert ada.release_claims(dataset.id, fluency.id, "ada") == 8
    with pytest.raises(PermissionDeniedError):
        ada.release_claims(dataset.id, fluency.id, "bob")
    engineer = store.acting_as(Actor("eve", "engineer", {project.id: "engineer"}))
    assert engineer.release_claims(dataset.id, fluency.id, "bob") == 2


# --- many processes -------------------------------------------------------------------------------

PROCESSES = 4
ANNOTATORS_EACH = 2


def _check_invariants(store: Store, dataset_id: int, logs: list[ClientLog]) -> None:
    """No item answered by two annotators; every logged submit stored exactly once, and no other."""
    assert [e for log in logs for e in log.errors] == []
    submitted = [(s.annotator, s.item_id, s.revision) for log in logs for s in log.submits]
    assert len(submitted) == len(set(submitted))
    with store.engine.connect() as conn:
        stored = conn.execute(
            sa.text(
                "SELECT a.name, n.item_id, n.revision FROM annotations n "
                "JOIN annotators a ON a.id = n.annotator_id JOIN items i ON i.id = n.item_id "
                "WHERE i.dataset_id = :d"
            ),
            {"d": dataset_id},
        ).all()
        holders = conn.execute(
            sa.text(
                "SELECT item_id, count(*) FROM assignments WHERE dataset_id = :d "
                "AND state <> 'released' GROUP BY item_id HAVING count(*) > 1"
            ),
            {"d": dataset_id},
        ).all()
    assert sorted((str(a), int(i), int(r)) for a, i, r in stored) == sorted(submitted)
    per_item = Counter(i for _a, i, _r in submitted)
    assert max(per_item.values()) == 1
    assert holders == []


def _run_clients(
    url: str, dataset_id: int, criterion_id: int, **options: object
) -> list[ClientLog]:
    jobs = [
        (url, dataset_id, criterion_id, [f"p{p}-a{a}" for a in range(ANNOTATORS_EACH)])
        for p in range(PROCESSES)
    ]
    context = multiprocessing.get_context("spawn")
    with context.Pool(PROCESSES) as pool:
        results = [
            pool.apply_async(service_client, job, {"seed": n, **options})
            for n, job in enumerate(jobs)
        ]
        return [r.get(timeout=300) for r in results]


@pytest.mark.slow
def test_many_processes_claim_and_submit_without_handing_out_an_item_twice(
    store: Store, store_url: str, project: ProjectRecord, fluency: CriterionRecord
) -> None:
    dataset = store.save_dataset(project.id, "shared", items_frame_for(240))
    _set_batch(store, project, annotators_per_item=1, claim_batch=5)
    logs = _run_clients(store_url, dataset.id, fluency.id, seconds=240.0, release_every=7)
    _check_invariants(store, dataset.id, logs)
    # The clients ran until the dataset was done: every item has exactly one label.
    assert sum(len(log.submits) for log in logs) == 240
    assert store.queue_status(dataset.id, fluency.id, "p0-a0").team_left == 0
    assert all(log.submits for log in logs)  # every process got work


@pytest.mark.slow
def test_many_processes_on_one_sqlite_file(tmp_path: Path) -> None:
    """The same on a SQLite file that no fixture prepared (each process migrates or waits)."""
    url = f"sqlite:///{tmp_path / 'team.sqlite'}"
    store = Store.open(url)
    try:
        project = store.create_project("team", settings={"claim_batch": 3})
        criterion = store.create_criterion(project.id, "fluency", kind="pointwise", scale=LIKERT_5)
        dataset = store.save_dataset(project.id, "shared", items_frame_for(90))
        logs = _run_clients(url, dataset.id, criterion.id, seconds=240.0)
        _check_invariants(store, dataset.id, logs)
        assert sum(len(log.submits) for log in logs) == 90
    finally:
        store.close()


@pytest.mark.postgres
@pytest.mark.slow
def test_the_load_test_service_clients_keep_every_label_once(postgres_url: str) -> None:
    """bench/load_annotators.py's service part, short: 2 processes x 3 accounts for about 10 s."""
    names = [f"load-{n}" for n in range(6)]
    db_name, url = create_database(postgres_url)
    try:
        dataset_id, criterion_id = seed(url, 2_000, names)
        jobs = [
            (url, dataset_id, criterion_id, names[:3]),
            (url, dataset_id, criterion_id, names[3:]),
        ]
        options = {"seconds": 10.0, "think_s": 0.05, "accounts": True, "release_every": 9}
        with multiprocessing.get_context("spawn").Pool(2) as pool:
            pending = [
                pool.apply_async(service_client, job, {**options, "seed": n})
                for n, job in enumerate(jobs)
            ]
            logs = [p.get(timeout=120) for p in pending]
        verdict = verify(url, dataset_id, criterion_id, logs)
        assert verdict.problems == []
        assert verdict.stored == sum(len(log.submits) for log in logs) > 0
        assert {s.annotator for log in logs for s in log.submits} == set(names)
    finally:
        drop_database(postgres_url, db_name)
