"""The dashboard's HTTP server pieces, used by ``ui/launch.py`` (what ``evalcore serve`` runs).

Streamlit treats a ``pages/`` folder beside the main script as a legacy multipage app until the main
script has called ``st.navigation`` once in the process. Until then a deep link such as
``/calibrate`` would run the page script without the router. Pages check the caller themselves, but
starting in router mode from the first request keeps the app consistent: :func:`use_router_mode`
sets the class attribute Streamlit itself sets on the first ``st.navigation`` call, and
``tests/test_serve.py`` fails loudly when a Streamlit release renames it or stops consulting it.
"""

from __future__ import annotations


def use_router_mode() -> None:
    """Run every request through ``app.py``'s ``st.navigation``, from the first one on."""
    from streamlit.runtime.pages_manager import PagesManager

    if not hasattr(PagesManager, "uses_pages_directory"):  # pragma: no cover - a new Streamlit
        raise RuntimeError(
            "this Streamlit release has no PagesManager.uses_pages_directory; rename pages/ so "
            "that Streamlit does not see a legacy pages folder (see ui/serving.py)"
        )
    PagesManager.uses_pages_directory = False
