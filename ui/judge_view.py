"""The Judge page's frame: the context bar (dataset, endpoint, model), the section picker and what
the sections share. The sections are ``ui.judge_editor``, ``ui.judge_runs``, ``ui.judge_metrics``
and ``ui.judge_improve``; everything they show comes from :mod:`evalcore.workflows.judge` and
:mod:`evalcore.workflows.improve`, and every action is one call there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import streamlit as st

from evalcore.words import plural
from evalcore.workflows import Session
from evalcore.workflows import judge as flow
from evalcore.workflows.judge import DatasetRecord, EndpointChoice, JudgeContext, Trial
from ui.render import md_escape
from ui.state import Judge
from ui.widgets import choose, note, picker, show_note

SECTIONS: Final = ("Editor", "Runs", "Metrics", "Improve")
NO_ENDPOINT: Final = 0
POLL_S: Final = 1.0  # how often a section is redrawn while a run or an optimisation is going
_KEY_COLOURS: Final = {"ok": "green", "error": "red"}


@dataclass(frozen=True)
class Ctx:
    """What every section works with: the caller's session, the project, the dataset, endpoint
    and model chosen in the context bar."""

    session: Session
    project_id: int
    context: JudgeContext
    dataset: DatasetRecord | None
    endpoint: EndpointChoice | None
    model: str

    @property
    def endpoint_id(self) -> int | None:
        return None if self.endpoint is None else self.endpoint.id


def goto(**values: Any) -> None:
    """Set widget values on the next run (before the widgets are drawn) and rerun now."""
    st.session_state[Judge.GOTO] = {getattr(Judge, k.upper(), k): v for k, v in values.items()}
    st.rerun()


def flash(message: str) -> None:
    """A success notice shown once, above the section, on the next run."""
    note("success", message, key=Judge.FLASH)


def apply_goto() -> None:
    """Apply values a previous run asked for; call before any widget of the page is drawn."""
    for key, value in (st.session_state.pop(Judge.GOTO, None) or {}).items():
        st.session_state[key] = value


def context_bar(session: Session, project_id: int) -> Ctx:
    """Dataset, endpoint and model pickers; for an admin, whether the endpoint's key is set."""
    found = flow.context(session, project_id)
    datasets = {d.id: d for d in found.datasets}
    c1, c2, c3 = st.columns([3, 2, 2])
    dataset = None
    if datasets:
        chosen = picker(
            c1, "Dataset", list(datasets), key=Judge.DATASET, default=next(iter(datasets)),
            format_func=lambda i: f"{datasets[i].name} (v{datasets[i].version} · "
            f"{datasets[i].kind} · {plural(datasets[i].n_items, 'item')})",
        )  # fmt: skip
        dataset = datasets[chosen]
    else:
        c1.info("This project has no dataset yet. Upload one on the Datasets page.")
    options = [*(e.id for e in found.endpoints), NO_ENDPOINT]
    picked = picker(
        c2, "Endpoint", options, key=Judge.ENDPOINT, default=options[0],
        help=md_escape(found.endpoint_help),
        format_func=lambda i: e.name if (e := found.endpoint(i)) else "(none)",
    )  # fmt: skip
    endpoint = found.endpoint(picked)
    if endpoint is not None and endpoint.key is not None:
        colour = _KEY_COLOURS.get(endpoint.key.level)
        c2.caption(f":{colour}[{endpoint.key.text}]" if colour else endpoint.key.text)
    model = c3.text_input(
        "Model",
        key=Judge.MODEL,
        placeholder="the template's default model",
        help="The model every try and run on this page uses. Empty: each template's (or built-in "
        "metric's) default model, else the endpoint's default. The estimate above a run names "
        "the model it will use.",
        persist_state="session",
    )
    return Ctx(session, project_id, found, dataset, endpoint, (model or "").strip())


def section_picker() -> str:
    choose(Judge.SECTION, SECTIONS, SECTIONS[0])
    section = st.segmented_control(
        "Section", SECTIONS, key=Judge.SECTION, persist_state="session", required=True,
        label_visibility="collapsed",
    )  # fmt: skip
    show_note(Judge.FLASH)
    return str(section or SECTIONS[0])


def show_trial(trial: Trial, *, key: str) -> None:
    """A try's results: the model, what it sent, the table and a pipeline's intermediates."""
    st.caption(
        f"Model {md_escape(trial.model or '(none)')} · {plural(trial.requests, 'request')} sent "
        "(cached replies cost none)"
    )
    st.dataframe(trial.table, hide_index=True, key=key)
    for item_id, details in trial.details:
        with st.expander(f"Details of item {md_escape(item_id)}"):
            st.json(dict(details))
