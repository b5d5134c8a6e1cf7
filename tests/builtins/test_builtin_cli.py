"""``evalcore judge run --metric`` for template, pipeline and function metrics, and
``evalcore judge metrics``, through :func:`evalcore.cli.main` against the fake server."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalcore.cli import main
from evalcore.judge.builtins import builtin_names, builtin_template, catalogue_markdown
from evalcore.testing import FakeOpenAI
from tests.builtins.helpers import route, user_text

ROWS = [
    {
        "id": f"r{n}",
        "question": f"Question {n}?",
        "context": f"Source {n}.",
        "answer": f"Answer {n}. gold={n}",
        "ground_truth": f"Answer {n}.",
    }
    for n in range(1, 5)
]


def gold(request: dict[str, Any]) -> str:
    score = int(user_text(request).rsplit("gold=", 1)[1][0])
    return json.dumps({"reason": "marker", "score": score})


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "qa.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return path


def _run(dataset: Path, out: Path, server: FakeOpenAI | None, *extra: str) -> int:
    args = ["judge", "run", str(dataset), "--out", str(out), *extra]
    if server is not None:
        args += ["--model", "m", "--base-url", server.base_url]
    return main(args)


def _rows(path: Path) -> dict[str, dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return {row["item_id"]: row for row in map(json.loads, lines)}


def test_run_a_template_metric(
    fake_server: Callable[..., FakeOpenAI], dataset: Path, tmp_path: Path
) -> None:
    fake = fake_server(gold)
    out = tmp_path / "g.jsonl"
    assert _run(dataset, out, fake, "--metric", "groundedness") == 0
    rows = _rows(out)
    assert {k: (r["label"], r["details"]["result"]) for k, r in rows.items()} == {
        "r1": (1, "fail"), "r2": (2, "fail"), "r3": (3, "pass"), "r4": (4, "pass"),
    }  # fmt: skip
    assert (
        fake.requests[0].body["messages"][0]["content"] == builtin_template("groundedness").system
    )
    strict = tmp_path / "strict.jsonl"
    assert _run(dataset, strict, fake, "--metric", "groundedness", "--threshold", "4") == 0
    assert _rows(strict)["r3"]["details"]["result"] == "fail"
    assert fake.count == 4  # a new threshold sends the same requests: the shared cache answers


def test_run_an_edited_copy_of_a_metrics_template(
    fake_server: Callable[..., FakeOpenAI], dataset: Path, tmp_path: Path
) -> None:
    fake = fake_server(gold)
    original = builtin_template("groundedness")
    edited = tmp_path / "groundedness_v2.toml"
    edited.write_text(
        original.to_toml().replace("You are a groundedness judge.", "You are a strict judge."),
        encoding="utf-8",
    )
    out = tmp_path / "v2.jsonl"
    assert _run(dataset, out, fake, "--metric", "groundedness", "--template", str(edited)) == 0
    assert fake.requests[0].body["messages"][0]["content"].startswith("You are a strict judge.")
    assert _rows(out)["r4"]["details"]["result"] == "pass"


def test_run_a_pipeline_metric_writes_its_intermediates(
    fake_server: Callable[..., FakeOpenAI], dataset: Path, tmp_path: Path
) -> None:
    def verify(request: dict[str, Any]) -> dict[str, Any]:
        claims = json.loads(user_text(request).split("(a JSON array):\n", 1)[1].split("\n", 1)[0])
        return {"verdicts": [{"statement": c, "reason": "", "verdict": 1} for c in claims]}

    fake = fake_server(route({"into claims": {"claims": ["one claim"]}, "follow from": verify}))
    out = tmp_path / "fc.jsonl"
    args = ("--metric", "factual_correctness", "--param", "mode=precision", "--threshold", "0.9")
    assert _run(dataset, out, fake, *args) == 0
    rows = _rows(out)
    assert len(rows) == 4
    details = rows["r1"]["details"]
    assert details["response_claims"] == ["one claim"]
    assert details["response_verdicts"][0]["verdict"] == 1
    assert (details["mode"], details["tp"], details["fp"], details["fn"]) == ("precision", 1, 0, 0)
    assert (rows["r1"]["score"], rows["r1"]["label"], details["threshold"]) == (1.0, "pass", 0.9)
    # precision mode: a decomposition and a verification per answer, nothing on the reference side
    assert fake.count == 4 * 2
    assert not fake.requests_matching("Text:\nAnswer 1.\n")  # no reference decomposition
    assert _run(dataset, out, fake, *args) == 0  # finished: nothing is asked again
    assert fake.count == 8


def test_run_a_function_metric_needs_no_endpoint(
    dataset: Path, tmp_path: Path, reply_cache_dir: Path
) -> None:
    out = tmp_path / "f1.jsonl"
    assert _run(dataset, out, None, "--metric", "f1_score", "--threshold", "0.9") == 0
    rows = _rows(out)
    # "answer 1 gold1" vs "answer 1": P 2/3, R 1 -> F1 0.8 < 0.9
    assert rows["r1"]["score"] == pytest.approx(0.8)
    assert (rows["r1"]["label"], rows["r1"]["details"]["result"]) == ("fail", "fail")
    assert not reply_cache_dir.exists()  # no request, so no reply cache either


def test_missing_input_exits_2_before_any_request(
    fake_server: Callable[..., FakeOpenAI], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = fake_server(gold)
    path = tmp_path / "no_truth.jsonl"
    path.write_text(json.dumps({"question": "q", "answer": "a"}) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert _run(path, out, fake, "--metric", "similarity") == 2
    err = capsys.readouterr().err.strip()
    assert "metric 'similarity' cannot run: ground_truth (reference) is missing on 1 of 1" in err
    assert len(err.splitlines()) == 1
    assert fake.count == 0
    assert not out.exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--metric", "nonsense"), "no metric named 'nonsense'"),
        (("--metric", "factual_correctness", "--param", "mood=high"), "no parameter 'mood'"),
        (("--metric", "factual_correctness", "--param", "beta"), "--param takes KEY=VALUE"),
        (("--metric", "violence", "--threshold", "7"), "threshold must be one of very low"),
        ((), "give a judge template (--template T.toml) or a metric"),
    ],
)
def test_bad_metric_options_exit_2(
    dataset: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: tuple[str, ...],
    message: str,
) -> None:
    assert _run(dataset, tmp_path / "o.jsonl", None, *extra) == 2
    assert message in capsys.readouterr().err


def test_estimate_a_metric(
    dataset: Path, capsys: pytest.CaptureFixture[str], fake_server: Callable[..., FakeOpenAI]
) -> None:
    fake = fake_server(gold)
    base = ["judge", "estimate", str(dataset), "--model", "gpt-4o-mini"]
    assert main([*base, "--metric", "coherence"]) == 0
    assert "4 judgements" in capsys.readouterr().out
    assert main([*base, "--metric", "factual_correctness"]) == 0
    out = capsys.readouterr().out
    assert "16 requests" in out  # an upper bound: 4 items x 4 steps
    assert "upper bound" in out
    assert fake.count == 0


def test_metrics_lists_the_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", "metrics"]) == 0
    text = capsys.readouterr().out
    for name in builtin_names():
        assert f"\n{name} " in "\n" + text
    assert main(["judge", "metrics", "--format", "markdown"]) == 0
    assert capsys.readouterr().out == catalogue_markdown()
    assert main(["judge", "metrics", "--format", "json", "--group", "ragas"]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in entries] == ["factual_correctness", "summarization_score"]
    assert entries[0]["threshold"] == "0.5"


def test_plain_templates_see_conversation_transcripts(
    fake_server: Callable[..., FakeOpenAI], tmp_path: Path
) -> None:
    fake = fake_server('{"reason": "ok", "score": 4}')
    path = tmp_path / "conv.jsonl"
    turns = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]
    path.write_text(json.dumps({"id": "c", "messages": turns}) + "\n", encoding="utf-8")
    template = tmp_path / "t.toml"
    template.write_text(
        'name = "t"\nscale = [1, 2, 3, 4, 5]\nuser = "{{ transcript }}"\n', encoding="utf-8"
    )
    out = tmp_path / "o.jsonl"
    assert _run(path, out, fake, "--template", str(template)) == 0
    assert user_text(fake.requests[0].body) == "[Turn 1] User:\nHi\n\n[Turn 1] Assistant:\nHello!"
