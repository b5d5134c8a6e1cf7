"""``evalcore judge``: run a judge template or a built-in metric over a dataset file, without the
database (for CI).

::

    evalcore judge run DATASET (--template T.toml | --metric NAME [--template EDITED.toml])
        --model M --base-url URL --out RESULTS.jsonl
        [--threshold T] [--param KEY=VALUE ...]
        [--api-key-env VAR] [--concurrency N] [--rpm N] [--tpm N] [--order single|both|flip]
        [--seed N] [--limit N] [--cache PATH | --no-cache] [--timeout S] [--max-attempts N]
        [--logprobs [--top-logprobs K]] [--samples N]
        [--batch [--batch-poll SECONDS] [--batch-retry live|batch|none] [--batch-price IN,OUT]]
    evalcore judge estimate DATASET (--template T.toml | --metric NAME) --model M
        [--out RESULTS.jsonl] [--cache PATH] [--batch --batch-price IN,OUT]
    evalcore judge export-batch DATASET (--template T.toml | --metric NAME) --model M
        --out REQUESTS.jsonl [--batch-max-requests N] [--batch-max-mb MB]
    evalcore judge import-batch DATASET (--template T.toml | --metric NAME) --model M
        --responses OUTPUT.jsonl [--responses MORE.jsonl ...] --out RESULTS.jsonl
    evalcore judge metrics [--format text|markdown|json] [--group GROUP]
    evalcore judge optimize DATASET --human COLUMN --template T.toml --model M
        --optimizer-model M2 --out DIR ...     (see evalcore.cli.optimize)
    evalcore judge jury (--member A.jsonl --member B.jsonl ... --out JURY.jsonl | --run ID ...)
    evalcore judge escalate --run ID --threshold T     (see evalcore.cli.confidence)

``--metric`` runs a registered metric (``evalcore judge metrics`` lists them): its inputs are
checked before any request, template metrics add ``threshold`` and ``result`` (pass/fail) to each
line's ``details``, pipeline metrics (``factual_correctness``, ``summarization_score``) put every
intermediate there, and function metrics (``f1_score``) need no model or endpoint. ``--threshold``
changes the pass threshold, ``--param`` a pipeline's parameters (``mode=precision``, ``beta=2``,
``atomicity=high``, ``coverage=high``, ``coeff=0.3``), and ``--template`` with ``--metric`` runs an
edited copy of the metric's template. ``--order`` defaults to the metric's own (``flip`` for Vertex
pairwise metrics) and to ``single`` for a template.

The dataset is read with :func:`evalcore.data.read_table` (CSV, TSV, JSONL, JSON, Parquet). Items are
keyed by an ``item_id``, ``id`` or ``idx`` column, else by row number (1-based). A template sees the
file's own columns and, when the layout is recognised, the canonical fields too (``prompt``,
``response``, ``context``, ``reference``, ``response_a``, ``response_b``).

``--out`` gets one JSON line per (item, order) as each result arrives (``item_id``, ``order``,
``status``, ``label``, ``reason``, ``raw``, ``error``, ``tokens``, ``latency_s``, ``cost``,
``cached``, ``probabilities``, ``confidence`` …). ``--logprobs`` (with ``--top-logprobs K``
alternatives per token) asks the endpoint for log-probabilities: ``probabilities`` is then the
probability of each label of the scale where the reply writes its label (renormalised over the
scale; ``details.confidence.off_scale`` is the share that went elsewhere), ``score`` the expected
score on a numeric scale, and ``confidence`` the probability of the label given. ``--samples N``
takes N samples per item: without logprobs, ``probabilities`` are the samples' shares and
``confidence`` the share of the majority label; with them, the mean of the samples'
probabilities. Both are request settings, as ``logprobs``, ``top_logprobs`` and ``n`` in a
template's ``[model]`` table, and part of the reply cache's key. Running the same command again skips what is finished. Replies are kept in one
content-addressed cache shared by every run (default: ``replies.sqlite`` in ``$EVALCORE_CACHE_DIR``,
else in the user's cache directory; ``--cache PATH`` names another file, ``--no-cache`` uses none):
a request with the same endpoint, model, parameters and messages is never paid for twice, whatever
``--out`` is, and several processes may share the file. Failed items are tried again.

``--batch`` sends the run through the endpoint's Batch API (OpenAI's, or any server that offers
``/v1/files`` and ``/v1/batches``): the requests are written as batch files (split at 50,000
requests or 200 MB), uploaded and submitted; the batch ids are kept in ``OUT.batches.json`` beside
``--out`` the moment they exist, so the same command run again resumes the batches (it never submits
one twice). The batches are polled every ``--batch-poll`` seconds (default 60; progress on stderr),
and their replies imported with the same parsing, statuses and cache as a live run. Requests the
provider failed or let expire are sent live by the same run (``--batch-retry live``, the default),
put in a follow-up batch (``batch``), or recorded as failed with the provider's error (``none``).
``--batch-price IN,OUT`` is the model's batch price in dollars per million tokens (no cost is
shown without one).

``export-batch`` writes the requests of a run as batch input files for an offline engine
(``vllm run-batch -i REQUESTS.jsonl -o OUTPUT.jsonl --model M``), split into ``REQUESTS-001.jsonl``
… when they exceed the limits; ``import-batch`` reads the engine's (or a provider's) output and error
files and writes ``--out`` exactly as ``judge run`` does. Give both the same template or metric,
model, ``--base-url`` and parameters: each request's ``custom_id`` is its reply-cache key. A line
that cannot be read is named on stderr by file and line and skipped; requests with no reply are
recorded as failed with the reason.

The API key is read from the environment variable named by ``--api-key-env`` (default
``OPENAI_API_KEY`` when it is set; no key otherwise, as local servers need none).

Exit status: 0 when the run completes (unparsed and failed items are counted on stderr), 2 on bad
input (a template variable an item lacks, an unreadable file, a missing API key variable), 130 when
interrupted.

Only the standard library, argparse and :mod:`evalcore.errors` are imported with this module (the
parser is built for every ``evalcore`` command); the judge engine, the data readers and the
progress bar are imported by the command that runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.errors import ConfigError, DataError

if TYPE_CHECKING:
    from evalcore.judge import (
        Endpoint,
        Estimate,
        JudgeItem,
        JudgeTemplate,
        OrderMode,
        Progress,
        Runner,
        RunSettings,
        RunSummary,
        SqliteCache,
    )
    from evalcore.judge.builtins import MetricSpec

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add ``judge run``, ``estimate``, ``export-batch``, ``import-batch``, ``metrics`` and
    ``optimize`` to the ``evalcore`` command."""
    judge = subparsers.add_parser(
        "judge",
        help="run a judge template over a dataset file",
        description="Run judge templates over dataset files through an OpenAI-compatible endpoint.",
    )
    judge.set_defaults(handler=lambda _args: _usage(judge))
    actions = judge.add_subparsers(dest="judge_command", metavar="ACTION", parser_class=type(judge))

    run = _dataset_command(
        actions,
        "run",
        _run,
        help="judge every item and write one JSON line per result",
        description="Judge every item of DATASET with TEMPLATE; resumes from --out and the cache.",
        out="results file (JSON lines)",
    )
    run.add_argument("--batch", action="store_true", help="send the requests through the Batch API")
    run.add_argument(
        "--batch-poll",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="seconds between batch status checks (default 60)",
    )
    run.add_argument(
        "--batch-retry",
        choices=("live", "batch", "none"),
        default="live",
        help="requests a batch failed or let expire: send live (default), in a follow-up "
        "batch, or record as failed",
    )
    _batch_price_argument(run)
    _batch_limit_arguments(run)

    est = _dataset_command(
        actions,
        "estimate",
        _estimate,
        help="print how many requests, tokens and dollars a run would take",
        description="Estimate a run without sending anything.",
        out="results file of an earlier run (finished items)",
        out_required=False,
    )
    est.add_argument("--batch", action="store_true", help="price the run at the batch price")
    _batch_price_argument(est)

    export = _dataset_command(
        actions,
        "export-batch",
        _export_batch,
        help="write a run's requests as batch input files (OpenAI and vLLM format)",
        description="Write the requests a run of DATASET would send as batch JSONL files, for a "
        "Batch API or an offline engine (vllm run-batch).",
        out="requests file (JSON lines)",
    )
    _batch_limit_arguments(export)

    imported = _dataset_command(
        actions,
        "import-batch",
        _import_batch,
        help="read batch output files into a results file, as judge run writes it",
        description="Import the output (and error) files of a batch or of vllm run-batch: the "
        "same parsing and statuses as judge run.",
        out="results file (JSON lines)",
    )
    imported.add_argument(
        "--responses",
        action="append",
        required=True,
        type=Path,
        metavar="OUTPUT.jsonl",
        help="a batch output or error file (repeatable)",
    )
    _batch_price_argument(imported)

    metrics = actions.add_parser(
        "metrics",
        help="list the built-in and registered metrics",
        description="Print the metric catalogue: what each metric measures, its inputs, scale and "
        "threshold.",
    )
    metrics.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    metrics.add_argument("--group", help="only this group (quality, text, vertex, ragas, safety)")
    metrics.set_defaults(handler=_metrics)

    from evalcore.cli import confidence, optimize  # their own modules

    optimize.register(actions)
    confidence.register(actions)


