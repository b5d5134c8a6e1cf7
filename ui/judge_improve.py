"""The Judge page's "Improve" section: optimise a template version from the human labels.

Widgets and layout only: :func:`evalcore.runs.estimate_optimization` prices an optimisation,
:func:`evalcore.runs.start_optimization` hands it to the server's background worker, and the job's
progress and report are read from the store (``improve_jobs``), so the optimisation goes on when the
user leaves the page. A finalist that beat the start on test can be saved as a new version.
"""

from __future__ import annotations

from typing import Any, Final

import pandas as pd
import streamlit as st

from evalcore import runs
from evalcore.errors import EvalcoreError
from evalcore.improve import OptimizeSettings
from evalcore.metrics import metric_def
from evalcore.store import ImproveJobRecord, TemplateVersionRecord
from evalcore.words import plural
from ui import state
from ui.judge_view import POLL_S, Context, _flash, _goto, _money, _picker, _try
from ui.render import fmt, md_escape, show_error
from ui.resources import get_worker
from ui.state import Judge

__all__ = ["improve_section"]

#: What each phase of an optimisation is doing, for the progress line.
PHASES: Final = {
    "start": "judging the starting version on dev",
    "fewshot": "few-shot candidates on dev",
    "rewrite": "instruction rewrites on dev",
    "manual": "hand-made candidates on dev",
    "test": "the finalists and the start on test",
}


#: The numeric settings: label, key, least, most, default, step, help.
_NUMBERS: Final[tuple[tuple[str, str, Any, Any, Any, Any, str | None], ...]] = (
    (
        "Test share",
        Judge.IMPROVE_TEST_SHARE,
        0.1,
        0.9,
        0.4,
        0.05,
        "The share of labelled items kept for the proof on test. The split of a share and seed "
        "is saved, so later optimisations are measured on the same test items.",
    ),
    ("Split seed", Judge.IMPROVE_SEED, 0, None, 0, 1, None),
    (
        "Budget (USD)",
        Judge.IMPROVE_BUDGET,
        0.0,
        None,
        0.0,
        0.5,
        "0: no cap. The search stops before a step that would pass it.",
    ),
    ("Max requests", Judge.IMPROVE_MAX_REQUESTS, 0, None, 0, 100, "0: no cap."),
    (
        "Margin",
        Judge.IMPROVE_MARGIN,
        0.0,
        1.0,
        0.0,
        0.01,
        "A candidate is offered when its paired interval on test is above zero, or its gain "
        "is at least this margin.",
    ),
    ("Few-shot candidates", Judge.IMPROVE_FEWSHOT, 0, 20, 6, 1, "Subsets of dev examples tried."),
    (
        "Rewrites",
        Judge.IMPROVE_REWRITES,
        0,
        10,
        3,
        1,
        "Instruction rewrites asked of the optimiser.",
    ),
    ("Finalists", Judge.IMPROVE_FINALISTS, 1, 5, 3, 1, "The best on dev, judged on test."),
)


def _versions(ctx: Context, criterion_id: int) -> dict[int, tuple[str, TemplateVersionRecord]]:
    """Judge-template versions of the criterion's templates, newest first, with their labels."""
    found: dict[int, tuple[str, TemplateVersionRecord]] = {}
    for template in ctx.store.list_templates(ctx.project.id, criterion_id=criterion_id):
        for v in reversed(ctx.store.list_template_versions(template.id)):
            if runs.metric_of(v.parsed) is None:
                found[v.id] = (f"{template.name} v{v.number}", v)
    return found


def _optional(value: Any) -> Any:
    """A cap of 0 means no cap."""
    return value if value else None


