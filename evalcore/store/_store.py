"""The ``Store`` facade: one database, its engine and sessions, and every repository method."""

from __future__ import annotations

from types import TracebackType

from sqlalchemy import Engine
from sqlalchemy.orm import sessionmaker

from evalcore.store._annotations import AnnotationsMixin
from evalcore.store._datasets import DatasetsMixin
from evalcore.store._engine import create_store_engine, prepare_engine, write_engine
from evalcore.store._judge import JudgeMixin
from evalcore.store._migrate import current_revision, head_revision, migrate
from evalcore.store._projects import ProjectsMixin

__all__ = ["Store"]


class Store(ProjectsMixin, DatasetsMixin, AnnotationsMixin, JudgeMixin):
    """Repository functions over one database; every method returns dataclasses or DataFrames.

    Build one per process and share it (it is thread-safe: each call runs in its own session and
    transaction)::

        store = Store.open()                    # EVALCORE_DATABASE_URL or the default SQLite file
        store = Store.open("postgresql+psycopg://user@host/db")
        store = Store(engine); store.migrate()  # an engine made elsewhere

    Every write is committed before the method returns.
    """

    def __init__(self, url_or_engine: str | Engine | None = None) -> None:
        if isinstance(url_or_engine, Engine):
            self.engine = prepare_engine(url_or_engine)
            self._owns_engine = False
        else:
            self.engine = create_store_engine(url_or_engine)
            self._owns_engine = True
        self.sessionmaker = sessionmaker(self.engine, expire_on_commit=False)
        self._write_sessions = sessionmaker(write_engine(self.engine), expire_on_commit=False)

    @classmethod
    def open(cls, url: str | Engine | None = None, *, migrate: bool = True) -> Store:
        """Open the database at ``url`` (default :func:`default_database_url`), upgrading its schema
        to the newest revision unless ``migrate=False``. Safe when several processes open at once."""
        store = cls(url)
        if migrate:
            store.migrate()
        return store

    @property
    def url(self) -> str:
        """The database URL, password hidden."""
        return self.engine.url.render_as_string(hide_password=True)

    def migrate(self, revision: str = "head") -> None:
        """Upgrade the schema to ``revision`` (default the newest) under a database-wide lock."""
        migrate(self.engine, revision)

    def schema_revision(self) -> str | None:
        """The Alembic revision the database is at (None when empty)."""
        return current_revision(self.engine)

    def is_up_to_date(self) -> bool:
        """True when the schema is at the newest revision this evalcore knows."""
        return self.schema_revision() == head_revision()

    def close(self) -> None:
        """Release the connections (only those of an engine the store created)."""
        if self._owns_engine:
            self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.url!r})"
