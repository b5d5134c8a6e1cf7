"""``evalcore worker``: a process that carries out judge runs from a PostgreSQL task queue.

Start as many as you like, on any host that reaches the database and the endpoints; the app queues
runs for them when ``EVALCORE_WORKERS=external`` (see :mod:`evalcore.runs._queue`). Stop one with
Ctrl-C or SIGTERM: its chunks in progress go back to the queue for the others.
"""

from __future__ import annotations

import argparse
from typing import Any

from evalcore.cli._database import add_database_option, open_store
from evalcore.errors import EvalcoreError


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {value}")
    return value


def register(sub: Any) -> None:
    p = sub.add_parser(
        "worker",
        help="carry out judge runs queued on a PostgreSQL database (run on any number of hosts)",
        description=(
            "Take chunks of judge runs from the database's task queue and judge them, until "
            "stopped (Ctrl-C or SIGTERM: the chunks in progress go back to the queue). The app "
            "queues runs for workers when EVALCORE_WORKERS=external. Needs PostgreSQL. "
            "Exit status: 0 stopped, 2 bad input."
        ),
    )
    add_database_option(p)
    p.add_argument(
        "--concurrency",
        type=_positive_int,
        default=1,
        metavar="N",
        help="chunks judged at once (each sends up to its run's concurrency requests; default 1)",
    )
    p.add_argument("--name", metavar="NAME", help="how the Judge page names it (default host:pid)")
    p.add_argument(
        "--lease",
        type=_positive_float,
        default=None,
        metavar="SECONDS",
        help="a silent worker's chunks go to another after this long (default 20)",
    )
    p.set_defaults(handler=run_worker)


def run_worker(args: argparse.Namespace) -> int:
    import logging

    from evalcore.runs import LEASE_S, ChunkWorker

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    store = open_store(args)
    try:
        if store.dialect != "postgresql":
            raise EvalcoreError(
                "evalcore worker needs a PostgreSQL database (--database-url or "
                "EVALCORE_DATABASE_URL); on SQLite the app carries out runs itself"
            )
        worker = ChunkWorker(
            store,
            name=args.name,
            concurrency=args.concurrency,
            lease_s=args.lease or LEASE_S,
        )
        print(f"worker {worker.name} on {store.url}: ready", flush=True)
        worker.run()
        print(f"worker {worker.name}: stopped", flush=True)
    finally:
        store.close()
    return 0
