"""`evalcore estimate-rate`: the human-level rate of unlabelled rows, three methods side by side."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from evalcore.cli import main


def _file(tmp_path: Path) -> Path:
    # labelled rows 0-5: human pass, pass, pass, fail, fail, fail; judge pass, pass, fail, fail,
    # fail, pass. Unlabelled rows 6-9: judge pass, pass, fail, fail.
    frame = pd.DataFrame(
        {
            "id": [f"q{i}" for i in range(10)],
            "human": ["pass"] * 3 + ["fail"] * 3 + [None] * 4,
            "judge": [
                "pass",
                "pass",
                "fail",
                "fail",
                "fail",
                "pass",
                "pass",
                "pass",
                "fail",
                "fail",
            ],
        }
    )
    path = tmp_path / "rate.csv"
    frame.to_csv(path, index=False)
    return path


def test_json_by_hand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _file(tmp_path)
    argv = ["estimate-rate", str(path), "--id", "id", "--human", "human", "--judge", "judge"]
    assert main([*argv, "--json", "--n-boot", "200"]) == 0
    (record,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert record["judge"] == "judge"
    assert record["positive"] == "pass"
    # labelled only: 3/6; Rogan-Gladen: (0.5 + 2/3 - 1) / (2/3 + 2/3 - 1) = 0.5
    assert record["labelled"]["rate"] == pytest.approx(0.5)
    assert record["rogan_gladen"]["rate"] == pytest.approx(0.5)
    # PPI++ (ppi-python): lam = Cov_n(y, f) / ((1 + 6/4) Var(f ∪ f~)) with Cov_n = 0.5 / 6 and
    # Var = 10 * 0.25 / 9 over the 10 judge labels: 0.083333 / (2.5 * 0.277778) = 0.12, rate 0.5
    assert record["ppi"]["lam"] == pytest.approx(0.12)
    assert record["ppi"]["rate"] == pytest.approx(0.5)
    assert record["ppi"]["n_unlabelled"] == 4


def test_table_and_positive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _file(tmp_path)
    argv = ["estimate-rate", str(path), "--id", "id", "--human", "human", "--judge", "judge"]
    assert main([*argv, "--positive", "fail", "--n-boot", "0"]) == 0
    out = capsys.readouterr().out
    assert "rate of fail" in out
    assert "labelled only" in out
    assert "PPI++" in out


def test_an_ordinal_scale_gets_the_mean_score_and_each_share(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # labelled: human 1, 2, 3, 3, 2, 1 with the judge 1, 2, 3, 2, 2, 1; unlabelled judge 3, 3, 1, 2
    frame = pd.DataFrame(
        {
            "human": [1, 2, 3, 3, 2, 1, None, None, None, None],
            "judge": [1, 2, 3, 2, 2, 1, 3, 3, 1, 2],
        }
    )
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    argv = ["estimate-rate", str(path), "--human", "human", "--judge", "judge", "--scale", "1,2,3"]
    assert main([*argv, "--json"]) == 0
    (record,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    # labelled mean (1 + 2 + 3 + 3 + 2 + 1) / 6 = 2; the judge's mean on the unlabelled rows 9/4
    assert record["mean"]["labelled"]["rate"] == pytest.approx(2.0)
    assert record["judge_mean"] == pytest.approx(2.25)
    assert [s["label"] for s in record["shares"]] == ["1", "2", "3"]
    assert record["shares"][2]["labelled"]["rate"] == pytest.approx(2 / 6)
    assert record["shares"][2]["labelled"]["interval"] == "Wilson score"
    assert record["mean"]["ppi"]["interval"] == "normal (ppi-python)"
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "mean score" in out
    assert "share of 3" in out


def test_positive_needs_a_binary_scale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _file(tmp_path)
    argv = ["estimate-rate", str(path), "--human", "human", "--judge", "judge", "--scale", "1,2,3"]
    assert main([*argv, "--positive", "2"]) == 2
    assert "binary" in capsys.readouterr().err
