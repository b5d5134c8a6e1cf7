"""guess_roles and mapping_from_roles: column roles from the naming families teams use, on synthetic
files of each family (and, with the shared_data marker, on the public datasets)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from evalcore.data import (
    FRACTIONAL,
    ColumnRole,
    LabelGroup,
    finer_scale,
    guess_roles,
    load_file,
    load_frame,
    mapping_from_roles,
    read_table,
    round_half,
)
from evalcore.errors import LabelOutOfScaleError
from evalcore.labels import LIKERT_5


def _roles(frame: pd.DataFrame) -> dict[str, tuple[str, str, str]]:
    return {r.column: (r.role, r.criterion, r.name) for r in guess_roles(frame)}


def _names(columns: list[str]) -> dict[str, tuple[str, str, str]]:
    return _roles(pd.DataFrame(columns=columns))


def test_human_criterion_number_and_judge_model_criterion() -> None:
    """``human_<criterion>_<n>``, ``judge_<model>_<criterion>`` with a model name holding an
    underscore, the judge's raw reply as its reason and the mean as metadata."""
    roles = _names(
        [
            "doc_id",
            "context",
            "response",
            "human_fluency_1",
            "human_fluency_2",
            "human_fluency_mean",
            "human_tone_1",
            "human_tone_2",
            "judge_big_model_7b_fluency",
            "judge_big_model_7b_fluency_raw",
            "judge_big_model_7b_tone",
            "judge_small_fluency",
            "judge_small_tone",
        ]
    )
    assert roles["doc_id"] == ("metadata", "", "")
    assert roles["human_fluency_2"] == ("human", "fluency", "human_2")
    assert roles["human_tone_1"] == ("human", "tone", "human_1")
    assert roles["human_fluency_mean"][0] == "metadata"
    assert roles["judge_big_model_7b_fluency"] == ("judge", "fluency", "judge_big_model_7b")
    assert roles["judge_big_model_7b_fluency_raw"] == ("reason", "fluency", "judge_big_model_7b")
    assert roles["judge_small_tone"] == ("judge", "tone", "judge_small")


def test_judges_split_by_a_grid_when_no_criterion_is_known() -> None:
    """Unknown aspect words are read from the grid: each last word comes with two models."""
    roles = _names(
        ["prompt", "response", "judge_m1_zing", "judge_m1_zang", "judge_m2_zing", "judge_m2_zang"]
    )
    assert roles["judge_m2_zang"] == ("judge", "zang", "judge_m2")
    assert roles["judge_m1_zing"] == ("judge", "zing", "judge_m1")


def test_prefix_and_suffix_numbers_names_and_role_words() -> None:
    roles = _names(
        [
            "id",
            "question",
            "answer",
            "rater_1",
            "rater_x",
            "annotator_2_helpfulness",
            "coherence_human_3",
            "expert_b",
            "human_n_agree",
            "human_comment",
        ]
    )
    assert roles["rater_1"] == ("human", "", "rater_1")
    assert roles["rater_x"] == ("human", "", "rater_x")
    assert roles["annotator_2_helpfulness"] == ("human", "helpfulness", "annotator_2")
    assert roles["coherence_human_3"] == ("human", "coherence", "human_3")
    assert roles["expert_b"] == ("human", "", "expert_b")
    assert roles["human_n_agree"][0] == "metadata"
    assert roles["human_comment"][0] == "metadata"


def test_an_unnumbered_human_column_beside_numbered_ones_is_an_aggregate() -> None:
    roles = _names(
        ["item_id", "prompt", "response_a", "response_b", "human_1", "human_2", "human_choice"]
    )
    assert roles["human_choice"][0] == "metadata"
    assert roles["human_1"] == ("human", "", "human_1")
    assert (roles["response_a"][0], roles["response_b"][0]) == ("response_a", "response_b")


def test_model_name_prefixes_and_llm_words() -> None:
    roles = _names(
        ["id", "q", "answer", "gpt4o_helpfulness", "claude3_helpfulness", "llm_score", "llm_reason"]
    )
    assert roles["gpt4o_helpfulness"] == ("judge", "helpfulness", "gpt4o")
    assert roles["claude3_helpfulness"] == ("judge", "helpfulness", "claude3")
    assert roles["llm_score"] == ("judge", "", "llm")
    assert roles["llm_reason"] == ("reason", "", "llm")


def test_a_reason_without_its_judge_is_metadata_and_one_reason_per_judge() -> None:
    roles = _names(
        ["prompt", "response", "judge_a_raw", "judge_b_choice", "judge_b_raw", "judge_b_reason"]
    )
    assert roles["judge_a_raw"][0] == "metadata"
    assert roles["judge_b_reason"] == ("reason", "", "judge_b")
    assert roles["judge_b_raw"][0] == "metadata"  # an explanation is kept before a raw reply


