"""Helpers of the store tests that child processes import too (so no pytest in here).

Run as a script it is the writer of the kill test::

    python store_helpers.py kill-writer URL ITEM_IDS_CSV CRITERION_ID ANNOTATOR

It submits one label per item, in order, and prints ``ACK <annotation id>`` after each submit has
returned (that is, has been committed), flushing every line.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

import pandas as pd

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from evalcore.store import Store


def items_frame_for(n: int, *, kind: str = "pointwise", start: int = 0) -> pd.DataFrame:
    """A dataset of ``n`` items with ids ``q{start}``…, a metadata column ``topic`` and ``length``."""
    ids = [f"q{i}" for i in range(start, start + n)]
    frame = pd.DataFrame(
        {
            "item_id": ids,
            "prompt": [f"question {i}?" for i in range(start, start + n)],
            "context": [None if i % 3 == 0 else f"context {i}" for i in range(start, start + n)],
            "topic": ["news" if i % 2 else "sports" for i in range(start, start + n)],
            "length": [i * 10 for i in range(start, start + n)],
        }
    )
    if kind == "pairwise":
        frame["response_a"] = [f"answer A{i}" for i in range(start, start + n)]
        frame["response_b"] = [f"answer B{i}" for i in range(start, start + n)]
    else:
        frame["response"] = [f"answer {i}" for i in range(start, start + n)]
    return frame


def concurrent_writer(url: str, item_ids: list[int], criterion_id: int, annotator: str) -> int:
    """Child of the concurrency test: one label per item, each submit its own transaction.

    Returns the number of submits that succeeded; any error propagates (and fails the test).
    """
    store = Store.open(url)
    try:
        done = 0
        for n, item_id in enumerate(item_ids):
            store.submit_annotation(
                item_id, criterion_id, annotator, label=1 + n % 5, base_revision=0
            )
            done += 1
        return done
    finally:
        store.close()


def concurrent_opener(url: str) -> str | None:
    """Child of the concurrent-migration test: open (and so migrate) the database."""
    store = Store.open(url)
    try:
        return store.schema_revision()
    finally:
        store.close()


def _kill_writer(url: str, ids_csv: str, criterion_id: str, annotator: str) -> None:
    store = Store.open(url, migrate=False)
    for n, item_id in enumerate(int(i) for i in ids_csv.split(",")):
        record = store.submit_annotation(
            item_id, int(criterion_id), annotator, label=1 + n % 5, base_revision=0
        )
        sys.stdout.write(f"ACK {record.id}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    try:
        if sys.argv[1] == "kill-writer":
            _kill_writer(*sys.argv[2:6])
    except Exception:
        traceback.print_exc()
        sys.exit(1)
