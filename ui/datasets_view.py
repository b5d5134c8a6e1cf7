"""The Datasets page's sections: datasets, upload, criteria, label import, agreement, export, project.

Each section reads its widgets, calls :mod:`evalcore.workflows.datasets` and renders what it returns;
every save is one call there, checked at the moment of the click.
"""

from __future__ import annotations

import math
from pathlib import PurePath

import pandas as pd
import streamlit as st

from evalcore.errors import EvalcoreError, PermissionDeniedError, SessionEndedError
from evalcore.workflows import Session
from evalcore.workflows import datasets as flow
from evalcore.workflows.datasets import Catalogue, CriterionRecord, DatasetRecord
from ui import state
from ui.render import fmt, md_escape
from ui.state import App
from ui.state import Datasets as K
from ui.widgets import callback, dataset_picker, note, show_data_error, uploaded

# --- small helpers --------------------------------------------------------------------------------


def _dataset_and_criterion(
    cat: Catalogue, dataset_key: str, criterion_key: str, empty: str
) -> tuple[DatasetRecord, CriterionRecord] | None:
    """A dataset picker and, beside it, a picker of the criteria of its kind (``None``: no choice)."""
    if not cat.datasets:
        st.info(empty)
        return None
    c1, c2 = st.columns(2)
    dataset = dataset_picker(c1, cat.datasets, key=dataset_key)
    fitting = {c.id: c for c in cat.fitting(dataset.kind)}
    if not fitting:
        c2.info(f"There is no {dataset.kind} criterion yet. Add one under Criteria.")
        return None
    chosen = c2.selectbox(
        "Criterion", list(fitting), format_func=lambda i: fitting[i].name, key=criterion_key
    )
    return dataset, fitting[chosen]


def _bad_file(session: Session, cat: Catalogue, exc: EvalcoreError, name: str, data: bytes,
              key: str) -> None:  # fmt: skip
    rows = flow.rows_named(session, cat.project.id, exc, name, data)
    show_data_error(exc, name, rows, key=key)


def datasets_section(session: Session, cat: Catalogue) -> None:
    if not cat.datasets:
        st.info("There are no datasets yet. Upload one under Upload.")
        return
    st.dataframe(cat.table(), key=K.LIST, width="stretch", hide_index=True)
    dataset = dataset_picker(st, cat.datasets, key=K.PREVIEW_PICK, label="Look at the items of")
    items = flow.dataset_items(session, dataset.id)
    shown, hidden = flow.field_summary(dataset, items)
    st.caption(
        f"Item fields (the judge's variables; what annotators see): {md_escape(', '.join(shown))}"
        + (f" · metadata, shown to nobody: {md_escape(', '.join(hidden))}" if hidden else "")
    )
    st.caption(f"Showing {min(len(items), 100)} of {len(items)} items.")
    st.dataframe(items.head(100), key=K.PREVIEW, width="stretch", hide_index=True)


# --- Upload and Labels: one plan, one form -----------------------------------------------------------


def _plan_text(plan: flow.ImportPlan) -> None:
    st.markdown("\n".join(f"- {md_escape(line)}" for line in plan.describe()))
    if plan.fractional_found:
        st.caption("Choose below what happens to the fractional scores; nothing is saved before.")


