"""Judge: edit judge templates, try them on a few items, run them in the background, read the results;
the catalogue of built-in metrics, each of which can be copied into the project or run; and Improve,
which searches for a better version of a template from the human labels.

Thin: the sections live in ``ui/judge_*.py`` and call ``evalcore.workflows.judge`` and ``improve``.
"""

from __future__ import annotations

import streamlit as st

from ui import judge_view as view
from ui.identity import project_or_stop, require
from ui.judge_editor import editor_section
from ui.judge_improve import improve_section
from ui.judge_metrics import metrics_section
from ui.judge_runs import runs_section
from ui.state import Judge
from ui.widgets import apply_goto

session, visitor = require("judge")
project = project_or_stop(visitor)
apply_goto(Judge)

st.title("Judge")
ctx = view.context_bar(session, project.id)
section = view.section_picker()
if section == "Runs":
    runs_section(ctx)
elif section == "Metrics":
    metrics_section(ctx)
elif section == "Improve":
    improve_section(ctx)
else:
    editor_section(ctx)
