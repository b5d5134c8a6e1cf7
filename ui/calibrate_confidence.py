"""The Calibrate page's "Trust or escalate" section: is the judge's confidence calibrated, which
items can it decide alone, escalate the rest to people, and what to label next. Widgets only: every
number, rule and bound comes from evalcore.workflows.confidence."""

from __future__ import annotations

from typing import Any

import streamlit as st

from evalcore.workflows import Session
from evalcore.workflows import confidence as flow
from evalcore.workflows.calibrate import Selection
from ui.render import md_escape
from ui.state import Calibrate as K
from ui.widgets import attempt, callback, choose, note, show_note

_CHART = {"displaylogo": False}


def _number(where: Any, name: str, key: str) -> Any:
    """A number input with the library's default, bounds and step for setting ``name``."""
    s = flow.SETTINGS[name]
    whole = s.step == 1
    cast = int if whole else float
    if st.session_state.get(key) is None:
        st.session_state[key] = cast(s.default)
    return where.number_input(
        s.label.capitalize(),
        min_value=cast(s.low),
        max_value=cast(s.high),
        step=cast(s.step),
        key=key,
        help=s.help,
    )


@callback
def _escalate(
    session: Session, project_id: int, sel: Selection, run_id: int, settings: Any
) -> None:
    done = flow.escalate(
        session, project_id, sel.dataset_id, sel.criterion_id, run_id, settings=settings
    )
    note("success", done.sentence(), key=K.TRUST_NOTE)


@callback
def _queue(
    session: Session,
    project_id: int,
    sel: Selection,
    run_id: int,
    n: int,
    metric: str,
    settings: Any,
) -> None:
    count = flow.queue_label_next(
        session, project_id, sel.dataset_id, sel.criterion_id, run_id,
        n=n, metric=metric, settings=settings,
    )  # fmt: skip
    note(
        "success",
        f"{count} items are now first in the annotation queue; annotators see them, not why.",
        key=K.TRUST_NOTE,
    )


def _summary(run: flow.RunTrust) -> None:
    s = run.summary
    if s is None:
        return
    c1, c2, c3 = st.columns(3)
    c1.metric("ECE", f"{s.ece:.3f}", help=(
        f"top-label expected calibration error over {s.reliability.n_bins} equal-width bins: "
        "the items' weighted mean gap between confidence and agreement (0 is best)"))  # fmt: skip
    c2.metric(f"Brier ({s.brier_kind})", f"{s.brier:.3f}", help=(
        "mean squared gap between the confidence and agreeing with people (0 is best, 1 worst)"
        if s.brier_kind == "top-label"
        else "mean squared error over every label's probability (0 is best, 2 worst)"))  # fmt: skip
    c3.metric("Mean confidence / agreement", f"{s.mean_confidence:.2f} / {s.agreement:.2f}",
              help=f"over the {s.n} items with a human label, a verdict and a confidence")  # fmt: skip


def _label_next(session: Session, project_id: int, sel: Selection, run: flow.RunTrust,
                view: flow.ConfidenceView, kind: str) -> None:  # fmt: skip
    st.markdown("##### What to label next")
    metrics = flow.label_metrics(kind)
    c1, c2 = st.columns(2)
    n = _number(c1, "n", K.NEXT_N)
    choose(K.NEXT_METRIC, list(metrics), next(iter(metrics)))
    metric = c2.selectbox("Metric to narrow", list(metrics), format_func=metrics.get,
                          key=K.NEXT_METRIC)  # fmt: skip
    found = attempt(
        lambda: flow.label_next(
            session, project_id, sel.dataset_id, sel.criterion_id, run.run_id,
            n=int(n), metric=metric, settings=view.settings,
        ),
        title="No proposal",
    )  # fmt: skip
    if found is None:
        return
    said = found.sentence[:1].upper() + found.sentence[1:]
    st.markdown(f"**{md_escape(said)}** (simulated from the current "
                "labels; percentile bootstrap interval; no item of the test part).")  # fmt: skip
    st.caption("Proposed items: " + md_escape(", ".join(found.item_ids[:30]))
               + (" …" if len(found.item_ids) > 30 else ""))  # fmt: skip
    if view.may_manage and found.item_pks:
        st.button(
            "Queue these for annotators",
            key=K.NEXT_QUEUE,
            on_click=_queue,
            args=(session, project_id, sel, run.run_id, int(n), metric, view.settings),
        )


def confidence_section(session: Session, project_id: int, sel: Selection, kind: str) -> None:
    """The "Trust or escalate" section for the compared runs of ``sel``."""
    st.subheader("Trust or escalate")
    show_note(K.TRUST_NOTE)
    c1, c2, c3 = st.columns([2, 1, 1])
    target = _number(c2, "target_agreement", K.TRUST_TARGET)
    risk = _number(c3, "risk", K.TRUST_RISK)
    view = attempt(
        lambda: flow.confidence(
            session, project_id, sel.dataset_id, sel.criterion_id, sel.runs,
            target_agreement=float(target), risk=float(risk),
        ),
        title="No confidence view",
    )  # fmt: skip
    if view is None or not view.runs:
        return
    titles = {r.run_id: r.title for r in view.runs}
    known = [r.run_id for r in view.runs if r.missing is None]
    choose(K.TRUST_RUN, list(titles), known[0] if known else view.runs[0].run_id)
    run_id = c1.selectbox("Run", list(titles), format_func=titles.get, key=K.TRUST_RUN)
    run = view.run(run_id)
    if run.missing is not None:
        st.info(md_escape(f"{run.title}: {run.missing}."))
    else:
        _trust(session, project_id, sel, run, view)
    _label_next(session, project_id, sel, run, view, kind)


def _trust(session: Session, project_id: int, sel: Selection, run: flow.RunTrust,
           view: flow.ConfidenceView) -> None:  # fmt: skip
    if run.sentence is not None:
        st.markdown(f"### {md_escape(run.sentence)}")
        st.caption(md_escape(
            f"Threshold chosen on dev: the lowest confidence whose one-sided Clopper–Pearson lower "
            f"bound (risk {view.settings.risk:g}) of the agreement reaches the target, tried from "
            f"the highest down. Coverage and agreement measured on test (Wilson 95% interval). "
            f"{view.split[:1].upper()}{view.split[1:]}."))  # fmt: skip
    for text in run.notes:
        st.caption(md_escape(text))
    _summary(run)
    left, right = st.columns(2)
    left.plotly_chart(run.reliability, key=K.TRUST_RELIABILITY, config=_CHART)
    if run.coverage is not None:
        right.plotly_chart(run.coverage, key=K.TRUST_COVERAGE, config=_CHART)
    if view.may_manage and run.threshold is not None and run.to_escalate:
        st.button(
            f"Escalate the other {run.to_escalate} items to people",
            key=K.TRUST_ESCALATE,
            type="primary",
            on_click=_escalate,
            args=(session, project_id, sel, run.run_id, view.settings),
            help="Puts the unlabelled items below the threshold, and those the judge could not "
            "decide, first in the annotation queue, least confident first.",
        )
