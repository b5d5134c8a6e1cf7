"""The Datasets page's sections: datasets, upload, criteria, label import, agreement, export, project.

Each section reads its widgets, calls evalcore and renders. Uploads are checked in full with
:mod:`evalcore.data` (columns, ids, and labels against the chosen criterion's scale) before anything is
written, so that a bad file saves nothing; the store then writes the dataset in one transaction and
each label import in one more.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from evalcore.data import (
    ColumnMapping,
    LabelSet,
    LoadedFile,
    labels_long,
    load_file,
    read_table,
    suggest_mapping,
    write_table,
)
from evalcore.errors import DataError, EvalcoreError
from evalcore.labels import LIKERT_5, PAIRWISE, PASS_FAIL, SEVERITY, Scale
from evalcore.report import HumanCeiling, human_ceiling
from evalcore.store import CriterionRecord, DatasetKind, DatasetRecord, ProjectRecord, Store
from ui import state
from ui.render import fmt, show_error
from ui.resources import database_url, get_store

UPLOAD_TYPES = ["csv", "tsv", "jsonl", "json", "parquet"]
NONE = "(none)"

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

#: Widget keys of the upload mapping form (reset when another file is uploaded).
MAP_KEYS = (
    *(f"ds_map_{f}" for f in ITEM_FIELD_LABELS),
    "ds_map_kind",
    "ds_map_human",
    "ds_map_judge",
    "ds_map_annotator",
    "ds_map_label",
    "ds_name",
)


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
    st.session_state[state.DS_NOTICE] = (level, text)


def show_notice() -> None:
    """The message a save left for the next run (shown once)."""
    notice = st.session_state.pop(state.DS_NOTICE, None)
    if notice is not None:
        level, text = notice
        {"success": st.success, "warning": st.warning}.get(level, st.error)(text)


# --- cached reads ---------------------------------------------------------------------------------


@st.cache_data(max_entries=16, show_spinner=False)
def _read(name: str, data: bytes) -> pd.DataFrame:
    return read_table(data, name=name)


@st.cache_data(max_entries=32, show_spinner="Reading the file…")
def _load(
    name: str, data: bytes, mapping: ColumnMapping | None, scales: tuple[tuple[str, str], ...]
) -> LoadedFile:
    declared = {metric: _scale_from_json(text) for metric, text in scales} or None
    return load_file(data, name=name, mapping=mapping, scales=declared)


def _scale_json(scale: Scale) -> str:
    import json

    return json.dumps(scale.to_dict(), sort_keys=True)


def _scale_from_json(text: str) -> Scale:
    import json

    return Scale.from_dict(json.loads(text))


@st.cache_data(max_entries=8, show_spinner="Loading the items…")
def _items(url: str, dataset_id: int) -> pd.DataFrame:
    return get_store().items_frame(dataset_id)


def dataset_items(dataset_id: int) -> pd.DataFrame:
    """A dataset's items (immutable, so cached by id per database)."""
    return _items(database_url(), dataset_id)


@st.cache_data(max_entries=32, show_spinner="Computing agreement…")
def _ceiling(matrix: pd.DataFrame, scale_json: str) -> HumanCeiling | None:
    return human_ceiling(matrix, _scale_from_json(scale_json), n_boot=1000, seed=0)


# --- small helpers --------------------------------------------------------------------------------


def _dataset_label(d: DatasetRecord) -> str:
    return f"{d.name} · v{d.version} ({d.kind}, {d.n_items} items)"


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


def _is_line_based(name: str) -> bool:
    return PurePath(name).suffix.lower() in (".jsonl", ".ndjson")


def offending_rows(exc: EvalcoreError, name: str, data: bytes, frame: pd.DataFrame | None) -> Any:
    """The rows an error names, as they are in the file (at most 20); None when it names none.

    CSV, TSV, JSON and Parquet errors count data rows from 1; JSONL errors name lines of the file.
    """
    rows = [r for r in exc.rows if r >= 1][:20]
    if not rows:
        return None
    if _is_line_based(name):
        lines = data.decode("utf-8", errors="replace").split("\n")
        shown = [(r, lines[r - 1][:500]) for r in rows if r <= len(lines)]
        return pd.DataFrame(shown, columns=["line", "text"]).set_index("line")
    if frame is None:
        return None
    inside = [r for r in rows if r <= len(frame)]
    if not inside:
        return None
    out = frame.iloc[[r - 1 for r in inside]].copy()
    out.index = pd.Index(inside, name="row")
    return out


