"""Annotate: rate one item at a time, blind, by keyboard; every label is saved as it is given.

The queue (dataset and criterion) comes from the Home page or the URL; the rating area is a fragment
that shows one item of the caller's queue per run (``ui.annotate_view``).
"""

from __future__ import annotations

import streamlit as st

from ui.annotate_view import choose_queue, open_queue, rating_area, show_rubric
from ui.identity import project_or_stop, require

session, visitor = require("annotate")
project = project_or_stop(visitor)

st.title("Annotate")
queues, dataset_id, criterion_id = choose_queue(session, project.id)
show_rubric(queues, criterion_id)
open_queue(session, (dataset_id, criterion_id))
kind = next(d.kind for d in queues.datasets if d.id == dataset_id)
rating_area(session, (dataset_id, criterion_id), kind)
