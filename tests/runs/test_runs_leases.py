"""Runs always resume: every job is held by a lease, and a worker that dies is replaced at once.

The store's leases on SQLite and PostgreSQL (one winner among owners claiming at once), what makes
an owner "gone", which jobs a worker takes over, a worker that lost its lease stopping without
touching the run, an owner on another host waited for until its lease expires, and the case of
issue 19: a server process killed with SIGKILL in the middle of a run and a new one started at
once, which finishes the run with one result per item. Real processes, the fake OpenAI-compatible
server over HTTP through the real ``openai`` client; waits poll the database with a deadline.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from evalcore.errors import ConfigError
from evalcore.runs import (
    RunWorker,
    execute_run,
    owner_is_gone,
    process_owner,
    takeovers,
)
from evalcore.store import Store
from evalcore.testing import FakeOpenAI
from tests.runs.test_runs_restart import KEY_ENV, N_ITEMS, SECRET, _plan

HERE = "a-host-that-is-not-this-one"


@pytest.fixture
def slow_fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(latency=0.15).start()
    yield server
    server.stop()


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv(KEY_ENV, SECRET)
    return dict(os.environ, **{KEY_ENV: SECRET})


def wait_for(what: str, check: Callable[[], object], timeout: float = 120.0) -> object:
    """Poll ``check`` until it returns something true; fail with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        threading.Event().wait(0.05)
    pytest.fail(f"timed out waiting for {what}")


def one_result_per_item(store: Store, run_id: int) -> None:
    frame = store.results_frame(run_id)
    assert Counter(frame["item_id"].astype(str)) == {f"i{n}": 1 for n in range(N_ITEMS)}
    assert set(frame["status"]) == {"ok"}


# --- the store's leases ---------------------------------------------------------------------------


def test_a_lease_has_one_owner_until_released_expired_or_known_gone(
    store: Store, slow_fake: FakeOpenAI, keyed: dict[str, str]
) -> None:
    run_id = _plan(store, slow_fake)
    a, b = f"{HERE}:1:aaa:w1", f"{HERE}:2:bbb:w1"
    assert store.claim_lease("run", run_id, a, lease_s=60)
    assert not store.claim_lease("run", run_id, b, lease_s=60)  # held by a live owner
    assert store.claim_lease("run", run_id, a, lease_s=60)  # the owner claims again: kept
    assert store.renew_lease("run", run_id, a, lease_s=60) == "pending"
    assert store.get_run(run_id).heartbeat_at is not None  # a renewal is a sign of life
    assert store.renew_lease("run", run_id, b, lease_s=60) is None  # b holds nothing
    # b learns that a is gone: it takes the lease before it expires, and a has lost it
    assert store.claim_lease("run", run_id, b, lease_s=60, replacing=a)
    assert store.renew_lease("run", run_id, a, lease_s=60) is None
    assert store.get_run(run_id).lease_owner == b
    assert not store.release_lease("run", run_id, a)
    assert store.release_lease("run", run_id, b)
    assert store.get_run(run_id).lease_owner is None
    # a lease that is not renewed expires, and then anyone may claim it
    assert store.claim_lease("run", run_id, a, lease_s=0.2)
    wait_for("the lease to expire", lambda: store.claim_lease("run", run_id, b, lease_s=60))
    assert store.request_cancel(run_id).status == "cancelling"
    assert store.renew_lease("run", run_id, b, lease_s=60) == "cancelling"  # the worker sees it
    store.set_run_status(run_id, "cancelled")
    assert not store.claim_lease("run", run_id, a, lease_s=60, replacing=b)  # over: no lease
    assert [r.job_id for r in store.open_leases("run")] == []
    with pytest.raises(ConfigError, match="positive number of seconds"):
        store.claim_lease("run", run_id, a, lease_s=0)
    with pytest.raises(ConfigError, match="a run or an optimisation"):
        store.claim_lease("chunk", run_id, a, lease_s=1)  # type: ignore[arg-type]


