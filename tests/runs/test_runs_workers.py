"""Workers on many hosts: ``evalcore worker`` processes carry out runs from PostgreSQL's task queue.

Real processes (``evalcore worker`` started with subprocess), a real PostgreSQL database, the fake
OpenAI-compatible server over HTTP through the real ``openai`` client: nothing of evalcore is
mocked. Every wait polls the database with a deadline. PostgreSQL only (skipped without a server).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest

from evalcore.errors import ConfigError
from evalcore.judge import RunSettings
from evalcore.labels import LIKERT_5
from evalcore.runs import (
    RunWorker,
    enqueue_run,
    list_workers,
    plan_run,
    uses_external_workers,
    workers_table,
)
from evalcore.store import Store
from evalcore.testing import FakeOpenAI
from tests.runs.test_runs_service import TEMPLATE

KEY_ENV = "WORKER_TEST_API_KEY"
CONCURRENCY = 8
SETTINGS = RunSettings(
    concurrency=CONCURRENCY, backoff_base=0.01, backoff_max=0.05, timeout=10.0, max_attempts=3
)
LEASE = "3"


#: the tests on a store run on PostgreSQL only (the ``store`` fixtures' backend)
ON_POSTGRESQL = pytest.mark.parametrize("backend", ["postgresql"], indirect=True)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(latency=0.05).start()
    yield server
    server.stop()


class Workers:
    """``evalcore worker`` processes on one database, stopped (killed if need be) at the end."""

    def __init__(
        self, url: str, tmp_path: Path, *, lease: str = LEASE, env: dict[str, str] | None = None
    ) -> None:
        self.url = url
        self.tmp_path = tmp_path
        self.lease = lease
        self.env = {**os.environ, KEY_ENV: "worker-test-key", **(env or {})}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, *, concurrency: int = 1) -> subprocess.Popen[bytes]:
        log = (self.tmp_path / f"{name}.log").open("wb")
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from evalcore.cli import main; raise SystemExit(main())",
                "worker",
                "--database-url",
                self.url,
                "--name",
                name,
                "--lease",
                self.lease,
                "--concurrency",
                str(concurrency),
            ],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.procs[name] = proc
        return proc

    def log(self, name: str) -> str:
        return (self.tmp_path / f"{name}.log").read_text(errors="replace")

    def stop_all(self, sig: int = signal.SIGTERM) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(sig)
        for name, proc in self.procs.items():
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:  # pragma: no cover - a stuck worker
                proc.kill()
                proc.wait()
                pytest.fail(f"worker {name} did not stop:\n{self.log(name)[-2000:]}")


@pytest.fixture
def workers(store_url: str, tmp_path: Path) -> Iterator[Workers]:
    started = Workers(store_url, tmp_path)
    try:
        yield started
    finally:
        for proc in started.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def wait_for(what: str, check: Callable[[], object], timeout: float = 120.0) -> object:
    """Poll ``check`` until it returns something true; fail with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def make_run(store: Store, fake: FakeOpenAI, n: int) -> int:
    project = store.create_project("workers")
    criterion = store.create_criterion(project.id, "fluency", kind="pointwise", scale=LIKERT_5)
    items = pd.DataFrame(
        {
            "item_id": [f"i{k}" for k in range(n)],
            "prompt": [f"question {k}" for k in range(n)],
            "response": [f"answer {k}" for k in range(n)],
            "hint": [f"expect={1 + k % 5}" for k in range(n)],
        }
    )
    dataset = store.save_dataset(project.id, "answers", items, kind="pointwise")
    template = store.create_template(project.id, "fluency", criterion.id)
    version = store.save_template_version(template.id, TEMPLATE, author="eve")
    endpoint = store.upsert_endpoint(
        "fake", kind="openai", base_url=fake.base_url, api_key_env=KEY_ENV
    )
    return plan_run(
        store,
        dataset_id=dataset.id,
        template_version_id=version.id,
        endpoint_id=endpoint.id,
        settings=SETTINGS,
    ).id


def queued_run(store: Store, fake: FakeOpenAI, n: int) -> int:
    """A run of ``n`` items split into chunks of 100, queued for the workers."""
    run_id = make_run(store, fake, n)
    enqueue_run(store, run_id, chunk_size=100)
    return run_id


def some_results(store: Store, run_id: int, at_least: int) -> None:
    wait_for("some results", lambda: store.run_progress(run_id).finished >= at_least, timeout=60)


def finishes_done(store: Store, run_id: int, n: int) -> None:
    """Wait for the run's end: ``done``, with one ``ok`` result per item."""
    wait_for("the run to end", lambda: store.get_run(run_id).is_terminal, timeout=180)
    run = store.get_run(run_id)
    assert run.status == "done", run.error
    one_result_per_item(store, run_id, n)


def one_result_per_item(store: Store, run_id: int, n: int) -> None:
    frame = store.results_frame(run_id)
    assert len(frame) == n
    assert frame["item_id"].nunique() == n
    assert set(frame["status"]) == {"ok"}


