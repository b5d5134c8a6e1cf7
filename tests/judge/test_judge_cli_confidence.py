"""``evalcore judge run --logprobs / --samples``, ``judge jury`` and ``judge escalate`` through
:func:`evalcore.cli.main`, against the fake server of set calibration and a real SQLite store."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest

from evalcore.cli import main
from evalcore.labels import PASS_FAIL
from evalcore.store import JudgeResultInput, Store
from evalcore.testing import CalibratedJudge, FakeOpenAI, truth_marker

TEMPLATE = """
name = "grounded"
criterion = "grounded"
scale = ["pass", "fail"]
system = "Say whether the answer is grounded."
user = "Answer: {{ response }}"

[output]
structured = true

[model]
temperature = 0.0
"""


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    dataset = tmp_path / "data.jsonl"
    rows = [
        {"id": f"r{i}", "response": truth_marker(f"r{i}", "pass" if i % 2 else "fail")}
        for i in range(6)
    ]
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    template = tmp_path / "grounded.toml"
    template.write_text(TEMPLATE, encoding="utf-8")
    return {"dataset": dataset, "template": template, "out": tmp_path / "results.jsonl"}


def _run(files: dict[str, Path], server: FakeOpenAI, out: Path, *extra: str) -> int:
    return main(
        [
            "judge",
            "run",
            str(files["dataset"]),
            "--template",
            str(files["template"]),
            "--model",
            "fake-judge",
            "--base-url",
            server.base_url,
            "--out",
            str(out),
            *extra,
        ]
    )


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_logprobs_put_each_labels_probability_in_the_output(
    fake_server: Callable[..., FakeOpenAI], files: dict[str, Path]
) -> None:
    judge = CalibratedJudge(seed=6, off_scale=0.1)
    server = fake_server(judge)
    assert _run(files, server, files["out"], "--logprobs", "--top-logprobs", "4") == 0
    body = server.requests[0].body
    assert (body["logprobs"], body["top_logprobs"]) == (True, 4)
    served = judge.served()
    for row in _rows(files["out"]):
        truth = served[str(row["item_id"])]
        assert row["label"] == truth.label
        assert row["probabilities"] == pytest.approx(dict(truth.probabilities), abs=1e-12)
        assert row["confidence"] == pytest.approx(truth.confidence, abs=1e-12)


def test_samples_give_the_agreement_as_the_confidence(
    fake_server: Callable[..., FakeOpenAI], files: dict[str, Path]
) -> None:
    judge = CalibratedJudge(seed=6, confidence=(0.5, 0.8))
    server = fake_server(judge)
    assert _run(files, server, files["out"], "--samples", "4") == 0
    assert server.requests[0].body["n"] == 4
    for row in _rows(files["out"]):
        samples = judge.served()[str(row["item_id"])].samples
        shares = {x: samples.count(x) / 4 for x in ("pass", "fail")}
        assert row["probabilities"] == shares
        assert row["confidence"] == shares[str(row["label"])]


def test_request_flags_that_cannot_apply_exit_2(
    fake: FakeOpenAI, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(files, fake, files["out"], "--top-logprobs", "3") == 2
    assert "--top-logprobs needs --logprobs" in capsys.readouterr().err
    assert _run(files, fake, files["out"], "--samples", "0") == 2
    assert "--samples must be at least 1" in capsys.readouterr().err
    assert _run(files, fake, files["out"], "--logprobs", "--top-logprobs", "30") == 2
    assert "top_logprobs must be between 0 and 20" in capsys.readouterr().err
    assert fake.count == 0


def _member(path: Path, labels: dict[str, str | None]) -> Path:
    lines = []
    for item, label in labels.items():
        status = "ok" if label is not None else "unparsed"
        lines.append(json.dumps({"item_id": item, "order": "AB", "status": status, "label": label}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_jury_of_results_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _member(tmp_path / "a.jsonl", {"x": "pass", "y": "fail", "z": None})
    b = _member(tmp_path / "b.jsonl", {"x": "pass", "y": "pass"})
    c = _member(tmp_path / "c.jsonl", {"x": "fail", "y": "fail", "z": None})
    out = tmp_path / "jury.jsonl"
    args = ["judge", "jury", "--member", str(a), "--member", str(b), "--member", str(c)]
    assert main([*args, "--scale", "pass,fail", "--out", str(out)]) == 0
    rows = {r["item_id"]: r for r in _rows(out)}
    # x: pass, pass, fail → pass with 2 of 3; y: fail, pass, fail → fail with 2 of 3
    assert (rows["x"]["label"], rows["x"]["confidence"]) == ("pass", pytest.approx(2 / 3))
    assert rows["y"]["probabilities"] == pytest.approx({"pass": 1 / 3, "fail": 2 / 3})
    assert rows["x"]["details"]["jury"]["votes"] == {
        "a.jsonl": "pass",
        "b.jsonl": "pass",
        "c.jsonl": "fail",
    }
    assert rows["z"]["status"] == "failed"  # nobody gave a label
    assert "2/3 items decided" in capsys.readouterr().err
    # weighted: c counts three times, so y and x both go its way
    assert (
        main(
            [
                *args,
                "--method",
                "weighted",
                "--weight",
                "1",
                "--weight",
                "1",
                "--weight",
                "3",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    rows = {r["item_id"]: r for r in _rows(out)}
    assert (rows["x"]["label"], rows["x"]["confidence"]) == ("fail", 0.6)  # 3 of 5 units
    assert "the scale, from the members' labels: pass, fail" in capsys.readouterr().err


def test_a_bad_jury_exits_2_naming_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _member(tmp_path / "a.jsonl", {"x": "pass"})
    b = _member(tmp_path / "b.jsonl", {"x": "maybe"})
    out = tmp_path / "jury.jsonl"
    base = ["judge", "jury", "--member", str(a)]
    assert main([*base, "--out", str(out)]) == 2
    assert "at least two members" in capsys.readouterr().err
    assert main([*base, "--member", str(b), "--scale", "pass,fail", "--out", str(out)]) == 2
    assert "b.jsonl: item 'x'" in capsys.readouterr().err
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"item_id": "x", "status": "ok"}\nnot json\n', encoding="utf-8")
    assert main([*base, "--member", str(broken), "--out", str(out)]) == 2
    assert "broken.jsonl, line 2" in capsys.readouterr().err
    assert main([*base, "--member", str(a), "--method", "weighted", "--out", str(out)]) == 2
    assert "one weight per member" in capsys.readouterr().err
    assert not out.exists()


@pytest.fixture
def database(tmp_path: Path) -> Iterator[tuple[str, Store, dict[str, int], list[int]]]:
    url = f"sqlite:///{tmp_path / 'app.sqlite'}"
    store = Store.open(url)
    project = store.create_project("p")
    criterion = store.create_criterion(project.id, "grounded", kind="pointwise", scale=PASS_FAIL)
    dataset = store.save_dataset(project.id, "d", pd.DataFrame({"item_id": ["a", "b", "c"]}))
    frame = store.items_frame(dataset.id)
    ids = {str(ext): int(pk) for pk, ext in zip(frame.index, frame["item_id"], strict=True)}
    runs = []
    for name, verdicts in (
        ("one", {"a": ("pass", 0.9), "b": ("fail", 0.6), "c": ("pass", 0.4)}),
        ("two", {"a": ("pass", None), "b": ("pass", None), "c": ("fail", None)}),
    ):
        run = store.create_run(dataset.id, criterion.id, name=name)
        store.record_results(
            run.id,
            [
                JudgeResultInput(item_id=ids[k], status="ok", label=label, confidence=c)
                for k, (label, c) in verdicts.items()
            ],
        )
        runs.append(run.id)
    yield url, store, ids, runs
    store.close()


def test_a_stored_jury_and_an_escalation_from_the_command_line(
    database: tuple[str, Store, dict[str, int], list[int]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, store, ids, (one, two) = database
    args = ["judge", "jury", "--run", str(one), "--run", str(two), "--name", "pair"]
    assert main([*args, "--database-url", url]) == 0
    jury_id = int(capsys.readouterr().out.strip())
    jury = store.get_run(jury_id)
    assert (jury.source, jury.name) == ("jury", "pair")
    assert [m.member_run_id for m in store.jury_members(jury_id)] == [one, two]
    escalate = ["judge", "escalate", "--run", str(one), "--threshold", "0.7"]
    assert main([*escalate, "--database-url", url]) == 0
    assert "2 items to people" in capsys.readouterr().err
    order = store.active_queue_order(jury.dataset_id, jury.criterion_id)
    assert order is not None
    # c (0.4) before b (0.6); a (0.9) is trusted
    assert store.get_queue_order(order.dataset_id, order.criterion_id, order.name).item_ids == (
        ids["c"],
        ids["b"],
    )
    assert (
        main(["judge", "escalate", "--run", str(two), "--threshold", "0.7", "--database-url", url])
        == 2
    )
    assert "no confidence on any verdict" in capsys.readouterr().err