def _dataset_command(
    actions: Any,
    name: str,
    handler: Callable[[argparse.Namespace], int],
    *,
    help: str,
    description: str,
    out: str,
    out_required: bool = True,
) -> argparse.ArgumentParser:
    """A ``judge`` action over a dataset file: the common options and ``--out``."""
    parser: argparse.ArgumentParser = actions.add_parser(name, help=help, description=description)
    _common_arguments(parser)
    parser.add_argument("--out", required=out_required, type=Path, help=out)
    parser.set_defaults(handler=handler)
    return parser


def _batch_price_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--batch-price",
        metavar="IN,OUT",
        help="the model's batch price, dollars per million input and output tokens",
    )


def _batch_limit_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--batch-max-requests",
        type=int,
        default=50_000,
        metavar="N",
        help="requests per batch file at most (default 50,000)",
    )
    parser.add_argument(
        "--batch-max-mb",
        type=float,
        default=200.0,
        metavar="MB",
        help="megabytes per batch file at most (default 200)",
    )


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", type=Path, metavar="DATASET_FILE")
    parser.add_argument(
        "--template", type=Path, help="judge template (TOML); with --metric, an edited copy"
    )
    parser.add_argument("--metric", help="a registered metric (see: evalcore judge metrics)")
    parser.add_argument("--threshold", help="the metric's pass threshold (default: its own)")
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a pipeline metric's parameter, e.g. mode=precision (repeatable)",
    )
    parser.add_argument("--model", help="model name (default: the template's [model] model)")
    parser.add_argument("--base-url", default="https://api.openai.com/v1", help="endpoint base URL")
    parser.add_argument(
        "--api-key-env",
        help="NAME of the environment variable holding the API key (default OPENAI_API_KEY if set)",
    )
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rpm", type=float, help="requests per minute limit")
    parser.add_argument("--tpm", type=float, help="tokens per minute limit")
    parser.add_argument(
        "--order",
        choices=("single", "both", "flip"),
        help="pairwise orders (default: the metric's own, else single)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the flip order")
    parser.add_argument("--limit", type=int, help="judge only the first N items")
    parser.add_argument(
        "--cache",
        type=Path,
        help="reply cache file (default: the shared cache in $EVALCORE_CACHE_DIR or the user's "
        "cache directory)",
    )
    parser.add_argument("--no-cache", action="store_true", help="do not read or write a cache")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    parser.add_argument("--max-attempts", type=int, default=6, help="requests per item at most")
    parser.add_argument(
        "--samples-by",
        choices=("n", "requests"),
        default="n",
        help="ask for the template's n samples in one request (n) or by one request each",
    )
    parser.add_argument(
        "--replicate",
        type=int,
        default=0,
        help="replicate number: another number sends every request again (a repeated run)",
    )
    parser.add_argument(
        "--logprobs",
        action="store_true",
        help="ask for log-probabilities: each result gets the probability of every label",
    )
    parser.add_argument(
        "--top-logprobs",
        type=int,
        metavar="K",
        help="alternatives per token with --logprobs (0-20; default: the template's, else 5)",
    )
    parser.add_argument(
        "--samples",
        type=int,
        metavar="N",
        help="samples per item (the template's n): the label is their majority and, without "
        "logprobs, the confidence their agreement",
    )


