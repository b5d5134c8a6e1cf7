"""The dashboard's server: what ``evalcore serve`` runs (``python -m streamlit run ui/launch.py``).

It builds the ASGI app around ``app.py`` (Streamlit's ``st.App``), so that the server has routes and
middleware of its own (``ui/serving.py``), and switches Streamlit's legacy multipage mode off before
the first request.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # app.py imports ui.*: the dashboard's folder must be importable
    sys.path.insert(0, str(ROOT))

from ui.serving import use_router_mode  # noqa: E402

use_router_mode()

app = st.App(ROOT / "app.py")
