"""Hostile live replies: the same bounds as batch files, through the real client and runner.

A live endpoint (:class:`FakeOpenAI`, answering with a raw body) that reports token counts out of
reason fails that item at once, without retrying (the count would be the same); one whose body is
nested 100,000 levels deep is a malformed reply, retried like any other, never a
``RecursionError`` out of the run.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from evalcore.judge import (
    JudgeItem,
    JudgeResult,
    JudgeRunner,
    JudgeTemplate,
    MemorySink,
    RunSettings,
)
from evalcore.limits import MAX_TOKEN_COUNT
from evalcore.testing import FakeOpenAI, Fault

from .conftest import client_factory_for

SETTINGS = RunSettings(concurrency=1, backoff_base=0.01, backoff_max=0.02, max_attempts=3)


def _body(usage: object) -> str:
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "fake-judge",
            "choices": [{"index": 0, "message": {"content": "Score: 3"}, "finish_reason": "stop"}],
            "usage": usage,
        },
        allow_nan=True,
    )


def _run(server: FakeOpenAI, template: JudgeTemplate) -> dict[str, JudgeResult]:
    runner = JudgeRunner(
        client_factory_for(server), template, settings=SETTINGS, model="fake-judge"
    )
    items = [JudgeItem(f"i{n}", {"response": f"text {n}", "gold": 2}) for n in range(2)]
    sink = MemorySink()
    runner.run_sync(items, sink)
    return {r.item_id: r for r in sink.results.values()}


@pytest.mark.parametrize(
    ("usage", "shown"),
    [
        ({"prompt_tokens": -3, "completion_tokens": 1}, "-3"),
        ({"prompt_tokens": 1e308, "completion_tokens": 1}, "1e+308"),
        ({"prompt_tokens": float("inf"), "completion_tokens": 1}, "inf"),
        ({"prompt_tokens": 1, "completion_tokens": MAX_TOKEN_COUNT + 1}, f"{MAX_TOKEN_COUNT + 1}"),
    ],
    ids=["negative", "1e308", "Infinity", "over-the-ceiling"],
)
def test_a_live_reply_with_token_counts_out_of_reason_fails_once(
    fake_server: Callable[..., FakeOpenAI], likert: JudgeTemplate, usage: object, shown: str
) -> None:
    body = _body(usage)
    server = fake_server(
        faults=[
            Fault.status_code(200, body=body, match="text 0\n", content_type="application/json")
        ]
    )
    results = _run(server, likert)
    failed = results["i0"]
    assert failed.status == "failed"
    assert "should be a whole number from 0 to 100,000,000, not " + shown in failed.error
    assert failed.attempts == 1
    assert len(server.requests_matching("text 0\n")) == 1  # not asked again
    assert results["i1"].status == "ok"


def test_a_live_reply_nested_beyond_reason_is_a_malformed_reply(
    fake_server: Callable[..., FakeOpenAI], likert: JudgeTemplate
) -> None:
    deep = '{"choices": ' + "[" * 100_000 + "]" * 100_000 + "}"
    server = fake_server(
        faults=[
            Fault.status_code(200, body=deep, match="text 0\n", content_type="application/json")
        ]
    )
    results = _run(server, likert)
    failed = results["i0"]
    assert failed.status == "failed"
    assert failed.error == "malformed response body: nested too deeply to read"
    assert failed.attempts == SETTINGS.max_attempts
    assert results["i1"].status == "ok"
