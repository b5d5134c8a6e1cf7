"""The run-service tests use the store tests' databases: a SQLite file and PostgreSQL."""

from tests.store.conftest import (  # noqa: F401  (fixtures, found by name)
    _pg_template,
    _sqlite_template,
    backend,
    store,
    store_url,
)
