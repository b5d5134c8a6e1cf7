"""Schema migrations: bring a database to the Alembic head from code, safely under concurrent openers.

Several processes may open the same database at once (the dashboard, a worker, the CLI). The upgrade runs
inside one transaction that first takes a database-wide lock: on SQLite the write lock
(``BEGIN IMMEDIATE``), on PostgreSQL a transaction-scoped advisory lock. Whoever comes second waits,
then finds the schema at head and does nothing. A database already at head is recognised without taking
any lock.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, func, select

from evalcore.store._engine import write_engine

__all__ = ["MIGRATIONS_DIR", "alembic_config", "current_revision", "head_revision", "migrate"]

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"

#: Key of the PostgreSQL advisory lock held while migrating ("evalcore" in ASCII, as an int64).
_PG_MIGRATION_LOCK = 0x6576616C636F7265


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic configuration built in code (no ``alembic.ini`` needed).

    With ``connection``, migrations run on it, inside whatever transaction it is in.
    """
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest revision shipped with this version of evalcore."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at; ``None`` for an empty database."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


@contextmanager
def locked_migration_connection(engine: Engine) -> Iterator[Connection]:
    """A connection in a transaction that holds the migration lock; commits on leaving."""
    dialect = engine.dialect.name
    if dialect == "sqlite":
        with write_engine(engine).begin() as conn:
            yield conn
    elif dialect == "postgresql":
        with engine.begin() as conn:
            conn.execute(select(func.pg_advisory_xact_lock(_PG_MIGRATION_LOCK)))
            yield conn
    else:  # pragma: no cover - other backends are not supported, but need no lock to try
        with engine.begin() as conn:
            yield conn


def migrate(engine: Engine, revision: str = "head") -> None:
    """Upgrade the database of ``engine`` to ``revision`` (default: the newest)."""
    if revision == "head" and current_revision(engine) == head_revision():
        return
    with locked_migration_connection(engine) as conn:
        command.upgrade(alembic_config(conn), revision)
