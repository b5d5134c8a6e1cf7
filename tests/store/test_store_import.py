"""The import plan: a file's column roles become criteria (one per aspect), annotators, judges, item
fields and metadata; fractional scores by the user's choice; a file without its response refused;
the roles kept with the dataset, so that only item fields reach the judge and the annotators.

Synthetic files in the shapes teams use (the SummEval shape among them); real SQLite and PostgreSQL.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from evalcore.data import ColumnRole
from evalcore.errors import ConfigError, DataError, LabelOutOfScaleError, MissingColumnError
from evalcore.labels import LIKERT_5, Scale
from evalcore.runs import judge_items, version_variables
from evalcore.store import (
    ImportPlan,
    ProjectRecord,
    Store,
    apply_import,
    check_import,
    propose_import,
    roles_from_table,
)

ASPECTS = ("clarity", "accuracy")


def _aspects_file(
    n: int = 6, aspects: tuple[str, ...] = ASPECTS, judges: tuple[str, ...] = ("m1", "big_7b")
) -> bytes:
    """The SummEval shape: per aspect three numbered experts and their mean, judges named
    ``judge_<model>_<aspect>`` (the first with its raw reply); the first judge answers 3.5 on item
    2 of the first aspect and 4.5 on item 5."""
    data: dict[str, list[object]] = {
        "doc_id": ["d1"] * n,
        "system_id": [f"M{i % 2}" for i in range(n)],  # not unique: the rows are numbered
        "context": [f"Article {i}." for i in range(n)],
        "response": [f"Summary {i}." for i in range(n)],
        "reference": [f"Reference {i}." for i in range(n)],
    }
    for aspect in aspects:
        experts = [[1 + (i + k) % 5 for i in range(n)] for k in range(3)]
        for k, labels in enumerate(experts, start=1):
            data[f"human_{aspect}_{k}"] = labels
        data[f"human_{aspect}_mean"] = [round(sum(x) / 3, 4) for x in zip(*experts, strict=True)]
    for number, judge in enumerate(judges):
        for aspect in aspects:
            data[f"judge_{judge}_{aspect}"] = [1 + (i + number) % 5 for i in range(n)]
            if number == 0:
                data[f"judge_{judge}_{aspect}_raw"] = [f"Score: {1 + i % 5}" for i in range(n)]
    first = f"judge_{judges[0]}_{aspects[0]}"
    data[first][1] = 3.5
    data[first][4] = 4.5
    return pd.DataFrame(data).to_csv(index=False).encode()


def _plan(
    store: Store, project: ProjectRecord, data: bytes, name: str = "aspects.csv", **kw: object
) -> ImportPlan:
    return propose_import(data, name=name, criteria=store.list_criteria(project.id), **kw)  # type: ignore[arg-type]


def test_the_plan_of_a_multi_aspect_file(store: Store, project: ProjectRecord) -> None:
    plan = _plan(store, project, _aspects_file())
    assert [(c.name, c.is_new, c.humans, c.judges) for c in plan.criteria] == [
        (aspect, True, ("human_1", "human_2", "human_3"), ("judge_m1", "judge_big_7b"))
        for aspect in ASPECTS
    ]
    assert all(c.scale == Scale.likert(1, 5) for c in plan.criteria)
    assert [c.fractional for c in plan.criteria] == [2, 0]
    assert plan.metadata == ("doc_id", "system_id", "human_clarity_mean", "human_accuracy_mean")
    assert plan.item_fields == ()
    assert plan.left_out == ()
    assert plan.unplaced == ()
    lines = plan.describe()
    assert lines[0] == "aspects.csv: a pointwise dataset of 6 rows"
    assert (
        "criterion clarity (new criterion, 1–5): annotators human_1, human_2, human_3; judges judge_m1, judge_big_7b"
        in lines
    )
    assert any(line.startswith("fractional scores: 2;") for line in lines)
    table = plan.table()
    assert list(table.columns) == ["column", "role", "criterion", "name", "example"]
    assert [replace(r, note="") for r in plan.roles] == list(roles_from_table(table))


def test_fractional_scores_by_the_users_choice(store: Store, project: ProjectRecord) -> None:
    data = _aspects_file()
    with pytest.raises(
        LabelOutOfScaleError, match=r"judge_m1_clarity: 2 labels .*3\.5, 4\.5.*rows 2, 5"
    ):
        check_import(_plan(store, project, data), data)
    up = check_import(_plan(store, project, data, fractional="half-up"), data)
    clarity = dict(up.targets)
    judges = next(s for s in clarity if s.metric == "clarity").judges["judge_m1"].tolist()
    assert judges[1] == 4.0
    assert judges[4] == 5.0
    even = check_import(_plan(store, project, data, fractional="half-even"), data)
    judges = next(s for s, _c in even.targets if s.metric == "clarity").judges["judge_m1"].tolist()
    assert judges[1] == 4.0
    assert judges[4] == 4.0
    finer = _plan(store, project, data, fractional="finer")
    assert finer.criteria[0].scale is not None
    assert finer.criteria[0].scale.display_labels == [
        "1",
        "1.5",
        "2",
        "2.5",
        "3",
        "3.5",
        "4",
        "4.5",
        "5",
    ]
    assert finer.criteria[1].scale == Scale.likert(1, 5)  # accuracy has no fractions
    checked = check_import(finer, data)
    judges = (
        next(s for s, _c in checked.targets if s.metric == "clarity").judges["judge_m1"].tolist()
    )
    assert judges[1] == 3.5


def test_finer_scores_do_not_fit_an_existing_whole_criterion(
    store: Store, project: ProjectRecord
) -> None:
    store.create_criterion(project.id, "Clarity", kind="pointwise", scale=LIKERT_5)
    data = _aspects_file()
    plan = _plan(store, project, data, fractional="finer")
    clarity = plan.criteria[0]
    assert (clarity.name, clarity.is_new) == ("Clarity", False)  # the name matched in any case
    with pytest.raises(DataError, match="exists with the scale 1–5, which has no room for the 2"):
        check_import(plan, data)


def test_apply_saves_the_dataset_criteria_labels_and_roles(
    store: Store, project: ProjectRecord
) -> None:
    data = _aspects_file()
    plan = _plan(store, project, data, fractional="half-up")
    roles = [replace(r, role="item_field") if r.column == "system_id" else r for r in plan.roles]
    checked = check_import(replace(plan, roles=tuple(roles)), data)
    assert checked.describe()[:2] == ["18 human labels for clarity", "judge judge_m1 for clarity"]
    result = apply_import(store, project.id, checked, dataset_name="aspects")
    assert result.created == ASPECTS
    assert result.message.startswith("Saved 'aspects' version 1 with 6 items and 18 human labels")
    dataset = store.get_dataset(result.dataset.id)
    assert dataset.item_fields == ("system_id",)
    assert set(dataset.label_columns) >= {
        "human_clarity_1",
        "judge_m1_clarity",
        "judge_m1_clarity_raw",
    }
    assert dict(dataset.column_roles)["human_clarity_mean"] == "metadata"
    clarity = store.get_criterion_by_name(project.id, "clarity")
    assert list(store.annotation_matrix(dataset.id, clarity.id).columns) == [
        "human_1",
        "human_2",
        "human_3",
    ]
    runs = [r for r in store.list_runs(project_id=project.id) if r.dataset_id == dataset.id]
    assert sorted((r.name, r.criterion_id) for r in runs) == sorted(
        (f"imported: {j}", store.get_criterion_by_name(project.id, a).id)
        for a in ASPECTS
        for j in ("judge_m1", "judge_big_7b")
    )
    m1 = next(r for r in runs if r.name == "imported: judge_m1" and r.criterion_id == clarity.id)
    assert store.results_frame(m1.id)["reason"].tolist()[0] == "Score: 1"
    # only item fields reach the judge: no label column, no metadata, the marked field yes
    items, _ = judge_items(store, dataset.id)
    fields = set(items[0].fields)
    assert {"response", "context", "reference", "system_id"} <= fields
    assert not fields & {"human_clarity_mean", "doc_id", "human_clarity_1", "judge_m1_clarity"}
    template = {
        "name": "t",
        "criterion": "clarity",
        "kind": "pointwise",
        "scale": [1, 2, 3, 4, 5],
        "system": "s",
        "user": "{{ response }}",
        "output": {"parser": "json", "label_field": "score"},
    }
    variables = version_variables(template, items)
    assert "system_id" in variables
    assert "human_clarity_mean" not in variables


def test_annotators_see_item_fields_only(store: Store, project: ProjectRecord) -> None:
    data = _aspects_file()
    plan = _plan(store, project, data, fractional="half-up")
    roles = tuple(
        replace(r, role="item_field") if r.column == "system_id" else r for r in plan.roles
    )
    result = apply_import(
        store, project.id, check_import(replace(plan, roles=roles), data), dataset_name="a"
    )
    clarity = store.get_criterion_by_name(project.id, "clarity")
    store.update_project_settings(project.id, {"annotators_per_item": 5})  # the file gave 3 each
    store.ensure_queue(result.dataset.id, clarity.id, "zoe")
    task = store.queue_item(result.dataset.id, clarity.id, "zoe", 0)
    assert task is not None
    assert task.metadata == {"system_id": "M0"}  # not doc_id, not the experts' mean


def test_a_file_without_its_response(store: Store, project: ProjectRecord) -> None:
    frame = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "question": ["1", "2", "3", "4"],
            "answr": ["w", "x", "y", "z"],
        }
    )
    data = frame.to_csv(index=False).encode()
    plan = _plan(store, project, data, name="typo.csv")
    with pytest.raises(MissingColumnError, match="no column is marked as the response") as caught:
        check_import(plan, data)
    assert "'answr'" in str(caught.value)
    assert "'question'" in str(caught.value)
    # marked as the response: it imports
    fixed = replace(
        plan,
        roles=tuple(replace(r, role="response") if r.column == "answr" else r for r in plan.roles),
    )
    assert check_import(fixed, data).items["response"].tolist() == ["w", "x", "y", "z"]


def test_a_mostly_empty_response_is_refused_a_few_empty_rows_are_left_out(
    store: Store, project: ProjectRecord
) -> None:
    # rule: empty on more than half of the rows refuses; 3 of 4 empty here
    frame = pd.DataFrame(
        {"id": list("abcd"), "response": ["x", None, " ", None], "rater_q_1": [1, 2, 3, 4]}
    )
    data = frame.to_csv(index=False).encode()
    with pytest.raises(DataError, match=r"empty on 3 of 4 rows \(rows 2, 3, 4\)") as caught:
        check_import(_plan(store, project, data, name="mostly.csv"), data)
    assert caught.value.rows == (2, 3, 4)
    # 1 of 4 empty: that item and its label are left out, and the plan says so
    few = frame.assign(response=["x", None, "y", "z"]).to_csv(index=False).encode()
    checked = check_import(_plan(store, project, few), few)
    assert checked.dropped_rows == (2,)
    assert checked.items["item_id"].tolist() == ["a", "c", "d"]
    assert checked.describe() == [
        "3 human labels for q",
        "1 row without a response left out (row 2)",
    ]
    result = apply_import(store, project.id, checked, dataset_name="few")
    assert result.dataset.n_items == 3


def test_labels_without_a_criterion_wait_for_the_user(store: Store, project: ProjectRecord) -> None:
    frame = pd.DataFrame(
        {
            "id": ["a", "b"],
            "response": ["x", "y"],
            "rater_1": ["good", "bad"],
            "rater_2": ["bad", "bad"],
        }
    )
    data = frame.to_csv(index=False).encode()
    plan = _plan(store, project, data)
    assert plan.unplaced == ("rater_1", "rater_2")
    assert plan.criteria == ()
    with pytest.raises(DataError, match="'rater_1', 'rater_2' name no criterion"):
        check_import(plan, data)
    # one existing criterion whose scale holds the labels: they go there
    store.create_criterion(
        project.id, "verdict", kind="pointwise", scale=Scale(("good", "bad"), "nominal")
    )
    store.create_criterion(project.id, "fluency", kind="pointwise", scale=LIKERT_5)
    placed = _plan(store, project, data)
    assert [(c.name, c.is_new) for c in placed.criteria] == [("verdict", False)]
    assert placed.unplaced == ()


def test_two_columns_for_one_field_and_criteria_of_the_other_kind(
    store: Store, project: ProjectRecord
) -> None:
    frame = pd.DataFrame({"id": ["a"], "response": ["x"], "answer": ["y"], "rater_1": [3]})
    data = frame.to_csv(index=False).encode()
    plan = _plan(store, project, data)
    twice = tuple(replace(r, role="response") if r.column == "answer" else r for r in plan.roles)
    with pytest.raises(DataError, match="'response' and 'answer' are both marked 'response'"):
        check_import(replace(plan, roles=twice), data)
    store.create_criterion(
        project.id, "pref", kind="pairwise", scale=Scale(("A", "B", "TIE"), "pairwise")
    )
    roles = tuple(replace(r, criterion="pref") if r.column == "rater_1" else r for r in plan.roles)
    with pytest.raises(
        DataError, match="criterion 'pref' is pairwise, but the dataset is pointwise"
    ):
        check_import(_plan(store, project, data, roles=roles), data)


def test_long_form_labels_with_and_without_a_criterion_column(
    store: Store, project: ProjectRecord
) -> None:
    long = pd.DataFrame(
        {
            "item_id": ["a", "a", "b", "b"],
            "response": ["x", "x", "y", "y"],
            "annotator": ["ann", "bo", "ann", "bo"],
            "criterion": ["tone", "tone", "tone", "pace"],
            "label": [1, 2, 3, 4],
        }
    )
    data = long.to_csv(index=False).encode()
    plan = _plan(store, project, data)
    assert [(c.name, c.humans) for c in plan.criteria] == [
        ("tone", ("ann", "bo")),
        ("pace", ("bo",)),
    ]
    result = apply_import(store, project.id, check_import(plan, data), dataset_name="long")
    assert result.dataset.n_items == 2
    assert result.created == ("tone", "pace")
    tone = store.get_criterion_by_name(project.id, "tone")
    assert store.annotation_matrix(result.dataset.id, tone.id).loc["a"].tolist() == [1.0, 2.0]
    # without a criterion column, the label column's criterion cell names it
    data = (
        long.drop(columns="criterion")
        .assign(annotator=["ann", "bo", "ann", "cy"])
        .to_csv(index=False)
        .encode()
    )
    plan = _plan(store, project, data)
    # tone (1–3) and pace (4–5), made from the first file's labels, do not hold 1 to 4: none fits
    assert (plan.criteria, plan.unplaced) == ((), ("label",))
    named = tuple(replace(r, criterion="speed") if r.role == "label" else r for r in plan.roles)
    plan = _plan(store, project, data, roles=named)
    assert [(c.name, c.humans) for c in plan.criteria] == [("speed", ("ann", "bo", "cy"))]
    result = apply_import(store, project.id, check_import(plan, data), dataset_name="long2")
    assert result.created == ("speed",)


def test_labels_into_a_saved_dataset_refuse_unknown_items(
    store: Store, project: ProjectRecord
) -> None:
    data = _aspects_file()
    first = apply_import(
        store,
        project.id,
        check_import(_plan(store, project, data, fractional="half-up"), data),
        dataset_name="a",
    )
    more = (
        pd.DataFrame({"id": ["1", "2", "99"], "human_clarity_4": [3, 4, 5]})
        .to_csv(index=False)
        .encode()
    )
    plan = _plan(store, project, more, name="more.csv", dataset=first.dataset)
    assert [(c.name, c.is_new) for c in plan.criteria] == [("clarity", False)]
    before = store.annotation_matrix(first.dataset.id, plan.criteria[0].existing.id).shape  # type: ignore[union-attr]
    with pytest.raises(DataError, match="no item '99'"):
        apply_import(store, project.id, check_import(plan, more))
    fine = pd.DataFrame({"id": ["1", "2"], "human_clarity_4": [3, 4]}).to_csv(index=False).encode()
    plan = _plan(store, project, fine, name="fine.csv", dataset=first.dataset)
    result = apply_import(store, project.id, check_import(plan, fine))
    assert result.message == "Imported into 'a' version 1 and 2 human labels for clarity."
    after = store.annotation_matrix(first.dataset.id, plan.criteria[0].existing.id)  # type: ignore[union-attr]
    assert after.shape == (before[0], before[1] + 1)


def test_roles_from_a_table_refuse_an_unknown_role() -> None:
    table = pd.DataFrame(
        {"column": ["a"], "role": ["the answer"], "criterion": [None], "name": [None]}
    )
    with pytest.raises(ConfigError, match="column 'a': there is no role 'the answer'"):
        roles_from_table(table)
    assert roles_from_table(table.assign(role="judge label", name=" gpt ")) == (
        ColumnRole("a", "judge", "", "gpt"),
    )


# --- the public datasets (read from ../shared/datasets, never copied) ------------------------------


@pytest.mark.shared_data
def test_summeval_imports_as_four_criteria(shared_datasets) -> None:  # type: ignore[no-untyped-def]
    path = shared_datasets / "summeval_llm_judges" / "summeval_llm_judges.csv"
    plan = propose_import(path, name="summeval.csv", criteria=[], fractional="half-up")
    assert [c.name for c in plan.criteria] == ["coherence", "consistency", "fluency", "relevance"]
    assert plan.fractional_found == 209  # the README: a few x.5 answers per judge and aspect
    checked = check_import(plan, path)
    parts = checked.describe()
    assert parts.count("3600 human labels for fluency") == 1  # 1200 summaries x 3 experts
    assert len(parts) == 16  # 4 aspects x (the experts + 3 judges)
    fluency = next(s for s, _c in checked.targets if s.metric == "fluency")
    assert fluency.judges["judge_llama2_70b"].isna().sum() == 35  # unparsed answers stay missing


@pytest.mark.shared_data
def test_pandalm_imports_as_one_pairwise_criterion(shared_datasets) -> None:  # type: ignore[no-untyped-def]
    path = shared_datasets / "pandalm_testset" / "pandalm_testset.csv"
    plan = propose_import(path, name="pandalm.csv", criteria=[])
    assert plan.kind == "pairwise"
    assert plan.unplaced == (
        "human_1",
        "human_2",
        "human_3",
        "judge_gpt35_choice",
        "judge_pandalm7b_choice",
    )
    named = tuple(
        replace(r, criterion="preference") if r.is_label or r.role == "reason" else r
        for r in plan.roles
    )
    plan = propose_import(path, name="pandalm.csv", criteria=[], roles=named)
    [criterion] = plan.criteria
    assert (criterion.humans, criterion.judges) == (
        ("human_1", "human_2", "human_3"),
        ("judge_gpt35", "judge_pandalm7b"),
    )
    checked = check_import(plan, path)
    label_set = checked.targets[0][0]
    assert label_set.judges["judge_gpt35"].isna().sum() == 25  # "invalid" verdicts are missing
    assert label_set.reasons_of("judge_pandalm7b") is not None
