"""``evalcore judge optimize``: improve a judge template from a file's human labels, proven on a held-out
split.

::

    evalcore judge optimize DATASET_FILE --human COLUMN --template T.toml --model M --base-url URL
        --optimizer-model M2 [--optimizer-base-url URL2] [--api-key-env VAR]
        [--optimizer-api-key-env VAR] [--comments COLUMN] [--cache PATH | --no-cache]
        [--timeout S] [SETTINGS] --out DIR
    evalcore judge optimize ... --estimate

The settings are the rows of :data:`evalcore.improve.OPTIMIZE_SETTINGS`, each an option of its
name (``--test-share 0.4``, ``--split-seed N``, ``--metric NAME``, ``--finalists N``, ``--margin X``,
``--fewshot-candidates N``, ``--rewrites N``, ``--budget-usd X``, ``--max-requests N``,
``--confidence 0.9``, ``--n-boot N`` ...) with the table's default and bounds; ``--help`` lists
them.

The file is read as ``judge run`` reads it, and ``COLUMN`` holds the human labels on the template's
scale (items without one take no part). :func:`evalcore.improve.optimize` splits the labelled items
into dev and test (stratified by label, seeded), proposes candidates on dev (few-shot examples,
rewrites by the optimiser model), ranks them on dev and runs the best few once on test beside the
starting template.

It writes ``DIR/report.json`` (:meth:`~evalcore.improve.OptimizeReport.to_dict`: the split, every
candidate with its kind and dev figures, the start and the finalists with their test figures) and
``DIR/best.toml``, the chosen candidate as a template file, only when one beat the start on test (an
older ``best.toml`` is removed otherwise). The table of candidates goes to stdout, progress to
stderr. Every reply goes through the shared reply cache (as ``judge run``), so the same command run
again is answered from it; ``Ctrl-C`` stops after the requests in flight and writes what is done.

``--estimate`` prints the requests, tokens and cost the optimisation would take, and sends nothing.
``--budget-usd`` and ``--max-requests`` cap the run: it stops when the next step would pass them,
and says so.

Exit status: 0 when the report is written (whether or not a candidate beat the start), 2 on bad input
(an unreadable file, a missing column, too few labels for a split that means anything).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.errors import ConfigError, DataError

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.improve import (
        FinalistResult,
        ImproveProgress,
        OptimizeReport,
        OptimizeSetting,
        OptimizeSettings,
    )
    from evalcore.judge import JudgeItem, JudgeTemplate
    from evalcore.labels import Label

__all__ = ["register"]


def register(actions: Any) -> None:
    """Add ``optimize`` to the ``judge`` actions; its settings' options come from
    :data:`evalcore.improve.OPTIMIZE_SETTINGS` (a table that imports nothing heavy)."""
    from evalcore.improve import OPTIMIZE_SETTINGS

    parser: argparse.ArgumentParser = actions.add_parser(
        "optimize",
        help="improve a template from human labels, proven better on held-out items",
        description="Propose candidate templates from the disagreements on a dev split, rank them "
        "on dev, and compare the best with the start on a test split they never saw.",
    )
    parser.add_argument("dataset", type=Path, metavar="DATASET_FILE")
    parser.add_argument(
        "--human",
        required=True,
        action="append",
        metavar="COLUMN",
        help="a human label column (repeat it for several annotators: the majority is the label, "
        "and their agreement on test the human ceiling)",
    )
    parser.add_argument("--template", required=True, type=Path, help="the starting template (TOML)")
    parser.add_argument("--model", required=True, help="the judge's model")
    parser.add_argument("--base-url", default="https://api.openai.com/v1", help="judge endpoint")
    parser.add_argument("--optimizer-model", required=True, help="the model that proposes rewrites")
    parser.add_argument(
        "--optimizer-base-url", help="the optimiser's endpoint (default: the judge's)"
    )
    parser.add_argument(
        "--api-key-env",
        help="NAME of the environment variable holding the API key (default OPENAI_API_KEY if set)",
    )
    parser.add_argument(
        "--optimizer-api-key-env", help="the optimiser's key variable (default: the judge's)"
    )
    parser.add_argument("--comments", metavar="COLUMN", help="the annotators' comment column")
    tuning = parser.add_argument_group("optimisation settings (evalcore.improve.OPTIMIZE_SETTINGS)")
    for setting in OPTIMIZE_SETTINGS:
        tuning.add_argument(
            setting.flag,
            dest=setting.name,
            type=setting.kind,
            default=None,
            metavar="NAME" if setting.kind is str else "N" if setting.kind is int else "X",
            help=_setting_help(setting),
        )
    parser.add_argument(
        "--cache", type=Path, help="reply cache file (default: the shared cache, as judge run)"
    )
    parser.add_argument("--no-cache", action="store_true", help="do not read or write a cache")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    parser.add_argument(
        "--estimate", action="store_true", help="print requests, tokens and cost, then stop"
    )
    parser.add_argument("--out", type=Path, help="folder for report.json and best.toml")
    parser.set_defaults(handler=_optimize)


def _setting_help(setting: OptimizeSetting) -> str:
    """A setting's help with its default and bounds (``%`` escaped for argparse)."""
    if setting.optional and setting.default is None:
        default = "no cap"
    else:
        default = f"default {setting.default}"
    bounds = []
    if setting.least is not None:
        bounds.append(f"at least {setting.least:g}")
    if setting.most is not None:
        bounds.append(f"at most {setting.most:g}")
    facts = "; ".join([default, *bounds])
    return f"{setting.help} ({facts})".replace("%", "%%")


