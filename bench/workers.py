"""Workers benchmark: ``evalcore worker`` processes on PostgreSQL's task queue against the fake endpoint.

Run: ``EVALCORE_BENCH_POSTGRES_URL=postgresql+psycopg://user@host:port/postgres .venv/bin/python
bench/workers.py`` (about six minutes; the variable names a server where the user may
``CREATE DATABASE``; ``EVALCORE_TEST_POSTGRES_URL`` is used when it is not set). The benchmark makes a
database of its own (``evalcore_bench_workers``), dropped at the end.

The fake OpenAI-compatible server runs in its own process; every worker is a real ``evalcore worker``
process (``--concurrency 1``: one chunk at a time, each chunk sending up to the run's 16 requests).

(a) scaling: the endpoint at 0.5 s latency, concurrency 16 per worker: items per second of 1 worker
    and of 3 workers (workers started and idle first; timed from the submit to the run's end, and
    in steady state from the first to the last result), side by side with the ideal 16 / 0.5 = 32
    per worker; CPU seconds of the fake, the workers and the whole machine say where the limit is;
(b) SIGKILL: a 20,000-item run (latency 0.05 s, 3 workers); one worker is killed in the middle of a
    chunk, a new one is started; then every item must have exactly one result, and the requests
    sent twice are counted against what the killed worker could have had in flight;
(c) the store's write rate on PostgreSQL: results per second that ``record_results`` takes in the
    writer's batch size, from one thread and from four.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import sqlalchemy as sa
from _common import FakeServer
from sqlalchemy.engine import make_url

from evalcore.judge import RunSettings
from evalcore.labels import LIKERT_5
from evalcore.runs import RunWorker, list_workers, plan_run
from evalcore.store import JudgeResultInput, Store
from tests.runs.test_runs_service import TEMPLATE as SERVICE_TEMPLATE
from tests.runs.test_runs_workers import Workers

KEY_ENV = "BENCH_WORKERS_API_KEY"
DB_NAME = "evalcore_bench_workers"
TEMPLATE = {
    **SERVICE_TEMPLATE,
    "user": "Question: {{ prompt }}\nAnswer: {{ response }}\n(bench marker expect={{ gold }})",
}
CONCURRENCY = 16
KILL_LATENCY = 0.05
EMPTY_PROMPT = hashlib.sha256(b"").hexdigest()
SETTINGS = RunSettings(concurrency=CONCURRENCY, timeout=30.0, max_attempts=3)
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]
    return (sum(values) - idle) / TICKS, sum(values) / TICKS


def wait_for(what: str, check: Callable[[], object], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


class Database:
    """A database of the benchmark's own on the server, created empty and dropped at the end."""

    def __init__(self, server_url: str) -> None:
        self.admin = sa.create_engine(
            server_url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool
        )
        with self.admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
            conn.exec_driver_sql(f'CREATE DATABASE "{DB_NAME}"')
        self.url = make_url(server_url).set(database=DB_NAME).render_as_string(hide_password=False)

    def drop(self) -> None:
        with self.admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        self.admin.dispose()


class World:
    """A project with an endpoint on the fake; :meth:`run` plans a run over ``n`` new items."""

    def __init__(self, store: Store, base_url: str) -> None:
        self.store = store
        self.project = store.create_project("bench-workers")
        self.criterion = store.create_criterion(
            self.project.id, "fluency", kind="pointwise", scale=LIKERT_5
        )
        template = store.create_template(self.project.id, "fluency", self.criterion.id)
        self.version = store.save_template_version(template.id, TEMPLATE, author="bench")
        self.endpoint = store.upsert_endpoint(
            "fake", kind="openai", base_url=base_url, api_key_env=KEY_ENV
        )
        self.made = 0

    def run(self, n: int) -> int:
        self.made += 1
        salt = f"d{self.made}"
        items = pd.DataFrame(
            {
                "item_id": [f"{salt}-{k}" for k in range(n)],
                "prompt": [f"{salt} question {k}" for k in range(n)],
                "response": [f"answer {k}" for k in range(n)],
                "gold": [1 + k % 5 for k in range(n)],
            }
        )
        dataset = self.store.save_dataset(self.project.id, salt, items, kind="pointwise")
        return plan_run(
            self.store,
            dataset_id=dataset.id,
            template_version_id=self.version.id,
            endpoint_id=self.endpoint.id,
            settings=SETTINGS,
        ).id