def improve_section(ctx: Context) -> None:
    """Choose what to improve and how, estimate, start; then the chosen job's progress or report."""
    st.caption(
        "Searches for a better version of a template from the human labels: few-shot examples "
        "and instruction rewrites are chosen on the dev items, then the best few are proven on "
        "test items that nothing in the search ever read."
    )
    if ctx.dataset is None:
        st.info("Choose a dataset first.")
        return
    criteria = {c.id: c for c in ctx.store.list_criteria(ctx.project.id)}
    with_templates = [
        c for c in criteria if ctx.store.list_templates(ctx.project.id, criterion_id=c)
    ]
    if not with_templates:
        st.info("No criterion has a judge template yet. Create one in the Editor.")
        return
    c1, c2, c3 = st.columns([2, 2, 3])
    criterion_id = _picker(
        c1,
        "Criterion",
        with_templates,
        key=Judge.IMPROVE_CRITERION,
        default=with_templates[0],
        format_func=lambda i: criteria[i].name,
    )
    versions = _versions(ctx, criterion_id)
    if not versions:
        st.info("This criterion's templates are built-in metrics: copy one to edit it first.")
        return
    version_id = _picker(
        c2,
        "Starting version",
        list(versions),
        key=Judge.IMPROVE_VERSION,
        default=next(iter(versions)),
        format_func=lambda i: versions[i][0],
    )
    others = [v for v in versions if v != version_id]
    manual = c3.multiselect(
        "Also compare (hand-edited versions)",
        others,
        key=Judge.IMPROVE_MANUAL,
        format_func=lambda i: versions[i][0],
        help="Versions you edited yourself join the same comparison on dev and test.",
    )
    _settings_form(ctx)
    start = versions[version_id][1]
    settings = _settings()
    try:
        model = runs.resolve_model(start.content, ctx.model or None, ctx.endpoint) or ""
    except EvalcoreError as exc:
        show_error(exc, title="No judge model")
        return
    optimizer_model = str(st.session_state.get(Judge.IMPROVE_OPT_MODEL) or "").strip() or model
    optimizer_endpoint = st.session_state.get(Judge.IMPROVE_OPT_ENDPOINT)
    st.markdown(
        f"Judge: **{md_escape(model)}** on {md_escape(ctx.endpoint.name if ctx.endpoint else '(none)')}"
        f" (the context bar above) · optimiser: **{md_escape(optimizer_model)}**"
    )
    b1, b2, _ = st.columns([1, 1, 4])
    if b1.button("Estimate", key=Judge.IMPROVE_ESTIMATE):
        _estimate(ctx, criterion_id, version_id, model, optimizer_model, settings, manual)
    blocked = ctx.endpoint is None or not optimizer_endpoint
    if ctx.endpoint is None:
        st.caption("Choose a judge endpoint in the context bar to start.")
    if b2.button("Start", key=Judge.IMPROVE_START, type="primary", disabled=blocked):
        job_id = _try(
            lambda: runs.start_optimization(
                ctx.store,
                dataset_id=ctx.dataset.id,  # type: ignore[union-attr]
                criterion_id=criterion_id,
                template_version_id=version_id,
                endpoint_id=ctx.endpoint.id,  # type: ignore[union-attr]
                model=model,
                optimizer_endpoint_id=int(optimizer_endpoint or 0),
                optimizer_model=optimizer_model,
                settings=settings,
                author=ctx.who.name,
                manual_version_ids=manual,
                worker=get_worker(),
            ),
            title="The optimisation was not started",
        )
        if job_id is not None:
            _flash(f"Started optimisation #{job_id}. It goes on if you leave the page.")
            _goto(improve_job=job_id)
    _jobs(ctx)


def _settings_form(ctx: Context) -> None:
    endpoints = {e.id: e for e in ctx.store.list_endpoints()}
    default = ctx.endpoint.id if ctx.endpoint else next(iter(endpoints), 0)
    s1, s2 = st.columns(2)
    if endpoints:
        _picker(
            s1,
            "Optimiser endpoint",
            list(endpoints),
            key=Judge.IMPROVE_OPT_ENDPOINT,
            default=default,
            format_func=lambda i: endpoints[i].name,
            help="The model that proposes rewrites may run elsewhere than the judge.",
        )
    s2.text_input(
        "Optimiser model",
        key=Judge.IMPROVE_OPT_MODEL,
        placeholder="the judge's model",
        persist_state="session",
    )
    for column, (label, key, low, high, value, step, help_text) in zip(
        [*st.columns(5), *st.columns(3)], _NUMBERS, strict=True
    ):
        column.number_input(
            label,
            min_value=low,
            max_value=high,
            value=value,
            step=step,
            key=key,
            help=help_text,
        )