def resent(fake: FakeOpenAI) -> int:
    """Requests the fake received more than once (the same prompt sent again)."""
    counts = Counter(r.prompt_key for r in fake.requests)
    return sum(c - 1 for c in counts.values() if c > 1)


@ON_POSTGRESQL
def test_the_rule_is_an_explicit_setting_on_postgresql_only(store: Store, tmp_path: Path) -> None:
    assert uses_external_workers(store, "external")
    assert not uses_external_workers(store, "embedded")
    assert not uses_external_workers(store, "")
    sqlite = Store.open(f"sqlite:///{tmp_path / 'one.sqlite'}")
    try:
        assert not uses_external_workers(sqlite, "external")  # SQLite: always in-process
        embedded = RunWorker(sqlite, workers="external")
        assert not embedded.external
        embedded.shutdown()
    finally:
        sqlite.close()
    with pytest.raises(ConfigError, match="EVALCORE_WORKERS"):
        uses_external_workers(store, "sometimes")


@ON_POSTGRESQL
def test_several_workers_judge_a_chunked_run_once_per_item(
    store: Store, fake: FakeOpenAI, workers: Workers
) -> None:
    n = 600
    run_id = make_run(store, fake, n)
    submitter = RunWorker(store, workers="external")
    submitter.submit(run_id)
    submitter.submit(run_id)  # a second submit queues nothing more
    submitter.shutdown()
    chunks = store.run_chunks(run_id)
    assert [len(c.item_ids) for c in chunks] == [250, 250, 100]
    assert len({c.job_id for c in chunks}) == 3
    assert enqueue_run(store, run_id) == 0
    for name in ("w1", "w2", "w3"):
        workers.start(name)
    wait_for("three live workers", lambda: len(list_workers(store)) == 3, timeout=60)
    wait_for("the run to end", lambda: store.get_run(run_id).is_terminal)
    run = store.get_run(run_id)
    assert run.status == "done", run.error
    one_result_per_item(store, run_id, n)
    assert fake.count == n  # nothing sent twice
    assert {c.state for c in store.run_chunks(run_id)} == {"done"}
    table = workers_table(store)
    assert sorted(table["name"]) == ["w1", "w2", "w3"]
    wait_for("every worker idle", lambda: workers_table(store)["run"].isna().all())
    workers.stop_all()
    assert list_workers(store) == []  # stopped workers are not listed as alive
    assert len(list_workers(store, alive_within_s=None)) == 3


@ON_POSTGRESQL
def test_a_killed_worker_loses_nothing_and_pays_at_most_its_requests_in_flight(
    store: Store, fake: FakeOpenAI, workers: Workers
) -> None:
    n = 800
    run_id = queued_run(store, fake, n)
    victim = workers.start("victim")

    def victim_mid_chunk() -> list[int]:
        # one worker takes the chunks in order: the running one is a fifth to four fifths done
        running = [c.chunk for c in store.run_chunks(run_id) if c.state == "running"]
        return running if 20 <= store.run_progress(run_id).finished % 100 <= 80 else []

    hit = wait_for("the victim to be judging", victim_mid_chunk, timeout=60)
    killed_at = time.monotonic()  # the fake stamps arrivals with the same clock
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    assert store.get_run(run_id).status == "running"
    workers.start("survivor")
    finishes_done(store, run_id, n)
    assert {c.state for c in store.run_chunks(run_id)} == {"done"}
    taken_over = {c.chunk: c for c in store.run_chunks(run_id)}[hit[0]]  # type: ignore[index]
    assert (taken_over.attempts, taken_over.worker) == (2, "survivor")
    # Sent again: only requests of the victim's chunk whose result it had not committed, either
    # still waiting for their reply at the kill (at most its concurrency) or answered within the
    # writer's last commit interval.
    # (a request cut off by the kill before its body arrived reaches the fake as an empty one)
    cut = [r for r in fake.requests if not r.body.get("messages")]
    whole = [r for r in fake.requests if r.body.get("messages")]
    first: dict[str, float] = {}
    items_of: dict[str, str] = {}
    for r in whole:
        first.setdefault(r.prompt_key, r.t)
        found = re.search(r"question (\d+)", r.prompt)
        assert found, r.prompt
        items_of[r.prompt_key] = f"i{found[1]}"
    counts = Counter(r.prompt_key for r in whole)
    again = {key for key, c in counts.items() if c > 1}
    assert all(c <= 2 for c in counts.values())
    assert {items_of[key] for key in again} <= set(taken_over.item_ids)
    waiting = [key for key in again if first[key] + fake.latency > killed_at]
    assert len(waiting) <= CONCURRENCY
    assert len(whole) == n + len(again)
    assert all(r.t >= killed_at - 1.0 for r in cut)  # only around the kill
    workers.stop_all()


