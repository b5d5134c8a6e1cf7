"""Settings: the project's thresholds and annotators per item, the endpoints judges are sent to (with the
name of the variable holding each API key, never a key), and the model price table.

Thin: the parts live in ``ui/settings_view.py`` and call ``evalcore.runs`` and the store.
"""

from __future__ import annotations

import streamlit as st

from ui import settings_view as view
from ui.identity import require
from ui.resources import require_project

require("settings")
project = require_project()

st.title("Settings")
view.settings_page(project)