def import_form(
    session: Session, cat: Catalogue, name: str, data: bytes, *, dataset: DatasetRecord | None
) -> None:
    """The plan for a file and the one form that corrects and imports it (a new dataset, or
    labels for ``dataset``); errors appear only after the submit, naming the file and rows."""
    keys = K.UPLOAD if dataset is None else K.LAB_FILE
    token = flow.file_token(name, data)
    try:
        plan = flow.propose(
            session, cat.project.id, name, data, dataset_id=None if dataset is None else dataset.id
        )
    except (SessionEndedError, PermissionDeniedError):
        raise
    except EvalcoreError as exc:
        _bad_file(session, cat, exc, name, data, state.key(keys, "bad_rows"))
        return
    _plan_text(plan)
    with st.form(state.key(keys, "form")):
        st.caption("What each column holds: change a role, a criterion or a name, then import.")
        edited = st.data_editor(
            plan.table(), key=state.key(keys, "roles", token), hide_index=True, width="stretch",
            disabled=("column", "example"),
            column_config={"role": st.column_config.SelectboxColumn("role", options=list(flow.ROLE_TEXT.values()), required=True)},
        )  # fmt: skip
        fractional = "refuse"
        if plan.fractional_found:
            fractional = st.radio(f"{plan.fractional_found} fractional scores (such as 3.5 on 1–5)", list(flow.FRACTIONAL),
                                  format_func=flow.FRACTIONAL.__getitem__, key=state.key(keys, "fractional"))  # fmt: skip
        dataset_name = None
        if dataset is None:
            dataset_name = st.text_input(
                "Save as dataset (an existing name gets a new version)",
                value=PurePath(name).stem,
                key=K.NAME,
            )
        submitted = st.form_submit_button("Import" if dataset is None else "Import labels", type="primary",
                                          key=K.SAVE if dataset is None else K.LAB_IMPORT)  # fmt: skip
    if not submitted:
        return
    try:
        done = flow.import_file(
            session, cat.project.id, name, data, flow.roles_from_table(pd.DataFrame(edited)),
            fractional=fractional, dataset_name=dataset_name, dataset_id=None if dataset is None else dataset.id,
        )  # fmt: skip
    except (SessionEndedError, PermissionDeniedError):
        raise
    except EvalcoreError as exc:
        _bad_file(session, cat, exc, name, data, state.key(keys, "save_bad_rows"))
        return
    note("success", done)
    st.session_state[K.UPLOAD_ROUND] = int(st.session_state.get(K.UPLOAD_ROUND, 0)) + 1
    st.rerun()


def upload_section(session: Session, cat: Catalogue) -> None:
    for found in uploaded(
        "A dataset file: CSV, TSV, JSONL, JSON or Parquet",
        types=flow.UPLOAD_TYPES,
        key=state.key(K.UPLOAD, st.session_state.get(K.UPLOAD_ROUND, 0)),
        hint="Each row is one item. evalcore proposes what each column holds (the prompt, the "
        "response, the other item fields, one criterion per aspect with its annotators and "
        "judges); you correct it in one form.",
        help="Vertex, Azure and RAGAS column names are recognised, and label columns named by "
        "aspect, annotator or judge (human_fluency_1, judge_gpt4_fluency …).",
    ):
        import_form(session, cat, *found, dataset=None)


def labels_section(session: Session, cat: Catalogue) -> None:
    st.caption(
        "Import labels gathered elsewhere into a saved dataset: human labels count like labels "
        "given here; judge labels become imported judge runs."
    )
    if not cat.datasets:
        st.info("Upload a dataset first.")
        return
    dataset = dataset_picker(st, cat.datasets, key=K.LAB_DATASET)
    for found in uploaded(
        "A labels file",
        types=flow.UPLOAD_TYPES,
        key=state.key(K.LAB_FILE, st.session_state.get(K.UPLOAD_ROUND, 0)),
        hint="Either one column per annotator (and per judge) beside an item id column, or one row "
        "per label with item id, annotator and label columns.",
    ):
        import_form(session, cat, *found, dataset=dataset)


# --- Criteria -------------------------------------------------------------------------------------


@callback
def _add_criterion(session: Session, project_id: int, rubric_key: str) -> None:
    ss = st.session_state
    done = flow.add_criterion(
        session, project_id, str(ss.get(K.CRIT_NAME) or ""), scale=str(ss.get(K.CRIT_SCALE)),
        rubric=str(ss.get(rubric_key) or ""), labels=str(ss.get(K.CRIT_LABELS) or ""),
        ordered=bool(ss.get(K.CRIT_ORDERED, True)),
    )  # fmt: skip
    note("success", done)