def test_of_owners_claiming_at_once_exactly_one_wins(
    store: Store, slow_fake: FakeOpenAI, keyed: dict[str, str]
) -> None:
    run_id = _plan(store, slow_fake)
    owners = [f"{HERE}:{n}:nonce{n}:w1" for n in range(8)]
    start = threading.Barrier(len(owners))
    won: list[str] = []

    def claim(owner: str) -> None:
        start.wait()
        if store.claim_lease("run", run_id, owner, lease_s=60):
            won.append(owner)

    threads = [threading.Thread(target=claim, args=(o,)) for o in owners]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1
    assert store.get_run(run_id).lease_owner == won[0]


# --- owners --------------------------------------------------------------------------------------

_PRINT_OWNER = "from evalcore.runs import process_owner; print(process_owner(), flush=True)\n"


def test_an_owner_of_this_host_is_gone_once_its_process_ended() -> None:
    live = subprocess.Popen(
        [sys.executable, "-c", _PRINT_OWNER + "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert live.stdout is not None
    assert live.stdin is not None
    owner = live.stdout.readline().strip()
    try:
        assert owner.split(":")[-3] == str(live.pid)
        assert not owner_is_gone(owner)  # alive
    finally:
        live.stdin.close()
        live.wait(timeout=60)
    assert owner_is_gone(owner)  # its process ended
    mine = process_owner()
    assert not owner_is_gone(mine)
    host, pid, _, worker = mine.split(":")
    assert owner_is_gone(f"{host}:{pid}:a-nonce-of-another-process:{worker}")  # its pid reused
    assert not owner_is_gone(f"{HERE}:1:abc:w1")  # another host: only its lease can tell
    assert not owner_is_gone("not an owner name")
    assert not owner_is_gone(None)
    assert process_owner() != process_owner()  # two workers of a process never share a lease


def test_a_worker_takes_over_what_nobody_alive_holds(
    store: Store, slow_fake: FakeOpenAI, keyed: dict[str, str]
) -> None:
    ended = subprocess.run(
        [sys.executable, "-c", _PRINT_OWNER], capture_output=True, text=True, check=True
    ).stdout.strip()
    first = store.get_run(_plan(store, slow_fake))
    names = ("dead", "elsewhere", "expired", "left", "new")
    runs = {"dead": first.id}
    for name in names[1:]:
        runs[name] = store.create_run(
            first.dataset_id, first.criterion_id, name=name, model="fake-judge"
        ).id
    for name in ("dead", "elsewhere", "expired", "left"):
        store.set_run_status(runs[name], "running")
    store.claim_lease("run", runs["dead"], ended, lease_s=600)  # its process is gone
    store.claim_lease("run", runs["elsewhere"], f"{HERE}:5:n:w1", lease_s=600)  # alive elsewhere
    store.claim_lease("run", runs["expired"], f"{HERE}:6:n:w1", lease_s=600)
    later = datetime.now(UTC) + timedelta(seconds=601)  # as if ten minutes went by
    # "left": released by a server that stopped; "new": pending, handed to a worker just now

    found = {t.record.job_id: t.replacing for t in takeovers(store, "run")}
    assert found == {runs["dead"]: ended, runs["left"]: None}
    found = {t.record.job_id: t.replacing for t in takeovers(store, "run", now=later)}
    assert found == {
        runs["dead"]: ended,
        runs["left"]: None,
        runs["elsewhere"]: None,  # the lease expired
        runs["expired"]: None,
        runs["new"]: None,  # pending for longer than a lease: nobody started it
    }
    assert runs["new"] in {t.record.job_id for t in takeovers(store, "run", wait_pending_s=0)}


# --- workers --------------------------------------------------------------------------------------


def test_a_worker_that_lost_its_lease_stops_and_leaves_the_run_to_the_new_owner(
    store: Store, slow_fake: FakeOpenAI, keyed: dict[str, str]
) -> None:
    run_id = _plan(store, slow_fake)
    first, second = f"{HERE}:1:first:w1", f"{HERE}:2:second:w1"
    outcome: list[object] = []
    thread = threading.Thread(
        target=lambda: outcome.append(execute_run(store, run_id, owner=first, lease_s=30))
    )
    thread.start()
    wait_for("some results", lambda: store.run_progress(run_id).ok >= 3)
    # another worker decided the first one was gone and took the run over
    assert store.claim_lease("run", run_id, second, lease_s=60, replacing=first)
    thread.join(timeout=60)
    assert not thread.is_alive()
    summary = outcome[0]
    assert summary is not None
    assert summary.cancelled
    run = store.get_run(run_id)
    assert (run.status, run.lease_owner) == ("running", second)  # nothing touched
    assert store.run_progress(run_id).finished < N_ITEMS
    assert execute_run(store, run_id, owner=first) is None  # the live owner keeps it
    execute_run(store, run_id, owner=second)
    assert store.get_run(run_id).status == "done"
    assert store.get_run(run_id).lease_owner is None  # released at the end
    one_result_per_item(store, run_id)


def test_a_run_held_on_another_host_is_taken_over_when_its_lease_expires(
    store: Store, slow_fake: FakeOpenAI, keyed: dict[str, str]
) -> None:
    run_id = _plan(store, slow_fake)
    store.set_run_status(run_id, "running")
    store.claim_lease("run", run_id, f"{HERE}:9:n:w1", lease_s=3)  # then that host went silent
    worker = RunWorker(store, check_s=0.2)
    try:
        assert worker.resume_stale() == []  # its lease still holds
        assert not worker.is_active(run_id)
        wait_for("the run to end", lambda: store.get_run(run_id).is_terminal, timeout=180)
    finally:
        worker.shutdown()
    assert store.get_run(run_id).status == "done"
    one_result_per_item(store, run_id)


#: a server process: its RunWorker carries the run out (``submit``) or only watches for work
SERVER = """
import sys, threading
from evalcore.runs import RunWorker
from evalcore.store import Store
store = Store.open(sys.argv[1])
run_id = int(sys.argv[2])
worker = RunWorker(store, check_s=0.5)
if sys.argv[3] == "submit":
    worker.submit(run_id)
while not store.get_run(run_id).is_terminal:
    threading.Event().wait(0.05)
worker.shutdown()
print(store.get_run(run_id).status, flush=True)
"""


@pytest.mark.timeout(300)
def test_kill_9_and_an_immediate_restart_finish_the_run_with_one_result_per_item(
    store: Store, store_url: str, slow_fake: FakeOpenAI, keyed: dict[str, str]
) -> None:
    """Issue 19: killed at 8/24 and started again at once, the run finishes; nobody calls
    ``resume_stale``, the new server's own periodic check takes the run over."""
    run_id = _plan(store, slow_fake)
    first = subprocess.Popen(
        [sys.executable, "-c", SERVER, store_url, str(run_id), "submit"], env=keyed
    )
    try:
        wait_for(
            "a few results",
            lambda: store.run_progress(run_id).ok >= 8 or first.poll() is not None,
            timeout=120,
        )
    finally:
        killed_at = time.monotonic()  # the fake stamps arrivals with the same clock
        first.send_signal(signal.SIGKILL)  # the server dies: no clean-up, no lease released
        first.wait(timeout=30)
    run = store.get_run(run_id)
    assert run.status == "running"
    assert run.lease_owner is not None
    assert f":{first.pid}:" in run.lease_owner
    assert run.lease_expires_at is not None
    assert run.lease_expires_at > datetime.now(UTC)
    saved = set(store.results_frame(run_id)["item_id"].astype(str))
    assert 8 <= len(saved) < N_ITEMS  # killed mid-run

    second = subprocess.run(
        [sys.executable, "-c", SERVER, store_url, str(run_id), "watch"],
        env=keyed,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "done"
    run = store.get_run(run_id)
    assert (run.status, run.lease_owner) == ("done", None)
    one_result_per_item(store, run_id)
    # what the new server asked (a request cut off by the kill arrives with no body: not one)
    later = [r for r in slow_fake.requests if r.t > killed_at and r.body.get("messages")]
    for item_id in saved:  # nothing saved before the kill is asked again
        assert not any(f"Answer: answer {item_id[1:]}\n" in r.prompt for r in later)
    asked = Counter(r.prompt for r in later)
    assert len(asked) == N_ITEMS - len(saved)  # every item not saved, each once
    assert set(asked.values()) == {1}, asked
