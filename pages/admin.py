"""Admin: the server's users and their project memberships, OIDC role rules, the API-key variable
names and endpoint hosts allowed, and the audit log. For server administrators only.

Thin: the parts live in ``ui/admin_view.py``.
"""

from __future__ import annotations

import streamlit as st

from ui import admin_view as view
from ui.identity import require
from ui.resources import get_store

who = require("admin")
st.title("Admin")
view.admin_page(get_store(), who.name)
