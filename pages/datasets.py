"""Datasets: upload and map files, criteria, label import, agreement between annotators, export.

Prompt engineers change things here; managers may look (datasets, criteria, agreement, export).
The sections live in ui.datasets_view; only the open tab runs.
"""

from __future__ import annotations

import streamlit as st

from ui import datasets_view as view
from ui import state
from ui.resources import current_project, get_store

who = state.require_role("engineer", "manager")
editable = who.role == "engineer"
store = get_store()
project = current_project(sidebar=False)

st.title("Datasets")
view.show_notice()
if project is None:
    if not editable:
        st.info("There is no project yet. A prompt engineer creates one here.")
        st.stop()
    st.info("There is no project yet. Create one to start.")
    view.new_project_form()
    st.stop()

sections = {
    "Datasets": lambda: view.datasets_section(store, project),
    "Upload": lambda: view.upload_section(store, project),
    "Criteria": lambda: view.criteria_section(store, project, editable=editable),
    "Labels": lambda: view.labels_section(store, project),
    "Agreement": lambda: view.agreement_section(store, project),
    "Export": lambda: view.export_section(store, project),
    "Project": lambda: view.project_section(store, project),
}
names = list(sections) if editable else ["Datasets", "Criteria", "Agreement", "Export"]
for name, tab in zip(names, st.tabs(names, key=state.Datasets.TAB, on_change="rerun"), strict=True):
    if tab.open:
        with tab:
            sections[name]()
