"""The confidence options of ``evalcore calibrate``: is the judge's confidence calibrated, when can the
judge decide alone ("trust or escalate"), and what to label next.

``--confidence [JUDGE=]COL`` names the file's column holding each verdict's confidence (the
probability of the chosen label, in [0, 1]); a plain ``COL`` is allowed when the metric has one
judge, ``JUDGE=COL`` (repeatable) pairs a column with each judge by name. The items with a human
label are split into dev and test by :func:`evalcore.improve.make_split` (stratified by the human
label, seeded: ``--test-share``, default 0.4, ``--split-seed``, default 0), the split the prompt
optimiser uses. ``--json`` then adds to each judge's record:

- ``confidence``: ECE over ``--bins`` bins, Brier, the reliability bins, the recalibration
  (``--recalibration``, fitted on dev, judged on test), the view per ``--slice`` value, notes;
- ``selective`` (with ``--target-agreement A``, ``--risk D``): the threshold chosen on dev, the
  candidates tried, dev and test coverage and agreement with the interval, the guarantee in words,
  the coverage–agreement curve on test, and which items are dev and which are test;
- ``label_next`` (with ``--label-next N``): the next N items to label for ``--label-next-metric``
  (default the headline kappa), with a score and a reason each, and what the batch buys.

Only the standard library is imported at module level (the command must start at once).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evalcore.errors import EvalcoreError

if TYPE_CHECKING:
    from evalcore.data import LoadedFile
    from evalcore.report import Calibration, ConfidenceView

#: The defaults the help and the docs state.
DEFAULT_BINS = 10
DEFAULT_RISK = 0.05
DEFAULT_TEST_SHARE = 0.4
DEFAULT_SPLIT_SEED = 0
DEFAULT_MIN_DECIDED = 30


def add_options(p: argparse.ArgumentParser) -> None:
    """Add the confidence options to the ``calibrate`` parser."""
    group = p.add_argument_group(
        "confidence (is the judge's confidence calibrated? when can the judge decide alone?)"
    )
    group.add_argument(
        "--confidence",
        action="append",
        default=[],
        metavar="[JUDGE=]COL",
        help="the column holding each verdict's confidence in [0, 1]; JUDGE=COL pairs a column "
        "with a judge by name (repeatable), a plain COL needs a metric with one judge",
    )
    group.add_argument(
        "--bins",
        type=int,
        default=DEFAULT_BINS,
        metavar="B",
        help=f"equal-width bins of the ECE and the reliability diagram (default {DEFAULT_BINS})",
    )
    group.add_argument(
        "--recalibration",
        choices=["isotonic", "temperature", "none"],
        default="isotonic",
        help="recalibration fitted on dev and judged on test (default isotonic)",
    )
    group.add_argument(
        "--target-agreement",
        type=float,
        default=None,
        metavar="A",
        help="trust or escalate: find the confidence threshold above which the judge agrees with "
        "people at least A of the time (e.g. 0.9), with risk --risk",
    )
    group.add_argument(
        "--risk",
        type=float,
        default=DEFAULT_RISK,
        metavar="D",
        help=f"the chance that the guarantee fails (default {DEFAULT_RISK})",
    )
    group.add_argument(
        "--min-decided",
        type=int,
        default=DEFAULT_MIN_DECIDED,
        metavar="N",
        help=f"skip thresholds that decide fewer than N dev items (default {DEFAULT_MIN_DECIDED})",
    )
    group.add_argument(
        "--test-share",
        type=float,
        default=DEFAULT_TEST_SHARE,
        metavar="S",
        help=f"share of the labelled items in the test part (default {DEFAULT_TEST_SHARE})",
    )
    group.add_argument(
        "--split-seed",
        type=int,
        default=DEFAULT_SPLIT_SEED,
        metavar="K",
        help=f"seed of the dev/test split (default {DEFAULT_SPLIT_SEED})",
    )
    group.add_argument(
        "--slice",
        default=None,
        metavar="COL",
        help="also show the confidence per value of this column (and spread --label-next over it)",
    )
    group.add_argument(
        "--label-next",
        type=int,
        default=None,
        metavar="N",
        help="propose the next N unlabelled items to label for each judge",
    )
    group.add_argument(
        "--label-next-metric",
        default=None,
        metavar="KEY",
        help="the metric whose interval the proposal narrows (default the headline kappa)",
    )


def wanted(args: argparse.Namespace) -> bool:
    """Whether any confidence output was asked for."""
    return bool(args.confidence) or args.label_next is not None or args.target_agreement is not None


def check(args: argparse.Namespace) -> None:
    """Refuse option values that cannot work, before the file is read."""
    if args.target_agreement is not None and not args.confidence:
        raise EvalcoreError("--target-agreement needs --confidence COL (each verdict's confidence)")
    if args.slice is not None and not wanted(args):
        raise EvalcoreError("--slice needs --confidence or --label-next")
    if args.bins < 1:
        raise EvalcoreError(f"--bins must be at least 1 (got {args.bins})")
    for name in ("target_agreement", "risk", "test_share"):
        value = getattr(args, name)
        if value is not None and not 0 < value < 1:
            flag = "--" + name.replace("_", "-")
            raise EvalcoreError(f"{flag} must be strictly between 0 and 1 (got {value})")
    if args.min_decided < 1:
        raise EvalcoreError(f"--min-decided must be at least 1 (got {args.min_decided})")
    if args.label_next is not None and args.label_next < 1:
        raise EvalcoreError(f"--label-next must be at least 1 (got {args.label_next})")


def columns(args: argparse.Namespace, loaded: LoadedFile, metrics: Sequence[str]) -> dict[str, str]:
    """Judge name -> confidence column, from the ``--confidence`` options and the label sets of the
    ``metrics`` computed."""
    if not args.confidence:
        return {}
    if len(metrics) != 1:
        raise EvalcoreError(
            f"--confidence: {loaded.source} has the metrics {', '.join(metrics)}; choose one "
            "with --metric"
        )
    if metrics[0] not in loaded.metrics:
        return {}  # file_data names the metrics the file has
    judges = loaded.label_set(metrics[0]).judge_names
    names = {str(c) for c in loaded.frame.columns}
    found: dict[str, str] = {}
    for spec in args.confidence:
        if spec in names or "=" not in spec:
            if len(judges) != 1:
                raise EvalcoreError(
                    f"--confidence {spec}: {metrics[0]!r} has {len(judges)} judges "
                    f"({', '.join(judges)}); pair the column with one: --confidence JUDGE={spec}"
                )
            judge, column = judges[0], spec
        else:
            judge, column = spec.split("=", 1)
            if judge not in judges:
                raise EvalcoreError(
                    f"--confidence {spec}: no judge named {judge!r} "
                    f"(judges of {metrics[0]!r}: {', '.join(judges)})"
                )
        if judge in found:
            raise EvalcoreError(f"--confidence: judge {judge!r} is given two columns")
        found[judge] = column
    return found


def with_slice(data: Any, loaded: LoadedFile, column: str | None) -> Any:
    """The file's engine input with the ``--slice`` column as metadata."""
    if column is None:
        return data
    if column not in loaded.items.columns:
        raise EvalcoreError(
            f"--slice {column}: {loaded.source} has no such item column "
            f"(columns: {', '.join(map(str, loaded.items.columns))})"
        )
    import pandas as pd

    values = loaded.items[column].astype(object)
    frame = pd.DataFrame(
        {column: values.where(values.notna(), None).map(lambda v: None if v is None else str(v))}
    )
    frame.index = data.items.index
    return data.with_metadata(frame)


