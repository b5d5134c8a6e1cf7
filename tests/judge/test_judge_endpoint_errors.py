"""Endpoint errors are summarised: status, error type, a short message; no body of a non-JSON reply.

Before the fix the text of an HTML error page (say, an internal page behind a wrong base URL) was
copied whole into every failed result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from evalcore.judge import JudgeItem, JudgeRunner, JudgeTemplate, MemorySink, RunSettings
from evalcore.judge._requests import MAX_ERROR_CHARS
from evalcore.testing import FakeOpenAI, Fault

Server = Callable[..., FakeOpenAI]
Runner = Callable[..., JudgeRunner]
SETTINGS = RunSettings(concurrency=2, max_attempts=2, backoff_base=0.001, backoff_max=0.005)
PAGE = "<html><body><h1>Admin console</h1>" + "<p>internal row 42: secret-value</p>" * 200


def _one_failure(server: FakeOpenAI, make_runner: Runner, template: JudgeTemplate) -> str:
    sink = MemorySink()
    make_runner(server, template, SETTINGS).run_sync(
        [JudgeItem("only", {"response": "text", "gold": 3})], sink
    )
    (result,) = sink
    assert result.status == "failed"
    assert not result.raw
    return result.error


def test_an_html_error_page_is_named_not_copied(
    fake_server: Server, make_runner: Runner, likert: JudgeTemplate
) -> None:
    server = fake_server(faults=[Fault.status_code(502, body=PAGE)])
    error = _one_failure(server, make_runner, likert)
    assert (
        error == f"HTTP 502: the reply is not JSON (text/html, {len(PAGE)} characters, not shown)"
    )
    assert "secret-value" not in error
    assert "Admin" not in error


def test_a_plain_text_client_error_is_not_copied(
    fake_server: Server, make_runner: Runner, likert: JudgeTemplate
) -> None:
    server = fake_server(
        faults=[
            Fault.status_code(405, body="Method Not Allowed: secret", content_type="text/plain")
        ]
    )
    error = _one_failure(server, make_runner, likert)
    assert error.startswith("HTTP 405: the reply is not JSON (text/plain, ")
    assert "secret" not in error


def test_a_200_page_that_is_not_json_is_not_copied(
    fake_server: Server, make_runner: Runner, likert: JudgeTemplate
) -> None:
    server = fake_server(
        faults=[Fault.status_code(200, body=PAGE)]  # an internal page that answers any POST
    )
    error = _one_failure(server, make_runner, likert)
    assert "secret-value" not in error
    assert "not a JSON object" in error


def test_a_long_json_error_message_is_cut_and_keeps_its_type(
    fake_server: Server, make_runner: Runner, likert: JudgeTemplate
) -> None:
    server = fake_server(faults=[Fault.status_code(400, message="context too long. " * 100)])
    error = _one_failure(server, make_runner, likert)
    head = "HTTP 400 (invalid_request_error): context too long."
    assert error.startswith(head)
    assert len(error) <= len("HTTP 400 (invalid_request_error): ") + MAX_ERROR_CHARS
    assert error.endswith("…")


def test_the_api_key_is_redacted_from_an_error_message(
    fake_server: Server, likert: JudgeTemplate
) -> None:
    from openai import AsyncOpenAI

    key = "sk-very-secret-key"
    server = fake_server(faults=[Fault.status_code(400, message=f"bad key {key} given")])
    runner = JudgeRunner(
        lambda: AsyncOpenAI(base_url=server.base_url, api_key=key, max_retries=0),
        replace(likert),
        settings=SETTINGS,
        model="fake-judge",
    )
    sink = MemorySink()
    runner.run_sync([JudgeItem("only", {"response": "text", "gold": 3})], sink)
    (result,) = sink
    assert key not in result.error
    assert "***" in result.error
