"""The Datasets page through AppTest: upload and map, errors that save nothing, criteria, label import,
agreement, export, project settings and who may do what."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from evalcore.data import read_table, write_table
from evalcore.demo.seed import ensure_demo
from evalcore.labels import SEVERITY
from evalcore.report import human_ceiling
from evalcore.store import Store
from evalcore.workflows import Server, Session
from evalcore.workflows.datasets import ROLE_TEXT, export_file, file_token
from tests.pages.conftest import APP, sign_in
from ui import state
from ui.state import App, Datasets

Open = Callable[..., AppTest]
PAGE = str(Path(APP).parent / "pages" / "datasets.py")


@pytest.fixture
def store(app_db: str) -> Store:
    """The app's database, with the demo seeded (as the first page view would)."""
    db = Store.open(app_db)
    ensure_demo(db)
    return db


def tab(open_app: Open, name: str, *, role: str = "engineer") -> AppTest:
    at = open_app(role=role, page="datasets")
    at.session_state[Datasets.TAB] = name
    at.run()
    assert not at.exception, at.exception
    return at


def run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, at.exception
    return at


def csv(frame: pd.DataFrame, name: str = "answers.csv") -> tuple[str, bytes, str]:
    return (name, frame.to_csv(index=False).encode(), "text/csv")


ANSWERS = pd.DataFrame(
    {
        "id": [f"q{i}" for i in range(6)],
        "question": [f"Question {i}?" for i in range(6)],
        "answer": [f"Answer {i}." for i in range(6)],
        "passage": [f"Passage {i}." for i in range(6)],
        "rater_1": [1, 2, 3, 4, 5, 5],
        "rater_2": [1, 2, 3, 4, 4, 5],
        "judge_small": [1, 2, 3, 3, 5, 5],
    }
)


def upload(at: AppTest, file: tuple[str, bytes, str]) -> AppTest:
    at.file_uploader[0].set_value(file)
    return run(at)


def table(at: AppTest, column: str) -> pd.DataFrame:
    """The first table on the page with ``column`` (a column or the index's name)."""
    for frame in at.dataframe:
        value = frame.value
        if column in value.columns or value.index.name == column:
            return value
    raise AssertionError(f"no table with a {column!r} column")


def helpfulness(store: Store) -> int:
    return store.get_criterion_by_name(store.list_projects()[0].id, "helpfulness").id


# --- upload: the plan, one form, errors only after the submit ---------------------------------------


def roles_key(name: str, data: bytes, *, labels: bool = False) -> str:
    """The key of the roles table of a file (a new file starts from a fresh table)."""
    return state.key(
        Datasets.LAB_FILE if labels else Datasets.UPLOAD, "roles", file_token(name, data)
    )


def edit_roles(
    at: AppTest, key: str, columns: list[str], changes: dict[str, dict[str, str]]
) -> None:
    """Change cells of the roles table (``{column: {"role": ..., "criterion": ...}}``; its rows are
    the file's ``columns`` in order), as a user editing it does."""
    rows = {c: n for n, c in enumerate(columns)}
    at.session_state[key] = {
        "edited_rows": {rows[c]: cells for c, cells in changes.items()},
        "added_rows": [],
        "deleted_rows": [],
    }


def submit(at: AppTest, key: str = Datasets.SAVE) -> AppTest:
    at.button(key=key).click()
    return run(at)


def test_upload_proposes_a_plan_and_saves_it_in_one_submit(open_app: Open, store: Store) -> None:
    at = upload(tab(open_app, "Upload"), csv(ANSWERS))
    plan = " ".join(m.value for m in at.markdown)
    assert "answers.csv: a pointwise dataset of 6 rows" in plan
    assert "item fields: item_id: id, prompt: question, response: answer, context: passage" in plan
    assert (
        "criterion helpfulness (existing criterion, 1–5): annotators rater_1, rater_2; judges judge_small"
        in plan
    )
    assert not at.error  # nothing is said against the file before the user acts
    assert at.text_input(key=Datasets.NAME).value == "answers"
    assert not list(at.radio)  # no fractional scores: no question about them
    submit(at)
    assert (
        "Saved 'answers' version 1 with 6 items and 12 human labels for helpfulness"
        in at.success[0].value
    )
    project = store.list_projects()[0]
    dataset = store.get_dataset_by_name(project.id, "answers")
    items = store.items_frame(dataset.id)
    assert items["item_id"].tolist() == [f"q{i}" for i in range(6)]
    assert items["context"].tolist()[0] == "Passage 0."
    matrix = store.annotation_matrix(dataset.id, helpfulness(store))
    assert list(matrix.columns) == ["rater_1", "rater_2"]
    assert matrix.loc["q4"].tolist() == [5.0, 4.0]
    runs = [r for r in store.list_runs(project_id=project.id) if r.dataset_id == dataset.id]
    assert [(r.name, r.source) for r in runs] == [("imported: judge_small", "import")]
    # the uploader is empty again, so a second click cannot save a second version by accident
    assert at.file_uploader[0].value is None


