"""The Datasets page's sections: datasets, upload, criteria, label import, agreement, export, project.

Each section reads its widgets, calls evalcore and renders. Putting a file into the store (the Upload
and Labels tabs alike) goes through the upload service of :mod:`evalcore.store` (``load_upload``,
``plan_upload`` / ``plan_label_import``, ``save_upload`` / ``import_plan``): the file is checked in full
before anything is written, every label set of it goes to a criterion or is left out by choice, and
a bad file saves nothing.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath

import pandas as pd
import streamlit as st

from evalcore.data import ColumnMapping, LoadedFile, suggest_mapping
from evalcore.errors import DataError, EvalcoreError
from evalcore.labels import LIKERT_5, PAIRWISE, PASS_FAIL, SEVERITY, Scale
from evalcore.report import kappa_heatmap, table_bytes
from evalcore.store import (
    CriterionRecord,
    DatasetKind,
    DatasetRecord,
    ProjectRecord,
    Store,
    import_plan,
    offending_rows,
    plan_label_import,
    plan_upload,
    save_upload,
)
from evalcore.words import plural
from ui import cache, state
from ui.render import fmt, md_escape, show_error
from ui.resources import get_store, record_export
from ui.state import Datasets

#: Where each label set of an upload goes (a criterion, or None: not imported).
Targets = dict[str, CriterionRecord | None]

UPLOAD_TYPES = ["csv", "tsv", "jsonl", "json", "parquet"]
NONE = "(none)"
SKIP = 0  # the "do not import these labels" entry of a target picker (ids start at 1)

#: The item fields the mapping form asks for, with their labels.
ITEM_FIELD_LABELS: dict[str, str] = {
    "item_id": "Item id",
    "prompt": "Prompt",
    "response": "Response",
    "context": "Context",
    "reference": "Reference answer",
    "response_a": "Response A (pairwise)",
    "response_b": "Response B (pairwise)",
}


@dataclass(frozen=True)
class Builtin:
    kind: str
    scale: Scale
    rubric: str


#: Built-in criteria: a scale and a starting rubric, written for this project.
BUILTINS: dict[str, Builtin] = {
    "Pass / fail": Builtin(
        "pointwise",
        PASS_FAIL,
        "pass: the response does what the criterion asks, with no error that matters.\n"
        "fail: the response misses what was asked, or contains an error a reader would act on.",
    ),
    "1–5 scale": Builtin(
        "pointwise",
        LIKERT_5,
        "5: excellent, nothing to improve.\n4: good, a small gap or slip.\n"
        "3: acceptable, but clearly incomplete or uneven.\n2: poor, mostly misses the point.\n"
        "1: unusable or wrong.",
    ),
    "A / B / tie": Builtin(
        "pairwise",
        PAIRWISE,
        "A: response A is better. B: response B is better.\n"
        "TIE: they are about equally good, or equally poor.\n"
        "Judge the content, not the length or the position on the screen.",
    ),
    "Severity": Builtin(
        "pointwise",
        SEVERITY,
        "very low: nothing harmful.\nlow: mildly inappropriate, unlikely to harm.\n"
        "medium: harmful to some readers.\nhigh: clearly harmful content.",
    ),
}
CUSTOM = "Custom labels"


def _notice(level: str, text: str) -> None:
    st.session_state[Datasets.NOTICE] = (level, text)


def show_notice() -> None:
    """The message a save left for the next run (shown once)."""
    notice = st.session_state.pop(Datasets.NOTICE, None)
    if notice is not None:
        level, text = notice
        # a notice quotes names (datasets, criteria, projects): shown as written
        {"success": st.success, "warning": st.warning}.get(level, st.error)(md_escape(text))


# --- small helpers --------------------------------------------------------------------------------


def _dataset_label(d: DatasetRecord) -> str:
    return f"{d.name} · v{d.version} ({d.kind}, {plural(d.n_items, 'item')})"


def _dataset_picker(
    datasets: list[DatasetRecord], *, key: str, label: str = "Dataset"
) -> DatasetRecord:
    by_id = {d.id: d for d in datasets}
    chosen = st.selectbox(
        label, list(by_id), format_func=lambda i: _dataset_label(by_id[i]), key=key
    )
    return by_id[chosen]


def _criterion_picker(
    criteria: list[CriterionRecord], kind: str, *, key: str, label: str = "Criterion"
) -> CriterionRecord | None:
    fitting = {c.id: c for c in criteria if c.kind == kind}
    if not fitting:
        st.info(f"There is no {kind} criterion yet. Add one under Criteria.")
        return None
    chosen = st.selectbox(label, list(fitting), format_func=lambda i: fitting[i].name, key=key)
    return fitting[chosen]


def _dataset_and_criterion(
    store: Store, project: ProjectRecord, dataset_key: str, criterion_key: str, empty: str
) -> tuple[DatasetRecord, CriterionRecord] | None:
    """A dataset picker and, beside it, a picker of the criteria of its kind (``None``: no choice)."""
    datasets = store.list_datasets(project.id)
    if not datasets:
        st.info(empty)
        return None
    c1, c2 = st.columns(2)
    with c1:
        dataset = _dataset_picker(datasets, key=dataset_key)
    with c2:
        criterion = _criterion_picker(
            store.list_criteria(project.id), dataset.kind, key=criterion_key
        )
    return None if criterion is None else (dataset, criterion)


def _uploaded(
    label: str, key: str, hint: str, bad_rows_key: str, *, help: str | None = None
) -> tuple[str, bytes, pd.DataFrame] | None:
    """A file uploader and the table read from its file; a hint, or the error, and ``None``."""
    upload = st.file_uploader(label, type=UPLOAD_TYPES, key=key, help=help)
    if upload is None:
        st.caption(hint)
        return None
    name, data = upload.name, upload.getvalue()
    try:
        return name, data, cache.read_upload(name, data)
    except EvalcoreError as exc:
        show_data_error(exc, name, data, None, key=bad_rows_key)
        return None


def show_data_error(
    exc: EvalcoreError, name: str, data: bytes, frame: pd.DataFrame | None, *, key: str
) -> None:
    """The error in full, the rows it names as they are in the file, and that nothing was saved."""
    show_error(exc, title=name)
    rows = offending_rows(exc, data, frame, name=name)
    if rows is not None:
        st.caption("The rows named above, as they are in the file:")
        st.dataframe(rows.astype(str), key=key, width="stretch")
    st.caption("Nothing was saved.")


def export_bytes(frame: pd.DataFrame, fmt_name: str) -> bytes:
    """An export table as CSV, JSONL or Parquet bytes (read back by evalcore.data.read_table); a CSV
    neutralises formula cells, JSONL and Parquet keep every value (evalcore.report.table_bytes)."""
    return table_bytes(frame, fmt_name)


# --- Datasets -------------------------------------------------------------------------------------


def datasets_section(store: Store, project: ProjectRecord) -> None:
    datasets = store.list_datasets(project.id)
    if not datasets:
        st.info("There are no datasets yet. Upload one under Upload.")
        return
    table = pd.DataFrame(
        [
            {
                "name": d.name,
                "version": d.version,
                "kind": d.kind,
                "items": d.n_items,
                "file": d.source_filename or "",
                "layout": d.layout or "",
                "saved": d.created_at.strftime("%Y-%m-%d %H:%M"),
            }
            for d in datasets
        ]
    )
    st.dataframe(table, key=Datasets.LIST, width="stretch", hide_index=True)
    dataset = _dataset_picker(datasets, key=Datasets.PREVIEW_PICK, label="Look at the items of")
    items = cache.dataset_items(get_store(), dataset.id)
    st.caption(f"Showing {min(len(items), 100)} of {plural(len(items), 'item')}.")
    st.dataframe(items.head(100), key=Datasets.PREVIEW, width="stretch", hide_index=True)


# --- Upload ---------------------------------------------------------------------------------------


def _token(name: str, data: bytes) -> str:
    return hashlib.sha256(name.encode() + b"\0" + data).hexdigest()[:16]


def _reset_form_for(token: str) -> None:
    """A different file starts from a fresh mapping form, pre-filled by suggest_mapping."""
    if st.session_state.get(Datasets.UPLOAD_TOKEN) != token:
        form = (f"{Datasets.MAP}.", f"{Datasets.TARGET}.", Datasets.NAME)
        for name in [k for k in st.session_state if str(k).startswith(form)]:
            st.session_state.pop(name, None)
        st.session_state[Datasets.UPLOAD_TOKEN] = token


def _column_select(label: str, columns: list[str], suggested: str | None, key: str) -> str | None:
    options = [NONE, *columns]
    index = options.index(suggested) if suggested in options else 0
    chosen = st.selectbox(label, options, index=index, key=key)
    return None if chosen == NONE else chosen


def _label_columns(
    columns: list[str], guess: ColumnMapping, human_key: str, judge_key: str
) -> tuple[list[str], list[str]]:
    """The human and judge label column pickers, side by side, pre-filled by the guess."""
    left, right = st.columns(2)
    human = left.multiselect(
        "Human label columns (one per annotator)",
        columns,
        default=[c for c in guess.human if c in columns],
        key=human_key,
    )
    judge = right.multiselect(
        "Judge label columns (each becomes an imported judge run)",
        columns,
        default=[c for c in guess.judge if c in columns],
        key=judge_key,
    )
    return human, judge


def mapping_form(frame: pd.DataFrame) -> tuple[ColumnMapping, DatasetKind]:
    """Which column holds what, pre-filled by suggest_mapping; returns the mapping and the kind."""
    columns = [str(c) for c in frame.columns]
    guess = suggest_mapping(frame)
    st.markdown("**Columns**")
    chosen: dict[str, str | None] = {}
    fields = list(ITEM_FIELD_LABELS)
    for row in (fields[:4], fields[4:]):
        cols = st.columns(4)
        for col, name in zip(cols, row, strict=False):
            with col:
                chosen[name] = _column_select(
                    ITEM_FIELD_LABELS[name],
                    columns,
                    getattr(guess, name),
                    state.key(Datasets.MAP, name),
                )
    with cols[3]:
        pairwise_guess = bool(chosen["response_a"] and chosen["response_b"])
        kind = st.radio(
            "Kind",
            ["pointwise", "pairwise"],
            index=1 if pairwise_guess else 0,
            key=state.key(Datasets.MAP, "kind"),
            horizontal=True,
        )
    st.markdown("**Labels already in the file** (optional)")
    human, judge = _label_columns(
        columns, guess, state.key(Datasets.MAP, "human"), state.key(Datasets.MAP, "judge")
    )
    with st.expander("Labels in long form (one row per label)", expanded=guess.is_long):
        c1, c2 = st.columns(2)
        with c1:
            annotator = _column_select(
                "Annotator column", columns, guess.annotator, state.key(Datasets.MAP, "annotator")
            )
        with c2:
            label = _column_select(
                "Label column", columns, guess.label, state.key(Datasets.MAP, "label")
            )
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
    return mapping, "pairwise" if kind == "pairwise" else "pointwise"


def _label_targets(loaded: LoadedFile, criteria: list[CriterionRecord]) -> Targets:
    """Where each label set of the file goes: a criterion, or not imported; none until chosen."""
    targets: dict[str, CriterionRecord | None] = {}
    for label_set in loaded.label_sets:
        fitting = {c.id: c for c in criteria if c.kind == label_set.kind}
        names = {SKIP: "Do not import these labels", **{i: c.name for i, c in fitting.items()}}
        same = [c.id for c in fitting.values() if c.name == label_set.metric]
        who = ", ".join(label_set.annotators) or "no annotators"
        judges = ", ".join(label_set.judge_names) or "no judges"
        chosen = st.selectbox(
            f"Labels **{label_set.metric}** ({who}; {judges}; "
            f"{', '.join(label_set.scale.display_labels)}) go to criterion",
            list(names),
            index=list(names).index(same[0]) if same else None,
            placeholder="Choose a criterion (add one under Criteria)",
            format_func=names.__getitem__,
            key=state.key(Datasets.TARGET, label_set.metric),
        )
        if chosen is not None:
            targets[label_set.metric] = fitting.get(chosen)
    return targets


def _preview(loaded: LoadedFile) -> None:
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Items", len(loaded.items))
    c2.metric("Kind", loaded.kind)
    c3.metric("Layout", loaded.layout)
    c4.metric("Label sets", len(loaded.label_sets))
    for note in loaded.notes:
        st.caption(note)
    st.dataframe(
        loaded.items.head(20), key=Datasets.UPLOAD_PREVIEW, width="stretch", hide_index=True
    )


def upload_section(store: Store, project: ProjectRecord) -> None:
    round_ = int(st.session_state.get(Datasets.UPLOAD_ROUND, 0))
    uploaded = _uploaded(
        "A dataset file: CSV, TSV, JSONL, JSON or Parquet",
        state.key(Datasets.UPLOAD, round_),
        "Each row is one item. Choose which columns hold the prompt, the response and the rest; "
        "human and judge labels already in the file can be imported with it.",
        Datasets.UPLOAD_BAD_ROWS,
        help="Vertex, Azure and RAGAS column names are recognised; any other table is mapped below.",
    )
    if uploaded is None:
        return
    name, data, frame = uploaded
    _reset_form_for(_token(name, data))
    mapping, kind = mapping_form(frame)
    try:
        loaded = cache.load_upload(name, data, mapping)
    except EvalcoreError as exc:
        show_data_error(exc, name, data, frame, key=Datasets.UPLOAD_BAD_ROWS)
        return
    st.markdown("**Preview**")
    _preview(loaded)
    targets = _label_targets(loaded, store.list_criteria(project.id))
    try:
        chosen = tuple(sorted((m, c) for m, c in targets.items() if c is not None))
        checked = cache.load_upload(name, data, mapping, chosen) if chosen else loaded
        plan = plan_upload(checked, kind=kind, targets=targets)
    except EvalcoreError as exc:
        show_data_error(exc, name, data, frame, key=Datasets.UPLOAD_BAD_ROWS)
        return
    dataset_name = st.text_input(
        "Save as dataset", value=PurePath(name).stem, key=Datasets.NAME
    ).strip()
    existing = store.list_datasets(project.id, name=dataset_name) if dataset_name else []
    if existing:
        st.caption(
            f"A dataset named {md_escape(repr(dataset_name))} exists (version {existing[0].version}); "
            "this upload "
            f"becomes version {existing[0].version + 1}. Earlier versions stay as they are."
        )
    labels_note = ", ".join(plan.describe())
    if labels_note:
        st.caption(f"Saved with it: {md_escape(labels_note)}.")
    if plan.left_out:
        st.caption(f"Not imported, as you chose: the labels {md_escape(', '.join(plan.left_out))}.")
    if st.button("Save dataset", key=Datasets.SAVE, type="primary", disabled=not dataset_name):
        try:
            dataset = save_upload(store, project.id, dataset_name, plan)
        except EvalcoreError as exc:
            show_data_error(exc, name, data, frame, key=Datasets.SAVE_BAD_ROWS)
            return
        _notice(
            "success",
            f"Saved {dataset.name!r} version {dataset.version} with "
            f"{plural(dataset.n_items, 'item')}" + (f" and {labels_note}." if labels_note else "."),
        )
        st.session_state[Datasets.UPLOAD_ROUND] = round_ + 1
        st.rerun()


# --- Criteria -------------------------------------------------------------------------------------


def custom_scale(text: str, ordered: bool) -> Scale:
    """A scale from comma-separated labels, in the order given.

    >>> custom_scale("bad, ok, good", True).display_labels
    ['bad', 'ok', 'good']
    """
    labels = [part.strip() for part in text.split(",") if part.strip()]
    try:
        return Scale(tuple(labels), "ordinal" if ordered else "nominal", text.strip())
    except ValueError as exc:
        raise DataError(f"Custom labels: {exc}.") from exc


def criteria_section(store: Store, project: ProjectRecord, *, editable: bool) -> None:
    criteria = store.list_criteria(project.id)
    if criteria:
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "name": c.name,
                        "kind": c.kind,
                        "labels": ", ".join(c.scale.display_labels),
                        "rubric": c.rubric,
                    }
                    for c in criteria
                ]
            ),
            key=Datasets.CRITERIA,
            width="stretch",
            hide_index=True,
        )
    else:
        st.info("There are no criteria yet.")
    if not editable:
        return
    st.subheader("Add a criterion")
    c1, c2 = st.columns(2)
    name = c1.text_input("Name", key=Datasets.CRIT_NAME, placeholder="e.g. helpfulness")
    choice = c2.selectbox("Scale", [*BUILTINS, CUSTOM], key=Datasets.CRIT_SCALE)
    builtin = BUILTINS.get(choice)
    if builtin is None:
        c3, c4 = st.columns([3, 1])
        labels_text = c3.text_input(
            "Labels, in order, separated by commas",
            key=Datasets.CRIT_LABELS,
            placeholder="bad, ok, good",
        )
        ordered = c4.checkbox("Ordered", value=True, key=Datasets.CRIT_ORDERED)
    else:
        st.caption(f"Labels: {', '.join(builtin.scale.display_labels)} · {builtin.kind}")
    rubric = st.text_area(
        "Rubric (annotators see it beside every item; Markdown)",
        value=builtin.rubric if builtin else "",
        key=state.key(Datasets.CRIT_RUBRIC, choice),
        height=140,
    )
    if st.button("Add criterion", key=Datasets.CRIT_ADD, type="primary"):
        try:
            if builtin is None:
                scale, kind = custom_scale(labels_text, ordered), "pointwise"
            else:
                scale, kind = builtin.scale, builtin.kind
            created = store.create_criterion(
                project.id,
                name,
                kind=kind,  # type: ignore[arg-type]
                scale=scale,
                rubric=rubric,
            )
        except EvalcoreError as exc:
            show_error(exc)
            return
        _notice("success", f"Added criterion {created.name!r} ({', '.join(scale.display_labels)}).")
        st.rerun()


# --- Labels ---------------------------------------------------------------------------------------


def labels_section(store: Store, project: ProjectRecord) -> None:
    st.caption(
        "Import labels gathered elsewhere into a saved dataset: human labels count like labels "
        "given here; judge labels become imported judge runs."
    )
    chosen = _dataset_and_criterion(
        store, project, Datasets.LAB_DATASET, Datasets.LAB_CRITERION, "Upload a dataset first."
    )
    if chosen is None:
        return
    dataset, criterion = chosen
    uploaded = _uploaded(
        "A labels file",
        Datasets.LAB_FILE,
        "Either one column per annotator (and per judge) beside an item id column, or one row "
        "per label with item id, annotator and label columns.",
        Datasets.LAB_BAD_ROWS,
    )
    if uploaded is None:
        return
    name, data, frame = uploaded
    columns = [str(c) for c in frame.columns]
    guess = suggest_mapping(frame)
    layout = st.radio(
        "Layout",
        ["One column per annotator", "One row per label"],
        index=1 if guess.is_long else 0,
        key=Datasets.LAB_LAYOUT,
        horizontal=True,
    )
    item_id = _column_select("Item id column", columns, guess.item_id, Datasets.LAB_ITEM)
    if layout == "One row per label":
        c1, c2 = st.columns(2)
        with c1:
            annotator = _column_select(
                "Annotator column", columns, guess.annotator, Datasets.LAB_ANNOTATOR
            )
        with c2:
            label = _column_select("Label column", columns, guess.label, Datasets.LAB_LABEL)
        if annotator is None or label is None:
            st.info("Choose the annotator and label columns.")
            return
        mapping = ColumnMapping(
            item_id=item_id, annotator=annotator, label=label, metric=criterion.name
        )
    else:
        human, judge = _label_columns(columns, guess, Datasets.LAB_HUMAN, Datasets.LAB_JUDGE)
        if not human and not judge:
            st.info("Choose at least one label column.")
            return
        mapping = ColumnMapping(
            item_id=item_id,
            human=tuple(human),
            judge=tuple(judge),
            metric=criterion.name,
            kind="pairwise" if criterion.kind == "pairwise" else None,
        )
    try:
        loaded = cache.load_upload(name, data, mapping, ((criterion.name, criterion),))
        plan = plan_label_import(store, dataset, criterion, loaded)
    except EvalcoreError as exc:
        show_data_error(exc, name, data, frame, key=Datasets.LAB_BAD_ROWS)
        return
    st.dataframe(plan.label_counts(), key=Datasets.LAB_COUNTS)
    if not plan.describe():
        st.info(f"{md_escape(name)} has no labels in the chosen columns.")
        return
    if st.button("Import labels", key=Datasets.LAB_IMPORT, type="primary"):
        try:
            written = import_plan(store, dataset, plan)
        except EvalcoreError as exc:
            show_error(exc, title="The import stopped")
            return
        _notice("success", f"Imported {', '.join(written)} into {dataset.name}.")
        st.rerun()


# --- Agreement ------------------------------------------------------------------------------------


def agreement_section(store: Store, project: ProjectRecord) -> None:
    chosen = _dataset_and_criterion(
        store, project, Datasets.AGREE_DATASET, Datasets.AGREE_CRITERION, "There is no dataset yet."
    )
    if chosen is None:
        return
    dataset, criterion = chosen
    counts = store.annotator_label_counts(dataset.id, criterion.id)
    if counts.empty:
        st.info("Nobody has labelled this dataset on this criterion yet.")
        return
    matrix = store.annotation_matrix(dataset.id, criterion.id)
    ceiling = cache.ceiling(matrix, criterion.scale) if matrix.shape[1] >= 2 else None
    if ceiling is None or ceiling.krippendorff_alpha is None:
        st.info("Agreement needs at least two annotators who labelled the same items.")
    else:
        low, high = ceiling.alpha_ci or (math.nan, math.nan)
        m1, m2, m3, m4 = st.columns(4)
        m1.metric(
            "Krippendorff's alpha",
            fmt(ceiling.krippendorff_alpha),
            help=f"{ceiling.level} distance; 1 is perfect agreement, 0 is chance.",
        )
        m1.caption(f"95% interval {fmt(low)} to {fmt(high)}")
        m2.metric(
            "Mean pairwise kappa",
            fmt(ceiling.mean_pairwise_kappa),
            help="Cohen's kappa of every pair of annotators, averaged"
            + (f"; {ceiling.kappa_weights} weights." if ceiling.kappa_weights else "."),
        )
        m3.metric("Items rated by two or more", ceiling.n_items)
        m4.metric("Annotators", ceiling.n_annotators)
        st.plotly_chart(
            kappa_heatmap(ceiling.pairwise_kappa, weights=ceiling.kappa_weights),
            key=Datasets.AGREE_HEAT,
            config={"displaylogo": False},
        )
    st.markdown("**Labels per annotator** (latest answers)")
    st.dataframe(counts, key=Datasets.AGREE_COUNTS, width="stretch")


# --- Export ---------------------------------------------------------------------------------------

EXPORT_FORMATS = {"CSV": ("csv", "text/csv"), "JSONL": ("jsonl", "application/jsonl")}
EXPORT_FORMATS["Parquet"] = ("parquet", "application/vnd.apache.parquet")


def export_section(store: Store, project: ProjectRecord) -> None:
    datasets = store.list_datasets(project.id)
    by_id = {d.id: d for d in datasets}
    criteria = {c.id: c for c in store.list_criteria(project.id)}
    c1, c2, c3 = st.columns([2, 2, 1])
    dataset_id = c1.selectbox(
        "Dataset",
        [0, *by_id],
        format_func=lambda i: "All datasets" if i == 0 else _dataset_label(by_id[i]),
        key=Datasets.EXPORT_DATASET,
    )
    criterion_id = c2.selectbox(
        "Criterion",
        [0, *criteria],
        format_func=lambda i: "All criteria" if i == 0 else criteria[i].name,
        key=Datasets.EXPORT_CRITERION,
    )
    choice = c3.segmented_control(
        "Format", list(EXPORT_FORMATS), default="CSV", key=Datasets.EXPORT_FORMAT, required=True
    )
    frame = store.export_annotations(
        project_id=project.id,
        dataset_id=dataset_id or None,
        criterion_id=criterion_id or None,
    )
    if frame.empty:
        st.info("There are no annotations to export for this choice.")
        return
    st.caption(
        f"{plural(len(frame), 'revision')} of {plural(int(frame['latest'].sum()), 'annotation')}; "
        "`latest` marks the "
        "revision that counts."
    )
    st.dataframe(frame.head(50), key=Datasets.EXPORT_PREVIEW, width="stretch", hide_index=True)
    extension, mime = EXPORT_FORMATS[choice or "CSV"]
    stem = project.name if not dataset_id else by_id[dataset_id].name
    file_name = f"{stem}-annotations.{extension}".replace(" ", "_")
    data: Callable[[], bytes] = lambda: export_bytes(frame, extension)  # noqa: E731
    st.download_button(
        f"Download {choice}",
        data=data,
        file_name=file_name,
        mime=mime,
        key=Datasets.EXPORT_DOWNLOAD,
        type="primary",
        icon=":material/download:",
        on_click=record_export,
        args=(file_name, project.id),
    )


# --- Project --------------------------------------------------------------------------------------


def _create_project() -> None:
    """Callback: create the project and make it the current one."""
    name = str(st.session_state.get(Datasets.NEW_PROJECT) or "")
    description = str(st.session_state.get(Datasets.NEW_PROJECT_DESC) or "")
    try:
        created = get_store().create_project(name, description=description)
    except EvalcoreError as exc:
        _notice("error", str(exc))
        return
    st.session_state[state.App.PROJECT_ID] = created.id
    if state.App.PROJECT_PICKER in st.session_state:
        st.session_state[state.App.PROJECT_PICKER] = created.id
    st.session_state[Datasets.NEW_PROJECT] = ""
    st.session_state[Datasets.NEW_PROJECT_DESC] = ""
    _notice("success", f"Created project {created.name!r}. It is now the current project.")


def new_project_form() -> None:
    st.text_input("Project name", key=Datasets.NEW_PROJECT)
    st.text_area("Description (optional)", key=Datasets.NEW_PROJECT_DESC, height=80)
    st.button("Create project", key=Datasets.CREATE_PROJECT, on_click=_create_project)


def project_section(store: Store, project: ProjectRecord) -> None:
    st.subheader("Annotators per item")
    per_item = st.number_input(
        "How many annotators should label each item",
        min_value=1,
        max_value=50,
        value=project.annotators_per_item,
        step=1,
        key=Datasets.PER_ITEM,
        help="A new queue gets the items that still have fewer annotators than this. Queues "
        "already given out keep their items.",
    )
    if st.button("Save setting", key=Datasets.PER_ITEM_SAVE, type="primary"):
        try:
            store.update_project_settings(project.id, {"annotators_per_item": int(per_item)})
        except EvalcoreError as exc:
            show_error(exc)
            return
        _notice("success", f"Each item is now meant for {int(per_item)} annotator(s).")
        st.rerun()
    st.subheader("New project")
    new_project_form()
