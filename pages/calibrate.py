"""Calibrate: judge runs against humans, side by side.

Two sources, one engine: the project's datasets and judge runs (``ui/calibrate_view.py``), and a
file upload (any layout evalcore.data reads) for a quick look that saves nothing
(``ui/calibrate_upload.py``). Both render what :mod:`evalcore.workflows.calibrate` returns.
"""

from __future__ import annotations

import streamlit as st

from ui.calibrate_upload import upload_mode
from ui.calibrate_view import project_mode
from ui.identity import require
from ui.state import Calibrate as K

session, visitor = require("calibrate")
st.title("Calibrate")
mode = st.segmented_control("Source", ["Project", "Upload a file"], default="Project", key=K.MODE,
                            label_visibility="collapsed")  # fmt: skip
if mode == "Upload a file" or visitor.project is None:
    upload_mode(session)
else:
    project_mode(session, visitor.project.id)
