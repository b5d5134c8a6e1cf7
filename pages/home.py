"""Home: where to start, for each role (an annotator sees their own queues, nothing else)."""

from __future__ import annotations

import streamlit as st

from ui import access, state
from ui.identity import require
from ui.render import md_escape, show_text
from ui.resources import get_store, require_project

who = require("home")
store = get_store()
project = require_project()

st.title(md_escape(project.name))
if project.description:
    show_text(project.description, formatted=True)

datasets = store.list_datasets(project.id, latest_only=True)
criteria = store.list_criteria(project.id)

if not who.can("read", project.id):  # an annotator: their own queues only
    st.subheader("Your queues")
    shown = False
    for dataset in datasets:
        for criterion in criteria:
            if criterion.kind != dataset.kind:
                continue
            status = store.queue_status(dataset.id, criterion.id, who.name)
            shown = True
            c1, c2 = st.columns([3, 1])
            total = status.total or dataset.n_items
            c1.markdown(f"**{md_escape(criterion.name)}** on *{md_escape(dataset.name)}*")
            c1.progress(
                status.done / total if total else 0.0, text=f"{status.done} of {total} rated"
            )
            if c2.button(
                "Rate", key=state.key(state.Home.RATE, dataset.id, criterion.id), type="primary"
            ):
                st.session_state[state.Annotate.DATASET] = dataset.id
                st.session_state[state.Annotate.CRITERION] = criterion.id
                st.switch_page("pages/annotate.py")
    if not shown:
        st.info("Nothing to rate yet.")
    st.stop()

c1, c2, c3 = st.columns(3)
c1.metric("Datasets", len(datasets))
c2.metric("Criteria", len(criteria))
c3.metric("Judge runs", len(store.list_runs(project_id=project.id)))
st.subheader("Criteria")
for criterion in criteria:
    st.markdown(
        f"- **{md_escape(criterion.name)}** ({criterion.kind}, labels: "
        f"{md_escape(', '.join(criterion.scale.display_labels))})"
    )
st.subheader("Start")
if who.can("manage", project.id):
    st.page_link(
        "pages/calibrate.py",
        label="Compare judge versions with people",
        icon=":material/balance:",
    )
    st.page_link("pages/judge.py", label="Edit and run judge templates", icon=":material/gavel:")
    st.page_link("pages/datasets.py", label="Upload a dataset", icon=":material/upload_file:")
st.page_link("pages/reports.py", label="Read the calibration report", icon=":material/summarize:")
if access.may_open(who, "annotate", project.id):
    st.page_link("pages/annotate.py", label="Rate items yourself", icon=":material/edit_note:")
