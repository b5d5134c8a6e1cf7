"""``evalcore db upgrade`` and ``evalcore db revision``: the schema of the app's database.

Every store-backed command and the app upgrade the schema when they open a database (under a lock,
so several processes can start at once); ``db upgrade`` does only that, for a deployment step that
runs the migrations before the app starts.
"""

from __future__ import annotations

import argparse
from typing import Any

from evalcore.cli._database import add_database_option, open_store


def register(sub: Any) -> None:
    p = sub.add_parser(
        "db",
        help="upgrade the database's schema or show its revision",
        description="The schema of the app's database. Exit status: 0 ok, 2 bad input.",
    )
    actions = p.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    up = actions.add_parser(
        "upgrade", help="upgrade the schema to the newest revision (creates a new SQLite file)"
    )
    add_database_option(up)
    up.set_defaults(handler=upgrade)
    rev = actions.add_parser("revision", help="print the schema revision of the database")
    add_database_option(rev)
    rev.set_defaults(handler=revision)


def upgrade(args: argparse.Namespace) -> int:
    store = open_store(args, must_exist=False)  # opening migrates to the newest revision
    try:
        print(f"{store.url}: schema at revision {store.schema_revision()}")
    finally:
        store.close()
    return 0


def revision(args: argparse.Namespace) -> int:
    from evalcore.store import head_revision

    store = open_store(args, migrate=False)
    try:
        current = store.schema_revision()
        newest = head_revision()
        state = "up to date" if current == newest else f"the newest is {newest}"
        print(f"{store.url}: schema at revision {current} ({state})")
    finally:
        store.close()
    return 0