# --- inputs ----------------------------------------------------------------------------------------


def _read_items(path: Path, limit: int | None) -> list[JudgeItem]:
    """Items of a dataset file: the raw columns plus the canonical fields of a recognised layout.

    A plain JSONL file is read with the standard library (:func:`evalcore.data.read_plain_jsonl`:
    no pandas before the first request); any other file through pandas, with the same items."""
    from evalcore.data import read_plain_jsonl
    from evalcore.judge import JudgeItem, plain_fields

    if not path.exists():
        raise DataError(f"dataset file {path} does not exist", source=str(path))
    plain = read_plain_jsonl(path, limit)
    if plain is not None:
        return [JudgeItem(str(row["item_id"]), plain_fields(row)) for row in plain]
    from evalcore.data import items_from_frame, read_table

    frame = read_table(path)
    if limit is not None:
        frame = frame.iloc[: max(0, limit)]
    canonical = items_from_frame(frame, source=str(path))
    raw_rows = frame.to_dict("records")
    items: list[JudgeItem] = []
    for raw, row in zip(raw_rows, canonical.to_dict("records"), strict=True):
        fields = plain_fields(raw)
        for key, value in plain_fields(row).items():
            if key != "item_id":
                fields.setdefault(key, value)
        items.append(JudgeItem(str(row["item_id"]), fields))
    return items


