"""The Datasets page's sections: datasets, upload, criteria, label import, agreement, export, project.

Each section reads its widgets, calls :mod:`evalcore.workflows.datasets` and renders what it returns;
every save is one call there, checked at the moment of the click.
"""

from __future__ import annotations

import math
from pathlib import PurePath
from typing import Any

import pandas as pd
import streamlit as st

from evalcore.errors import EvalcoreError
from evalcore.workflows import Session
from evalcore.workflows import datasets as flow
from evalcore.workflows.datasets import Catalogue, ColumnMapping, CriterionRecord, DatasetRecord
from ui import state
from ui.render import fmt, md_escape, show_error
from ui.state import App
from ui.state import Datasets as K
from ui.widgets import callback, note

NONE = "(none)"
SKIP = 0  # the "do not import these labels" entry of a target picker (ids start at 1)


# --- small helpers --------------------------------------------------------------------------------


def _dataset_picker(
    datasets: tuple[DatasetRecord, ...], *, key: str, label: str = "Dataset"
) -> DatasetRecord:
    by_id = {d.id: d for d in datasets}
    return by_id[
        st.selectbox(
            label, list(by_id), format_func=lambda i: flow.describe_dataset(by_id[i]), key=key
        )
    ]


def _dataset_and_criterion(
    cat: Catalogue, dataset_key: str, criterion_key: str, empty: str
) -> tuple[DatasetRecord, CriterionRecord] | None:
    """A dataset picker and, beside it, a picker of the criteria of its kind (``None``: no choice)."""
    if not cat.datasets:
        st.info(empty)
        return None
    c1, c2 = st.columns(2)
    with c1:
        dataset = _dataset_picker(cat.datasets, key=dataset_key)
    fitting = {c.id: c for c in cat.fitting(dataset.kind)}
    if not fitting:
        c2.info(f"There is no {dataset.kind} criterion yet. Add one under Criteria.")
        return None
    chosen = c2.selectbox(
        "Criterion", list(fitting), format_func=lambda i: fitting[i].name, key=criterion_key
    )
    return dataset, fitting[chosen]


def show_data_error(
    exc: EvalcoreError, name: str, data: bytes, frame: pd.DataFrame | None, *, key: str
) -> None:
    """The error in full, the rows it names as they are in the file, and that nothing was saved."""
    show_error(exc, title=name)
    rows = flow.offending_rows(exc, data, frame, name=name)
    if rows is not None:
        st.caption("The rows named above, as they are in the file:")
        st.dataframe(rows.astype(str), key=key, width="stretch")
    st.caption("Nothing was saved.")


def _uploaded(session: Session, project_id: int, label: str, key: str, hint: str, bad: str,
              **kwargs: Any) -> tuple[str, bytes, flow.FileTable] | None:  # fmt: skip
    """A file uploader and the table read from its file; a hint, or the error, and ``None``."""
    upload = st.file_uploader(label, type=list(flow.UPLOAD_TYPES), key=key, **kwargs)
    if upload is None:
        st.caption(hint)
        return None
    name, data = upload.name, upload.getvalue()
    try:
        return name, data, flow.read_file(session, project_id, name, data)
    except EvalcoreError as exc:
        show_data_error(exc, name, data, None, key=bad)
        return None


def _column_select(label: str, columns: list[str], suggested: str | None, key: str) -> str | None:
    options = [NONE, *columns]
    chosen = st.selectbox(
        label, options, index=options.index(suggested) if suggested in options else 0, key=key
    )
    return None if chosen == NONE else chosen


def _label_columns(
    columns: list[str], guess: ColumnMapping, human_key: str, judge_key: str
) -> tuple[list[str], list[str]]:
    left, right = st.columns(2)
    human = left.multiselect("Human label columns (one per annotator)", columns,
                             default=[c for c in guess.human if c in columns], key=human_key)  # fmt: skip
    judge = right.multiselect("Judge label columns (each becomes an imported judge run)", columns,
                              default=[c for c in guess.judge if c in columns], key=judge_key)  # fmt: skip
    return human, judge


# --- Datasets -------------------------------------------------------------------------------------


def datasets_section(session: Session, cat: Catalogue) -> None:
    if not cat.datasets:
        st.info("There are no datasets yet. Upload one under Upload.")
        return
    st.dataframe(cat.table(), key=K.LIST, width="stretch", hide_index=True)
    dataset = _dataset_picker(cat.datasets, key=K.PREVIEW_PICK, label="Look at the items of")
    items = flow.dataset_items(session, dataset.id)
    st.caption(f"Showing {min(len(items), 100)} of {len(items)} items.")
    st.dataframe(items.head(100), key=K.PREVIEW, width="stretch", hide_index=True)


