"""Datasets: upload and map files, criteria, label import, agreement between annotators, export.

For those who manage the project's data (engineers and admins); the Project tab (annotators per
item, new projects) is a project admin's. The sections live in ``ui/datasets_view.py``, over
``evalcore.workflows.datasets``; only the open tab runs.
"""

from __future__ import annotations

import streamlit as st

from ui.datasets_view import datasets_page, new_project_form
from ui.identity import require
from ui.widgets import show_note

session, visitor = require("datasets")
st.title("Datasets")
show_note()
if visitor.project is None:  # only an admin gets here without a project
    st.info("There is no project yet. Create one to start.")
    new_project_form(session)
    st.stop()
datasets_page(session, visitor.project.id)
