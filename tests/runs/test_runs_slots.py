"""Run slots: a server setting, shared fairly across projects; a slow endpoint starves nobody.

Issue 19: "the whole server has two run slots, shared by every project, so two runs against a slow
endpoint hold everyone else's in pending". Here a worker with two slots is given two long runs of
one project and then a short run of another: the short one starts while the long ones still run
(one of them yields its slot and resumes later, judging each item once). And two runs against a
slow endpoint leave a slot for a run against another endpoint. Real store (SQLite and PostgreSQL),
fake OpenAI-compatible servers over HTTP; waits poll the database with a deadline.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator

import pandas as pd
import pytest

from evalcore.errors import ConfigError
from evalcore.judge import RunSettings
from evalcore.labels import LIKERT_5
from evalcore.runs import (
    ENDPOINT_SLOTS_ENV,
    SLOTS_ENV,
    RunWorker,
    SlotPolicy,
    plan_run,
    slot_policy,
)
from evalcore.store import Store
from evalcore.testing import FakeOpenAI
from tests.runs.test_runs_restart import TEMPLATE

KEY_ENV = "SLOTS_TEST_API_KEY"
ONE_AT_A_TIME = RunSettings(concurrency=1, backoff_base=0.01, backoff_max=0.05, timeout=10.0)


@pytest.fixture
def slow() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(latency=0.2).start()
    yield server
    server.stop()


@pytest.fixture
def fast() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "slots-test-key")
    monkeypatch.delenv(SLOTS_ENV, raising=False)
    monkeypatch.delenv(ENDPOINT_SLOTS_ENV, raising=False)


def wait_for(what: str, check: Callable[[], object], timeout: float = 120.0) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        threading.Event().wait(0.05)
    pytest.fail(f"timed out waiting for {what}")


class Project:
    """A project with a dataset of ``n`` items and a judge template, planning runs on demand."""

    def __init__(self, store: Store, name: str, n: int) -> None:
        self.store = store
        self.n = n
        project = store.create_project(name)
        criterion = store.create_criterion(project.id, "fluency", kind="pointwise", scale=LIKERT_5)
        items = pd.DataFrame(
            {
                "item_id": [f"i{k}" for k in range(n)],
                "response": [f"{name} answer {k}" for k in range(n)],
                "gold": [1 + k % 5 for k in range(n)],
            }
        )
        self.dataset = store.save_dataset(project.id, "answers", items, kind="pointwise")
        template = store.create_template(project.id, "fluency", criterion.id)
        self.version = store.save_template_version(template.id, TEMPLATE, author="eve")

    def run(self, endpoint_id: int, name: str, *, replicate: int = 0) -> int:
        """A pending run; another ``replicate`` sends every request again (no reply is shared)."""
        return plan_run(
            self.store,
            dataset_id=self.dataset.id,
            template_version_id=self.version.id,
            endpoint_id=endpoint_id,
            settings=dataclasses.replace(ONE_AT_A_TIME, replicate=replicate),
            name=name,
        ).id


def _endpoint(store: Store, name: str, server: FakeOpenAI) -> int:
    return store.upsert_endpoint(
        name, kind="openai", base_url=server.base_url, api_key_env=KEY_ENV
    ).id


def one_result_per_item(store: Store, run_id: int, n: int) -> None:
    frame = store.results_frame(run_id)
    assert Counter(frame["item_id"].astype(str)) == {f"i{k}": 1 for k in range(n)}
    assert set(frame["status"]) == {"ok"}


def test_two_slow_runs_of_one_project_do_not_hold_another_projects_run_pending(
    store: Store, slow: FakeOpenAI
) -> None:
    endpoint = _endpoint(store, "slow", slow)
    busy, other = Project(store, "busy", 40), Project(store, "other", 4)
    long_runs = [busy.run(endpoint, "long 1"), busy.run(endpoint, "long 2", replicate=1)]
    worker = RunWorker(store, max_parallel=2, per_endpoint=2, check_s=0.2)
    try:
        for run_id in long_runs:
            worker.submit(run_id)
        wait_for(
            "both long runs to be judging",
            lambda: all(store.run_progress(r).ok >= 1 for r in long_runs),
        )
        short = other.run(endpoint, "short")
        worker.submit(short)
        wait_for("the other project's run to end", lambda: store.get_run(short).is_terminal)
        assert store.get_run(short).status == "done"
        # it did not wait for the long runs: at least one of them was still going
        assert not all(store.get_run(r).is_terminal for r in long_runs)
        for run_id in long_runs:
            worker.wait(run_id, timeout=180)
    finally:
        worker.shutdown()
    short_run = store.get_run(short)
    for run_id in long_runs:
        run = store.get_run(run_id)
        assert run.status == "done", run.error
        assert run.finished_at is not None
        assert short_run.started_at is not None
        assert short_run.started_at < run.finished_at
        one_result_per_item(store, run_id, busy.n)  # the run that yielded judged nothing twice
    one_result_per_item(store, short, other.n)
    assert len(slow.requests) == 2 * busy.n + other.n  # no item of a yielded run asked again


def test_a_slow_endpoint_always_leaves_a_slot_for_the_others(
    store: Store, slow: FakeOpenAI, fast: FakeOpenAI
) -> None:
    slow_id, fast_id = _endpoint(store, "slow", slow), _endpoint(store, "fast", fast)
    project = Project(store, "mixed", 30)
    on_slow = [project.run(slow_id, "slow 1"), project.run(slow_id, "slow 2", replicate=1)]
    worker = RunWorker(store, max_parallel=2, check_s=0.2)
    assert worker.policy == SlotPolicy(2, 1, "argument")  # an endpoint gets one slot less
    try:
        for run_id in on_slow:
            worker.submit(run_id)
        quick = project.run(fast_id, "fast")
        worker.submit(quick)
        wait_for("the fast run to end", lambda: store.get_run(quick).is_terminal)
        assert store.get_run(quick).status == "done"
        # the second slow run waited for the slow endpoint's slot, not the fast run for it
        assert store.get_run(on_slow[1]).started_at is None
        assert [j.job_id for j in worker.jobs() if j.running] == [on_slow[0]]
        for run_id in on_slow:
            worker.wait(run_id, timeout=180)
    finally:
        worker.shutdown()
    for run_id in [*on_slow, quick]:
        one_result_per_item(store, run_id, project.n)


def test_the_slots_are_a_server_setting_read_while_the_server_runs(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert slot_policy(store) == SlotPolicy(4, 3, "default")
    monkeypatch.setenv(SLOTS_ENV, "6")
    assert slot_policy(store) == SlotPolicy(6, 5, SLOTS_ENV)
    store.set_server_setting("run_slots", 3)  # an admin's choice wins over the environment
    assert slot_policy(store) == SlotPolicy(3, 2, "server setting run_slots")
    monkeypatch.setenv(ENDPOINT_SLOTS_ENV, "9")
    assert slot_policy(store).per_endpoint == 3  # never more than the slots
    assert slot_policy(store, slots=1) == SlotPolicy(1, 1, "argument")
    monkeypatch.delenv(ENDPOINT_SLOTS_ENV)
    worker = RunWorker(store, check_s=0.1)
    try:
        assert worker.policy.slots == 3
        store.set_server_setting("run_slots", 5)
        wait_for("the worker to read the new setting", lambda: worker.policy.slots == 5)
    finally:
        worker.shutdown()
    store.set_server_setting("run_slots", "two")
    with pytest.raises(ConfigError, match="server setting run_slots is a whole number"):
        slot_policy(store)
    store.set_server_setting("run_slots", None)
    monkeypatch.setenv(SLOTS_ENV, "0")
    with pytest.raises(ConfigError, match="EVALCORE_RUN_SLOTS"):
        slot_policy(store)