def _endpoint(args: argparse.Namespace) -> Endpoint:
    from evalcore.judge import Endpoint

    key_env = args.api_key_env
    if key_env is None and os.environ.get("OPENAI_API_KEY"):
        key_env = "OPENAI_API_KEY"
    return Endpoint("cli", base_url=args.base_url, api_key_env=key_env or None)


#: Options that are :class:`~evalcore.judge.RunSettings` fields of the same name.
_SETTING_OPTIONS = (
    "concurrency",
    "rpm",
    "tpm",
    "max_attempts",
    "timeout",
    "seed",
    "samples_by",
    "replicate",
)


def _settings(args: argparse.Namespace, default_order: OrderMode = "single") -> RunSettings:
    from evalcore.judge import RunSettings

    given = {name: getattr(args, name) for name in _SETTING_OPTIONS}
    return RunSettings(**given, order_mode=args.order or default_order)


def _with_transcripts(items: list[JudgeItem]) -> list[JudgeItem]:
    """Items with the fields derived from a conversation (``transcript`` …), for any template."""
    from evalcore.judge import JudgeItem
    from evalcore.judge.builtins import derive_fields

    return [JudgeItem(i.item_id, derive_fields(i.fields, item_id=i.item_id)) for i in items]


def _metric(args: argparse.Namespace) -> MetricSpec | None:
    """The metric asked for, configured by --param, --threshold and an edited --template."""
    if args.metric is None:
        if args.template is None:
            raise ConfigError(
                "give a judge template (--template T.toml) or a metric (--metric NAME)"
            )
        if args.threshold is not None or args.param:
            raise ConfigError("--threshold and --param apply to a --metric")
        return None
    from evalcore.judge import JudgeTemplate
    from evalcore.judge.builtins import configure_metric, get_metric

    params: dict[str, str] = {}
    for entry in args.param:
        key, sep, value = entry.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--param takes KEY=VALUE, not {entry!r}")
        params[key.strip()] = value.strip()
    spec = configure_metric(get_metric(args.metric), params)
    if args.template is not None:
        spec = spec.with_template(JudgeTemplate.load_toml(args.template))
    if args.threshold is not None:
        spec = spec.with_threshold(args.threshold)
    if _asks_request_flags(args):
        if spec.template is None:
            raise ConfigError(
                f"--logprobs, --top-logprobs and --samples apply to a template, and metric "
                f"{spec.name!r} is a {spec.kind} metric"
            )
        spec = spec.with_template(_request_flags(args, spec.template))
    return spec


def _asks_request_flags(args: argparse.Namespace) -> bool:
    return bool(args.logprobs) or args.top_logprobs is not None or args.samples is not None


def _request_flags(args: argparse.Namespace, template: JudgeTemplate) -> JudgeTemplate:
    """``template`` with the request settings of ``--logprobs``, ``--top-logprobs`` and
    ``--samples`` (the same :class:`~evalcore.judge.ModelSettings` a template file sets)."""
    if not _asks_request_flags(args):
        return template
    if args.top_logprobs is not None and not args.logprobs:
        raise ConfigError("--top-logprobs needs --logprobs")
    if args.samples is not None and args.samples < 1:
        raise ConfigError(f"--samples must be at least 1, not {args.samples}")
    settings = template.model
    changed = dataclasses.replace(
        settings,
        logprobs=settings.logprobs or bool(args.logprobs),
        top_logprobs=settings.top_logprobs if args.top_logprobs is None else args.top_logprobs,
        n=settings.n if args.samples is None else args.samples,
    )
    return dataclasses.replace(template, model=changed)


