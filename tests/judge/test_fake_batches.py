"""The fake server's Files and Batch API, driven through the real ``openai`` client.

NOTE for the batch runner (issue 12, part 2): ``FakeOpenAI`` answers ``client.files.create/retrieve/
content/delete`` and ``client.batches.create/retrieve/cancel/list``. A batch advances only when it is
retrieved; the ``batch_polls_to_complete``-th retrieve completes it (default 1: the first). Controls
are plain attributes: ``batch_fail_ids``, ``batch_expired_ids``, ``batch_expire_after``,
``batch_fail_validation``, ``batch_max_requests``, ``batch_max_bytes``. ``fake.batch_calls("create")``
counts calls; ``fake.batch_log`` lists them; batch lines are recorded in ``fake.requests`` with
``batch_id`` set (live requests have ``batch_id=None``). Use ``record_bodies=False`` for 10⁵ lines.
"""

from __future__ import annotations

import http.client
import json
import tracemalloc
from collections.abc import Callable, Iterable
from typing import Any

import openai
import pytest
from openai import OpenAI

from evalcore.testing import FakeOpenAI, Fault, constant_reply

Server = Callable[..., FakeOpenAI]
CHAT = "/v1/chat/completions"


def request_line(custom_id: str, text: str, **body: Any) -> str:
    """One batch input line asking the chat endpoint about ``text``."""
    payload = {"model": "judge-m", "messages": [{"role": "user", "content": text}], **body}
    return json.dumps({"custom_id": custom_id, "method": "POST", "url": CHAT, "body": payload})


