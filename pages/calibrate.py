"""Calibrate: judge runs against humans, side by side.

Two sources: the project's datasets and judge runs (from the store; the views live in
``ui/calibrate_view.py``), and a file upload (any layout evalcore.data reads) for a quick look that
saves nothing.
"""

from __future__ import annotations

import streamlit as st

from evalcore.data import ColumnMapping, LoadedFile, load_file, read_table
from evalcore.errors import EvalcoreError, LayoutError
from evalcore.report import (
    HUMAN_POLICIES,
    FileCalibration,
    calibrate_file,
    side_by_side,
)
from ui import state
from ui.calibrate_view import project_mode
from ui.render import fmt, heatmaps, metric_table, show_error
from ui.resources import get_store, require_project

state.require_role("engineer", "manager")


@st.cache_data(max_entries=16, show_spinner=False)
def _load(name: str, data: bytes, mapping: ColumnMapping | None) -> LoadedFile:
    return load_file(data, name=name, mapping=mapping)


@st.cache_data(max_entries=32, show_spinner="Computing metrics and intervals…")
def _calibrate(name: str, data: bytes, mapping: ColumnMapping | None, policy: str):
    return calibrate_file(_load(name, data, mapping), policy=policy, n_boot=1000, seed=0)


def _mapping_form(name: str, data: bytes) -> ColumnMapping | None:
    """For a plain table: let the user say which columns hold human and judge labels."""
    columns = list(read_table(data, name=name).columns)
    st.info(f"**{name}** is a plain table. Choose its label columns.")
    c1, c2, c3 = st.columns(3)
    human = c1.multiselect("Human label columns", columns, key=f"map_h_{name}")
    judge = c2.multiselect("Judge label columns", columns, key=f"map_j_{name}")
    item = c3.selectbox("Item id column", ["(row number)", *columns], key=f"map_id_{name}")
    if not human or not judge:
        return None
    return ColumnMapping(
        item_id=None if item == "(row number)" else item,
        human=tuple(human),
        judge=tuple(judge),
        metric="label",
    )


def upload_mode() -> None:
    files = st.file_uploader(
        "Files with human and judge labels",
        type=["csv", "tsv", "jsonl", "json", "parquet"],
        accept_multiple_files=True,
        key="cal_files",
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
    policy = st.selectbox(
        "Human label from several annotators",
        HUMAN_POLICIES,
        key="cal_file_policy",
        help="Used when a metric has several annotator columns.",
    )
    by_metric: dict[str, list[tuple[str, FileCalibration]]] = {}
    for upload in files:
        data = upload.getvalue()
        mapping = None
        try:
            try:
                _load(upload.name, data, None)
            except LayoutError:
                mapping = _mapping_form(upload.name, data)
                if mapping is None:
                    continue
            for result in _calibrate(upload.name, data, mapping, policy):
                by_metric.setdefault(result.metric, []).append((upload.name, result))
        except EvalcoreError as exc:
            show_error(exc, title=upload.name)
    several_files = len(files) > 1
    for metric, results in by_metric.items():
        st.subheader(metric)
        panels = []
        for file_name, result in results:
            for judge in result.judges:
                title = f"{file_name} · {judge.judge}" if several_files else judge.judge
                panels.append((title, judge.report))
        first = results[0][1]
        st.caption(
            f"{first.scale.kind} scale · humans: {first.judges[0].policy} · 95% bootstrap intervals "
            "· ★ best value"
        )
        metric_table(side_by_side(panels), key=f"cal_tab_{metric}")
        for file_name, result in results:
            if result.ceiling and result.ceiling.krippendorff_alpha is not None:
                c = result.ceiling
                st.markdown(
                    f"Human ceiling ({file_name}): Krippendorff's alpha {fmt(c.krippendorff_alpha)}"
                    f", mean pairwise kappa {fmt(c.mean_pairwise_kappa)} over {c.n_items} items"
                )
            for base, other, comp in result.comparisons:
                st.markdown(
                    f"**{other}** vs **{base}**: balanced accuracy "
                    f"{comp.diff_balanced_accuracy:+.3f}, weighted F1 {comp.diff_weighted_f1:+.3f}, "
                    f"McNemar p = {comp.mcnemar_p:.3g}"
                )
        same_axes = len({tuple(r.labels) for _, r in panels}) == 1
        if same_axes:
            heatmaps(panels, key=f"cal_heat_{metric}")
        else:
            for title, report in panels:
                heatmaps([(title, report)], key=f"cal_heat_{metric}_{title}")


st.title("Calibrate")
mode = st.segmented_control(
    "Source",
    ["Project", "Upload a file"],
    default="Project",
    key="cal_mode",
    label_visibility="collapsed",
)
if mode == "Upload a file":
    upload_mode()
else:
    project_mode(get_store(), require_project().id)