class Results:
    """The confidence outputs of one calibration, by run id."""

    def __init__(
        self, view: ConfidenceView, label_next: dict[int, Any], split_notes: list[str]
    ) -> None:
        self.view = view
        self.label_next = label_next
        self.split_notes = split_notes

    def record(self, run_id: int, *, selective: bool) -> dict[str, Any]:
        """The keys one judge's ``--json`` record gains."""
        run = self.view.run(run_id)
        confidence = run.to_dict()
        confidence["notes"] = [*self.split_notes, *confidence["notes"]]
        confidence["n_bins"] = self.view.n_bins
        out: dict[str, Any] = {"confidence": confidence}
        if selective:
            out["selective"] = None if run.selective is None else run.selective.to_dict()
        if run_id in self.label_next:
            out["label_next"] = self.label_next[run_id].to_dict()
        return out


def compute(calibration: Calibration, args: argparse.Namespace) -> Results:
    """The confidence view (and label-next proposals) of one calibration, as the options ask."""
    from evalcore.improve import SplitTooSmallError, make_split
    from evalcore.report import confidence_view, run_label_next

    human = calibration.human
    ids = calibration.data.items["item_id"].reindex(human.index).astype(str)
    labelled = human.notna().to_numpy()
    notes: list[str] = []
    split = None
    try:
        split = make_split(
            list(ids[labelled]),
            list(human[labelled]),
            test_share=args.test_share,
            seed=args.split_seed,
            name="file",
        )
    except SplitTooSmallError as exc:
        if args.target_agreement is not None:
            raise EvalcoreError(f"--target-agreement: no dev/test split: {exc}") from exc
        notes.append(f"no dev/test split, so no recalibration: {exc}")
    view = confidence_view(
        calibration,
        split=split,
        n_bins=args.bins,
        target=args.target_agreement,
        risk=args.risk,
        min_decided=args.min_decided,
        recalibration=None if args.recalibration == "none" else args.recalibration,
        slice_column=args.slice,
    )
    proposals: dict[int, Any] = {}
    if args.label_next is not None:
        for run in calibration.runs:
            proposals[run.info.id] = run_label_next(
                calibration,
                run.info.id,
                n=args.label_next,
                metric=args.label_next_metric,
                split=split,
                slice_column=args.slice,
                seed=args.seed,
            )
    return Results(view, proposals, notes)