@ON_POSTGRESQL
def test_a_cancel_from_the_app_stops_every_workers_chunks_and_resume_finishes(
    store: Store, fake: FakeOpenAI, workers: Workers
) -> None:
    n = 1_000
    run_id = queued_run(store, fake, n)
    workers.start("w1")
    workers.start("w2")
    some_results(store, run_id, 40)
    store.request_cancel(run_id)  # what the page's Cancel does, from another process
    wait_for("the run to be cancelled", lambda: store.get_run(run_id).status == "cancelled", 60)
    wait_for(
        "every chunk stopped",
        lambda: all(c.state == "cancelled" for c in store.run_chunks(run_id)),
        timeout=60,
    )
    stopped_at = store.run_progress(run_id).finished
    assert 0 < stopped_at < n
    sent = fake.count
    # resume, as the page's Resume button does
    store.set_run_status(run_id, "pending")
    resumer = RunWorker(store, workers="external")
    resumer.submit(run_id)
    resumer.shutdown()
    finishes_done(store, run_id, n)
    assert fake.count - sent <= n - stopped_at + 2 * CONCURRENCY
    workers.stop_all()


@ON_POSTGRESQL
def test_a_run_resumes_after_every_worker_stopped(
    store: Store, fake: FakeOpenAI, workers: Workers
) -> None:
    n = 800
    run_id = queued_run(store, fake, n)
    workers.start("a")
    workers.start("b", concurrency=2)
    wait_for("both workers", lambda: len(list_workers(store)) == 2, timeout=60)
    some_results(store, run_id, 60)
    workers.stop_all(signal.SIGTERM)  # a shutdown is not a cancel
    assert all(proc.returncode == 0 for proc in workers.procs.values())
    run = store.get_run(run_id)
    assert run.status == "running"
    assert store.run_progress(run_id).finished < n
    assert "running" not in {c.state for c in store.run_chunks(run_id)}
    assert list_workers(store) == []
    workers.start("c", concurrency=2)
    finishes_done(store, run_id, n)
    assert resent(fake) <= 3 * CONCURRENCY
    workers.stop_all()


@ON_POSTGRESQL
def test_a_worker_queues_and_finishes_a_run_nobody_queued(
    store: Store, fake: FakeOpenAI, workers: Workers
) -> None:
    """An app that planned a run and died before queuing its chunks: once per lease every worker
    queues the chunks of runs nobody carries out (silent for longer than the lease)."""
    n = 120
    run_id = make_run(store, fake, n)  # planned, never submitted: no chunk, no job
    assert store.run_chunks(run_id) == []
    workers.start("w1")
    finishes_done(store, run_id, n)
    assert store.run_chunks(run_id)  # the worker split it and queued its chunks
    assert fake.count == n  # each item asked once
    workers.stop_all()


def test_chunks_decide_the_end_of_a_run_in_the_database(  # SQLite and PostgreSQL
    store: Store, fake: FakeOpenAI
) -> None:
    run_id = make_run(store, fake, 10)
    chunks = store.plan_chunks(run_id, [f"i{k}" for k in range(10)], size=4)
    assert [c.item_ids for c in chunks][-1] == ("i8", "i9")
    assert store.plan_chunks(run_id, ["other"], size=1) == chunks  # idempotent
    for c in chunks:
        store.start_chunk(run_id, c.chunk, worker="t")
    assert store.finish_chunk(run_id, 0, "done") == "pending"
    assert store.finish_chunk(run_id, 2, "done") == "pending"
    assert store.finish_chunk(run_id, 1, "done") == "done"  # the last one decides
    assert store.finish_chunk(run_id, 1, "done") == "done"  # a replay changes nothing


def test_the_worker_command_refuses_sqlite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evalcore.cli import main

    url = f"sqlite:///{tmp_path / 'app.sqlite'}"
    Store.open(url).close()
    assert main(["worker", "--database-url", url]) == 2
    assert "needs a PostgreSQL database" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["worker", "--database-url", url, "--concurrency", "0"])
    assert exited.value.code == 2


@ON_POSTGRESQL
def test_the_judge_page_lists_the_live_workers_and_what_each_is_doing(
    store: Store, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamlit.testing.v1 import AppTest

    from tests.pages.conftest import APP, sign_in
    from ui.state import Judge

    monkeypatch.setenv("EVALCORE_DATABASE_URL", store_url)
    monkeypatch.setenv("EVALCORE_WORKERS", "external")
    at = sign_in(AppTest.from_file(APP, default_timeout=120), "eve", "engineer")
    at.run()
    at.switch_page("pages/judge.py").run()
    busy = store.register_worker("gpu-box-1", host="gpu-box", pid=4242, concurrency=2)
    store.worker_heartbeat(busy.id, run_id=7, chunk=2, items_done=120)
    store.register_worker("idle-box", host="idle", pid=1)
    at.segmented_control(key=Judge.SECTION).set_value("Runs").run()
    assert not at.exception, at.exception
    tables = [d.value for d in at.dataframe if "items done" in d.value.columns]
    assert len(tables) == 1
    shown = tables[0].set_index("name")
    assert sorted(shown.index) == ["gpu-box-1", "idle-box"]
    assert shown.loc["gpu-box-1", "run"] == 7
    assert shown.loc["gpu-box-1", "chunk"] == 3  # counted from 1 on the page
    assert shown.loc["gpu-box-1", "items done"] == 120
    assert "2 workers alive" in " ".join(c.value for c in at.caption)
