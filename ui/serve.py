"""Start the dashboard: ``python -m ui.serve [streamlit options]`` (what ``make run`` does).

Streamlit treats a ``pages/`` folder beside the main script as a legacy multipage app until the main
script has called ``st.navigation`` once in the process. Until then a deep link such as ``/calibrate``
would run the page script without the router (no page config, no role-filtered navigation). Pages
re-check the role themselves, but starting in router mode from the first request keeps the app
consistent, so this launcher switches the legacy mode off before the server starts.
"""

from __future__ import annotations

import sys
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app.py"

#: Streamlit options this app runs with (options given on the command line come later and win).
#: No forced full garbage collection after every script run: with pandas, SQLAlchemy and plotly
#: loaded it holds the interpreter for a few hundred milliseconds after each key press on the
#: Annotate page, delaying the next item (Python's own incremental collection still runs).
DEFAULT_OPTIONS = ["--runner.postScriptGC", "false"]


def main(argv: list[str] | None = None) -> None:
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.web import cli

    PagesManager.uses_pages_directory = False
    sys.argv = [
        "streamlit",
        "run",
        str(APP),
        *DEFAULT_OPTIONS,
        *(sys.argv[1:] if argv is None else argv),
    ]
    cli.main()


if __name__ == "__main__":
    main()
