"""Optional: the real public datasets in ../shared/datasets load with a mapping (skipped when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcore.data import ColumnMapping, labels_long, load_file, suggest_mapping
from evalcore.errors import LabelOutOfScaleError
from evalcore.labels import LIKERT_5, PAIRWISE

pytestmark = pytest.mark.shared_data


def test_pandalm_pairwise_with_three_annotators_and_two_judges(shared_datasets: Path) -> None:
    path = shared_datasets / "pandalm_testset" / "pandalm_testset.csv"
    mapping = ColumnMapping(
        item_id="item_id",
        prompt="prompt",
        response_a="response_a",
        response_b="response_b",
        human=("human_1", "human_2", "human_3"),
        judge=("judge_gpt35_choice", "judge_pandalm7b_choice"),
        metric="preference",
    )
    loaded = load_file(path, mapping=mapping)
    assert loaded.kind == "pairwise"
    assert loaded.n_rows == 999
    label_set = loaded.label_set("preference")
    assert label_set.scale == PAIRWISE
    assert label_set.n_items == 999
    assert label_set.annotators == ("human_1", "human_2", "human_3")
    # The README's counts: human_1 has model_B 475, model_A 427, tie 97; gpt-3.5 gave 25 invalid
    # verdicts, which count as missing rather than as wrong labels.
    assert label_set.human["human_1"].value_counts().to_dict() == {"B": 475, "A": 427, "TIE": 97}
    gpt = label_set.judges["judge_gpt35_choice"]
    assert gpt.isna().sum() == 25
    assert gpt.value_counts().to_dict() == {"B": 476, "A": 460, "TIE": 38}
    assert label_set.judges["judge_pandalm7b_choice"].notna().all()
    assert any("25 unreadable judge answers" in note for note in loaded.notes)
    assert loaded.items["item_id"].iloc[0] == "0"
    assert {"prompt", "response_a", "response_b", "human_choice"} <= set(loaded.items.columns)
    assert len(labels_long(label_set)) == 3 * 999
    suggested = suggest_mapping(loaded.frame)
    assert suggested.human[:3] == ("human_1", "human_2", "human_3")
    assert suggested.kind == "pairwise"


def test_summeval_one_aspect(shared_datasets: Path) -> None:
    path = shared_datasets / "summeval_llm_judges" / "summeval_llm_judges.csv"
    mapping = ColumnMapping(
        response="response",
        context="context",
        reference="reference",
        human=("human_fluency_1", "human_fluency_2", "human_fluency_3"),
        judge=("judge_gpt4_fluency", "judge_gpt35_fluency", "judge_llama2_70b_fluency"),
        metric="fluency",
    )
    with pytest.raises(LabelOutOfScaleError, match="judge_gpt4_fluency: 37 labels are not on"):
        load_file(path, mapping=mapping, scales=LIKERT_5)
    loaded = load_file(path, mapping=mapping, scales=LIKERT_5, round_half_up=True)
    label_set = loaded.label_set("fluency")
    assert label_set.n_items == 1200
    assert loaded.items["item_id"].tolist()[:2] == ["1", "2"]
    judges = label_set.judges
    # The README: Llama-2-70b left 35 fluency answers unparsed (empty cells).
    assert judges["judge_llama2_70b_fluency"].isna().sum() == 35
    assert set(judges["judge_gpt4_fluency"].dropna()) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    assert label_set.human.notna().all().all()
