"""The Judge page's "Improve" section: optimise a template version from the human labels.

What can be improved, the settings (declared by the library, with their bounds), the estimate, and
each action (start, cancel, start again, save a version) are one call of
:mod:`evalcore.workflows.improve`; the optimisation runs in the server's worker, and its progress and
report are read back from the store, redrawn while it goes on."""

from __future__ import annotations

from typing import Any

import streamlit as st

from evalcore.words import plural
from evalcore.workflows import improve as flow
from evalcore.workflows.improve import ImproveRequest, JobView
from ui import state
from ui.judge_view import POLL_S, Ctx
from ui.render import fmt, md_escape
from ui.state import Judge
from ui.widgets import attempt, flash, fragment, goto, money, picker

__all__ = ["improve_section"]


def _request(ctx: Ctx, criterion_id: int, version_id: int, manual: list[int]) -> ImproveRequest:
    assert ctx.dataset is not None
    ss = st.session_state
    return ImproveRequest(
        dataset_id=ctx.dataset.id,
        criterion_id=criterion_id,
        version_id=version_id,
        endpoint_id=ctx.endpoint_id,
        model=ctx.model,
        optimizer_endpoint_id=ss.get(Judge.IMPROVE_OPT_ENDPOINT) or None,
        optimizer_model=str(ss.get(Judge.IMPROVE_OPT_MODEL) or ""),
        values={s.name: ss.get(state.key(Judge.IMPROVE_SETTING, s.name)) for s in flow.SETTINGS},
        manual=tuple(manual),
    )


def improve_section(ctx: Ctx) -> None:
    """Choose what to improve and how, estimate, start; then the chosen job's progress or report."""
    st.caption(
        "Searches for a better version of a template from the human labels: few-shot examples "
        "and instruction rewrites are chosen on the dev items, then the best few are proven on "
        "test items that nothing in the search ever read."
    )
    if ctx.dataset is None:
        st.info("Choose a dataset first.")
        return
    found = flow.choices(ctx.session, ctx.project_id)
    if not found.criteria:
        st.info("No criterion has a judge template yet. Create one in the Editor.")
        return
    names = {c.id: c.name for c in found.criteria}
    c1, c2, c3 = st.columns([2, 2, 3])
    criterion_id = picker(c1, "Criterion", list(names), key=Judge.IMPROVE_CRITERION,
                          default=next(iter(names)), format_func=names.__getitem__)  # fmt: skip
    labels = {v.id: v.label for v in flow.versions(ctx.session, ctx.project_id, criterion_id)}
    if not labels:
        st.info("This criterion's templates are built-in metrics: copy one to edit it first.")
        return
    version_id = picker(c2, "Starting version", list(labels), key=Judge.IMPROVE_VERSION,
                        default=next(iter(labels)), format_func=labels.__getitem__)  # fmt: skip
    manual = c3.multiselect(
        "Also compare (hand-edited versions)", [v for v in labels if v != version_id],
        key=Judge.IMPROVE_MANUAL, format_func=labels.__getitem__,
        help="Versions you edited yourself join the same comparison on dev and test.",
    )  # fmt: skip
    _settings_form(ctx, found.endpoints)
    request = _request(ctx, criterion_id, version_id, manual)
    models = attempt(lambda: flow.models(ctx.session, request), title="No judge model")
    if models is None:
        return
    endpoint = md_escape(ctx.endpoint.name if ctx.endpoint else "(none)")
    st.markdown(
        f"Judge: **{md_escape(models.judge)}** on {endpoint} (the context bar above) · "
        f"optimiser: **{md_escape(models.optimizer)}**"
    )
    b1, b2, _ = st.columns([1, 1, 4])
    if b1.button("Estimate", key=Judge.IMPROVE_ESTIMATE):
        _estimate(ctx, request)
    if ctx.endpoint is None:
        st.caption("Choose a judge endpoint in the context bar to start.")
    blocked = ctx.endpoint is None or request.optimizer_endpoint_id is None
    if b2.button("Start", key=Judge.IMPROVE_START, type="primary", disabled=blocked):
        job_id = attempt(lambda: flow.start(ctx.session, request),
                         title="The optimisation was not started")  # fmt: skip
        if job_id is not None:
            flash(
                f"Started optimisation #{job_id}. It goes on if you leave the page.",
                key=Judge.FLASH,
            )
            goto(Judge, improve_job=job_id)
    _jobs(ctx)


def _settings_form(ctx: Ctx, endpoints: Any) -> None:
    names = {e.id: e.name for e in endpoints}
    s1, s2 = st.columns(2)
    if names:
        default = ctx.endpoint_id if ctx.endpoint_id in names else next(iter(names))
        picker(s1, "Optimiser endpoint", list(names), key=Judge.IMPROVE_OPT_ENDPOINT,
               default=default, format_func=names.__getitem__,
               help="The model that proposes rewrites may run elsewhere than the judge.")  # fmt: skip
    s2.text_input("Optimiser model", key=Judge.IMPROVE_OPT_MODEL, placeholder="the judge's model",
                  persist_state="session")  # fmt: skip
    half = (len(flow.SETTINGS) + 1) // 2
    for column, s in zip([*st.columns(half), *st.columns(half)], flow.SETTINGS, strict=False):
        column.number_input(
            s.label, min_value=s.least, max_value=s.most, value=s.default, step=s.step,
            key=state.key(Judge.IMPROVE_SETTING, s.name), help=s.help or None,
        )  # fmt: skip