def scaling(store: Store, world: World, url: str, logs: Path, n_workers: int, n: int) -> dict:
    """Items per second of ``n_workers`` workers (0.5 s latency) on a run of ``n`` items."""
    server = FakeServer("--latency", "0.5", "--no-record")
    world.endpoint = store.upsert_endpoint(
        "fake", kind="openai", base_url=server.base_url, api_key_env=KEY_ENV
    )
    workers = Workers(url, logs, lease="5", env={KEY_ENV: "bench-key"})
    try:
        for k in range(n_workers):
            workers.start(f"scale{n_workers}-{k}")
        wait_for("the workers", lambda: len(list_workers(store)) >= n_workers, 60)
        run_id = world.run(n)
        procs = [server.proc.pid, *(p.pid for p in workers.procs.values())]
        cpu0 = [cpu_seconds(pid) for pid in procs]
        busy0, total0 = machine_busy()
        started = time.perf_counter()
        RunWorker(store, workers="external").submit(run_id)
        wait_for("the run", lambda: store.get_run(run_id).is_terminal, 1800)
        wall = time.perf_counter() - started
        cpu = [cpu_seconds(pid) - c for pid, c in zip(procs, cpu0, strict=True)]
        busy1, total1 = machine_busy()
        progress = store.run_progress(run_id)
        assert store.get_run(run_id).status == "done"
        assert progress.finished == n
        steady = (progress.last_at - progress.first_at).total_seconds()
        return {
            "workers": n_workers,
            "items": n,
            "wall_s": wall,
            "per_s": n / wall,
            "steady_per_s": (n - 1) / steady,
            "ideal_per_s": n_workers * CONCURRENCY / 0.5,
            "fake_cpu": cpu[0] / wall,
            "worker_cpu": sum(cpu[1:]) / wall,
            "machine": (busy1 - busy0) / ((total1 - total0) or 1),
        }
    finally:
        workers.stop_all()
        server.close()


def kill_test(store: Store, world: World, url: str, logs: Path, n: int) -> dict:
    """A 20,000-item run; one of three workers killed mid-chunk; counts after the end."""
    server = FakeServer("--latency", str(KILL_LATENCY))
    world.endpoint = store.upsert_endpoint(
        "fake", kind="openai", base_url=server.base_url, api_key_env=KEY_ENV
    )
    workers = Workers(url, logs, lease="5", env={KEY_ENV: "bench-key"})
    try:
        for k in range(3):
            workers.start(f"kill-{k}")
        wait_for("the workers", lambda: len(list_workers(store)) >= 3, 60)
        run_id = world.run(n)
        started = time.perf_counter()
        RunWorker(store, workers="external").submit(run_id)

        def halfway_and_mid_chunk() -> bool:
            if store.run_progress(run_id).finished < n // 2:
                return False
            row = next(w for w in list_workers(store) if w.name == "kill-0")
            return row.chunk is not None

        wait_for("half of the run", halfway_and_mid_chunk, 1800)
        at_kill = store.run_progress(run_id).finished
        kill_t = time.monotonic()  # the fake stamps arrivals with the same clock
        workers.procs["kill-0"].send_signal(signal.SIGKILL)
        workers.procs["kill-0"].wait()
        killed_at = time.perf_counter()
        workers.start("kill-3")
        wait_for("the run", lambda: store.get_run(run_id).is_terminal, 1800)
        wall = time.perf_counter() - started
        frame = store.results_frame(run_id)
        log = server.requests()
        # a request cut off by the kill before its body arrived reaches the fake empty
        cut = sum(1 for r in log if r["prompt_sha256"] == EMPTY_PROMPT)
        log = [r for r in log if r["prompt_sha256"] != EMPTY_PROMPT]
        counts = Counter(str(r["prompt_sha256"]) for r in log)
        again = sum(c - 1 for c in counts.values() if c > 1)
        first: dict[str, float] = {}
        for r in log:
            first.setdefault(str(r["prompt_sha256"]), float(r["t"]))  # type: ignore[arg-type]
        # a request sent again was either still waiting for its reply at the kill, or answered
        # with the reply not yet committed (the writer commits every 0.1 s)
        in_flight = sum(
            1 for key, c in counts.items() if c > 1 and first[key] + KILL_LATENCY > kill_t
        )
        chunks = store.run_chunks(run_id)
        return {
            "items": n,
            "status": store.get_run(run_id).status,
            "results": len(frame),
            "distinct": int(frame["item_id"].nunique()),
            "ok": int((frame["status"] == "ok").sum()),
            "requests": len(log),
            "resent": again,
            "in_flight": in_flight,
            "cut": cut,
            "at_kill": at_kill,
            "recovered_s": time.perf_counter() - killed_at,
            "wall_s": wall,
            "retaken": sum(1 for c in chunks if c.attempts > 1),
        }
    finally:
        workers.stop_all()
        server.close()


