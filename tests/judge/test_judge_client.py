"""Endpoints, API keys (never leaked), prices, and the fake server itself."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from openai import AsyncAzureOpenAI, AsyncOpenAI

from evalcore.errors import ConfigError, JudgeError
from evalcore.judge import (
    NO_KEY,
    Endpoint,
    JsonlSink,
    JudgeItem,
    JudgeRunner,
    JudgeTemplate,
    RunSettings,
    SqliteCache,
    client_factory,
    estimate_cost,
    key_refusal,
    make_client,
    resolve_api_key,
)
from evalcore.testing import FakeOpenAI, Fault

SECRET = "sk-test-Zq81nVx3Lr0pWmA7cEe2yTu5"


@pytest.mark.parametrize(
    "value", [SECRET, "sk_live_abc", "Bearer abc", "AIzaSyD4f9XkQmZr2Tt8Yy1Uu3Ii5Oo7Pp9", "a b"]
)
def test_endpoint_refuses_a_key_where_a_variable_name_belongs(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        Endpoint("e", base_url="https://example.org/v1", api_key_env=value)
    assert value not in str(info.value)
    assert "NAME" in str(info.value)


def test_endpoint_accepts_names_and_hides_header_values() -> None:
    endpoint = Endpoint(
        "e",
        base_url="https://example.org/v1",
        api_key_env="MY_JUDGE_KEY",
        headers={"X-Team": "secret-team-token"},
    )
    assert endpoint.headers == (("X-Team", "secret-team-token"),)
    assert "secret-team-token" not in repr(endpoint)
    assert "X-Team" in repr(endpoint)
    Endpoint("s", base_url="http://localhost:1/v1", api_key_env="judge.api_key")  # a nested secret


def test_endpoint_validates_its_fields() -> None:
    with pytest.raises(ConfigError, match="http"):
        Endpoint("e", base_url="example.org")
    with pytest.raises(ConfigError, match="api_version"):
        Endpoint("e", base_url="https://x.openai.azure.com", kind="azure")


def test_resolve_api_key_from_environment_then_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = Endpoint("e", base_url="https://example.org/v1", api_key_env="EVALCORE_TEST_KEY")
    monkeypatch.delenv("EVALCORE_TEST_KEY", raising=False)
    assert resolve_api_key(endpoint, {"EVALCORE_TEST_KEY": "from-secrets"}) == "from-secrets"
    monkeypatch.setenv("EVALCORE_TEST_KEY", "from-env")
    assert resolve_api_key(endpoint, {"EVALCORE_TEST_KEY": "from-secrets"}) == "from-env"
    nested = Endpoint("n", base_url="https://example.org/v1", api_key_env="judge.key")
    assert resolve_api_key(nested, {"judge": {"key": "nested"}}) == "nested"
    local = Endpoint("l", base_url="http://127.0.0.1:1/v1", api_key_env=None)
    assert resolve_api_key(local) == NO_KEY


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALCORE_ABSENT_KEY", raising=False)
    endpoint = Endpoint("e", base_url="https://example.org/v1", api_key_env="EVALCORE_ABSENT_KEY")
    with pytest.raises(JudgeError, match="EVALCORE_ABSENT_KEY"):
        resolve_api_key(endpoint, {})
    with pytest.raises(JudgeError, match="EVALCORE_ABSENT_KEY"):
        client_factory(endpoint)


@pytest.mark.parametrize(
    ("base_url", "kind"),
    [
        ("https://api.openai.com/v1", "openai"),
        ("https://team.openai.azure.com/", "azure"),
        ("https://gateway.internal/v1", "azure"),  # every Azure endpoint needs a key
        ("https://openrouter.ai/api/v1", "openai"),
    ],
)
def test_an_endpoint_with_no_key_where_its_host_needs_one_is_refused_before_any_request(
    base_url: str, kind: str
) -> None:
    endpoint = Endpoint(
        "hosted", base_url=base_url, kind=kind, api_key_env=None, api_version="2024-06-01"
    )  # type: ignore[arg-type]
    refusal = key_refusal(endpoint)
    assert refusal is not None
    assert "names no API key variable" in str(refusal)
    with pytest.raises(JudgeError, match="names no API key variable"):
        client_factory(endpoint)  # what a try and a run build first
    for url in (
        "http://127.0.0.1:11434/v1",
        "http://vllm.lan:8000/v1",
        "https://api.openai.com.evil/v1",
    ):
        local = Endpoint("self-hosted", base_url=url, api_key_env=None)
        assert key_refusal(local) is None
        assert resolve_api_key(local) == NO_KEY


def test_make_client_builds_openai_and_azure_clients_without_sdk_retries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EVALCORE_TEST_KEY", SECRET)
    plain = make_client(
        Endpoint("o", base_url="http://127.0.0.1:9/v1", api_key_env="EVALCORE_TEST_KEY"), timeout=3
    )
    azure = make_client(
        Endpoint(
            "a",
            kind="azure",
            base_url="https://example.openai.azure.com",
            api_key_env="EVALCORE_TEST_KEY",
            api_version="2024-10-21",
        )
    )
    assert isinstance(plain, AsyncOpenAI)
    assert plain.max_retries == 0
    assert isinstance(azure, AsyncAzureOpenAI)
    assert azure.max_retries == 0
    assert SECRET not in repr(plain)
    assert SECRET not in repr(azure)


def test_api_key_never_leaks(
    fake_server: Callable[..., FakeOpenAI],
    likert: JudgeTemplate,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The server even echoes the key in an error message; evalcore must redact it.
    server = fake_server(
        faults=[
            Fault.status_code(400, match="text 1\n", message=f"bad request for key {SECRET}"),
            Fault.status_code(500, match="text 2\n", first=1),
        ]
    )
    monkeypatch.setenv("EVALCORE_TEST_KEY", SECRET)
    endpoint = Endpoint("fake", base_url=server.base_url, api_key_env="EVALCORE_TEST_KEY")
    caplog.set_level(logging.DEBUG)
    runner = JudgeRunner(
        client_factory(endpoint, timeout=5),
        likert,
        model="fake-judge",
        settings=RunSettings(backoff_base=0.01),
    )
    items = [JudgeItem(str(i), {"response": f"text {i}", "gold": 3}) for i in range(4)]
    out, cache_path = tmp_path / "out.jsonl", tmp_path / "cache.sqlite"
    with JsonlSink(out) as sink, SqliteCache(cache_path) as cache:
        summary = runner.run_sync(items, sink, cache)
        results = sink.results()
    assert summary.failed == 1
    assert summary.ok == 3
    failed = next(r for r in results if r.status == "failed")
    assert "***" in failed.error
    places = {
        "log": caplog.text,
        "results": json.dumps([r.to_dict() for r in results]),
        "output file": out.read_text(),
        "cache file": cache_path.read_bytes().decode("latin-1"),
        "endpoint repr": repr(endpoint),
        "runner": repr(runner.__dict__),
    }
    for place, text in places.items():
        assert SECRET not in text, place


def test_prices() -> None:
    # 1,000 in at $2.50/M + 500 out at $10/M = 0.0025 + 0.005
    assert estimate_cost("gpt-4o", 1000, 500) == pytest.approx(0.0075)
    assert estimate_cost("gpt-4o-2024-08-06", 1000, 500) == pytest.approx(0.0075)  # dated snapshot
    assert estimate_cost("gpt-4o-mini-2024-07-18", 1_000_000, 0) == pytest.approx(0.15)
    assert estimate_cost("mine", 10, 10, {"mine": (1.0, 1.0)}) == pytest.approx(20 / 1e6)
    assert estimate_cost("unknown-model", 10, 10) is None


# --- the fake server ---------------------------------------------------------------------------------


def test_fake_server_sustains_32_concurrent_slow_requests(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    server = fake_server(latency=0.8)

    async def burst() -> list[str]:
        client = AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0, timeout=10)
        try:
            replies = await asyncio.gather(
                *(
                    client.chat.completions.create(
                        model="m",
                        messages=[{"role": "user", "content": f"expect={1 + i % 5} #{i}"}],
                    )
                    for i in range(32)
                )
            )
        finally:
            await client.close()
        return [r.choices[0].message.content or "" for r in replies]

    texts = asyncio.run(burst())
    assert [t.rsplit(" ", 1)[-1] for t in texts] == [str(1 + i % 5) for i in range(32)]
    assert server.max_in_flight == 32  # all 32 were being served at once


def test_fake_server_speaks_the_chat_completions_api(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    server = fake_server()

    async def call() -> tuple[object, object]:
        client = AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        try:
            models = await client.models.list()
            reply = await client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": "expect=2,5"}],
                n=2,
                logprobs=True,
                top_logprobs=3,
            )
        finally:
            await client.close()
        return models, reply

    models, reply = asyncio.run(call())
    assert [m.id for m in models.data] == ["fake-judge"]  # type: ignore[attr-defined]
    assert [c.message.content.rsplit(" ", 1)[-1] for c in reply.choices] == ["2", "5"]  # type: ignore[attr-defined,union-attr]
    assert reply.usage.prompt_tokens > 0  # type: ignore[attr-defined]
    label = reply.choices[0].logprobs.content[-1]  # type: ignore[attr-defined]
    assert label.token == "2"
    assert {t.token for t in label.top_logprobs} == {"1", "2", "3"}


def test_fake_server_faults_by_predicate(fake_server: Callable[..., FakeOpenAI]) -> None:
    server = fake_server(faults=[Fault.status_code(418, when=lambda body: body.get("seed") == 1)])

    async def call(seed: int) -> int:
        client = AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        try:
            await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], seed=seed
            )
        except Exception as exc:
            return int(getattr(exc, "status_code", 0))
        finally:
            await client.close()
        return 200

    assert asyncio.run(call(0)) == 200
    assert asyncio.run(call(1)) == 418
    assert [r.status for r in server.requests] == [200, 418]


def test_fake_server_runs_as_a_process() -> None:
    import subprocess
    import sys
    import urllib.request

    proc = subprocess.Popen(
        [sys.executable, "-m", "evalcore.testing.fake_openai", "--port", "0", "--latency", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline().split()
        assert ready[0] == "READY"
        assert ready[1].startswith("http://127.0.0.1:")
        with urllib.request.urlopen(ready[1] + "/models", timeout=10) as response:
            assert json.load(response)["data"][0]["id"] == "fake-judge"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert "Warning" not in err
