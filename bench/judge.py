"""Judge runner benchmark: throughput, fault tolerance and cache speed through the real openai client.

Run: ``.venv/bin/python bench/judge.py`` (about a minute; ``--items N`` to change the size).

The fake OpenAI-compatible server runs as a separate process (``python -m evalcore.testing.fake_openai``)
so that its work does not share the runner's interpreter. Parts (a) to (c) write results to a
:class:`JsonlSink` (one flushed line per result, the command line's sink) and replies to a
:class:`SqliteCache`; part (d) is the dashboard's path: a stored run on a SQLite store, carried out by
:func:`evalcore.runs.execute_run` with the store-backed sink (each result committed as it arrives) and
the store's reply cache.

(a) throughput: 200 ms server latency, concurrency 32 → ideal 160 requests/s; for scale, the same
    requests sent by a bare loop of 32 ``client.post`` calls of the openai client (no evalcore) show
    what the client itself reaches on this machine;
(b) faults: 10 % of requests answered 429 with ``Retry-After: 1`` and 2 % answered 500: every item must
    end labelled, no item requested more than ``max_attempts`` times, nothing lost or duplicated;
(c) cache: the same template again, fresh sink, same cache: zero HTTP requests, items per second;
(d) the same throughput and cached re-runs through the store: ``plan_run`` + ``execute_run`` on a
    SQLite file, then three more runs of the same template version (their spread is mostly whether
    one of Python's full garbage collections falls inside the run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pandas as pd
from _common import FLUENCY, FakeServer
from openai import AsyncOpenAI

from evalcore.judge import (
    Endpoint,
    JsonlSink,
    JudgeItem,
    JudgeRunner,
    RunSettings,
    SqliteCache,
    client_factory,
    render,
)
from evalcore.labels import LIKERT_5
from evalcore.runs import execute_run, plan_run
from evalcore.store import Store

TEMPLATE = FLUENCY


def _items(n: int, salt: str) -> list[JudgeItem]:
    return [
        JudgeItem(
            f"{salt}-{i}",
            {
                "prompt": f"Question number {i} about topic {i % 17}?",
                "response": f"An answer of moderate length for item {i}, salt {salt}. " * 3,
                "gold": 1 + i % 5,
            },
        )
        for i in range(n)
    ]


def _runner(base_url: str, settings: RunSettings) -> JudgeRunner:
    endpoint = Endpoint("fake", base_url=base_url, api_key_env=None)
    return JudgeRunner(
        client_factory(endpoint, timeout=30.0), TEMPLATE, settings=settings, model="fake-judge"
    )


async def _bare_client_rate(base_url: str, items: list[JudgeItem]) -> float:
    """Requests per second of 32 plain ``client.post`` loops over the same rendered requests."""
    bodies = [
        {"model": "fake-judge", "messages": render(TEMPLATE, i.fields, item_id=i.item_id),
         "temperature": 0.0, "max_tokens": 512}
        for i in items
    ]  # fmt: skip
    client = AsyncOpenAI(base_url=base_url, api_key="none", max_retries=0, timeout=30.0)
    options = {"max_retries": 0, "timeout": 30.0}

    async def loop() -> None:
        while bodies:
            await client.post(
                "/chat/completions", body=bodies.pop(), cast_to=object, options=options
            )  # type: ignore[arg-type]

    started = time.perf_counter()
    await asyncio.gather(*(loop() for _ in range(32)))
    elapsed = time.perf_counter() - started
    await client.close()
    return len(items) / elapsed


def _lines_per_key(path: Path) -> Counter[tuple[str, str]]:
    counts: Counter[tuple[str, str]] = Counter()
    with path.open() as handle:
        for line in handle:
            row = json.loads(line)
            counts[(row["item_id"], row["order"])] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--fault-items", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evalcore-bench-") as folder:
        _bench(args, Path(folder))


def _bench(args: argparse.Namespace, tmp: Path) -> None:
    print(f"python {sys.version.split()[0]}; sink: JsonlSink; cache: SqliteCache (temporary files)")

    # (a) throughput ------------------------------------------------------------------------------
    server = FakeServer("--latency", "0.2", "--no-record")
    try:
        items = _items(args.items, "a")
        cache = SqliteCache(tmp / "cache.sqlite")
        sink = JsonlSink(tmp / "a.jsonl")
        runner = _runner(server.base_url, RunSettings(concurrency=32, timeout=30.0))
        summary = runner.run_sync(items, sink, cache)
        sink.close()
        rate = args.items / summary.elapsed_s
        ideal = 32 / 0.2
        print(
            f"(a) throughput: {args.items} items, latency 200 ms, concurrency 32: "
            f"{rate:.1f} req/s = {100 * rate / ideal:.1f} % of ideal {ideal:.0f} req/s "
            f"(ok {summary.ok}, unparsed {summary.unparsed}, failed {summary.failed}, "
            f"requests {summary.requests}, {summary.elapsed_s:.2f} s)"
        )

        bare = asyncio.run(_bare_client_rate(server.base_url, _items(args.items, "bare")))
        print(
            f"    baseline: a bare openai-client loop reaches {bare:.1f} req/s = "
            f"{100 * bare / ideal:.1f} % of ideal on this machine; the runner reaches "
            f"{100 * rate / bare:.1f} % of the bare client"
        )

        # (c) cache -------------------------------------------------------------------------------
        before = len(server.requests())
        sink_c = JsonlSink(tmp / "c.jsonl")
        t0 = time.perf_counter()
        again = runner.run_sync(items, sink_c, cache)
        elapsed = time.perf_counter() - t0
        sink_c.close()
        after = len(server.requests())
        print(
            f"(c) cached re-run: {again.cached}/{args.items} from cache, "
            f"{after - before} HTTP requests, {args.items / elapsed:,.0f} items/s "
            f"({elapsed * 1000:.0f} ms, JsonlSink + SqliteCache)"
        )
        cache.close()
    finally:
        server.close()

    # (b) faults ----------------------------------------------------------------------------------
    server = FakeServer(
        "--latency",
        "0.05",
        "--fault",
        "429:0.1:1",
        "--fault",
        f"500:{0.02 / 0.9:.5f}",
        "--seed",
        "7",
    )
    try:
        items = _items(args.fault_items, "b")
        settings = RunSettings(concurrency=32, max_attempts=6, backoff_base=0.2, timeout=30.0)
        sink_b = JsonlSink(tmp / "b.jsonl")
        summary = _runner(server.base_url, settings).run_sync(items, sink_b, None)
        sink_b.close()
        log = server.requests()
        statuses = Counter(int(str(r["status"])) for r in log)
        per_item = Counter(str(r["prompt_sha256"]) for r in log)
        lines = _lines_per_key(tmp / "b.jsonl")
        labelled = sum(1 for r in JsonlSink(tmp / "b.jsonl").results() if r.status == "ok")
        print(
            f"(b) faults (429 injected with p=0.10, 500 with p=0.02): "
            f"{args.fault_items} items, {len(log)} requests "
            f"({statuses[429]} × 429 = {100 * statuses[429] / len(log):.1f} %, "
            f"{statuses[500]} × 500 = {100 * statuses[500] / len(log):.1f} %, "
            f"{statuses[200]} × 200): labelled {labelled}/{args.fault_items}, "
            f"failed {summary.failed}, max requests per item {max(per_item.values())} "
            f"(limit {settings.max_attempts}), results in sink {len(lines)}, "
            f"duplicated {sum(1 for c in lines.values() if c > 1)}, "
            f"lost {args.fault_items - len(lines)}, {summary.elapsed_s:.1f} s"
        )
    finally:
        server.close()

    # (d) through the store -----------------------------------------------------------------------
    server = FakeServer("--latency", "0.2")
    try:
        _bench_store(args, tmp, server)
    finally:
        server.close()


STORED_TEMPLATE = {
    "name": "bench-fluency",
    "criterion": "fluency",
    "kind": "pointwise",
    "scale": [1, 2, 3, 4, 5],
    "system": TEMPLATE.system,
    "user": TEMPLATE.user,
    "output": {"parser": "json", "label_field": "score", "structured": True},
    "model": {"model": "fake-judge", "temperature": 0.0},
}


def _bench_store(args: argparse.Namespace, tmp: Path, server: FakeServer) -> None:
    os.environ["BENCH_JUDGE_API_KEY"] = "bench-key"
    with Store.open(f"sqlite:///{tmp / 'store.sqlite'}") as store:
        project = store.create_project("bench")
        criterion = store.create_criterion(project.id, "fluency", kind="pointwise", scale=LIKERT_5)
        rows = [(i.item_id, *i.fields.values()) for i in _items(args.items, "d")]
        frame = pd.DataFrame(rows, columns=["item_id", "prompt", "response", "gold"])
        dataset = store.save_dataset(project.id, "bench", frame, kind="pointwise")
        template = store.create_template(project.id, "bench-fluency", criterion.id)
        version = store.save_template_version(template.id, STORED_TEMPLATE, author="bench")
        endpoint = store.upsert_endpoint(
            "fake", base_url=server.base_url, api_key_env="BENCH_JUDGE_API_KEY"
        )
        settings = RunSettings(concurrency=32, timeout=30.0)

        def run(name: str) -> tuple[float, float, int]:
            before = len(server.requests())
            planned = plan_run(
                store,
                dataset_id=dataset.id,
                template_version_id=version.id,
                endpoint_id=endpoint.id,
                settings=settings,
                name=name,
            )
            t0 = time.perf_counter()
            summary = execute_run(store, planned.id)
            elapsed = time.perf_counter() - t0
            progress = store.run_progress(planned.id)
            if summary is None or not summary.complete or progress.ok != args.items:
                raise RuntimeError(f"run {name!r} did not finish cleanly: {summary}, {progress}")
            return elapsed, summary.elapsed_s, len(server.requests()) - before

        elapsed, judging, requests = run("first")
        ideal = 32 / 0.2
        print(
            f"(d) through the store (SQLite; execute_run with StoreSink + StoreCache + StoreWriter): "
            f"{args.items} items, {requests} HTTP requests"
        )
        print(
            f"    whole execute_run: {elapsed:.2f} s = {args.items / elapsed:.1f} req/s = "
            f"{100 * args.items / elapsed / ideal:.1f} % of ideal (includes loading the items from "
            f"the database and rendering them: {elapsed - judging:.2f} s)"
        )
        print(
            f"    judging (runner's clock, first request to last result): {judging:.2f} s = "
            f"{args.items / judging:.1f} req/s = {100 * args.items / judging / ideal:.1f} % of ideal"
        )
        for attempt in range(1, 4):
            elapsed, _, requests = run(f"again {attempt}")
            print(
                f"    re-run {attempt} of the same template version: {requests} HTTP requests, "
                f"{args.items / elapsed:,.0f} items/s ({elapsed * 1000:.0f} ms)"
            )


if __name__ == "__main__":
    main()
