"""``evalcore calibrate PATH``: judges against humans from a file, as a table or JSON, with CI gates.

Reads any layout :func:`evalcore.data.load_file` knows (Vertex metrics tables, Azure, RAGAS, long
format, or a plain table with ``--human``/``--judge`` columns), turns every metric found into the
engine's input (:func:`evalcore.report.file_data`) and renders the engine's
:class:`~evalcore.report.Calibration`: its side-by-side table, or per judge its report in Vertex's
key names (``--json``). Every table has the honest baselines beside the judges (a constant judge that
always gives the humans' most frequent label, the chance level of each metric, each label's share);
``--json`` has them under ``baselines``, the human ceiling's coefficients among all annotators
(Fleiss' kappa, Gwet's AC1/AC2, Krippendorff's alpha, each with its standard error and interval)
under ``human_ceiling``, and each interval's method under ``ci_method``. ``--mid-p`` reports
McNemar's mid-p beside the accuracy difference between judges. ``--alt-test`` adds the Alternative
Annotator Test of every judge against the annotators (``alt_test`` in ``--json``). ``--confidence
COL`` (with ``--target-agreement``, ``--label-next`` and the other options of
:mod:`evalcore.cli._confidence`) adds whether each judge's confidence is calibrated, when it can
decide alone, and what to label next (``confidence``, ``selective`` and ``label_next`` in
``--json``). Heavy imports happen when the command runs, not when the parser is built.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evalcore.cli import _confidence
from evalcore.errors import EvalcoreError

if TYPE_CHECKING:
    from evalcore.report import Calibration

EXIT_OK, EXIT_GATE_FAILED = 0, 1

#: ``--min-…`` option → the declared metric it gates (its key in the report and in ``--json``).
GATES = {
    "min_balanced_accuracy": "accuracy_balanced",
    "min_weighted_f1": "f1_score_balanced",
    "min_kappa": "cohen_kappa",
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
    for option in GATES:
        p.add_argument(
            "--" + option.replace("_", "-"),
            type=float,
            default=None,
            metavar="X",
            help=f"exit 1 when any judge's {option.removeprefix('min_').replace('_', ' ')} is "
            "below X",
        )
    alt = p.add_argument_group(
        "Alt-Test (can the judge replace an annotator? needs 3 or more --human columns)"
    )
    alt.add_argument(
        "--alt-test",
        action="store_true",
        help="run the Alternative Annotator Test of every judge against the annotators",
    )
    alt.add_argument(
        "--epsilon",
        type=float,
        default=0.2,
        metavar="E",
        help="the advantage granted to the judge for being cheaper (default 0.2; the paper "
        "suggests 0.2 against crowd workers, 0.1-0.15 against experts)",
    )
    alt.add_argument(
        "--alt-test-scoring",
        default=None,
        metavar="SCORING",
        help="alignment score, one of the Alt-Test scorings evalcore.metrics declares (default: "
        "the one declared for the scale; an unknown name is refused with the list)",
    )
    alt.add_argument(
        "--alt-test-q",
        type=float,
        default=0.05,
        metavar="Q",
        help="false-discovery rate of the Benjamini-Yekutieli correction (default 0.05)",
    )
    alt.add_argument(
        "--alt-test-min-items",
        type=int,
        default=30,
        metavar="N",
        help="items an annotator must share with the judge and another annotator (default 30)",
    )
    p.add_argument(
        "--n-boot",
        type=int,
        default=1000,
        help="bootstrap resamples (0: Wilson and analytic intervals only)",
    )
    p.add_argument(
        "--mid-p",
        action="store_true",
        help="McNemar's mid-p instead of the exact p for the accuracy difference between judges",
    )
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
        help="declared scale, comma-separated in order (e.g. 1,2,3,4,5 or pass,fail or A,B,TIE); "
        "its labels are the axis of the matrices even where nobody used one",
    )
    _confidence.add_options(p)
    p.set_defaults(handler=run)


def calibrations(args: argparse.Namespace) -> tuple[str, list[Calibration]]:
    """The file's source name and one calibration per metric, as the command line asks."""
    from evalcore.data import ColumnMapping, load_file
    from evalcore.report import calibrate_runs, file_data, parse_scale

    mapping = None
    if args.human or args.judge:
        mapping = ColumnMapping(
            item_id=args.id_column,
            human=tuple(args.human),
            judge=tuple(args.judge),
            metric=args.name,
            kind=args.kind,
        )
    if args.n_boot < 0:
        raise EvalcoreError("--n-boot must be 0 or more")
    try:
        scale = parse_scale(args.scale)
    except EvalcoreError as exc:
        raise EvalcoreError(f"--{exc}") from exc
    _confidence.check(args)
    loaded = load_file(args.path, mapping=mapping, scales=scale, round_half_up=args.round_half_up)
    metrics = args.metric or [
        s.metric for s in loaded.label_sets if s.human.shape[1] > 0 and s.judge_names
    ]
    made = [
        calibrate_runs(
            _confidence.with_slice(data, loaded, args.slice),
            policy=args.human_policy,
            n_boot=args.n_boot,
            seed=args.seed,
            mid_p=args.mid_p,
        )
        for data in file_data(
            loaded,
            metrics=args.metric,
            declared=scale is not None,
            confidences=_confidence.columns(args, loaded, metrics),
        )
    ]
    return loaded.source, made


