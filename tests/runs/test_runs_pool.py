"""A stored run on an endpoint pool with one failing replica, through the RunWorker.

Two FakeOpenAI servers are the replicas of one stored endpoint (its base URL lists both, one per
line, as the Settings page saves it); one answers every request with a 503. The run, on SQLite and
PostgreSQL, ends with every item judged by the other one, and the failing replica is rested after
its first failures (the store's endpoints get the module's default rests: 5 s doubling to 60 s).
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest

from evalcore.errors import ConfigError
from evalcore.judge import RunSettings, endpoint_identity, replica_pool
from evalcore.labels import LIKERT_5
from evalcore.runs import RunWorker, estimate_run, plan_run
from evalcore.store import Store
from evalcore.testing import FakeOpenAI, Fault
from tests.runs.test_runs_service import TEMPLATE  # the same stored template as the service tests

KEY_ENV = "JUDGE_POOL_API_KEY"
SETTINGS = RunSettings(concurrency=4, backoff_base=0.01, backoff_max=0.05, timeout=5.0)
ITEMS = 30


@pytest.fixture
def replicas() -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    healthy = FakeOpenAI(latency=0.01).start()
    failing = FakeOpenAI(faults=[Fault.status_code(503)]).start()
    yield healthy, failing
    healthy.stop()
    failing.stop()


def _world(store: Store, base_url: str) -> dict[str, int]:
    project = store.create_project("pool")
    criterion = store.create_criterion(project.id, "fluency", kind="pointwise", scale=LIKERT_5)
    frame = pd.DataFrame(
        {
            "item_id": [f"i{n}" for n in range(ITEMS)],
            "prompt": [f"question {n}" for n in range(ITEMS)],
            "response": [f"answer {n}" for n in range(ITEMS)],
            "hint": [f"expect={1 + n % 5}" for n in range(ITEMS)],
        }
    )
    dataset = store.save_dataset(project.id, "answers", frame, kind="pointwise")
    template = store.create_template(project.id, "fluency", criterion.id)
    version = store.save_template_version(template.id, TEMPLATE, author="eve")
    endpoint = store.upsert_endpoint("pool", base_url=base_url, api_key_env=KEY_ENV)
    return {"dataset": dataset.id, "version": version.id, "endpoint": endpoint.id}


def test_a_run_on_a_pool_with_one_failing_replica_judges_every_item(
    store: Store,
    replicas: tuple[FakeOpenAI, FakeOpenAI],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, "pool-test-key-value")
    healthy, failing = replicas
    world = _world(store, f"{failing.base_url}\n{healthy.base_url}\n")
    saved = store.get_endpoint(world["endpoint"])
    assert saved.base_url == f"{failing.base_url}\n{healthy.base_url}"
    run = plan_run(
        store,
        dataset_id=world["dataset"],
        template_version_id=world["version"],
        endpoint_id=world["endpoint"],
        settings=SETTINGS,
    )
    worker = RunWorker(store)
    try:
        worker.submit(run.id)
        worker.wait(run.id, timeout=120)
    finally:
        worker.shutdown()
    assert store.get_run(run.id).status == "done"
    progress = store.run_progress(run.id)
    assert (progress.ok, progress.unparsed, progress.failed) == (ITEMS, 0, 0)
    frame = store.results_frame(run.id).set_index("item_id")
    assert len(frame) == ITEMS
    assert frame.loc["i7", "label"] == "3"  # expect=3
    assert healthy.count >= ITEMS
    # the failing replica got its share of the first requests in flight, then only probes
    stats = {s.url: s for s in replica_pool([failing.base_url, healthy.base_url]).stats()}
    bad = stats[failing.base_url]
    assert bad.sent == failing.count == bad.failures
    assert 1 <= bad.sent - bad.probes <= SETTINGS.concurrency
    # the replies are cached under the pool, so an estimate of the same run finds all of them
    estimate = estimate_run(
        store,
        dataset_id=world["dataset"],
        template_version_id=world["version"],
        model="fake-judge",
        endpoint_id=world["endpoint"],
    )
    assert estimate.n_cached == ITEMS
    assert endpoint_identity(saved.base_url or "").startswith("pool:")


def test_every_url_of_a_pool_meets_the_host_policy(store: Store) -> None:
    store.set_server_setting("endpoint_hosts", ["127.0.0.1"])
    with pytest.raises(ConfigError, match=r"evil\.test"):
        store.upsert_endpoint(
            "pool", base_url="http://127.0.0.1:8001/v1\nhttp://evil.test/v1", api_key_env=None
        )
    with pytest.raises(ConfigError, match="user name or password"):
        store.upsert_endpoint(
            "pool", base_url="http://127.0.0.1:8001/v1 http://u:p@127.0.0.1:8002/v1"
        )
    assert store.list_endpoints() == []
    saved = store.upsert_endpoint(
        "pool",
        base_url="http://127.0.0.1:8001/v1  http://127.0.0.1:8002/v1\nhttp://127.0.0.1:8001/v1",
    )
    assert saved.base_url == "http://127.0.0.1:8001/v1\nhttp://127.0.0.1:8002/v1"
