"""Batch files and batch runs (:mod:`evalcore.judge._batch`), through the real ``openai`` client
against :class:`evalcore.testing.FakeOpenAI`'s Files and Batch API."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalcore.errors import ConfigError
from evalcore.judge import (
    BATCH_URL,
    BatchOptions,
    BatchOutput,
    BatchReplies,
    JsonBatchLedger,
    JudgeItem,
    JudgeRunner,
    JudgeTemplate,
    MemoryCache,
    MemorySink,
    RunSettings,
    RunSummary,
    run_batch,
    write_batch_files,
)
from evalcore.judge.builtins import MetricRunner
from evalcore.testing import FakeOpenAI

from .conftest import FAST, client_factory_for

ItemsFactory = Callable[..., list[JudgeItem]]


def _batch_runner(
    server: FakeOpenAI, template: JudgeTemplate, *, live: bool = False, **kwargs: Any
) -> tuple[JudgeRunner, BatchReplies]:
    replies = BatchReplies(client_factory_for(server))
    replies.live = live
    return JudgeRunner(replies, template, settings=FAST, model="fake-judge", **kwargs), replies


def _run(
    runner: JudgeRunner,
    replies: BatchReplies,
    items: list[JudgeItem],
    tmp_path: Path,
    *,
    sink: MemorySink | None = None,
    cache: MemoryCache | None = None,
    notify: Callable[[str], None] | None = None,
    **options: Any,
) -> tuple[RunSummary, MemorySink]:
    sink = sink if sink is not None else MemorySink()
    ledger = JsonBatchLedger(tmp_path / "state.json", {"run": "test"})
    options.setdefault("poll_s", 0.0)
    summary = asyncio.run(
        run_batch(
            runner,
            items,
            sink,
            cache,
            replies=replies,
            ledger=ledger,
            options=BatchOptions(work_dir=tmp_path / "files", **options),
            notify=notify,
        )
    )
    return summary, sink


def _labels(sink: MemorySink) -> dict[str, object]:
    return {r.item_id: r.label for r in sink}


# --- planning and files ----------------------------------------------------------------------------


def test_batch_requests_are_the_live_bodies_keyed_by_cache_key(
    fake: FakeOpenAI, likert: JudgeTemplate, make_items: ItemsFactory
) -> None:
    items = [*make_items(4), JudgeItem("dup", {"response": "text 0", "gold": 1})]
    runner, _ = _batch_runner(fake, likert)
    requests = list(runner.batch_requests(items))
    # item-0 and "dup" render the same messages: one request
    assert len(requests) == 4
    live = JudgeRunner(client_factory_for(fake), likert, settings=FAST, model="fake-judge")
    sink = MemorySink()
    live.run_sync(items, sink)
    keys = {r.cache_key for r in sink}
    assert {r.custom_id for r in requests} == keys
    sent = {json.dumps(r.body, sort_keys=True) for r in fake.requests}
    assert {json.dumps(dict(r.body), sort_keys=True) for r in requests} == sent


def test_batch_requests_skip_the_cache_and_the_finished(
    fake: FakeOpenAI, likert: JudgeTemplate, make_items: ItemsFactory
) -> None:
    items = make_items(6)
    runner, _ = _batch_runner(fake, likert)
    keys = [r.custom_id for r in runner.batch_requests(items)]
    cache = MemoryCache()
    cache.put(keys[0], "fake-judge", {"choices": [{"text": "Score: 1"}]})
    sink = MemorySink()
    live = JudgeRunner(client_factory_for(fake), likert, settings=FAST, model="fake-judge")
    live.run_sync(items[5:], sink)
    left = [r.custom_id for r in runner.batch_requests(items, cache, sink)]
    assert left == keys[1:5]


def test_samples_by_requests_gives_one_line_per_sample(
    fake: FakeOpenAI, likert: JudgeTemplate, make_items: ItemsFactory
) -> None:
    from dataclasses import replace

    sampled = replace(likert, model=replace(likert.model, n=3, temperature=0.7))
    replies = BatchReplies(client_factory_for(fake))
    runner = JudgeRunner(
        replies, sampled, settings=RunSettings(samples_by="requests"), model="fake-judge"
    )
    requests = list(runner.batch_requests(make_items(2)))
    assert len(requests) == 6
    assert len({r.custom_id for r in requests}) == 6
    assert all("n" not in r.body for r in requests)


def test_pipeline_metrics_cannot_be_batched(fake: FakeOpenAI) -> None:
    runner = MetricRunner("factual_correctness", client_factory_for(fake), model="fake-judge")
    item = JudgeItem("1", {"response": "Paris.", "reference": "Paris."})
    with pytest.raises(ConfigError, match="cannot be sent as a batch"):
        runner.batch_requests([item])


def test_files_split_at_the_request_and_byte_limits(
    fake: FakeOpenAI, likert: JudgeTemplate, make_items: ItemsFactory, tmp_path: Path
) -> None:
    runner, _ = _batch_runner(fake, likert)
    requests = list(runner.batch_requests(make_items(7)))
    files = write_batch_files(requests, tmp_path / "requests.jsonl", max_requests=3)
    assert [f.path.name for f in files] == [
        "requests-001.jsonl",
        "requests-002.jsonl",
        "requests-003.jsonl",
    ]
    assert [f.requests for f in files] == [3, 3, 1]
    lines = [json.loads(x) for f in files for x in f.path.read_text().splitlines()]
    assert [x["custom_id"] for x in lines] == [r.custom_id for r in requests]
    assert {(x["method"], x["url"]) for x in lines} == {("POST", BATCH_URL)}
    one = len(requests[0].line().encode()) + 1
    by_size = write_batch_files(requests, tmp_path / "sized.jsonl", max_bytes=2 * one + 10)
    assert [f.requests for f in by_size] == [2, 2, 2, 1]
    assert all(f.bytes <= 2 * one + 10 for f in by_size)
    single = write_batch_files(requests, tmp_path / "one.jsonl")
    assert [f.path.name for f in single] == ["one.jsonl"]
    assert write_batch_files([], tmp_path / "none.jsonl") == []


def test_a_request_larger_than_a_file_is_refused(
    fake: FakeOpenAI, likert: JudgeTemplate, make_items: ItemsFactory, tmp_path: Path
) -> None:
    runner, _ = _batch_runner(fake, likert)
    with pytest.raises(ConfigError, match="more than a batch file may hold"):
        write_batch_files(runner.batch_requests(make_items(1)), tmp_path / "r.jsonl", max_bytes=50)


# --- reading output files --------------------------------------------------------------------------


def _chat(text: str) -> dict[str, Any]:
    return {
        "choices": [{"index": 0, "message": {"content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 4},
    }


def test_output_lines_of_openai_and_vllm_shapes(tmp_path: Path) -> None:
    lines = [
        # OpenAI output file
        {"id": "r1", "custom_id": "a", "response": {"status_code": 200, "body": _chat("Score: 4")}},
        # OpenAI error file: expired, failed
        {
            "custom_id": "b",
            "response": None,
            "error": {"code": "batch_expired", "message": "not run before the window ended"},
        },
        {
            "custom_id": "c",
            "response": {
                "status_code": 500,
                "body": {"error": {"message": "boom", "type": "server_error"}},
            },
            "error": None,
        },
        # vLLM: an error string and a 400 without a body
        {
            "id": "vllm-1",
            "custom_id": "d",
            "response": {"status_code": 400, "request_id": "x", "body": None},
            "error": "prompt too long",
        },
        # vLLM: a success with its extra fields
        {
            "id": "vllm-2",
            "custom_id": "e",
            "response": {
                "status_code": 200,
                "request_id": "y",
                "body": {
                    **_chat("Score: 2"),
                    "object": "chat.completion",
                    "prompt_logprobs": None,
                },
            },
            "error": None,
        },
    ]
    path = tmp_path / "out.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    output = BatchOutput("m", {"m": (1.0, 2.0)})
    assert output.read(path) == 5
    assert set(output.replies) == {"a", "e"}
    assert output.replies["a"]["choices"][0]["text"] == "Score: 4"
    # 10 tokens in at $1/M + 4 out at $2/M
    assert output.replies["a"]["cost"] == pytest.approx(10e-6 + 8e-6)
    assert output.errors == {
        "b": "the batch did not answer (batch_expired): not run before the window ended",
        "c": "HTTP 500 (server_error): boom",
        "d": "HTTP 400: prompt too long",
    }
    assert output.problems == []


def test_malformed_lines_are_named_by_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    good = json.dumps({"custom_id": "a", "response": {"status_code": 200, "body": _chat("x")}})
    no_choices = json.dumps({"custom_id": "z", "response": {"status_code": 200, "body": {}}})
    path.write_text(
        f'{good}\n{{"custom_id": "b", "resp\n[1, 2]\n\n{{"response": {{}}}}\n{no_choices}\n',
        encoding="utf-8",
    )
    output = BatchOutput("m")
    output.read(path)
    assert set(output.replies) == {"a"}
    assert output.problems == [
        f"{path} line 2: not JSON (Unterminated string starting at)",
        f"{path} line 3: not a JSON object",
        f"{path} line 5: no custom_id",
    ]
    assert output.errors["z"] == (
        f"{path} line 6: malformed response body: the response has no 'choices' list"
    )
    # no price for the model: no cost
    assert output.replies["a"]["cost"] is None


def test_a_later_success_wins_over_an_earlier_error() -> None:
    output = BatchOutput("m")
    failed = {"custom_id": "a", "response": None, "error": {"code": "x", "message": "no"}}
    output.read([json.dumps(failed)])
    output.read(
        [json.dumps({"custom_id": "a", "response": {"status_code": 200, "body": _chat("y")}})]
    )
    output.read([json.dumps(failed)])
    assert set(output.replies) == {"a"}
    assert output.errors == {}


# --- batch runs against the fake --------------------------------------------------------------------


def test_a_batch_run_gives_the_results_of_a_live_run(
    fake: FakeOpenAI, likert: JudgeTemplate, make_items: ItemsFactory, tmp_path: Path
) -> None:
    items = make_items(10)
    server = fake
    live = MemorySink()
    JudgeRunner(client_factory_for(server), likert, settings=FAST, model="fake-judge").run_sync(
        items, live
    )
    server.reset()
    runner, replies = _batch_runner(server, likert)
    cache = MemoryCache()
    summary, sink = _run(runner, replies, items, tmp_path, cache=cache)
    assert (summary.ok, summary.failed, summary.cached, summary.requests) == (10, 0, 0, 10)
    assert server.batch_calls("create") == 1
    assert all(r.batch_id for r in server.requests)
    # the same results, but for the latency (a batch reply has none)
    assert {r.item_id: {**r.to_dict(), "latency_s": 0} for r in sink} == {
        r.item_id: {**r.to_dict(), "latency_s": 0} for r in live
    }
    assert len(cache) == 10
    # the state file is gone once the replies are imported; the files were removed after upload
    assert not (tmp_path / "state.json").exists()
    assert list((tmp_path / "files").iterdir()) == []
    # nothing left to do: a second run sends nothing
    again, _ = _run(runner, replies, items, tmp_path, sink=sink, cache=cache)
    assert (again.skipped, again.requests, server.batch_calls("create")) == (10, 0, 1)


def test_failed_and_expired_requests_are_retried_live(
    fake: FakeOpenAI, likert: JudgeTemplate, make_items: ItemsFactory, tmp_path: Path
) -> None:
    items = make_items(8)
    runner, replies = _batch_runner(fake, likert, live=True)
    keys = [r.custom_id for r in runner.batch_requests(items)]
    fake.batch_fail_ids = {keys[1]}
    fake.batch_expired_ids = {keys[2], keys[3]}
    summary, sink = _run(runner, replies, items, tmp_path, retry="live")
    assert (summary.ok, summary.failed) == (8, 0)
    live = [r for r in fake.requests if r.batch_id is None]
    assert len(live) == 3
    assert _labels(sink) == {i.item_id: float(i.fields["gold"]) for i in items}


def test_failed_requests_go_into_a_follow_up_batch(
    fake: FakeOpenAI, likert: JudgeTemplate, make_items: ItemsFactory, tmp_path: Path
) -> None:
    items = make_items(6)
    runner, replies = _batch_runner(fake, likert)
    fake.batch_expire_after = 4  # the first batch answers 4 lines, the rest expire
    messages: list[str] = []

    def expire_once(message: str) -> None:
        messages.append(message)
        if "expired" in message:
            fake.batch_expire_after = None

    summary, _ = _run(runner, replies, items, tmp_path, retry="batch", notify=expire_once)
    assert (summary.ok, summary.failed) == (6, 0)
    assert fake.batch_calls("create") == 2
    assert all(r.batch_id for r in fake.requests)
    assert any("follow-up batch" in m for m in messages)


def test_without_retry_unanswered_requests_fail_with_the_providers_error(
    fake: FakeOpenAI, likert: JudgeTemplate, make_items: ItemsFactory, tmp_path: Path
) -> None:
    items = make_items(4)
    runner, replies = _batch_runner(fake, likert, live=True)
    keys = [r.custom_id for r in runner.batch_requests(items)]
    fake.batch_expired_ids = {keys[0]}
    summary, sink = _run(runner, replies, items, tmp_path, retry="none")
    assert (summary.ok, summary.failed) == (3, 1)
    failed = next(r for r in sink if r.status == "failed")
    assert failed.item_id == items[0].item_id
    assert failed.error.startswith("the batch did not answer (batch_expired)")
    assert all(r.batch_id for r in fake.requests)
    # the next run asks again for the failed item only, in a new batch
    fake.batch_expired_ids = ()
    again, _ = _run(runner, replies, items, tmp_path, sink=sink, retry="none")
    assert (again.ok, again.skipped, fake.batch_calls("create")) == (1, 3, 2)


def test_a_restart_mid_poll_resumes_by_batch_id(
    fake: FakeOpenAI, likert: JudgeTemplate, make_items: ItemsFactory, tmp_path: Path
) -> None:
    items = make_items(5)
    fake.batch_polls_to_complete = 3

    class Crash(Exception):
        pass

    def crash_in_progress(message: str) -> None:
        if "in_progress" in message:
            raise Crash(message)

    runner, replies = _batch_runner(fake, likert)
    with pytest.raises(Crash):
        _run(runner, replies, items, tmp_path, notify=crash_in_progress)
    state = json.loads((tmp_path / "state.json").read_text())
    assert [b["batch_id"] for b in state["batches"]] == ["batch_fake000001"]
    runner, replies = _batch_runner(fake, likert)
    summary, _ = _run(runner, replies, items, tmp_path)
    assert summary.ok == 5
    assert fake.batch_calls("create") == 1
    assert fake.batch_calls("retrieve") == 3


def test_an_upload_without_its_batch_id_finds_the_batch(
    fake: FakeOpenAI, likert: JudgeTemplate, make_items: ItemsFactory, tmp_path: Path
) -> None:
    """A crash between ``batches.create`` and saving its id: the restart finds the batch by its
    input file instead of creating a second one."""
    items = make_items(3)
    runner, replies = _batch_runner(fake, likert)
    fake.batch_polls_to_complete = 2

    class Crash(Exception):
        pass

    def crash_on_submit(message: str) -> None:
        if "submitted" in message:
            raise Crash(message)

    with pytest.raises(Crash):
        _run(runner, replies, items, tmp_path, notify=crash_on_submit)
    path = tmp_path / "state.json"
    state = json.loads(path.read_text())
    state["batches"][0]["batch_id"] = ""  # as if the process died before saving it
    path.write_text(json.dumps(state))
    runner, replies = _batch_runner(fake, likert)
    summary, _ = _run(runner, replies, items, tmp_path)
    assert summary.ok == 3
    assert fake.batch_calls("create") == 1


def test_a_cancel_cancels_the_batches_and_keeps_what_came_back(
    fake: FakeOpenAI, likert: JudgeTemplate, make_items: ItemsFactory, tmp_path: Path
) -> None:
    items = make_items(10)
    fake.batch_polls_to_complete = 2  # the first retrieve answers half of the lines
    sink = MemorySink()

    def cancel_when_half_done(message: str) -> None:
        if "in_progress" in message:
            sink.cancel()

    runner, replies = _batch_runner(fake, likert, live=True)
    summary, _ = _run(runner, replies, items, tmp_path, sink=sink, notify=cancel_when_half_done)
    assert summary.cancelled
    assert fake.batch_calls("cancel") == 1
    assert 0 < len(sink) < 10
    assert all(r.status == "ok" for r in sink)
    assert all(r.batch_id for r in fake.requests)  # nothing was sent live


def test_a_failed_batch_names_its_reason(
    fake: FakeOpenAI, likert: JudgeTemplate, make_items: ItemsFactory, tmp_path: Path
) -> None:
    fake.batch_fail_validation = 1
    runner, replies = _batch_runner(fake, likert)
    summary, sink = _run(runner, replies, make_items(2), tmp_path, retry="none")
    assert summary.failed == 2
    assert all("ended failed" in r.error for r in sink)


def test_a_state_file_of_another_run_is_refused(
    fake: FakeOpenAI, likert: JudgeTemplate, make_items: ItemsFactory, tmp_path: Path
) -> None:
    JsonBatchLedger(tmp_path / "state.json", {"run": "other"}).save([])
    runner, replies = _batch_runner(fake, likert)
    with pytest.raises(ConfigError, match="batches of another run"):
        _run(runner, replies, make_items(2), tmp_path)
