"""Judge: edit judge templates, try them on a few items, run them in the background, read the results;
and the catalogue of built-in metrics, each of which can be copied into the project or run.

Thin: the parts live in ``ui/judge_view.py`` and call ``evalcore.runs``.
"""

from __future__ import annotations

import streamlit as st

from ui import judge_view as view
from ui.identity import require
from ui.judge_improve import improve_section
from ui.resources import require_project

who = require("judge")
project = require_project()
view.apply_goto()

st.title("Judge")
ctx = view.context_bar(project, who)
section = view.section_picker()
if section == "Runs":
    view.runs_section(ctx)
elif section == "Metrics":
    view.metrics_section(ctx)
elif section == "Improve":
    improve_section(ctx)
else:
    view.editor_section(ctx)
