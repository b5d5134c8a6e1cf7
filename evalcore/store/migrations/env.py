"""Alembic environment of the evalcore store.

evalcore runs migrations from code (:meth:`evalcore.store.Store.migrate`): it passes an open connection,
already inside a locked transaction, as ``config.attributes["connection"]``, and no ``alembic.ini`` is
read. Developers can still use the ``alembic`` command with the ``alembic.ini`` next to this file; the
database is then ``sqlalchemy.url`` from the ini file, else ``EVALCORE_DATABASE_URL``, else the default
SQLite file.

This module is safe to import outside Alembic (pytest's doctest collection imports it): it only acts when
Alembic's context is set up.
"""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context
from sqlalchemy.engine import Connection

from evalcore.store._engine import create_store_engine, default_database_url
from evalcore.store._migrate import locked_migration_connection
from evalcore.store._models import Base

target_metadata = Base.metadata


def _configure_and_run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def _run_offline(url: str) -> None:
    context.configure(
        url=url,
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run() -> None:
    config = context.config
    if config.config_file_name is not None:
        fileConfig(config.config_file_name, disable_existing_loggers=False)
    url = config.get_main_option("sqlalchemy.url") or default_database_url()
    if context.is_offline_mode():
        _run_offline(url)
        return
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure_and_run(connection)
        return
    engine = create_store_engine(url)
    try:
        with locked_migration_connection(engine) as conn:
            _configure_and_run(conn)
    finally:
        engine.dispose()


if hasattr(context, "config"):
    run()
