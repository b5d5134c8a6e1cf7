"""The Reports page: a project at a glance for managers, its history, and every export.

Session-state keys: ``rep_policy`` (human-label policy), ``rep_hist_metric`` (metric of the history
chart), ``rep_scope`` (criterion the exports cover, or all), ``rep_fmt`` (csv/jsonl/parquet),
``rep_vertex_dataset`` (dataset of the Vertex table), and the download buttons ``rep_dl_html``,
``rep_dl_human``, ``rep_dl_results``, ``rep_dl_metrics``, ``rep_dl_vertex``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from evalcore.report import (
    EXPORT_FORMATS,
    HUMAN_POLICIES,
    Calibration,
    build_report,
    data_version,
    history_figure,
    history_frame,
    human_labels_table,
    judge_results_table,
    metrics_table,
    mime_type,
    policy_name,
    project_calibrations,
    project_summary,
    table_bytes,
    vertex_table,
)
from evalcore.store import ProjectRecord, Store

LIGHT_ICONS = {"green": "🟢 green", "amber": "🟠 amber", "red": "🔴 red", "none": "⚪ no data"}

HISTORY_METRICS = {
    "balanced_accuracy": "balanced accuracy",
    "cohen_kappa": "Cohen's kappa",
    "weighted_f1": "weighted F1",
}


def project_version(store: Store, project_id: int) -> tuple[Any, ...]:
    """A fingerprint of everything the project's reports read (labels, results, runs)."""
    runs = store.list_runs(project_id=project_id)
    pairs: dict[tuple[int, int], list[int]] = {}
    for run in runs:
        pairs.setdefault((run.dataset_id, run.criterion_id), []).append(run.id)
    return tuple(
        data_version(store, dataset, criterion, sorted(ids))
        for (dataset, criterion), ids in sorted(pairs.items())
    )


@st.cache_data(max_entries=8, show_spinner="Calibrating every criterion…")
def _calibrations(
    url: str, project_id: int, policy: str, version: tuple[Any, ...], _store: Store
) -> list[Calibration]:
    return project_calibrations(_store, project_id, policy=policy, n_boot=1000)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "project"


def summary_section(
    store: Store, project: ProjectRecord, calibrations: Sequence[Calibration], policy: str
) -> None:
    summary = project_summary(store, project.id, policy=policy, calibrations=calibrations)
    if not summary.criteria:
        st.info("No criterion has a judge run compared with people yet.")
        return
    table = summary.table()
    table["verdict"] = table["verdict"].map(LIGHT_ICONS)
    st.dataframe(
        table,
        key="rep_summary",
        hide_index=True,
        width="stretch",
        column_config={"checks": st.column_config.TextColumn("checks", width="large")},
    )
    thresholds = ", ".join(f"{k} ≥ {v:g}" for k, v in summary.thresholds.items()) or "none"
    st.caption(
        f"Thresholds of this project: {thresholds} (Settings page). 🟢 every threshold met · 🟠 a "
        "threshold missed, but within the 95% interval (the data cannot rule out that it is met) · "
        "🔴 a threshold clearly missed. Each criterion's best run is the one with the highest "
        "balanced accuracy; Cohen's kappa is quadratic-weighted on ordinal scales. Human ceiling: "
        "Krippendorff's α / mean pairwise κ between annotators."
    )
    columns = st.columns(len(summary.criteria))
    for column, s in zip(columns, summary.criteria, strict=True):
        with column.container(border=True):
            st.markdown(f"**{s.criterion.name}** · {LIGHT_ICONS[s.verdict.light]}")
            if s.best is not None and s.best.report is not None:
                st.caption(s.best.title)
                st.metric("balanced accuracy", f"{s.best.report.accuracy_balanced:.3f}")
            for check in s.verdict.checks:
                st.caption(check.describe())


def history_section(calibrations: Sequence[Calibration]) -> None:
    frame = history_frame(calibrations)
    if frame.empty:
        st.info("No template version has been run yet.")
        return
    metric = (
        st.segmented_control(
            "Metric",
            list(HISTORY_METRICS),
            format_func=HISTORY_METRICS.get,
            default="balanced_accuracy",
            key="rep_hist_metric",
        )
        or "balanced_accuracy"
    )
    st.plotly_chart(
        history_figure(frame, metric=metric, name=HISTORY_METRICS[metric]),
        key="rep_history",
        config={"displaylogo": False},
    )
    st.caption(
        "Each point is a run of a template version (x: when the version was saved), with its 95% "
        "interval; one line per template and model."
    )


