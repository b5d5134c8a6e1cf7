"""Engines: where the database is, and how a SQLite file is made safe for several writers.

SQLite is configured for many processes writing to one file (the dashboard, a judge worker and the CLI
at the same time):

- write-ahead logging (``journal_mode=WAL``), so readers never block the writer and the writer never
  blocks readers;
- ``synchronous=NORMAL``: in WAL mode a committed transaction survives a crash of the process (not of
  the machine) without an fsync per commit;
- ``foreign_keys=ON`` and a generous ``busy_timeout``, so a writer waits for the lock instead of failing;
- transactions are begun by us, not by the ``sqlite3`` driver (SQLAlchemy's documented recipe: the
  driver's own transaction handling is switched off and the ``begin`` event emits ``BEGIN``). Read
  transactions start with a plain ``BEGIN``; write transactions start with ``BEGIN IMMEDIATE`` and so
  take the write lock up front. A deferred transaction that reads and then writes can fail at once with
  "database is locked" when another writer got there first (the busy handler cannot help a lock
  *upgrade*); an immediate one simply waits its turn.

PostgreSQL (``postgresql+psycopg://`` URLs) needs none of this; the same statements run on both.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool

__all__ = ["DATABASE_URL_ENV", "create_store_engine", "default_database_url", "write_engine"]

#: The environment variable that names the database.
DATABASE_URL_ENV = "EVALCORE_DATABASE_URL"

#: How long a SQLite writer waits for the lock before giving up, in milliseconds.
SQLITE_BUSY_TIMEOUT_MS = 60_000
#: How long a PostgreSQL statement waits for a row or table lock before it fails with a clear error,
#: so a lock held elsewhere (a stuck session, a long migration) cannot hang a page for ever.
POSTGRES_LOCK_TIMEOUT_MS = 15_000

#: Execution option that tells the ``begin`` hook which kind of SQLite transaction to start.
_BEGIN_OPTION = "evalcore_sqlite_begin"


def default_database_url() -> str:
    """The database evalcore uses when none is given.

    ``EVALCORE_DATABASE_URL`` when it is set; otherwise the SQLite file ``evalcore.sqlite`` in the
    user's data directory (``platformdirs.user_data_dir("evalcore")``), which is created if needed.
    """
    url = os.environ.get(DATABASE_URL_ENV, "").strip()
    if url:
        return url
    folder = Path(platformdirs.user_data_dir("evalcore"))
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / 'evalcore.sqlite'}"


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # Take transaction control away from the sqlite3 driver; the "begin" hook below emits BEGIN.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        # busy_timeout first: switching to WAL needs the lock briefly.
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
    finally:
        cursor.close()


def _on_sqlite_begin(connection: Any) -> None:
    mode = connection.get_execution_options().get(_BEGIN_OPTION, "DEFERRED")
    connection.exec_driver_sql(f"BEGIN {mode}")


def _install_sqlite_hooks(engine: Engine) -> None:
    if not event.contains(engine, "connect", _on_sqlite_connect):
        event.listen(engine, "connect", _on_sqlite_connect)
    if not event.contains(engine, "begin", _on_sqlite_begin):
        event.listen(engine, "begin", _on_sqlite_begin)


def create_store_engine(url: str | None = None, **kwargs: Any) -> Engine:
    """Create an engine for ``url`` (default :func:`default_database_url`) configured for evalcore.

    SQLite URLs get the pragmas and transaction hooks described in this module; a SQLite file's
    parent folder is created. ``kwargs`` go to :func:`sqlalchemy.create_engine`.
    """
    url = url or default_database_url()
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        in_memory = database in ("", ":memory:") or "mode=memory" in str(parsed)
        if in_memory:
            kwargs.setdefault("poolclass", StaticPool)
            kwargs.setdefault("connect_args", {"check_same_thread": False})
        else:
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(parsed, **kwargs)
        _install_sqlite_hooks(engine)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    if parsed.get_backend_name() == "postgresql":
        kwargs.setdefault(
            "connect_args", {"options": f"-c lock_timeout={POSTGRES_LOCK_TIMEOUT_MS}"}
        )
    return create_engine(parsed, **kwargs)


def prepare_engine(engine: Engine) -> Engine:
    """Make sure a SQLite engine made elsewhere carries evalcore's hooks (a no-op for PostgreSQL)."""
    if engine.dialect.name == "sqlite" and not event.contains(
        engine, "connect", _on_sqlite_connect
    ):
        _install_sqlite_hooks(engine)
        # Connections already in the pool were opened without the pragmas.
        engine.dispose()
    return engine


def write_engine(engine: Engine) -> Engine:
    """A view of ``engine`` whose transactions take the SQLite write lock when they begin."""
    return engine.execution_options(**{_BEGIN_OPTION: "IMMEDIATE"})
