"""Endpoint pool benchmark: one replica against a pool of three, and a pool with one replica down.

Run: ``.venv/bin/python bench/pool.py`` (about half a minute; ``--items N`` to change the size).

Each replica is a fake server in its own process with 200 ms latency and a capacity of 8 requests at
once (``--capacity 8``: a replica's batch; more load queues and waits), so one replica tops out at
8 / 0.2 = 40 requests per second and three at 120. The runner sends with concurrency 24 throughout.

(a) one replica: the ceiling of a single server;
(b) a pool of three: least-outstanding routing should reach about three times (a);
(c) the same pool plus a fourth URL nobody listens on: the dead replica is rested after its first
    refused connections and probed every rest (5 s, doubling), the run goes on with the other three,
    every item ends ok.
"""

from __future__ import annotations

import argparse
import sys
import time

from _common import FLUENCY, FakeServer, free_port

from evalcore.judge import (
    Endpoint,
    JudgeItem,
    JudgeRunner,
    MemoryCache,
    MemorySink,
    RunSettings,
    client_factory,
    replica_pool,
)

LATENCY = 0.2
CAPACITY = 8
SETTINGS = RunSettings(concurrency=24, timeout=30.0)


def _items(n: int, salt: str) -> list[JudgeItem]:
    return [
        JudgeItem(
            f"{salt}-{i}",
            {"prompt": f"Question {i}?", "response": f"Answer {i} ({salt}).", "gold": 1 + i % 5},
        )
        for i in range(n)
    ]


def _run(urls: list[str], n: int, salt: str) -> tuple[float, int, int]:
    """Items per second of one run over ``urls``, with its ok and failed counts."""
    endpoint = Endpoint("bench-pool", base_url="\n".join(urls), api_key_env=None)
    runner = JudgeRunner(
        client_factory(endpoint, timeout=SETTINGS.timeout), FLUENCY, settings=SETTINGS,
        model="fake-judge",
    )  # fmt: skip
    started = time.perf_counter()
    summary = runner.run_sync(_items(n, salt), MemorySink(), MemoryCache())
    elapsed = time.perf_counter() - started
    return n / elapsed, summary.ok, summary.failed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=1200)
    args = parser.parse_args()
    n = args.items
    servers = [
        FakeServer("--latency", str(LATENCY), "--capacity", str(CAPACITY), "--no-record")
        for _ in range(3)
    ]
    try:
        urls = [s.base_url for s in servers]
        print(f"python {sys.version.split()[0]}; {n} items a run, concurrency 24, latency 0.2 s")
        rate, ok, failed = _run(urls[:1], n // 3, "one")
        print(f"(a) one replica:            {rate:6.1f} items/s  ok {ok}, failed {failed}")
        rate, ok, failed = _run(urls, n, "three")
        print(f"(b) pool of three:          {rate:6.1f} items/s  ok {ok}, failed {failed}")
        per_server = [len(s.requests()) for s in servers]
        print(f"    requests per replica after (b): {per_server}")
        dead = f"http://127.0.0.1:{free_port()}/v1"
        rate, ok, failed = _run([*urls, dead], n, "dead")
        stats = {s.url: s for s in replica_pool([*urls, dead]).stats()}
        print(f"(c) three + one down:       {rate:6.1f} items/s  ok {ok}, failed {failed}")
        gone = stats[dead]
        print(
            f"    the dead replica: {gone.sent} requests ({gone.probes} probes), "
            f"{gone.failures} refused, resting now: {gone.resting}"
        )
    finally:
        for server in servers:
            server.close()


if __name__ == "__main__":
    main()
