"""The reply cache: one key function (endpoint, model, every parameter, messages) and a SQLite file
that several processes share."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from evalcore.judge import (
    CACHE_DIR_ENV,
    JudgeItem,
    JudgeRunner,
    JudgeTemplate,
    MemoryCache,
    MemorySink,
    ModelSettings,
    SqliteCache,
    cache_key,
    default_cache_path,
    normalise_base_url,
    request_params,
)
from evalcore.testing import FakeOpenAI
from tests.judge.conftest import FAST, client_factory_for

MESSAGES = [{"role": "system", "content": "Judge."}, {"role": "user", "content": "Is it fine?"}]
URL = "http://127.0.0.1:8000/v1"


def test_the_key_ignores_how_the_base_url_is_spelt() -> None:
    key = cache_key(MESSAGES, "m", {"temperature": 0.0}, endpoint=URL)
    for spelling in ("HTTP://127.0.0.1:8000/v1/", "http://127.0.0.1:8000/v1//", " " + URL):
        assert cache_key(MESSAGES, "m", {"temperature": 0.0}, endpoint=spelling) == key
    assert normalise_base_url("https://API.Example.COM/V1/") == "https://api.example.com/V1"


@pytest.mark.parametrize(
    "change",
    [
        {"endpoint": "http://127.0.0.1:8001/v1"},
        {"endpoint": "http://127.0.0.1:8000/v2"},
        {"model": "m2"},
        {"params": {"temperature": 0.5}},
        {"params": {"temperature": 0.0, "max_tokens": 10}},
        {"params": {"temperature": 0.0, "seed": 1}},
        {"params": {"temperature": 0.0, "n": 3}},
        {"params": {"temperature": 0.0, "logprobs": True}},
        {"params": {"temperature": 0.0, "response_format": {"type": "json_object"}}},
        {"messages": [MESSAGES[0], {"role": "user", "content": "Is it fine? "}]},
    ],
)
def test_any_change_of_what_is_sent_or_where_changes_the_key(change: dict[str, object]) -> None:
    base: dict[str, object] = {
        "endpoint": URL,
        "model": "m",
        "params": {"temperature": 0.0},
        "messages": MESSAGES,
    }
    changed = {**base, **change}

    def key(parts: dict[str, object]) -> str:
        return cache_key(
            parts["messages"],  # type: ignore[arg-type]
            str(parts["model"]),
            parts["params"],  # type: ignore[arg-type]
            endpoint=str(parts["endpoint"]),
        )

    assert key(changed) != key(base)


def test_every_model_setting_reaches_the_request_parameters(likert: JudgeTemplate) -> None:
    settings = ModelSettings(
        temperature=0.3, max_tokens=20, seed=4, n=3, logprobs=True, top_logprobs=2
    )
    params = request_params(replace(likert, model=settings))
    assert params == {
        "temperature": 0.3, "max_tokens": 20, "seed": 4, "n": 3, "logprobs": True, "top_logprobs": 2
    }  # fmt: skip


def test_two_servers_with_the_same_model_name_share_no_reply(
    fake_server: Callable[..., FakeOpenAI], likert: JudgeTemplate
) -> None:
    first, second = fake_server(), fake_server()
    items = [JudgeItem(f"i{n}", {"response": f"text {n}", "gold": 3}) for n in range(4)]
    cache = MemoryCache()
    for server in (first, second):
        runner = JudgeRunner(client_factory_for(server), likert, settings=FAST, model="same")
        summary = runner.run_sync(items, MemorySink(), cache)
        assert (summary.requests, summary.cached) == (4, 0)
    assert len(cache) == 8
    again = JudgeRunner(client_factory_for(first), likert, settings=FAST, model="same")
    assert again.run_sync(items, MemorySink(), cache).cached == 4
    assert first.count == 4


def test_an_explicit_endpoint_names_the_keys(fake: FakeOpenAI, likert: JudgeTemplate) -> None:
    runner = JudgeRunner(client_factory_for(fake), likert, model="m", endpoint="HTTP://Proxy/v1/")
    assert runner.endpoint == "http://proxy/v1"
    own = JudgeRunner(client_factory_for(fake), likert, model="m")
    assert own.endpoint == normalise_base_url(fake.base_url)


def test_the_default_cache_path_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "here"))
    assert default_cache_path() == tmp_path / "here" / "replies.sqlite"
    monkeypatch.delenv(CACHE_DIR_ENV)
    assert default_cache_path().name == "replies.sqlite"
    assert "evalcore" in str(default_cache_path())


def test_puts_are_written_before_a_read_and_on_close(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = SqliteCache(path, batch=1000, max_delay=3600)
    cache.put("k1", "m", {"choices": [{"text": "a"}]})
    other = SqliteCache(path)
    assert other.get("k1") is None  # still buffered in the first process
    assert cache.get("k1") == {"choices": [{"text": "a"}]}  # a read writes the buffer first
    cache.put("k2", "m", {"choices": []})
    cache.close()
    assert other.get_many(["k1", "k2", "k3"]).keys() == {"k1", "k2"}
    other.close()


_WRITER = """
import sys
from evalcore.judge import SqliteCache
path, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
cache = SqliteCache(path, batch=7, max_delay=0.0)
for i in range(n):
    cache.put(f"{tag}-{i}", "m", {"i": i, "tag": tag})
    cache.put(f"shared-{i}", "m", {"i": i})
    if i % 25 == 0:
        cache.get_many([f"shared-{j}" for j in range(i)])
cache.close()
"""


def test_processes_sharing_one_cache_file_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    n = 300
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), tag, str(n)], stderr=subprocess.PIPE
        )
        for tag in ("a", "b", "c")
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err.decode()
    with SqliteCache(path) as cache:
        # 3 writers × 300 own keys + 300 keys all three wrote (the first write of each is kept)
        assert len(cache) == 3 * n + n
        assert cache.get("b-299") == {"i": 299, "tag": "b"}
        assert cache.get("shared-10") == {"i": 10}