def export_section(
    store: Store, project: ProjectRecord, calibrations: Sequence[Calibration], policy: str
) -> None:
    names = sorted({c.data.criterion.name for c in calibrations})
    scope = st.selectbox(
        "Criteria",
        [None, *names],
        format_func=lambda n: "All criteria" if n is None else n,
        key="rep_scope",
    )
    chosen = [c for c in calibrations if scope is None or c.data.criterion.name == scope]
    stem = _slug(project.name) + ("" if scope is None else f"-{_slug(scope)}")
    st.markdown(
        "**Report** (one HTML file that opens offline: summary, history, every table and chart)"
    )
    st.download_button(
        "HTML report",
        data=lambda: build_report(
            store, project.id, criteria=None if scope is None else [scope], policy=policy
        ),
        file_name=f"{stem}-report.html",
        mime="text/html",
        key="rep_dl_html",
        icon=":material/description:",
        on_click="ignore",
    )
    st.markdown("**Tables**")
    fmt = (
        st.segmented_control("Format", list(EXPORT_FORMATS), default="csv", key="rep_fmt") or "csv"
    )
    c1, c2, c3 = st.columns(3)

    def humans() -> bytes:
        frames = [human_labels_table(store, c.data.dataset.id, c.data.criterion.id) for c in chosen]
        return table_bytes(pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(), fmt)

    def results() -> bytes:
        frames = [judge_results_table(store, c) for c in chosen]
        return table_bytes(pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(), fmt)

    c1.download_button(
        "Human labels",
        data=humans,
        file_name=f"{stem}-human-labels.{fmt}",
        mime=mime_type(fmt),
        key="rep_dl_human",
        on_click="ignore",
        icon=":material/group:",
    )
    c2.download_button(
        "Judge results",
        data=results,
        file_name=f"{stem}-judge-results.{fmt}",
        mime=mime_type(fmt),
        key="rep_dl_results",
        on_click="ignore",
        icon=":material/gavel:",
    )
    c3.download_button(
        "Metrics",
        data=lambda: table_bytes(metrics_table(chosen), fmt),
        file_name=f"{stem}-metrics.{fmt}",
        mime=mime_type(fmt),
        key="rep_dl_metrics",
        on_click="ignore",
        icon=":material/table_chart:",
    )
    st.caption(
        f"Human labels: every revision (the latest marked). Judge results: every run's label, "
        f"reason and raw reply. Metrics: every run with 95% intervals, coverage and the difference "
        f"from the oldest run; human policy: {policy_name(policy)}."
    )
    st.markdown("**Vertex AI metrics table** (one dataset, the best run of each criterion)")
    datasets = {c.data.dataset.id: c.data.dataset for c in calibrations}
    dataset_id = st.selectbox(
        "Dataset",
        list(datasets),
        format_func=lambda i: f"{datasets[i].name} v{datasets[i].version}",
        key="rep_vertex_dataset",
    )
    of_dataset = [c for c in calibrations if c.data.dataset.id == dataset_id]
    st.download_button(
        "Vertex table",
        data=lambda: table_bytes(vertex_table(store, of_dataset), fmt),
        file_name=f"{_slug(datasets[dataset_id].name)}-vertex.{fmt}",
        mime=mime_type(fmt),
        key="rep_dl_vertex",
        on_click="ignore",
        icon=":material/table_view:",
    )
    st.caption(
        "Columns prompt, response (and baseline_model_response), then per criterion "
        "{criterion}/human_rating, {criterion}/score and {criterion}/explanation, or "
        "{criterion}/human_pairwise_choice and {criterion}/pairwise_choice (CANDIDATE, BASELINE, "
        "TIE), as evaluate_autorater reads them; evalcore calibrate reads it back."
    )


def reports_page(store: Store, project: ProjectRecord) -> None:
    """The whole Reports page."""
    policy = st.selectbox(
        "Human label",
        list(HUMAN_POLICIES),
        format_func=policy_name,
        key="rep_policy",
        help="How several annotators' labels become one (median and mean apply to ordered scales; "
        "other criteria use the majority vote).",
    )
    runs = store.list_runs(project_id=project.id)
    if not runs:
        st.info(
            "No judge run yet: the report fills in once a judge has labelled items people rated."
        )
        return
    calibrations = _calibrations(
        store.url, project.id, policy, project_version(store, project.id), store
    )
    st.subheader("Summary")
    summary_section(store, project, calibrations, policy)
    st.subheader("History")
    history_section(calibrations)
    st.subheader("Export")
    export_section(store, project, calibrations, policy)