def test_labels_that_fit_no_criterion_are_refused_only_after_the_submit(
    open_app: Open, store: Store
) -> None:
    words = ANSWERS.assign(rater_1=["ok"] * 6, rater_2=["meh"] * 6, judge_small=["ok"] * 6)
    at = upload(tab(open_app, "Upload"), csv(words))
    assert not at.error
    assert "labels without a criterion" in " ".join(m.value for m in at.markdown)
    submit(at)
    assert "name no criterion" in at.error[0].value
    assert "Nothing was saved." in [c.value for c in at.caption]
    assert store.list_datasets(store.list_projects()[0].id, name="answers") == []


def test_labels_left_out_on_purpose_and_a_column_marked_as_an_item_field(
    open_app: Open, store: Store
) -> None:
    name, data, _ = csv(ANSWERS)
    at = upload(tab(open_app, "Upload"), csv(ANSWERS))
    leave = {"role": ROLE_TEXT["ignore"]}
    edit_roles(
        at,
        roles_key(name, data),
        list(ANSWERS.columns),
        {
            "rater_1": leave,
            "rater_2": leave,
            "judge_small": leave,
            "passage": {"role": ROLE_TEXT["item_field"]},
        },
    )
    run(at)
    submit(at)
    assert "Saved 'answers' version 1 with 6 items." in at.success[0].value
    dataset = store.get_dataset_by_name(store.list_projects()[0].id, "answers")
    assert store.annotation_matrix(dataset.id, helpfulness(store)).empty
    assert dataset.item_fields == ("passage",)
    assert "rater_1" not in store.items_frame(dataset.id).columns


def test_a_second_upload_with_the_same_name_is_the_next_version(
    open_app: Open, store: Store
) -> None:
    at = tab(open_app, "Upload")
    for version in (1, 2):
        upload(at, csv(ANSWERS[["id", "question", "answer"]]))
        submit(at)
        assert f"version {version}" in at.success[0].value
    versions = store.list_datasets(store.list_projects()[0].id, name="answers")
    assert [d.version for d in versions] == [2, 1]


@pytest.mark.parametrize("extension", ["jsonl", "parquet"])
def test_jsonl_and_parquet_uploads(open_app: Open, store: Store, extension: str) -> None:
    buffer = io.BytesIO()
    write_table(ANSWERS[["id", "question", "answer", "rater_1"]], buffer, extension)
    at = upload(tab(open_app, "Upload"), (f"answers.{extension}", buffer.getvalue(), "x"))
    submit(at)
    dataset = store.get_dataset_by_name(store.list_projects()[0].id, "answers")
    assert (dataset.n_items, dataset.source_filename) == (6, f"answers.{extension}")
    assert store.annotation_matrix(dataset.id, helpfulness(store))["rater_1"].tolist()[:3] == [
        1.0,
        2.0,
        3.0,
    ]


def test_a_pairwise_upload(open_app: Open, store: Store) -> None:
    pairs = pd.DataFrame(
        {
            "id": ["p1", "p2", "p3"],
            "prompt": ["a?", "b?", "c?"],
            "response_a": ["x", "y", "z"],
            "response_b": ["X", "Y", "Z"],
            "human_1": ["model_A", "tie", "B"],
        }
    )
    at = upload(tab(open_app, "Upload"), csv(pairs, "pairs.csv"))
    assert "pairs.csv: a pairwise dataset of 3 rows" in " ".join(m.value for m in at.markdown)
    submit(at)
    preference = store.get_criterion_by_name(store.list_projects()[0].id, "preference")
    dataset = store.get_dataset_by_name(store.list_projects()[0].id, "pairs")
    assert dataset.kind == "pairwise"
    labels = store.annotation_matrix(dataset.id, preference.id)["human_1"].tolist()
    assert labels == ["A", "TIE", "B"]