def show_data_error(
    exc: EvalcoreError, name: str, data: bytes, frame: pd.DataFrame | None, *, key: str
) -> None:
    """The error in full, the rows it names as they are in the file, and that nothing was saved."""
    show_error(exc, title=name)
    rows = offending_rows(exc, name, data, frame)
    if rows is not None:
        st.caption("The rows named above, as they are in the file:")
        st.dataframe(rows.astype(str), key=key, width="stretch")
    st.caption("Nothing was saved.")


def imported_run_name(judge: str) -> str:
    """The name of the judge run a judge label column becomes (as the demo's legacy judge)."""
    return f"imported: {judge}"


def export_bytes(frame: pd.DataFrame, fmt_name: str) -> bytes:
    """An export table as CSV, JSONL or Parquet bytes (read back by evalcore.data.read_table)."""
    buffer = io.BytesIO()
    write_table(frame, buffer, fmt_name)
    return buffer.getvalue()


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
    st.dataframe(table, key="ds_list", width="stretch", hide_index=True)
    dataset = _dataset_picker(datasets, key="ds_preview_pick", label="Look at the items of")
    items = dataset_items(dataset.id)
    st.caption(f"The first {min(len(items), 100)} of {len(items)} items.")
    st.dataframe(items.head(100), key="ds_preview", width="stretch", hide_index=True)


# --- Upload ---------------------------------------------------------------------------------------


def _token(name: str, data: bytes) -> str:
    return hashlib.sha256(name.encode() + b"\0" + data).hexdigest()[:16]


def _reset_form_for(token: str) -> None:
    """A different file starts from a fresh mapping form, pre-filled by suggest_mapping."""
    if st.session_state.get("ds_upload_token") != token:
        for key in MAP_KEYS:
            st.session_state.pop(key, None)
        for key in [k for k in st.session_state if str(k).startswith("ds_target_")]:
            st.session_state.pop(key, None)
        st.session_state["ds_upload_token"] = token


def _column_select(label: str, columns: list[str], suggested: str | None, key: str) -> str | None:
    options = [NONE, *columns]
    index = options.index(suggested) if suggested in options else 0
    chosen = st.selectbox(label, options, index=index, key=key)
    return None if chosen == NONE else chosen


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
                    ITEM_FIELD_LABELS[name], columns, getattr(guess, name), f"ds_map_{name}"
                )
    with cols[3]:
        pairwise_guess = bool(chosen["response_a"] and chosen["response_b"])
        kind = st.radio(
            "Kind",
            ["pointwise", "pairwise"],
            index=1 if pairwise_guess else 0,
            key="ds_map_kind",
            horizontal=True,
        )
    st.markdown("**Labels already in the file** (optional)")
    left, right = st.columns(2)
    human = left.multiselect(
        "Human label columns (one per annotator)",
        columns,
        default=[c for c in guess.human if c in columns],
        key="ds_map_human",
    )
    judge = right.multiselect(
        "Judge label columns (each becomes an imported judge run)",
        columns,
        default=[c for c in guess.judge if c in columns],
        key="ds_map_judge",
    )
    with st.expander("Labels in long form (one row per label)", expanded=guess.is_long):
        c1, c2 = st.columns(2)
        with c1:
            annotator = _column_select(
                "Annotator column", columns, guess.annotator, "ds_map_annotator"
            )
        with c2:
            label = _column_select("Label column", columns, guess.label, "ds_map_label")
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


def _label_targets(
    loaded: LoadedFile, criteria: list[CriterionRecord]
) -> dict[str, CriterionRecord]:
    """For each label set in the file, the criterion its labels go to (or none)."""
    targets: dict[str, CriterionRecord] = {}
    for label_set in loaded.label_sets:
        fitting = {c.id: c for c in criteria if c.kind == label_set.kind}
        names = {0: "(do not import)", **{i: c.name for i, c in fitting.items()}}
        options = list(names)
        same = [c.id for c in fitting.values() if c.name == label_set.metric]
        who = ", ".join(label_set.annotators) or "no annotators"
        judges = ", ".join(label_set.judge_names) or "no judges"
        chosen = st.selectbox(
            f"Labels **{label_set.metric}** ({who}; {judges}; "
            f"{', '.join(label_set.scale.display_labels)}) go to criterion",
            options,
            index=options.index(same[0]) if same else 0,
            format_func=names.__getitem__,
            key=f"ds_target_{label_set.metric}",
        )
        if chosen:
            targets[label_set.metric] = fitting[chosen]
    return targets


