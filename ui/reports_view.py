"""The Reports page: a project at a glance for managers, its history, and every export.

Widgets and layout only; every number and file comes from :mod:`evalcore.workflows.reports`, which
checks the reader at each call (a download is made, checked and audited when it is asked for).
Traffic lights are Streamlit badges (a coloured box with a word), so their colour never depends on an
emoji font.
"""

from __future__ import annotations

import streamlit as st

from evalcore.workflows import Session
from evalcore.workflows import reports as flow
from evalcore.workflows.reports import ProjectReport
from ui.render import LIGHTS, md_escape
from ui.state import Reports as K

_CELL_COLOURS = {"green": "#d3f2dc", "amber": "#ffe8c2", "red": "#ffd6d6"}


def _light_style(word: str) -> str:
    return f"background-color: {_CELL_COLOURS[word]}" if word in _CELL_COLOURS else ""


def summary_section(report: ProjectReport) -> None:
    summary = report.summary
    if summary is None or not summary.criteria:
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
        f"Thresholds of this project: {thresholds}. Green: every 95% interval wholly at or "
        "above its threshold · amber: an interval straddles its threshold (the data cannot tell) "
        "· red: an interval wholly below its threshold. Each criterion's best run is the one with the highest "
        "balanced accuracy; Cohen's kappa is quadratic-weighted on ordinal scales. Human ceiling: "
        "Krippendorff's α / mean pairwise κ between annotators."
    )
    for column, s in zip(st.columns(len(summary.criteria)), summary.criteria, strict=True):
        with column.container(border=True):
            st.markdown(f"**{md_escape(s.criterion.name)}**")
            color, word = LIGHTS[s.verdict.light]
            st.badge(word, color=color, icon=":material/circle:")  # type: ignore[arg-type]
            if s.best is not None and s.best.report is not None:
                st.caption(md_escape(s.best.title))
                st.metric("balanced accuracy", f"{s.best.report.accuracy_balanced:.3f}")
            for check in s.verdict.checks:
                st.caption(md_escape(check.describe()))


def history_section(report: ProjectReport) -> None:
    names = flow.metric_names()
    first = next(iter(names))
    metric = st.segmented_control(
        "Metric", list(names), format_func=names.get, default=first, key=K.HIST_METRIC
    )
    _frame, figure = flow.history(report, str(metric or first))
    if figure is None:
        st.info("No template version has been run yet.")
        return
    st.plotly_chart(figure, key=K.HISTORY, config={"displaylogo": False})
    st.caption(
        "Each point is a run of a template version (x: when the version was saved), with its 95% "
        "interval; one line per template and model."
    )


def rates_section(report: ProjectReport) -> None:
    """For each binary criterion: the rate people would give the items only its best judge run
    labelled, by three methods side by side, the labelled items alone being the baseline."""
    table, notes = flow.rates(report)
    for note in notes:
        st.caption(md_escape(note))
    if table is None:
        if not notes:
            st.info("No binary (pass/fail) criterion has a judge run yet.")
        return
    st.dataframe(table, key=K.RATES, hide_index=True, width="stretch", height="content")
    st.caption(
        "The share of the label people would give the items nobody labelled, from the best run's "
        "labels there and on the labelled items. *labelled only* ignores the judge: the baseline "
        "the other two must beat (a narrower interval). *Rogan-Gladen* corrects the judge's share "
        "by its TPR and TNR; *PPI++* adds the judge's mean error on the labelled items to its "
        "share, weighted by the power-tuned λ."
    )


def scores_section(report: ProjectReport) -> None:
    """Other scales' PPI++ estimates, and the annotators' agreement among all of them."""
    table, notes = flow.scores(report)
    for note in notes:
        st.caption(md_escape(note))
    if table is not None:
        st.dataframe(table, key=K.SCORES, hide_index=True, width="stretch", height="content")
        st.caption("Each label's share and the mean score people would give the unlabelled items.")
    raters = flow.raters(report)
    if raters is not None:
        st.dataframe(raters, key=K.RATERS, hide_index=True, width="stretch", height="content")
        st.caption("Agreement among all annotators at once; intervals at 95%.")


