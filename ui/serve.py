"""Start the dashboard: ``python -m ui.serve [streamlit options]`` (what ``make run`` does).

Streamlit treats a ``pages/`` folder beside the main script as a legacy multipage app until the main
script has called ``st.navigation`` once in the process. Until then a deep link such as ``/calibrate``
would run the page script without the router (no page config, no role-filtered navigation). Pages
re-check the role themselves, but starting in router mode from the first request keeps the app
consistent, so this launcher switches the legacy mode off before the server starts.

Streamlit has no option for that: its supported way is an entry point without a ``pages/`` folder
beside it (renaming ``pages/``). Until the folder is renamed, :func:`use_router_mode` sets the class
attribute Streamlit itself sets on the first ``st.navigation`` call, and ``tests/test_serve.py``
fails loudly when a Streamlit release renames it or stops consulting it.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from evalcore.data import MAX_UPLOAD_ENV, max_upload_bytes
from evalcore.errors import ConfigError

APP = Path(__file__).resolve().parent.parent / "app.py"

#: Streamlit options this app runs with (options given on the command line come later and win).
#: No forced full garbage collection after every script run: with pandas, SQLAlchemy and plotly
#: loaded it holds the interpreter for a few hundred milliseconds after each key press on the
#: Annotate page, delaying the next item (Python's own incremental collection still runs).
#: Streamlit's info lines ("Uvicorn server started on …") stay out of a new user's first screen.
DEFAULT_OPTIONS = ["--runner.postScriptGC", "false", "--logger.level", "warning"]

#: Where a browser should point when no address is given. Set, it also keeps Streamlit from looking
#: up the machine's public address (a request to the internet and a warning when that fails).
LOCAL_ADDRESS = ["--browser.serverAddress", "localhost"]


def use_router_mode() -> None:
    """Run every request through ``app.py``'s ``st.navigation``, from the first one on."""
    from streamlit.runtime.pages_manager import PagesManager

    if not hasattr(PagesManager, "uses_pages_directory"):  # pragma: no cover - a new Streamlit
        raise RuntimeError(
            "this Streamlit release has no PagesManager.uses_pages_directory; rename pages/ so "
            "that Streamlit does not see a legacy pages folder (see ui/serve.py)"
        )
    PagesManager.uses_pages_directory = False


def local_server_args(port: int) -> list[str]:
    """Options for a headless server on ``127.0.0.1:port`` (benchmarks and browser tests)."""
    return [
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
    ]


def upload_size_args() -> list[str]:
    """Streamlit's upload limit, in whole megabytes, from ``EVALCORE_MAX_UPLOAD_MB``.

    Streamlit refuses an upload above ``server.maxUploadSize`` before evalcore sees it, and
    evalcore refuses files above :func:`evalcore.data.max_upload_bytes` with a message naming the
    file. Deriving the first from the second keeps them from disagreeing; Streamlit counts whole
    megabytes, so a fractional limit is rounded up and evalcore's own check decides the rest.
    """
    megabytes = max(1, math.ceil(max_upload_bytes() / (1024 * 1024)))
    return ["--server.maxUploadSize", str(megabytes)]


def main(argv: list[str] | None = None) -> None:
    from streamlit.web import cli

    try:
        options = streamlit_options(sys.argv[1:] if argv is None else argv)
    except ConfigError as exc:
        raise SystemExit(f"evalcore: {exc}") from None
    use_router_mode()
    sys.argv = ["streamlit", "run", str(APP), *options]
    cli.main()


def streamlit_options(argv: list[str]) -> list[str]:
    """This app's options, then ``argv`` (which wins); the local address unless ``argv`` names one.

    The upload limit is not among the options ``argv`` may set: it follows ``EVALCORE_MAX_UPLOAD_MB``
    (a :class:`~evalcore.errors.ConfigError` when ``argv`` names it or the variable is invalid).
    """
    if any(a.startswith("--server.maxUploadSize") for a in argv):
        raise ConfigError(
            f"--server.maxUploadSize is set from {MAX_UPLOAD_ENV}; set that variable instead"
        )
    named = any(a.startswith(("--server.address", "--browser.serverAddress")) for a in argv)
    return [*DEFAULT_OPTIONS, *upload_size_args(), *([] if named else LOCAL_ADDRESS), *argv]


if __name__ == "__main__":
    main()
