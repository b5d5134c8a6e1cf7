"""``evalcore project export NAME --out FILE`` and ``evalcore project import FILE``: backup and move.

One archive (a zip of JSON Lines, see :mod:`evalcore.store`'s ``export_project``) holds a whole
project; importing it into another database, SQLite or PostgreSQL, gives the same project there. The
command acts as the trusted system user ``cli:<login name>``, which the audit log records.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from evalcore.cli._database import add_database_option, find_project, open_acting_store
from evalcore.errors import EvalcoreError

EXIT_OK = 0

_CONTENTS = (
    "An archive holds the project and its settings, datasets and items, criteria, the annotators "
    "its labels name, queues, annotations with every revision, judge templates with every "
    "version, the endpoints its runs used (settings and the NAME of the key variable, never a "
    "key), the prices of the models its runs used, runs with every result, and the cached "
    "replies those results point to. Users, memberships and the audit log are not included: "
    "add people to the imported project with `evalcore users`."
)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "project",
        help="export a project to one archive file, or import one",
        description=f"Back up or move a project. {_CONTENTS}",
    )
    commands = p.add_subparsers(dest="project_command", metavar="ACTION", required=True)

    export = commands.add_parser(
        "export",
        help="write a project to an archive file",
        description=(
            f"Write project NAME to an archive (a zip file). {_CONTENTS} "
            "Exit status: 0 written, 2 bad input."
        ),
    )
    export.add_argument("name", metavar="NAME", help="the project's name")
    export.add_argument("--out", required=True, type=Path, help="the archive to write (.zip)")
    export.add_argument(
        "--no-cache", action="store_true", help="leave the cached judge replies out"
    )
    add_database_option(export)
    export.set_defaults(handler=run_export)

    imp = commands.add_parser(
        "import",
        help="add the project of an archive file to a database",
        description=(
            "Add the project of an archive made by `evalcore project export` to a database, in one "
            "transaction: if anything is wrong with the archive, nothing changes. Annotators, "
            "endpoints and model prices the database already has (by name) are used as they are. "
            f"{_CONTENTS} Exit status: 0 imported, 2 bad input."
        ),
    )
    imp.add_argument("file", metavar="FILE", type=Path, help="the archive to read")
    imp.add_argument(
        "--as",
        dest="new_name",
        metavar="NEW_NAME",
        help="import the project under this name (needed when the name is taken)",
    )
    cached = imp.add_mutually_exclusive_group()
    cached.add_argument(
        "--no-cache", action="store_true", help="skip the archive's cached judge replies"
    )
    cached.add_argument(
        "--share-cache",
        action="store_true",
        help=(
            "trust the archive's cached replies: put them in the database's shared reply cache, "
            "where they answer the same request from any project (by default they stay with the "
            "imported results and answer no request)"
        ),
    )
    add_database_option(imp)
    imp.set_defaults(handler=run_import)


def run_export(args: argparse.Namespace) -> int:
    out: Path = args.out
    if out.is_dir():
        raise EvalcoreError(f"--out {out} is a folder; give a file name such as project.zip")
    if not out.parent.exists():
        raise EvalcoreError(f"--out {out}: the folder {out.parent} does not exist")
    store = open_acting_store(args, must_exist=True)
    try:
        project = find_project(store, args.name)
        summary = store.export_project(project.id, out, cache=not args.no_cache)
    finally:
        store.close()
    print(f"wrote {out} ({summary.size_bytes / 1e6:.1f} MB): {summary.describe()}", file=sys.stderr)
    return EXIT_OK


def run_import(args: argparse.Namespace) -> int:
    store = open_acting_store(args, must_exist=False)
    try:
        summary = store.import_project(
            args.file, name=args.new_name, cache=not args.no_cache, share_cache=args.share_cache
        )
    finally:
        store.close()
    print(f"imported {args.file}: {summary.describe()}", file=sys.stderr)
    return EXIT_OK
