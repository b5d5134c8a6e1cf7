"""The Reports page: a project at a glance for managers, its history, and every export.

Widgets and layout only; every number is the one engine's (:mod:`evalcore.report`), cached in
``ui/cache.py``. Session-state keys are the constants of :class:`ui.state.Reports`. Traffic lights
are Streamlit badges (a coloured box with a word), so their colour never depends on an emoji font.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pandas as pd
import streamlit as st

from evalcore.errors import EvalcoreError
from evalcore.metrics import metric_def
from evalcore.report import (
    EXPORT_FORMATS,
    HUMAN_POLICIES,
    SUMMARY_METRICS,
    Calibration,
    build_report,
    history_figure,
    history_frame,
    human_labels_table,
    judge_results_table,
    metrics_table,
    mime_type,
    policy_name,
    project_summary,
    project_version,
    rate_table,
    run_rate_estimate,
    table_bytes,
    vertex_table,
)
from evalcore.store import ProjectRecord, Store
from ui import cache
from ui.render import md_escape
from ui.resources import record_export
from ui.state import Reports as K

#: Each traffic light as a badge colour and a word (the word carries it where colour does not).
LIGHTS: dict[str, tuple[str, str]] = {
    "green": ("green", "green"),
    "amber": ("orange", "amber"),
    "red": ("red", "red"),
    "none": ("gray", "no data"),
}


_CELL_COLOURS = {"green": "#d3f2dc", "amber": "#ffe8c2", "red": "#ffd6d6"}


def _light_style(word: str) -> str:
    return f"background-color: {_CELL_COLOURS[word]}" if word in _CELL_COLOURS else ""


def light_badge(light: str) -> None:
    color, word = LIGHTS[light]
    st.badge(word, color=color, icon=":material/circle:")  # type: ignore[arg-type]


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
    table["verdict"] = table["verdict"].map(lambda light: LIGHTS[light][1])
    st.dataframe(
        table.style.map(_light_style, subset=["verdict"]),  # a coloured cell and a word
        key=K.SUMMARY,
        hide_index=True,
        width="stretch",
        height="content",
        column_config={
            "criterion": st.column_config.TextColumn("criterion", pinned=True),
            "verdict": st.column_config.TextColumn("verdict", pinned=True),
            "checks": st.column_config.TextColumn("checks", width="large"),
        },
    )
    thresholds = ", ".join(f"{k} ≥ {v:g}" for k, v in summary.thresholds.items()) or "none"
    st.caption(
        f"Thresholds of this project: {thresholds} (Settings page). Green: every threshold met · "
        "amber: a threshold missed, but within the 95% interval (the data cannot rule out that it "
        "is met) · red: a threshold clearly missed. Each criterion's best run is the one with the highest "
        "balanced accuracy; Cohen's kappa is quadratic-weighted on ordinal scales. Human ceiling: "
        "Krippendorff's α / mean pairwise κ between annotators."
    )
    columns = st.columns(len(summary.criteria))
    for column, s in zip(columns, summary.criteria, strict=True):
        with column.container(border=True):
            st.markdown(f"**{md_escape(s.criterion.name)}**")
            light_badge(s.verdict.light)
            if s.best is not None and s.best.report is not None:
                st.caption(md_escape(s.best.title))
                st.metric("balanced accuracy", f"{s.best.report.accuracy_balanced:.3f}")
            for check in s.verdict.checks:
                st.caption(md_escape(check.describe()))


def history_section(calibrations: Sequence[Calibration]) -> None:
    frame = history_frame(calibrations)
    if frame.empty:
        st.info("No template version has been run yet.")
        return
    names = {key: metric_def(key).name for key in SUMMARY_METRICS}
    metric = (
        st.segmented_control(
            "Metric",
            list(names),
            format_func=names.get,
            default=SUMMARY_METRICS[0],
            key=K.HIST_METRIC,
        )
        or SUMMARY_METRICS[0]
    )
    st.plotly_chart(
        history_figure(frame, metric=metric, name=names[metric]),
        key=K.HISTORY,
        config={"displaylogo": False},
    )
    st.caption(
        "Each point is a run of a template version (x: when the version was saved), with its 95% "
        "interval; one line per template and model."
    )


def rates_section(calibrations: Sequence[Calibration]) -> None:
    """For each binary criterion: the rate people would give the items only its best judge run
    labelled, by three methods side by side, the labelled items alone being the baseline."""
    binary = [c for c in calibrations if c.kind == "binary"]
    if not binary:
        st.info("No binary (pass/fail) criterion has a judge run yet.")
        return
    frames = []
    for c in binary:
        best = c.best()
        if best is None:
            continue
        try:
            found = run_rate_estimate(c.data, best.info.id, c.human)
        except EvalcoreError as exc:
            st.caption(md_escape(exc))
            continue
        frame = rate_table(found)
        frame.insert(0, "judge run", best.title)
        frame.insert(0, "label", found.positive)
        frame.insert(0, "criterion", c.data.criterion.name)
        frames.append(frame)
    if not frames:
        return
    st.dataframe(
        pd.concat(frames, ignore_index=True),
        key=K.RATES,
        hide_index=True,
        width="stretch",
        height="content",
    )
    st.caption(
        "The share of the label people would give the items nobody labelled, from the best run's "
        "labels there and on the labelled items. *labelled only* ignores the judge: the baseline "
        "the other two must beat (a narrower interval). *Rogan-Gladen* corrects the judge's share "
        "by its TPR and TNR; *PPI++* adds the judge's mean error on the labelled items to its "
        "share, weighted by the power-tuned λ."
    )


def export_section(
    store: Store, project: ProjectRecord, calibrations: Sequence[Calibration], policy: str
) -> None:
    names = sorted({c.data.criterion.name for c in calibrations})
    scope = st.selectbox(
        "Criteria",
        [None, *names],
        format_func=lambda n: "All criteria" if n is None else n,
        key=K.SCOPE,
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
        key=K.DL_HTML,
        icon=":material/description:",
        on_click=record_export,
        args=(f"{stem}-report.html", project.id),
    )
    st.markdown("**Tables**")
    fmt = st.segmented_control("Format", list(EXPORT_FORMATS), default="csv", key=K.FORMAT) or "csv"

    def humans() -> bytes:
        frames = [human_labels_table(store, c.data.dataset.id, c.data.criterion.id) for c in chosen]
        return table_bytes(pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(), fmt)

    def results() -> bytes:
        frames = [judge_results_table(store, c) for c in chosen]
        return table_bytes(pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(), fmt)

    downloads = (
        ("Human labels", humans, "human-labels", K.DL_HUMAN, ":material/group:"),
        ("Judge results", results, "judge-results", K.DL_RESULTS, ":material/gavel:"),
        (
            "Metrics",
            lambda: table_bytes(metrics_table(chosen), fmt),
            "metrics",
            K.DL_METRICS,
            ":material/table_chart:",
        ),
    )
    for column, (label, data, suffix, key, icon) in zip(st.columns(3), downloads, strict=True):
        column.download_button(
            label,
            data=data,
            file_name=f"{stem}-{suffix}.{fmt}",
            mime=mime_type(fmt),
            key=key,
            on_click=record_export,
            args=(f"{stem}-{suffix}.{fmt}", project.id),
            icon=icon,
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
        key=K.VERTEX_DATASET,
    )
    of_dataset = [c for c in calibrations if c.data.dataset.id == dataset_id]
    st.download_button(
        "Vertex table",
        data=lambda: table_bytes(vertex_table(store, of_dataset), fmt),
        file_name=f"{_slug(datasets[dataset_id].name)}-vertex.{fmt}",
        mime=mime_type(fmt),
        key=K.DL_VERTEX,
        on_click=record_export,
        args=(f"{_slug(datasets[dataset_id].name)}-vertex.{fmt}", project.id),
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
        key=K.POLICY,
        help="How several annotators' labels become one (median and mean apply to ordered scales; "
        "other criteria use the majority vote).",
    )
    runs = store.list_runs(project_id=project.id)
    if not runs:
        st.info(
            "No judge run yet: the report fills in once a judge has labelled items people rated."
        )
        return
    calibrations = cache.project_calibrations(
        store, project.id, policy, project_version(store, project.id)
    )
    st.subheader("Summary")
    summary_section(store, project, calibrations, policy)
    st.subheader("History")
    history_section(calibrations)
    st.subheader("Human-level rate of the unlabelled items")
    rates_section(calibrations)
    st.subheader("Export")
    export_section(store, project, calibrations, policy)
