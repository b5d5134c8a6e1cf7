"""`evalcore calibrate` on hand-made Vertex-style files: numbers, JSON, gates and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from sklearn.metrics import balanced_accuracy_score, f1_score

from evalcore.cli import main


def _vertex_file(tmp_path: Path) -> Path:
    # a 1-10 scale, a label only the judge uses (9), a missing human rating and an "error" score
    frame = pd.DataFrame(
        {
            "prompt": [f"question {i}" for i in range(8)],
            "response": [f"answer {i}" for i in range(8)],
            "quality/human_rating": [1, 2, 10, None, 5, 5, 3, 3],
            "quality/score": [1, 2, 9, 3, "error", 5, 3, 4],
            "pref/human_pairwise_choice": ["model_A", "tie", "B", "A", "A", "B", "b", "A"],
            "pref/pairwise_choice": ["CANDIDATE", "BASELINE", "B", "A", "A", "A", "b", "tie"],
        }
    )
    path = tmp_path / "vertex.csv"
    frame.to_csv(path, index=False)
    return path


def _json_lines(capsys: pytest.CaptureFixture[str]) -> list[dict]:
    out = capsys.readouterr().out
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_vertex_pointwise_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _vertex_file(tmp_path)
    assert main(["calibrate", str(path), "--metric", "quality", "--json", "--n-boot", "0"]) == 0
    (record,) = _json_lines(capsys)
    # compared rows: (1,1) (2,2) (10,9) (5,5) (3,3) (3,4); dropped: human NaN, judge "error"
    assert (record["n"], record["n_dropped"]) == (6, 2)
    # numeric order, with 10 after 9 (Vertex would sort "10.0" between "1.0" and "2.0")
    assert record["confusion_matrix_labels"] == ["1", "2", "3", "4", "5", "9", "10"]
    # recalls of the human classes: 1 -> 1/1, 2 -> 1/1, 3 -> 1/2, 5 -> 1/1, 10 -> 0/1;
    # 4 and 9 occur only on the judge side and stay out of the mean: (1+1+0.5+1+0)/5 = 0.7
    assert record["accuracy_balanced"] == pytest.approx(0.7)
    # accuracy 4/6
    assert record["accuracy"] == pytest.approx(4 / 6)
    assert record["confusion_matrix"][2] == [0, 0, 1, 1, 0, 0, 0]  # human 3: judge 3 and 4
    # Vertex turns values into str(float(x)) and asks scikit-learn; the numbers must be the same
    human = ["1.0", "2.0", "10.0", "5.0", "3.0", "3.0"]
    judge = ["1.0", "2.0", "9.0", "5.0", "3.0", "4.0"]
    with pytest.warns(UserWarning, match="classes not in y_true"):
        vertex_ba = balanced_accuracy_score(human, judge)
    assert record["accuracy_balanced"] == pytest.approx(vertex_ba)
    assert record["f1_score_balanced"] == pytest.approx(
        f1_score(human, judge, average="weighted", zero_division=0)
    )


def test_vertex_pairwise_vocabularies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _vertex_file(tmp_path)
    assert main(["calibrate", str(path), "--metric", "pref", "--json", "--n-boot", "0"]) == 0
    (record,) = _json_lines(capsys)
    assert record["kind"] == "pairwise"
    assert record["confusion_matrix_labels"] == ["A", "B", "TIE"]
    # human A: judge A,A,A,TIE -> recall 3/4; human B: B,A,B -> 2/3; human TIE: B -> 0/1
    assert record["accuracy_balanced"] == pytest.approx((3 / 4 + 2 / 3 + 0) / 3)
    assert record["confusion_matrix"] == [[3, 0, 1], [1, 2, 0], [0, 1, 0]]


def test_every_metric_reported_without_metric_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _vertex_file(tmp_path)
    assert main(["calibrate", str(path), "--json", "--n-boot", "50"]) == 0
    records = _json_lines(capsys)
    assert {r["metric"] for r in records} == {"quality", "pref"}
    for record in records:
        for key in ("metric", "kind", "n", "n_dropped", "accuracy", "cohen_kappa", "ci"):
            assert key in record
        low, high = record["ci"]["accuracy_balanced"]
        assert low <= record["accuracy_balanced"] <= high


def test_readable_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", str(_vertex_file(tmp_path)), "--n-boot", "0"]) == 0
    out = capsys.readouterr().out
    assert "balanced accuracy" in out
    assert "0.700" in out
    assert "confusion matrix" in out


def test_gate_failure_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _vertex_file(tmp_path)
    code = main(["calibrate", str(path), "--min-balanced-accuracy", "0.8", "--n-boot", "0"])
    assert code == 1
    assert "gate failed" in capsys.readouterr().err
    # quality 0.70 and pref 0.47 both pass a 0.4 bar
    assert main(["calibrate", str(path), "--min-balanced-accuracy", "0.4", "--n-boot", "0"]) == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty"),
        (b"\xff\xfe bad bytes\n", "UTF-8"),
        (b"a,b\n1,2\n", "layout"),
    ],
)
def test_bad_input_exits_2_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    assert main(["calibrate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "bad.csv" in err
    assert message.lower() in err.lower()
    assert "Traceback" not in err


def test_unknown_metric_names_what_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["calibrate", str(_vertex_file(tmp_path)), "--metric", "nope"]) == 2
    err = capsys.readouterr().err
    assert "nope" in err
    assert "quality" in err


def test_plain_table_with_several_annotators(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d", "e"],
            "ann1": ["pass", "pass", "fail", "fail", "pass"],
            "ann2": ["pass", "fail", "fail", "fail", "pass"],
            "ann3": ["pass", "pass", "fail", "pass", "fail"],
            "judge": ["pass", "pass", "pass", "fail", "pass"],
        }
    )
    path = tmp_path / "plain.csv"
    frame.to_csv(path, index=False)
    args = ["calibrate", str(path), "--id", "id", "--human", "ann1", "--human", "ann2"]
    args += ["--human", "ann3", "--judge", "judge", "--scale", "pass,fail", "--json"]
    assert main([*args, "--n-boot", "0"]) == 0
    (record,) = _json_lines(capsys)
    # majority: a pass, b pass, c fail, d fail, e pass; judge: pass pass pass fail pass
    # TPR = 3/3 (a, b, e), TNR = 1/2 (d right, c wrong)
    assert record["tpr"] == pytest.approx(1.0)
    assert record["tnr"] == pytest.approx(0.5)
    assert record["human_policy"] == "majority"
    assert record["human_ceiling"]["n_annotators"] == 3


def test_median_policy_on_words_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = pd.DataFrame({"h1": ["A", "B"], "h2": ["A", "TIE"], "j": ["A", "B"]})
    path = tmp_path / "pw.csv"
    frame.to_csv(path, index=False)
    args = ["calibrate", str(path), "--human", "h1", "--human", "h2", "--judge", "j"]
    assert main([*args, "--human-policy", "median"]) == 2
    assert "ordered scale" in capsys.readouterr().err


def _alt_file(tmp_path: Path) -> Path:
    # 40 items, four annotators and a judge on pass/fail. ann, bob and cy agree on every item;
    # dee says the opposite on items 0-9. The judge agrees with ann/bob/cy everywhere.
    truth = ["pass", "fail"] * 20
    flip = {"pass": "fail", "fail": "pass"}
    frame = pd.DataFrame(
        {
            "id": [f"i{i}" for i in range(40)],
            "ann": truth,
            "bob": truth,
            "cy": truth,
            "dee": [flip[t] if i < 10 else t for i, t in enumerate(truth)],
            "judge": truth,
        }
    )
    path = tmp_path / "alt.csv"
    frame.to_csv(path, index=False)
    return path


def test_alt_test_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _alt_file(tmp_path)
    argv = ["calibrate", str(path), "--id", "id", "--scale", "pass,fail", "--judge", "judge"]
    for name in ("ann", "bob", "cy", "dee"):
        argv += ["--human", name]
    assert main([*argv, "--alt-test", "--json", "--n-boot", "0", "--epsilon", "0.1"]) == 0
    (record,) = _json_lines(capsys)
    alt = record["alt_test"]
    assert {"winning_rate", "advantage_probability", "passed", "epsilon", "scoring"} <= set(alt)
    assert alt["epsilon"] == 0.1
    assert alt["scoring"] == "accuracy"
    by_name = {a["annotator"]: a for a in alt["annotators"]}
    # dee: on items 0-9, R = {ann, bob, cy} all agree with the judge: align(J) = 1 > align(dee) = 0,
    # so w_J = 1, w_H = 0, d = -1; elsewhere every label is the same: a tie, d = 0.
    # d = 10 x -1 and 30 x 0: mean -0.25 < 0.1 with a tiny p -> the judge beats dee
    assert by_name["dee"]["won"] is True
    assert by_name["dee"]["n"] == 40
    # ann: on items 0-9 R = {bob, cy, dee} = 2/3 agree with both ann and the judge: ties; d is all
    # 0, constant -> NaN p-value (null in JSON), never a rejection
    assert by_name["ann"]["p_value"] is None
    assert by_name["ann"]["won"] is False
    # one of four annotators beaten: omega = 0.25, the judge does not pass
    assert alt["winning_rate"] == pytest.approx(0.25)
    assert alt["passed"] is False
    assert set(by_name["ann"]) >= {"n", "p_value", "advantage_probability", "won"}
    # baselines: the humans' majority is the truth, 20 pass and 20 fail; the constant judge
    # always says the first most frequent label (pass): accuracy 0.5, kappa 0
    base = record["baselines"]
    assert base["counts"] == [20, 20]
    assert base["constant_label"] == "pass"
    assert base["constant"]["accuracy"] == pytest.approx(0.5)
    assert base["chance"]["cohen_kappa"] == pytest.approx(0.0)


def test_alt_test_table_and_skips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _alt_file(tmp_path)
    argv = ["calibrate", str(path), "--id", "id", "--scale", "pass,fail", "--judge", "judge"]
    for name in ("ann", "bob", "cy", "dee"):
        argv += ["--human", name]
    assert main([*argv, "--alt-test", "--n-boot", "0", "--alt-test-min-items", "50"]) == 0
    out = capsys.readouterr().out
    assert "Alt-Test of judge" in out
    assert "could not run" in out
    assert "skipped (40 shared items, fewer than 50)" in out
    assert "constant judge" in out
    assert "chance" in out


def test_alt_test_with_two_annotators_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _alt_file(tmp_path)
    argv = ["calibrate", str(path), "--id", "id", "--judge", "judge", "--human", "ann"]
    assert main([*argv, "--human", "bob", "--alt-test", "--n-boot", "0"]) == 2
    err = capsys.readouterr().err
    assert "Alt-Test" in err
    assert "at least 3 annotators" in err
    assert "Traceback" not in err


def test_json_has_the_ceiling_coefficients_interval_methods_and_mid_p(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = pd.DataFrame(
        {
            "ann": [1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 2, 3],
            "bob": [1, 2, 3, 4, 4, 1, 3, 3, 4, 5, 2, 2],
            "cy": [2, 2, 3, 5, 5, 1, 2, 4, 4, 5, 2, 3],
            "v1": [1, 3, 3, 4, 5, 2, 2, 3, 5, 5, 1, 3],
            "v2": [1, 2, 3, 4, 5, 1, 2, 3, 4, 4, 2, 3],
        }
    )
    path = tmp_path / "three.csv"
    frame.to_csv(path, index=False)
    argv = ["calibrate", str(path), "--json", "--n-boot", "50", "--judge", "v1", "--judge", "v2"]
    argv += ["--human", "ann", "--human", "bob", "--human", "cy"]
    assert main([*argv, "--mid-p"]) == 0
    first, second = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    coefficients = first["human_ceiling"]["coefficients"]
    assert set(coefficients) >= {"fleiss_kappa", "gwet_ac1", "krippendorff_alpha_interval"}
    assert coefficients["fleiss_kappa"]["se"] > 0
    assert first["ci_method"]["accuracy"] == "Wilson score"
    assert first["ci_method"]["cohen_kappa_quadratic"] == "BCa bootstrap"
    assert "cohen_kappa_quadratic" in first["se"]
    comparison = second["comparison"]
    assert comparison["test"] == "McNemar mid-p"
    assert comparison["p_value"] == comparison["mcnemar_midp"]
    assert [row["quantity"] for row in comparison["rows"]] == [
        "accuracy",
        "accuracy_balanced",
        "f1_score_balanced",
    ]