def _settings() -> OptimizeSettings:
    get = st.session_state.get
    return OptimizeSettings(
        test_share=float(get(Judge.IMPROVE_TEST_SHARE) or 0.4),
        split_seed=int(get(Judge.IMPROVE_SEED) or 0),
        budget_usd=_optional(float(get(Judge.IMPROVE_BUDGET) or 0.0)),
        max_requests=_optional(int(get(Judge.IMPROVE_MAX_REQUESTS) or 0)),
        margin=float(get(Judge.IMPROVE_MARGIN) or 0.0),
        fewshot_candidates=int(get(Judge.IMPROVE_FEWSHOT, 6)),
        rewrites=int(get(Judge.IMPROVE_REWRITES, 3)),
        finalists=int(get(Judge.IMPROVE_FINALISTS) or 3),
    )


def _estimate(
    ctx: Context,
    criterion_id: int,
    version_id: int,
    model: str,
    optimizer_model: str,
    settings: OptimizeSettings,
    manual: list[int],
) -> None:
    estimate = _try(
        lambda: runs.estimate_optimization(
            ctx.store,
            dataset_id=ctx.dataset.id,  # type: ignore[union-attr]
            criterion_id=criterion_id,
            template_version_id=version_id,
            model=model,
            optimizer_model=optimizer_model,
            settings=settings,
            manual_version_ids=manual,
        ),
        title="No estimate",
    )
    if estimate is None:
        return
    st.markdown(f"**Estimate** (at most), on {plural(estimate.labelled, 'labelled item')}:")
    e1, e2, e3 = st.columns(3)
    e1.metric("Requests", f"{estimate.requests:,}")
    e2.metric(
        "Tokens (in + out)",
        f"{estimate.tokens_in + estimate.tokens_out:,}",
        help=f"in ≈ {estimate.tokens_in:,}, out ≈ {estimate.tokens_out:,}",
    )
    e3.metric("Cost", _money(estimate.cost))
    if estimate.cost is None:
        st.caption("A model has no price: add one on the Settings page to cap by cost.")


# --- jobs ----------------------------------------------------------------------------------------


def _job_label(job: ImproveJobRecord) -> str:
    # no status here: the picker's labels are not redrawn while a job's progress is polled
    return f"#{job.id} · {job.created_at:%Y-%m-%d %H:%M} · {job.author}"


def _jobs(ctx: Context) -> None:
    assert ctx.dataset is not None
    jobs = ctx.store.list_improve_jobs(ctx.dataset.id)
    if not jobs:
        return
    st.subheader("Optimisations")
    by_id = {j.id: j for j in jobs}
    job_id = _picker(
        st,
        "Optimisation",
        list(by_id),
        key=Judge.IMPROVE_JOB,
        default=jobs[0].id,
        format_func=lambda i: _job_label(by_id[i]),
    )
    live = not by_id[job_id].is_terminal
    st.fragment(_job_body, run_every=POLL_S if live else None)(ctx, job_id, live)


def _job_body(ctx: Context, job_id: int, live: bool) -> None:
    assert ctx.dataset is not None
    job = ctx.store.get_improve_job(ctx.dataset.id, job_id)
    if live and job.is_terminal:
        st.rerun(scope="app")  # it has ended: draw once more, without the timer
    p = job.progress
    done, total = int(p.get("done") or 0), int(p.get("total") or 0)
    phase = PHASES.get(str(p.get("phase")), str(p.get("phase") or "waiting to start"))
    line = job.status if job.is_terminal else f"{phase} · {job.status}"
    st.progress(
        1.0 if job.status == "done" else min(1.0, done / total) if total else 0.0, text=line
    )
    c1, c2, c3 = st.columns(3)
    c1.metric("Steps", f"{done} / {total}" if total else "–")
    c2.metric("Requests", f"{int(p.get('requests') or 0):,}")
    c3.metric("Cost so far", _money(p.get("cost")))
    if job.error:
        st.error(md_escape(job.error), icon=":material/error:")
    if job.status == "cancelling":
        st.info("Stopping: what is done is kept.")
    elif not job.is_terminal:
        if st.button("Cancel", key=Judge.IMPROVE_CANCEL):
            get_worker().cancel_improve(job.dataset_id, job.id)
            st.info("Cancel requested.")
    elif job.status in ("cancelled", "failed") and st.button(
        "Start again",
        key=Judge.IMPROVE_RESTART,
        help="The replies already made come from the cache",
    ):
        new = _try(
            lambda: runs.restart_optimization(
                ctx.store, job.dataset_id, job.id, author=ctx.who.name, worker=get_worker()
            ),
            title="The optimisation was not started",
        )
        if new is not None:
            _goto(improve_job=new)
    if job.report is not None:
        _report(ctx, job)