# --- inputs ----------------------------------------------------------------------------------------


def _check(args: argparse.Namespace) -> None:
    if not args.estimate and args.out is None:
        raise ConfigError("give --out DIR (where report.json and best.toml go), or --estimate")


def _settings(args: argparse.Namespace, scale_kind: str) -> OptimizeSettings:
    """The settings given on the command line (the table's defaults for the others), checked
    against :data:`~evalcore.improve.OPTIMIZE_SETTINGS`; an error names the option."""
    from evalcore.improve import OPTIMIZE_SETTINGS, OptimizeSettings, optimize_setting

    given = {s.name: getattr(args, s.name) for s in OPTIMIZE_SETTINGS}
    try:
        settings = OptimizeSettings(**{k: v for k, v in given.items() if v is not None})
        settings.headline(scale_kind)
    except ConfigError as exc:
        if exc.column is None:
            raise
        raise ConfigError(f"{optimize_setting(exc.column).flag}: {exc}") from None
    return settings


def _inputs(
    args: argparse.Namespace, template: JudgeTemplate
) -> tuple[list[JudgeItem], dict[str, Label], dict[str, str], pd.DataFrame]:
    """The labelled items (without the label and comment columns), their labels (the majority
    of the ``--human`` columns, as the Calibrate page makes one label of several), comments, and
    the annotators' labels (items x columns)."""
    from evalcore.cli.judge import _read_items, _with_transcripts
    from evalcore.data import ColumnMapping, load_file
    from evalcore.judge import JudgeItem
    from evalcore.labels import is_missing
    from evalcore.report import aggregate_human

    if not args.dataset.exists():
        raise DataError(f"dataset file {args.dataset} does not exist", source=str(args.dataset))
    columns = tuple(args.human)
    mapping = ColumnMapping(human=columns, metric=template.criterion or template.name)
    loaded = load_file(args.dataset, mapping=mapping, scales=template.scale)
    label_set = loaded.label_set(mapping.metric)
    annotations = label_set.human.copy()
    annotations.index = [str(k) for k in annotations.index]
    majority = aggregate_human(annotations, label_set.scale, "majority")
    human = {str(k): v for k, v in majority.items() if not is_missing(v)}
    if not human:
        shown = ", ".join(repr(c) for c in columns)
        raise DataError(f"column {shown} has no human label", source=loaded.source)
    hidden = {*columns, args.comments}
    items = [
        JudgeItem(item.item_id, {k: v for k, v in item.fields.items() if k not in hidden})
        for item in _with_transcripts(_read_items(args.dataset, None))
        if item.item_id in human
    ]
    comments: dict[str, str] = {}
    if args.comments is not None:
        if args.comments not in loaded.frame.columns:
            raise DataError(
                f"comment column {args.comments!r} is not in the file", source=loaded.source
            )
        raw = {i.item_id: i.fields.get(args.comments) for i in _read_items(args.dataset, None)}
        comments = {k: str(v) for k, v in raw.items() if k in human and v not in (None, "")}
    return items, human, comments, annotations