def _runner(
    args: argparse.Namespace,
    spec: MetricSpec | None,
    *,
    client: Callable[[], Any] | None = None,
    prices: dict[str, tuple[float, float]] | None = None,
) -> Runner:
    """The runner of a template (``spec`` None) or of a metric, from the one runner factory
    (:func:`evalcore.judge.builtins.build_runner`). ``client`` replaces the endpoint's client
    factory (a batch's replies), ``prices`` the price table (a batch price)."""
    from evalcore.judge import JudgeTemplate
    from evalcore.judge.builtins import build_runner

    what = _request_flags(args, JudgeTemplate.load_toml(args.template)) if spec is None else spec
    return build_runner(
        what,
        endpoint=_endpoint(args),
        client=client,
        model=args.model,
        settings=_settings(args, "single" if spec is None else spec.order_mode),
        prices=prices,
        timeout=args.timeout,
    )


def _batch_prices(args: argparse.Namespace, model: str) -> dict[str, tuple[float, float]]:
    """``--batch-price IN,OUT`` as a price table of the run's model (empty: no batch price)."""
    if not getattr(args, "batch_price", None):
        return {}
    parts = [p.strip() for p in str(args.batch_price).split(",")]
    try:
        if len(parts) != 2:
            raise ValueError
        price = (float(parts[0]), float(parts[1]))
    except ValueError:
        raise ConfigError(
            f"--batch-price takes IN,OUT dollars per million tokens, not {args.batch_price!r}"
        ) from None
    if min(price) < 0:
        raise ConfigError("--batch-price cannot be negative")
    return {model: price}


def _batch_limits(args: argparse.Namespace) -> tuple[int, int]:
    if args.batch_max_requests < 1 or args.batch_max_mb <= 0:
        raise ConfigError("--batch-max-requests and --batch-max-mb must be positive")
    return args.batch_max_requests, int(args.batch_max_mb * 1024 * 1024)


def _items(args: argparse.Namespace, spec: MetricSpec | None) -> list[JudgeItem]:
    """The dataset's items; a plain template also sees the fields derived from a conversation (a
    metric derives its own inputs in :meth:`~evalcore.judge.Runner.prepare`)."""
    items = _read_items(args.dataset, args.limit)
    return _with_transcripts(items) if spec is None else items


def _cache(args: argparse.Namespace, *, create: bool) -> SqliteCache | None:
    """The reply cache: ``--cache``, else the shared one; ``None`` with ``--no-cache``, and when
    the file does not exist and ``create`` is false (an estimate makes no file)."""
    from evalcore.judge import SqliteCache, default_cache_path

    if args.no_cache:
        return None
    path: Path = args.cache if args.cache is not None else default_cache_path()
    if not create and not path.exists():
        return None
    try:
        return SqliteCache(path)
    except (OSError, sqlite3.Error) as exc:
        raise ConfigError(f"cannot open the reply cache {path}: {exc}") from None


# --- commands --------------------------------------------------------------------------------------


def _run(args: argparse.Namespace) -> int:
    from evalcore.judge import JsonlSink

    if args.batch:
        return _run_batch(args)
    spec = _metric(args)
    runner = _runner(args, spec)
    # every item is checked (and rendered) here: a missing variable or input fails before any
    # request or file
    items = runner.prepare(_items(args, spec))
    runner.estimate(items)
    needs_model = spec is None or spec.kind != "function"
    cache = _cache(args, create=True) if needs_model else None
    sink = JsonlSink(args.out)
    try:
        with _ProgressDisplay() as progress:
            summary = runner.run_sync(items, sink, cache, progress=progress)
    finally:
        sink.close()
        runner.close()
        if cache is not None:
            cache.close()
    _report(summary, args.out)
    return 0


