"""Honest baselines, the Alt-Test, the human-level rate and the judge's agreement with itself,
computed by the one engine from a store or a file."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.data import ColumnMapping, load_file
from evalcore.errors import EvalcoreError
from evalcore.labels import PASS_FAIL
from evalcore.metrics import alt_test
from evalcore.report import (
    CHANCE_COLUMN,
    CONSTANT_COLUMN,
    calibrate_runs,
    file_data,
    load_calibration_data,
    load_samples,
    prevalence_row,
    run_alt_test,
    run_alt_test_curve,
    run_rate_estimate,
    runs_as_samples,
    self_agreement,
)
from evalcore.store import JudgeResultInput, Store
from tests.report.conftest import build_binary, build_tiny


def test_references_by_hand(sqlite_store: Store) -> None:
    tiny = build_tiny(sqlite_store)
    data = load_calibration_data(sqlite_store, tiny.dataset_id, tiny.criterion_id)
    calibration = calibrate_runs(data, n_boot=0)
    found = calibration.references()
    # majority labels: q0 1, q1 2, q3 3, q4 1, q5 2, q6 3 -> counts [2, 2, 2]; the mode is label 1
    assert found.counts.tolist() == [2, 2, 2]
    assert found.mode == 0
    # the constant judge says 1 everywhere: accuracy 2/6; balanced accuracy (1 + 0 + 0) / 3
    assert found.constant["accuracy"] == pytest.approx(1 / 3)
    assert found.constant["accuracy_balanced"] == pytest.approx(1 / 3)
    # chance with shares 1/3 each: accuracy 3 * (1/3)^2 = 1/3, quadratic kappa 0
    assert found.chance["accuracy"] == pytest.approx(1 / 3)
    assert found.chance["cohen_kappa_quadratic"] == pytest.approx(0.0, abs=1e-12)
    text = calibration.table().text
    assert text.loc[prevalence_row(1.0), CHANCE_COLUMN] == "33.3%"
    assert text.loc[prevalence_row(1.0), CONSTANT_COLUMN] == "always this label"
    assert text.loc["accuracy", CONSTANT_COLUMN] == "0.333"
    assert text.loc["Spearman", CONSTANT_COLUMN] == "–"  # a constant has no rank correlation
    assert not calibration.table().best[[CONSTANT_COLUMN, CHANCE_COLUMN]].any().any()


def test_rate_estimate_from_the_store_by_hand(sqlite_store: Store) -> None:
    binary = build_binary(sqlite_store)
    data = load_calibration_data(sqlite_store, binary.dataset_id, binary.criterion_id)
    calibration = calibrate_runs(data, n_boot=0)
    out = run_rate_estimate(data, binary.run_id, calibration.human, n_boot=200)
    # labelled y = [1, 1, 1, 0, 0, 0], judge f = [1, 1, 0, 0, 0, 1]; unlabelled f~ = [1, 1, 0, 0]
    assert out.labelled.rate == pytest.approx(0.5)
    assert out.labelled.n_labelled == 6
    # ppi-python: Cov(y, f) = (4 * 0.25 - 2 * 0.25) / 6 = 1/12 (divides by n); Var(f over 10,
    # ddof 1) = 0.25 * 10 / 9; lam = (1/12) / ((1 + 6/4) * 0.27778) = 0.12;
    # theta = lam * 0.5 + 0.5 - lam * 0.5 = 0.5
    assert out.ppi.lam == pytest.approx((1 / 12) / (2.5 * 0.25 * 10 / 9))
    assert out.ppi.rate == pytest.approx(0.5)
    assert out.ppi.n_unlabelled == 4
    # Rogan-Gladen: p_obs 0.5, TPR = TNR = 2/3 -> (0.5 + 2/3 - 1) / (1/3) = 0.5
    assert out.rogan_gladen is not None
    assert out.rogan_gladen.rate == pytest.approx(0.5)


def test_rate_estimate_refuses_other_kinds(sqlite_store: Store) -> None:
    tiny = build_tiny(sqlite_store)
    data = load_calibration_data(sqlite_store, tiny.dataset_id, tiny.criterion_id)
    with pytest.raises(EvalcoreError, match="fluency: the human-level rate needs a binary"):
        run_rate_estimate(data, tiny.v1, calibrate_runs(data, n_boot=0).human)


def _alt_file(tmp_path: Path, n: int = 60, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, n)
    frame = pd.DataFrame({"id": [f"i{k}" for k in range(n)]})
    for name in ("ann", "bob", "cy", "dee"):
        noisy = np.clip(truth + rng.integers(-1, 2, n) * (rng.random(n) < 0.5), 1, 5)
        frame[name] = noisy.astype(float)
        frame.loc[rng.random(n) < 0.1, name] = np.nan
    frame["judge"] = np.clip(truth + rng.integers(-1, 2, n) * (rng.random(n) < 0.2), 1, 5)
    path = tmp_path / "alt.csv"
    frame.to_csv(path, index=False)
    return path


def test_alt_test_of_a_file_equals_the_library(tmp_path: Path) -> None:
    path = _alt_file(tmp_path)
    mapping = ColumnMapping(
        item_id="id", human=("ann", "bob", "cy", "dee"), judge=("judge",), metric="quality"
    )
    (data,) = file_data(load_file(path, mapping=mapping))
    result = run_alt_test(data, data.runs[0].info.id)
    assert result.scoring == "neg_rmse"  # a numeric scale
    raw = pd.read_csv(path)
    direct = alt_test(raw[["ann", "bob", "cy", "dee"]], raw["judge"], scoring="neg_rmse")
    assert result.to_dict() == direct.to_dict()
    curve = run_alt_test_curve(data, data.runs[0].info.id)
    assert curve["epsilon"].tolist()[0] == 0.0
    assert curve["epsilon"].tolist()[-1] == 0.3
    row = curve[curve["epsilon"] == 0.2].iloc[0]
    assert row["winning_rate"] == pytest.approx(result.winning_rate, nan_ok=True)


def test_alt_test_needs_three_annotators(sqlite_store: Store) -> None:
    tiny = build_tiny(sqlite_store)
    data = load_calibration_data(sqlite_store, tiny.dataset_id, tiny.criterion_id)
    if data.human.shape[1] >= 3:
        pytest.skip("the tiny world has a third annotator column")
    with pytest.raises(EvalcoreError, match=r"fluency: Alt-Test: .*at least 3 annotators"):
        run_alt_test(data, tiny.v1)


def test_self_agreement_from_stored_samples(sqlite_store: Store) -> None:
    binary = build_binary(sqlite_store)
    store = sqlite_store
    pk = {ext: int(i) for i, ext in store.items_frame(binary.dataset_id)["item_id"].items()}
    # three samples per item on q0..q5; the majority is the run's label
    samples = [
        ["pass", "pass", "pass"],  # q0 human pass
        ["fail", "pass", "pass"],  # q1 human pass: sample 1 wrong, majority right
        ["fail", "pass", "pass"],  # q2 human pass: sample 1 wrong, majority right
        ["fail", "fail", "fail"],  # q3 human fail
        ["fail", "fail", "pass"],  # q4 human fail
        ["pass", "pass", "fail"],  # q5 human fail: both wrong
    ]
    run = store.create_run(binary.dataset_id, binary.criterion_id, name="sampled")
    store.record_results(
        run.id,
        [
            JudgeResultInput(
                item_id=pk[f"q{i}"],
                status="ok",
                label=max(set(s), key=s.count),
                samples=s,  # type: ignore[arg-type]
            )
            for i, s in enumerate(samples)
        ],
    )
    data = load_calibration_data(store, binary.dataset_id, binary.criterion_id, [run.id])
    human = calibrate_runs(data, n_boot=0).human
    table = load_samples(store, run.id, PASS_FAIL, data.items.index)
    assert list(table.columns) == ["1", "2", "3"]
    assert table.iloc[1].tolist() == ["fail", "pass", "pass"]
    found = self_agreement(table, human, PASS_FAIL)
    assert found is not None
    assert found.n_samples == 3
    assert found.n_items == 6
    # q1, q2, q4, q5 have mixed samples: 4 of 6
    assert found.disagree_share == pytest.approx(4 / 6)
    # sample 1 (pass, fail, fail, fail, fail, pass) is right on q0, q3, q4 -> 3/6;
    # the majority (pass, pass, pass, fail, fail, pass) on q0..q4 -> 5/6
    assert found.single.accuracy == pytest.approx(3 / 6)
    assert found.majority.accuracy == pytest.approx(5 / 6)
    assert -1.0 <= found.krippendorff_alpha <= 1.0
    assert found.to_dict()["n_samples"] == 3
    # the run that kept no samples gives an empty table, and no self-agreement
    none = load_samples(store, binary.run_id, PASS_FAIL, data.items.index)
    assert none.shape[1] == 0
    assert self_agreement(none, human, PASS_FAIL) is None


def test_repeated_runs_are_compared_like_samples(sqlite_store: Store) -> None:
    tiny = build_tiny(sqlite_store)
    data = load_calibration_data(sqlite_store, tiny.dataset_id, tiny.criterion_id)
    table = runs_as_samples(data.runs)
    assert list(table.columns) == ["v1", "v2"]
    found = self_agreement(table, calibrate_runs(data, n_boot=0).human, data.scale)
    # both runs labelled q0..q4 and q6? v1: q5 unparsed; v2: q6 failed, q7 none -> q0..q4 pairable
    # v1 = 1, 3, 2, 3, 3 and v2 = 1, 2, 3, 2, 1 on q0..q4: only q0 agrees -> 4 of 5 disagree
    assert found is not None
    assert found.n_items == 5
    assert found.disagree_share == pytest.approx(4 / 5)
    assert not math.isnan(found.krippendorff_alpha)


def test_the_html_report_shows_the_alt_test_rates_and_baselines(sqlite_store: Store) -> None:
    from evalcore.demo.seed import seed_demo
    from evalcore.report import build_report

    project = seed_demo(sqlite_store)
    page = build_report(sqlite_store, project.id, n_boot=50)
    assert "Can the judge replace an annotator? (Alt-Test)" in page
    assert "passes the Alt-Test at ε = 0.2" in page or "does not pass the Alt-Test" in page
    assert "judge wins (ρ)" in page
    assert "The rate people would give the unlabelled items" in page
    assert "PPI++ (λ = " in page
    assert "constant judge" in page
    assert "share of pass (humans)" in page
