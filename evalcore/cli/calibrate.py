"""``evalcore calibrate PATH``: judges against humans from a file, as a table or JSON, with CI gates.

Reads any layout :func:`evalcore.data.load_file` knows (Vertex metrics tables, Azure, RAGAS, long
format, or a plain table with ``--human``/``--judge`` columns) and reports every metric found.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evalcore.data import ColumnMapping, load_file
from evalcore.errors import EvalcoreError
from evalcore.labels import Scale, format_label, infer_scale
from evalcore.report import FileCalibration, calibrate_file

EXIT_OK, EXIT_GATE_FAILED = 0, 1

#: ``--min-…`` option → (report key, people's name)
GATES = {
    "min_balanced_accuracy": ("accuracy_balanced", "balanced accuracy"),
    "min_weighted_f1": ("f1_score_balanced", "weighted F1"),
    "min_kappa": ("cohen_kappa", "Cohen's kappa"),
}


def register(sub: Any) -> None:
    p = sub.add_parser(
        "calibrate",
        help="calibrate judge labels against human labels from a file",
        description=(
            "Compare judge labels with human labels found in a CSV, JSONL or Parquet file and print "
            "balanced accuracy, weighted F1, accuracy and Cohen's kappa with 95%% intervals. "
            "Exit status: 0 ok, 1 a --min-... gate failed, 2 bad input."
        ),
    )
    p.add_argument("path", help="CSV, JSONL or Parquet file")
    p.add_argument(
        "--metric",
        action="append",
        default=None,
        help="report only this metric (repeatable); default: every metric found",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per metric and judge")
    p.add_argument(
        "--human-policy",
        default="majority",
        metavar="P",
        help="how several annotators become one label: majority, median, mean or annotator:NAME",
    )
    for option, (_key, name) in GATES.items():
        p.add_argument(
            "--" + option.replace("_", "-"),
            type=float,
            default=None,
            metavar="X",
            help=f"exit 1 when any judge's {name} is below X",
        )
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (0: no intervals)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument(
        "--round-half-up",
        action="store_true",
        help="round fractional numeric judge scores (3.5) half up onto the scale",
    )
    plain = p.add_argument_group("plain tables (columns you name)")
    plain.add_argument("--id", dest="id_column", help="item id column")
    plain.add_argument("--human", action="append", default=[], help="a human label column")
    plain.add_argument("--judge", action="append", default=[], help="a judge label column")
    plain.add_argument("--name", default="label", help="metric name for the named columns")
    plain.add_argument("--kind", choices=["pointwise", "pairwise"], default=None)
    plain.add_argument(
        "--scale",
        default=None,
        help="declared scale, comma-separated in order (e.g. 1,2,3,4,5 or pass,fail or A,B,TIE)",
    )
    p.set_defaults(handler=run)


def _scale(text: str | None) -> Scale | None:
    if not text:
        return None
    values = [v.strip() for v in text.split(",") if v.strip()]
    try:
        guess = infer_scale(values)
        if guess.kind in ("pairwise", "binary"):
            return Scale(tuple(values), guess.kind)
        return Scale(tuple(values), "ordinal" if guess.is_numeric else "nominal")
    except ValueError as exc:
        raise EvalcoreError(f"--scale {text!r}: {exc}") from exc


def run(args: argparse.Namespace) -> int:
    mapping = None
    if args.human or args.judge:
        mapping = ColumnMapping(
            item_id=args.id_column,
            human=tuple(args.human),
            judge=tuple(args.judge),
            metric=args.name,
            kind=args.kind,
        )
    scale = _scale(args.scale)
    loaded = load_file(
        args.path,
        mapping=mapping,
        scales=scale,
        round_half_up=args.round_half_up,
    )
    results = calibrate_file(
        loaded,
        metrics=args.metric,
        policy=args.human_policy,
        n_boot=args.n_boot,
        seed=args.seed,
    )
    failures = _gate_failures(results, args)
    if args.json:
        for result in results:
            ceiling = result.ceiling.to_dict() if result.ceiling else None
            for judge in result.judges:
                record = judge.to_dict()
                record["human_ceiling"] = ceiling
                print(json.dumps(record, allow_nan=False))
    else:
        _print_tables(loaded.source, results, Console(highlight=False))
    for failure in failures:
        print(f"evalcore: gate failed: {failure}", file=sys.stderr)
    return EXIT_GATE_FAILED if failures else EXIT_OK


def _gate_failures(results: Sequence[FileCalibration], args: argparse.Namespace) -> list[str]:
    failures: list[str] = []
    for option, (key, name) in GATES.items():
        threshold = getattr(args, option)
        if threshold is None:
            continue
        for result in results:
            for judge in result.judges:
                value = getattr(judge.report, key)
                if value is None or math.isnan(value) or value < threshold:
                    shown = "undefined" if value is None or math.isnan(value) else f"{value:.3f}"
                    failures.append(
                        f"{result.metric} / {judge.judge}: {name} {shown} < {threshold:g}"
                    )
    return failures


def _fmt(value: float | None, ci: tuple[float, float] | None = None) -> str:
    if value is None or math.isnan(value):
        return "–"
    text = f"{value:.3f}"
    if ci is not None and not any(math.isnan(v) for v in ci):
        text += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
    return text


def _print_tables(source: str, results: Sequence[FileCalibration], console: Console) -> None:
    for result in results:
        console.print(
            f"[bold]{_esc(result.metric)}[/bold] · {_esc(source)} · {result.scale.kind} scale · "
            f"humans: {_esc(result.judges[0].policy)}"
        )
        table = Table()
        table.add_column("metric")
        for judge in result.judges:
            table.add_column(judge.judge, justify="right")
        rows: list[tuple[str, str]] = [
            ("accuracy_balanced", "balanced accuracy"),
            ("f1_score_balanced", "weighted F1"),
            ("accuracy", "accuracy"),
            ("cohen_kappa", "Cohen's kappa"),
        ]
        if result.scale.is_ordinal:
            rows += [
                ("cohen_kappa_quadratic", "kappa (quadratic)"),
                ("spearman", "Spearman"),
                ("kendall_tau", "Kendall tau-b"),
            ]
        if result.scale.kind == "binary":
            rows += [("tpr", "true-positive rate"), ("tnr", "true-negative rate")]
        table.add_row("n compared", *[str(j.report.n) for j in result.judges])
        table.add_row("n dropped", *[str(j.report.n_dropped) for j in result.judges])
        for key, name in rows:
            table.add_row(
                name,
                *[_fmt(getattr(j.report, key), j.report.ci.get(key)) for j in result.judges],
            )
        console.print(table)
        if result.ceiling and result.ceiling.krippendorff_alpha is not None:
            c = result.ceiling
            console.print(
                f"  human ceiling: Krippendorff's alpha ({c.level}) "
                f"{_fmt(c.krippendorff_alpha, c.alpha_ci)}, mean pairwise kappa "
                f"{_fmt(c.mean_pairwise_kappa)} over {c.n_items} items, {c.n_annotators} annotators"
            )
        for base, other, comp in result.comparisons:
            console.print(
                f"  {other} vs {base}: balanced accuracy "
                f"{comp.diff_balanced_accuracy:+.3f} "
                f"{_ci(comp.diff_balanced_accuracy_ci)}, weighted F1 {comp.diff_weighted_f1:+.3f} "
                f"{_ci(comp.diff_weighted_f1_ci)}, McNemar p = {comp.mcnemar_p:.3g}"
            )
        for judge in result.judges:
            _print_matrix(console, judge.judge, judge.report)
        console.print()


def _esc(text: str) -> str:
    return escape(str(text))


def _ci(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f"[{ci[0]:+.2f}, {ci[1]:+.2f}]"


def _print_matrix(console: Console, name: str, report: Any) -> None:
    labels = [format_label(x) for x in report.labels]
    console.print(f"  confusion matrix of {_esc(name)} (rows: human, columns: judge)")
    table = Table(box=None)
    table.add_column("")
    for label in labels:
        table.add_column(label, justify="right")
    for label, row in zip(labels, report.confusion_matrix.tolist(), strict=True):
        table.add_row(label, *[str(v) for v in row])
    console.print(table)
