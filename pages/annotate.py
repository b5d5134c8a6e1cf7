"""Annotate: rate one item at a time, blind, by keyboard; every label is saved as it is given.

The queue (dataset and criterion) comes from the Home page or the URL; the rating area is a fragment
that reads one item of the annotator's queue per run (see ui.annotate_view).
"""

from __future__ import annotations

import streamlit as st

from ui.annotate_view import choose_queue, open_queue, rating_area, show_rubric
from ui.identity import require
from ui.resources import get_store, require_project

who = require("annotate")
store = get_store()
project = require_project()

st.title("Annotate")
dataset, criterion = choose_queue(store, project, who.name)
show_rubric(criterion)
open_queue(store, dataset, criterion, who.name)
rating_area(dataset, criterion, who.name)
