"""Hostile batch and vLLM output files: each case of issue 19 reproduced, through the real import.

A run's requests are written as batch requests (their ``custom_id`` is the cache key), an output
file answers them in the OpenAI or the vLLM shape with one hostile line among honest ones, and the
replies go through :class:`BatchOutput` and a :class:`BatchReplies` run of the normal runner, as
``evalcore judge import-batch`` does. The hostile request ends ``failed`` with a reason naming the
file and the line; every other request is imported as if the line were not there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalcore.judge import (
    BatchOutput,
    BatchReplies,
    JudgeItem,
    JudgeResult,
    JudgeRunner,
    JudgeTemplate,
    MemorySink,
)
from evalcore.limits import MAX_JSON_DEPTH, MAX_TOKEN_COUNT

from .conftest import FAST

PRICE = {"fake-judge": (1.0, 2.0)}


def _items() -> list[JudgeItem]:
    return [JudgeItem(f"i{n}", {"response": f"text {n}", "gold": 1 + n}) for n in range(3)]


def _line(custom_id: str, usage: Any, *, vllm: bool = False, text: str = "Score: 3") -> str:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "choices": [{"index": 0, "message": {"content": text}, "finish_reason": "stop"}],
        "usage": usage,
    }
    response: dict[str, Any] = {"status_code": 200, "body": body}
    record: dict[str, Any] = {"id": "batch_req_1", "custom_id": custom_id, "response": response}
    if vllm:
        record["id"] = "vllm-abc"
        response["request_id"] = "vllm-batch-abc"
        body["object"] = "chat.completion"
        body["prompt_logprobs"] = None
        record["error"] = None
    # allow_nan: the hostile values include Infinity and NaN, which Python's json writes and reads
    return json.dumps(record, allow_nan=True)


def _import(
    template: JudgeTemplate, tmp_path: Path, hostile: Any, *, vllm: bool = False
) -> tuple[BatchOutput, dict[str, JudgeResult], Path, str]:
    """Answer the three requests, the second with ``hostile`` as its usage (or as its whole line
    when it is a string), and import; returns the output, the results by item and the file."""
    replies = BatchReplies(None, base_url="http://127.0.0.1:9/v1")
    runner = JudgeRunner(replies, template, settings=FAST, model="fake-judge", prices=PRICE)
    items = runner.prepare(_items())
    keys = [r.custom_id for r in runner.batch_requests(items)]
    honest = {"prompt_tokens": 10, "completion_tokens": 4}
    lines = [
        _line(keys[0], honest, vllm=vllm),
        hostile if isinstance(hostile, str) else _line(keys[1], hostile, vllm=vllm),
        _line(keys[2], honest, vllm=vllm),
    ]
    path = tmp_path / ("vllm-output.jsonl" if vllm else "output.jsonl")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    output = BatchOutput(runner.model, PRICE)
    assert output.read(path) == 3
    replies.replies, replies.errors = output.replies, output.errors
    sink = MemorySink()
    runner.run_sync(items, sink)
    return output, {r.item_id: r for r in sink.results.values()}, path, keys[1]


def _honest_ones_imported(results: dict[str, JudgeResult]) -> None:
    for item in ("i0", "i2"):
        assert results[item].status == "ok"
        assert (results[item].tokens_in, results[item].tokens_out) == (10, 4)
        # 10 tokens in at $1/M + 4 out at $2/M
        assert results[item].cost == pytest.approx(10e-6 + 8e-6)


BAD_COUNTS = [
    pytest.param(-5, "-5", id="negative"),
    pytest.param(1e308, "1e+308", id="1e308"),
    pytest.param(float("inf"), "inf", id="Infinity"),
    pytest.param(float("nan"), "nan", id="NaN"),
    pytest.param(MAX_TOKEN_COUNT + 1, f"{MAX_TOKEN_COUNT + 1}", id="over-the-ceiling"),
    pytest.param(10**40, "a number of more than 30 digits", id="40-digit"),
    pytest.param(12.5, "12.5", id="fraction"),
    pytest.param("12", "the text '12'", id="text"),
    pytest.param(True, "true", id="boolean"),
    pytest.param([12], "a list", id="list"),
]


@pytest.mark.parametrize("vllm", [False, True], ids=["openai", "vllm"])
@pytest.mark.parametrize(("count", "shown"), BAD_COUNTS)
def test_a_token_count_out_of_reason_fails_that_request_naming_file_and_line(
    likert: JudgeTemplate, tmp_path: Path, count: Any, shown: str, vllm: bool
) -> None:
    output, results, path, key = _import(
        likert, tmp_path, {"prompt_tokens": count, "completion_tokens": 4}, vllm=vllm
    )
    expected = (
        f"{path} line 2: malformed response body: usage.prompt_tokens should be a whole number "
        f"from 0 to {MAX_TOKEN_COUNT:,}, not {shown}"
    )
    assert output.errors == {key: expected}
    assert results["i1"].status == "failed"
    assert results["i1"].error == expected
    assert results["i1"].cost is None
    assert results["i1"].tokens_in == 0
    _honest_ones_imported(results)


def test_completion_tokens_are_checked_too_and_whole_floats_and_gaps_pass(
    likert: JudgeTemplate, tmp_path: Path
) -> None:
    output, results, _, key = _import(
        likert, tmp_path, {"prompt_tokens": 10, "completion_tokens": -1}
    )
    assert "usage.completion_tokens should be a whole number" in output.errors[key]
    # 7.0 is a whole number; a server that reports no usage costs 0 tokens
    for usage, tokens in (({"prompt_tokens": 7.0, "completion_tokens": 1}, (7, 1)), (None, (0, 0))):
        output, results, _, _ = _import(likert, tmp_path, usage)
        assert output.errors == {}
        assert (results["i1"].tokens_in, results["i1"].tokens_out) == tokens


@pytest.mark.parametrize("vllm", [False, True], ids=["openai", "vllm"])
@pytest.mark.parametrize(
    "line",
    [
        pytest.param("[" * 100_000, id="100k-brackets"),
        pytest.param('{"custom_id": "x", "response": ' + '{"a": ' * 50_000, id="50k-objects"),
        pytest.param(
            '{"custom_id": "x", "response": {"status_code": 200, "body": '
            + "[" * (MAX_JSON_DEPTH + 1)
            + "]" * (MAX_JSON_DEPTH + 1)
            + "}}",
            id="one-over-the-limit",
        ),
    ],
)
def test_deep_nesting_is_a_line_problem_not_a_recursion_error(
    likert: JudgeTemplate, tmp_path: Path, line: str, vllm: bool
) -> None:
    output, results, path, _ = _import(likert, tmp_path, line, vllm=vllm)
    assert output.problems == [
        f"{path} line 2: nested deeper than {MAX_JSON_DEPTH} levels of arrays and objects"
    ]
    # the request of the unreadable line has no reply: it fails as one the batch did not answer
    assert results["i1"].status == "failed"
    assert results["i1"].error == "no reply for this request in the batch output"
    _honest_ones_imported(results)


def test_nesting_at_the_limit_is_read(tmp_path: Path) -> None:
    # the line object is level 1, "response" 2, "body" 3: the filler takes the rest to the limit
    filler = "[" * (MAX_JSON_DEPTH - 3) + "]" * (MAX_JSON_DEPTH - 3)
    line = (
        '{"custom_id": "a", "response": {"status_code": 200, "body": {"choices": [], "x": '
        + filler
        + "}}}"
    )
    output = BatchOutput("m")
    output.read([line])
    assert output.problems == []
    assert output.replies["a"]["choices"] == []


def test_a_deeply_nested_field_of_a_reply_is_not_kept(tmp_path: Path) -> None:
    # finish_reason, refusal and model are text or nothing: a structure there is dropped, so the
    # payload the cache keeps is as shallow as the format's
    deep: Any = [[[[["x"]]]]]
    body = {
        "model": deep,
        "choices": [
            {"index": 0, "message": {"content": "Score: 1", "refusal": deep}, "finish_reason": deep}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    }
    output = BatchOutput("m")
    output.read([json.dumps({"custom_id": "a", "response": {"status_code": 200, "body": body}})])
    payload = output.replies["a"]
    assert payload["model"] == "m"
    assert payload["choices"][0]["finish_reason"] is None
    assert payload["choices"][0]["refusal"] is None


def test_a_deeply_nested_batch_state_file_is_a_config_error(tmp_path: Path) -> None:
    from evalcore.errors import ConfigError
    from evalcore.judge import JsonBatchLedger

    state = tmp_path / "out.batches.json"
    state.write_text('{"identity": {}, "batches": ' + "[" * 100_000, encoding="utf-8")
    with pytest.raises(ConfigError, match="cannot read the batch state"):
        JsonBatchLedger(state, {}).load()