def write_rate(store: Store, world: World, n: int, threads: int) -> float:
    """Results per second ``record_results`` takes in batches of 500, from ``threads`` threads."""
    run_id = world.run(n)
    frame = store.items_frame(store.get_run(run_id).dataset_id)
    ids = [int(i) for i in frame.index]
    parts = [ids[k::threads] for k in range(threads)]

    def write(part: list[int]) -> None:
        for start in range(0, len(part), 500):
            batch = [
                JudgeResultInput(
                    item_id=i,
                    status="ok",
                    label="3",
                    score=3.0,
                    reason="fine",
                    raw='{"score": 3}',
                    tokens_in=40,
                    tokens_out=12,
                    latency_s=0.5,
                    attempts=1,
                    cache_key=f"k{run_id}-{i}",
                )
                for i in part[start : start + 500]
            ]
            store.record_results(run_id, batch)

    started = time.perf_counter()
    pool = [threading.Thread(target=write, args=(p,)) for p in parts]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return n / (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", type=int, default=2_000, help="items of the 1-worker run")
    parser.add_argument("--three", type=int, default=6_000, help="items of the 3-worker run")
    parser.add_argument("--kill-items", type=int, default=20_000)
    parser.add_argument("--parts", default="abc", help="which parts to run (default abc)")
    args = parser.parse_args()
    server_url = os.environ.get("EVALCORE_BENCH_POSTGRES_URL") or os.environ.get(
        "EVALCORE_TEST_POSTGRES_URL"
    )
    if not server_url:
        print("set EVALCORE_BENCH_POSTGRES_URL to a PostgreSQL server", file=sys.stderr)
        return 2
    database = Database(server_url)
    logs = Path(os.environ.get("TMPDIR", "/tmp")) / "bench-workers"
    logs.mkdir(parents=True, exist_ok=True)
    store = Store.open(database.url)
    try:
        world = World(store, "http://127.0.0.1:9/v1")
        if "a" in args.parts:
            scaling_part(store, world, database.url, logs, args)
        if "b" in args.parts:
            kill_part(store, world, database.url, logs, args)
        if "c" in args.parts:
            print("(c) PostgreSQL write rate of results (record_results, batches of 500)")
            for threads in (1, 4):
                rate = write_rate(store, world, 20_000, threads)
                print(f"    {threads} thread(s): {rate:,.0f} results/s")
    finally:
        store.close()
        database.drop()
    return 0


def scaling_part(
    store: Store, world: World, url: str, logs: Path, args: argparse.Namespace
) -> None:
    print("(a) scaling: 0.5 s latency, concurrency 16 per worker (ideal 32 items/s each)")
    one = scaling(store, world, url, logs, 1, args.one)
    three = scaling(store, world, url, logs, 3, args.three)
    print(f"    {'':>10} {'1 worker':>12} {'3 workers':>12}")
    for key, label, fmt in (
        ("items", "items", "{:,.0f}"),
        ("per_s", "items/s", "{:.1f}"),
        ("steady_per_s", "steady/s", "{:.1f}"),
        ("ideal_per_s", "ideal/s", "{:.0f}"),
        ("fake_cpu", "fake CPU", "{:.0%}"),
        ("worker_cpu", "worker CPU", "{:.0%}"),
        ("machine", "machine", "{:.0%}"),
    ):
        print(f"    {label:>10} {fmt.format(one[key]):>12} {fmt.format(three[key]):>12}")
    print(
        f"    speed-up 3 vs 1 worker: {three['per_s'] / one['per_s']:.2f}x "
        f"(steady state {three['steady_per_s'] / one['steady_per_s']:.2f}x; target >= 2.5x)"
    )


def kill_part(store: Store, world: World, url: str, logs: Path, args: argparse.Namespace) -> None:
    print(f"(b) SIGKILL of one of 3 workers in a {args.kill_items:,}-item run (latency 0.05 s)")
    kill = kill_test(store, world, url, logs, args.kill_items)
    print(
        f"    run {kill['status']}: {kill['results']:,} results for {kill['items']:,} items "
        f"({kill['distinct']:,} distinct, {kill['ok']:,} ok); killed at {kill['at_kill']:,} "
        f"results; {kill['retaken']} chunk(s) taken over; end {kill['recovered_s']:.1f} s "
        f"after the kill, {kill['wall_s']:.1f} s in all"
    )
    print(
        f"    requests {kill['requests']:,}: {kill['resent']} sent a second time, "
        f"{kill['in_flight']} of them in flight at the kill (at most {CONCURRENCY}), "
        f"{kill['resent'] - kill['in_flight']} answered but not yet committed by the writer; "
        f"{kill['cut']} more cut off by the kill before their body was sent"
    )


if __name__ == "__main__":
    sys.exit(main())