def test_a_file_with_repeated_ids_shows_the_rows_and_saves_nothing(
    open_app: Open, store: Store
) -> None:
    before = len(store.list_datasets(store.list_projects()[0].id))
    bad = ANSWERS.assign(id=["q0", "q1", "q2", "q1", "q4", "q1"])
    at = upload(tab(open_app, "Upload"), csv(bad, "dupes.csv"))
    assert not at.error
    submit(at)
    message = at.error[0].value
    assert "dupes.csv" in message
    assert "q1" in message
    assert "rows 2, 4, 6" in message
    rows = table(at, "row")
    assert rows.index.tolist() == [2, 4, 6]
    assert rows["id"].tolist() == ["q1", "q1", "q1"]
    assert "Nothing was saved." in [c.value for c in at.caption]
    assert len(store.list_datasets(store.list_projects()[0].id)) == before


def test_labels_off_the_criterion_scale_save_nothing_at_all(open_app: Open, store: Store) -> None:
    project = store.list_projects()[0]
    before = (len(store.list_datasets(project.id)), len(store.list_runs(project_id=project.id)))
    bad = ANSWERS.assign(rater_2=[1, 2, 3, 7, 4, 5])
    name, data, _ = csv(bad, "scale.csv")
    at = upload(tab(open_app, "Upload"), csv(bad, "scale.csv"))
    to = {"criterion": "helpfulness"}  # 7 fits no criterion: the user names one
    edit_roles(
        at,
        roles_key(name, data),
        list(bad.columns),
        {"rater_1": to, "rater_2": to, "judge_small": to},
    )
    run(at)
    submit(at)
    assert "7" in at.error[0].value
    rows = table(at, "row")
    assert rows["rater_2"].tolist() == ["7"]
    after = (len(store.list_datasets(project.id)), len(store.list_runs(project_id=project.id)))
    assert after == before


def test_fractional_scores_are_the_users_choice(open_app: Open, store: Store) -> None:
    halves = ANSWERS.assign(judge_small=[1, 2.5, 3, 3.5, 5, 5])
    at = upload(tab(open_app, "Upload"), csv(halves, "halves.csv"))
    [choice] = at.radio
    assert choice.value == "refuse"
    assert "2 fractional scores" in choice.label
    choice.set_value("half-even")
    submit(at)
    assert "Saved 'halves' version 1" in at.success[0].value
    dataset = store.get_dataset_by_name(store.list_projects()[0].id, "halves")
    run_ = next(
        r for r in store.list_runs(project_id=dataset.project_id) if r.dataset_id == dataset.id
    )
    labels = store.results_frame(run_.id)["label"].tolist()
    assert labels[1:4] == ["2", "3", "4"]  # 2.5 → 2 and 3.5 → 4: half to even


def test_a_file_without_its_response_is_refused_naming_its_columns(
    open_app: Open, store: Store
) -> None:
    typo = ANSWERS.rename(columns={"answer": "answr"})
    at = upload(tab(open_app, "Upload"), csv(typo, "typo.csv"))
    assert not at.error
    submit(at)
    assert "no column is marked as the response" in at.error[0].value
    assert "'answr'" in at.error[0].value
    assert store.list_datasets(store.list_projects()[0].id, name="typo") == []


def test_a_broken_jsonl_file_names_its_line(open_app: Open, store: Store) -> None:
    at = upload(
        tab(open_app, "Upload"),
        ("broken.jsonl", b'{"prompt": "a", "response": "b"}\n{oops\n', "application/jsonl"),
    )
    assert "line 2" in at.error[0].value
    assert table(at, "line")["text"].tolist() == ["{oops"]


# --- criteria -------------------------------------------------------------------------------------


def test_add_a_builtin_and_a_custom_criterion(open_app: Open, store: Store) -> None:
    at = tab(open_app, "Criteria")
    at.text_input(key=Datasets.CRIT_NAME).set_value("toxicity")
    at.selectbox(key=Datasets.CRIT_SCALE).set_value("Severity")
    run(at).button(key=Datasets.CRIT_ADD).click()
    run(at)
    project = store.list_projects()[0]
    toxicity = store.get_criterion_by_name(project.id, "toxicity")
    assert (toxicity.kind, toxicity.scale) == ("pointwise", SEVERITY)
    assert toxicity.rubric.startswith("very low")
    at.text_input(key=Datasets.CRIT_NAME).set_value("tone")
    at.selectbox(key=Datasets.CRIT_SCALE).set_value("Custom labels")
    run(at)
    at.text_input(key=Datasets.CRIT_LABELS).set_value("cold, neutral, warm")
    at.text_area(key=state.key(Datasets.CRIT_RUBRIC, "Custom labels")).set_value(
        "How warm is the reply?"
    )
    run(at).button(key=Datasets.CRIT_ADD).click()
    run(at)
    tone = store.get_criterion_by_name(project.id, "tone")
    assert tone.scale.display_labels == ["cold", "neutral", "warm"]
    assert tone.scale.kind == "ordinal"
    assert "tone" in table(at, "rubric")["name"].tolist()
    # a name that exists is refused with a clear message
    at.text_input(key=Datasets.CRIT_NAME).set_value("tone")
    run(at).button(key=Datasets.CRIT_ADD).click()
    run(at)
    assert "already has a criterion named 'tone'" in at.error[0].value