def alt_tests(calibration: Calibration, args: argparse.Namespace) -> dict[int, Any]:
    """The Alt-Test of every run of a calibration (run id -> :class:`~evalcore.metrics.AltTest`),
    as the ``--alt-test`` options ask."""
    from evalcore.metrics import alt_test_scoring
    from evalcore.report import run_alt_test

    if args.alt_test_scoring is not None:
        alt_test_scoring(args.alt_test_scoring)  # a declared one, or an error listing them
    return {
        run.info.id: run_alt_test(
            calibration.data,
            run.info.id,
            scoring=args.alt_test_scoring,
            epsilon=args.epsilon,
            q=args.alt_test_q,
            min_items=args.alt_test_min_items,
        )
        for run in calibration.runs
    }


def run(args: argparse.Namespace) -> int:
    source, results = calibrations(args)
    failures = _gate_failures(results, args)
    tests = [alt_tests(c, args) if args.alt_test else {} for c in results]
    confident = [
        _confidence.compute(c, args) if _confidence.wanted(args) else None for c in results
    ]
    if args.json:
        for calibration, found, extra in zip(results, tests, confident, strict=True):
            for run_result, record in zip(calibration.runs, json_records(calibration), strict=True):
                if args.alt_test:
                    record["alt_test"] = found[run_result.info.id].to_dict()
                if extra is not None:
                    record.update(
                        extra.record(
                            run_result.info.id, selective=args.target_agreement is not None
                        )
                    )
                print(json.dumps(record, allow_nan=False))
    else:
        _print_tables(source, results, tests, confident)
    for failure in failures:
        print(f"evalcore: gate failed: {failure}", file=sys.stderr)
    return EXIT_GATE_FAILED if failures else EXIT_OK


def json_records(calibration: Calibration) -> list[dict[str, Any]]:
    """One JSON-ready record per judge: its report in Vertex's key names (the confusion matrix over
    the labels observed, as Vertex reports it), with coverage, policy and the human ceiling."""
    ceiling = None if calibration.ceiling is None else calibration.ceiling.to_dict()
    references = calibration.references()
    baselines = None if references is None else references.to_dict()
    out = []
    for run in calibration.runs:
        record: dict[str, Any] = {
            "metric": calibration.data.criterion.name,
            "kind": calibration.kind,
        }
        if run.report is not None:
            record.update(run.report.to_dict())
        else:
            record.update({"n": 0, "n_dropped": run.coverage.n_items})
        comparison = run.comparison
        record.update(
            {
                "judge": run.title,
                "human_policy": calibration.policy_used,
                "coverage": run.coverage.to_dict(),
                "human_ceiling": ceiling,
                "baselines": baselines,
                "comparison": None if comparison is None else comparison.to_dict(),
            }
        )
        out.append(record)
    return out


def _gate_failures(results: Sequence[Calibration], args: argparse.Namespace) -> list[str]:
    from evalcore.metrics import metric_def

    failures: list[str] = []
    for option, key in GATES.items():
        threshold = getattr(args, option)
        if threshold is None:
            continue
        name = metric_def(key).name
        for calibration in results:
            for run in calibration.runs:
                value = None if run.report is None else getattr(run.report, key)
                if value is None or math.isnan(value) or value < threshold:
                    shown = "undefined" if value is None or math.isnan(value) else f"{value:.3f}"
                    failures.append(
                        f"{calibration.data.criterion.name} / {run.title}: {name} {shown} "
                        f"< {threshold:g}"
                    )
    return failures


def _print_tables(
    source: str,
    results: Sequence[Calibration],
    tests: Sequence[dict[int, Any]],
    confident: Sequence[_confidence.Results | None] = (),
) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from evalcore.report import policy_name

    console = Console(highlight=False)
    extras = list(confident) or [None] * len(results)
    for calibration, found, extra in zip(results, tests, extras, strict=True):
        scale = calibration.data.scale
        axis = "declared" if calibration.data.scale_declared else "observed"
        console.print(
            f"[bold]{escape(calibration.data.criterion.name)}[/bold] · {escape(source)} · "
            f"{scale.kind} scale ({axis} labels) · humans: {escape(policy_name(calibration.policy_used))}"
        )
        side = calibration.table()
        table = Table()
        table.add_column("metric")
        for column in side.text.columns:
            table.add_column(escape(str(column)), justify="right")
        for row, cells in side.text.iterrows():
            table.add_row(escape(str(row)), *(escape(str(c)) for c in cells))
        console.print(table)
        for note in calibration.notes():
            console.print(f"  {escape(note)}")
        for title, report in calibration.panels():
            labels = report.confusion_matrix_labels
            console.print(f"  confusion matrix of {escape(title)} (rows: human, columns: judge)")
            matrix = Table(box=None)
            matrix.add_column("")
            for label in labels:
                matrix.add_column(escape(label), justify="right")
            for label, counts in zip(labels, report.confusion_matrix.tolist(), strict=True):
                matrix.add_row(escape(label), *(str(v) for v in counts))
            console.print(matrix)
        for run in calibration.runs:
            if run.info.id in found:
                _print_alt_test(console, run.title, found[run.info.id])
        if extra is not None:
            _confidence.print_results(console, extra)
        console.print()


def _print_alt_test(console: Any, title: str, result: Any) -> None:
    from rich.markup import escape

    console.print(f"  Alt-Test of {escape(title)} ({result.scoring}): {escape(result.verdict())}")
    for a in result.annotators:
        if a.skipped is not None:
            console.print(f"    {escape(str(a.annotator))}: skipped ({escape(a.skipped)})")
        else:
            p = "NaN (constant d)" if a.p_value != a.p_value else f"{a.p_value:.3g}"
            console.print(
                f"    {escape(str(a.annotator))}: n={a.n}, rho={a.advantage_probability:.2f}, "
                f"p={p}, {'judge wins' if a.won else 'judge does not win'}"
            )
