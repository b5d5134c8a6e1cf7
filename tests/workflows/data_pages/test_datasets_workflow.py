"""evalcore.workflows.datasets: datasets, uploads, criteria, label imports, agreement, exports and
the project, through the store acting as the caller, checked at every call."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from evalcore.data import read_table
from evalcore.errors import DataError, LabelOutOfScaleError, MissingColumnError, StoreError
from evalcore.labels import SEVERITY
from evalcore.report import human_ceiling
from evalcore.workflows import datasets
from tests.workflows.data_pages.conftest import People, refused

ANSWERS = pd.DataFrame(
    {
        "id": [f"q{i}" for i in range(6)],
        "question": [f"Question {i}?" for i in range(6)],
        "answer": [f"Answer {i}." for i in range(6)],
        "rater_1": [1, 2, 3, 4, 5, 5],
        "rater_2": [1, 2, 3, 4, 4, 5],
        "judge_small": [1, 2, 3, 3, 5, 5],
    }
)


def _csv(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


def _helpfulness(people: People) -> int:
    return people.store.get_criterion_by_name(people.project_id, "helpfulness").id


def test_the_catalogue_and_a_datasets_items(people: People) -> None:
    cat = datasets.catalogue(people["engineer"], people.project_id)
    assert [d.name for d in cat.datasets] == ["reply-preference", "support-answers"]
    assert {c.name for c in cat.fitting("pairwise")} == {"preference"}
    assert not cat.can_admin
    mine = datasets.catalogue(people["project_admin"], people.project_id)
    assert (mine.can_admin, mine.server_admin) == (
        True,
        False,
    )  # a project's admin, not the server's
    assert datasets.catalogue(people["admin"], people.project_id).server_admin
    assert list(cat.table().columns)[:3] == ["name", "version", "kind"]
    dataset = cat.datasets[1]
    items = datasets.dataset_items(people["engineer"], dataset.id)
    assert len(items) == dataset.n_items
    assert items is datasets.dataset_items(people["admin"], dataset.id)  # kept in the memo
    refused(lambda s: datasets.catalogue(s, people.project_id), people)
    # reading items is a viewer's too; an annotator reads only their own queue's
    refused(
        lambda s: datasets.dataset_items(s, dataset.id),
        people,
        ("annotator", "outsider", "disabled", "ended"),
    )


def test_propose_then_import_a_file_with_its_labels(people: People) -> None:
    s, pid = people["engineer"], people.project_id
    data = _csv(ANSWERS)
    plan = datasets.propose(s, pid, "answers.csv", data)
    roles = {r.column: (r.role, r.criterion, r.name) for r in plan.roles}
    assert roles["id"][0] == "item_id"
    assert roles["rater_1"] == ("human", "helpfulness", "rater_1")  # the one criterion that fits
    assert roles["judge_small"] == ("judge", "helpfulness", "judge_small")
    [criterion] = plan.criteria
    assert (criterion.name, criterion.is_new) == ("helpfulness", False)
    done = datasets.import_file(s, pid, "answers.csv", data, plan.roles, dataset_name="answers")
    assert done.startswith("Saved 'answers' version 1 with 6 items and 12 human labels")
    dataset = people.store.get_dataset_by_name(pid, "answers")
    matrix = people.store.annotation_matrix(dataset.id, _helpfulness(people))
    assert matrix.loc["q4"].tolist() == [5.0, 4.0]
    again = datasets.propose(s, pid, "answers.csv", data)
    assert again is not plan
    refused(lambda x: datasets.propose(x, pid, "answers.csv", data), people)
    refused(
        lambda x: datasets.import_file(x, pid, "answers.csv", data, plan.roles, dataset_name="z"),
        people,
    )
    assert people.store.list_datasets(pid, name="z") == []


def test_a_multi_aspect_file_makes_one_criterion_per_aspect(people: People) -> None:
    s, pid = people["engineer"], people.project_id
    frame = pd.DataFrame(
        {
            "doc": ["d1", "d2", "d3", "d4"],
            "article": ["a1", "a2", "a3", "a4"],
            "summary": ["s1", "s2", "s3", "s4"],
            "human_clarity_1": [1, 2, 3, 4],
            "human_clarity_2": [2, 2, 3, 5],
            "human_clarity_mean": [1.5, 2.0, 3.0, 4.5],
            "human_tone_1": [5, 4, 3, 2],
            "human_tone_2": [5, 5, 3, 1],
            "judge_m1_clarity": [1.0, 2.5, 3.0, 4.0],
            "judge_m1_tone": [5, 4, 3, 2],
        }
    )
    data = _csv(frame)
    plan = datasets.propose(s, pid, "aspects.csv", data)
    assert [(c.name, c.is_new, c.humans, c.judges) for c in plan.criteria] == [
        ("clarity", True, ("human_1", "human_2"), ("judge_m1",)),
        ("tone", True, ("human_1", "human_2"), ("judge_m1",)),
    ]
    assert plan.fractional_found == 1
    assert "human_clarity_mean" in plan.metadata
    with pytest.raises(LabelOutOfScaleError, match=r"2\.5"):  # refused until the user chooses
        datasets.import_file(s, pid, "aspects.csv", data, plan.roles, dataset_name="aspects")
    assert people.store.list_datasets(pid, name="aspects") == []
    assert "clarity" not in {c.name for c in people.store.list_criteria(pid)}
    done = datasets.import_file(
        s, pid, "aspects.csv", data, plan.roles, fractional="half-even", dataset_name="aspects"
    )
    assert "new criteria: clarity, tone" in done
    dataset = people.store.get_dataset_by_name(pid, "aspects")
    clarity = people.store.get_criterion_by_name(pid, "clarity")
    tone = people.store.get_criterion_by_name(pid, "tone")
    runs = sorted(
        (r.name, r.criterion_id)
        for r in people.store.list_runs(project_id=pid)
        if r.dataset_id == dataset.id
    )
    # one imported run per judge and criterion
    assert runs == sorted([("imported: judge_m1", clarity.id), ("imported: judge_m1", tone.id)])
    assert list(people.store.annotation_matrix(dataset.id, clarity.id).columns) == [
        "human_1",
        "human_2",
    ]
    assert dataset.item_fields == ()
    assert set(dataset.label_columns) >= {"human_clarity_1", "judge_m1_tone"}
    shown, hidden = datasets.field_summary(dataset, datasets.dataset_items(s, dataset.id))
    assert shown == ("response", "context")  # "summary" and "article" by their names
    assert hidden == ("doc", "human_clarity_mean")


def test_a_file_without_its_response_is_refused_with_its_columns(people: People) -> None:
    s, pid = people["engineer"], people.project_id
    frame = pd.DataFrame(
        {"id": ["a", "b", "c"], "question": ["q1", "q2", "q3"], "answr": ["x", "y", "z"]}
    )
    data = _csv(frame)
    plan = datasets.propose(s, pid, "answr.csv", data)
    assert "response" not in {r.role for r in plan.roles}
    with pytest.raises(MissingColumnError, match="no column is marked as the response") as caught:
        datasets.import_file(s, pid, "answr.csv", data, plan.roles, dataset_name="answr")
    assert "'answr'" in str(caught.value)
    mostly = _csv(frame.assign(answer=["yes", None, None]).drop(columns="answr"))
    plan = datasets.propose(s, pid, "empty.csv", mostly)
    with pytest.raises(DataError, match="empty on 2 of 3 rows") as caught:
        datasets.import_file(s, pid, "empty.csv", mostly, plan.roles, dataset_name="empty")
    rows = datasets.rows_named(s, pid, caught.value, "empty.csv", mostly)
    assert rows is not None
    assert rows.index.tolist() == [2, 3]
    assert (
        people.store.list_datasets(pid, name="answr")
        == people.store.list_datasets(pid, name="empty")
        == []
    )


def test_import_labels_into_a_saved_dataset(people: People) -> None:
    s, pid = people["engineer"], people.project_id
    dataset = people.store.get_dataset_by_name(pid, "support-answers")
    crit = _helpfulness(people)
    wide = _csv(pd.DataFrame({"item_id": ["sa-001", "sa-002"], "rater_x": [5, 4]}))
    plan = datasets.propose(s, pid, "wide.csv", wide, dataset_id=dataset.id)
    assert [c.name for c in plan.criteria] == ["helpfulness"]
    refused(
        lambda x: datasets.import_file(x, pid, "wide.csv", wide, plan.roles, dataset_id=dataset.id),
        people,
    )
    assert "rater_x" not in people.store.annotation_matrix(dataset.id, crit).columns
    done = datasets.import_file(s, pid, "wide.csv", wide, plan.roles, dataset_id=dataset.id)
    assert done == "Imported into 'support-answers' version 1 and 2 human labels for helpfulness."
    assert people.store.annotation_matrix(dataset.id, crit).loc[
        ["sa-001", "sa-002"], "rater_x"
    ].tolist() == [5.0, 4.0]
    unknown = _csv(pd.DataFrame({"item_id": ["nope"], "rater_y": [5]}))
    plan = datasets.propose(s, pid, "u.csv", unknown, dataset_id=dataset.id)
    with pytest.raises(DataError, match="no item 'nope'"):
        datasets.import_file(s, pid, "u.csv", unknown, plan.roles, dataset_id=dataset.id)
    other = people.store.list_datasets(people.other_project_id)
    assert other == []


def test_template_label_warnings(people: People) -> None:
    s, pid = people["engineer"], people.project_id
    frame = pd.DataFrame(
        {
            "id": ["1", "2"],
            "prompt": ["p", "q"],
            "response": ["r", "s"],
            "topic": ["a", "b"],
            "source_url": ["u", "v"],
            "human_quality_1": [1, 2],
            "human_quality_2": [2, 2],
            "human_quality_mean": [1.5, 2.0],
        }
    )
    data = _csv(frame)
    plan = datasets.propose(s, pid, "w.csv", data)
    roles = [
        r if r.column != "topic" else datasets.ColumnRole("topic", "item_field") for r in plan.roles
    ]
    datasets.import_file(s, pid, "w.csv", data, roles, dataset_name="w")
    dataset = people.store.get_dataset_by_name(pid, "w")
    assert dataset.item_fields == ("topic",)
    content = {
        "name": "t",
        "criterion": "quality",
        "kind": "pointwise",
        "scale": [1, 2, 3, 4, 5],
        "system": "Rate.",
        "user": "{{ prompt }} {{ response }} {{ topic }} {{ human_quality_1 }} {{ human_quality_mean }}",
        "output": {"parser": "json", "label_field": "score"},
    }
    warnings = datasets.template_label_warnings(s, dataset.id, content)
    assert len(warnings) == 2
    assert "human_quality_1 }} is a label column" in warnings[0]
    assert "human_quality_mean }} is metadata" in warnings[1]
    clean = {**content, "user": "{{ prompt }} {{ topic }}"}
    assert datasets.template_label_warnings(s, dataset.id, clean) == ()
    refused(
        lambda x: datasets.template_label_warnings(x, dataset.id, content),
        people,
        ("outsider", "disabled", "ended"),
    )


def test_add_criteria_builtin_and_custom(people: People) -> None:
    s, pid = people["engineer"], people.project_id
    done = datasets.add_criterion(s, pid, "toxicity", scale="Severity", rubric="r")
    assert done == "Added criterion 'toxicity' (very low, low, medium, high)."
    assert people.store.get_criterion_by_name(pid, "toxicity").scale == SEVERITY
    datasets.add_criterion(
        s, pid, "tone", scale=datasets.CUSTOM_SCALE, rubric="", labels="cold, neutral, warm"
    )
    tone = people.store.get_criterion_by_name(pid, "tone")
    assert (tone.scale.display_labels, tone.scale.kind) == (["cold", "neutral", "warm"], "ordinal")
    datasets.add_criterion(
        s,
        pid,
        "style",
        scale=datasets.CUSTOM_SCALE,
        rubric="",
        labels="formal, casual",
        ordered=False,
    )
    assert people.store.get_criterion_by_name(pid, "style").scale.kind == "nominal"
    side = datasets.add_criterion(
        s, pid, "side", scale=datasets.CUSTOM_SCALE, rubric="", labels="A,B,TIE"
    )
    assert "side" in side
    assert people.store.get_criterion_by_name(pid, "side").kind == "pairwise"
    with pytest.raises(DataError, match="Custom labels"):
        datasets.add_criterion(
            s, pid, "empty", scale=datasets.CUSTOM_SCALE, rubric="", labels=" , "
        )
    with pytest.raises(StoreError, match="already has a criterion named 'tone'"):
        datasets.add_criterion(s, pid, "tone", scale="Pass / fail", rubric="")
    refused(
        lambda x: datasets.add_criterion(x, pid, "nope", scale="Pass / fail", rubric=""), people
    )
    assert "nope" not in {c.name for c in people.store.list_criteria(pid)}


def test_agreement_matches_the_report_and_is_read_only(people: People) -> None:
    dataset = people.store.get_dataset_by_name(people.project_id, "support-answers")
    crit = people.store.get_criterion_by_name(people.project_id, "helpfulness")
    found = datasets.agreement(people["viewer"], dataset.id, crit.id)  # reading is a viewer's too
    expected = human_ceiling(
        people.store.annotation_matrix(dataset.id, crit.id), crit.scale, n_boot=1000, seed=0
    )
    assert found.ceiling is not None
    assert expected is not None
    assert found.ceiling.krippendorff_alpha == expected.krippendorff_alpha
    assert found.ceiling.alpha_ci == expected.alpha_ci
    assert found.counts.equals(people.store.annotator_label_counts(dataset.id, crit.id))
    assert found.figure is not None
    refused(
        lambda s: datasets.agreement(s, dataset.id, crit.id),
        people,
        ("annotator", "outsider", "disabled", "ended"),
    )


@pytest.mark.parametrize("fmt", list(datasets.EXPORT_FORMATS))
def test_export_every_revision_recorded_in_the_audit_log(people: People, fmt: str) -> None:
    dataset = people.store.get_dataset_by_name(people.project_id, "support-answers")
    view = datasets.export_view(people["viewer"], people.project_id, dataset.id, None)
    assert view.file_name(fmt) == f"support-answers-annotations.{datasets.EXPORT_FORMATS[fmt][0]}"
    data = datasets.export_file(people["viewer"], people.project_id, dataset.id, None, fmt)
    datasets.record_export(people["viewer"], people.project_id, view.file_name(fmt))
    back = read_table(io.BytesIO(data), name=view.file_name(fmt))
    assert len(back) == len(view.frame) == view.latest + (len(view.frame) - view.latest)
    log = people.store.audit_log(action="export")
    assert log["actor"].tolist()[0] == "vic"
    for command in (
        lambda s: datasets.export_file(s, people.project_id, dataset.id, None, fmt),
        lambda s: datasets.record_export(s, people.project_id, "x.csv"),
    ):
        refused(command, people, ("annotator", "outsider", "disabled", "ended"))
    assert len(people.store.audit_log(action="export")) == 1


def test_projects_and_annotators_per_item(people: People) -> None:
    created = datasets.create_project(people["admin"], "Second", "about")
    assert created.name == "Second"
    refused(
        lambda s: datasets.create_project(s, "Third"),
        people,
        ("engineer", "project_admin", "viewer", "annotator", "outsider", "disabled", "ended"),
    )
    assert "Third" not in [p.name for p in people.store.list_projects()]
    assert datasets.set_annotators_per_item(people["project_admin"], people.project_id, 2) == (
        "Each item is now meant for 2 annotators."
    )
    assert people.store.get_project(people.project_id).annotators_per_item == 2
    refused(
        lambda s: datasets.set_annotators_per_item(s, people.project_id, 5),
        people,
        ("engineer", "viewer", "annotator", "outsider", "disabled", "ended"),
    )
    assert people.store.get_project(people.project_id).annotators_per_item == 2
