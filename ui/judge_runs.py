"""The Judge page's runs: the list, the chosen run's progress and actions, its results.

While a run is going the section is a fragment redrawn every ``POLL_S`` from the store (the run
itself goes on in the server's worker, whoever looks)."""

from __future__ import annotations

import streamlit as st

from evalcore.labels import format_label
from evalcore.words import plural
from evalcore.workflows import judge as flow
from evalcore.workflows.judge import Results, RunView
from ui.judge_view import POLL_S, Ctx
from ui.render import code_span, md_escape, show_text
from ui.state import Judge
from ui.widgets import attempt, duration, flash, fragment, goto, money, picker


def runs_section(ctx: Ctx) -> None:
    found = flow.runs_overview(ctx.session, ctx.project_id)
    if not found.runs:
        st.info("No runs yet. Start one from the Editor or the Metrics section.")
        return
    # while a run is going the whole section (list, progress, results) is redrawn every POLL_S
    fragment(_runs_body, run_every=POLL_S if found.live else None)(ctx, found.live)


def _runs_body(ctx: Ctx, live: bool) -> None:
    found = flow.runs_overview(ctx.session, ctx.project_id)
    if live and not found.live:
        st.rerun(scope="app")  # the last run has finished: draw once more, without the timer
    st.dataframe(
        found.table, hide_index=True, key=Judge.RUNS_TABLE,
        column_config={"cost": st.column_config.NumberColumn(format="$%.4f")},
    )  # fmt: skip
    if found.workers is not None:
        st.caption(f"{plural(len(found.workers), 'worker')} alive: they carry out the runs")
        if found.workers.empty:
            st.warning("No worker is alive: queued runs wait. Start one with `evalcore worker`.")
        else:
            st.dataframe(found.workers, hide_index=True)
    ids = [r.id for r in found.runs]
    run_id = picker(st, "Run", ids, key=Judge.RUN, default=ids[0], format_func=found.label)
    view = flow.run_view(ctx.session, run_id)
    _progress(view)
    _actions(ctx, view)
    _results(ctx, view)


def _progress(view: RunView) -> None:
    snap, p = view.snapshot, view.snapshot.progress
    st.progress(snap.fraction, text=view.progress_text)
    c1, c2, c3, c4, c5 = st.columns(5)
    c1.metric("Done", f"{p.finished} / {p.planned}")
    c2.metric("Rate", "–" if snap.rate is None else f"{snap.rate:.1f}/s")
    c3.metric("Time left", duration(snap.eta_s) if snap.is_active else "–")
    c4.metric("Failed · unparsed", f"{p.failed} · {p.unparsed}")
    c5.metric("Cost so far", money(p.cost))
    if view.batch:
        st.caption(f"Batch mode: {view.batch}")
    if view.error:
        st.error(md_escape(view.error), icon=":material/error:")


def _actions(ctx: Ctx, view: RunView) -> None:
    """Cancel a run that is going on; resume one that stopped before its end."""
    run_id = view.run.id
    if view.stopping:
        st.info("Stopping: requests in flight may still finish.")
    elif view.can_cancel:
        if st.button("Cancel run", key=Judge.CANCEL):
            flow.cancel_run(ctx.session, run_id)
            st.info("Cancel requested.")
    elif view.can_resume and st.button(
        "Resume", key=Judge.RESUME, help="Go on with the items not judged yet"
    ):
        resumed = attempt(lambda: flow.resume_run(ctx.session, run_id), title="Not resumed")
        if resumed is not None:
            st.rerun()


def _results(ctx: Ctx, view: RunView) -> None:
    st.subheader("Results")
    choice = st.segmented_control(
        "Show", list(flow.RESULT_FILTERS), key=Judge.FILTER, persist_state="session",
        default="All", required=True,
    )  # fmt: skip
    found = flow.results(ctx.session, view.run.id, str(choice or "All"))
    st.caption(found.caption)
    st.dataframe(
        found.table, hide_index=True, key=Judge.RESULTS_TABLE,
        column_config={
            "raw": st.column_config.TextColumn(width="large"),
            "reason": st.column_config.TextColumn(width="medium"),
        },
    )  # fmt: skip
    c1, c2 = st.columns([1, 3])
    if view.failed and c1.button(f"Re-run {view.failed} failed", key=Judge.RERUN):
        new = attempt(
            lambda: flow.rerun_failed(ctx.session, view.run.id, endpoint_id=ctx.endpoint_id),
            title="The failed items were not re-run",
        )
        if new is not None:
            flash(
                f"Started run #{new.id} over {plural(new.n_planned, 'failed item')}.",
                key=Judge.FLASH,
            )
            goto(Judge, run=new.id)
    if found.rows:
        c2.download_button(
            "Download results (CSV)", found.csv(), file_name=f"run-{view.run.id}.csv",
            mime="text/csv", key=Judge.DOWNLOAD,
        )  # fmt: skip
        _inspect(found)


def _inspect(found: Results) -> None:
    keys = [r.key for r in found.rows]
    picked = picker(st, "Inspect an item: raw reply, reason and intermediates", keys,
                    key=Judge.INSPECT, default=keys[0])  # fmt: skip
    row = found.rows[keys.index(picked)]
    st.markdown(f"**{md_escape(row.status)}** · label {code_span(format_label(row.label))}")
    if row.reason:
        st.markdown("Reason:")
        show_text(row.reason)
    if row.error:
        st.error(md_escape(row.error), icon=":material/error:")
    st.code(row.raw, language=None, wrap_lines=True)
    if row.details:
        st.json(dict(row.details))