def _estimate(ctx: Ctx, request: ImproveRequest) -> None:
    found = attempt(lambda: flow.estimate(ctx.session, request), title="No estimate")
    if found is None:
        return
    st.markdown(f"**Estimate** (at most), on {plural(found.labelled, 'labelled item')}:")
    e1, e2, e3 = st.columns(3)
    e1.metric("Requests", f"{found.requests:,}")
    e2.metric("Tokens (in + out)", f"{found.tokens_in + found.tokens_out:,}",
              help=f"in ≈ {found.tokens_in:,}, out ≈ {found.tokens_out:,}")  # fmt: skip
    e3.metric("Cost", money(found.cost))
    if found.note:
        st.caption(md_escape(found.note))


# --- jobs --------------------------------------------------------------------------------------------


def _jobs(ctx: Ctx) -> None:
    assert ctx.dataset is not None
    jobs = flow.jobs(ctx.session, ctx.dataset.id)
    if not jobs:
        return
    st.subheader("Optimisations")
    by_id = {j.id: j for j in jobs}
    job_id = picker(
        st, "Optimisation", list(by_id), key=Judge.IMPROVE_JOB, default=jobs[0].id,
        format_func=lambda i: f"#{i} · {by_id[i].created_at:%Y-%m-%d %H:%M} · {by_id[i].author}",
    )  # fmt: skip
    live = not by_id[job_id].is_terminal
    fragment(_job_body, run_every=POLL_S if live else None)(ctx, ctx.dataset.id, job_id, live)


def _job_body(ctx: Ctx, dataset_id: int, job_id: int, live: bool) -> None:
    view = flow.job(ctx.session, dataset_id, job_id)
    if live and view.record.is_terminal:
        st.rerun(scope="app")  # it has ended: draw once more, without the timer
    st.progress(view.fraction, text=view.line)
    c1, c2, c3 = st.columns(3)
    c1.metric("Steps", f"{view.done} / {view.total}" if view.total else "–")
    c2.metric("Requests", f"{view.requests:,}")
    c3.metric("Cost so far", money(view.cost))
    if view.record.error:
        st.error(md_escape(view.record.error), icon=":material/error:")
    if view.stopping:
        st.info("Stopping: what is done is kept.")
    elif view.can_cancel:
        if st.button("Cancel", key=Judge.IMPROVE_CANCEL):
            flow.cancel(ctx.session, dataset_id, job_id)
            st.info("Cancel requested.")
    elif view.can_restart and st.button(
        "Start again",
        key=Judge.IMPROVE_RESTART,
        help="The replies already made come from the cache",
    ):
        new = attempt(lambda: flow.restart(ctx.session, dataset_id, job_id),
                      title="The optimisation was not started")  # fmt: skip
        if new is not None:
            goto(Judge, improve_job=new)
    if view.report is not None:
        _report(ctx, view)


def _report(ctx: Ctx, view: JobView) -> None:
    report = view.report
    assert report is not None
    st.markdown(
        f"Split **{md_escape(report.split)}**: {report.n_dev} dev · {report.n_test} test items · "
        f"{plural(report.requests, 'request')} · {money(report.cost)}"
    )
    if report.stopped_text:
        st.warning(report.stopped_text)
    st.markdown("**Candidates on dev**")
    st.dataframe(report.candidate_table(), hide_index=True, key=Judge.IMPROVE_CANDIDATES)
    if report.steps_text:
        st.markdown(f"**Dropped candidates**: {md_escape(report.steps_text)}")
        st.dataframe(report.dropped_table(), hide_index=True, key=Judge.IMPROVE_DROPPED)
    if not report.finalists:
        return
    st.markdown(f"**On test**, against the start · human ceiling: {fmt(report.ceiling)}")
    st.dataframe(report.test_table(), hide_index=True, key=Judge.IMPROVE_TEST)
    if not report.winners:
        st.info("No candidate beat the starting version on test, so none is offered for saving.")
        return
    for candidate_id in view.saveable:
        key = state.key(Judge.IMPROVE_SAVE, candidate_id)
        if st.button(f"Save {candidate_id} as a new version", type="primary", key=key):
            _save(ctx, view, candidate_id)


def _save(ctx: Ctx, view: JobView, candidate_id: str) -> None:
    dataset_id = view.record.dataset_id
    saved = attempt(
        lambda: flow.save(ctx.session, dataset_id, view.id, candidate_id),
        title="The candidate was not saved",
    )
    if saved is not None:
        flash(f"Saved {candidate_id} as version {saved.number}.", key=Judge.FLASH)
        goto(Judge, section="Editor", template=saved.template_id, version=saved.id)