# --- label import ---------------------------------------------------------------------------------


def _labels_tab(open_app: Open, store: Store) -> tuple[AppTest, int]:
    project = store.list_projects()[0]
    dataset = store.get_dataset_by_name(project.id, "support-answers")
    at = tab(open_app, "Labels")
    at.selectbox(key=Datasets.LAB_DATASET).set_value(dataset.id)
    return run(at), dataset.id


def test_import_labels_one_column_per_annotator(open_app: Open, store: Store) -> None:
    at, dataset_id = _labels_tab(open_app, store)
    wide = pd.DataFrame(
        {"item_id": ["sa-001", "sa-002"], "rater_x": [5, 4], "judge_old": [5, None]}
    )
    upload(at, csv(wide, "wide.csv"))
    plan = " ".join(m.value for m in at.markdown)
    assert "labels for 'support-answers' version 1" in plan
    assert "criterion helpfulness (existing criterion" in plan
    submit(at, Datasets.LAB_IMPORT)
    assert "2 human labels" in at.success[0].value
    matrix = store.annotation_matrix(dataset_id, helpfulness(store))
    assert matrix.loc[["sa-001", "sa-002"], "rater_x"].tolist() == [5.0, 4.0]
    runs = store.list_runs(project_id=store.list_projects()[0].id)
    assert "imported: judge_old" in [r.name for r in runs]


def test_import_labels_in_long_format(open_app: Open, store: Store) -> None:
    at, dataset_id = _labels_tab(open_app, store)
    long = pd.DataFrame(
        {
            "item_id": ["sa-001", "sa-001", "sa-003"],
            "annotator": ["yan", "zoe", "yan"],
            "label": [2, 3, 4],
        }
    )
    upload(at, csv(long, "long.csv"))
    submit(at, Datasets.LAB_IMPORT)
    matrix = store.annotation_matrix(dataset_id, helpfulness(store))
    assert matrix.loc["sa-001", ["yan", "zoe"]].tolist() == [2.0, 3.0]


def test_labels_for_unknown_items_import_nothing(open_app: Open, store: Store) -> None:
    at, dataset_id = _labels_tab(open_app, store)
    before = len(store.export_annotations(dataset_id=dataset_id))
    wide = pd.DataFrame({"item_id": ["sa-001", "nope"], "rater_x": [5, 4]})
    upload(at, csv(wide, "unknown.csv"))
    assert not at.error
    submit(at, Datasets.LAB_IMPORT)
    assert "no item 'nope'" in at.error[0].value
    assert len(store.export_annotations(dataset_id=dataset_id)) == before


# --- agreement and export -------------------------------------------------------------------------


def test_agreement_between_annotators(open_app: Open, store: Store) -> None:
    at = tab(open_app, "Agreement")
    project = store.list_projects()[0]
    dataset = store.get_dataset_by_name(project.id, "support-answers")
    criterion = store.get_criterion_by_name(project.id, "helpfulness")
    at.selectbox(key=Datasets.AGREE_DATASET).set_value(dataset.id)
    run(at).selectbox(key=Datasets.AGREE_CRITERION).set_value(criterion.id)
    run(at)
    expected = human_ceiling(
        store.annotation_matrix(dataset.id, criterion.id), criterion.scale, n_boot=1000, seed=0
    )
    assert expected is not None
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Krippendorff's alpha"] == f"{expected.krippendorff_alpha:.3f}"
    assert metrics["Mean pairwise kappa"] == f"{expected.mean_pairwise_kappa:.3f}"
    assert metrics["Annotators"] == str(expected.n_annotators)
    assert expected.alpha_ci is not None
    low = f"{expected.alpha_ci[0]:.3f}"
    assert any(low in c.value for c in at.caption)
    counts = table(at, "total")
    assert counts.equals(store.annotator_label_counts(dataset.id, criterion.id))
    assert len(at.get("plotly_chart")) == 1