# --- Upload ---------------------------------------------------------------------------------------


def _reset_form_for(token: str) -> None:
    """A different file starts from a fresh mapping form, pre-filled by the guess."""
    if st.session_state.get(K.UPLOAD_TOKEN) != token:
        for name in [
            k for k in st.session_state if str(k).startswith((f"{K.MAP}.", f"{K.TARGET}.", K.NAME))
        ]:
            st.session_state.pop(name, None)
        st.session_state[K.UPLOAD_TOKEN] = token


def mapping_form(table: flow.FileTable) -> tuple[ColumnMapping, str]:
    """Which column holds what, pre-filled by the guess; returns the mapping and the kind."""
    columns, guess = table.columns, table.guess
    st.markdown("**Columns**")
    chosen: dict[str, str | None] = {}
    fields = list(flow.ITEM_FIELD_LABELS)
    for row in (fields[:4], fields[4:]):
        cols = st.columns(4)
        for col, name in zip(cols, row, strict=False):
            with col:
                chosen[name] = _column_select(
                    flow.ITEM_FIELD_LABELS[name],
                    columns,
                    getattr(guess, name),
                    state.key(K.MAP, name),
                )
    pairwise = bool(chosen["response_a"] and chosen["response_b"])
    kind = cols[3].radio(
        "Kind",
        ["pointwise", "pairwise"],
        index=int(pairwise),
        key=state.key(K.MAP, "kind"),
        horizontal=True,
    )
    st.markdown("**Labels already in the file** (optional)")
    human, judge = _label_columns(
        columns, guess, state.key(K.MAP, "human"), state.key(K.MAP, "judge")
    )
    with st.expander("Labels in long form (one row per label)", expanded=guess.is_long):
        c1, c2 = st.columns(2)
        with c1:
            annotator = _column_select(
                "Annotator column", columns, guess.annotator, state.key(K.MAP, "annotator")
            )
        with c2:
            label = _column_select("Label column", columns, guess.label, state.key(K.MAP, "label"))
    long_form = annotator is not None and label is not None
    mapping = ColumnMapping(
        **chosen,  # type: ignore[arg-type]
        human=() if long_form else tuple(human),
        judge=() if long_form else tuple(judge),
        metric="labels",
        kind="pairwise" if kind == "pairwise" else None,
        annotator=annotator if long_form else None,
        label=label if long_form else None,
    )
    return mapping, kind


def _label_targets(loaded: Any, cat: Catalogue) -> dict[str, int | None]:
    """Where each label set of the file goes: a criterion, or not imported; none until chosen."""
    targets: dict[str, int | None] = {}
    for label_set in loaded.label_sets:
        fitting = {c.id: c.name for c in cat.fitting(label_set.kind)}
        names = {SKIP: "Do not import these labels", **fitting}
        same = [i for i, n in fitting.items() if n == label_set.metric]
        who = ", ".join(label_set.annotators) or "no annotators"
        judges = ", ".join(label_set.judge_names) or "no judges"
        chosen = st.selectbox(
            f"Labels **{md_escape(label_set.metric)}** ({md_escape(who)}; {md_escape(judges)}; "
            f"{md_escape(', '.join(label_set.scale.display_labels))}) go to criterion",
            list(names),
            index=list(names).index(same[0]) if same else None,
            placeholder="Choose a criterion (add one under Criteria)",
            format_func=names.__getitem__,
            key=state.key(K.TARGET, label_set.metric),
        )
        if chosen is not None:
            targets[label_set.metric] = chosen or None
    return targets


def _preview(loaded: Any) -> None:
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Items", len(loaded.items))
    c2.metric("Kind", loaded.kind)
    c3.metric("Layout", loaded.layout)
    c4.metric("Label sets", len(loaded.label_sets))
    for line in loaded.notes:
        st.caption(md_escape(line))
    st.dataframe(loaded.items.head(20), key=K.UPLOAD_PREVIEW, width="stretch", hide_index=True)