def criteria_section(session: Session, cat: Catalogue) -> None:
    if cat.criteria:
        st.dataframe(cat.criteria_table(), key=K.CRITERIA, width="stretch", hide_index=True)
    else:
        st.info("There are no criteria yet.")
    st.subheader("Add a criterion")
    c1, c2 = st.columns(2)
    c1.text_input("Name", key=K.CRIT_NAME, placeholder="e.g. helpfulness")
    choice = c2.selectbox("Scale", [*flow.CRITERION_SCALES, flow.CUSTOM_SCALE], key=K.CRIT_SCALE)
    builtin = flow.CRITERION_SCALES.get(choice)
    if builtin is None:
        c3, c4 = st.columns([3, 1])
        c3.text_input(
            "Labels, in order, separated by commas", key=K.CRIT_LABELS, placeholder="bad, ok, good"
        )
        c4.checkbox("Ordered", value=True, key=K.CRIT_ORDERED)
    else:
        st.caption(f"Labels: {md_escape(', '.join(builtin.scale.display_labels))} · {builtin.kind}")
    rubric_key = state.key(K.CRIT_RUBRIC, choice)
    st.text_area("Rubric (annotators see it beside every item; Markdown)",
                 value=builtin.rubric if builtin else "", key=rubric_key, height=140)  # fmt: skip
    st.button("Add criterion", key=K.CRIT_ADD, type="primary", on_click=_add_criterion,
              args=(session, cat.project.id, rubric_key))  # fmt: skip


# --- Agreement ------------------------------------------------------------------------------------


def agreement_section(session: Session, cat: Catalogue) -> None:
    chosen = _dataset_and_criterion(
        cat, K.AGREE_DATASET, K.AGREE_CRITERION, "There is no dataset yet."
    )
    if chosen is None:
        return
    found = flow.agreement(session, chosen[0].id, chosen[1].id)
    if found.counts.empty:
        st.info("Nobody has labelled this dataset on this criterion yet.")
        return
    ceiling = found.ceiling
    if ceiling is None:
        st.info("Agreement needs at least two annotators who labelled the same items.")
    else:
        low, high = ceiling.alpha_ci or (math.nan, math.nan)
        m1, m2, m3, m4 = st.columns(4)
        m1.metric("Krippendorff's alpha", fmt(ceiling.krippendorff_alpha),
                  help=f"{ceiling.level} distance; 1 is perfect agreement, 0 is chance.")  # fmt: skip
        m1.caption(f"95% interval {fmt(low)} to {fmt(high)}")
        m2.metric("Mean pairwise kappa", fmt(ceiling.mean_pairwise_kappa),
                  help="Cohen's kappa of every pair of annotators, averaged"
                  + (f"; {ceiling.kappa_weights} weights." if ceiling.kappa_weights else "."))  # fmt: skip
        m3.metric("Items rated by two or more", ceiling.n_items)
        m4.metric("Annotators", ceiling.n_annotators)
        st.plotly_chart(found.figure, key=K.AGREE_HEAT, config={"displaylogo": False})
    st.markdown("**Labels per annotator** (latest answers)")
    st.dataframe(found.counts, key=K.AGREE_COUNTS, width="stretch")


# --- Export ---------------------------------------------------------------------------------------


def _export_bytes(session: Session, cat: Catalogue, choice: str) -> bytes:
    """The download button's data, made when it is pressed (the caller is checked then)."""
    ss = st.session_state
    dataset_id, criterion_id = ss.get(K.EXPORT_DATASET) or None, ss.get(K.EXPORT_CRITERION) or None
    try:
        return flow.export_file(session, cat.project.id, dataset_id, criterion_id, choice)
    except EvalcoreError as exc:
        return f"The export was refused: {exc}".encode()


@callback
def _record_export(session: Session, project_id: int, file_name: str) -> None:
    flow.record_export(session, project_id, file_name)