def _preview(loaded: LoadedFile) -> None:
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Items", len(loaded.items))
    c2.metric("Kind", loaded.kind)
    c3.metric("Layout", loaded.layout)
    c4.metric("Label sets", len(loaded.label_sets))
    for note in loaded.notes:
        st.caption(note)
    st.dataframe(loaded.items.head(20), key="ds_upload_preview", width="stretch", hide_index=True)


@dataclass(frozen=True)
class UploadPlan:
    """What a checked upload will write: the items, then the labels of each chosen criterion."""

    items: pd.DataFrame
    human: list[tuple[CriterionRecord, pd.DataFrame]]
    judges: list[tuple[CriterionRecord, str, pd.Series, pd.Series | None]]


def plan_labels(
    label_set: LabelSet, criterion: CriterionRecord
) -> tuple[pd.DataFrame, list[tuple[str, pd.Series, pd.Series | None]]]:
    """The human labels (long form) and the judge columns of a label set, checked for the store."""
    human = labels_long(label_set)
    judges = [
        (str(name), label_set.judges[name], label_set.explanations)
        for name in label_set.judges.columns
    ]
    return human, judges


def upload_plan(loaded: LoadedFile, targets: dict[str, CriterionRecord], kind: str) -> UploadPlan:
    """Check a loaded upload against the store's rules before anything is written."""
    if kind == "pairwise":
        missing = [c for c in ("response_a", "response_b") if c not in loaded.items.columns]
        if missing:
            raise DataError(
                f"{loaded.source}: a pairwise dataset needs the columns response_a and response_b; "
                f"choose the {' and '.join(missing)} column above.",
                source=loaded.source,
            )
    human: list[tuple[CriterionRecord, pd.DataFrame]] = []
    judges: list[tuple[CriterionRecord, str, pd.Series, pd.Series | None]] = []
    for metric, criterion in targets.items():
        if criterion.kind != kind:
            raise DataError(
                f"Criterion {criterion.name!r} is {criterion.kind}, but the dataset is {kind}."
            )
        long, judge_columns = plan_labels(loaded.label_set(metric), criterion)
        if len(long):
            human.append((criterion, long))
        judges.extend((criterion, name, values, why) for name, values, why in judge_columns)
    return UploadPlan(loaded.items, human, judges)


def save_upload(
    store: Store,
    project: ProjectRecord,
    name: str,
    plan: UploadPlan,
    *,
    kind: DatasetKind,
    source: str,
    layout: str,
) -> DatasetRecord:
    """Write a checked upload: the dataset (one transaction), then each label import (one each).

    Everything the store could refuse was checked by :func:`upload_plan` and by loading the file with
    the criteria's scales, so what is left to fail is the database itself; then the message says
    exactly what was saved.
    """
    dataset = store.save_dataset(
        project.id, name, plan.items, kind=kind, source_filename=source, layout=layout
    )
    done: list[str] = []
    try:
        for criterion, labels in plan.human:
            store.import_labels(dataset.id, criterion.id, labels)
            done.append(f"human labels for {criterion.name}")
        for criterion, judge, values, reasons in plan.judges:
            store.import_judge_labels(
                dataset.id, criterion.id, imported_run_name(judge), values, reasons
            )
            done.append(f"judge {judge} for {criterion.name}")
    except EvalcoreError as exc:
        saved = "; ".join(done) or "no labels"
        raise EvalcoreError(
            f"The dataset {name!r} was saved as version {dataset.version}, with {saved}, but the "
            f"next label import failed: {exc}. Import the remaining labels under Labels."
        ) from exc
    return dataset


