"""Engines: the default location, SQLite's settings for many writers, and opening a Store."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from evalcore.store import DATABASE_URL_ENV, Store, create_store_engine, default_database_url


def test_default_url_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DATABASE_URL_ENV, "postgresql+psycopg://u@h/db")
    assert default_database_url() == "postgresql+psycopg://u@h/db"


def test_default_url_is_a_file_in_the_user_data_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    folder = tmp_path / "data" / "evalcore"
    monkeypatch.setattr("platformdirs.user_data_dir", lambda name: str(folder))
    url = default_database_url()
    assert url == f"sqlite:///{folder / 'evalcore.sqlite'}"
    assert folder.is_dir()


def test_sqlite_is_set_up_for_concurrent_writers(tmp_path: Path) -> None:
    engine = create_store_engine(f"sqlite:///{tmp_path / 'a' / 'db.sqlite'}")
    try:
        with engine.connect() as conn:
            pragma = {
                name: conn.exec_driver_sql(f"PRAGMA {name}").scalar()
                for name in ("journal_mode", "foreign_keys", "busy_timeout", "synchronous")
            }
    finally:
        engine.dispose()
    assert pragma["journal_mode"] == "wal"
    assert pragma["foreign_keys"] == 1
    assert pragma["busy_timeout"] >= 30_000
    assert pragma["synchronous"] == 1  # NORMAL


def test_sqlite_writes_begin_immediate_and_reads_deferred(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'db.sqlite'}")
    begins: list[str] = []

    def capture(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        if statement.upper().startswith("BEGIN"):
            begins.append(statement.upper())

    sa.event.listen(store.engine, "before_cursor_execute", capture)
    try:
        project = store.create_project("p")
        store.get_project(project.id)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", capture)
        store.close()
    assert begins == ["BEGIN IMMEDIATE", "BEGIN DEFERRED"]


def test_store_over_an_engine_made_elsewhere(empty_url: str, backend: str) -> None:
    engine = sa.create_engine(empty_url)
    store = Store.open(engine)
    try:
        store.create_project("p")
        assert store.list_projects()[0].name == "p"
        if backend == "sqlite":
            with engine.connect() as conn:
                assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    finally:
        store.close()
        engine.dispose()


def test_in_memory_store_and_context_manager() -> None:
    with Store.open("sqlite://") as store:
        assert store.is_up_to_date()
        store.create_project("p")
        assert [p.name for p in store.list_projects()] == ["p"]


def test_repr_hides_the_password() -> None:
    store = Store("postgresql+psycopg://user:secret@localhost:1/db")
    try:
        assert "secret" not in repr(store)
        assert "***" in store.url
    finally:
        store.close()


def test_store_works_on_both_backends(store: Store, backend: str) -> None:
    assert store.dialect == backend
    assert store.is_up_to_date()


@pytest.mark.postgres
def test_postgres_connections_wait_for_a_lock_only_so_long(empty_url: str, backend: str) -> None:
    """Every connection of the store's engine carries the lock timeout, so a lock held elsewhere
    makes a statement fail with a clear error instead of hanging a page."""
    if backend != "postgresql":
        pytest.skip("PostgreSQL only")
    from evalcore.store._engine import POSTGRES_LOCK_TIMEOUT_MS

    engine = create_store_engine(empty_url)
    try:
        for _ in range(2):  # a second, pooled connection carries it too
            with engine.connect() as conn:
                shown = conn.exec_driver_sql("SHOW lock_timeout").scalar()
            assert shown == f"{POSTGRES_LOCK_TIMEOUT_MS // 1000}s"  # 15000 ms is shown as "15s"
    finally:
        engine.dispose()
