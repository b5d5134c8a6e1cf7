"""Benchmark of evalcore.store: a 100 000-item upload and the Annotate page's queries over it.

    python bench/store.py                     # a fresh SQLite file in a temporary folder
    python bench/store.py --items 20000       # smaller
    python bench/store.py --url postgresql+psycopg://user@host/empty_db

Prints:

(a) the time to save a 100 000-item dataset (target: under 20 s on SQLite);
(b) ensure_queue for one annotator over every item, then the latency of what the Annotate page calls
    to render one item - queue_status, queue_item, next_open_position - and of one submit, on an
    untouched queue and again with half of it labelled (target: the page opens in under 2 s, so each
    of these must take milliseconds).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
from _common import text_items

from evalcore.labels import LIKERT_5
from evalcore.store import Store


def make_items(n: int) -> pd.DataFrame:
    words = "the judge rates each answer for fluency and coherence on a five point scale".split()  # noqa: SIM905
    frame, rng = text_items(n, words, words_per_text=40, reference=True)
    frame["source"] = rng.choice(["news", "forum", "wiki"], size=n)
    frame["length"] = rng.integers(10, 500, size=n)
    return frame


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def latency_ms(fn: Callable[[int], Any], repeats: int = 30) -> str:
    times = []
    for n in range(repeats):
        start = time.perf_counter()
        fn(n)
        times.append((time.perf_counter() - start) * 1000)
    return f"median {statistics.median(times):7.2f} ms   max {max(times):7.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--url", help="an EMPTY database (default: a new SQLite file)")
    args = parser.parse_args()
    n = args.items

    with tempfile.TemporaryDirectory() as folder:
        url = args.url or f"sqlite:///{Path(folder) / 'bench.sqlite'}"
        store = Store.open(url)
        print(f"evalcore.store benchmark on {store.dialect} ({store.url}), {n:,} items")
        project = store.create_project(f"bench-{time.time_ns()}")
        criterion = store.create_criterion(project.id, "fluency", kind="pointwise", scale=LIKERT_5)
        frame = make_items(n)

        seconds, dataset = timed(lambda: store.save_dataset(project.id, "bench", frame))
        print(f"(a) save_dataset, {n:,} items:          {seconds:7.2f} s   (target < 20 s)")
        seconds, items = timed(lambda: store.items_frame(dataset.id))
        print(f"    items_frame, {n:,} items:           {seconds:7.2f} s")

        seconds, status = timed(
            lambda: store.ensure_queue(dataset.id, criterion.id, "ada", limit=n)
        )
        print(f"(b) ensure_queue (first call, {status.total:,} assigned): {seconds:7.2f} s")
        seconds, _ = timed(lambda: store.ensure_queue(dataset.id, criterion.id, "ada"))
        print(f"    ensure_queue (again, a no-op):       {seconds * 1000:7.2f} ms")

        def page_queries(label: str) -> None:
            print(f"    -- {label}")
            middle = n // 2
            print(
                "    queue_status:        "
                + latency_ms(lambda _: store.queue_status(dataset.id, criterion.id, "ada"))
            )
            print(
                "    queue_item:          "
                + latency_ms(
                    lambda k: store.queue_item(dataset.id, criterion.id, "ada", (k * 7919) % n)
                )
            )
            print(
                "    next_open_position:  "
                + latency_ms(
                    lambda _: store.next_open_position(dataset.id, criterion.id, "ada", middle)
                )
            )
            print(
                "    next_open_position from 0: "
                + latency_ms(lambda _: store.next_open_position(dataset.id, criterion.id, "ada"))
            )

            def open_page(_: int) -> None:
                status = store.queue_status(dataset.id, criterion.id, "ada")
                if status.next_position is not None:
                    store.queue_item(dataset.id, criterion.id, "ada", status.next_position)

            print("    whole page open:     " + latency_ms(open_page))

        page_queries("untouched queue")

        half = pd.DataFrame(
            {
                "item_id": items["item_id"].iloc[: n // 2],
                "annotator": "ada",
                "label": [1 + i % 5 for i in range(n // 2)],
            }
        )
        seconds, _ = timed(lambda: store.import_labels(dataset.id, criterion.id, half))
        print(f"    import_labels, {n // 2:,} labels:      {seconds:7.2f} s")
        page_queries("half of the queue labelled")

        pks = [int(i) for i in items.index[n // 2 : n // 2 + 30]]
        print(
            "    submit_annotation:   "
            + latency_ms(
                lambda k: store.submit_annotation(
                    pks[k], criterion.id, "ada", label=3, base_revision=0
                )
            )
        )
        store.close()


if __name__ == "__main__":
    main()
