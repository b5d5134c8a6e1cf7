"""Fuzzing what the judge reads: replies, and batch output files in the OpenAI and vLLM shapes.

- **Replies.** Generated replies are made of prose, scoring keywords, labels on and off the
  scale, JSON objects whose fields hold hostile values (deeply nested ones included), code
  fences, and long runs of one character, on five scales with every parser. ``parse_reply`` must
  never raise, must say ``ok`` with a label of the scale or ``unparsed`` with a reason, and the
  JSON objects it reads must be no deeper than the limit.
- **Batch and vLLM output.** Generated output files answer three real requests of a run (and
  some unknown ids) with lines that are right, odd (statuses, bodies, errors, usage of every
  type, NaN and 1e308 token counts) or broken (deep nesting, damaged bytes, not JSON). Reading
  must never raise; every reply kept must be a payload the cache can store (token counts in
  reason, a cost that is a price, shallow); then the normal runner imports them as
  ``judge import-batch`` does and every item ends ``ok``, ``unparsed`` or ``failed``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalcore.judge import (
    BatchOutput,
    BatchReplies,
    JudgeItem,
    JudgeRunner,
    JudgeTemplate,
    MemorySink,
    RunSettings,
    parse_reply,
)
from evalcore.judge._parse import find_json_objects
from evalcore.labels import LIKERT_5, PAIRWISE, PASS_FAIL, Scale
from evalcore.limits import MAX_JSON_DEPTH, MAX_TOKEN_COUNT, value_depth
from tests.fuzz.harness import (
    DEEP_JSON,
    HOSTILE,
    JSON_VALUES,
    Hang,
    Raw,
    damaged,
    dumps,
    fuzz_settings,
    hang_guard,
    never_raises,
    numbers,
    scalars,
    tricky_text,
    write_json,
)

SCALES = [
    LIKERT_5,
    PAIRWISE,
    PASS_FAIL,
    Scale(("low", "medium", "high"), "ordinal"),
    Scale(tuple(float(n) for n in range(11)), "ordinal"),
]
KEYS = ["score", "rating", "label", "verdict", "choice", "answer", "reason", "explanation", "x"]
WORDS = [
    "Score:",
    "Rating",
    "final score",
    "Verdict:",
    "[[A]]",
    "[[B]]",
    "[[C]]",
    "tie",
    "pass",
    "FAIL",
    "out of 5",
    "/10",
    "I cannot",
    "```",
    "```json",
    "{",
    "}",
    '"score":',
    "\n",
]


@st.composite
def json_objects(draw: st.DrawFn) -> str:
    """A JSON object as a judge might write one, its fields sometimes hostile."""
    fields = draw(
        st.dictionaries(
            st.sampled_from(KEYS) | tricky_text,
            st.one_of(scalars, st.sampled_from(["A", "B", "TIE", "pass", "4", "high"])) | HOSTILE,
            max_size=4,
        )
    )
    text = write_json(fields, indent=draw(st.sampled_from([None, 2])))
    return f"```json\n{text}\n```" if draw(st.booleans()) else text


pieces = st.one_of(
    st.sampled_from(WORDS),
    tricky_text,
    numbers.map(str),
    json_objects(),
    DEEP_JSON,
    st.builds(
        lambda c, n: c * n,
        st.sampled_from([" ", "{", "[", "`", "1", "score "]),
        st.integers(1, 5_000),
    ),
)
replies = st.lists(pieces, max_size=8).map(" ".join) | st.none()


@fuzz_settings(ci=150)
@given(
    text=replies,
    scale=st.sampled_from(SCALES),
    parser=st.sampled_from(["auto", "json", "text"]),
    label_field=st.sampled_from(["score", "label", "verdict", "odd key"]),
)
def test_fuzz_reply_parser(text: str | None, scale: Scale, parser: str, label_field: str) -> None:
    parsed = never_raises(
        "reply parser",
        lambda: parse_reply(text, scale, label_field=label_field, parser=parser),  # type: ignore[arg-type]
    )
    if parsed.status == "ok":
        assert parsed.label in scale.labels
    else:
        assert parsed.status == "unparsed"
        assert parsed.error
    if parsed.span is not None:
        start, end = parsed.span
        assert 0 <= start <= end <= len(text or "")
    objects = never_raises("reply parser", lambda: find_json_objects(text or ""))
    assert all(value_depth(o) <= MAX_JSON_DEPTH for o in objects)


# --- batch and vLLM output ------------------------------------------------------------------------

TEMPLATE = JudgeTemplate(
    "fluency", "fluency", LIKERT_5, "", "Rate the answer from 1 to 5.\n{{ response }}"
)
REPLIES = BatchReplies(None, base_url="http://127.0.0.1:9/v1")
RUNNER = JudgeRunner(
    REPLIES, TEMPLATE, model="fake-judge", settings=RunSettings(), prices={"fake-judge": (1, 2)}
)
ITEMS = RUNNER.prepare([JudgeItem(f"i{n}", {"response": f"answer {n}"}) for n in range(3)])
KEYS_OF_RUN = [r.custom_id for r in RUNNER.batch_requests(ITEMS)]

token_values = st.one_of(
    st.integers(0, 1000),
    numbers,
    st.sampled_from([None, "12", True, [3], {"n": 1}, MAX_TOKEN_COUNT, MAX_TOKEN_COUNT + 1]),
)


LOGPROBS = (
    st.fixed_dictionaries(
        {
            "content": st.lists(
                st.fixed_dictionaries(
                    {
                        "token": tricky_text | HOSTILE,
                        "logprob": numbers | scalars,
                        "top_logprobs": st.lists(
                            st.fixed_dictionaries(
                                {"token": tricky_text, "logprob": numbers | scalars}
                            ),
                            max_size=3,
                        ),
                    }
                ),
                max_size=3,
            )
        }
    )
    | HOSTILE
)
USAGE = (
    st.fixed_dictionaries({"prompt_tokens": token_values, "completion_tokens": token_values})
    | st.none()
    | HOSTILE
)
REPLY_TEXT = st.sampled_from(["Score: 4", '{"score": 2}', "", "[[A]]"]) | tricky_text
FINISH = st.sampled_from(["stop", "length", None]) | HOSTILE
MODEL = st.sampled_from(["fake-judge", "other"]) | HOSTILE
INDEX = st.integers(0, 2) | scalars


@st.composite
def bodies(draw: st.DrawFn, vllm: bool) -> Any:
    """A chat-completions body: right, odd in any field, or something else entirely."""
    if draw(st.integers(0, 9)) == 0:
        return draw(HOSTILE)
    message: dict[str, Any] = {"role": "assistant", "content": draw(REPLY_TEXT)}
    if draw(st.booleans()):
        message["content"] = draw(HOSTILE)
    choice: dict[str, Any] = {"index": draw(INDEX), "message": message}
    choice["finish_reason"] = draw(FINISH)
    if draw(st.booleans()):
        choice["logprobs"] = draw(LOGPROBS)
    count = draw(st.integers(0, 3))
    body: dict[str, Any] = {
        "id": "chatcmpl-x",
        "choices": [choice] * min(count, 2) if count < 3 else draw(HOSTILE),
        "model": draw(MODEL),
        "usage": draw(USAGE),
    }
    if vllm:
        body["object"] = "chat.completion"
        body["prompt_logprobs"] = None
    return body


ERRORS = (
    st.fixed_dictionaries({"code": tricky_text, "message": tricky_text}) | tricky_text | HOSTILE
)
CUSTOM_IDS = st.sampled_from(KEYS_OF_RUN) | st.sampled_from(["", "x"]) | scalars
STATUSES = st.sampled_from([200, 200, 200, 400, 500, None]) | scalars
OTHER_LINES = DEEP_JSON | tricky_text | JSON_VALUES.map(dumps)


@st.composite
def output_lines(draw: st.DrawFn, vllm: bool) -> str:
    """One line of a batch output or error file."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(OTHER_LINES)
    response: Any = {"status_code": draw(STATUSES), "body": draw(bodies(vllm))}
    if vllm:
        response["request_id"] = "vllm-batch-1"
    error: Any = None
    if kind == 1:
        error = draw(ERRORS)
        if draw(st.booleans()):
            response = None
    if kind == 2:
        response = draw(HOSTILE)
    record = {
        "id": "vllm-1" if vllm else "batch_req_1",
        "custom_id": draw(CUSTOM_IDS),
        "response": response,
        "error": error,
    }
    return write_json(record)


