"""A stored run survives the server being killed mid-run: a new worker resumes it and repeats nothing.

The first worker is a real separate process carrying out the run; it is killed (SIGKILL, no chance
to clean up) once a few results are in the database. A worker in this process then finds the run
stale and finishes it. Checked on SQLite and PostgreSQL.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator

import pandas as pd
import pytest

from evalcore.judge import RunSettings
from evalcore.labels import LIKERT_5
from evalcore.runs import RunWorker, plan_run
from evalcore.store import Store
from evalcore.testing import FakeOpenAI

KEY_ENV = "JUDGE_TEST_API_KEY"
SECRET = "test-secret-value-restart-42"
SETTINGS = RunSettings(concurrency=2, backoff_base=0.01, backoff_max=0.05, timeout=5.0)
TEMPLATE = {
    "name": "fluency",
    "criterion": "fluency",
    "kind": "pointwise",
    "scale": [1, 2, 3, 4, 5],
    "system": "Rate the fluency of an answer from 1 to 5.",
    "user": "Answer: {{ response }}\nexpect={{ gold }}",
    "output": {"parser": "json", "label_field": "score", "structured": True},
    "model": {"model": "fake-judge", "temperature": 0.0},
}
N_ITEMS = 24
#: the first worker: carry out one stored run, as the dashboard's worker thread would
WORKER = (
    "import sys; from evalcore.runs import execute_run; from evalcore.store import Store; "
    "execute_run(Store.open(sys.argv[1]), int(sys.argv[2]))"
)


@pytest.fixture
def slow_fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(latency=0.15).start()
    yield server
    server.stop()


def _plan(store: Store, fake: FakeOpenAI) -> int:
    project = store.create_project("restart")
    criterion = store.create_criterion(project.id, "fluency", kind="pointwise", scale=LIKERT_5)
    items = pd.DataFrame(
        {
            "item_id": [f"i{n}" for n in range(N_ITEMS)],
            "response": [f"answer {n}" for n in range(N_ITEMS)],
            "gold": [1 + n % 5 for n in range(N_ITEMS)],
        }
    )
    dataset = store.save_dataset(project.id, "answers", items, kind="pointwise")
    template = store.create_template(project.id, "fluency", criterion.id)
    version = store.save_template_version(template.id, TEMPLATE, author="eve")
    endpoint = store.upsert_endpoint(
        "fake", kind="openai", base_url=fake.base_url, api_key_env=KEY_ENV
    )
    run = plan_run(
        store,
        dataset_id=dataset.id,
        template_version_id=version.id,
        endpoint_id=endpoint.id,
        settings=SETTINGS,
    )
    return run.id


@pytest.mark.timeout(180)
def test_a_run_killed_mid_way_is_resumed_by_a_new_worker_without_repeats(
    store: Store, store_url: str, slow_fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    run_id = _plan(store, slow_fake)
    env = dict(os.environ, **{KEY_ENV: SECRET})
    first = subprocess.Popen([sys.executable, "-c", WORKER, store_url, str(run_id)], env=env)
    try:
        for _ in range(1200):  # poll the database (at most 60 s) until a few results are saved
            if store.run_progress(run_id).ok >= 4 or first.poll() is not None:
                break
            threading.Event().wait(0.05)
    finally:
        first.kill()  # the server dies: no cancel, no clean-up
        first.wait(30)
    saved = set(store.results_frame(run_id)["item_id"].astype(str))
    sent_before = slow_fake.count
    assert 4 <= len(saved) < N_ITEMS  # killed mid-run
    assert store.get_run(run_id).status == "running"

    worker = RunWorker(store)
    try:
        assert worker.resume_stale(stale_after_s=0.0) == [run_id]
        worker.wait(run_id, timeout=120)
    finally:
        worker.shutdown()

    assert store.get_run(run_id).status == "done"
    frame = store.results_frame(run_id)
    assert Counter(frame["item_id"].astype(str)) == {f"i{n}": 1 for n in range(N_ITEMS)}
    assert set(frame["status"]) == {"ok"}
    later = slow_fake.requests[sent_before:]
    for item_id in saved:  # nothing saved before the kill is asked again
        assert not any(f"Answer: answer {item_id[1:]}\n" in r.prompt for r in later)


#: a server process: a RunWorker carries the run in its thread; the interpreter then exits with the
#: run still going (as when the dashboard is stopped with Ctrl-C)
EXITING_SERVER = (
    "import sys, time; from evalcore.runs import RunWorker; from evalcore.store import Store\n"
    "store = Store.open(sys.argv[1]); RunWorker(store).submit(int(sys.argv[2]))\n"
    "while store.run_progress(int(sys.argv[2])).ok < 2: time.sleep(0.05)\n"
    "print('exiting', flush=True)\n"
)


@pytest.mark.timeout(180)
def test_a_server_that_exits_mid_run_stops_at_once_and_leaves_the_run_resumable(
    store: Store, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the exit hook the process waits for the run's thread: here, for minutes."""
    slow = FakeOpenAI(latency=2.0).start()  # 24 items at concurrency 2: about 24 s of work
    try:
        monkeypatch.setenv(KEY_ENV, SECRET)
        run_id = _plan(store, slow)
        env = dict(os.environ, **{KEY_ENV: SECRET})
        done = subprocess.run(
            [sys.executable, "-c", EXITING_SERVER, store_url, str(run_id)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,  # far below the run's remaining work, which would hold a joined thread
        )
        assert done.returncode == 0, done.stderr
        progress = store.run_progress(run_id)
        assert progress.ok < N_ITEMS  # it stopped mid-run
        assert store.get_run(run_id).status == "running"  # not cancelled: the next start resumes it
        assert store.runs_to_resume(stale_after_s=0.0)[0].id == run_id
    finally:
        slow.stop()