def test_unmarked_grids_of_labels_by_their_values() -> None:
    frame = pd.DataFrame(
        {
            "id": ["1", "2", "3"],
            "prompt": ["a", "b", "c"],
            "response": ["x", "y", "z"],
            "fluency_alice": [1, 2, 3],
            "fluency_bob": [2, 2, 4],
            "zest_alice": [3, 3, 1],
            "zest_bob": [1, 1, 2],
            "model_a": ["m1", "m2", "m1"],
            "model_b": ["m3", "m3", "m2"],
            "notes_alice": ["long words here", "more", "text"],
        }
    )
    roles = _roles(frame)
    assert roles["fluency_alice"] == ("human", "fluency", "alice")
    # an unknown aspect, named by names that recur across aspects
    assert roles["zest_bob"] == ("human", "zest", "bob")
    assert roles["model_a"][0] == roles["model_b"][0] == "metadata"
    assert roles["notes_alice"][0] == "metadata"
    last = _roles(
        pd.DataFrame(
            {"prompt": ["a", "b"], "response": ["x", "y"], "ann_tone": [1, 2], "bo_tone": [2, 2]}
        )
    )
    assert last["ann_tone"] == ("human", "tone", "ann")


def test_text_in_a_label_column_makes_it_a_reason_and_text_grids_are_not_labels() -> None:
    frame = pd.DataFrame(
        {
            "prompt": ["a", "b", "c"],
            "response": ["x", "y", "z"],
            "judge_gpt": [1, 2, 3],
            "judge_gpt_output": ["It is fine because …", "Not good at all, since …", "Mixed …"],
            "title_en": ["A long title", "Another long title", "A third"],
            "title_fr": ["Un long titre", "Un autre", "Un troisième"],
        }
    )
    roles = _roles(frame)
    assert roles["judge_gpt_output"] == ("reason", "", "judge_gpt")
    assert roles["title_en"][0] == roles["title_fr"][0] == "metadata"


def test_vertex_and_long_files() -> None:
    vertex = _names(
        [
            "prompt",
            "response",
            "fluency/human_rating",
            "fluency/human_rating/alice",
            "fluency/score",
            "fluency/explanation",
            "safety/human_rating",
            "safety/score",
        ]
    )
    assert vertex["fluency/human_rating/alice"] == ("human", "fluency", "alice")
    assert vertex["fluency/score"] == ("judge", "fluency", "judge")
    assert vertex["fluency/explanation"] == ("reason", "fluency", "judge")
    assert vertex["safety/human_rating"] == ("human", "safety", "human")
    long = _names(["item_id", "prompt", "response", "annotator", "criterion", "label"])
    assert [long[c][0] for c in ("item_id", "annotator", "criterion", "label")] == [
        "item_id",
        "annotator",
        "criterion",
        "label",
    ]


def test_a_unique_id_column_by_its_name_and_values() -> None:
    frame = pd.DataFrame({"row_id": ["r1", "r2"], "doc_id": ["d", "d"], "response": ["x", "y"]})
    roles = _roles(frame)
    assert roles["row_id"][0] == "item_id"
    assert roles["doc_id"][0] == "metadata"  # not unique: the rows are numbered instead


def test_mapping_from_roles_loads_one_label_set_per_criterion() -> None:
    frame = pd.DataFrame(
        {
            "id": ["a", "b", "c"],
            "response": ["x", "y", "z"],
            "human_tone_1": [1, 2, 3],
            "human_tone_2": [1, 3, 3],
            "human_tone_mean": [1.0, 2.5, 3.0],
            "human_pace_1": [5, 4, 3],
            "judge_m_tone": [1, 2, 2],
            "judge_m_tone_reason": ["r1", "r2", "r3"],
            "judge_m_pace": [5, 5, 3],
        }
    )
    mapping = mapping_from_roles(guess_roles(frame))
    assert mapping.exact
    assert [g.metric for g in mapping.groups] == ["tone", "pace"]
    loaded = load_frame(frame, source="aspects.csv", mapping=mapping)
    tone = loaded.label_set("tone")
    assert tone.annotators == ("human_1", "human_2")
    assert tone.judge_names == ("judge_m",)
    assert tone.reasons_of("judge_m").tolist() == ["r1", "r2", "r3"]  # type: ignore[union-attr]
    assert loaded.label_set("pace").annotators == ("human_1",)
    # labels never become items' fields; the mean is metadata
    assert list(loaded.items.columns) == ["item_id", "response", "human_tone_mean"]