def _client(base_url: str, key_env: str | None, timeout: float) -> Any:
    import os

    from evalcore.judge import Endpoint, client_factory

    if key_env is None and os.environ.get("OPENAI_API_KEY"):
        key_env = "OPENAI_API_KEY"
    return client_factory(Endpoint("cli", base_url=base_url, api_key_env=key_env), timeout=timeout)


# --- the command -----------------------------------------------------------------------------------


def _optimize(args: argparse.Namespace) -> int:
    from evalcore.cli.judge import _cache
    from evalcore.improve import optimize
    from evalcore.judge import JudgeTemplate

    _check(args)
    start = JudgeTemplate.load_toml(args.template)
    settings = _settings(args, start.scale.kind)
    items, human, comments, annotations = _inputs(args, start)
    if args.estimate:
        return _print_estimate(args, items, human, start, settings)
    out: Path = args.out
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file, not a folder")
    judge_client = _client(args.base_url, args.api_key_env, args.timeout)
    optimizer_client = _client(
        args.optimizer_base_url or args.base_url,
        args.optimizer_api_key_env or args.api_key_env,
        args.timeout,
    )
    cache = _cache(args, create=True)
    stop = threading.Event()
    try:
        with _interrupt_sets(stop):
            report = optimize(
                items,
                human,
                start,
                judge_client=judge_client,
                model=args.model,
                optimizer_client=optimizer_client,
                optimizer_model=args.optimizer_model,
                settings=settings,
                cache=cache,
                progress=_progress,
                should_stop=stop.is_set,
                comments=comments,
                annotations=annotations,
            )
    finally:
        if cache is not None:
            cache.close()
    _write(report, out)
    print(_table(report))
    if report.stopped:
        print(f"evalcore: stopped early: {report.stopped}", file=sys.stderr)
    return 0


def _print_estimate(
    args: argparse.Namespace,
    items: list[JudgeItem],
    human: dict[str, Label],
    start: JudgeTemplate,
    settings: OptimizeSettings,
) -> int:
    """``--estimate``: the requests, tokens and cost at most, from the cache where it answers."""
    from evalcore.cli.judge import _cache
    from evalcore.improve import estimate_optimize
    from evalcore.judge import endpoint_identity

    cache = _cache(args, create=False)
    try:
        requests, tokens_in, tokens_out, cost = estimate_optimize(
            items,
            human,
            start,
            model=args.model,
            optimizer_model=args.optimizer_model,
            settings=settings,
            cache=cache,
            endpoint=endpoint_identity(args.base_url),
        )
    finally:
        if cache is not None:
            cache.close()
    shown = "unknown (no price for these models)" if cost is None else f"${cost:.4f}"
    print(
        f"optimisation of {start.name} on {len(items)} labelled items, at most: "
        f"{requests:,} requests, {tokens_in:,} tokens in, {tokens_out:,} tokens out, cost {shown}"
    )
    return 0


