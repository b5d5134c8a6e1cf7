"""evalcore dashboard: the router.

Page config, who the user is (reloaded from the database on every run, see ``ui.identity``), and
``st.navigation`` over every page, listing only those the user may open in the current project.
Pages check the same permission themselves, so an address typed by hand is refused on the server.
Run it with ``make run`` (or ``streamlit run app.py``).
"""

from __future__ import annotations

import streamlit as st

from evalcore.errors import ConfigError, EvalcoreError
from ui import access, identity
from ui.icon import ICON
from ui.render import show_error
from ui.resources import current_project, plain_store, routed

# the tab icon is an image the app serves itself (a :material/ icon would be fetched from Google)
st.set_page_config(page_title="evalcore", page_icon=ICON, layout="wide")

#: Every page: (script, title, icon); what each needs is ui.access.PAGE_NEEDS.
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

store = plain_store()
try:
    actor = identity.resolve(store)
except ConfigError as exc:  # EVALCORE_SESSION_IDLE_MINUTES is not a number of minutes
    identity.config_error_page(exc)
    st.stop()
if actor is None:
    refusal = identity.start_refusal(store)
    if refusal is not None:
        page = st.navigation([st.Page(lambda: identity.refusal_page(refusal), title="evalcore")])
    else:
        # every page's address shows the form, and after the sign-in that page opens
        page = st.navigation(
            [
                st.Page(identity.sign_in_page, title="Sign in", icon=":material/login:"),
                *(
                    st.Page(identity.sign_in_page, title=title, url_path=name, visibility="hidden")
                    for name, (_script, title, _icon) in PAGES.items()
                    if name != "home"
                ),
            ]
        )
else:
    project = current_project()
    identity.identity_sidebar(actor, None if project is None else project.id)
    shown = set(access.visible_pages(actor, None if project is None else project.id))
    # every page is registered, so its address reaches its own check and refusal
    page = st.navigation(
        [
            st.Page(
                script,
                title=title,
                icon=icon,
                default=name == "home",
                visibility="visible" if name in shown else "hidden",
            )
            for name, (script, title, icon) in PAGES.items()
        ]
    )
try:
    if actor is None:
        page.run()
    else:
        with routed(actor):
            page.run()
except EvalcoreError as exc:  # a refused call (PermissionDeniedError) or any other typed failure
    show_error(exc)