def test_an_exact_mapping_ignores_the_layouts_own_fields() -> None:
    frame = pd.DataFrame({"question": ["q"], "answer": ["a"], "context": ["c"]})
    roles = [
        ColumnRole("question", "prompt"),
        ColumnRole("answer", "response"),
        ColumnRole("context", "metadata"),
    ]
    loaded = load_frame(frame, mapping=mapping_from_roles(roles))
    # a metadata column never takes a canonical field's name (it would become that field)
    assert list(loaded.items.columns) == ["item_id", "prompt", "response", "context_original"]
    assert loaded.items["context_original"].tolist() == ["c"]


def test_label_groups_check_their_pairs() -> None:
    with pytest.raises(TypeError):
        LabelGroup("x", ("not a pair",))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="metric"):
        LabelGroup(" ")


# --- fractional scores -------------------------------------------------------------------------------


def test_round_half_and_finer_scales() -> None:
    # half up: floor(x + 0.5); half to even: the even neighbour of a tie (numpy's and IEEE's rule)
    assert [round_half(x, "half-up") for x in (0.5, 1.5, 2.5, 3.4999)] == [1.0, 2.0, 3.0, 3.0]
    assert [round_half(x, "half-even") for x in (0.5, 1.5, 2.5, 3.6)] == [0.0, 2.0, 2.0, 4.0]
    assert finer_scale([1, 2.25, 5]).labels[:3] == (1.0, 1.25, 1.5)  # type: ignore[union-attr]
    assert finer_scale([1.2, 2]).labels == (1.0, 1.2, 1.4, 1.6, 1.8, 2.0)  # type: ignore[union-attr]
    assert finer_scale([1.35]) is None
    assert set(FRACTIONAL) == {"refuse", "finer", "half-up", "half-even"}


def test_fractional_choices_when_loading(write_file) -> None:  # type: ignore[no-untyped-def]
    # 2.5 and 3.5: half up gives 3 and 4; half to even gives 2 and 4; human 4.5 is rounded too
    path = write_file("f.csv", "h,j\n4.5,2.5\n3,3.5\n5,4\n")
    frame = read_table(path)
    roles = [ColumnRole("h", "human", "q", "ann"), ColumnRole("j", "judge", "q", "m")]
    mapping = mapping_from_roles(roles)
    with pytest.raises(LabelOutOfScaleError, match="fractional='finer'"):
        load_file(path, mapping=mapping, scales=LIKERT_5)
    up = load_file(path, mapping=mapping, scales=LIKERT_5, fractional="half-up")
    assert up.label_set("q").judges["m"].tolist() == [3.0, 4.0, 4.0]
    assert up.label_set("q").human["ann"].tolist() == [5.0, 3.0, 5.0]
    even = load_file(path, mapping=mapping, scales=LIKERT_5, fractional="half-even")
    assert even.label_set("q").judges["m"].tolist() == [2.0, 4.0, 4.0]
    assert even.label_set("q").human["ann"].tolist() == [4.0, 3.0, 5.0]
    assert "j: 2 fractional scores rounded half to even" in even.notes
    finer = load_frame(frame, mapping=mapping, fractional="finer")
    assert finer.label_set("q").scale.display_labels == ["2", "2.5", "3", "3.5", "4", "4.5", "5"]


# --- the real files --------------------------------------------------------------------------------


@pytest.mark.shared_data
def test_summeval_roles(shared_datasets: Path) -> None:
    frame = read_table(shared_datasets / "summeval_llm_judges" / "summeval_llm_judges.csv")
    roles = guess_roles(frame)
    labels = [r for r in roles if r.is_label]
    assert {r.criterion for r in labels} == {"coherence", "consistency", "fluency", "relevance"}
    assert {r.name for r in labels if r.role == "human"} == {"human_1", "human_2", "human_3"}
    assert {r.name for r in labels if r.role == "judge"} == {
        "judge_gpt4",
        "judge_gpt35",
        "judge_llama2_70b",
    }
    assert len(labels) == 24
    by_column = {r.column: r for r in roles}
    assert by_column["human_relevance_mean"].role == "metadata"
    assert by_column["judge_gpt4_fluency_raw"].role == "reason"
    assert (by_column["context"].role, by_column["response"].role) == ("context", "response")


@pytest.mark.shared_data
def test_pandalm_roles(shared_datasets: Path) -> None:
    frame = read_table(shared_datasets / "pandalm_testset" / "pandalm_testset.csv")
    roles = {r.column: r for r in guess_roles(frame)}
    assert [roles[f"human_{n}"].role for n in (1, 2, 3)] == ["human"] * 3
    assert roles["judge_gpt35_choice"].name == "judge_gpt35"
    assert roles["judge_pandalm7b_reason"].role == "reason"
    assert roles["human_choice"].role == roles["human_n_agree"].role == "metadata"
    assert roles["model_a"].role == "metadata"
