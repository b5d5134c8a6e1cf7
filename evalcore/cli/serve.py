"""``evalcore serve``: start the dashboard, from an installed wheel or a checkout, from any folder.

The server listens on 127.0.0.1 unless ``--address`` names another address. With no account in the
database and no OIDC in ``.streamlit/secrets.toml`` it serves one person (single-user mode), so it
refuses any other address, and says how to add the first admin. The demo project is seeded into an
empty database (``EVALCORE_NO_DEMO=1`` starts empty).

Requests addressed to a host name the server must not answer are refused before the app runs: on a
loopback address only ``localhost``, ``127.0.0.1`` and ``[::1]`` are answered, unless
``EVALCORE_ALLOWED_HOSTS`` (or ``--allowed-host NAME``, repeatable) names the server's own names;
on another address without that setting any name is answered, and the command says so.

The dashboard (``app.py``, ``pages/``, ``ui/``) ships in the wheel as the package
``evalcore_dashboard``; in a checkout the same files are the repository's top level. This command
finds them, checks the settings, and replaces itself with Streamlit's server (``python -m streamlit
run``) on the dashboard's launcher: evalcore itself never imports streamlit.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import sys
from pathlib import Path
from typing import Any

from evalcore.errors import ConfigError

__all__ = ["dashboard_dir", "register", "streamlit_command"]

#: Streamlit options this app runs with (options after ``--`` come later and win). No forced full
#: garbage collection after every script run (with pandas, SQLAlchemy and plotly loaded it holds the
#: interpreter for a few hundred milliseconds after each key press on the Annotate page); Streamlit's
#: info lines stay out of a new user's first screen; no usage statistics are sent anywhere.
DEFAULT_OPTIONS = [
    "--runner.postScriptGC", "false",
    "--logger.level", "warning",
    "--browser.gatherUsageStats", "false",
    "--client.toolbarMode", "minimal",
    "--client.showErrorDetails", "none",
]  # fmt: skip
#: Streamlit reads the address from this variable too (the command line wins over it).
ADDRESS_ENV = "STREAMLIT_SERVER_ADDRESS"
DEFAULT_PORT = 8501


def dashboard_dir() -> Path:
    """Where ``app.py``, ``pages/`` and ``ui/`` are: the installed ``evalcore_dashboard`` package,
    or a checkout's top level (the folder above the ``evalcore`` package)."""
    spec = importlib.util.find_spec("evalcore_dashboard")
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    places.append(str(Path(__file__).resolve().parents[2]))
    for place in places:
        root = Path(place)
        if (root / "app.py").is_file() and (root / "ui" / "launch.py").is_file():
            return root
    raise ConfigError(
        "the dashboard's files (app.py, pages/, ui/) are not installed: reinstall evalcore"
    )


def upload_size_args() -> list[str]:
    """Streamlit's upload limit in whole megabytes, from ``EVALCORE_MAX_UPLOAD_MB`` (the limit
    evalcore.data enforces), so that the two never disagree."""
    from evalcore.data import max_upload_bytes

    megabytes = max(1, math.ceil(max_upload_bytes() / (1024 * 1024)))
    return ["--server.maxUploadSize", str(megabytes)]


def streamlit_command(args: argparse.Namespace, root: Path) -> list[str]:
    """The command line of the Streamlit server for ``args`` (without the interpreter)."""
    extra = list(args.streamlit_args or [])
    if extra and extra[0] == "--":
        extra = extra[1:]
    if any(a.startswith("--server.maxUploadSize") for a in extra):
        raise ConfigError(
            "--server.maxUploadSize is set from EVALCORE_MAX_UPLOAD_MB; set that instead"
        )
    address = args.address or os.environ.get(ADDRESS_ENV) or "127.0.0.1"
    return [
        "-m", "streamlit", "run", str(root / "ui" / "launch.py"),
        *DEFAULT_OPTIONS,
        *upload_size_args(),
        "--server.address", address,
        "--server.port", str(args.port),
        "--server.headless", "true",
        "--server.fileWatcherType", "none",
        "--browser.serverAddress", "localhost" if _loopback(address) else address,
        *extra,
    ]  # fmt: skip


def _loopback(address: str) -> bool:
    from evalcore.workflows import is_loopback

    return is_loopback(address)


def start_check(address: str, secrets_dir: Path | None = None) -> None:
    """Refuse to start (:class:`ConfigError`) on an address other machines reach while the
    database has no account and no OIDC is configured: anyone would be an admin."""
    from evalcore.workflows import any_host_notice, database_url, idle_minutes, start_refusal

    idle_minutes()  # a bad EVALCORE_SESSION_IDLE_MINUTES is said here, not in a page
    notice = any_host_notice(address)  # a bad EVALCORE_ALLOWED_HOSTS is said here too
    if notice is not None:
        print(notice)
    if _loopback(address):
        return
    if _oidc_in_secrets(secrets_dir or Path.cwd()):
        return
    from evalcore.store import Store

    store = Store.open(database_url())
    try:
        refusal = start_refusal(address, store.count_users(), oidc=False)
    finally:
        store.close()
    if refusal is not None:
        raise ConfigError(refusal)


def _oidc_in_secrets(cwd: Path) -> bool:
    import tomllib

    from evalcore.workflows import oidc_configured

    merged: dict[str, Any] = {}
    for path in (Path.home() / ".streamlit" / "secrets.toml", cwd / ".streamlit" / "secrets.toml"):
        if path.is_file():
            try:
                merged.update(tomllib.loads(path.read_text(encoding="utf-8")))
            except (OSError, tomllib.TOMLDecodeError) as exc:
                raise ConfigError(f"{path} could not be read: {exc}") from None
    return oidc_configured(merged)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="start the dashboard (on 127.0.0.1:8501 by default)",
        description=(
            "Start the dashboard on this machine's loopback address, or on --address once the "
            "database has an account (or OIDC is configured). Options after -- go to Streamlit. "
            "Exit status: 2 on bad settings."
        ),
    )
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="the port (default 8501)")
    p.add_argument(
        "--address",
        default=None,
        help="the address to listen on (default 127.0.0.1; another needs an account or OIDC)",
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help=(
            "a host name this server answers besides localhost (repeatable; added to "
            "$EVALCORE_ALLOWED_HOSTS); requests to other names are refused"
        ),
    )
    p.add_argument(
        "--database-url",
        default=None,
        help="the database (default $EVALCORE_DATABASE_URL, else a SQLite file in your data folder)",
    )
    p.add_argument("streamlit_args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    p.set_defaults(handler=serve)


def serve(args: argparse.Namespace) -> int:
    if args.database_url:
        os.environ["EVALCORE_DATABASE_URL"] = args.database_url
    if args.allowed_host:
        from evalcore.workflows import ALLOWED_HOSTS_ENV

        named = [os.environ.get(ALLOWED_HOSTS_ENV, ""), *args.allowed_host]
        os.environ[ALLOWED_HOSTS_ENV] = ",".join(n for n in named if n.strip())
    if not 0 < args.port < 65536:
        raise ConfigError(f"--port must be between 1 and 65535, not {args.port}")
    root = dashboard_dir()
    command = streamlit_command(args, root)
    start_check(command[command.index("--server.address") + 1])
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, *command])
    return 0  # pragma: no cover - execv does not return
