"""Benchmark of password sign-in under a burst (issue 19, part 2).

    python bench/signin.py

Prints, each beside its baseline from the issue:

(a) 16 guesses at once from one address at one name, on a fresh SQLite file: how many real
    Argon2 verifications ran (the limit is 5; the issue measured 11 before), and whether the owner,
    signing in from another address at the same moment, got in;
(b) 16 correct sign-ins at once (16 names, 16 addresses), each in a fresh process, with the hashing
    slots at their default (2) and with 16 slots (no bound, as before): the growth of the process's
    peak resident memory during the burst, and the most hashes that ran at once.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from evalcore.errors import SignInError
from evalcore.store import PAIR_LIMIT, Store, hash_stats

PASSWORD = "correct horse battery"
BEFORE_CHECKS = 11  # issue 19: sixteen parallel guesses got eleven real password checks


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def guesses(folder: Path) -> None:
    store = Store.open(f"sqlite:///{folder / 'guesses.sqlite'}")
    store.add_user("root", role="admin", password=PASSWORD)
    store.sign_in("root", PASSWORD, client="192.0.2.10")  # warm up
    before = hash_stats().verifications
    barrier = threading.Barrier(17)

    def attempt(i: int) -> str:
        barrier.wait()
        name, password, client = (
            ("root", PASSWORD, "192.0.2.10") if i == 16 else ("root", f"guess {i}", "203.0.113.9")
        )
        try:
            store.sign_in(name, password, client=client)
        except SignInError:
            return "refused"
        return "in"

    with ThreadPoolExecutor(17) as pool:
        outcomes = list(pool.map(attempt, range(17)))
    checks = hash_stats().verifications - before - 1  # less the owner's own check
    store.close()
    print(
        f"(a) 16 guesses at once from one address: {checks} password checks "
        f"(limit {PAIR_LIMIT.attempts}; before: {BEFORE_CHECKS}); "
        f"guesses let in: {outcomes[:16].count('in')}; owner at another address: {outcomes[16]}"
    )


def burst_child(database: str) -> None:
    """In a fresh process: 16 correct sign-ins at once; prints JSON figures."""
    store = Store.open(database)
    store.sign_in("user0", PASSWORD, client="192.0.2.200")  # warm up: one hash's memory is in
    start = _peak_rss_mib()
    barrier = threading.Barrier(16)

    def attempt(i: int) -> None:
        barrier.wait()
        store.sign_in(f"user{i}", PASSWORD, client=f"192.0.2.{i}")

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(attempt, range(16)))
    stats = hash_stats()
    print(json.dumps({"growth": _peak_rss_mib() - start, "peak": stats.peak, "limit": stats.limit}))
    store.close()


def burst(folder: Path) -> None:
    database = f"sqlite:///{folder / 'burst.sqlite'}"
    with Store.open(database) as store:
        for i in range(16):
            store.add_user(f"user{i}", role="viewer", password=PASSWORD)
    figures = {}
    for slots in ("2", "16"):
        env = {**os.environ, "EVALCORE_MAX_PASSWORD_HASHES": slots}
        out = subprocess.run(
            [sys.executable, __file__, "--burst-child", database],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
        figures[slots] = json.loads(out.stdout.strip().splitlines()[-1])
    bounded, before = figures["2"], figures["16"]
    print(
        f"(b) 16 sign-ins at once: peak memory +{bounded['growth']:.0f} MiB with "
        f"{bounded['limit']} hashing slots (at most {bounded['peak']} at once); before (no bound, "
        f"16 slots): +{before['growth']:.0f} MiB ({before['peak']} at once)"
    )


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--burst-child":
        burst_child(sys.argv[2])
        return
    with tempfile.TemporaryDirectory() as folder:
        guesses(Path(folder))
        burst(Path(folder))


if __name__ == "__main__":
    main()
