"""Reports: which judges can be trusted for which criteria, with uncertainty, and the exports.

The views live in ``ui/reports_view.py``; the numbers come from :mod:`evalcore.workflows.reports`.
"""

from __future__ import annotations

import streamlit as st

from ui.identity import project_or_stop, require
from ui.render import md_escape
from ui.reports_view import reports_page

session, visitor = require("reports")
project = project_or_stop(visitor)
st.title("Reports")
st.caption(
    f"Project **{md_escape(project.name)}**: each criterion's best judge against its thresholds."
)
reports_page(session, project.id)
