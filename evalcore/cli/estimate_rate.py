"""``evalcore estimate-rate PATH``: the pass rate people would give the items only the judge labelled.

A binary criterion, a file with the judge's label on every item and human labels on some of them
(the rows with a human label are the labelled subset, the others the unlabelled set). For every
judge column it prints the rate of the positive label by three methods side by side, each with its
interval: the labelled rows alone (the baseline), the Rogan-Gladen correction of the judge's rate,
and prediction-powered inference with the PPI++ power-tuned lambda. Heavy imports happen when the
command runs.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from evalcore.errors import EvalcoreError


def register(sub: Any) -> None:
    p = sub.add_parser(
        "estimate-rate",
        help="estimate the human-level pass rate of unlabelled items from judge labels",
        description=(
            "For a binary criterion: estimate the share of the positive label that people would "
            "give, from the judge's labels on every row and human labels on some rows (rows with "
            "a human label are the labelled subset). Prints the labelled-only estimate (the "
            "baseline), the Rogan-Gladen bias-corrected estimate and the prediction-powered "
            "(PPI++) estimate, each with its interval. Exit status: 0 ok, 2 bad input."
        ),
    )
    p.add_argument("path", help="CSV, JSONL or Parquet file")
    p.add_argument("--human", action="append", default=[], required=True, help="a human column")
    p.add_argument("--judge", action="append", default=[], required=True, help="a judge column")
    p.add_argument("--id", dest="id_column", help="item id column")
    p.add_argument("--name", default="label", help="criterion name for the named columns")
    p.add_argument(
        "--scale",
        default="pass,fail",
        help="the binary scale, positive label first (default pass,fail)",
    )
    p.add_argument(
        "--positive", default=None, help="the positive label (default: the scale's first)"
    )
    p.add_argument(
        "--human-policy",
        default="majority",
        metavar="P",
        help="how several annotators become one label: majority or annotator:NAME",
    )
    p.add_argument("--confidence", type=float, default=0.95, help="interval level (default 0.95)")
    p.add_argument("--n-boot", type=int, default=1000, help="Rogan-Gladen bootstrap resamples")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--json", action="store_true", help="one JSON object per judge")
    p.set_defaults(handler=run)


def estimates(args: argparse.Namespace) -> list[tuple[str, Any]]:
    """(judge column, :class:`~evalcore.metrics.RateEstimates`) for every judge of the file."""
    from evalcore.data import ColumnMapping, load_file
    from evalcore.report import calibrate_runs, file_data, parse_scale, run_rate_estimate

    try:
        scale = parse_scale(args.scale)
    except EvalcoreError as exc:
        raise EvalcoreError(f"--{exc}") from exc
    if scale is None or scale.kind != "binary":
        raise EvalcoreError(f"--scale {args.scale!r} is not a binary scale such as pass,fail")
    mapping = ColumnMapping(
        item_id=args.id_column,
        human=tuple(args.human),
        judge=tuple(args.judge),
        metric=args.name,
        kind="pointwise",
    )
    loaded = load_file(args.path, mapping=mapping, scales=scale)
    out = []
    for data in file_data(loaded, declared=True):
        human = calibrate_runs(data, policy=args.human_policy, n_boot=0, ceiling=False).human
        for run in data.runs:
            found = run_rate_estimate(
                data,
                run.info.id,
                human,
                positive=args.positive,
                confidence=args.confidence,
                n_boot=args.n_boot,
                seed=args.seed,
            )
            out.append((run.info.title, found))
    return out


def run(args: argparse.Namespace) -> int:
    found = estimates(args)
    if args.json:
        for judge, result in found:
            print(json.dumps({"judge": judge, **result.to_dict()}, allow_nan=False))
        return 0
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False)
    for judge, result in found:
        first = result.ppi
        console.print(
            f"[bold]{escape(judge)}[/bold]: rate of {escape(result.positive)!s} · "
            f"{first.n_labelled} labelled, {first.n_unlabelled} unlabelled · the judge says "
            f"{result.judge_rate:.1%} on the unlabelled rows"
        )
        table = Table()
        for column in ("method", "rate", f"{first.confidence:.0%} interval", "width"):
            table.add_column(column, justify="left" if column == "method" else "right")
        for e in result.estimates():
            method = e.method + ("" if e.lam is None else f" (λ = {e.lam:.2f})")
            table.add_row(
                escape(method),
                f"{e.rate:.3f}",
                f"[{e.ci[0]:.3f}, {e.ci[1]:.3f}]",
                f"{e.width:.3f}",
            )
        console.print(table)
        for note in result.notes:
            console.print(f"  {escape(note)}")
    return 0
