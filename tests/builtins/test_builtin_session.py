"""``JudgeRunner.session``: single requests through the runner's own path (cache, retries,
accounting), the primitive multi-step metrics are built on."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace

import pytest

from evalcore.errors import JudgeError
from evalcore.judge import CallReply, JudgeRunner, JudgeTemplate, MemoryCache, RunSettings
from evalcore.labels import PASS_FAIL
from evalcore.testing import FakeOpenAI, Fault
from tests.builtins.helpers import FAST, client_for

TEMPLATE = JudgeTemplate("carrier", "c", PASS_FAIL, "", "{{ x }}")
HELLO = [{"role": "user", "content": "hello"}]


def _calls(
    server: FakeOpenAI,
    batches: list[list[dict[str, str]]],
    cache: MemoryCache | None = None,
    settings: RunSettings = FAST,
    **params: object,
) -> tuple[list[CallReply], int]:
    runner = JudgeRunner(client_for(server), TEMPLATE, settings=settings, model="m")

    async def go() -> tuple[list[CallReply], int]:
        async with runner.session(cache) as session:
            replies = [
                await session.call(m, params=params or None, item_id=f"i{n}")
                for n, m in enumerate(batches)
            ]
            return replies, session.requests

    return asyncio.run(go())


def test_a_call_returns_the_text_and_its_accounting(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    fake = fake_server('{"ok": true}')
    (reply,), requests = _calls(fake, [HELLO])
    assert (reply.status, reply.text, reply.cached, reply.attempts) == (
        "ok",
        '{"ok": true}',
        False,
        1,
    )
    assert reply.tokens_in > 0
    assert reply.tokens_out > 0
    assert reply.finish_reason == "stop"
    assert requests == 1
    assert fake.requests[0].body["temperature"] == 0.0  # the template's settings by default


def test_the_same_request_twice_is_sent_once_and_a_cache_answers_later_sessions(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    fake = fake_server("x")
    cache = MemoryCache()
    replies, requests = _calls(fake, [HELLO, HELLO], cache)
    assert [r.cached for r in replies] == [False, True]
    assert (requests, fake.count) == (1, 1)
    replies, requests = _calls(fake, [HELLO], cache)
    assert (replies[0].cached, replies[0].text, requests, fake.count) == (True, "x", 0, 1)


def test_params_are_the_callers_and_part_of_the_cache_key(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    fake = fake_server("{}")
    cache = MemoryCache()
    _calls(fake, [HELLO], cache, response_format={"type": "json_object"}, temperature=0.0)
    assert fake.requests[0].body["response_format"] == {"type": "json_object"}
    _calls(fake, [HELLO], cache, temperature=0.5)
    assert fake.count == 2  # other parameters, another request


def test_retries_and_failures_go_through_the_runner(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    fake = fake_server(
        "fine",
        faults=[
            Fault.status_code(429, retry_after=0, first=1, match="retry me"),
            Fault.status_code(400, match="refuse me"),
        ],
    )
    replies, requests = _calls(
        fake,
        [[{"role": "user", "content": "retry me"}], [{"role": "user", "content": "refuse me"}]],
    )
    assert (replies[0].status, replies[0].attempts, replies[0].text) == ("ok", 2, "fine")
    assert replies[1].status == "failed"
    assert replies[1].error.startswith("HTTP 400")
    assert requests == 3


def test_an_endpoint_that_refuses_raises_on_leaving_the_session(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    fake = fake_server("x", faults=[Fault.status_code(401)])
    with pytest.raises(JudgeError, match="the endpoint refused the run: HTTP 401"):
        _calls(fake, [HELLO, [{"role": "user", "content": "next"}]])
    assert fake.count == 1  # the second call is not sent


def test_a_replicate_session_sends_its_calls_again_and_then_reads_its_own_cache(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    # multi-step metrics call through sessions: their keys carry the replicate number too
    fake = fake_server('{"ok": true}')
    cache = MemoryCache()
    _calls(fake, [HELLO], cache)
    assert fake.count == 1
    (copy,), _ = _calls(fake, [HELLO], cache)
    assert (copy.cached, fake.count) == (True, 1)
    second = replace(FAST, replicate=1)
    (fresh,), requests = _calls(fake, [HELLO], cache, second)
    assert (fresh.cached, requests, fake.count) == (False, 1, 2)
    (resumed,), requests = _calls(fake, [HELLO], cache, second)
    assert (resumed.cached, requests, fake.count) == (True, 0, 2)
    assert len(cache) == 2
