"""Datasets: upload and map files, criteria, label import, agreement between annotators, export.

For those who manage the project's data (engineers and admins); the Project tab (annotators per
item, new projects) is an admin's. The sections live in ui.datasets_view; only the open tab runs.
"""

from __future__ import annotations

import streamlit as st

from ui import datasets_view as view
from ui import state
from ui.identity import require
from ui.resources import current_project, get_store

who = require("datasets")
store = get_store()
project = current_project(sidebar=False)

st.title("Datasets")
view.show_notice()
if project is None:  # only an admin gets here without a project
    st.info("There is no project yet. Create one to start.")
    view.new_project_form()
    st.stop()

sections = {
    "Datasets": lambda: view.datasets_section(store, project),
    "Upload": lambda: view.upload_section(store, project),
    "Criteria": lambda: view.criteria_section(store, project, editable=True),
    "Labels": lambda: view.labels_section(store, project),
    "Agreement": lambda: view.agreement_section(store, project),
    "Export": lambda: view.export_section(store, project),
    "Project": lambda: view.project_section(store, project),
}
names = [n for n in sections if n != "Project" or who.can("admin", project.id)]
for name, tab in zip(names, st.tabs(names, key=state.Datasets.TAB, on_change="rerun"), strict=True):
    if tab.open:
        with tab:
            sections[name]()