def upload_section(store: Store, project: ProjectRecord) -> None:
    round_ = int(st.session_state.get("ds_upload_round", 0))
    upload = st.file_uploader(
        "A dataset file: CSV, TSV, JSONL, JSON or Parquet",
        type=UPLOAD_TYPES,
        key=f"ds_upload_{round_}",
        help="Vertex, Azure and RAGAS column names are recognised; any other table is mapped below.",
    )
    if upload is None:
        st.caption(
            "Each row is one item. Choose which columns hold the prompt, the response and the rest; "
            "human and judge labels already in the file can be imported with it."
        )
        return
    name, data = upload.name, upload.getvalue()
    _reset_form_for(_token(name, data))
    try:
        frame = _read(name, data)
    except EvalcoreError as exc:
        show_data_error(exc, name, data, None, key="ds_upload_bad_rows")
        return
    mapping, kind = mapping_form(frame)
    try:
        loaded = _load(name, data, mapping, ())
    except EvalcoreError as exc:
        show_data_error(exc, name, data, frame, key="ds_upload_bad_rows")
        return
    st.markdown("**Preview**")
    _preview(loaded)
    criteria = store.list_criteria(project.id)
    targets = _label_targets(loaded, criteria) if loaded.label_sets else {}
    scales = tuple(sorted((m, _scale_json(c.scale)) for m, c in targets.items()))
    try:
        checked = _load(name, data, mapping, scales) if scales else loaded
        plan = upload_plan(checked, targets, kind)
    except EvalcoreError as exc:
        show_data_error(exc, name, data, frame, key="ds_upload_bad_rows")
        return
    default_name = PurePath(name).stem
    dataset_name = st.text_input("Save as dataset", value=default_name, key="ds_name").strip()
    existing = store.list_datasets(project.id, name=dataset_name) if dataset_name else []
    if existing:
        st.caption(
            f"A dataset named {dataset_name!r} exists (version {existing[0].version}); this upload "
            f"becomes version {existing[0].version + 1}. Earlier versions stay as they are."
        )
    labels_note = ", ".join(
        [f"{len(h)} human labels for {c.name}" for c, h in plan.human]
        + [f"judge {j} for {c.name}" for c, j, _v, _r in plan.judges]
    )
    if labels_note:
        st.caption(f"Saved with it: {labels_note}.")
    if st.button("Save dataset", key="ds_save", type="primary", disabled=not dataset_name):
        try:
            dataset = save_upload(
                store,
                project,
                dataset_name,
                plan,
                kind=kind,
                source=name,
                layout=loaded.layout,
            )
        except EvalcoreError as exc:
            show_data_error(exc, name, data, frame, key="ds_save_bad_rows")
            return
        _notice(
            "success",
            f"Saved {dataset.name!r} version {dataset.version} with {dataset.n_items} items"
            + (f" and {labels_note}." if labels_note else "."),
        )
        st.session_state["ds_upload_round"] = round_ + 1
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
            key="ds_criteria",
            width="stretch",
            hide_index=True,
        )
    else:
        st.info("There are no criteria yet.")
    if not editable:
        return
    st.subheader("Add a criterion")
    c1, c2 = st.columns(2)
    name = c1.text_input("Name", key="ds_crit_name", placeholder="e.g. helpfulness")
    choice = c2.selectbox("Scale", [*BUILTINS, CUSTOM], key="ds_crit_scale")
    builtin = BUILTINS.get(choice)
    if builtin is None:
        c3, c4 = st.columns([3, 1])
        labels_text = c3.text_input(
            "Labels, in order, separated by commas",
            key="ds_crit_labels",
            placeholder="bad, ok, good",
        )
        ordered = c4.checkbox("Ordered", value=True, key="ds_crit_ordered")
    else:
        st.caption(f"Labels: {', '.join(builtin.scale.display_labels)} · {builtin.kind}")
    rubric = st.text_area(
        "Rubric (annotators see it beside every item; Markdown)",
        value=builtin.rubric if builtin else "",
        key=f"ds_crit_rubric_{choice}",
        height=140,
    )
    if st.button("Add criterion", key="ds_crit_add", type="primary"):
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
    datasets = store.list_datasets(project.id)
    if not datasets:
        st.info("Upload a dataset first.")
        return
    st.caption(
        "Import labels gathered elsewhere into a saved dataset: human labels count like labels "
        "given here; judge labels become imported judge runs."
    )
    c1, c2 = st.columns(2)
    with c1:
        dataset = _dataset_picker(datasets, key="ds_lab_dataset")
    with c2:
        criterion = _criterion_picker(
            store.list_criteria(project.id), dataset.kind, key="ds_lab_criterion"
        )
    if criterion is None:
        return
    upload = st.file_uploader("A labels file", type=UPLOAD_TYPES, key="ds_lab_file")
    if upload is None:
        st.caption(
            "Either one column per annotator (and per judge) beside an item id column, or one row "
            "per label with item id, annotator and label columns."
        )
        return
    name, data = upload.name, upload.getvalue()
    try:
        frame = _read(name, data)
    except EvalcoreError as exc:
        show_data_error(exc, name, data, None, key="ds_lab_bad_rows")
        return
    columns = [str(c) for c in frame.columns]
    guess = suggest_mapping(frame)
    layout = st.radio(
        "Layout",
        ["One column per annotator", "One row per label"],
        index=1 if guess.is_long else 0,
        key="ds_lab_layout",
        horizontal=True,
    )
    item_id = _column_select("Item id column", columns, guess.item_id, "ds_lab_item")
    if layout == "One row per label":
        c1, c2 = st.columns(2)
        with c1:
            annotator = _column_select("Annotator column", columns, guess.annotator, "ds_lab_ann")
        with c2:
            label = _column_select("Label column", columns, guess.label, "ds_lab_label")
        if annotator is None or label is None:
            st.info("Choose the annotator and label columns.")
            return
        mapping = ColumnMapping(
            item_id=item_id, annotator=annotator, label=label, metric=criterion.name
        )
    else:
        c1, c2 = st.columns(2)
        human = c1.multiselect(
            "Human label columns (one per annotator)",
            columns,
            default=[c for c in guess.human if c in columns],
            key="ds_lab_human",
        )
        judge = c2.multiselect(
            "Judge label columns",
            columns,
            default=[c for c in guess.judge if c in columns],
            key="ds_lab_judge",
        )
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
        loaded = _load(name, data, mapping, ((criterion.name, _scale_json(criterion.scale)),))
        label_set = loaded.label_set(criterion.name)
        known = set(dataset_items(dataset.id)["item_id"].astype(str))
        unknown = [n for n, i in enumerate(label_set.human.index, start=1) if str(i) not in known]
        if unknown:
            first = label_set.human.index[unknown[0] - 1]
            raise DataError(
                f"{name}: dataset {dataset.name!r} has no item {first!r} "
                f"({len(unknown)} of the file's items are not in it).",
                source=name,
                item_id=str(first),
            )
        human_long, judges = plan_labels(label_set, criterion)
    except (EvalcoreError, KeyError) as exc:
        error = exc if isinstance(exc, EvalcoreError) else EvalcoreError(str(exc))
        show_data_error(error, name, data, frame, key="ds_lab_bad_rows")
        return
    counts = human_long.groupby("annotator").size().rename("labels").to_frame()
    for judge_name, values, _why in judges:
        counts.loc[f"{judge_name} (judge)"] = int(values.notna().sum())
    st.dataframe(counts, key="ds_lab_counts")
    if st.button("Import labels", key="ds_lab_import", type="primary"):
        written: list[str] = []
        try:
            if len(human_long):
                summary = store.import_labels(dataset.id, criterion.id, human_long)
                written.append(f"{summary.imported} human labels")
            for judge_name, values, reasons in judges:
                run_name = imported_run_name(judge_name)
                store.import_judge_labels(dataset.id, criterion.id, run_name, values, reasons)
                written.append(f"judge run {run_name!r}")
        except EvalcoreError as exc:
            done = f" ({', '.join(written)} were imported)" if written else ""
            show_error(exc, title=f"Import stopped{done}")
            return
        _notice("success", f"Imported {', '.join(written)} into {dataset.name} · {criterion.name}.")
        st.rerun()