def _interval(pair: Any) -> str:
    if not pair:
        return "–"
    return f"[{fmt(pair[0])}, {fmt(pair[1])}]"


def _metric_name(key: str) -> str:
    try:
        return metric_def(key).name
    except EvalcoreError:
        return key


def _report(ctx: Context, job: ImproveJobRecord) -> None:
    report = job.report or {}
    split = report.get("split") or {}
    metric = _metric_name(str(report.get("metric") or ""))
    stopped = report.get("stopped")
    st.markdown(
        f"Split **{md_escape(split.get('name', ''))}**: {len(split.get('dev') or [])} dev · "
        f"{len(split.get('test') or [])} test items · {plural(int(report.get('requests') or 0), 'request')}"
        f" · {_money(report.get('cost'))}"
    )
    if stopped == "budget":
        st.warning("Stopped at the budget: the comparison covers what was done before it.")
    elif stopped == "cancelled":
        st.warning("Cancelled: the comparison covers what was done before the cancel.")
    start = report.get("start") or {}
    rows = []
    for c in [start, *(report.get("candidates") or [])]:
        if not c:
            continue
        dev = c.get("dev") or {}
        rows.append(
            {
                "candidate": str(c.get("id", "")),
                "kind": str(c.get("kind", "")),
                f"{metric} (dev)": dev.get(str(report.get("metric") or "")),
                "95% interval": _interval(c.get("dev_interval")),
                "examples": len(c.get("examples") or []),
                "coverage": c.get("coverage"),
                "requests": c.get("requests"),
                "note": str(c.get("note") or ""),
            }
        )
    st.markdown("**Candidates on dev**")
    st.dataframe(pd.DataFrame(rows), hide_index=True, key=Judge.IMPROVE_CANDIDATES)
    finalists = [f for f in [report.get("start_test"), *(report.get("finalists") or [])] if f]
    if not finalists:
        return
    test_rows = [
        {
            "candidate": str(f.get("id", "")),
            "kind": str(f.get("kind", "")),
            f"{metric} (test)": f.get("test"),
            "95% interval": _interval(f.get("test_interval")),
            "difference": f.get("difference"),
            "difference interval": _interval(f.get("difference_interval")),
            "McNemar p": f.get("mcnemar_p"),
            "beats start": bool(f.get("beats_start")),
        }
        for f in finalists
    ]
    st.markdown(f"**On test**, against the start · human ceiling: {fmt(report.get('ceiling'))}")
    st.dataframe(pd.DataFrame(test_rows), hide_index=True, key=Judge.IMPROVE_TEST)
    winners = [f for f in report.get("finalists") or [] if f.get("beats_start")]
    if not winners:
        st.info("No candidate beat the starting version on test, so none is offered for saving.")
        return
    if job.status != "done":
        return
    for f in winners:
        candidate_id = str(f.get("id", ""))
        if st.button(
            f"Save {candidate_id} as a new version",
            key=state.key(Judge.IMPROVE_SAVE, candidate_id),
            type="primary",
        ):
            saved = _try(
                lambda cid=candidate_id: runs.save_optimized_version(  # type: ignore[misc]
                    ctx.store,
                    job.dataset_id,
                    job.id,
                    cid,
                    author=ctx.who.name,
                    secrets=get_worker().secrets,
                ),
                title="The candidate was not saved",
            )
            if saved is not None:
                _flash(f"Saved {candidate_id} as version {saved.number}.")
                _goto(section="Editor", template=saved.template_id, version=saved.id)
