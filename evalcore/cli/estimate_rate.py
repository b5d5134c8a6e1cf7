"""``evalcore estimate-rate PATH``: what people would say about the items only the judge labelled.

A file with the judge's label on every item and human labels on some of them (the rows with a human
label are the labelled subset, the others the unlabelled set). On a binary scale it prints, for every
judge column, the rate of the positive label by three methods side by side, each with its interval:
the labelled rows alone (the baseline, Wilson), the Rogan-Gladen correction of the judge's rate, and
PPI++ as ppi-python computes it. On any other scale (``--scale 1,2,3,4,5``) it prints each label's
share and, on an ordinal scale, the mean score, labelled-only and by PPI++. Heavy imports happen when
the command runs.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from evalcore.errors import EvalcoreError


def register(sub: Any) -> None:
    p = sub.add_parser(
        "estimate-rate",
        help="estimate the human-level pass rate (or mean score and label shares) of unlabelled "
        "items from judge labels",
        description=(
            "Estimate what people would say about the rows only the judge labelled, from the "
            "judge's labels on every row and human labels on some rows (rows with a human label "
            "are the labelled subset). A binary scale gets the share of the positive label: the "
            "labelled-only estimate (the baseline), the Rogan-Gladen bias-corrected estimate and "
            "the prediction-powered (PPI++) estimate. Another scale (e.g. --scale 1,2,3,4,5) gets "
            "each label's share and, when ordered, the mean score, labelled-only and by PPI++. "
            "Each figure has its interval. Exit status: 0 ok, 2 bad input."
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
        help="the scale in order: a binary one with the positive label first (default "
        "pass,fail), or another such as 1,2,3,4,5 for the mean score and each label's share",
    )
    p.add_argument(
        "--positive", default=None, help="the positive label (default: the scale's first)"
    )
    p.add_argument(
        "--human-policy",
        default="majority",
        metavar="P",
        help="how several annotators become one label: majority, median, mean or annotator:NAME",
    )
    p.add_argument("--confidence", type=float, default=0.95, help="interval level (default 0.95)")
    p.add_argument(
        "--n-boot", type=int, default=1000, help="Rogan-Gladen bootstrap resamples (binary)"
    )
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--json", action="store_true", help="one JSON object per judge")
    p.set_defaults(handler=run)


def estimates(args: argparse.Namespace) -> list[tuple[str, Any]]:
    """(judge column, :class:`~evalcore.metrics.RateEstimates` on a binary scale, else
    :class:`~evalcore.metrics.ScoreEstimates`) for every judge of the file."""
    from evalcore.data import ColumnMapping, load_file
    from evalcore.report import (
        calibrate_runs,
        file_data,
        parse_scale,
        run_rate_estimate,
        run_score_estimate,
    )

    try:
        scale = parse_scale(args.scale)
    except EvalcoreError as exc:
        raise EvalcoreError(f"--{exc}") from exc
    if scale is None:
        raise EvalcoreError("--scale must name the labels, e.g. pass,fail or 1,2,3,4,5")
    if scale.kind != "binary" and args.positive is not None:
        raise EvalcoreError(f"--positive applies to a binary scale, not {args.scale!r}")
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
            if scale.kind != "binary":
                found: Any = run_score_estimate(
                    data, run.info.id, human, confidence=args.confidence
                )
                out.append((run.info.title, found))
                continue
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

    from evalcore.metrics import ScoreEstimates
    from evalcore.report import score_table

    console = Console(highlight=False)
    for judge, result in found:
        if isinstance(result, ScoreEstimates):
            frame = score_table(result)
            console.print(
                f"[bold]{escape(judge)}[/bold]: what people would say on the scale "
                f"{escape(', '.join(frame['quantity'].unique()))}"
            )
            table = Table()
            for column in frame.columns:
                table.add_column(escape(str(column)))
            for _, cells in frame.iterrows():
                table.add_row(*(escape(str(c)) for c in cells))
            console.print(table)
            for note in result.notes:
                console.print(f"  {escape(note)}")
            continue
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
            interval = f"[{e.ci[0]:.3f}, {e.ci[1]:.3f}] {e.interval}"
            if e.fallback_ci is not None:
                interval += f"; Wilson [{e.fallback_ci[0]:.3f}, {e.fallback_ci[1]:.3f}]"
            table.add_row(escape(method), f"{e.rate:.3f}", escape(interval), f"{e.width:.3f}")
        console.print(table)
        for note in result.notes:
            console.print(f"  {escape(note)}")
    return 0
