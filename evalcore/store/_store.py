"""The ``Store`` facade: one database, its engine and sessions, and every repository method."""

from __future__ import annotations

from types import TracebackType

from sqlalchemy import Engine
from sqlalchemy.orm import sessionmaker

from evalcore.store._access import AccessChecks, Actor, Permission, guard_methods
from evalcore.store._annotations import AnnotationsMixin
from evalcore.store._archive import ArchiveMixin
from evalcore.store._batches import BatchesMixin
from evalcore.store._datasets import DatasetsMixin
from evalcore.store._engine import create_store_engine, prepare_engine, write_engine
from evalcore.store._improve import ImproveMixin
from evalcore.store._judge import JudgeMixin
from evalcore.store._juries import JuriesMixin
from evalcore.store._leases import LeasesMixin
from evalcore.store._migrate import current_revision, head_revision, migrate
from evalcore.store._projects import ProjectsMixin
from evalcore.store._queue_orders import QueueOrdersMixin
from evalcore.store._records import ProjectRecord
from evalcore.store._sessions import SessionsMixin
from evalcore.store._splits import SplitsMixin
from evalcore.store._users import UsersMixin
from evalcore.store._workers import WorkersMixin

__all__ = ["GuardedStore", "Store"]


class Store(
    ProjectsMixin,
    DatasetsMixin,
    AnnotationsMixin,
    JudgeMixin,
    UsersMixin,
    ArchiveMixin,
    WorkersMixin,
    BatchesMixin,
    ImproveMixin,
    SplitsMixin,
    SessionsMixin,
    LeasesMixin,
    JuriesMixin,
    QueueOrdersMixin,
):
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

    # --- who acts ------------------------------------------------------------------------------

    def acting_as(self, actor: Actor) -> GuardedStore:
        """This store as ``actor`` sees it: the same database, every method checked against the
        actor's role in the project it touches (see :mod:`evalcore.store._access`)."""
        guarded = GuardedStore.__new__(GuardedStore)
        guarded.__dict__.update(self.__dict__)
        guarded._owns_engine = False
        guarded.actor = actor
        return guarded

    @property
    def acting(self) -> Actor | None:
        """The user this store acts for; None for a plain (trusted) store."""
        return None

    def authorize(
        self,
        permission: Permission,
        *,
        project_id: int | None = None,
        dataset_id: int | None = None,
        criterion_id: int | None = None,
        run_id: int | None = None,
    ) -> None:
        """Raise :class:`~evalcore.errors.PermissionDeniedError` unless the acting user may
        ``permission`` in the project named (directly or by a dataset, criterion or run). A plain
        store acts for a trusted process and allows everything; services that read the database
        in bulk call this before they start."""


class GuardedStore(AccessChecks, Store):  # type: ignore[misc]
    """A :class:`Store` acting for one user (``store.acting_as(actor)``).

    Every public method checks the rule of :data:`evalcore.store._access.RULES` first and raises
    :class:`~evalcore.errors.PermissionDeniedError` when the actor may not make the call.
    ``list_projects`` is filtered to the actor's projects instead.
    """

    @property
    def acting(self) -> Actor | None:
        return self.actor

    def list_projects(self) -> list[ProjectRecord]:
        return [p for p in Store.list_projects(self) if self._visible(p.id)]

    def get_project_by_name(self, name: str) -> ProjectRecord:
        project = Store.get_project_by_name(self, name)
        self._require("open", project.id)
        return project


guard_methods(Store, GuardedStore)
