"""The seeding test writes the demo into both store backends."""

from tests.store.conftest import (  # noqa: F401  (fixtures, found by name)
    _pg_template,
    _sqlite_template,
    backend,
    store,
    store_url,
)