def _estimate(args: argparse.Namespace) -> int:
    from evalcore.judge import BatchReplies, JsonlSink

    spec = _metric(args)
    offline = BatchReplies(None, base_url=args.base_url)  # an estimate sends nothing: no key needed
    runner = _runner(args, spec, client=offline)
    if args.batch:
        runner.close()
        runner = _runner(args, spec, client=offline, prices=_batch_prices(args, runner.model))
    items = runner.prepare(_items(args, spec))
    finished: set[tuple[str, str]] = set()
    if args.out is not None and args.out.exists():
        with JsonlSink(args.out) as earlier:
            finished = earlier.finished()
    cache = _cache(args, create=False)
    try:
        result = runner.estimate(items, cache, _Finished(finished))
    finally:
        runner.close()
        if cache is not None:
            cache.close()
    print(_format_estimate(result, batch=args.batch))
    if spec is not None and spec.kind == "pipeline":
        print("(a multi-step metric: an upper bound, every step of every item without the cache)")
    return 0


def _run_batch(args: argparse.Namespace) -> int:
    """``judge run --batch``: the run through the endpoint's Batch API (see the module doc)."""
    from evalcore.judge import (
        BatchOptions,
        BatchReplies,
        JsonBatchLedger,
        JsonlSink,
        client_factory,
        run_batch,
    )

    if args.batch_poll < 0:
        raise ConfigError("--batch-poll must be 0 or more seconds")
    spec = _metric(args)
    if spec is not None and spec.kind == "function":
        raise ConfigError(f"metric {spec.name!r} asks no model: run it without --batch")
    replies = BatchReplies(client_factory(_endpoint(args), timeout=args.timeout))
    replies.live = args.batch_retry == "live"
    runner = _runner(args, spec, client=replies)
    items = runner.prepare(_items(args, spec))
    max_requests, max_bytes = _batch_limits(args)
    out: Path = args.out
    work_dir = out.parent / f"{out.stem}.batch-files"
    options = BatchOptions(
        poll_s=args.batch_poll,
        retry=args.batch_retry,
        max_requests=max_requests,
        max_bytes=max_bytes,
        work_dir=work_dir,
        prices=_batch_prices(args, runner.model),
        metadata={"evalcore_out": out.name[:500]},
    )
    identity = {
        "dataset": str(args.dataset.resolve()),
        "template": str(args.template.resolve()) if args.template else None,
        "metric": args.metric,
        "model": runner.model,
        "base_url": replies.base_url,
        "replicate": args.replicate,
    }
    ledger = JsonBatchLedger(out.with_name(f"{out.stem}.batches.json"), identity)
    cache = _cache(args, create=True)
    sink = JsonlSink(out)

    def notify(message: str) -> None:
        print(f"evalcore: {message}", file=sys.stderr, flush=True)

    try:
        summary = asyncio.run(
            run_batch(
                runner,
                items,
                sink,
                cache,
                replies=replies,
                ledger=ledger,
                options=options,
                notify=notify,
            )
        )
    finally:
        sink.close()
        runner.close()
        if cache is not None:
            cache.close()
        with contextlib.suppress(OSError):
            work_dir.rmdir()
    _report(summary, out, cost=None if options.prices else "cost unknown (batch price not set)")
    return 0


def _export_batch(args: argparse.Namespace) -> int:
    """``judge export-batch``: the run's requests as batch input files."""
    from evalcore.judge import BatchReplies, write_batch_files

    spec = _metric(args)
    runner = _runner(args, spec, client=BatchReplies(None, base_url=args.base_url))
    items = runner.prepare(_items(args, spec))
    max_requests, max_bytes = _batch_limits(args)
    try:
        files = write_batch_files(
            runner.batch_requests(items),
            args.out,
            max_requests=max_requests,
            max_bytes=max_bytes,
        )
    finally:
        runner.close()
    total = sum(f.requests for f in files)
    names = ", ".join(str(f.path) for f in files) or "no file (no request)"
    print(f"evalcore: {total:,} requests for model {runner.model} in {names}", file=sys.stderr)
    return 0


