"""evalcore dashboard: the router.

Page config, who the user is, and ``st.navigation`` over the pages that user's role may see. Everything
else lives in ``pages/`` (thin scripts), ``ui/`` (shared UI helpers) and the ``evalcore`` library.
Run it with ``make run`` (or ``streamlit run app.py``).
"""

from __future__ import annotations

import streamlit as st

from ui import state
from ui.icon import ICON
from ui.identity import identity_sidebar, sign_in_page
from ui.resources import current_project

# the tab icon is an image the app serves itself (a :material/ icon would be fetched from Google)
st.set_page_config(page_title="evalcore", page_icon=ICON, layout="wide")

PAGES = {
    "home": st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
    "annotate": st.Page("pages/annotate.py", title="Annotate", icon=":material/edit_note:"),
    "datasets": st.Page("pages/datasets.py", title="Datasets", icon=":material/table:"),
    "judge": st.Page("pages/judge.py", title="Judge", icon=":material/gavel:"),
    "calibrate": st.Page("pages/calibrate.py", title="Calibrate", icon=":material/balance:"),
    "reports": st.Page("pages/reports.py", title="Reports", icon=":material/summarize:"),
    "settings": st.Page("pages/settings.py", title="Settings", icon=":material/settings:"),
}

#: What each role may open. Pages re-check the role themselves (ui.state.require_role).
ROLE_PAGES: dict[state.Role, list[str]] = {
    "annotator": ["home", "annotate"],
    "engineer": ["home", "calibrate", "judge", "datasets", "annotate", "reports", "settings"],
    "manager": ["home", "reports", "calibrate", "datasets", "annotate", "settings"],
}

who = state.current_identity()
if who is None:
    page = st.navigation([st.Page(sign_in_page, title="Sign in", icon=":material/login:")])
else:
    identity_sidebar(who)
    current_project()
    page = st.navigation([PAGES[name] for name in ROLE_PAGES[who.role]])
page.run()
