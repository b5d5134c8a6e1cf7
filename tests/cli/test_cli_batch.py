"""``evalcore judge run --batch``, ``export-batch`` and ``import-batch`` against the fake server's
Files and Batch API, through the real ``openai`` client."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalcore.cli import main
from evalcore.judge import CACHE_DIR_ENV
from evalcore.testing import FakeOpenAI
from tests.judge.test_judge_cli import TEMPLATE


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    dataset = tmp_path / "data.jsonl"
    rows = [{"id": f"r{i}", "response": f"answer {i}", "gold": 1 + i % 5} for i in range(8)]
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    template = tmp_path / "fluency.toml"
    template.write_text(TEMPLATE, encoding="utf-8")
    return {"dataset": dataset, "template": template, "out": tmp_path / "out" / "results.jsonl"}


def _judge(action: str, files: dict[str, Path], *extra: str) -> list[str]:
    return [
        "judge",
        action,
        str(files["dataset"]),
        "--template",
        str(files["template"]),
        "--model",
        "fake-judge",
        *extra,
    ]


def _rows(path: Path) -> dict[str, dict[str, Any]]:
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    return {r["item_id"]: r for r in rows}


def _same(row: dict[str, Any]) -> dict[str, Any]:
    """A result line without its latency (a batch reply has none)."""
    return {k: v for k, v in row.items() if k != "latency_s"}


def test_run_batch_end_to_end(
    fake: FakeOpenAI, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = files["out"]
    code = main(
        [
            *_judge("run", files, "--base-url", fake.base_url, "--out", str(out), "--batch"),
            "--batch-poll",
            "0",
        ]
    )
    assert code == 0
    err = capsys.readouterr().err
    assert "batch batch_fake000001: submitted, 8 requests" in err
    assert "completed, 8/8 answered" in err
    rows = _rows(out)
    assert {k: r["label"] for k, r in rows.items()} == {f"r{i}": 1 + i % 5 for i in range(8)}
    assert all(r["status"] == "ok" and not r["cached"] for r in rows.values())
    assert fake.batch_calls("create") == 1
    assert all(r.batch_id for r in fake.requests)
    assert not out.with_name("results.batches.json").exists()
    # the same command again: everything finished, no batch
    assert (
        main(_judge("run", files, "--base-url", fake.base_url, "--out", str(out), "--batch")) == 0
    )
    assert fake.batch_calls("create") == 1


def test_run_batch_retries_failures_live_or_in_a_follow_up(
    fake: FakeOpenAI, files: dict[str, Path], tmp_path: Path
) -> None:
    export = tmp_path / "requests.jsonl"
    assert (
        main(_judge("export-batch", files, "--base-url", fake.base_url, "--out", str(export))) == 0
    )
    keys = [json.loads(x)["custom_id"] for x in export.read_text().splitlines()]
    fake.batch_fail_ids = {keys[0]}
    fake.batch_expired_ids = {keys[1]}
    live_out = tmp_path / "live" / "results.jsonl"
    args = _judge("run", files, "--base-url", fake.base_url, "--batch", "--batch-poll", "0")
    assert main([*args, "--out", str(live_out), "--no-cache"]) == 0
    assert sum(1 for r in fake.requests if r.batch_id is None) == 2
    assert {r["status"] for r in _rows(live_out).values()} == {"ok"}

    fake.reset()
    fake.batch_fail_ids = {keys[0]}
    fake.batch_expired_ids = set()
    again_out = tmp_path / "follow" / "results.jsonl"
    code = main([*args, "--out", str(again_out), "--no-cache", "--batch-retry", "batch"])
    assert code == 0
    # the fake fails that request in every batch: one follow-up per allowed round, then failed
    assert fake.batch_calls("create") == 3
    assert all(r.batch_id for r in fake.requests)
    rows = _rows(again_out)
    assert [k for k, r in rows.items() if r["status"] == "failed"] == ["r0"]
    assert rows["r0"]["error"] == "the batch did not answer (server_error): injected failure"


def test_export_then_vllm_output_then_import_equals_a_live_run(
    fake: FakeOpenAI, files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    live = tmp_path / "live.jsonl"
    base = ["--base-url", fake.base_url, "--no-cache"]
    assert main(_judge("run", files, *base, "--out", str(live))) == 0
    live_rows = _rows(live)
    replies = {r["cache_key"]: r for r in live_rows.values()}

    requests = tmp_path / "requests.jsonl"
    assert main(_judge("export-batch", files, *base, "--out", str(requests))) == 0
    lines = [json.loads(x) for x in requests.read_text().splitlines()]
    assert {x["custom_id"] for x in lines} == set(replies)
    # what `vllm run-batch -i requests.jsonl -o output.jsonl` writes for each line
    output = tmp_path / "output.jsonl"
    with output.open("w", encoding="utf-8") as handle:
        for n, line in enumerate(lines):
            reply = replies[line["custom_id"]]
            body = {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion",
                "created": 1700000000,
                "model": line["body"]["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": reply["raw"],
                            "refusal": None,
                            "tool_calls": [],
                            "reasoning_content": None,
                        },
                        "logprobs": None,
                        "finish_reason": "stop",
                        "stop_reason": None,
                    }
                ],
                "usage": {
                    "prompt_tokens": reply["tokens_in"],
                    "completion_tokens": reply["tokens_out"],
                    "total_tokens": reply["tokens"],
                    "prompt_tokens_details": None,
                },
                "prompt_logprobs": None,
            }
            record = {
                "id": f"vllm-{n}",
                "custom_id": line["custom_id"],
                "response": {"status_code": 200, "request_id": f"vllm-batch-{n}", "body": body},
                "error": None,
            }
            handle.write(json.dumps(record) + "\n")
    imported = tmp_path / "imported.jsonl"
    code = main(
        _judge("import-batch", files, *base, "--responses", str(output), "--out", str(imported))
    )
    assert code == 0
    assert {k: _same(r) for k, r in _rows(imported).items()} == {
        k: _same(r) for k, r in live_rows.items()
    }
    assert "answer no request" not in capsys.readouterr().err


def test_import_names_malformed_lines_and_fails_unanswered_requests(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    requests = tmp_path / "requests.jsonl"
    assert main(_judge("export-batch", files, "--out", str(requests), "--no-cache")) == 0
    lines = [json.loads(x) for x in requests.read_text().splitlines()]
    ok = {
        "custom_id": lines[0]["custom_id"],
        "response": {
            "status_code": 200,
            "body": {"choices": [{"index": 0, "message": {"content": "Score: 5"}}]},
        },
        "error": None,
    }
    refused = {
        "custom_id": lines[1]["custom_id"],
        "response": {"status_code": 400, "request_id": "x", "body": None},
        "error": "the prompt is too long",
    }
    output = tmp_path / "output.jsonl"
    output.write_text(
        json.dumps(ok) + "\n{not json\n" + json.dumps(refused) + '\n{"custom_id": 3}\n'
    )
    errors = tmp_path / "errors.jsonl"
    errors.write_text('{"custom_id": "unknown", "response": null, "error": {"code": "x"}}\n')
    out = tmp_path / "results.jsonl"
    args = _judge("import-batch", files, "--no-cache", "--out", str(out))
    code = main([*args, "--responses", str(output), "--responses", str(errors)])
    assert code == 0
    err = capsys.readouterr().err
    assert f"skipped {output} line 2: not JSON" in err
    assert f"skipped {output} line 4: no custom_id" in err
    assert "1 lines of the output answer no request of this run" in err
    rows = _rows(out)
    assert rows["r0"]["label"] == 5
    assert rows["r1"]["error"] == "HTTP 400: the prompt is too long"
    assert {rows[f"r{i}"]["error"] for i in range(2, 8)} == {
        "no reply for this request in the batch output"
    }


def test_export_splits_into_numbered_files(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "requests.jsonl"
    code = main(_judge("export-batch", files, "--out", str(out), "--batch-max-requests", "3"))
    assert code == 0
    names = sorted(p.name for p in tmp_path.glob("requests*.jsonl"))
    assert names == ["requests-001.jsonl", "requests-002.jsonl", "requests-003.jsonl"]
    counts = [len((tmp_path / n).read_text().splitlines()) for n in names]
    assert counts == [3, 3, 2]


def test_estimate_with_the_batch_price(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_judge("estimate", files, "--batch")) == 0
    assert "batch price not set" in capsys.readouterr().out
    assert main(_judge("estimate", files, "--batch", "--batch-price", "1,2")) == 0
    assert "at the batch price" in capsys.readouterr().out


def test_a_killed_batch_run_resumes_without_a_second_batch(
    fake: FakeOpenAI, files: dict[str, Path], tmp_path: Path
) -> None:
    """SIGKILL while the batch is being polled; the same command resumes it by its id."""
    fake.batch_polls_to_complete = 1_000_000  # the batch stays in progress while the first runs
    out = files["out"]
    command = [
        sys.executable,
        "-c",
        "import sys; from evalcore.cli import main; sys.exit(main(sys.argv[1:]))",
        *_judge("run", files, "--base-url", fake.base_url, "--out", str(out), "--batch"),
        "--batch-poll",
        "0.05",
    ]
    env = {**os.environ, CACHE_DIR_ENV: str(tmp_path / "cache")}
    first = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    state = out.with_name("results.batches.json")
    deadline = time.monotonic() + 60
    try:
        while fake.batch_calls("retrieve") < 2:
            assert first.poll() is None, first.stderr.read() if first.stderr else ""
            assert time.monotonic() < deadline, "the batch was never polled"
            time.sleep(0.02)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
        if first.stderr:
            first.stderr.close()
    assert json.loads(state.read_text())["batches"][0]["batch_id"] == "batch_fake000001"
    fake.batch_polls_to_complete = 1
    second = subprocess.run(
        [*command[:-1], "0"], env=env, capture_output=True, text=True, timeout=120
    )
    assert second.returncode == 0, second.stderr
    assert fake.batch_calls("create") == 1
    assert len(_rows(out)) == 8