def export_section(session: Session, cat: Catalogue) -> None:
    by_id = {d.id: d for d in cat.datasets}
    criteria = {c.id: c for c in cat.criteria}
    c1, c2, c3 = st.columns([2, 2, 1])
    dataset_id = c1.selectbox("Dataset", [0, *by_id], key=K.EXPORT_DATASET,
                              format_func=lambda i: "All datasets" if i == 0 else flow.describe_dataset(by_id[i]))  # fmt: skip
    criterion_id = c2.selectbox("Criterion", [0, *criteria], key=K.EXPORT_CRITERION,
                                format_func=lambda i: "All criteria" if i == 0 else criteria[i].name)  # fmt: skip
    choice = (
        c3.segmented_control(
            "Format", list(flow.EXPORT_FORMATS), default="CSV", key=K.EXPORT_FORMAT, required=True
        )
        or "CSV"
    )
    view = flow.export_view(session, cat.project.id, dataset_id or None, criterion_id or None)
    if view.frame.empty:
        st.info("There are no annotations to export for this choice.")
        return
    st.caption(
        f"{len(view.frame)} revisions of {view.latest} annotations; `latest` marks the revision that counts."
    )
    st.dataframe(view.frame.head(50), key=K.EXPORT_PREVIEW, width="stretch", hide_index=True)
    st.download_button(
        f"Download {choice}",
        data=lambda: _export_bytes(session, cat, choice),
        file_name=view.file_name(choice),
        on_click=_record_export,
        args=(session, cat.project.id, view.file_name(choice)),
        mime=flow.EXPORT_FORMATS[choice][1],
        key=K.EXPORT_DOWNLOAD,
        type="primary",
        icon=":material/download:",
    )


# --- Project --------------------------------------------------------------------------------------


@callback
def _create_project(session: Session) -> None:
    """Create the project and make it the current one."""
    ss = st.session_state
    created = flow.create_project(
        session, str(ss.get(K.NEW_PROJECT) or ""), str(ss.get(K.NEW_PROJECT_DESC) or "")
    )
    ss[App.PROJECT_ID] = created.id
    if App.PROJECT_PICKER in ss:
        ss[App.PROJECT_PICKER] = created.id
    ss[K.NEW_PROJECT] = ss[K.NEW_PROJECT_DESC] = ""
    note("success", f"Created project {created.name!r}. It is now the current project.")


def new_project_form(session: Session) -> None:
    st.text_input("Project name", key=K.NEW_PROJECT)
    st.text_area("Description (optional)", key=K.NEW_PROJECT_DESC, height=80)
    st.button("Create project", key=K.CREATE_PROJECT, on_click=_create_project, args=(session,))


@callback
def _save_per_item(session: Session, project_id: int) -> None:
    note(
        "success",
        flow.set_annotators_per_item(session, project_id, int(st.session_state[K.PER_ITEM])),
    )


def project_section(session: Session, cat: Catalogue) -> None:
    st.subheader("Annotators per item")
    st.number_input(
        "How many annotators should label each item", min_value=1, max_value=50,
        value=cat.project.annotators_per_item, step=1, key=K.PER_ITEM,
        help="A new queue gets the items that still have fewer annotators than this. Queues "
        "already given out keep their items.",
    )  # fmt: skip
    st.button("Save setting", key=K.PER_ITEM_SAVE, type="primary", on_click=_save_per_item,
              args=(session, cat.project.id))  # fmt: skip
    if cat.server_admin:
        st.subheader("New project")
        new_project_form(session)


SECTIONS = {
    "Datasets": datasets_section,
    "Upload": upload_section,
    "Criteria": criteria_section,
    "Labels": labels_section,
    "Agreement": agreement_section,
    "Export": export_section,
    "Project": project_section,
}


def datasets_page(session: Session, project_id: int) -> None:
    """The page's tabs (only the open one runs); the Project tab is a project admin's."""
    cat = flow.catalogue(session, project_id)
    names = [n for n in SECTIONS if n != "Project" or cat.can_admin]
    for name, tab in zip(names, st.tabs(names, key=K.TAB, on_change="rerun"), strict=True):
        if tab.open:
            with tab:
                SECTIONS[name](session, cat)
