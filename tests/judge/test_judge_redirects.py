"""Redirects: an endpoint's request is followed only within its own scheme, host and port.

The hole (issue 19): the ``openai`` client follows redirects, and a 307 repeats the POST with its
body, so an allowed endpoint host could pass every prompt on to any host. Each test runs a real
judge run (or single calls) through the real ``openai`` client against :class:`FakeOpenAI`, one
fake answering with a redirect to a second fake on another port of 127.0.0.1; the second fake's
request count says whether anything reached it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from evalcore.judge import (
    REDIRECT_REFUSED,
    Endpoint,
    JudgeItem,
    JudgeResult,
    JudgeRunner,
    JudgeTemplate,
    MemoryCache,
    MemorySink,
    RedirectRefusedError,
    ReplicaPool,
    RunSettings,
    client_factory,
    make_client,
    same_origin_client,
)
from evalcore.testing import FakeOpenAI, Fault

Server = Callable[..., FakeOpenAI]
SETTINGS = RunSettings(concurrency=2, backoff_base=0.01, backoff_max=0.05, timeout=5.0)


def run(
    endpoint: Endpoint, template: JudgeTemplate, count: int, **kwargs: object
) -> list[JudgeResult]:
    factory = client_factory(endpoint, timeout=5.0, **kwargs)  # type: ignore[arg-type]
    runner = JudgeRunner(factory, template, settings=SETTINGS, model="fake-judge")
    items = [JudgeItem(f"i{n}", {"response": f"text {n}", "gold": 1 + n % 5}) for n in range(count)]
    sink = MemorySink()
    runner.run_sync(items, sink, MemoryCache())
    return sorted(sink.results.values(), key=lambda r: r.item_id)


@pytest.mark.parametrize("status", [307, 308, 302, 301])
def test_a_redirect_to_another_server_is_refused_and_nothing_reaches_it(
    fake_server: Server, likert: JudgeTemplate, status: int
) -> None:
    elsewhere = fake_server()
    endpoint_server = fake_server(
        faults=[Fault.redirect(f"{elsewhere.base_url}/chat/completions", status=status)]
    )
    endpoint = Endpoint("judge", base_url=endpoint_server.base_url, api_key_env=None)
    results = run(endpoint, likert, 3)
    assert [r.status for r in results] == ["failed"] * 3
    assert elsewhere.count == 0  # no prompt reached the other host
    # one request per item: a refused redirect is not retried
    assert [r.status for r in endpoint_server.requests] == [status] * 3
    error = results[0].error
    assert f"HTTP {status} ({REDIRECT_REFUSED})" in error
    assert f"127.0.0.1:{elsewhere.port}" in error
    assert f"127.0.0.1:{endpoint_server.port}" in error


def test_another_host_name_on_the_same_port_is_another_host(
    fake_server: Server, likert: JudgeTemplate
) -> None:
    # localhost and 127.0.0.1 reach the same socket, but the origin differs: refused all the same
    server = fake_server()
    server.faults = (Fault.redirect(f"http://localhost:{server.port}/v1/chat/completions"),)
    endpoint = Endpoint("judge", base_url=server.base_url, api_key_env=None)
    results = run(endpoint, likert, 1)
    assert results[0].status == "failed"
    assert REDIRECT_REFUSED in results[0].error
    assert server.count == 1  # the redirect was not followed to "localhost"


def test_a_redirect_within_the_endpoint_is_followed(
    fake_server: Server, likert: JudgeTemplate
) -> None:
    # only the first path redirects: a followed request never meets the fault again, whichever
    # order the two items' requests arrive in
    server = fake_server(faults=[Fault.redirect("/v2/chat/completions", path="/v1/")])
    endpoint = Endpoint("judge", base_url=server.base_url, api_key_env=None)
    results = run(endpoint, likert, 2)
    assert [r.status for r in results] == ["ok", "ok"]
    assert sorted(r.path for r in server.requests) == [
        "/v1/chat/completions",
        "/v1/chat/completions",
        "/v2/chat/completions",
        "/v2/chat/completions",
    ]
    # the 307 repeated the body: the followed requests carry the same prompts
    by_path = {
        p: sorted(r.prompt for r in server.requests if r.path.startswith(p)) for p in ("/v1", "/v2")
    }
    assert by_path["/v1"] == by_path["/v2"]


def test_a_pool_replica_cannot_redirect_elsewhere_either(
    fake_server: Server, likert: JudgeTemplate
) -> None:
    elsewhere = fake_server()
    honest = fake_server()
    hostile = fake_server(faults=[Fault.redirect(f"{elsewhere.base_url}/chat/completions")])
    endpoint = Endpoint("pool", base_url=f"{honest.base_url}\n{hostile.base_url}", api_key_env=None)
    pool = ReplicaPool(endpoint.base_urls, rest_base=0.01, rest_max=0.02)
    results = run(endpoint, likert, 6, pool=pool)
    assert elsewhere.count == 0
    refused = [r for r in results if r.status == "failed"]
    assert len(refused) == hostile.count > 0
    assert all(REDIRECT_REFUSED in r.error for r in refused)
    # a refused redirect is the request's failure, not the replica's: it is not rested
    assert all(s.failures == 0 for s in pool.stats())


def test_every_client_refuses_even_with_a_client_of_ones_own(fake_server: Server) -> None:
    import openai

    elsewhere = fake_server()
    server = fake_server(faults=[Fault.redirect(f"{elsewhere.base_url}/chat/completions")])
    mine = openai.DefaultAsyncHttpxClient()
    endpoint = Endpoint("judge", base_url=server.base_url, api_key_env=None)
    client = make_client(endpoint, http_client=mine)
    assert same_origin_client(mine) is mine  # the rule is added once, to the client given

    async def call() -> None:
        try:
            await client.chat.completions.create(
                model="fake-judge", messages=[{"role": "user", "content": "hello"}]
            )
        finally:
            await client.close()

    with pytest.raises(RedirectRefusedError) as caught:
        asyncio.run(call())
    assert caught.value.status_code == 307
    assert elsewhere.count == 0