# --- Agreement ------------------------------------------------------------------------------------


def kappa_heatmap(kappas: pd.DataFrame, *, weights: str | None) -> go.Figure:
    """Pairwise Cohen's kappa between annotators as a small annotated heatmap."""
    # plotly reads a little HTML in labels; annotator names are shown as they are written
    names = [
        str(c).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        for c in kappas.columns
    ]
    values = kappas.to_numpy(dtype=float)
    text = [["–" if math.isnan(v) else f"{v:.2f}" for v in row] for row in values]
    fig = go.Figure(
        go.Heatmap(
            z=values,
            x=names,
            y=names,
            text=text,
            texttemplate="%{text}",
            zmin=-1,
            zmax=1,
            colorscale="RdBu",
            hovertemplate="%{y} vs %{x}: %{text}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"Cohen's kappa{f' ({weights})' if weights else ''}",
        height=120 + 40 * len(names),
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        yaxis={"autorange": "reversed"},
    )
    return fig


def agreement_section(store: Store, project: ProjectRecord) -> None:
    datasets = store.list_datasets(project.id)
    if not datasets:
        st.info("There is no dataset yet.")
        return
    c1, c2 = st.columns(2)
    with c1:
        dataset = _dataset_picker(datasets, key="ds_agree_dataset")
    with c2:
        criterion = _criterion_picker(
            store.list_criteria(project.id), dataset.kind, key="ds_agree_criterion"
        )
    if criterion is None:
        return
    counts = store.annotator_label_counts(dataset.id, criterion.id)
    if counts.empty:
        st.info("Nobody has labelled this dataset on this criterion yet.")
        return
    matrix = store.annotation_matrix(dataset.id, criterion.id)
    ceiling = _ceiling(matrix, _scale_json(criterion.scale)) if matrix.shape[1] >= 2 else None
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
            key="ds_agree_heat",
            config={"displaylogo": False},
        )
    st.markdown("**Labels per annotator** (latest answers)")
    st.dataframe(counts, key="ds_agree_counts", width="stretch")


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
        key="ds_export_dataset",
    )
    criterion_id = c2.selectbox(
        "Criterion",
        [0, *criteria],
        format_func=lambda i: "All criteria" if i == 0 else criteria[i].name,
        key="ds_export_criterion",
    )
    choice = c3.segmented_control(
        "Format", list(EXPORT_FORMATS), default="CSV", key="ds_export_format", required=True
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
        f"{len(frame)} revisions of {int(frame['latest'].sum())} annotations; `latest` marks the "
        "revision that counts."
    )
    st.dataframe(frame.head(50), key="ds_export_preview", width="stretch", hide_index=True)
    extension, mime = EXPORT_FORMATS[choice or "CSV"]
    stem = project.name if not dataset_id else by_id[dataset_id].name
    file_name = f"{stem}-annotations.{extension}".replace(" ", "_")
    data: Callable[[], bytes] = lambda: export_bytes(frame, extension)  # noqa: E731
    st.download_button(
        f"Download {choice}",
        data=data,
        file_name=file_name,
        mime=mime,
        key="ds_export_download",
        type="primary",
        icon=":material/download:",
    )


