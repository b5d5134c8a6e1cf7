"""StoreWriter: the thread that commits a run's results and cached replies in groups.

Real SQLite file and PostgreSQL, no mocks: what the writer is given must be in the database after
``flush``, in order of arrival, and a write that fails must stop the run with the error instead of
vanishing in the thread.
"""

from __future__ import annotations

import threading

import pandas as pd
import pytest

from evalcore.errors import NotFoundError
from evalcore.judge import JudgeResult
from evalcore.labels import LIKERT_5
from evalcore.runs import StoreCache, StoreSink, StoreWriter, judge_items
from evalcore.store import JudgeResultInput, Store


@pytest.fixture
def run(store: Store) -> tuple[int, dict[str, int]]:
    project = store.create_project("writer")
    criterion = store.create_criterion(project.id, "fluency", kind="pointwise", scale=LIKERT_5)
    frame = pd.DataFrame({"item_id": [f"i{n}" for n in range(300)], "response": ["r"] * 300})
    dataset = store.save_dataset(project.id, "answers", frame, kind="pointwise")
    record = store.create_run(dataset.id, criterion.id, name="r", model="m")
    _, db_ids = judge_items(store, dataset.id)
    return record.id, db_ids


def _result(item: int, label: int) -> JudgeResultInput:
    return JudgeResultInput(item_id=item, status="ok", order="AB", label=label)


def test_everything_queued_is_committed_by_flush(store: Store, run) -> None:
    run_id, db_ids = run
    writer = StoreWriter(store, run_id)
    # 300 results from 4 threads at once, as the runner's callbacks would hand them over
    ids = list(db_ids.values())

    def feed(part: list[int]) -> None:
        for pk in part:
            writer.results([_result(pk, 1 + pk % 5)])

    threads = [threading.Thread(target=feed, args=(ids[k::4],)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writer.cache([("key-1", "m", {"text": '{"score": 3}'})])
    writer.flush()
    frame = store.results_frame(run_id)
    assert len(frame) == 300
    assert store.cache_get("key-1") == {"text": '{"score": 3}'}
    # grouped: fewer commits than results (each commit takes what arrived while the last one ran)
    assert 1 <= writer.commits <= 301
    writer.close()
    writer.close()  # closing twice is harmless


def test_a_sink_and_cache_with_a_writer_queue_their_writes(store: Store, run) -> None:
    run_id, db_ids = run
    writer = StoreWriter(store, run_id)
    sink = StoreSink(store, run_id, db_ids, writer)
    cache = StoreCache(store, writer)
    cache.put("reply-i1", "m", {"text": "4"})
    sink.record(JudgeResult(item_id="i1", order="AB", status="ok", label=4, cache_key="reply-i1"))
    sink.record_many(
        [
            JudgeResult(item_id=f"i{n}", order="AB", status="unparsed", error="no label")
            for n in (2, 3)
        ]
    )
    writer.close()
    frame = store.results_frame(run_id).set_index("item_id")
    assert frame.loc["i1", "label"] == "4"
    assert sorted(frame.index) == ["i1", "i2", "i3"]
    assert (frame.loc[["i2", "i3"], "status"] == "unparsed").all()
    assert cache.get("reply-i1") == {"text": "4"}
    assert sink.finished() == {("i1", "AB"), ("i2", "AB"), ("i3", "AB")}


def test_a_failed_write_is_raised_to_the_caller_and_stops_the_writer(store: Store, run) -> None:
    run_id, db_ids = run
    writer = StoreWriter(store, run_id)
    writer.results([_result(10**9, 3)])  # not an item of the run's dataset
    with pytest.raises(NotFoundError, match="not in its dataset"):
        writer.flush()
    with pytest.raises(NotFoundError):
        writer.results([_result(next(iter(db_ids.values())), 3)])
    with pytest.raises(NotFoundError):
        writer.close()
    assert store.results_frame(run_id).empty
