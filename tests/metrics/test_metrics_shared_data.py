"""Optional checks on the real public data in ../shared/datasets (skipped when it is absent)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn import metrics as skm

import evalcore.metrics as m

pytestmark = pytest.mark.shared_data


def _round_half_up(values: pd.Series) -> np.ndarray:
    return np.floor(values.to_numpy(dtype=float) + 0.5)


@pytest.fixture(scope="module")
def summeval(shared_datasets: Path) -> pd.DataFrame:
    return pd.read_csv(shared_datasets / "summeval_llm_judges" / "summeval_llm_judges.csv")


@pytest.fixture(scope="module")
def pandalm(shared_datasets: Path) -> pd.DataFrame:
    return pd.read_csv(shared_datasets / "pandalm_testset" / "pandalm_testset.csv")


def test_summeval_fluency_matches_sklearn(summeval: pd.DataFrame) -> None:
    human = _round_half_up(summeval["human_fluency_mean"])
    judge = _round_half_up(summeval["judge_gpt4_fluency"])
    report = m.calibrate(human, judge, kind="ordinal", metric="fluency", n_boot=200)
    keep = ~np.isnan(judge)
    assert report.n == int(keep.sum())
    assert report.accuracy_balanced == pytest.approx(
        skm.balanced_accuracy_score(human[keep], judge[keep])
    )
    assert report.f1_score_balanced == pytest.approx(
        skm.f1_score(human[keep], judge[keep], average="weighted", zero_division=0)
    )
    low, high = report.ci["accuracy_balanced"]
    assert low < report.accuracy_balanced < high


def test_summeval_judge_that_says_five_to_almost_everything(summeval: pd.DataFrame) -> None:
    human = _round_half_up(summeval["human_consistency_mean"])
    judge = _round_half_up(summeval["judge_gpt4_consistency"])
    report = m.calibrate(human, judge, labels=[1, 2, 3, 4, 5], n_boot=0)
    assert np.nanmean(judge == 5) > 0.8  # GPT-4 gives 5 to most summaries
    # most human labels are 5 too, so plain accuracy looks good, but the rarer classes are missed
    assert report.accuracy > 0.75
    assert report.accuracy_balanced < 0.45
    assert report.n_dropped == int(np.isnan(judge).sum())  # unparsed judge answers are dropped


def test_pandalm_annotators(pandalm: pd.DataFrame) -> None:
    ratings = pandalm[["human_1", "human_2", "human_3"]]
    majority = m.aggregate_labels(ratings, policy="majority")
    assert (majority == pandalm["human_choice"].to_numpy()).all()  # every item has a majority
    alpha = m.krippendorff_alpha(ratings)
    krippendorff = pytest.importorskip("krippendorff")
    codes = ratings.replace({"model_A": 0, "model_B": 1, "tie": 2}).to_numpy(dtype=float)
    assert alpha == pytest.approx(
        krippendorff.alpha(reliability_data=codes.T, level_of_measurement="nominal")
    )


def test_pandalm_judge_with_invalid_verdicts(pandalm: pd.DataFrame) -> None:
    judge = pandalm["judge_gpt35_choice"].replace({"invalid": None})
    report = m.calibrate(pandalm["human_choice"], judge, kind="pairwise", n_boot=0)
    assert report.n_dropped == int((pandalm["judge_gpt35_choice"] == "invalid").sum())
    assert report.labels == ("model_A", "model_B", "tie")
    assert report.accuracy_balanced == pytest.approx(
        skm.balanced_accuracy_score(pandalm["human_choice"][judge.notna()], judge.dropna())
    )
