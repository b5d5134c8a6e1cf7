"""The dashboard's server: what ``evalcore serve`` runs (``python -m streamlit run ui/launch.py``).

It builds the ASGI app around ``app.py`` (Streamlit's ``st.App``) with the server's own routes and
middleware (``ui/serving.py``: the Host check and the session cookie), and switches Streamlit's
legacy multipage mode off before the first request.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # app.py imports ui.*: the dashboard's folder must be importable
    sys.path.insert(0, str(ROOT))

from ui.serving import ROUTES, HostCheck, use_router_mode  # noqa: E402

use_router_mode()

app = st.App(ROOT / "app.py", routes=ROUTES, middleware=[Middleware(HostCheck)])
