"""evalcore.workflows.datasets: datasets, uploads, criteria, label imports, agreement, exports and
the project, through the store acting as the caller, checked at every call."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from evalcore.data import ColumnMapping, read_table
from evalcore.errors import DataError, LabelOutOfScaleError, StoreError
from evalcore.labels import SEVERITY
from evalcore.report import human_ceiling
from evalcore.workflows import datasets
from tests.workflows.conftest import People, refused

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
MAPPING = ColumnMapping(
    item_id="id",
    prompt="question",
    response="answer",
    human=("rater_1", "rater_2"),
    judge=("judge_small",),
    metric="labels",
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
    assert datasets.catalogue(people["project_admin"], people.project_id).can_admin
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


def test_upload_checked_then_saved_with_its_labels(people: People) -> None:
    s, pid = people["engineer"], people.project_id
    data = _csv(ANSWERS)
    table = datasets.read_file(s, pid, "answers.csv", data)
    assert (table.guess.item_id, table.guess.human) == ("id", ("rater_1", "rater_2"))
    assert datasets.preview_file(s, pid, "answers.csv", data, MAPPING).metrics == ("labels",)
    with pytest.raises(DataError, match="choose the criterion the labels 'labels' go to"):
        datasets.check_upload(s, pid, "answers.csv", data, MAPPING, kind="pointwise", targets={})
    targets = {"labels": _helpfulness(people)}
    check = datasets.check_upload(
        s,
        pid,
        "answers.csv",
        data,
        MAPPING,
        kind="pointwise",
        targets=targets,
        dataset_name="answers",
    )
    assert check.existing_version is None
    assert check.labels == "12 human labels for helpfulness, judge judge_small for helpfulness"
    done = datasets.save_file(
        s,
        pid,
        "answers.csv",
        data,
        MAPPING,
        kind="pointwise",
        targets=targets,
        dataset_name="answers",
    )
    assert done.startswith("Saved 'answers' version 1 with 6 items and 12 human labels")
    dataset = people.store.get_dataset_by_name(pid, "answers")
    matrix = people.store.annotation_matrix(dataset.id, targets["labels"])
    assert matrix.loc["q4"].tolist() == [5.0, 4.0]
    again = datasets.check_upload(
        s,
        pid,
        "answers.csv",
        data,
        MAPPING,
        kind="pointwise",
        targets=targets,
        dataset_name="answers",
    )
    assert again.existing_version == 1
    refused(lambda x: datasets.read_file(x, pid, "answers.csv", data), people)
    refused(
        lambda x: datasets.save_file(
            x,
            pid,
            "answers.csv",
            data,
            MAPPING,
            kind="pointwise",
            targets=targets,
            dataset_name="z",
        ),
        people,
    )
    assert people.store.list_datasets(pid, name="z") == []


def test_a_label_off_the_scale_saves_nothing(people: People) -> None:
    s, pid = people["engineer"], people.project_id
    data = _csv(ANSWERS.assign(rater_2=[1, 2, 3, 7, 4, 5]))
    before = len(people.store.list_datasets(pid))
    with pytest.raises(LabelOutOfScaleError) as caught:
        datasets.save_file(
            s, pid, "scale.csv", data, MAPPING, kind="pointwise",
            targets={"labels": _helpfulness(people)}, dataset_name="scale",
        )  # fmt: skip
    rows = datasets.offending_rows(
        caught.value, data, read_table(data, name="scale.csv"), name="scale.csv"
    )
    assert rows is not None
    assert rows["rater_2"].astype(str).tolist() == ["7"]
    assert len(people.store.list_datasets(pid)) == before


def test_import_labels_into_a_saved_dataset(people: People) -> None:
    s = people["engineer"]
    dataset = people.store.get_dataset_by_name(people.project_id, "support-answers")
    wide = _csv(pd.DataFrame({"item_id": ["sa-001", "sa-002"], "rater_x": [5, 4]}))
    mapping = ColumnMapping(item_id="item_id", human=("rater_x",), metric="helpfulness")
    crit = _helpfulness(people)
    plan = datasets.check_label_import(s, dataset.id, crit, "wide.csv", wide, mapping)
    assert plan.label_counts()["labels"].to_dict() == {"rater_x": 2}
    refused(
        lambda x: datasets.import_labels(x, dataset.id, crit, "wide.csv", wide, mapping), people
    )
    assert "rater_x" not in people.store.annotation_matrix(dataset.id, crit).columns
    assert datasets.import_labels(s, dataset.id, crit, "wide.csv", wide, mapping) == (
        "Imported 2 human labels for helpfulness into support-answers."
    )
    unknown = _csv(pd.DataFrame({"item_id": ["nope"], "rater_y": [5]}))
    with pytest.raises(DataError, match="no item 'nope'"):
        datasets.import_labels(
            s,
            dataset.id,
            crit,
            "u.csv",
            unknown,
            ColumnMapping(human=("rater_y",), metric="helpfulness"),
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
        ("engineer", "project_admin", *("viewer", "disabled", "ended")),
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
