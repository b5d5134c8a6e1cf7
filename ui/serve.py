"""Start the dashboard: ``python -m ui.serve [streamlit options]`` (what ``make run`` does).

The server listens on 127.0.0.1 unless told otherwise. With no account in the database and no OIDC
in ``.streamlit/secrets.toml`` it serves one person (single-user mode), so it refuses to start on
any other address, and says how to add the first admin.

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
import os
import sys
from pathlib import Path

from evalcore.data import MAX_UPLOAD_ENV, max_upload_bytes
from evalcore.errors import ConfigError
from ui import access

APP = Path(__file__).resolve().parent.parent / "app.py"

#: Streamlit options this app runs with (options given on the command line come later and win).
#: No forced full garbage collection after every script run: with pandas, SQLAlchemy and plotly
#: loaded it holds the interpreter for a few hundred milliseconds after each key press on the
#: Annotate page, delaying the next item (Python's own incremental collection still runs).
#: Streamlit's info lines ("Uvicorn server started on …") stay out of a new user's first screen.
DEFAULT_OPTIONS = ["--runner.postScriptGC", "false", "--logger.level", "warning"]

#: Where the server listens when no address is given: this machine only. Another address needs an
#: account or OIDC first (:func:`start_check`).
LOOPBACK_ADDRESS = ["--server.address", "127.0.0.1"]

#: Where a browser should point when no address is given. Set, it also keeps Streamlit from looking
#: up the machine's public address (a request to the internet and a warning when that fails).
LOCAL_ADDRESS = ["--browser.serverAddress", "localhost"]

#: Streamlit reads the address from this variable too (the command line wins over it).
ADDRESS_ENV = "STREAMLIT_SERVER_ADDRESS"


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
        start_check(server_address(options))
    except ConfigError as exc:
        raise SystemExit(f"evalcore: {exc}") from None
    use_router_mode()
    sys.argv = ["streamlit", "run", str(APP), *options]
    cli.main()


def streamlit_options(argv: list[str]) -> list[str]:
    """This app's options, then ``argv`` (which wins). The server listens on 127.0.0.1 unless
    ``argv`` or ``STREAMLIT_SERVER_ADDRESS`` names an address (then :func:`start_check` decides).

    The upload limit is not among the options ``argv`` may set: it follows ``EVALCORE_MAX_UPLOAD_MB``
    (a :class:`~evalcore.errors.ConfigError` when ``argv`` names it or the variable is invalid).
    """
    if any(a.startswith("--server.maxUploadSize") for a in argv):
        raise ConfigError(
            f"--server.maxUploadSize is set from {MAX_UPLOAD_ENV}; set that variable instead"
        )
    listen = any(a.startswith("--server.address") for a in argv) or bool(
        os.environ.get(ADDRESS_ENV)
    )
    named = listen or any(a.startswith("--browser.serverAddress") for a in argv)
    return [
        *DEFAULT_OPTIONS,
        *upload_size_args(),
        *([] if listen else LOOPBACK_ADDRESS),
        *([] if named else LOCAL_ADDRESS),
        *argv,
    ]


def server_address(options: list[str]) -> str | None:
    """The address the server will listen on: the last ``--server.address`` of ``options``, else
    ``STREAMLIT_SERVER_ADDRESS``; ``None`` (every interface) when neither names one."""
    found = os.environ.get(ADDRESS_ENV) or None
    for index, option in enumerate(options):
        if option == "--server.address" and index + 1 < len(options):
            found = options[index + 1]
        elif option.startswith("--server.address="):
            found = option.split("=", 1)[1]
    return found


def start_check(address: str | None, database_url: str | None = None) -> None:
    """Refuse to start (``SystemExit``) on an address other machines reach while the database has
    no account and no OIDC is configured: anyone would be an admin. A bad
    ``EVALCORE_SESSION_IDLE_MINUTES`` is a :class:`ConfigError` here already, not in a page."""
    access.idle_minutes()
    if access.is_loopback(address):
        return
    if access.oidc_configured(access.file_secrets(access.secrets_files())):
        return
    from evalcore.store import DATABASE_URL_ENV, Store, default_database_url

    store = Store.open(database_url or os.environ.get(DATABASE_URL_ENV) or default_database_url())
    try:
        accounts = store.count_users()
    finally:
        store.close()
    refusal = access.start_refusal(address, accounts, oidc=False)
    if refusal is not None:
        raise SystemExit(f"evalcore: {refusal}")


if __name__ == "__main__":
    main()
