"""Admin: the server's users and their project memberships, OIDC role rules, the API-key variable
names and endpoint hosts allowed, and the audit log. For server administrators only.

Thin: the parts live in ``ui/admin_view.py``, over ``evalcore.workflows.admin``.
"""

from __future__ import annotations

import streamlit as st

from ui.admin_view import admin_page
from ui.identity import require

session, visitor = require("admin")
st.title("Admin")
admin_page(session)
