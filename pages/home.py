"""Home: where to start, for each role (an annotator sees their own queues, nothing else)."""

from __future__ import annotations

import streamlit as st

from evalcore.workflows import home
from ui import state
from ui.identity import project_or_stop, require
from ui.render import badge, md_escape, show_text

session, visitor = require("home")
project = project_or_stop(visitor)
view = home.overview(session, project.id)

st.title(md_escape(project.name))
if project.description:
    show_text(project.description, formatted=True)

if not view.can_read:  # an annotator: their own queues only
    st.subheader("Your queues")
    for card in view.queues:
        c1, c2 = st.columns([3, 1])
        c1.markdown(f"**{md_escape(card.criterion.name)}** on *{md_escape(card.dataset.name)}*")
        c1.progress(card.share, text=f"{card.done} of {card.total} rated")
        if c2.button(
            "Rate",
            key=state.key(state.Home.RATE, card.dataset.id, card.criterion.id),
            type="primary",
        ):
            st.session_state[state.Annotate.DATASET] = card.dataset.id
            st.session_state[state.Annotate.CRITERION] = card.criterion.id
            st.switch_page("pages/annotate.py")
    if not view.queues:
        st.info("Nothing to rate yet.")
    st.stop()

steps = home.first_steps(session, project.id)
st.subheader("First steps" if steps else "Can I trust this judge?")
for step in steps:  # a page named only where the caller may open it
    page = f" (page: {step.page.capitalize()})" if step.page else " (someone with access does it)"
    st.markdown(f"{step.number}. {step.text}{page}{' (done)' if step.done else ''}")
for answer in home.trust(session, project.id):
    st.markdown(f"**{md_escape(answer.criterion)}** {badge(answer.light, answer.line)}")
c1, c2, c3 = st.columns(3)
c1.metric("Datasets", len(view.datasets))
c2.metric("Criteria", len(view.criteria))
c3.metric("Judge runs", view.n_runs or 0)
st.subheader("Start")
if view.can_manage:
    st.page_link(
        "pages/calibrate.py", label="Compare judge versions with people", icon=":material/balance:"
    )
    st.page_link("pages/judge.py", label="Edit and run judge templates", icon=":material/gavel:")
    st.page_link("pages/datasets.py", label="Upload a dataset", icon=":material/upload_file:")
st.page_link("pages/reports.py", label="Read the calibration report", icon=":material/summarize:")
if "annotate" in visitor.pages:
    st.page_link("pages/annotate.py", label="Rate items yourself", icon=":material/edit_note:")
