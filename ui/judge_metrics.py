"""The Judge page's metric catalogue: every registered metric, explained; each can be configured,
tried, copied into the project as a template to edit, or run on the dataset."""

from __future__ import annotations

from typing import Any, Final

import streamlit as st

from evalcore.words import plural
from evalcore.workflows import judge as flow
from evalcore.workflows.judge import MetricSpec, MetricView
from ui import state
from ui.judge_view import Ctx
from ui.render import md_escape
from ui.state import Judge
from ui.widgets import attempt, flash, goto, picker, show_trial

NEW: Final = 0  # "a new criterion named after the metric" in the criterion picker


def _settings(found: MetricView) -> tuple[dict[str, Any], str | None]:
    """The parameters and the pass threshold chosen in the catalogue."""
    name = found.entry.name
    columns = iter(st.columns(max(1, len(found.parameters) + (found.threshold is not None))))
    params: dict[str, Any] = {}
    for p in found.parameters:
        key, column = state.key(Judge.METRIC_SETTING, name, f"p_{p.name}"), next(columns)
        if p.choices:
            params[p.name] = column.selectbox(p.name, p.choices, key=key, persist_state="session",
                                              index=p.choices.index(str(p.value)))  # fmt: skip
        elif isinstance(p.value, float):
            params[p.name] = column.number_input(p.name, value=p.value, step=0.1, key=key,
                                                 persist_state="session")  # fmt: skip
        else:
            params[p.name] = column.text_input(p.name, value=str(p.value), key=key,
                                               persist_state="session")  # fmt: skip
    threshold = None
    if found.threshold is not None:
        threshold = next(columns).text_input(
            "Pass threshold", value=found.threshold, help=found.pass_rule, persist_state="session",
            key=state.key(Judge.METRIC_SETTING, name, "threshold"),
        )  # fmt: skip
    return params, threshold


def metrics_section(ctx: Ctx) -> None:
    found = flow.catalogue(ctx.session)
    st.dataframe(found.table, hide_index=True, key=Judge.CATALOGUE)
    names = [e.name for e in found.entries]
    name = picker(st, "Metric", names, key=Judge.METRIC, default=names[0],
                  format_func=lambda n: f"{found.entry(n).title} ({n})")  # fmt: skip
    view = flow.metric(ctx.session, name)
    entry = view.entry
    st.subheader(entry.title)
    version = f" · version `{entry.version}`" if entry.version else ""
    st.caption(f"{entry.origin} · {entry.kind}{version}")
    st.markdown(entry.description)
    st.markdown("\n".join(view.facts))
    if entry.example_inputs:
        with st.expander("Example", expanded=True):
            for key, value in entry.example_inputs:
                st.markdown(f"**{md_escape(key)}**: {md_escape(value)}")
            st.code(entry.example_output, language=None, wrap_lines=True)
    st.markdown("**Use it**")
    params, threshold = _settings(view)
    spec = attempt(lambda: flow.configure(ctx.session, name, params, threshold),
                   title="These settings are not valid")  # fmt: skip
    if spec is not None:
        _use(ctx, spec)


def _use(ctx: Ctx, spec: MetricSpec) -> None:
    """Copy the configured metric into the project, try it, or run it on the dataset."""
    name = spec.name
    compatible = {c.id: c for c in flow.metric_criteria(ctx.session, ctx.project_id, spec)}
    options = [*compatible, NEW]
    chosen = picker(
        st, "Criterion its results are stored under (and calibrated against)", options,
        key=state.key(Judge.METRIC_SETTING, name, "criterion"), default=options[0],
        format_func=lambda i: compatible[i].name if i in compatible
        else "A new criterion named after the metric",
    )  # fmt: skip
    criterion_id = None if chosen == NEW else int(chosen)
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    copy_name = c1.text_input("Name of the copy", value=f"{name} copy", persist_state="session",
                              key=state.key(Judge.METRIC_SETTING, name, "copy_name"))  # fmt: skip
    if c2.button(
        "Copy into project", key=Judge.COPY, help="A project template to edit and compare"
    ):
        copied = attempt(
            lambda: flow.copy_metric(ctx.session, ctx.project_id, spec, name=copy_name,
                                     criterion_id=criterion_id),
            title="The metric was not copied",
        )  # fmt: skip
        if copied is not None:
            flash(f"Copied {name} into the project as {copied.template.name!r}.", key=Judge.FLASH)
            goto(Judge, section="Editor", template=copied.template.id, version=copied.version.id)
    c1, c2 = st.columns(2)
    dataset = ctx.dataset
    dataset_name = md_escape(dataset.name if dataset else "the dataset")
    items = plural(flow.TRIAL_ITEMS, "item")
    if c1.button(f"Try on {items} of {dataset_name}", key=Judge.METRIC_TRY) and dataset:
        with st.spinner("Judging…"):
            trial = attempt(
                lambda: flow.try_metric(ctx.session, dataset.id, spec,
                                        endpoint_id=ctx.endpoint_id, model=ctx.model),
                title="The try did not run",
            )  # fmt: skip
        if trial is not None:
            show_trial(trial, key=Judge.METRIC_TRIAL)
    if c2.button(f"Run on {dataset_name}", key=Judge.METRIC_RUN, type="primary"):
        run = attempt(
            lambda: flow.start_metric_run(
                ctx.session, ctx.project_id, dataset.id if dataset else None, spec,
                criterion_id=criterion_id, endpoint_id=ctx.endpoint_id, model=ctx.model,
            ),
            title="The run was not started",
        )  # fmt: skip
        if run is not None:
            flash(f"Started run #{run.id}: {run.name}.", key=Judge.FLASH)
            goto(Judge, section="Runs", run=run.id)