def _import_batch(args: argparse.Namespace) -> int:
    """``judge import-batch``: batch output files into a results file, as ``judge run`` writes."""
    from evalcore.judge import BatchOutput, BatchReplies, JsonlSink

    spec = _metric(args)
    replies = BatchReplies(None, base_url=args.base_url)
    runner = _runner(args, spec, client=replies)
    items = runner.prepare(_items(args, spec))
    output = BatchOutput(runner.model, _batch_prices(args, runner.model))
    for path in args.responses:
        output.read(path)
    for problem in output.problems:
        print(f"evalcore: skipped {problem}", file=sys.stderr)
    replies.replies, replies.errors = output.replies, output.errors
    cache = _cache(args, create=True)
    sink = JsonlSink(args.out)
    try:
        wanted = {r.custom_id for r in runner.batch_requests(items, cache, sink)}
        unknown = sum(1 for key in (*output.replies, *output.errors) if key not in wanted)
        if unknown:
            print(
                f"evalcore: {unknown:,} lines of the output answer no request of this run "
                "(the template, model, --base-url and parameters must be those of export-batch)",
                file=sys.stderr,
            )
        with _ProgressDisplay() as progress:
            summary = runner.run_sync(items, sink, cache, progress=progress)
    finally:
        sink.close()
        runner.close()
        if cache is not None:
            cache.close()
    _report(summary, args.out)
    return 0


class _Finished:
    """A read-only sink that only knows what an earlier run finished."""

    def __init__(self, finished: set[tuple[str, str]]) -> None:
        self._finished = finished

    def finished(self) -> set[tuple[str, str]]:
        return set(self._finished)

    def record(self, result: Any) -> None:  # pragma: no cover - never called by an estimate
        raise NotImplementedError

    def is_cancelled(self) -> bool:
        return False


def _metrics(args: argparse.Namespace) -> int:
    import json

    from evalcore.judge.builtins import catalogue, catalogue_markdown

    if args.format == "markdown":
        print(catalogue_markdown(), end="")
        return 0
    entries = [e for e in catalogue() if args.group is None or e.group == args.group]
    if args.format == "json":
        print(json.dumps([dataclasses.asdict(e) for e in entries], ensure_ascii=False, indent=2))
        return 0
    width = max((len(e.name) for e in entries), default=4)
    for entry in entries:
        inputs = ", ".join(
            i.split(":")[0].replace("`", "") + (" (optional)" if i.endswith("(optional)") else "")
            for i in entry.inputs
        )
        print(
            f"{entry.name:<{width}}  {entry.kind:<8}  threshold {entry.threshold:<6}  "
            f"{entry.description}\n{'':<{width}}  inputs: {inputs}; scale: {entry.scale}"
        )
    return 0


def _format_estimate(e: Estimate, *, batch: bool = False) -> str:
    unknown = "batch price not set (--batch-price)" if batch else "no price for this model"
    cost = f"unknown ({unknown})" if e.expected_cost is None else f"${e.expected_cost:.4f}"
    if batch and e.expected_cost is not None:
        cost += " at the batch price"
    bound = "" if e.max_tokens_out is None else f" (at most {e.max_tokens_out:,})"
    return (
        f"model {e.model}: {e.n_units} judgements, {e.n_skipped} already finished, "
        f"{e.n_cached} from the cache, {e.n_requests} requests\n"
        f"expected tokens: {e.expected_tokens_in:,} in, {e.expected_tokens_out:,} out{bound}\n"
        f"expected cost: {cost}"
    )


def _report(summary: RunSummary, out: Path, *, cost: str | None = None) -> None:
    """The run's last line on stderr; ``cost`` replaces the dollar figure (a batch run without a
    batch price)."""
    status = "cancelled" if summary.cancelled else "done"
    spent = cost if cost is not None else f"${summary.cost:.4f}"
    print(
        f"evalcore: {status}: {summary.done}/{summary.total} judgements in {out} — "
        f"ok {summary.ok}, unparsed {summary.unparsed}, failed {summary.failed}; "
        f"{summary.skipped} finished before, {summary.cached} from the cache, "
        f"{summary.requests} requests, {summary.tokens_in + summary.tokens_out:,} tokens, "
        f"{spent}, {summary.elapsed_s:.1f} s",
        file=sys.stderr,
    )


class _ProgressDisplay:
    """A rich progress bar on a terminal; nothing when stderr is not a TTY."""

    def __init__(self) -> None:
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> Callable[[Progress], None] | None:
        if not sys.stderr.isatty():
            return None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
        from rich.progress import Progress as ProgressBar

        self._bar = ProgressBar(
            TextColumn("judging"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._bar.start()
        self._task = self._bar.add_task("judge", total=None, detail="")

        def update(p: Progress) -> None:
            detail = (
                f"ok {p.ok} · unparsed {p.unparsed} · failed {p.failed} · "
                f"{p.rate:.1f}/s · ${p.cost:.4f}"
            )
            self._bar.update(self._task, completed=p.done, total=p.total, detail=detail)

        return update

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
