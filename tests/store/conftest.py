"""Fixtures of the store tests: every store test runs on SQLite and on PostgreSQL.

- ``backend``: ``"sqlite"`` or ``"postgresql"``; the PostgreSQL variants skip with the ``postgres_url``
  fixture's reason when there is no server.
- ``empty_url``: a URL of a brand-new, empty database of the backend (a SQLite file in ``tmp_path``, or a
  uniquely named PostgreSQL database that is dropped afterwards).
- ``store``: an open :class:`Store` on a fresh database already at the newest schema. To keep the suite
  fast, the schema is migrated once per session into a template (a SQLite file that is copied, or a
  PostgreSQL ``TEMPLATE`` database) - the migration tests themselves start from ``empty_url``.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from evalcore.labels import LIKERT_5, PAIRWISE
from evalcore.store import CriterionRecord, DatasetRecord, ProjectRecord, Store
from tests.store.store_helpers import items_frame_for

BACKENDS = ["sqlite", "postgresql"]


def _admin_engine(url: str) -> sa.Engine:
    return sa.create_engine(url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)


def _create_pg_database(server_url: str, *, template: str | None = None) -> str:
    name = f"evalcore_t_{uuid.uuid4().hex[:16]}"
    engine = _admin_engine(server_url)
    try:
        with engine.connect() as conn:
            suffix = f' TEMPLATE "{template}"' if template else ""
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"{suffix}')
    finally:
        engine.dispose()
    return name


def _drop_pg_database(server_url: str, name: str) -> None:
    engine = _admin_engine(server_url)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        engine.dispose()


def _pg_url(server_url: str, database: str) -> str:
    return make_url(server_url).set(database=database).render_as_string(hide_password=False)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "postgresql":
        request.getfixturevalue("postgres_url")  # skips with its reason when there is no server
    return str(request.param)


@pytest.fixture
def empty_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """A brand-new, empty database of the backend."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty.sqlite'}"
        return
    server = request.getfixturevalue("postgres_url")
    name = _create_pg_database(server)
    try:
        yield _pg_url(server, name)
    finally:
        _drop_pg_database(server, name)


@pytest.fixture(scope="session")
def _sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.sqlite"
    store = Store.open(f"sqlite:///{path}")
    with store.engine.connect() as conn:  # everything into the main file, so a copy is complete
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    return path


@pytest.fixture(scope="session")
def _pg_template(postgres_url: str) -> Iterator[str]:
    name = _create_pg_database(postgres_url)
    store = Store.open(_pg_url(postgres_url, name))
    store.close()
    yield name
    _drop_pg_database(postgres_url, name)


@pytest.fixture
def store_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh database at the newest schema."""
    if backend == "sqlite":
        target = tmp_path / "store.sqlite"
        shutil.copyfile(request.getfixturevalue("_sqlite_template"), target)
        yield f"sqlite:///{target}"
        return
    server = request.getfixturevalue("postgres_url")
    name = _create_pg_database(server, template=request.getfixturevalue("_pg_template"))
    try:
        yield _pg_url(server, name)
    finally:
        _drop_pg_database(server, name)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = Store.open(store_url)
    try:
        yield opened
    finally:
        opened.close()


# --- small worlds to test in ----------------------------------------------------------------------


@pytest.fixture
def project(store: Store) -> ProjectRecord:
    return store.create_project("demo", description="a test project")


@pytest.fixture
def fluency(store: Store, project: ProjectRecord) -> CriterionRecord:
    return store.create_criterion(
        project.id, "fluency", kind="pointwise", scale=LIKERT_5, rubric="Is it fluent?"
    )


@pytest.fixture
def preference(store: Store, project: ProjectRecord) -> CriterionRecord:
    return store.create_criterion(project.id, "preference", kind="pairwise", scale=PAIRWISE)


@pytest.fixture
def make_dataset(store: Store, project: ProjectRecord) -> Callable[..., DatasetRecord]:
    def make(n: int = 10, *, name: str = "answers", kind: str = "pointwise") -> DatasetRecord:
        return store.save_dataset(
            project.id, name, items_frame_for(n, kind=kind), kind=kind, source_filename="x.csv"
        )

    return make


@pytest.fixture
def dataset(make_dataset: Callable[..., DatasetRecord]) -> DatasetRecord:
    return make_dataset(10)


@pytest.fixture
def pairwise_dataset(make_dataset: Callable[..., DatasetRecord]) -> DatasetRecord:
    return make_dataset(20, name="duel", kind="pairwise")
