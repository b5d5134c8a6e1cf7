"""``evalcore report PROJECT --criterion C --out report.html``: the HTML report from the command line.

The same self-contained report the Reports page downloads (summary with traffic lights, history, and
per criterion the side-by-side table, the human ceiling, confusion matrices, the kind's own view and
the worst disagreements), made from the project's database.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.errors import EvalcoreError

if TYPE_CHECKING:
    from evalcore.store import Store

EXIT_OK = 0

#: The environment variable that names the database (as :data:`evalcore.store.DATABASE_URL_ENV`;
#: spelled here so that building the parser imports no database code).
DATABASE_URL_ENV = "EVALCORE_DATABASE_URL"


def register(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="write the HTML calibration report of a project",
        description=(
            "Write a self-contained HTML report (opens offline) of a project's judge runs against "
            "its human labels: summary with traffic lights against the project's thresholds, "
            "history of template versions, and per criterion the side-by-side metrics with 95%% "
            "intervals, the human ceiling, confusion matrices and the worst disagreements. "
            "Exit status: 0 written, 2 bad input."
        ),
    )
    p.add_argument("project", metavar="PROJECT", help="project name")
    p.add_argument(
        "--criterion",
        action="append",
        default=None,
        metavar="C",
        help="report this criterion (repeatable); default: every criterion with a judge run",
    )
    p.add_argument("--out", required=True, type=Path, help="the HTML file to write")
    p.add_argument("--dataset", metavar="D", help="only runs on this dataset (its newest version)")
    p.add_argument(
        "--policy",
        default="majority",
        metavar="P",
        help="how several annotators become one label: majority, median, mean or annotator:NAME",
    )
    p.add_argument(
        "--runs",
        nargs="+",
        metavar="RUN",
        help="only these judge runs (ids or names); default: every run of the criterion",
    )
    p.add_argument(
        "--baseline", metavar="RUN", help="compare the other runs with this one (id or name)"
    )
    p.add_argument(
        "--slice-by", metavar="COLUMN", help="add the metrics per value of this metadata column"
    )
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument(
        "--database-url",
        metavar="URL",
        help=f"the database (default: ${DATABASE_URL_ENV} or the default SQLite file)",
    )
    p.set_defaults(handler=run)


def _open(url: str) -> Store:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError

    from evalcore.store import Store

    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise EvalcoreError(f"--database-url {url!r} is not a database URL") from exc
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        path = Path(str(parsed.database))
        if not path.exists():
            raise EvalcoreError(f"there is no database at {path}")
    try:
        return Store.open(url)
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        raise EvalcoreError(f"cannot open the database {parsed!s}: {reason}") from exc


def run(args: argparse.Namespace) -> int:
    from evalcore.report import build_report, write_report
    from evalcore.store import default_database_url

    if args.n_boot < 0:
        raise EvalcoreError("--n-boot must be 0 or more")
    out: Path = args.out
    if out.is_dir():
        raise EvalcoreError(f"--out {out} is a folder; give a file name such as report.html")
    if not out.parent.exists():
        raise EvalcoreError(f"--out {out}: the folder {out.parent} does not exist")
    url = args.database_url or os.environ.get(DATABASE_URL_ENV) or default_database_url()
    store = _open(url)
    try:
        text = build_report(
            store,
            args.project,
            criteria=args.criterion,
            dataset=args.dataset,
            policy=args.policy,
            runs=args.runs,
            baseline=args.baseline,
            slice_by=args.slice_by,
            n_boot=args.n_boot,
            seed=args.seed,
        )
    finally:
        store.close()
    write_report(out, text)
    print(f"wrote {out} ({len(text.encode('utf-8')) / 1e6:.1f} MB)", file=sys.stderr)
    return EXIT_OK