def upload_section(session: Session, cat: Catalogue) -> None:
    round_ = int(st.session_state.get(K.UPLOAD_ROUND, 0))
    uploaded = _uploaded(
        session, cat.project.id, "A dataset file: CSV, TSV, JSONL, JSON or Parquet", state.key(K.UPLOAD, round_),
        "Each row is one item. Choose which columns hold the prompt, the response and the rest; "
        "human and judge labels already in the file can be imported with it.",
        K.UPLOAD_BAD_ROWS,
        help="Vertex, Azure and RAGAS column names are recognised; any other table is mapped below.",
    )  # fmt: skip
    if uploaded is None:
        return
    name, data, table = uploaded
    _reset_form_for(flow.file_token(name, data))
    mapping, kind = mapping_form(table)
    try:
        loaded = flow.preview_file(session, cat.project.id, name, data, mapping)
    except EvalcoreError as exc:
        show_data_error(exc, name, data, table.frame, key=K.UPLOAD_BAD_ROWS)
        return
    st.markdown("**Preview**")
    _preview(loaded)
    targets = _label_targets(loaded, cat)
    dataset_name = st.text_input("Save as dataset", value=PurePath(name).stem, key=K.NAME).strip()
    try:
        check = flow.check_upload(
            session,
            cat.project.id,
            name,
            data,
            mapping,
            kind=kind,
            targets=targets,
            dataset_name=dataset_name,
        )  # type: ignore[arg-type]
    except EvalcoreError as exc:
        show_data_error(exc, name, data, table.frame, key=K.UPLOAD_BAD_ROWS)
        return
    if check.existing_version is not None:
        st.caption(
            f"A dataset named {md_escape(repr(dataset_name))} exists (version {check.existing_version}); "
            f"this upload becomes version {check.existing_version + 1}. Earlier versions stay as they are."
        )  # fmt: skip
    if check.labels:
        st.caption(f"Saved with it: {md_escape(check.labels)}.")
    if check.plan.left_out:
        st.caption(
            f"Not imported, as you chose: the labels {md_escape(', '.join(check.plan.left_out))}."
        )
    if st.button("Save dataset", key=K.SAVE, type="primary", disabled=not dataset_name):
        try:
            done = flow.save_file(
                session,
                cat.project.id,
                name,
                data,
                mapping,
                kind=kind,
                targets=targets,
                dataset_name=dataset_name,
            )  # type: ignore[arg-type]
        except EvalcoreError as exc:
            show_data_error(exc, name, data, table.frame, key=K.SAVE_BAD_ROWS)
            return
        note("success", done)
        st.session_state[K.UPLOAD_ROUND] = round_ + 1
        st.rerun()


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


# --- Labels ---------------------------------------------------------------------------------------


def labels_section(session: Session, cat: Catalogue) -> None:
    st.caption(
        "Import labels gathered elsewhere into a saved dataset: human labels count like labels "
        "given here; judge labels become imported judge runs."
    )
    chosen = _dataset_and_criterion(cat, K.LAB_DATASET, K.LAB_CRITERION, "Upload a dataset first.")
    if chosen is None:
        return
    dataset, criterion = chosen
    uploaded = _uploaded(
        session, cat.project.id, "A labels file", K.LAB_FILE,
        "Either one column per annotator (and per judge) beside an item id column, or one row "
        "per label with item id, annotator and label columns.",
        K.LAB_BAD_ROWS,
    )  # fmt: skip
    if uploaded is None:
        return
    name, data, table = uploaded
    columns, guess = table.columns, table.guess
    long_form = st.radio("Layout", ["One column per annotator", "One row per label"], index=int(guess.is_long),
                         key=K.LAB_LAYOUT, horizontal=True) == "One row per label"  # fmt: skip
    item_id = _column_select("Item id column", columns, guess.item_id, K.LAB_ITEM)
    if long_form:
        c1, c2 = st.columns(2)
        with c1:
            annotator = _column_select(
                "Annotator column", columns, guess.annotator, K.LAB_ANNOTATOR
            )
        with c2:
            label = _column_select("Label column", columns, guess.label, K.LAB_LABEL)
        if annotator is None or label is None:
            st.info("Choose the annotator and label columns.")
            return
        mapping = ColumnMapping(
            item_id=item_id, annotator=annotator, label=label, metric=criterion.name
        )
    else:
        human, judge = _label_columns(columns, guess, K.LAB_HUMAN, K.LAB_JUDGE)
        if not human and not judge:
            st.info("Choose at least one label column.")
            return
        mapping = ColumnMapping(item_id=item_id, human=tuple(human), judge=tuple(judge), metric=criterion.name,
                                kind="pairwise" if criterion.kind == "pairwise" else None)  # fmt: skip
    try:
        plan = flow.check_label_import(session, dataset.id, criterion.id, name, data, mapping)
    except EvalcoreError as exc:
        show_data_error(exc, name, data, table.frame, key=K.LAB_BAD_ROWS)
        return
    st.dataframe(plan.label_counts(), key=K.LAB_COUNTS)
    if not plan.describe():
        st.info(f"{md_escape(name)} has no labels in the chosen columns.")
        return
    if st.button("Import labels", key=K.LAB_IMPORT, type="primary"):
        try:
            done = flow.import_labels(session, dataset.id, criterion.id, name, data, mapping)
        except EvalcoreError as exc:
            show_error(exc, title="The import stopped")
            return
        note("success", done)
        st.rerun()


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
