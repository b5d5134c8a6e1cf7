"""``evalcore judge optimize`` as a real process against the scripted fake judge and optimiser."""

from __future__ import annotations

import csv
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

from evalcore.judge import CACHE_DIR_ENV, JudgeTemplate
from evalcore.testing import FakeOpenAI, OptimizerMode, Scripted, truth_marker

ROOT = Path(__file__).resolve().parents[2]
OPTIMIZER = "fake-optimizer"

TEMPLATE = """\
name = "grounded"
criterion = "groundedness"
scale = ["pass", "fail"]
system = "You check whether a reply sticks to its source."
user = '''
Reply:
{{ response }}

Answer with JSON only: {"reason": "<one sentence>", "label": "pass" or "fail"}
'''
"""


def _fake(*modes: OptimizerMode) -> FakeOpenAI:
    # "pass" is judged well already, "fail" only half the time unless a rule or an example helps
    rule = Scripted(
        base={"pass": 0.9, "fail": 0.5},
        optimizer_model=OPTIMIZER,
        optimizer_modes=modes or ("rules",),
    )
    return FakeOpenAI(rule)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    dataset = tmp_path / "labels.csv"
    with dataset.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "response", "human", "note"])
        for i in range(150):
            label = "fail" if i % 2 else "pass"
            item_id = f"c{i:03d}"
            writer.writerow(
                [item_id, f"Reply {i}. {truth_marker(item_id, label)}", label, f"note {i}"]
            )
    template = tmp_path / "grounded.toml"
    template.write_text(TEMPLATE, encoding="utf-8")
    return {"dataset": dataset, "template": template, "out": tmp_path / "out"}


def _command(files: dict[str, Path], fake: FakeOpenAI, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "evalcore",
        "judge",
        "optimize",
        str(files["dataset"]),
        "--human",
        "human",
        "--template",
        str(files["template"]),
        "--model",
        "fake-judge",
        "--base-url",
        fake.base_url,
        "--optimizer-model",
        OPTIMIZER,
        "--out",
        str(files["out"]),
        *extra,
    ]


def _env(files: dict[str, Path]) -> dict[str, str]:
    env = {**os.environ, CACHE_DIR_ENV: str(files["out"].parent / "reply-cache")}
    env.pop("OPENAI_API_KEY", None)
    return env


