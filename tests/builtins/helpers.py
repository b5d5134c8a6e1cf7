"""Helpers of the built-in metric tests: a reply router for the fake server, clients, items."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from openai import AsyncOpenAI

from evalcore.judge import JudgeItem, JudgeResult, MemorySink, RunSettings
from evalcore.testing import FakeOpenAI

#: Fast retries, a few milliseconds of backoff; no test asserts a wall-clock time.
FAST = RunSettings(concurrency=4, backoff_base=0.01, backoff_max=0.05, timeout=5.0)

Reply = Callable[[dict[str, Any]], Any]


def system_text(request: Mapping[str, Any]) -> str:
    messages = request.get("messages") or []
    return str(messages[0]["content"]) if messages and messages[0]["role"] == "system" else ""


def user_text(request: Mapping[str, Any]) -> str:
    return str(request["messages"][-1]["content"])


def route(rules: Mapping[str, Reply | Any]) -> Reply:
    """A reply rule for the fake server: the first key of ``rules`` found in the request's system
    message decides the reply (a callable of the request, or a value; dicts are sent as JSON)."""

    def reply(request: dict[str, Any]) -> Any:
        system = system_text(request)
        for key, rule in rules.items():
            if key in system:
                value = rule(request) if callable(rule) else rule
                return json.dumps(value) if isinstance(value, dict) else value
        return "no rule matches this request"

    return reply


def client_for(server: FakeOpenAI) -> Callable[[], AsyncOpenAI]:
    return lambda: AsyncOpenAI(
        base_url=server.base_url, api_key="test-key", max_retries=0, timeout=10
    )


def by_id(sink: MemorySink) -> dict[str, JudgeResult]:
    """Results of a pointwise run by item id."""
    return {item_id: result for (item_id, _), result in sink.results.items()}


def items_of(frame: Any) -> list[JudgeItem]:
    """JudgeItems from an items table of :func:`evalcore.data.load_file` (empty cells left out)."""
    out = []
    for row in frame.to_dict("records"):
        fields = {k: v for k, v in row.items() if k != "item_id" and isinstance(v, str | list)}
        out.append(JudgeItem(str(row["item_id"]), fields))
    return out