@pytest.mark.parametrize("fmt", ["CSV", "JSONL", "Parquet"])
def test_export_every_revision(open_app: Open, store: Store, fmt: str) -> None:
    project = store.list_projects()[0]
    dataset = store.get_dataset_by_name(project.id, "support-answers")
    criterion = helpfulness(store)
    item = int(store.items_frame(dataset.id).index[0])
    store.submit_annotation(item, criterion, "zed", label=3, base_revision=0)
    store.submit_annotation(item, criterion, "zed", label=4, base_revision=1, comment="better")
    at = tab(open_app, "Export")
    at.selectbox(key=Datasets.EXPORT_DATASET).set_value(dataset.id)
    at.segmented_control(key=Datasets.EXPORT_FORMAT).set_value(fmt)
    run(at)
    expected = store.export_annotations(project_id=project.id, dataset_id=dataset.id)
    assert f"{len(expected)} revisions" in " ".join(c.value for c in at.caption)
    button = at.get("download_button")[0]
    extension = {"CSV": "csv", "JSONL": "jsonl", "Parquet": "parquet"}[fmt]
    assert button.label == f"Download {fmt}"
    assert button.proto.deferred_file_id  # the file is written when the button is pressed
    # the bytes the button hands out (made by the workflow when it is pressed, as the signed-in
    # user) read back as the same table; the press is in the audit log
    session = Session(Server(store), store.open_session("eve", method="password"))
    data = export_file(session, project.id, dataset.id, None, fmt)
    at.download_button(key=Datasets.EXPORT_DOWNLOAD).click().run()
    log = store.audit_log(action="export")
    assert log["target"].tolist() == [f"support-answers-annotations.{extension}"]
    back = read_table(io.BytesIO(data), name=f"x.{extension}")
    mine = back[back["annotator"] == "zed"]
    assert mine["revision"].astype(int).tolist() == [1, 2]
    assert mine["label"].astype(str).tolist() == ["3", "4"]
    assert [str(v).lower() for v in mine["latest"]] == ["false", "true"]
    assert len(back) == len(expected)


# --- project --------------------------------------------------------------------------------------


def test_annotators_per_item_and_a_new_project(open_app: Open, store: Store) -> None:
    at = tab(open_app, "Project", role="admin")
    at.number_input(key=Datasets.PER_ITEM).set_value(3)
    run(at).button(key=Datasets.PER_ITEM_SAVE).click()
    run(at)
    assert store.list_projects()[0].annotators_per_item == 3
    at.session_state[Datasets.TAB] = "Project"
    at.text_input(key=Datasets.NEW_PROJECT).set_value("Second project")
    run(at).button(key=Datasets.CREATE_PROJECT).click()
    run(at)
    assert "Created project 'Second project'" in at.success[0].value
    created = store.get_project_by_name("Second project")
    assert at.session_state[App.PROJECT_ID] == created.id
    at.session_state[Datasets.TAB] = "Datasets"
    run(at)
    assert "There are no datasets yet" in at.info[0].value  # the page now shows the new project


def test_an_empty_database_offers_to_create_a_project(
    open_app: Open, monkeypatch: pytest.MonkeyPatch, app_db: str
) -> None:
    monkeypatch.setenv("EVALCORE_NO_DEMO", "1")
    at = open_app(role="admin", page="datasets")
    assert "no project yet" in at.info[0].value
    at.text_input(key=Datasets.NEW_PROJECT).set_value("Mine")
    run(at).button(key=Datasets.CREATE_PROJECT).click()
    run(at)
    assert [p.name for p in Store.open(app_db).list_projects()] == ["Mine"]
    assert [t.label for t in at.tabs][:2] == ["Datasets", "Upload"]


# --- roles ----------------------------------------------------------------------------------------


def test_an_annotator_cannot_open_datasets(open_app: Open, app_db: str) -> None:
    at = open_app(role="annotator", page="datasets")  # hidden, and refused at its address
    assert "not available to your role" in at.error[0].value
    assert not at.tabs
    page = AppTest.from_file(PAGE, default_timeout=60)
    sign_in(page, "ann", "annotator")
    page.run()
    assert "not available to your role" in page.error[0].value
    assert not page.tabs
    assert not page.file_uploader


def test_a_viewer_is_refused_even_on_the_page_itself(store: Store) -> None:
    page = AppTest.from_file(PAGE, default_timeout=60)
    sign_in(page, "max", "viewer")
    page.run()
    assert not page.exception
    assert "not available to your role" in page.error[0].value
    assert not page.tabs


@pytest.mark.parametrize(("role", "project_tab"), [("engineer", False), ("admin", True)])
def test_the_project_tab_is_an_admins(open_app, role: str, project_tab: bool) -> None:
    at = open_app(role=role, user="mo", page="datasets")
    assert not at.exception
    assert any(t.value == "Datasets" for t in at.title)
    assert ("Project" in [t.label for t in at.tabs]) is project_tab
