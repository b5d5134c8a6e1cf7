"""Settings: the project's thresholds and annotators per item, the endpoints judges are sent to (with
the name of the variable holding each API key, never a key), and the model price table.

Thin: the parts live in ``ui/settings_view.py``, over ``evalcore.workflows.settings``.
"""

from __future__ import annotations

import streamlit as st

from ui.identity import project_or_stop, require
from ui.settings_view import settings_page

session, visitor = require("settings")
project = project_or_stop(visitor)
st.title("Settings")
settings_page(session, project.id)