def batch_file(lines: Iterable[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def items(count: int) -> list[str]:
    return [request_line(f"item-{i}", f"item {i} expect={i % 5 + 1}") for i in range(count)]


def client_for(fake: FakeOpenAI) -> OpenAI:
    return OpenAI(base_url=fake.base_url, api_key="test-key", max_retries=0, timeout=30)


def submit(client: OpenAI, content: bytes, **extra: Any) -> str:
    uploaded = client.files.create(file=("requests.jsonl", content), purpose="batch")
    batch = client.batches.create(
        input_file_id=uploaded.id, endpoint=CHAT, completion_window="24h", **extra
    )
    return batch.id


def jsonl(client: OpenAI, file_id: str | None) -> list[dict[str, Any]]:
    assert file_id is not None
    return [json.loads(line) for line in client.files.content(file_id).text.splitlines()]


def test_a_batch_round_trip_answers_every_line_like_the_chat_endpoint(fake_server: Server) -> None:
    fake = fake_server()
    client = client_for(fake)
    content = batch_file(items(7))
    uploaded = client.files.create(file=("requests.jsonl", content), purpose="batch")
    assert (uploaded.purpose, uploaded.bytes, uploaded.filename) == (
        "batch",
        len(content),
        "requests.jsonl",
    )
    assert client.files.retrieve(uploaded.id).bytes == len(content)
    assert client.files.content(uploaded.id).content == content

    created = client.batches.create(
        input_file_id=uploaded.id,
        endpoint=CHAT,
        completion_window="24h",
        metadata={"run": "42"},
    )
    assert created.status == "validating"
    assert created.metadata == {"run": "42"}
    assert created.model == "judge-m"
    done = client.batches.retrieve(created.id)
    assert done.status == "completed"
    assert done.request_counts is not None
    assert (done.request_counts.total, done.request_counts.completed) == (7, 7)
    assert done.request_counts.failed == 0
    assert done.error_file_id is None
    assert done.completed_at is not None
    assert done.in_progress_at is not None

    lines = jsonl(client, done.output_file_id)
    assert [line["custom_id"] for line in lines] == [f"item-{i}" for i in range(7)]
    for i, line in enumerate(lines):
        assert line["error"] is None
        assert line["id"].startswith("batch_req_")
        assert line["response"]["status_code"] == 200
        assert line["response"]["request_id"]
        body = line["response"]["body"]
        assert body["object"] == "chat.completion"
        assert body["choices"][0]["message"]["content"].endswith(f"Score: {i % 5 + 1}")
    # every line went through the chat path and is recorded as part of the batch
    assert [r.batch_id for r in fake.requests] == [created.id] * 7
    assert (fake.batch_calls("create"), fake.batch_calls("retrieve")) == (1, 1)


def test_a_batch_line_gets_the_same_reply_as_a_live_request(fake_server: Server) -> None:
    schema = {
        "type": "json_schema",
        "json_schema": {
            "name": "grade",
            "schema": {
                "type": "object",
                "properties": {"reason": {"type": "string"}, "score": {"enum": [1, 2, 3]}},
            },
        },
    }
    fake = fake_server(constant_reply("2"))
    client = client_for(fake)
    live = client.chat.completions.create(
        model="judge-m",
        messages=[{"role": "user", "content": "grade this"}],
        response_format=schema,  # type: ignore[arg-type]
        logprobs=True,
        top_logprobs=2,
    )
    batch_id = submit(
        client,
        batch_file(
            [
                request_line(
                    "one", "grade this", response_format=schema, logprobs=True, top_logprobs=2
                )
            ]
        ),
    )
    body = jsonl(client, client.batches.retrieve(batch_id).output_file_id)[0]["response"]["body"]
    choice = body["choices"][0]
    assert choice["message"]["content"] == live.choices[0].message.content
    assert json.loads(choice["message"]["content"])["score"] == 2
    assert live.choices[0].logprobs is not None
    assert live.choices[0].logprobs.content is not None
    assert len(choice["logprobs"]["content"]) == len(live.choices[0].logprobs.content)
    assert [r.batch_id for r in fake.requests] == [None, batch_id]
    assert fake.requests[1].attempt == 2  # the same prompt, seen a second time


def test_a_batch_advances_one_share_per_retrieve(fake_server: Server) -> None:
    fake = fake_server(batch_polls_to_complete=3)
    client = client_for(fake)
    batch_id = submit(client, batch_file(items(10)))
    seen = []
    for _ in range(4):
        batch = client.batches.retrieve(batch_id)
        assert batch.request_counts is not None
        seen.append((batch.status, batch.request_counts.completed))
    # ceil(10 * 1/3) = 4, ceil(10 * 2/3) = 7, then all ten; a retrieve after the end changes nothing
    assert seen == [("in_progress", 4), ("in_progress", 7), ("completed", 10), ("completed", 10)]
    assert fake.count == 10
    assert [call.kind for call in fake.batch_log] == ["create"] + ["retrieve"] * 4
    assert fake.batch(batch_id)["status"] == "completed"
    assert fake.batch_calls("retrieve") == 4  # fake.batch() is not a retrieve


def test_failed_and_expired_requests_go_to_the_error_file(fake_server: Server) -> None:
    fake = fake_server(
        faults=[Fault.status_code(500, match="item 3 ")],
        batch_fail_ids={"item-1"},
        batch_expired_ids=["item-5"],
    )
    client = client_for(fake)
    batch = client.batches.retrieve(submit(client, batch_file(items(6))))
    assert batch.status == "completed"
    assert batch.request_counts is not None
    assert (batch.request_counts.completed, batch.request_counts.failed) == (3, 3)
    assert [x["custom_id"] for x in jsonl(client, batch.output_file_id)] == [
        "item-0",
        "item-2",
        "item-4",
    ]
    errors = {line["custom_id"]: line for line in jsonl(client, batch.error_file_id)}
    assert set(errors) == {"item-1", "item-3", "item-5"}
    assert errors["item-1"]["response"] is None
    assert errors["item-1"]["error"]["code"] == "server_error"
    assert errors["item-5"]["response"] is None
    assert errors["item-5"]["error"]["code"] == "batch_expired"
    status_line = errors["item-3"]
    assert status_line["response"]["status_code"] == 500
    assert status_line["response"]["body"]["error"]["message"] == "injected fault"
    assert status_line["error"] == {"code": "server_error", "message": "injected fault"}
    # injected batch failures never reach the chat path; the status fault did
    assert sorted(r.prompt for r in fake.requests) == [
        f"item {i} expect={i % 5 + 1}" for i in (0, 2, 3, 4)
    ]


def test_an_expired_batch_keeps_its_answered_lines(fake_server: Server) -> None:
    fake = fake_server(batch_polls_to_complete=2, batch_expire_after=3)
    client = client_for(fake)
    batch_id = submit(client, batch_file(items(8)))
    batch = client.batches.retrieve(batch_id)
    assert batch.status == "expired"
    assert batch.expired_at is not None
    assert batch.request_counts is not None
    assert (batch.request_counts.completed, batch.request_counts.failed) == (3, 5)
    assert [x["custom_id"] for x in jsonl(client, batch.output_file_id)] == [
        "item-0",
        "item-1",
        "item-2",
    ]
    expired = jsonl(client, batch.error_file_id)
    assert [x["custom_id"] for x in expired] == [f"item-{i}" for i in range(3, 8)]
    assert {x["error"]["code"] for x in expired} == {"batch_expired"}
    assert fake.count == 3


def test_a_malformed_reply_is_kept_as_text_in_an_output_line(fake_server: Server) -> None:
    fake = fake_server(faults=[Fault.malformed(match="item 0 ")])
    client = client_for(fake)
    batch = client.batches.retrieve(submit(client, batch_file(items(2))))
    lines = jsonl(client, batch.output_file_id)
    assert isinstance(lines[0]["response"]["body"], str)
    assert isinstance(lines[1]["response"]["body"], dict)


def test_cancel_answers_cancelling_then_cancelled_with_partial_output(fake_server: Server) -> None:
    fake = fake_server(batch_polls_to_complete=4)
    client = client_for(fake)
    batch_id = submit(client, batch_file(items(8)))
    assert client.batches.retrieve(batch_id).status == "in_progress"  # two of eight answered
    cancelling = client.batches.cancel(batch_id)
    assert cancelling.status == "cancelling"
    assert cancelling.cancelling_at is not None
    cancelled = client.batches.retrieve(batch_id)
    assert cancelled.status == "cancelled"
    assert cancelled.request_counts is not None
    assert (cancelled.request_counts.completed, cancelled.request_counts.total) == (2, 8)
    assert [x["custom_id"] for x in jsonl(client, cancelled.output_file_id)] == ["item-0", "item-1"]
    assert cancelled.error_file_id is None
    with pytest.raises(openai.BadRequestError, match="cancelled"):
        client.batches.cancel(batch_id)
    assert fake.batch_calls("cancel") == 2
    assert fake.count == 2


def test_a_batch_cancelled_before_any_retrieve_answers_nothing(fake_server: Server) -> None:
    fake = fake_server()
    client = client_for(fake)
    batch_id = submit(client, batch_file(items(3)))
    assert client.batches.cancel(batch_id).status == "cancelling"
    cancelled = client.batches.retrieve(batch_id)
    assert (cancelled.status, cancelled.output_file_id) == ("cancelled", None)
    assert fake.count == 0


@pytest.mark.parametrize(
    ("lines", "code", "line_number"),
    [
        ([request_line("a", "x"), request_line("a", "y")], "duplicate_custom_id", 2),
        ([request_line("a", "x"), "{not json"], "invalid_json_line", 2),
        (
            [json.dumps({"custom_id": "a", "method": "POST", "url": "/v1/embeddings", "body": {}})],
            "invalid_url",
            1,
        ),
        ([request_line("a", "x"), request_line("b", "y", model="other")], "mismatched_model", 2),
        (
            [json.dumps({"method": "POST", "url": CHAT, "body": {"model": "m"}})],
            "missing_required_parameter",
            1,
        ),
    ],
)
def test_a_file_the_provider_would_refuse_fails_validation(
    fake_server: Server, lines: list[str], code: str, line_number: int
) -> None:
    fake = fake_server()
    client = client_for(fake)
    batch = client.batches.retrieve(submit(client, batch_file(lines)))
    assert batch.status == "failed"
    assert batch.failed_at is not None
    assert batch.errors is not None
    assert batch.errors.data
    assert [(e.code, e.line) for e in batch.errors.data][:1] == [(code, line_number)]
    assert batch.output_file_id is None
    assert fake.count == 0


def test_the_request_and_size_limits_are_checked(fake_server: Server) -> None:
    fake = fake_server(batch_max_requests=3)
    client = client_for(fake)
    assert client.batches.retrieve(submit(client, batch_file(items(3)))).status == "completed"
    too_many = client.batches.retrieve(submit(client, batch_file(items(4))))
    assert too_many.errors is not None
    assert too_many.errors.data
    assert (too_many.status, too_many.errors.data[0].code) == ("failed", "too_many_requests")
    fake.batch_max_bytes = 100
    too_big = client.batches.retrieve(submit(client, batch_file(items(1))))
    assert too_big.errors is not None
    assert too_big.errors.data
    assert (too_big.status, too_big.errors.data[0].code) == ("failed", "file_too_large")


def test_injected_validation_failures_hit_only_the_next_batches(fake_server: Server) -> None:
    fake = fake_server(batch_fail_validation=1)
    client = client_for(fake)
    content = batch_file(items(2))
    first = client.batches.retrieve(submit(client, content))
    second = client.batches.retrieve(submit(client, content))
    assert (first.status, second.status) == ("failed", "completed")
    assert first.request_counts is not None
    assert first.request_counts.total == 0


def test_a_bad_create_request_is_refused_at_once(fake_server: Server) -> None:
    fake = fake_server()
    client = client_for(fake)
    uploaded = client.files.create(file=("r.jsonl", batch_file(items(1))), purpose="batch")
    with pytest.raises(openai.BadRequestError, match="completion_window"):
        client.batches.create(input_file_id=uploaded.id, endpoint=CHAT, completion_window="1h")  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError, match="embeddings"):
        client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/embeddings", completion_window="24h"
        )
    with pytest.raises(openai.NotFoundError):
        client.batches.create(input_file_id="file-none", endpoint=CHAT, completion_window="24h")
    other = client.files.create(file=("r.jsonl", batch_file(items(1))), purpose="user_data")
    with pytest.raises(openai.BadRequestError, match="purpose"):
        client.batches.create(input_file_id=other.id, endpoint=CHAT, completion_window="24h")
    with pytest.raises(openai.NotFoundError):
        client.batches.retrieve("batch_none")
    assert fake.batch_calls("create") == 0


