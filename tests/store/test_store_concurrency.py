"""Several processes writing at once, and a writer killed mid-run: nothing acknowledged is lost."""

from __future__ import annotations

import multiprocessing
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import sqlalchemy as sa

from evalcore.store import CriterionRecord, ProjectRecord, RevisionConflictError, Store
from tests.store.store_helpers import concurrent_writer, items_frame_for

HELPERS = Path(__file__).with_name("store_helpers.py")
PROCESSES = 8
LABELS_EACH = 500


def _annotations(store: Store) -> list[tuple[int, str | None]]:
    with store.engine.connect() as conn:
        return [
            (int(i), label)
            for i, label in conn.execute(sa.text("SELECT id, label FROM annotations")).all()
        ]


@pytest.mark.slow
def test_eight_processes_write_4000_labels(
    store: Store, store_url: str, project: ProjectRecord, fluency: CriterionRecord
) -> None:
    dataset = store.save_dataset(project.id, "shared", items_frame_for(LABELS_EACH))
    item_ids = [int(i) for i in store.items_frame(dataset.id).index]
    # Every process labels the same 500 items (its own annotator), so all of them contend for the
    # same tables, rows of the same items and the same unique index.
    jobs = [(store_url, item_ids, fluency.id, f"annotator-{n}") for n in range(PROCESSES)]
    with multiprocessing.get_context("spawn").Pool(PROCESSES) as pool:
        done = pool.starmap(concurrent_writer, jobs)
    assert done == [LABELS_EACH] * PROCESSES
    assert len(_annotations(store)) == PROCESSES * LABELS_EACH
    matrix = store.annotation_matrix(dataset.id, fluency.id)
    assert matrix.shape == (LABELS_EACH, PROCESSES)
    assert matrix.notna().all().all()


@pytest.mark.slow
def test_killed_writer_loses_no_acknowledged_label(
    store: Store, store_url: str, project: ProjectRecord, fluency: CriterionRecord
) -> None:
    dataset = store.save_dataset(project.id, "kill", items_frame_for(5_000))
    item_ids = [int(i) for i in store.items_frame(dataset.id).index]
    writer = subprocess.Popen(
        [
            sys.executable,
            str(HELPERS),
            "kill-writer",
            store_url,
            ",".join(map(str, item_ids)),
            str(fluency.id),
            "victim",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    acknowledged: list[int] = []
    try:
        for line in writer.stdout:
            if line.startswith("ACK "):
                acknowledged.append(int(line.split()[1]))
            if len(acknowledged) >= 150:
                break
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=60)
        # Lines the writer printed before it died are still in the pipe.
        acknowledged += [int(line.split()[1]) for line in writer.stdout if line.startswith("ACK ")]
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert writer.returncode == -signal.SIGKILL, writer.stderr.read() if writer.stderr else ""
    assert len(acknowledged) >= 150

    stored = dict(_annotations(store))
    assert set(acknowledged) <= set(stored)  # every acknowledged label is in the database
    assert len(stored) - len(acknowledged) in (0, 1)  # at most the one in flight is extra
    # The database is usable afterwards: the next label goes in.
    missing = item_ids[len(stored)]
    store.submit_annotation(missing, fluency.id, "victim", label=3, base_revision=0)


def test_threads_share_one_store(
    store: Store, project: ProjectRecord, fluency: CriterionRecord
) -> None:
    dataset = store.save_dataset(project.id, "threads", items_frame_for(40))
    item_ids = [int(i) for i in store.items_frame(dataset.id).index]

    def work(n: int) -> int:
        for item_id in item_ids[n * 10 : n * 10 + 10]:
            store.submit_annotation(item_id, fluency.id, f"t{n}", label=2, base_revision=0)
            store.queue_status(dataset.id, fluency.id, f"t{n}")
        return n

    with ThreadPoolExecutor(4) as pool:
        assert sorted(pool.map(work, range(4))) == [0, 1, 2, 3]
    assert len(_annotations(store)) == 40


@pytest.mark.parametrize("same_answer", [True, False])
def test_racing_submits_on_one_base_revision(
    store: Store,
    project: ProjectRecord,
    fluency: CriterionRecord,
    same_answer: bool,
) -> None:
    """Two windows submit on the same base revision at once: one row is written either way."""
    dataset = store.save_dataset(project.id, "race", items_frame_for(1))
    item_id = int(store.items_frame(dataset.id).index[0])
    store.get_or_create_annotator("ada")
    barrier = threading.Barrier(2)

    def submit(label: int) -> object:
        barrier.wait()
        try:
            return store.submit_annotation(item_id, fluency.id, "ada", label=label, base_revision=0)
        except RevisionConflictError as exc:
            return exc

    labels = [4, 4] if same_answer else [4, 5]
    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(submit, labels))
    assert len(_annotations(store)) == 1
    records = [o for o in outcomes if not isinstance(o, Exception)]
    if same_answer:
        assert len(records) == 2
        assert records[0] == records[1]
    else:
        assert len(records) == 1
        assert sum(isinstance(o, RevisionConflictError) for o in outcomes) == 1