def _optimize(
    files: dict[str, Path], fake: FakeOpenAI, *extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _command(files, fake, *extra),
        cwd=ROOT,
        env=_env(files),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _report(files: dict[str, Path]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((files["out"] / "report.json").read_text(encoding="utf-8"))
    return data


@pytest.fixture
def improvable() -> Iterator[FakeOpenAI]:
    with _fake() as server:
        yield server


def test_finds_a_better_version_and_writes_the_report_and_best_toml(
    files: dict[str, Path], improvable: FakeOpenAI
) -> None:
    done = _optimize(files, improvable, "--comments", "note")
    assert done.returncode == 0, done.stderr
    report = _report(files)
    dev, test = report["split"]["dev"], report["split"]["test"]
    assert len(dev) + len(test) == 150
    assert not set(dev) & set(test)
    assert 50 <= len(test) <= 70
    kinds = {c["kind"] for c in report["candidates"]}
    assert "rewrite" in kinds
    for candidate in report["candidates"]:
        assert report["metric"] in candidate["dev"]
    assert report["start_test"]["test"] is not None
    assert report["finalists"]
    for finalist in report["finalists"]:
        assert finalist["test"] is not None
        assert finalist["difference"] is not None
        assert len(finalist["difference_interval"]) == 2
    assert any(f["beats_start"] for f in report["finalists"])
    best = JudgeTemplate.load_toml(files["out"] / "best.toml")
    assert best.scale.labels == ("pass", "fail")
    assert best.content_hash != JudgeTemplate.load_toml(files["template"]).content_hash
    # the table on stdout names the start and the finalists' test figures
    assert "on test" in done.stdout
    assert "beat the start" in done.stderr
    # no test item's text ever reached the fake while optimising, except in the final test runs
    test_markers = [truth_marker(i, "pass") for i in test] + [truth_marker(i, "fail") for i in test]
    optimiser_prompts = [r.prompt for r in improvable.requests if r.body["model"] == OPTIMIZER]
    assert optimiser_prompts
    for prompt in optimiser_prompts:
        assert not any(m in prompt for m in test_markers)
    # in the judge's requests a test item is only ever the item judged, never an example
    for request in improvable.requests:
        system = request.body["messages"][0]["content"]
        assert not any(m in system for m in test_markers)
        assert sum(request.prompt.count(m) for m in test_markers) <= 1


def test_a_second_run_is_answered_from_the_cache(
    files: dict[str, Path], improvable: FakeOpenAI
) -> None:
    first = _optimize(files, improvable)
    assert first.returncode == 0, first.stderr
    sent = improvable.count
    assert sent > 0
    again = _optimize(files, improvable)
    assert again.returncode == 0, again.stderr
    assert improvable.count == sent  # not one request more
    assert _report(files)["finalists"]


def test_no_best_toml_when_the_optimiser_is_useless(files: dict[str, Path]) -> None:
    with _fake("useless") as server:
        done = _optimize(files, server, "--fewshot-candidates", "0")
    assert done.returncode == 0, done.stderr
    report = _report(files)
    assert not any(f["beats_start"] for f in report["finalists"])
    assert not (files["out"] / "best.toml").exists()
    assert "no candidate beat the start" in done.stderr


def test_a_candidate_that_only_fits_dev_is_not_offered(files: dict[str, Path]) -> None:
    with _fake("overfit") as server:
        done = _optimize(files, server, "--fewshot-candidates", "0")
    assert done.returncode == 0, done.stderr
    report = _report(files)
    metric = report["metric"]
    rewrites = [c for c in report["candidates"] if c["kind"] == "rewrite"]
    start_dev = report["start"]["dev"][metric]
    assert any(c["dev"][metric] > start_dev for c in rewrites)  # it fits dev...
    assert not any(f["beats_start"] for f in report["finalists"])  # ...and nothing on test
    assert not (files["out"] / "best.toml").exists()


def test_the_request_cap_stops_the_run(files: dict[str, Path], improvable: FakeOpenAI) -> None:
    done = _optimize(files, improvable, "--max-requests", "120")
    assert done.returncode == 0, done.stderr
    assert improvable.count <= 120
    assert _report(files)["stopped"]
    assert "stopped early" in done.stderr


def test_the_dollar_budget_stops_the_run(files: dict[str, Path], improvable: FakeOpenAI) -> None:
    # a model the price table knows (the fake answers any name): a whole run costs about $0.03
    done = _optimize(files, improvable, "--model", "gpt-4o-mini", "--budget-usd", "0.01")
    assert done.returncode == 0, done.stderr
    report = _report(files)
    assert report["stopped"] == "budget"
    assert 0 < report["cost"] <= 0.01
    assert report["start"]["dev"][report["metric"]] is not None


def test_a_cancelled_run_keeps_its_replies_and_resumes_from_the_cache(
    files: dict[str, Path],
) -> None:
    with _fake() as server:
        server.latency = 0.01
        process = subprocess.Popen(
            _command(files, server),
            cwd=ROOT,
            env=_env(files),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 120
        while server.count < 150 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
        assert _report(files)["stopped"] == "cancelled"
        answered = {r.prompt_key for r in server.requests if r.status == 200}
        first = server.count
        done = _optimize(files, server)
        assert done.returncode == 0, done.stderr
        again = [r.prompt_key for r in server.requests[first:]]
    assert again
    assert not answered & set(again)  # nothing the first run was answered is asked again
    assert _report(files)["stopped"] is None


def test_estimate_sends_nothing(files: dict[str, Path], improvable: FakeOpenAI) -> None:
    done = _optimize(files, improvable, "--estimate")
    assert done.returncode == 0, done.stderr
    assert "requests" in done.stdout
    assert "tokens" in done.stdout
    assert improvable.count == 0
    assert not (files["out"] / "report.json").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("--human", "nobody"), "nobody"),
        (("--test-share", "1.5"), "--test-share"),
        (("--max-requests", "0"), "--max-requests"),
        (("--comments", "nowhere"), "nowhere"),
    ],
)
def test_bad_input_is_one_line_and_status_2(
    files: dict[str, Path], improvable: FakeOpenAI, change: tuple[str, str], message: str
) -> None:
    done = _optimize(files, improvable, *change)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert message in lines[0]
    assert "Traceback" not in done.stderr
    assert improvable.count == 0


def test_too_few_labels_for_a_split_is_refused(tmp_path: Path, improvable: FakeOpenAI) -> None:
    dataset = tmp_path / "small.csv"
    rows = [f"c{i},Reply {i} {truth_marker(f'c{i}', 'pass')},pass" for i in range(12)]
    dataset.write_text("id,response,human\n" + "\n".join(rows) + "\n", encoding="utf-8")
    template = tmp_path / "t.toml"
    template.write_text(TEMPLATE, encoding="utf-8")
    files = {"dataset": dataset, "template": template, "out": tmp_path / "out"}
    done = _optimize(files, improvable)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert improvable.count == 0
