"""evalcore dashboard: the router.

Page config, who the user is (asked of the workflow layer on every run), and ``st.navigation`` over
every page, listing those the user may open in the current project. Pages check again themselves
(``ui.identity.require``), so an address typed by hand is refused on the server. Start it with
``evalcore serve`` (``make run``).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from evalcore.errors import ConfigError, EvalcoreError, SessionEndedError
from evalcore.workflows import idle_minutes
from ui import identity, resources
from ui.icon import ICON
from ui.render import show_error
from ui.widgets import session_ended, show_note

# the tab icon is an image the app serves itself (a :material/ icon would be fetched from Google)
st.set_page_config(page_title="evalcore", page_icon=ICON, layout="wide")

#: Every page: (script, title, icon), in the order of evalcore.workflows.identity.PAGES.
PAGES: dict[str, tuple[str, str, str]] = {
    "home": ("pages/home.py", "Home", ":material/home:"),
    "annotate": ("pages/annotate.py", "Annotate", ":material/edit_note:"),
    "datasets": ("pages/datasets.py", "Datasets", ":material/table:"),
    "judge": ("pages/judge.py", "Judge", ":material/gavel:"),
    "calibrate": ("pages/calibrate.py", "Calibrate", ":material/balance:"),
    "reports": ("pages/reports.py", "Reports", ":material/summarize:"),
    "settings": ("pages/settings.py", "Settings", ":material/settings:"),
    "admin": ("pages/admin.py", "Admin", ":material/admin_panel_settings:"),
}


def _signing_in(refusal: str | None) -> Any:
    if refusal is not None:
        return st.navigation([st.Page(lambda: identity.refusal_page(refusal), title="evalcore")])
    # every page's address shows the form, and after the sign-in that page opens
    return st.navigation(
        [
            st.Page(identity.sign_in_page, title="Sign in", icon=":material/login:"),
            *(
                st.Page(identity.sign_in_page, title=title, url_path=name, visibility="hidden")
                for name, (_script, title, _icon) in PAGES.items()
                if name != "home"
            ),
        ]
    )


try:
    idle_minutes()  # a bad EVALCORE_SESSION_IDLE_MINUTES is said here, not in a page
    session = identity.current()
    visitor = None if session is None else identity.visit(session)
except ConfigError as exc:
    identity.config_error_page(exc)
    st.stop()
if visitor is None:
    page = _signing_in(resources.server().refusal())
else:
    page = st.navigation(
        [
            st.Page(
                script,
                title=title,
                icon=icon,
                default=name == "home",
                visibility="visible" if name in visitor.pages else "hidden",
            )
            for name, (script, title, icon) in PAGES.items()
        ]
    )
    identity.sidebar(visitor)
    show_note()
try:
    with identity.routed():
        page.run()
except SessionEndedError as exc:  # the session ended while the page ran: sign in again
    session_ended(exc)
    st.rerun()
except EvalcoreError as exc:  # a refused call (PermissionDeniedError) or any other typed failure
    show_error(exc)