LINES = {shape: st.lists(output_lines(shape == "vllm"), max_size=6) for shape in ("openai", "vllm")}


def _check_payload(payload: dict[str, Any]) -> None:
    """A reply kept from a batch file is one the reply cache can store and a run can price."""
    assert 0 <= payload["tokens_in"] <= MAX_TOKEN_COUNT
    assert 0 <= payload["tokens_out"] <= MAX_TOKEN_COUNT
    cost = payload["cost"]
    assert cost is None or (cost >= 0 and cost < 1e6)
    assert isinstance(payload["model"], str)
    for choice in payload["choices"]:
        assert isinstance(choice["text"], str)
        assert choice["finish_reason"] is None or isinstance(choice["finish_reason"], str)
    assert value_depth(payload) <= 6
    json.dumps(payload)


@pytest.mark.parametrize("shape", ["openai", "vllm"])
@fuzz_settings(ci=60)
@given(data=st.data())
def test_fuzz_batch_output(shape: str, data: st.DataObject) -> None:
    vllm = shape == "vllm"
    lines = data.draw(LINES[shape])
    content = "\n".join(lines).encode("utf-8", "surrogatepass")
    if data.draw(st.integers(0, 4)) == 0:
        content = data.draw(damaged(content))
    target = "vLLM output" if vllm else "batch output"
    output = BatchOutput(RUNNER.model, {"fake-judge": (1.0, 2.0)})
    never_raises(target, lambda: output.read(content.splitlines(keepends=True), name="out.jsonl"))
    for payload in output.replies.values():
        _check_payload(payload)
    assert all(isinstance(e, str) and e for e in output.errors.values())
    # the import, as judge import-batch makes it: every item ends with one result
    REPLIES.replies, REPLIES.errors = output.replies, output.errors
    sink = MemorySink()
    summary = never_raises(f"{target} import", lambda: RUNNER.run_sync(ITEMS, sink))
    assert summary.ok + summary.unparsed + summary.failed == len(ITEMS)
    for result in sink.results.values():
        assert result.status in ("ok", "unparsed", "failed")
        assert result.status != "failed" or result.error
        json.dumps(result.to_dict())


def test_raw_values_reach_the_output_as_written() -> None:
    # the generators' own check: a Raw fragment is written as its text, not as a string
    line = write_json({"a": Raw("[" * 3 + "]" * 3)})
    assert line == '{"a": [[[]]]}'


def test_the_hang_guard_stops_an_endless_loop() -> None:
    # the guard the fuzz tests rely on: a case that never ends is stopped, not waited for
    def endless() -> None:
        with hang_guard(cpu_seconds=0.05):
            while True:
                pass

    with pytest.raises(Hang, match="processor time"):
        endless()
