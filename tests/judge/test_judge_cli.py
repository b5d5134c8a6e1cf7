"""``evalcore judge run`` / ``estimate`` through :func:`evalcore.cli.main`, against the fake server."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from evalcore.cli import main
from evalcore.testing import FakeOpenAI, Fault

TEMPLATE = '''
name = "fluency"
criterion = "fluency"
scale = [1, 2, 3, 4, 5]
system = "You judge fluency."
user = """
Response: {{ response }}
expect={{ gold }}
"""

[model]
temperature = 0.0
'''


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    dataset = tmp_path / "data.jsonl"
    rows = [{"id": f"r{i}", "response": f"answer {i}", "gold": 1 + i % 5} for i in range(8)]
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    template = tmp_path / "fluency.toml"
    template.write_text(TEMPLATE, encoding="utf-8")
    return {"dataset": dataset, "template": template, "out": tmp_path / "out" / "results.jsonl"}


def _args(files: dict[str, Path], server: FakeOpenAI, *extra: str) -> list[str]:
    return [
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
        str(files["out"]),
        *extra,
    ]


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_run_writes_one_line_per_item(
    fake: FakeOpenAI, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_args(files, fake)) == 0
    rows = _rows(files["out"])
    assert sorted(r["item_id"] for r in rows) == [f"r{i}" for i in range(8)]
    for row in rows:
        assert {"item_id", "label", "status", "raw", "tokens", "latency_s", "order", "reason",
                "error", "cost", "cached"} <= set(row)  # fmt: skip
        assert row["status"] == "ok"
        assert row["label"] == 1 + int(str(row["item_id"])[1:]) % 5
    err = capsys.readouterr().err
    assert "ok 8, unparsed 0, failed 0" in err
    assert not (files["out"].parent / "results.cache.sqlite").exists()  # no cache beside --out


def test_the_shared_cache_answers_a_run_with_another_out(
    fake: FakeOpenAI,
    files: dict[str, Path],
    reply_cache_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(_args(files, fake)) == 0
    assert fake.count == 8
    assert (reply_cache_dir / "replies.sqlite").exists()
    elsewhere = files["out"].parent.parent / "elsewhere" / "second.jsonl"
    args = _args(files, fake)
    args[args.index("--out") + 1] = str(elsewhere)
    assert main(args) == 0
    assert fake.count == 8  # the second run sent 0 requests
    assert all(row["cached"] and row["status"] == "ok" for row in _rows(elsewhere))
    assert "8 from the cache, 0 requests" in capsys.readouterr().err


def test_two_endpoints_serving_the_same_model_name_share_no_reply(
    fake_server: Callable[..., FakeOpenAI], files: dict[str, Path]
) -> None:
    first, second = fake_server(), fake_server()
    assert first.base_url != second.base_url
    assert main(_args(files, first)) == 0
    other = files["out"].with_name("other.jsonl")
    args = _args(files, second)
    args[args.index("--out") + 1] = str(other)
    assert main(args) == 0
    assert (first.count, second.count) == (8, 8)
    assert not any(row["cached"] for row in _rows(other))


@pytest.mark.parametrize(
    ("setting", "value"),
    [("temperature", "0.5"), ("max_tokens", "64"), ("seed", "7"), ("n", "3")],
)
def test_a_changed_request_parameter_misses_the_cache(
    fake: FakeOpenAI, files: dict[str, Path], setting: str, value: str
) -> None:
    assert main(_args(files, fake)) == 0
    assert fake.count == 8
    files["template"].write_text(
        TEMPLATE.replace("temperature = 0.0", f"temperature = 0.0\n{setting} = {value}")
        if setting != "temperature"
        else TEMPLATE.replace("temperature = 0.0", f"temperature = {value}"),
        encoding="utf-8",
    )
    changed = files["out"].with_name("changed.jsonl")
    args = _args(files, fake)
    args[args.index("--out") + 1] = str(changed)
    assert main(args) == 0
    assert fake.count == 16  # every item asked again
    assert fake.requests[-1].body[setting] == (
        float(value) if setting == "temperature" else int(value)
    )


def test_another_model_name_misses_the_cache(fake: FakeOpenAI, files: dict[str, Path]) -> None:
    assert main(_args(files, fake)) == 0
    args = _args(files, fake)
    args[args.index("--model") + 1] = "fake-judge-2"
    args[args.index("--out") + 1] = str(files["out"].with_name("m2.jsonl"))
    assert main(args) == 0
    assert fake.count == 16


def test_no_cache_sends_every_request_and_writes_no_cache(
    fake: FakeOpenAI, files: dict[str, Path], reply_cache_dir: Path
) -> None:
    assert main(_args(files, fake, "--no-cache")) == 0
    args = _args(files, fake, "--no-cache")
    args[args.index("--out") + 1] = str(files["out"].with_name("again.jsonl"))
    assert main(args) == 0
    assert fake.count == 16
    assert not reply_cache_dir.exists()


def test_rerun_resumes_and_hits_the_cache(
    fake: FakeOpenAI, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_args(files, fake, "--limit", "5")) == 0
    assert fake.count == 5
    assert main(_args(files, fake)) == 0  # resumes: only the 3 new items are requested
    assert fake.count == 8
    assert len(_rows(files["out"])) == 8
    assert main(_args(files, fake)) == 0  # nothing left to do
    assert fake.count == 8
    fresh = files["out"].with_name("again.jsonl")
    args = _args(files, fake)
    args[args.index("--out") + 1] = str(fresh)
    args += ["--cache", str(files["out"].parent / "own.cache.sqlite")]
    assert main(args) == 0  # a cache file of its own starts empty
    assert fake.count == 16
    again = files["out"].with_name("again-2.jsonl")
    args[args.index("--out") + 1] = str(again)
    assert main(args) == 0  # a new output file with the same --cache pays nothing
    assert fake.count == 16
    fresh = again
    assert all(row["cached"] for row in _rows(fresh))
    assert "8 from the cache, 0 requests" in capsys.readouterr().err


def test_unparsed_and_failed_items_are_counted_and_exit_is_zero(
    fake_server: Callable[..., FakeOpenAI],
    files: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = fake_server(
        faults=[Fault.status_code(400, match="answer 2\n"), Fault.truncated(match="answer 3\n")]
    )
    assert main(_args(files, server)) == 0
    err = capsys.readouterr().err
    assert "ok 6, unparsed 1, failed 1" in err


def test_template_typo_exits_2_before_any_request(
    fake: FakeOpenAI, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    files["template"].write_text(
        TEMPLATE.replace("{{ response }}", "{{ respons }}"), encoding="utf-8"
    )
    assert main(_args(files, fake)) == 2
    err = capsys.readouterr().err.strip()
    assert "respons" in err
    assert "r0" in err
    assert len(err.splitlines()) == 1
    assert "Traceback" not in err
    assert fake.count == 0
    assert not files["out"].exists()


def test_missing_api_key_variable_exits_2(
    fake: FakeOpenAI,
    files: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("EVALCORE_CLI_KEY", raising=False)
    assert main(_args(files, fake, "--api-key-env", "EVALCORE_CLI_KEY")) == 2
    err = capsys.readouterr().err
    assert "EVALCORE_CLI_KEY" in err
    assert "Traceback" not in err
    assert fake.count == 0


def test_api_key_from_the_named_variable_is_used(
    fake: FakeOpenAI, files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALCORE_CLI_KEY", "local-test-key")
    assert main(_args(files, fake, "--api-key-env", "EVALCORE_CLI_KEY")) == 0
    assert "local-test-key" not in files["out"].read_text()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("dataset", "does not exist"),
        ("template", "does not exist"),
        ("bad-json", "line 2"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    fake: FakeOpenAI,
    files: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    change: str,
    message: str,
) -> None:
    if change == "dataset":
        files["dataset"] = files["dataset"].with_name("missing.jsonl")
    elif change == "template":
        files["template"] = files["template"].with_name("missing.toml")
    else:
        files["dataset"].write_text(
            '{"id": 1, "response": "x", "gold": 1}\n{"id": 2,\n', encoding="utf-8"
        )
    assert main(_args(files, fake)) == 2
    err = capsys.readouterr().err.strip()
    assert message in err
    assert "Traceback" not in err
    assert fake.count == 0


def test_csv_without_id_is_keyed_by_row_number(
    fake: FakeOpenAI, files: dict[str, Path], tmp_path: Path
) -> None:
    csv = tmp_path / "data.csv"
    csv.write_text("response,gold\nfirst,2\nsecond,\n", encoding="utf-8")
    files["dataset"] = csv
    assert main(_args(files, fake)) == 0
    rows = {r["item_id"]: r for r in _rows(files["out"])}
    assert set(rows) == {"1", "2"}
    assert rows["1"]["label"] == 2
    assert "expect=\n" in fake.requests_matching("second")[0].prompt + "\n"  # empty cell → ""


def test_pairwise_orders_from_the_command_line(
    fake_server: Callable[..., FakeOpenAI], tmp_path: Path
) -> None:
    server = fake_server(reply="[[A]]")
    dataset = tmp_path / "pairs.jsonl"
    dataset.write_text(
        "".join(
            json.dumps({"id": i, "response_a": f"a{i}", "response_b": f"b{i}"}) + "\n"
            for i in range(4)
        ),
        encoding="utf-8",
    )
    template = tmp_path / "pref.toml"
    template.write_text(
        'name = "pref"\nscale = ["A", "B", "TIE"]\nuser = "{{ response_a }} | {{ response_b }}"\n',
        encoding="utf-8",
    )
    out = tmp_path / "pairs.out.jsonl"
    args = ["judge", "run", str(dataset), "--template", str(template), "--model", "m",
            "--base-url", server.base_url, "--out", str(out), "--order", "both"]  # fmt: skip
    assert main(args) == 0
    rows = _rows(out)
    assert len(rows) == 8
    assert {(r["order"], r["label"]) for r in rows} == {
        ("AB", "A"),
        ("BA", "B"),
    }  # always the first slot


def test_estimate_prints_the_expected_requests_and_cost(
    fake: FakeOpenAI, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["judge", "estimate", str(files["dataset"]), "--template", str(files["template"]),
            "--model", "gpt-4o-mini"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "8 judgements" in out
    assert "8 requests" in out
    assert "expected cost: $" in out
    assert fake.count == 0


def test_estimate_counts_the_shared_cache_for_its_endpoint_only(
    fake_server: Callable[..., FakeOpenAI],
    files: dict[str, Path],
    reply_cache_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    first, other = fake_server(), fake_server()
    estimate = ["judge", "estimate", str(files["dataset"]), "--template", str(files["template"]),
                "--model", "fake-judge"]  # fmt: skip
    assert main([*estimate, "--base-url", first.base_url]) == 0
    assert not reply_cache_dir.exists()  # an estimate creates no cache file
    assert main(_args(files, first, "--limit", "5")) == 0
    capsys.readouterr()
    assert main([*estimate, "--base-url", first.base_url]) == 0
    assert "5 from the cache, 3 requests" in capsys.readouterr().out
    assert main([*estimate, "--base-url", other.base_url]) == 0
    assert "0 from the cache, 8 requests" in capsys.readouterr().out
    assert (first.count, other.count) == (5, 0)


def test_judge_without_action_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge"]) == 2
    assert "run" in capsys.readouterr().err


def test_replicate_sends_the_requests_again_and_resumes_for_free(
    fake: FakeOpenAI, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_args(files, fake)) == 0
    assert fake.count == 8
    again = _args(files, fake, "--replicate", "1")
    again[again.index("--out") + 1] = str(files["out"].with_name("replicate1.jsonl"))
    assert main(again) == 0
    assert fake.count == 16  # replicate 1 found none of replicate 0's replies in the cache
    assert "0 from the cache, 8 requests" in capsys.readouterr().err
    again[again.index("--out") + 1] = str(files["out"].with_name("replicate1-copy.jsonl"))
    assert main(again) == 0
    assert fake.count == 16  # the same replicate again is answered by the shared cache
    assert "8 from the cache, 0 requests" in capsys.readouterr().err


def test_samples_by_requests_from_the_command_line(
    fake: FakeOpenAI, files: dict[str, Path]
) -> None:
    files["template"].write_text(
        TEMPLATE.replace("temperature = 0.0", "temperature = 0.7\nn = 3"), encoding="utf-8"
    )
    assert main(_args(files, fake, "--samples-by", "requests", "--limit", "2")) == 0
    assert fake.count == 6  # 2 items × 3 samples, one request each
    assert all("n" not in r.body for r in fake.requests)
    rows = _rows(files["out"])
    assert [len(row["samples"]) for row in rows] == [3, 3]
