"""``evalcore report PROJECT --criterion C --out report.html``: the HTML report from the command line.

The same self-contained report the Reports page downloads (summary with traffic lights, history, and
per criterion the side-by-side table, the human ceiling, confusion matrices, the kind's own view and
the worst disagreements), made from the project's database.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.cli._database import add_database_option, find_project, open_acting_store
from evalcore.errors import EvalcoreError, NotFoundError

if TYPE_CHECKING:
    pass

EXIT_OK = 0


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
    add_database_option(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from evalcore.report import build_report, write_report

    if args.n_boot < 0:
        raise EvalcoreError("--n-boot must be 0 or more")
    out: Path = args.out
    if out.is_dir():
        raise EvalcoreError(f"--out {out} is a folder; give a file name such as report.html")
    if not out.parent.exists():
        raise EvalcoreError(f"--out {out}: the folder {out.parent} does not exist")
    store = open_acting_store(args)
    try:
        text = build_report(
            store,
            _project_name(store, args.project),
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


def _project_name(store: Any, name: str) -> str:
    """``name``, or the demo project's full name for ``demo``; an unknown name is left to the
    report, whose error lists the projects."""
    try:
        return find_project(store, name).name
    except NotFoundError:
        return name