# --- Project --------------------------------------------------------------------------------------


def _create_project() -> None:
    """Callback: create the project and make it the current one."""
    name = str(st.session_state.get("ds_new_project") or "")
    description = str(st.session_state.get("ds_new_project_desc") or "")
    try:
        created = get_store().create_project(name, description=description)
    except EvalcoreError as exc:
        _notice("error", str(exc))
        return
    st.session_state[state.PROJECT_ID] = created.id
    if "project_picker" in st.session_state:
        st.session_state["project_picker"] = created.id
    st.session_state["ds_new_project"] = ""
    st.session_state["ds_new_project_desc"] = ""
    _notice("success", f"Created project {created.name!r}. It is now the current project.")


def new_project_form() -> None:
    st.text_input("Project name", key="ds_new_project")
    st.text_area("Description (optional)", key="ds_new_project_desc", height=80)
    st.button("Create project", key="ds_create_project", on_click=_create_project)


def project_section(store: Store, project: ProjectRecord) -> None:
    st.subheader("Annotators per item")
    per_item = st.number_input(
        "How many annotators should label each item",
        min_value=1,
        max_value=50,
        value=project.annotators_per_item,
        step=1,
        key="ds_per_item",
        help="A new queue gets the items that still have fewer annotators than this. Queues "
        "already given out keep their items.",
    )
    if st.button("Save setting", key="ds_per_item_save", type="primary"):
        try:
            store.update_project_settings(project.id, {"annotators_per_item": int(per_item)})
        except EvalcoreError as exc:
            show_error(exc)
            return
        _notice("success", f"Each item is now meant for {int(per_item)} annotator(s).")
        st.rerun()
    st.subheader("New project")
    new_project_form()
