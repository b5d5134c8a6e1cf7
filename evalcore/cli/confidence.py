"""``evalcore judge jury`` and ``evalcore judge escalate``: combine judges, and send the verdicts a
judge is least sure of to people.

::

    evalcore judge jury --member A.jsonl --member B.jsonl [--member C.jsonl ...]
        [--method majority|mean|weighted] [--weight W ...] [--scale LABELS | --template T.toml]
        --out JURY.jsonl
    evalcore judge jury --run ID --run ID [--run ID ...] [--method ...] [--weight W ...]
        [--name NAME] [--database-url URL]
    evalcore judge escalate --run ID --threshold T [--name NAME] [--keep-labelled]
        [--no-undecided] [--inactive] [--database-url URL]

``jury`` over files reads results files written by ``evalcore judge run`` (one JSON line per item
and order) and writes the jury's results file in the same format: per item, the combined label, its
``probabilities`` (the members' vote shares) and its ``confidence`` (the share that agrees), and in
``details`` every member's vote (by file name). A member's verdict on an item is its ``AB`` result
(a ``flip`` run's only one); an item a member lacks or did not answer is missing for it, not a vote.
The scale comes from ``--scale`` (``"1,2,3,4,5"``, ``"pass,fail"``, ``"A,B,TIE"``) or the
``--template``, else from the labels the members gave. ``--method majority`` (the default) counts
votes, ties to the label first in the scale's order (a pairwise tie between A and B is TIE);
``weighted`` sums one ``--weight`` per member (in the order of the members); ``mean`` averages a
numeric scale (weighted when weights are given) and rounds half up to the scale.

``jury`` over the database (``--run``) saves the jury as a run of the same dataset and criterion
(source ``jury``, its members kept), which every calibration reads like any run, and prints its id.

``escalate`` saves the items run ``ID`` gave a confidence below ``T`` as the active order of the
annotation queue of its dataset and criterion, lowest confidence first, after the items it could not
decide (no verdict, or a verdict of unknown confidence; unless ``--no-undecided``); items that already have a human label are left out (unless
``--keep-labelled``). Annotators' next claims follow it without seeing why; ``--inactive`` only saves
it. It prints how many items went to people.

Exit status: 0 done, 2 on bad input (an unreadable file, members of different datasets, a weight
missing, a run with no confidence).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.cli._database import add_database_option, cli_actor_name, open_acting_store
from evalcore.errors import ConfigError, DataError

if TYPE_CHECKING:
    from evalcore.judge import JudgeResult
    from evalcore.labels import Scale

__all__ = ["register"]


def register(actions: Any) -> None:
    """Add ``jury`` and ``escalate`` to the ``judge`` actions."""
    jury: argparse.ArgumentParser = actions.add_parser(
        "jury",
        help="combine several judges' verdicts into one (majority, mean or weights)",
        description="Combine the verdicts of several judges on the same items: results files "
        "(--member) into a results file, or stored runs (--run) into a stored jury run.",
    )
    jury.add_argument(
        "--member",
        action="append",
        default=[],
        type=Path,
        metavar="RESULTS.jsonl",
        help="a results file of `evalcore judge run` (repeatable; at least two)",
    )
    jury.add_argument(
        "--run",
        action="append",
        default=[],
        type=int,
        metavar="ID",
        help="a stored run (repeatable; at least two, of one dataset and criterion)",
    )
    jury.add_argument(
        "--method",
        choices=("majority", "mean", "weighted"),
        default="majority",
        help="how votes combine (default majority)",
    )
    jury.add_argument(
        "--weight",
        action="append",
        type=float,
        metavar="W",
        help="a member's weight, in the members' order (repeatable; for weighted and mean)",
    )
    jury.add_argument("--scale", help="the scale, e.g. 1,2,3,4,5 or pass,fail (files only)")
    jury.add_argument(
        "--template", type=Path, help="take the scale from this template (files only)"
    )
    jury.add_argument("--out", type=Path, help="the jury's results file (files only)")
    jury.add_argument("--name", help="the jury run's name (database only)")
    add_database_option(jury)
    jury.set_defaults(handler=_jury)

    escalate: argparse.ArgumentParser = actions.add_parser(
        "escalate",
        help="send the items a stored run is least sure of to the annotation queue",
        description="Save the items of run ID whose confidence is below the threshold as the "
        "annotation queue's order, lowest confidence first; annotators do not see why.",
    )
    escalate.add_argument("--run", required=True, type=int, metavar="ID", help="the stored run")
    escalate.add_argument(
        "--threshold", required=True, type=float, metavar="T", help="a confidence in [0, 1]"
    )
    escalate.add_argument("--name", help="the queue order's name (default: from the run)")
    escalate.add_argument(
        "--keep-labelled",
        action="store_true",
        help="also send items that already have a human label",
    )
    escalate.add_argument(
        "--no-undecided",
        action="store_true",
        help="leave out the items the judge could not decide (no verdict or no confidence)",
    )
    escalate.add_argument(
        "--inactive", action="store_true", help="save the order without making the queue follow it"
    )
    add_database_option(escalate)
    escalate.set_defaults(handler=_escalate)


# --- jury ------------------------------------------------------------------------------------------


def _jury(args: argparse.Namespace) -> int:
    if args.member and args.run:
        raise ConfigError(
            "give the members as files (--member) or as stored runs (--run), not both"
        )
    if args.run:
        for option in ("scale", "template", "out"):
            if getattr(args, option) is not None:
                raise ConfigError(f"--{option} applies to members given as files (--member)")
        return _jury_runs(args)
    if not args.member:
        raise ConfigError(
            "name the jury's members: --member RESULTS.jsonl (or --run ID), twice or more"
        )
    if args.out is None:
        raise ConfigError("name the jury's results file: --out JURY.jsonl")
    if args.name is not None:
        raise ConfigError("--name applies to a stored jury (--run)")
    return _jury_files(args)


def _read_results(path: Path) -> list[JudgeResult]:
    from evalcore.judge import JudgeResult

    if not path.exists():
        raise DataError(f"results file {path} does not exist", source=str(path))
    out = []
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                text = line.strip()
                if not text:
                    continue
                try:
                    out.append(JudgeResult.from_dict(json.loads(text)))
                except (ValueError, KeyError, TypeError) as exc:
                    raise DataError(
                        f"{path}, line {number}: not a result of `evalcore judge run` ({exc})",
                        source=str(path),
                        rows=(number,),
                    ) from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"{path} is not UTF-8 text", source=str(path)) from exc
    return out


def _file_scale(args: argparse.Namespace, members: list[list[JudgeResult]]) -> Scale:
    from evalcore.labels import infer_scale

    if args.scale is not None and args.template is not None:
        raise ConfigError("give the scale once: --scale or --template")
    if args.template is not None:
        from evalcore.judge import JudgeTemplate

        return JudgeTemplate.load_toml(args.template).scale
    if args.scale is not None:
        from evalcore.report import parse_scale

        scale = parse_scale(args.scale)
        if scale is None:
            raise ConfigError("--scale is empty")
        return scale
    seen = [r.label for results in members for r in results if r.label is not None]
    if not seen:
        raise ConfigError("no member gave a label: name the scale with --scale")
    scale = infer_scale(seen)
    print(
        f"evalcore: the scale, from the members' labels: {', '.join(scale.display_labels)} "
        "(name it with --scale to include labels nobody gave)",
        file=sys.stderr,
    )
    return scale


def _jury_files(args: argparse.Namespace) -> int:
    from evalcore.judge import JsonlSink, jury_results, member_verdicts

    paths: list[Path] = args.member
    members = [_read_results(path) for path in paths]
    scale = _file_scale(args, members)
    for path, results in zip(paths, members, strict=True):
        for result in results:
            if result.label is not None and result.label not in scale.labels:
                try:
                    scale.coerce(result.label)
                except ValueError as exc:
                    raise DataError(
                        f"{path}: item {result.item_id!r}: {exc}",
                        source=str(path),
                        item_id=result.item_id,
                    ) from exc
    verdicts = [member_verdicts([_on_scale(r, scale) for r in results]) for results in members]
    order: dict[str, None] = {}
    for verdict in verdicts:
        order.update(dict.fromkeys(verdict))
    names = [p.name if [q.name for q in paths].count(p.name) == 1 else str(p) for p in paths]
    results = jury_results(
        verdicts, list(order), scale, names=names, method=args.method, weights=args.weight
    )
    if args.out.exists():
        args.out.unlink()  # a jury is recomputed whole, never resumed
    with JsonlSink(args.out) as sink:
        sink.record_many(results)
    ok = sum(1 for r in results if r.status == "ok")
    print(
        f"evalcore: jury of {len(paths)} members ({args.method}): {ok}/{len(results)} items "
        f"decided in {args.out}",
        file=sys.stderr,
    )
    return 0


def _on_scale(result: JudgeResult, scale: Scale) -> JudgeResult:
    from dataclasses import replace

    if result.label is None:
        return result
    return replace(result, label=scale.coerce(result.label))


def _jury_runs(args: argparse.Namespace) -> int:
    from evalcore.runs import create_jury

    store = open_acting_store(args)
    try:
        run = create_jury(store, args.run, name=args.name, method=args.method, weights=args.weight)
        progress = store.run_progress(run.id)
    finally:
        store.close()
    print(run.id)
    print(
        f"evalcore: saved jury run {run.id} {run.name!r}: {progress.ok} items decided, "
        f"{progress.failed} with no member's label",
        file=sys.stderr,
    )
    return 0


# --- escalate --------------------------------------------------------------------------------------


def _escalate(args: argparse.Namespace) -> int:
    from evalcore.runs import escalate

    store = open_acting_store(args)
    try:
        found = escalate(
            store,
            args.run,
            threshold=args.threshold,
            name=args.name,
            author=cli_actor_name(),
            include_undecided=not args.no_undecided,
            skip_labelled=not args.keep_labelled,
            activate=not args.inactive,
        )
    finally:
        store.close()
    if found.order is None:
        print(
            f"evalcore: nothing to escalate: no item of run {args.run} is below "
            f"{args.threshold:g} without a human label",
            file=sys.stderr,
        )
        return 0
    state = "the queue now follows it" if found.order.active else "saved, not active"
    print(
        f"evalcore: {found.order.n_items} items to people in queue order "
        f"{found.order.name!r} ({state}): {found.undecided} the judge could not decide, {found.below} below "
        f"{args.threshold:g}; {found.labelled} already labelled were left out",
        file=sys.stderr,
    )
    return 0
