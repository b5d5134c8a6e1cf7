"""Calibrate: judge runs against humans, side by side.

Two sources, one engine: the project's datasets and judge runs (from the store; the views live in
``ui/calibrate_view.py``), and a file upload (any layout evalcore.data reads) for a quick look that
saves nothing. Both render :class:`evalcore.report.Calibration` objects.
"""

from __future__ import annotations

import streamlit as st

from evalcore.data import ColumnMapping
from evalcore.errors import EvalcoreError, LayoutError
from evalcore.labels import Scale
from evalcore.report import (
    HUMAN_POLICIES,
    Calibration,
    combine,
    parse_scale,
    policy_name,
)
from evalcore.words import plural
from ui import cache, state
from ui.calibrate_view import alt_test_section, baselines_caption, project_mode
from ui.identity import require
from ui.render import heatmaps, md_escape, metric_table, show_error
from ui.resources import get_store, require_project
from ui.state import Calibrate as K

require("calibrate")


def _mapping_form(name: str, data: bytes) -> ColumnMapping | None:
    """For a plain table: let the user say which columns hold human and judge labels."""
    columns = list(cache.read_upload(name, data).columns)
    st.info(f"**{md_escape(name)}** is a plain table. Choose its label columns.")
    c1, c2, c3 = st.columns(3)
    human = c1.multiselect("Human label columns", columns, key=state.key(K.MAP_HUMAN, name))
    judge = c2.multiselect("Judge label columns", columns, key=state.key(K.MAP_JUDGE, name))
    item = c3.selectbox("Item id column", ["(row number)", *columns], key=state.key(K.MAP_ID, name))
    if not human or not judge:
        return None
    return ColumnMapping(
        item_id=None if item == "(row number)" else item,
        human=tuple(human),
        judge=tuple(judge),
        metric="label",
    )


def _file_calibrations(upload: object, policy: str, scale: Scale | None) -> list[Calibration]:
    """The calibrations of one uploaded file (a mapping form first for a plain table)."""
    name, data = upload.name, upload.getvalue()  # type: ignore[attr-defined]
    mapping = None
    try:
        cache.uploaded_file(name, data, None, scale)
    except LayoutError:
        mapping = _mapping_form(name, data)
        if mapping is None:
            return []
    return cache.file_calibrations(name, data, mapping, policy, scale)


def _show_metric(metric: str, results: list[tuple[str, Calibration]], titled: bool) -> None:
    """One metric of every file: the engine's table (files side by side), notes, matrices."""
    st.subheader(md_escape(metric))
    first = results[0][1]
    st.caption(
        f"{first.kind} scale · humans: {policy_name(first.policy_used)} · 95% bootstrap "
        "intervals · ★ best value"
    )
    tables = [(name, c.table()) for name, c in results]
    shown = combine(tables, kind=first.kind) if titled else tables[0][1]
    metric_table(shown, key=state.key(K.FILE_TABLE, metric))
    panels = []
    for name, calibration in results:
        for note in calibration.notes():
            shown = f"{name}: {note}" if titled else note  # a file's name, a column's name
            st.warning(md_escape(shown), icon=":material/warning:")
        c = calibration.ceiling
        if c is not None and c.krippendorff_alpha is not None:
            kappa = "–" if c.mean_pairwise_kappa is None else f"{c.mean_pairwise_kappa:.3f}"
            st.markdown(
                f"Human ceiling ({md_escape(name)}): Krippendorff's alpha {c.krippendorff_alpha:.3f}, mean "
                f"pairwise kappa {kappa} over {plural(c.n_items, 'item')}"
            )
        panels += [
            (f"{name} · {title}" if titled else title, report)
            for title, report in calibration.panels()
        ]
    st.caption(baselines_caption())
    if panels:
        if len({tuple(r.labels) for _, r in panels}) == 1:
            heatmaps(panels, key=state.key(K.FILE_HEAT, metric))
        else:
            for title, report in panels:
                heatmaps([(title, report)], key=state.key(K.FILE_HEAT, metric, title))
    for name, calibration in results:
        if calibration.data.human.shape[1] >= 3:
            st.markdown(
                f"**Can the judge replace an annotator?** {md_escape(name) if titled else ''}"
            )
            alt_test_section(calibration, state.key(K.FILE_ALT, metric, name))


def upload_mode() -> None:
    files = st.file_uploader(
        "Files with human and judge labels",
        type=["csv", "tsv", "jsonl", "json", "parquet"],
        accept_multiple_files=True,
        key=K.FILES,
        help=(
            "Vertex metrics tables ({metric}/human_rating + {metric}/score, or the pairwise "
            "columns), long-format labels, or any table whose label columns you choose. "
            "Two files show side by side."
        ),
    )
    if not files:
        st.info(
            "Upload a file to see balanced accuracy, weighted F1, accuracy and Cohen's kappa with "
            "95% intervals, and the confusion matrices, for every metric in it. Nothing is saved."
        )
        return
    c1, c2 = st.columns(2)
    policy = c1.selectbox(
        "Human label from several annotators",
        HUMAN_POLICIES,
        format_func=policy_name,
        key=K.FILE_POLICY,
        help="Used when a metric has several annotator columns.",
    )
    typed = c2.text_input(
        "Scale (optional)",
        key=K.FILE_SCALE,
        placeholder="e.g. 1,2,3,4,5 or pass,fail",
        help="The labels in order. Declared, they are the axis of the matrices and weighted "
        "kappas even where nobody used one; without it, the axis is the labels the file uses.",
    )
    by_metric: dict[str, list[tuple[str, Calibration]]] = {}
    try:
        scale = parse_scale(typed)
    except EvalcoreError as exc:
        show_error(exc)
        return
    for upload in files:
        try:
            for calibration in _file_calibrations(upload, policy, scale):
                by_metric.setdefault(calibration.data.criterion.name, []).append(
                    (upload.name, calibration)
                )
        except EvalcoreError as exc:
            show_error(exc, title=upload.name)
    for metric, results in by_metric.items():
        _show_metric(metric, results, titled=len(files) > 1)


st.title("Calibrate")
mode = st.segmented_control(
    "Source",
    ["Project", "Upload a file"],
    default="Project",
    key=K.MODE,
    label_visibility="collapsed",
)
if mode == "Upload a file":
    upload_mode()
else:
    project_mode(get_store(), require_project().id)
