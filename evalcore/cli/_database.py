"""The database options every store-backed command shares: ``--database-url`` and how it opens.

Only the standard library at module level, like every module of this package.
"""

from __future__ import annotations

import argparse
import getpass
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.errors import EvalcoreError

if TYPE_CHECKING:
    from evalcore.store import GuardedStore, ProjectRecord, Store

#: The environment variable that names the database (as :data:`evalcore.store.DATABASE_URL_ENV`;
#: spelled here so that building the parser imports no database code).
DATABASE_URL_ENV = "EVALCORE_DATABASE_URL"


def add_database_option(parser: Any) -> None:
    """Add ``--database-url`` (default: ``$EVALCORE_DATABASE_URL`` or the app's SQLite file)."""
    parser.add_argument(
        "--database-url",
        metavar="URL",
        help=f"the database (default: ${DATABASE_URL_ENV} or the app's default SQLite file)",
    )


def database_url(args: argparse.Namespace) -> str:
    """The URL the command works on: the option, the variable, or the app's default file."""
    from evalcore.store import default_database_url

    given: str | None = getattr(args, "database_url", None)
    return given or os.environ.get(DATABASE_URL_ENV) or default_database_url()


def open_store(args: argparse.Namespace, *, must_exist: bool = True, migrate: bool = True) -> Store:
    """Open (and upgrade) the command's database; a clear error for a bad URL or a missing file.

    ``must_exist=False`` lets a command create a new SQLite file (``db upgrade``, ``users add``).
    """
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError

    from evalcore.store import Store

    url = database_url(args)
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise EvalcoreError(f"--database-url {url!r} is not a database URL") from exc
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        path = Path(str(parsed.database))
        if must_exist and not path.exists():
            raise EvalcoreError(f"there is no database at {path}")
        if not path.parent.exists():
            raise EvalcoreError(f"there is no folder {path.parent} for the database")
    try:
        return Store.open(url, migrate=migrate)
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        raise EvalcoreError(f"cannot open the database {parsed!s}: {reason}") from exc


def cli_actor_name() -> str:
    """How the audit log names a change made from the command line: ``cli:<login name>``."""
    try:
        login = getpass.getuser()
    except (KeyError, OSError):  # no name for the uid (some containers)
        login = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
    return f"cli:{login}"


def open_acting_store(args: argparse.Namespace, *, must_exist: bool = True) -> GuardedStore:
    """The command's database as the CLI acts on it: trusted, and named in the audit log."""
    from evalcore.store import Actor

    return open_store(args, must_exist=must_exist).acting_as(Actor.system(cli_actor_name()))


def find_project(store: Store | GuardedStore, name: str) -> ProjectRecord:
    """The project named ``name``; ``demo`` also finds the demo project under its full name (so
    databases seeded before the short name keep working). An unknown name is a
    :class:`~evalcore.errors.NotFoundError` that lists the projects there are."""
    from evalcore.demo import PROJECT_NAME, SHORT_NAME
    from evalcore.errors import NotFoundError

    by_name = {p.name: p for p in store.list_projects()}
    wanted = name.strip()
    if wanted in by_name:
        return by_name[wanted]
    if wanted == SHORT_NAME and PROJECT_NAME in by_name:
        return by_name[PROJECT_NAME]
    known = ", ".join(repr(n) for n in sorted(by_name)) or "none yet"
    short = f" ({SHORT_NAME!r} for short)" if PROJECT_NAME in by_name else ""
    raise NotFoundError(f"There is no project named {name!r}. The projects are: {known}{short}.")