def _download(session: Session, project_id: int, what: flow.Export, policy: str, label: str,
              key: str, icon: str, where: object = st) -> None:  # fmt: skip
    where.download_button(  # type: ignore[attr-defined]
        label,
        data=lambda: flow.export(session, project_id, what, policy),  # made and checked when asked
        file_name=what.file_name,
        mime=what.mime,
        key=key,
        icon=icon,
    )


def export_section(session: Session, project_id: int, report: ProjectReport) -> None:
    names = sorted({c.data.criterion.name for c in report.calibrations})
    scope = st.selectbox("Criteria", [None, *names], key=K.SCOPE,
                         format_func=lambda n: "All criteria" if n is None else n)  # fmt: skip
    fmt = (
        st.segmented_control("Format", list(flow.EXPORT_FORMATS), default="csv", key=K.FORMAT)
        or "csv"
    )
    datasets = {c.data.dataset.id: c.data.dataset for c in report.calibrations}
    chosen = st.session_state.get(K.VERTEX_DATASET)
    files = flow.exports(session, project_id, criterion=scope, fmt=str(fmt),
                         dataset_id=chosen if chosen in datasets else next(iter(datasets), None))  # fmt: skip
    policy = report.policy
    st.markdown(
        "**Report** (one HTML file that opens offline: summary, history, every table and chart)"
    )
    _download(
        session,
        project_id,
        files["html"],
        policy,
        "HTML report",
        K.DL_HTML,
        ":material/description:",
    )
    st.markdown("**Tables**")
    tables = (
        ("human-labels", "Human labels", K.DL_HUMAN, ":material/group:"),
        ("judge-results", "Judge results", K.DL_RESULTS, ":material/gavel:"),
        ("metrics", "Metrics", K.DL_METRICS, ":material/table_chart:"),
    )
    for column, (kind, label, key, icon) in zip(st.columns(3), tables, strict=True):
        _download(session, project_id, files[kind], policy, label, key, icon, column)
    st.caption(
        "Human labels: every revision (the latest marked). Judge results: every run's label, "
        "reason and raw reply. Metrics: every run with 95% intervals, coverage and the difference "
        f"from the oldest run; human policy: {flow.policy_name(policy)}."
    )
    st.markdown("**Vertex AI metrics table** (one dataset, the best run of each criterion)")
    st.selectbox("Dataset", list(datasets), key=K.VERTEX_DATASET,
                 format_func=lambda i: f"{datasets[i].name} v{datasets[i].version}")  # fmt: skip
    if "vertex" in files:
        _download(session, project_id, files["vertex"], policy, "Vertex table", K.DL_VERTEX,
                  ":material/table_view:")  # fmt: skip
    st.caption(
        "Columns prompt, response (and baseline_model_response), then per criterion "
        "{criterion}/human_rating, {criterion}/score and {criterion}/explanation, or "
        "{criterion}/human_pairwise_choice and {criterion}/pairwise_choice (CANDIDATE, BASELINE, "
        "TIE), as evaluate_autorater reads them; evalcore calibrate reads it back."
    )


def reports_page(session: Session, project_id: int) -> None:
    """The whole Reports page."""
    policy = st.selectbox(
        "Human label", list(flow.HUMAN_POLICIES), format_func=flow.policy_name, key=K.POLICY,
        help="How several annotators' labels become one (median and mean apply to ordered "
        "scales; other criteria use the majority vote).",
    )  # fmt: skip
    report = flow.project_report(session, project_id, str(policy))
    if report.empty:
        st.info(
            "No judge run yet: the report fills in once a judge has labelled items people rated."
        )
        return
    st.subheader("Summary")
    summary_section(report)
    st.subheader("History")
    history_section(report)
    st.subheader("Human-level rate of the unlabelled items")
    rates_section(report)
    scores_section(report)
    st.subheader("Export")
    export_section(session, project_id, report)
