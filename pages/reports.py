"""Reports: which judges can be trusted for which criteria, with uncertainty, and the exports.

The views live in ``ui/reports_view.py``; the numbers come from :mod:`evalcore.report`.
"""

from __future__ import annotations

import streamlit as st

from ui.identity import require
from ui.render import md_escape
from ui.reports_view import reports_page
from ui.resources import get_store, require_project

require("reports")
project = require_project()
st.title("Reports")
st.caption(
    f"Project **{md_escape(project.name)}**: each criterion's best judge against its thresholds."
)
reports_page(get_store(), project)