def test_files_are_listed_and_deleted(fake_server: Server) -> None:
    fake = fake_server()
    client = client_for(fake)
    batch = client.batches.retrieve(submit(client, batch_file(items(2))))
    listed = {f.id: f.purpose for f in client.files.list()}
    assert listed[batch.output_file_id or ""] == "batch_output"
    assert sorted(listed.values()) == ["batch", "batch_output"]
    assert [f.id for f in client.files.list(purpose="batch_output")] == [batch.output_file_id]
    deleted = client.files.delete(batch.input_file_id)
    assert deleted.deleted
    with pytest.raises(openai.NotFoundError):
        client.files.retrieve(batch.input_file_id)
    with pytest.raises(openai.NotFoundError):
        client.files.content(batch.input_file_id)
    assert fake.file_ids == [batch.output_file_id]


def test_batches_are_listed_newest_first_across_pages(fake_server: Server) -> None:
    fake = fake_server()
    client = client_for(fake)
    ids = [submit(client, batch_file(items(1))) for _ in range(3)]
    page = client.batches.list(limit=2)
    assert [b.id for b in page.data] == ids[::-1][:2]
    assert page.has_more
    assert [b.id for b in client.batches.list(limit=2)] == ids[::-1]  # auto-paging follows `after`
    assert fake.batch_calls("list") == 3


