"""`evalcore calibrate --confidence`: calibration of the confidence, trust or escalate, label next."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.cli import main
from evalcore.metrics import (
    brier_score_loss,
    expected_calibration_error,
    selective_outcome,
    selective_threshold,
)


def _file(tmp_path: Path, n: int = 300, seed: int = 0, *, name: str = "judged.csv") -> Path:
    rng = np.random.default_rng(seed)
    truth = rng.choice(["pass", "fail"], n)
    conf = np.round(rng.uniform(0.5, 1.0, n), 3)
    right = rng.random(n) < conf
    other = np.where(truth == "pass", "fail", "pass")
    human = truth.astype(object)
    human[:30] = None  # 30 items nobody labelled yet
    frame = pd.DataFrame(
        {
            "id": [f"item-{i}" for i in range(n)],
            "human": human,
            "judge_a": np.where(right, truth, other),
            "judge_b": np.where(rng.random(n) < 0.75, truth, other),
            "conf_a": conf,
            "conf_b": np.round(rng.uniform(0.5, 1.0, n), 2),
            "topic": rng.choice(["x", "y", "z"], n),
        }
    )
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


BASE = ["--id", "id", "--human", "human", "--judge", "judge_a", "--n-boot", "0", "--json"]


def _records(capsys: pytest.CaptureFixture[str]) -> list[dict]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def test_json_reports_ece_brier_bins_and_the_selective_threshold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path)
    argv = ["calibrate", str(path), *BASE, "--confidence", "conf_a"]
    argv += ["--target-agreement", "0.8", "--risk", "0.05", "--test-share", "0.5"]
    argv += ["--split-seed", "7"]
    assert main(argv) == 0
    (record,) = _records(capsys)
    frame = pd.read_csv(path, keep_default_na=False).replace("", None)
    labelled = frame[frame["human"].notna()]
    confidence = record["confidence"]
    assert confidence["summary"]["ece"] == pytest.approx(
        expected_calibration_error(labelled["human"], labelled["judge_a"], labelled["conf_a"])
    )
    assert confidence["summary"]["brier"] == pytest.approx(
        brier_score_loss(labelled["human"], labelled["judge_a"], labelled["conf_a"])
    )
    assert confidence["summary"]["n_bins"] == 10
    assert len(confidence["summary"]["reliability"]["bins"]) == 10
    assert confidence["recalibration"]["method"] == "isotonic"
    # anyone can recompute the threshold and the test figures from the ids in the record
    selective = record["selective"]
    dev_ids, test_ids = selective["split"]["dev"], selective["split"]["test"]
    assert len(dev_ids) + len(test_ids) == 270
    assert not set(dev_ids) & set(test_ids)
    # stratified: round(half) of each label's labelled items, as evalcore.improve.make_split does
    counts = labelled["human"].value_counts()
    assert len(test_ids) == sum(round(c * 0.5) for c in counts)
    dev = labelled[labelled["id"].isin(dev_ids)]
    test = labelled[labelled["id"].isin(test_ids)]
    again = selective_threshold(dev["human"], dev["judge_a"], dev["conf_a"], target=0.8, risk=0.05)
    assert selective["threshold"] == again.threshold is not None
    assert selective["dev"]["candidates"] == [c.to_dict() for c in again.candidates]
    on_test = selective_outcome(
        test["human"], test["judge_a"], test["conf_a"], threshold=again.threshold
    )
    assert selective["test"]["coverage"] == pytest.approx(on_test.coverage)
    assert selective["test"]["agreement"] == pytest.approx(on_test.agreement)
    assert selective["test"]["interval"] == pytest.approx(list(on_test.interval or ()))
    assert selective["test"]["interval_method"] == "wilson"
    assert selective["dev"]["bound_method"] == "clopper-pearson one-sided"
    assert "With probability at least 95%" in selective["guarantee"]
    assert "Not guaranteed" in selective["not_guaranteed"]
    assert f"decides {on_test.coverage:.0%} of items at ≥ 80% agreement" in selective["sentence"]
    assert selective["curve"]["coverage"][-1] == pytest.approx(1.0)


def test_several_judges_pair_columns_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, seed=1)
    argv = ["calibrate", str(path), "--id", "id", "--human", "human", "--judge", "judge_a"]
    argv += ["--judge", "judge_b", "--n-boot", "0", "--json"]
    assert main([*argv, "--confidence", "judge_a=conf_a", "--confidence", "judge_b=conf_b"]) == 0
    a, b = _records(capsys)
    assert a["judge"] == "judge_a"
    assert b["judge"] == "judge_b"
    assert a["confidence"]["summary"]["ece"] != b["confidence"]["summary"]["ece"]
    assert "selective" not in a  # no --target-agreement, no selective key
    # one column for one of two judges: the other has none, and says so
    assert main([*argv, "--confidence", "judge_b=conf_b"]) == 0
    a, b = _records(capsys)
    assert a["confidence"]["summary"] is None
    assert a["confidence"]["notes"] == ["judge_a: no verdict has a confidence."]
    # a plain column is ambiguous with two judges
    assert main([*argv, "--confidence", "conf_a"]) == 2
    err = capsys.readouterr().err
    assert "'label' has 2 judges (judge_a, judge_b)" in err
    assert "--confidence JUDGE=conf_a" in err
    assert main([*argv, "--confidence", "judge_c=conf_a"]) == 2
    assert "no judge named 'judge_c'" in capsys.readouterr().err


def test_a_confidence_outside_zero_one_names_the_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path)
    frame = pd.read_csv(path, keep_default_na=False)
    frame.loc[41, "conf_a"] = 1.25
    frame.to_csv(path, index=False)
    assert main(["calibrate", str(path), *BASE, "--confidence", "conf_a"]) == 2
    err = capsys.readouterr().err
    assert "judged.csv: column 'conf_a', row 42 (item 'item-41'): '1.25' is not a confidence" in err
    assert "Traceback" not in err


def test_bad_options_are_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _file(tmp_path)
    assert main(["calibrate", str(path), *BASE, "--target-agreement", "0.9"]) == 2
    assert "--target-agreement needs --confidence" in capsys.readouterr().err
    argv = ["calibrate", str(path), *BASE, "--confidence", "conf_a"]
    assert main([*argv, "--target-agreement", "1.5"]) == 2
    assert "--target-agreement must be strictly between 0 and 1" in capsys.readouterr().err
    assert main([*argv, "--confidence", "missing_col"]) == 2
    assert "given two columns" in capsys.readouterr().err
    assert main(["calibrate", str(path), *BASE, "--confidence", "judge_a=nope"]) == 2
    assert "no column 'nope'" in capsys.readouterr().err
    small = _file(tmp_path, n=50, name="small.csv")
    assert main(["calibrate", str(small), *BASE, "--confidence", "conf_a"]) == 0
    (record,) = _records(capsys)
    assert record["confidence"]["summary"]["n"] == 20
    assert "no dev/test split" in record["confidence"]["notes"][0]
    argv = ["calibrate", str(small), *BASE, "--confidence", "conf_a", "--target-agreement", "0.9"]
    assert main(argv) == 2
    assert "--target-agreement: no dev/test split: There are 20 labelled items" in (
        capsys.readouterr().err
    )


def test_label_next_proposes_unlabelled_items_spread_over_slices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, seed=2)
    argv = ["calibrate", str(path), *BASE, "--confidence", "conf_a", "--label-next", "12"]
    assert main([*argv, "--slice", "topic", "--label-next-metric", "accuracy"]) == 0
    (record,) = _records(capsys)
    proposal = record["label_next"]
    ids = [item["item_id"] for item in proposal["items"]]
    assert len(ids) == 12
    assert all(int(i.split("-")[1]) < 30 for i in ids)  # only items nobody labelled
    assert {item["slice"] for item in proposal["items"]} == {"x", "y", "z"}
    assert proposal["metric"] == "accuracy"
    # 12 items on top of 270 move the width by a few percent either way (see the metrics tests
    # for the narrowing); the record carries both figures and the sentence
    assert proposal["half_width_after"] == pytest.approx(proposal["half_width_now"], rel=0.2)
    assert proposal["summary"].startswith("label these 12 and accuracy's interval goes from ±")
    slices = record["confidence"]["slices"]
    assert [s["slice"] for s in slices] == ["x", "y", "z"]


def test_the_table_output_says_what_the_judge_decides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, seed=3)
    argv = ["calibrate", str(path), "--id", "id", "--human", "human", "--judge", "judge_a"]
    argv += ["--n-boot", "0", "--confidence", "conf_a", "--target-agreement", "0.8"]
    argv += ["--label-next", "5"]
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "confidence of judge_a: ECE" in out
    assert "trust or escalate: judge_a decides" in out
    assert "people get the other" in out or "people get all of them" in out
    assert "label next for judge_a: label these 5" in out
