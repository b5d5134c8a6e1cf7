"""Endpoint pools: several FakeOpenAI servers as replicas of one endpoint, through the real client.

The rests here are a fraction of a second (a :class:`ReplicaPool` made by the test); the module's
defaults (5 s doubling to 60 s) are what a stored endpoint gets. Counts come from each fake server
and from the pool's own statistics, never from timing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

import pytest

from evalcore.errors import ConfigError
from evalcore.judge import (
    REST_BASE_S,
    REST_MAX_S,
    Endpoint,
    JudgeItem,
    JudgeRunner,
    JudgeTemplate,
    MemoryCache,
    MemorySink,
    PoolClient,
    ReplicaPool,
    RunSettings,
    cache_key,
    client_factory,
    endpoint_identity,
    make_client,
)
from evalcore.testing import FakeOpenAI, Fault

Server = Callable[..., FakeOpenAI]
SETTINGS = RunSettings(concurrency=6, backoff_base=0.01, backoff_max=0.05, timeout=5.0)


def pool_endpoint(*servers: FakeOpenAI) -> Endpoint:
    """One endpoint whose base URL lists every server, one per line (as the Settings page saves)."""
    return Endpoint("pool", base_url="\n".join(s.base_url for s in servers), api_key_env=None)


def runner_for(
    endpoint: Endpoint,
    pool: ReplicaPool,
    template: JudgeTemplate,
    settings: RunSettings = SETTINGS,
) -> JudgeRunner:
    factory = client_factory(endpoint, timeout=settings.timeout, pool=pool)
    return JudgeRunner(factory, template, settings=settings, model="fake-judge")


def items(count: int, prefix: str = "item") -> list[JudgeItem]:
    return [
        JudgeItem(f"{prefix}-{i}", {"response": f"{prefix} text {i}", "gold": 1 + i % 5})
        for i in range(count)
    ]


def short_pool(servers: Sequence[FakeOpenAI]) -> ReplicaPool:
    return ReplicaPool([s.base_url for s in servers], rest_base=0.2, rest_max=0.4)


def test_the_rests_are_module_constants() -> None:
    assert (REST_BASE_S, REST_MAX_S) == (5.0, 60.0)
    pool = ReplicaPool(["http://a/v1", "http://b/v1"])
    assert (pool.rest_base, pool.rest_max) == (5.0, 60.0)


def test_a_pool_is_one_identity_whatever_the_order_of_its_urls() -> None:
    a, b = "http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1/"
    assert endpoint_identity(f"{a}\n{b}") == endpoint_identity(f"  {b} {a}\n")
    assert (
        endpoint_identity(f"{a}\n{b}") == "pool:http://127.0.0.1:8001/v1,http://127.0.0.1:8002/v1"
    )
    assert endpoint_identity(a) == a  # one URL keeps the identity (and cache keys) it always had
    assert endpoint_identity(f"{a}\n{a}") == a
    assert Endpoint("p", base_url=f"{a}\n{b}\n{a}", api_key_env=None).base_urls == (a, b)


def test_every_url_of_a_pool_is_checked() -> None:
    with pytest.raises(ConfigError, match="http:// or https://"):
        Endpoint("p", base_url="http://127.0.0.1:1/v1\nftp://other/v1", api_key_env=None)
    with pytest.raises(ConfigError, match="not Azure"):
        Endpoint(
            "p",
            kind="azure",
            base_url="https://a.example/\nhttps://b.example/",
            api_version="2024-06-01",
            api_key_env=None,
        )
    with pytest.raises(ConfigError, match="at most 32"):
        Endpoint(
            "p",
            base_url="\n".join(f"http://127.0.0.1:{9000 + n}/v1" for n in range(33)),
            api_key_env=None,
        )


def test_a_reply_is_reused_whichever_replica_gave_it(
    fake_server: Server, likert: JudgeTemplate
) -> None:
    one, two = fake_server(), fake_server()
    cache = MemoryCache()
    first = runner_for(pool_endpoint(one, two), short_pool([one, two]), likert)
    summary = first.run_sync(items(20), MemorySink(), cache)
    assert summary.ok == 20
    assert one.count > 0
    assert two.count > 0  # both replicas answered some
    sent = one.count + two.count
    # the same pool listed the other way round: every reply comes from the cache
    again = runner_for(pool_endpoint(two, one), short_pool([two, one]), likert)
    resumed = again.run_sync(items(20), MemorySink(), cache)
    assert (resumed.ok, resumed.cached) == (20, 20)
    assert one.count + two.count == sent
    identity = endpoint_identity([one.base_url, two.base_url])
    messages = [{"role": "user", "content": "hello"}]
    assert again._requester.key(messages, {}) == cache_key(  # type: ignore[attr-defined]
        messages, "fake-judge", {}, endpoint=identity
    )


def test_a_failing_replica_is_rested_and_the_run_goes_on(
    fake_server: Server, likert: JudgeTemplate
) -> None:
    fast, failing, other = (
        fake_server(latency=0.01),
        fake_server(faults=[Fault.status_code(503)]),
        fake_server(latency=0.01),
    )
    pool = short_pool([fast, failing, other])
    sink = MemorySink()
    summary = runner_for(pool_endpoint(fast, failing, other), pool, likert).run_sync(
        items(90), sink, MemoryCache()
    )
    assert (summary.ok, summary.failed) == (90, 0)
    assert {r.status for r in sink} == {"ok"}
    stats = {s.url: s for s in pool.stats()}
    bad = stats[failing.base_url]
    assert bad.sent == failing.count  # the pool's count is the server's
    assert bad.failures == failing.count  # every request it got failed
    # before its first failure came back it got at most its share of the first requests in
    # flight; after that, only one probe at a time when each rest ended
    assert bad.sent - bad.probes <= SETTINGS.concurrency
    assert fast.count + other.count >= 90
    assert stats[fast.base_url].failures == stats[other.base_url].failures == 0


def test_least_outstanding_sends_more_to_the_faster_replica(
    fake_server: Server, likert: JudgeTemplate
) -> None:
    quick, slow = fake_server(latency=0.005), fake_server(latency=0.25)
    settings = RunSettings(concurrency=4, backoff_base=0.01, backoff_max=0.05, timeout=5.0)
    pool = short_pool([quick, slow])
    summary = runner_for(pool_endpoint(quick, slow), pool, likert, settings).run_sync(
        items(80), MemorySink(), MemoryCache()
    )
    assert summary.ok == 80
    assert slow.count >= 1  # it is used, but it holds its requests longer
    assert quick.count > 4 * slow.count, (quick.count, slow.count)
    assert quick.count + slow.count == 80
    assert all(s.outstanding == 0 for s in pool.stats())


def test_a_replica_that_comes_back_is_used_again(
    fake_server: Server, likert: JudgeTemplate
) -> None:
    up, down = fake_server(latency=0.01), fake_server(latency=0.01)
    endpoint = pool_endpoint(up, down)
    pool = short_pool([up, down])
    down.stop()  # connections refused; it keeps its port for when it comes back
    first = runner_for(endpoint, pool, likert).run_sync(items(30), MemorySink(), MemoryCache())
    assert (first.ok, first.failed) == (30, 0)
    assert pool.stats()[1].failures >= 1
    down.start()
    deadline = time.monotonic() + 10
    while pool.stats()[1].resting and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not pool.stats()[1].resting
    second = runner_for(endpoint, pool, likert).run_sync(
        items(60, "later"), MemorySink(), MemoryCache()
    )
    assert second.ok == 60
    assert down.count >= 10, down.count  # its probe succeeded and it took its share again
    assert {r.status for r in down.requests} == {200}


def test_when_every_replica_rests_requests_wait_for_the_first_back(
    fake_server: Server, likert: JudgeTemplate
) -> None:
    servers = [fake_server(faults=[Fault.status_code(503, first=1)]) for _ in range(2)]
    pool = short_pool(servers)
    settings = RunSettings(concurrency=2, backoff_base=0.01, backoff_max=0.02, timeout=5.0)
    sink = MemorySink()
    summary = runner_for(pool_endpoint(*servers), pool, likert, settings).run_sync(
        items(8), sink, MemoryCache()
    )
    assert (summary.ok, summary.failed) == (8, 0)
    stats = pool.stats()
    assert [s.failures for s in stats] == [1, 1]
    assert sum(s.probes for s in stats) >= 1  # the first request after the rests was a probe
    # two items met a 503 and were answered on their second attempt, after waiting for a replica
    assert sorted(r.attempts for r in sink)[-2:] == [2, 2]


def test_an_error_of_the_request_does_not_rest_a_replica(
    fake_server: Server, likert: JudgeTemplate
) -> None:
    servers = [
        fake_server(faults=[Fault.status_code(400, match="item text 3\n")]) for _ in range(2)
    ]
    pool = short_pool(servers)
    summary = runner_for(pool_endpoint(*servers), pool, likert).run_sync(
        items(12), MemorySink(), MemoryCache()
    )
    assert (summary.ok, summary.failed) == (11, 1)
    assert [s.failures for s in pool.stats()] == [0, 0]
    assert not any(s.resting for s in pool.stats())


def test_calls_other_than_completions_go_to_the_first_replica(fake_server: Server) -> None:
    one, two = fake_server(), fake_server()
    client = make_client(pool_endpoint(one, two), timeout=5.0, pool=short_pool([one, two]))
    assert isinstance(client, PoolClient)

    async def upload() -> str:
        try:
            uploaded = await client.files.create(file=("r.jsonl", b"{}\n"), purpose="batch")
            await client.chat.completions.create(
                model="fake-judge", messages=[{"role": "user", "content": "expect=2"}]
            )
            return uploaded.id
        finally:
            await client.close()

    file_id = asyncio.run(upload())
    assert one.file_ids == [file_id]
    assert two.file_ids == []
    assert one.count + two.count == 1  # the SDK's own resources go through the pool too


def test_a_replica_with_a_capacity_queues_what_is_beyond_it(
    fake_server: Server, likert: JudgeTemplate
) -> None:
    server = fake_server(latency=0.05, capacity=2)
    settings = RunSettings(concurrency=6, backoff_base=0.01, backoff_max=0.05, timeout=5.0)
    factory = client_factory(pool_endpoint(server), timeout=5.0)  # one URL: a plain client
    runner = JudgeRunner(factory, likert, settings=settings, model="fake-judge")
    assert runner.run_sync(items(12), MemorySink(), MemoryCache()).ok == 12
    assert server.max_in_flight == 2  # six were sent at once; two at a time were served