def print_results(console: Any, results: Results) -> None:
    """The confidence outputs as text under a calibration's tables."""
    from rich.markup import escape

    for run in results.view.runs:
        title = escape(run.title)
        s = run.summary
        if s is not None:
            console.print(
                f"  confidence of {title}: ECE {s.ece:.3f} over {s.reliability.n_bins} bins, "
                f"Brier {s.brier:.3f} ({s.brier_kind}) on {s.n} items; mean confidence "
                f"{s.mean_confidence:.2f}, agreement {s.agreement:.2f}"
            )
            r = s.reliability
            for b in range(r.n_bins):
                if r.counts[b]:
                    console.print(
                        f"    [{r.edges[b]:.2f}, {r.edges[b + 1]:.2f}{']' if b == r.n_bins - 1 else ')'}"
                        f": {r.counts[b]} items, confidence {r.mean_confidence[b]:.2f}, agreement "
                        f"{r.agreement[b]:.2f} [{r.low[b]:.2f}, {r.high[b]:.2f}]"
                    )
        if run.recalibration is not None:
            c = run.recalibration
            console.print(
                f"  recalibration of {title} ({c.recalibration.method}, fitted on "
                f"{c.recalibration.n} dev items): on {c.n_test} test items ECE "
                f"{c.ece_before:.3f} -> {c.ece_after:.3f}, Brier {c.brier_before:.3f} -> "
                f"{c.brier_after:.3f}"
            )
        if run.selective is not None:
            console.print(f"  trust or escalate: {escape(run.selective.sentence())}")
            console.print(f"    {escape(run.selective.dev.guarantee())}")
            console.print(f"    {escape(run.selective.dev.not_guaranteed())}")
        for part in run.slices:
            if part.summary is not None:
                console.print(
                    f"    slice {escape(part.name)}: ECE {part.summary.ece:.3f}, Brier "
                    f"{part.summary.brier:.3f} on {part.summary.n} items"
                    + (
                        ""
                        if part.test is None
                        else f"; on test the judge decides {part.test.coverage:.0%}"
                    )
                )
        for note in [*results.split_notes, *run.notes]:
            console.print(f"  {escape(note)}")
        proposal = results.label_next.get(run.info.id)
        if proposal is not None:
            console.print(f"  label next for {title}: {escape(proposal.summary())}")
            shown = ", ".join(proposal.item_ids[:20])
            more = len(proposal.item_ids) - 20
            console.print(f"    {escape(shown)}" + (f" and {more} more" if more > 0 else ""))