def _write(report: OptimizeReport, out: Path) -> None:
    """``report.json`` and, when a candidate beat the start on test, ``best.toml``."""
    from evalcore.improve import candidate_template_toml

    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report.to_dict(), ensure_ascii=False, indent=2, default=str)
    (out / "report.json").write_text(text + "\n", encoding="utf-8")
    best = out / "best.toml"
    if report.best is not None:
        best.write_text(candidate_template_toml(report.best, report), encoding="utf-8")
        print(f"evalcore: {report.best.id} beat the start on test: {best}", file=sys.stderr)
    else:
        best.unlink(missing_ok=True)
        print("evalcore: no candidate beat the start on test; no best.toml", file=sys.stderr)
    print(
        f"evalcore: report in {out / 'report.json'}; {report.requests:,} requests, "
        f"${report.cost:.4f}",
        file=sys.stderr,
    )


@contextlib.contextmanager
def _interrupt_sets(stop: threading.Event) -> Iterator[None]:
    """While inside, the first Ctrl-C sets ``stop`` (the run ends cleanly), a second one interrupts."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        print("evalcore: stopping after the requests in flight…", file=sys.stderr, flush=True)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _progress(progress: ImproveProgress) -> None:
    """One line of progress on stderr: the phase, the steps, requests and cost so far."""
    print(
        f"evalcore: {progress.phase} · step {progress.done}/{progress.total} · "
        f"{progress.requests:,} requests · ${progress.cost:.4f}",
        file=sys.stderr,
        flush=True,
    )


# --- the table -------------------------------------------------------------------------------------


def _figure(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _interval(value: tuple[float, float] | None) -> str:
    return "—" if value is None else f"[{value[0]:.3f}, {value[1]:.3f}]"


def _table(report: OptimizeReport) -> str:
    """Candidates with their dev figure, then the start and the finalists on test."""
    metric = report.metric
    lines = [
        f"split {report.split.name}: {len(report.split.dev)} dev, {len(report.split.test)} test "
        f"items (seed {report.split.seed})",
        "",
        f"{'candidate':<24} {'kind':<8} {'dev ' + metric:>22} {'interval':>17} {'coverage':>9}",
    ]
    for result in [report.start, *report.candidates]:
        lines.append(
            f"{result.candidate.id:<24} {result.candidate.kind:<8} "
            f"{_figure(result.dev.get(metric)):>22} {_interval(result.dev_interval):>17} "
            f"{result.coverage:>9.0%}"
        )
    lines += [
        "",
        f"{'on test':<24} {metric:>10} {'interval':>17} {'difference':>11} {'interval':>17} "
        f"{'McNemar p':>10}  beats start",
    ]
    for final in [report.start_test, *report.finalists]:
        lines.append(_final_line(final))
    ceiling = report.ceiling
    if ceiling is not None and ceiling.krippendorff_alpha is not None:
        alpha = f"{ceiling.krippendorff_alpha:.3f}"
        if ceiling.alpha_ci is not None:
            alpha += f" {_interval(ceiling.alpha_ci)}"
        kappa = _figure(ceiling.mean_pairwise_kappa)
        lines.append(
            f"human ceiling on test ({ceiling.n_items} items, {ceiling.n_kept} annotators): "
            f"Krippendorff's alpha {alpha}, mean pairwise kappa "
            f"({ceiling.kappa_weights or 'unweighted'}) {kappa}"
        )
    lines.append(f"intervals: {report.confidence:.0%} (paired bootstrap for the differences)")
    return "\n".join(lines)


def _final_line(final: FinalistResult) -> str:
    p = "—" if final.mcnemar_p is None else f"{final.mcnemar_p:.3g}"
    return (
        f"{final.candidate.id:<24} {_figure(final.test):>10} {_interval(final.test_interval):>17} "
        f"{_figure(final.difference):>11} {_interval(final.difference_interval):>17} {p:>10}  "
        f"{'yes' if final.beats_start else 'no'}"
    )
