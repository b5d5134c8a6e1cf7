"""Judge runs over the store: plan one, estimate it, execute it, and keep it running in the background.

A run is a row in ``judge_runs`` (template version × dataset × endpoint × model, with its settings)
plus one row per (item, order) in ``judge_results``. :func:`execute_run` is the synchronous body that a
worker thread, a CLI or a test calls; it resumes whatever the run has not finished, so calling it again
after a crash or a cancel costs nothing for the items already judged. :class:`RunWorker` owns a few
daemon threads in the server process and runs queued runs there, so a run survives the user leaving
the page; pages only read progress from the store.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pandas as pd
from openai import AsyncOpenAI

from evalcore.errors import ConfigError, EvalcoreError, JudgeError
from evalcore.judge import (
    Endpoint,
    Estimate,
    JudgeItem,
    JudgeRunner,
    JudgeTemplate,
    Progress,
    Runner,
    RunSettings,
    RunSummary,
    SamplesBy,
    client_factory,
    endpoint_identity,
    estimate,
    plain_fields,
)
from evalcore.judge.builtins import MetricRunner, MetricSpec, prepare_items
from evalcore.runs._batch import BatchSettings, execute_batch_run, is_batch_run
from evalcore.runs._io import StoreCache, StoreSink, StoreWriter
from evalcore.runs._versions import ContentLike, as_content, metric_of, template_of_content
from evalcore.secrets import check_headers, key_status
from evalcore.store import (
    EndpointRecord,
    JudgeRunRecord,
    RunProgress,
    Store,
    TemplateVersionRecord,
)

__all__ = [
    "RunSnapshot",
    "RunWorker",
    "api_key_is_set",
    "endpoint_of",
    "estimate_content",
    "estimate_run",
    "execute_run",
    "judge_items",
    "judge_run_items",
    "key_policy",
    "make_runner",
    "plan_run",
    "rerun_failed",
    "resolve_model",
    "run_settings",
    "run_snapshot",
    "template_of",
    "version_of_run",
]

log = logging.getLogger(__name__)

#: Settings of :class:`~evalcore.judge.RunSettings` kept in a run's ``settings`` JSON.
_SETTING_FIELDS = tuple(
    f.name for f in dataclasses.fields(RunSettings) if f.name not in ("order_mode", "seed")
)

#: Other names templates may use for the canonical item fields (Azure, RAGAS and Vertex wording).
_ALIASES = {
    "question": "prompt",
    "user_input": "prompt",
    "answer": "response",
    "ground_truth": "reference",
    "baseline_model_response": "response_b",
}


def judge_items(
    store: Store, dataset_id: int, item_ids: Sequence[str] | None = None
) -> tuple[list[JudgeItem], dict[str, int]]:
    """The items of a dataset as the runner sees them, and their database ids by item id.

    Fields are the canonical ones (``prompt``, ``response``, ``context``, ``reference``,
    ``response_a``, ``response_b``), the dataset's other item fields (``DatasetRecord.item_fields``:
    the columns marked so when the file was imported; never its label columns or its metadata),
    and the aliases other systems use (``question``, ``answer``, ``ground_truth``,
    ``baseline_model_response``; for a pairwise item ``response`` is ``response_a`` when it has no
    ``response``). ``item_ids`` keeps only those items.
    """
    frame = store.items_frame(dataset_id)
    dataset = store.get_dataset(dataset_id)
    hidden = set(dataset.metadata_columns) - set(dataset.item_fields)
    frame = frame.drop(columns=[c for c in frame.columns if c in hidden])
    if item_ids is not None:
        wanted = {str(i) for i in item_ids}
        frame = frame[frame["item_id"].astype(str).isin(wanted)]
    items: list[JudgeItem] = []
    db_ids: dict[str, int] = {}
    for db_id, row in zip(frame.index.tolist(), frame.to_dict("records"), strict=True):
        external = str(row.pop("item_id"))
        fields = plain_fields(row)
        if fields.get("response") is None and fields.get("response_a") is not None:
            fields["response"] = fields["response_a"]
        for alias, source in _ALIASES.items():
            fields.setdefault(alias, fields.get(source))
        items.append(JudgeItem(external, fields))
        db_ids[external] = int(db_id)
    return items, db_ids


def template_of(store: Store, version_id: int) -> JudgeTemplate:
    """The judge template of a stored template version.

    Raises :class:`~evalcore.errors.ConfigError` for a version that records a pipeline or function
    metric (``factual_correctness``, ``f1_score`` …), which is not a judge template.
    """
    return template_of_content(store.get_template_version(version_id).parsed)


def run_settings(run: JudgeRunRecord) -> RunSettings:
    """The runner settings recorded with a run."""
    known = {k: v for k, v in run.settings.items() if k in _SETTING_FIELDS}
    return RunSettings(**known, order_mode=run.order_mode, seed=run.seed or 0)


def endpoint_of(record: EndpointRecord, allowed_key_names: Sequence[str] = ()) -> Endpoint:
    """The judge client's view of a stored endpoint (the key stays in the environment).

    A stored endpoint is always under the server's key policy: its key variable must be one that
    :func:`evalcore.secrets.key_name_allowed` accepts with ``allowed_key_names`` (the server
    setting, see :func:`key_policy`), and its headers may carry no credential, even when the row
    was saved before the policy existed.
    """
    if not record.base_url:
        raise ConfigError(f"endpoint {record.name!r} has no base URL")
    check_headers(record.extra, path=f"endpoint {record.name!r}: extra")  # rows saved before
    return Endpoint(
        record.name,
        base_url=record.base_url,
        kind=record.kind,
        api_key_env=record.api_key_env,
        api_version=record.api_version,
        default_model=record.default_model or "",
        headers=tuple(sorted((record.extra.get("headers") or {}).items())),
        allowed_key_names=tuple(allowed_key_names),
    )


def key_policy(store: Store) -> tuple[str, ...]:
    """The extra key variable names an admin allowed (the server setting ``allowed_key_names``)."""
    value = store.get_server_setting("allowed_key_names", [])
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    return tuple(str(v).strip() for v in value or () if str(v).strip())


def _prices(store: Store) -> dict[str, tuple[float, float]]:
    return {m: (p.input_per_mtok, p.output_per_mtok) for m, p in store.get_model_prices().items()}


def resolve_model(
    content: ContentLike, model: str | None = None, endpoint: EndpointRecord | None = None
) -> str | None:
    """The model a version's content runs with: ``model`` when given, else the template's (or
    pipeline's) own model setting, else the endpoint's default model; ``None`` for a function
    metric, which needs none. Raises :class:`~evalcore.errors.ConfigError` when none is named."""
    parsed = as_content(content)
    return _chosen_model(parsed, metric_of(parsed), model, endpoint)


def _chosen_model(
    content: ContentLike, spec: MetricSpec | None, model: str | None, endpoint: Any
) -> str | None:
    """The model a version runs with: the one asked for, else its own setting, else the
    endpoint's default; ``None`` for a function metric (no model)."""
    if spec is not None and spec.kind == "function":
        return None
    if spec is not None and spec.pipeline is not None:
        own = spec.pipeline.model.model
    elif spec is not None and spec.template is not None:
        own = spec.template.model.model
    else:
        own = template_of_content(content).model.model
    default = getattr(endpoint, "default_model", None) or ""
    chosen = model or own or default
    if not chosen:
        raise ConfigError("choose a model: the template and the endpoint name none")
    return chosen


class _NoRequests:
    """The client of an estimate: it names the endpoint (for the cache keys) and sends nothing."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def __call__(self) -> AsyncOpenAI:
        raise ConfigError("an estimate sends no request")  # pragma: no cover


def make_runner(
    content: ContentLike,
    *,
    endpoint: EndpointRecord | None,
    model: str | None,
    settings: RunSettings | None = None,
    prices: Mapping[str, tuple[float, float]] | None = None,
    secrets: Mapping[str, Any] | None = None,
    client: AsyncOpenAI | Callable[[], AsyncOpenAI] | None = None,
    allowed_key_names: Sequence[str] = (),
) -> Runner:
    """The runner of a stored version's content: a :class:`~evalcore.judge.JudgeRunner` for a
    judge template, a :class:`~evalcore.judge.builtins.MetricRunner` for a built-in metric (its
    inputs prepared and checked, its verdicts added); callers use the :class:`~evalcore.judge.Runner`
    interface both offer.

    ``client`` replaces the endpoint's client (tests, benchmarks). The API key is looked up now,
    under the server's key policy (``allowed_key_names``, see :func:`endpoint_of`), so a missing or
    refused key fails here, with a message that does not say whether the variable exists.
    Function metrics need no endpoint.
    """
    content = as_content(content)
    spec = metric_of(content)
    needs_model = spec is None or spec.kind != "function"
    factory: AsyncOpenAI | Callable[[], AsyncOpenAI] | None = client
    if needs_model and factory is None:
        if endpoint is None:
            raise ConfigError("choose an endpoint to send the judge requests to")
        factory = client_factory(endpoint_of(endpoint, allowed_key_names), secrets=secrets)
    chosen = _chosen_model(content, spec, model, endpoint)
    if spec is None:
        assert factory is not None
        return JudgeRunner(
            factory, template_of_content(content), settings=settings, model=chosen, prices=prices
        )
    if spec.kind == "function":
        return MetricRunner(spec, settings=settings)
    return MetricRunner(spec, factory, settings=settings, model=chosen, prices=prices)


def _run_units(
    content: ContentLike,
    spec: MetricSpec | None,
    items: list[JudgeItem],
    model: str | None,
    order_mode: str,
) -> int:
    """Check every item against the version (raises before anything is saved); the run's size."""
    template: JudgeTemplate | None
    if spec is not None:
        items = prepare_items(spec, items)
        template = spec.template
    else:
        template = template_of_content(content)
    if template is None:
        return len(items)
    # raises MissingVariableError naming the variable and the item
    estimate(items, template, model=model or "?", order_mode=order_mode)  # type: ignore[arg-type]
    both = template.kind == "pairwise" and order_mode == "both"
    return len(items) * (2 if both else 1)


def plan_run(
    store: Store,
    *,
    dataset_id: int,
    template_version_id: int,
    endpoint_id: int | None,
    model: str | None = None,
    settings: RunSettings | None = None,
    item_ids: Sequence[str] | None = None,
    name: str | None = None,
    batch: BatchSettings | None = None,
) -> JudgeRunRecord:
    """Register a pending run; :class:`RunWorker` (or :func:`execute_run`) carries it out.

    ``batch`` sends the run through the endpoint's Batch API (:mod:`evalcore.runs._batch`).

    The version may be a judge template or a built-in metric (see :mod:`evalcore.runs._versions`);
    a function metric (``f1_score``) needs no endpoint. ``settings`` default to the metric's own
    order mode (Vertex-style pairwise metrics flip half of the items). ``item_ids`` restricts the
    run to a subset (a filter, or the failed items of an earlier run). Every item is checked against
    the version before the run is saved, so a variable or input that an item lacks is a clear error
    now, not a run full of failures.
    """
    store.authorize("manage", dataset_id=dataset_id)
    version = store.get_template_version(template_version_id)
    content = version.parsed
    spec = metric_of(content)
    if settings is None:
        settings = RunSettings(order_mode=spec.order_mode if spec is not None else "single")
    template_record = store.get_template(version.template_id)
    endpoint = store.get_endpoint(endpoint_id) if endpoint_id is not None else None
    if endpoint is None and (spec is None or spec.kind != "function"):
        raise ConfigError("choose an endpoint to send the judge requests to")
    chosen_model = _chosen_model(content, spec, model, endpoint)
    items, _ = judge_items(store, dataset_id, item_ids)
    if not items:
        raise ConfigError("the run has no items (the filter kept none)")
    units = _run_units(content, spec, items, chosen_model, settings.order_mode)
    if spec is not None:
        pairwise = spec.is_pairwise
    else:
        pairwise = template_of_content(content).kind == "pairwise"
    stored: dict[str, Any] = {f: getattr(settings, f) for f in _SETTING_FIELDS}
    if item_ids is not None:
        stored["item_ids"] = [str(i) for i in item_ids]
    if spec is not None:
        stored["metric"] = spec.name
    if batch is not None:
        stored.update(batch.stored())
    run_name = name or (f"{template_record.name} v{version.number} · {chosen_model or 'no model'}")
    return store.create_run(
        dataset_id,
        template_record.criterion_id,
        name=run_name,
        model=chosen_model,
        template_version_id=template_version_id,
        endpoint_id=endpoint_id,
        settings=stored,
        order_mode=settings.order_mode if pairwise else "single",
        seed=settings.seed,
        n_planned=units,
    )


def estimate_run(
    store: Store,
    *,
    dataset_id: int,
    template_version_id: int,
    model: str,
    order_mode: str | None = None,
    item_ids: Sequence[str] | None = None,
    endpoint_id: int | None = None,
    samples_by: SamplesBy = "n",
    replicate: int = 0,
    batch: bool = False,
) -> Estimate:
    """Requests, tokens and cost a run would need, and how many replies are already cached.

    Exact for judge templates and built-in template metrics; for a pipeline metric an upper bound
    (every step of every item; later steps depend on earlier replies); zero requests for a function
    metric. ``order_mode`` defaults to the metric's own, else ``"single"``. Cached replies are
    counted for the endpoint ``endpoint_id`` (the cache keeps replies per endpoint); without one,
    none are. ``samples_by`` and ``replicate`` are the run's (:class:`~evalcore.judge.RunSettings`):
    a replicate other than 0 finds none of replicate 0's replies. ``batch`` prices the run at the
    batch prices (no cost for a model without one).
    """
    return estimate_content(
        store,
        store.get_template_version(template_version_id).parsed,
        dataset_id=dataset_id,
        model=model,
        order_mode=order_mode,
        item_ids=item_ids,
        endpoint_id=endpoint_id,
        samples_by=samples_by,
        replicate=replicate,
        batch=batch,
    )


def estimate_content(
    store: Store,
    content: ContentLike,
    *,
    dataset_id: int,
    model: str,
    order_mode: str | None = None,
    item_ids: Sequence[str] | None = None,
    endpoint_id: int | None = None,
    samples_by: SamplesBy = "n",
    replicate: int = 0,
    batch: bool = False,
) -> Estimate:
    """:func:`estimate_run` for a version's content that need not be saved yet."""
    content = as_content(content)
    spec = metric_of(content)
    mode = order_mode or (spec.order_mode if spec is not None else "single")
    items, _ = judge_items(store, dataset_id, item_ids)
    base_url = ""
    if endpoint_id is not None:
        base_url = store.get_endpoint(endpoint_id).base_url or ""
    runner = make_runner(
        content,
        endpoint=None,
        model=model or None,
        settings=RunSettings(
            order_mode=mode,  # type: ignore[arg-type]
            samples_by=samples_by,
            replicate=replicate,
        ),
        prices=store.get_batch_prices() if batch else (_prices(store) or None),
        client=_NoRequests(endpoint_identity(base_url)),  # a pool's cache keys name the pool
    )
    return runner.estimate(items, StoreCache(store))


def execute_run(
    store: Store,
    run_id: int,
    *,
    secrets: Mapping[str, Any] | None = None,
    client: AsyncOpenAI | Callable[[], AsyncOpenAI] | None = None,
    cancel_event: threading.Event | None = None,
    progress: Callable[[Progress], None] | None = None,
    shutdown_event: threading.Event | None = None,
) -> RunSummary | None:
    """Carry out (or resume) a stored run, writing each result as it arrives.

    A run stopped through ``cancel_event`` while ``shutdown_event`` is set (the server process is
    exiting) keeps its ``running`` status: its heartbeat goes stale and the next worker resumes it.

    Items already finished by this run are skipped; replies already in the cache cost nothing. The
    run ends ``done`` (every item has a result, some failures included), ``cancelled`` (someone
    asked it to stop) or ``failed`` (the endpoint refused, the key is missing, a template error, or
    every item failed: then the error names the first failure): the reason is saved with the run,
    never the key. Returns ``None`` when the run was already over.

    Built-in metrics (template, pipeline and function metrics) run through
    :class:`~evalcore.judge.builtins.MetricRunner` with the same sink and cache; a pipeline's
    intermediates land in each result's ``details``.
    """
    run = store.get_run(run_id)
    if run.is_terminal:
        return None
    if run.status == "cancelling":
        store.set_run_status(run_id, "cancelled")
        return None
    if is_batch_run(run):  # through the provider's Batch API (evalcore.runs._batch)
        summary, error = execute_batch_run(
            store, run, secrets=secrets, client=client, cancel_event=cancel_event, progress=progress
        )
    else:
        summary, error = judge_run_items(
            store,
            run,
            run.settings.get("item_ids"),
            secrets=secrets,
            client=client,
            cancel_event=cancel_event,
            progress=progress,
        )
    if summary is None:
        store.set_run_status(run_id, "failed", error=error)
        return None
    user_cancel = store.get_run(run_id).status == "cancelling"
    if (
        summary.cancelled
        and not user_cancel
        and shutdown_event is not None
        and shutdown_event.is_set()
    ):
        log.info("judge run %s stopped with the server; it resumes on the next start", run_id)
        return summary
    if summary.cancelled or user_cancel:
        store.set_run_status(run_id, "cancelled")
    elif summary.complete and _all_failed(store.run_progress(run_id)):
        reason = store.first_failure(run_id) or "no reason recorded"
        store.set_run_status(run_id, "failed", error=f"every item failed; the first: {reason}")
    elif summary.complete:
        store.set_run_status(run_id, "done")
    else:
        store.set_run_status(run_id, "interrupted", error="the run stopped before every item")
    return summary


def judge_run_items(
    store: Store,
    run: JudgeRunRecord,
    item_ids: Sequence[str] | None,
    *,
    secrets: Mapping[str, Any] | None = None,
    client: AsyncOpenAI | Callable[[], AsyncOpenAI] | None = None,
    cancel_event: threading.Event | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> tuple[RunSummary | None, str | None]:
    """Judge a run's items (``item_ids``: only those) into the store; the run's status is the
    caller's to set, except that it turns ``running`` here.

    Returns the runner's summary, or ``None`` and the reason when the run cannot go on (the
    endpoint refused, a missing key, a template error, an unexpected fault): what was judged
    before is kept. :func:`execute_run` judges a whole run with it, a worker one chunk.
    """
    try:
        if run.template_version_id is None:
            raise ConfigError(f"run {run.name!r} has no template version to run")
        content = store.get_template_version(run.template_version_id).parsed
        endpoint = store.get_endpoint(run.endpoint_id) if run.endpoint_id is not None else None
        items, db_ids = judge_items(store, run.dataset_id, item_ids)
        runner = make_runner(
            content,
            endpoint=endpoint,
            model=run.model,
            settings=run_settings(run),
            prices=_prices(store),
            secrets=secrets,
            client=client,
            allowed_key_names=key_policy(store) if endpoint is not None else (),
        )
    except EvalcoreError as exc:
        return None, str(exc)
    store.set_run_status(run.id, "running")
    writer = StoreWriter(store, run.id)
    sink = StoreSink(store, run.id, db_ids, writer, cancel_event=cancel_event)
    try:
        try:
            summary = runner.run_sync(items, sink, StoreCache(store, writer), progress=progress)
        finally:
            runner.close()
            writer.close()  # everything judged is committed before the run's status changes
    except (JudgeError, EvalcoreError) as exc:
        return None, str(exc)
    except Exception as exc:  # an unexpected fault: record it readably, keep what was saved
        log.exception("judge run %s stopped", run.id)
        return None, f"{type(exc).__name__}: {exc}"
    return summary, None


def _all_failed(progress: RunProgress) -> bool:
    """Whether a run has results and every one of them failed (nothing to calibrate)."""
    return progress.failed > 0 and progress.ok + progress.unparsed == 0


class RunWorker:
    """Background threads owned by the server that carry out judge runs.

    One worker per server process (the dashboard keeps it in ``st.cache_resource``). :meth:`submit`
    queues a run; :meth:`cancel` asks it to stop (from any process: the request goes through the
    store); :meth:`resume_stale` picks up runs a crashed or restarted server left behind.

    With external workers (``workers="external"``, default ``$EVALCORE_WORKERS``; PostgreSQL only,
    see :func:`evalcore.runs.uses_external_workers`) nothing runs in this process: :meth:`submit`
    splits the run into chunks on the task queue and ``evalcore worker`` processes carry them out.
    """

    def __init__(
        self,
        store: Store,
        *,
        secrets: Mapping[str, Any] | None = None,
        max_parallel: int = 2,
        client: AsyncOpenAI | Callable[[], AsyncOpenAI] | None = None,
        workers: str | None = None,
    ) -> None:
        from evalcore.runs._queue import uses_external_workers

        self.store = store
        self.secrets = secrets
        #: whether runs go to the task queue for ``evalcore worker`` processes
        self.external = uses_external_workers(store, workers)
        self._client = client
        self._pool = ThreadPoolExecutor(max_workers=max_parallel, thread_name_prefix="judge-run")
        self._lock = threading.Lock()
        self._active: dict[int, tuple[Future[RunSummary | None], threading.Event]] = {}
        self._closing = threading.Event()
        #: optimisation jobs ("Improve") running here, by job id
        self._improving: dict[int, tuple[Future[Any], threading.Event]] = {}
        _LIVE_WORKERS.add(self)

    def submit(self, run_id: int) -> None:
        """Start (or resume) a run in the background; a run already active here is left alone.

        With external workers: queue the run's chunks that no job is carrying out yet."""
        if self.external and not is_batch_run(self.store.get_run(run_id)):
            from evalcore.runs._queue import enqueue_run

            enqueue_run(self.store, run_id)
            return
        with self._lock:
            current = self._active.get(run_id)
            if current is not None and not current[0].done():
                return
            event = threading.Event()
            future = self._pool.submit(
                execute_run,
                self.store,
                run_id,
                secrets=self.secrets,
                client=self._client,
                cancel_event=event,
                shutdown_event=self._closing,
            )
            self._active[run_id] = (future, event)

    def cancel(self, run_id: int) -> None:
        """Ask a run to stop; it ends ``cancelled`` with everything judged so far kept."""
        self.store.request_cancel(run_id)
        with self._lock:
            current = self._active.get(run_id)
        if current is not None:
            current[1].set()

    def submit_improve(self, dataset_id: int, job_id: int) -> None:
        """Carry out an optimisation job (:func:`evalcore.runs.start_optimization`) in a thread
        of this worker, also with external workers; a job already active here is left alone."""
        from evalcore.runs._improve import execute_optimization

        with self._lock:
            current = self._improving.get(job_id)
            if current is not None and not current[0].done():
                return
            event = threading.Event()
            future = self._pool.submit(
                execute_optimization,
                self.store,
                dataset_id,
                job_id,
                secrets=self.secrets,
                client=self._client,
                cancel_event=event,
                shutdown_event=self._closing,
            )
            self._improving[job_id] = (future, event)

    def cancel_improve(self, dataset_id: int, job_id: int) -> None:
        """Ask an optimisation to stop (from any process); its report keeps what was done."""
        self.store.request_improve_cancel(dataset_id, job_id)
        with self._lock:
            current = self._improving.get(job_id)
        if current is not None:
            current[1].set()

    def wait_improve(self, job_id: int, timeout: float | None = None) -> Any:
        """Block until an optimisation submitted here ends (tests and scripts); its report."""
        with self._lock:
            current = self._improving.get(job_id)
        return None if current is None else current[0].result(timeout=timeout)

    def is_active(self, run_id: int) -> bool:
        if self.external:
            return not self.store.get_run(run_id).is_terminal
        with self._lock:
            current = self._active.get(run_id)
        return current is not None and not current[0].done()

    def wait(self, run_id: int, timeout: float | None = None) -> RunSummary | None:
        """Block until a submitted run ends (tests and scripts)."""
        with self._lock:
            current = self._active.get(run_id)
        return None if current is None else current[0].result(timeout=timeout)

    def resume_stale(self, *, stale_after_s: float = 30.0) -> list[int]:
        """Submit the runs nobody is working on (pending, or running with an old heartbeat)."""
        resumed: list[int] = []
        for run in self.store.runs_to_resume(stale_after_s=stale_after_s):
            if self.external or not self.is_active(run.id):
                self.submit(run.id)
                resumed.append(run.id)
        for job in self.store.improve_jobs_to_resume(stale_after_s=stale_after_s):
            self.submit_improve(job.dataset_id, job.id)  # optimisations: from the reply cache
        return resumed

    def shutdown(self, *, wait: bool = True) -> None:
        """Stop every active run and the threads. The runs stopped here are not cancelled: they keep
        their ``running`` status, and the next worker on this database resumes them."""
        self._closing.set()
        _LIVE_WORKERS.discard(self)
        with self._lock:
            events = [event for _, event in self._active.values()]
            events += [event for _, event in self._improving.values()]
        for event in events:
            event.set()
        self._pool.shutdown(wait=wait)


#: Every worker of this process not shut down yet, so that an exiting interpreter can stop their runs
#: (held strongly: a worker nobody refers to any more still has runs going in its threads).
_LIVE_WORKERS: set[RunWorker] = set()


def _stop_workers_at_exit() -> None:
    """Stop the runs of every worker before the interpreter waits for its threads.

    The thread pool's own exit hook joins its threads; a run waiting out a long retry would hold
    the process (a server stopped with Ctrl-C, a test session) for minutes. Hooks registered with
    ``threading._register_atexit`` run in reverse order, so this one, registered after
    :mod:`concurrent.futures` was imported, runs before that join.
    """
    for worker in list(_LIVE_WORKERS):
        worker.shutdown(wait=False)


threading._register_atexit(_stop_workers_at_exit)  # type: ignore[attr-defined]


def failed_item_ids(store: Store, run_id: int) -> list[str]:
    """Item ids whose result in a run is ``failed`` (to re-run just those)."""
    frame = store.results_frame(run_id)
    if frame.empty:
        return []
    failed = frame[frame["status"] == "failed"]
    column = "item_id" if "item_id" in failed.columns else failed.columns[0]
    return sorted({str(v) for v in failed[column].tolist()})


def results_table(store: Store, run_id: int, statuses: Iterable[str] | None = None) -> pd.DataFrame:
    """A run's results as a table, optionally only some statuses (e.g. unparsed and failed)."""
    frame = store.results_frame(run_id)
    if statuses is not None:
        frame = frame[frame["status"].isin(list(statuses))]
    return frame


def rerun_failed(
    store: Store,
    run_id: int,
    *,
    endpoint_id: int | None = None,
    model: str | None = None,
    name: str | None = None,
) -> JudgeRunRecord | None:
    """A new pending run of the same version, over just the items that failed in ``run_id``.

    Same settings, order mode and model (unless ``model`` is given) as the original; ``endpoint_id``
    replaces its endpoint (a recorded run may have none). ``None`` when nothing failed.
    """
    run = store.get_run(run_id)
    failed = failed_item_ids(store, run_id)
    if not failed:
        return None
    if run.template_version_id is None:
        raise ConfigError(
            f"run {run.name!r} was imported from a file; it has no template version to re-run"
        )
    settings = run_settings(run)
    version = store.get_template_version(run.template_version_id)
    return plan_run(
        store,
        dataset_id=run.dataset_id,
        template_version_id=version.id,
        endpoint_id=endpoint_id if endpoint_id is not None else run.endpoint_id,
        model=model or run.model,
        settings=settings,
        item_ids=failed,
        name=name or f"{run.name} · re-run of {len(failed)} failed",
    )


@dataclass(frozen=True)
class RunSnapshot:
    """A run as a progress view shows it, read from the store.

    ``rate`` is results per second since the run started (``None`` before the first result);
    ``eta_s`` the seconds left at that rate (``None`` when unknown or the run is over).
    """

    run: JudgeRunRecord
    progress: RunProgress
    elapsed_s: float | None
    rate: float | None
    eta_s: float | None

    @property
    def fraction(self) -> float:
        return self.progress.fraction

    @property
    def is_active(self) -> bool:
        """Still pending, running or stopping."""
        return not self.run.is_terminal


def run_snapshot(store: Store, run_id: int, *, now: datetime | None = None) -> RunSnapshot:
    """The run's status and progress with its rate and time left, from the store alone (so any page
    of any server process can show a run another thread is carrying out)."""
    run = store.get_run(run_id)
    progress = store.run_progress(run_id)
    start = run.started_at or progress.first_at
    end = run.finished_at if run.is_terminal and run.finished_at else (now or datetime.now(UTC))
    elapsed = None if start is None else max(0.0, (end - start).total_seconds())
    rate = None
    eta = None
    if elapsed and progress.finished:
        rate = progress.finished / elapsed
        left = max(0, progress.planned - progress.finished)
        if not run.is_terminal and rate > 0:
            eta = left / rate
    return RunSnapshot(run, progress, elapsed, rate, eta)


def api_key_is_set(
    api_key_env: str | None,
    secrets: Mapping[str, Any] | None = None,
    allowed_key_names: Sequence[str] = (),
) -> bool | None:
    """Whether the endpoint's key is available under the server's key policy (``None``: no key is
    needed): the name is allowed (:func:`evalcore.secrets.key_name_allowed`) and its variable or
    secret holds a value. The value itself is never returned."""
    if not api_key_env:
        return None
    return key_status(api_key_env, secrets, allowed_key_names) == "set"


def version_of_run(store: Store, run: JudgeRunRecord) -> TemplateVersionRecord | None:
    """The template version a run judged with (``None`` for an imported run)."""
    if run.template_version_id is None:
        return None
    return store.get_template_version(run.template_version_id)