def test_a_chunked_upload_is_read(fake_server: Server) -> None:
    fake = fake_server()
    content = batch_file(items(3))
    boundary = "testboundary42"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="c.jsonl"\r\n'
            "Content-Type: application/jsonl\r\n\r\n"
        ).encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    connection = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=10)
    connection.request(
        "POST",
        "/v1/files",
        body=iter([body[:50], body[50:]]),
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
        encode_chunked=True,
    )
    reply = json.loads(connection.getresponse().read())
    connection.close()
    assert (reply["filename"], reply["bytes"]) == ("c.jsonl", len(content))
    assert fake.file_text(reply["id"]).encode() == content


def test_a_large_batch_is_streamed_not_held_in_memory(fake_server: Server) -> None:
    fake = fake_server(record_bodies=False)
    client = client_for(fake)
    padding = "rubric " * 600  # about 4 KB a line: 3,000 lines make a 12 MB file
    lines = [request_line(f"n{i}", f"{padding} {i} expect=3") for i in range(3000)]
    content = batch_file(lines)
    assert len(content) > 12_000_000
    uploaded = client.files.create(file=("big.jsonl", content), purpose="batch")
    del content, lines
    tracemalloc.start()
    try:
        batch = client.batches.create(
            input_file_id=uploaded.id, endpoint=CHAT, completion_window="24h"
        )
        batch = client.batches.retrieve(batch.id)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert batch.status == "completed"
    assert batch.request_counts is not None
    assert batch.request_counts.completed == 3000
    # validation and answers read one line at a time: far less than the 12 MB file
    assert peak < 4_000_000, peak
