"""The Judge page's frame: the context bar (dataset, endpoint, model), the section picker and what
the sections share. The sections are ``ui.judge_editor``, ``ui.judge_runs``, ``ui.judge_metrics``
and ``ui.judge_improve``; everything they show comes from :mod:`evalcore.workflows.judge` and
:mod:`evalcore.workflows.improve`, and every action is one call there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import streamlit as st

from evalcore.workflows import Session
from evalcore.workflows import judge as flow
from evalcore.workflows.judge import DatasetRecord, EndpointChoice, JudgeContext
from ui.render import md_escape
from ui.state import Judge
from ui.widgets import choose, dataset_picker, picker, show_note

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


def context_bar(session: Session, project_id: int) -> Ctx:
    """Dataset, endpoint and model pickers; for an admin, whether the endpoint's key is set."""
    found = flow.context(session, project_id)
    c1, c2, c3 = st.columns([3, 2, 2])
    dataset = None
    if found.datasets:
        dataset = dataset_picker(c1, found.datasets, key=Judge.DATASET)
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
