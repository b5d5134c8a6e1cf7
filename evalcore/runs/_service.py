"""Judge runs over the store: plan one, estimate it, and carry it out.

A run is a row in ``judge_runs`` (template version × dataset × endpoint × model, with its settings)
plus one row per (item, order) in ``judge_results``. :func:`execute_run` is the synchronous body that a
worker thread, a CLI or a test calls: it claims the run's lease (:class:`~evalcore.runs._jobs.RunJob`),
renews it while it works, and resumes whatever the run has not finished, so calling it again after a
crash or a cancel costs nothing for the items already judged. :class:`~evalcore.runs.RunWorker`
(:mod:`evalcore.runs._worker`) calls it in the server's threads, so a run survives the user leaving
the page; pages only read progress from the store.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pandas as pd
from openai import AsyncOpenAI

from evalcore.errors import ConfigError, EvalcoreError, JudgeError
from evalcore.judge import (
    Estimate,
    JudgeItem,
    JudgeTemplate,
    Progress,
    RunSettings,
    RunSummary,
    SamplesBy,
    endpoint_identity,
    estimate,
)
from evalcore.judge.builtins import MetricSpec, prepare_items
from evalcore.runs._batch import BatchSettings, execute_batch_run, is_batch_run
from evalcore.runs._common import (
    SETTING_FIELDS,
    Client,
    judge_items,
    key_policy,
    make_runner,
    resolve_model,
    run_settings,
    store_prices,
)
from evalcore.runs._io import StoreCache, StoreSink, StoreWriter
from evalcore.runs._jobs import RUN_LEASE_S, LeaseKeeper, RunJob, process_owner
from evalcore.runs._versions import ContentLike, as_content, metric_of, template_of_content
from evalcore.secrets import key_status
from evalcore.store import (
    JudgeRunRecord,
    RunProgress,
    Store,
    TemplateVersionRecord,
)

__all__ = [
    "RunSnapshot",
    "api_key_is_set",
    "estimate_content",
    "estimate_run",
    "execute_run",
    "failed_item_ids",
    "judge_run_items",
    "plan_run",
    "rerun_failed",
    "results_table",
    "run_snapshot",
    "version_of_run",
]

log = logging.getLogger(__name__)


class _NoRequests:
    """The client of an estimate: it names the endpoint (for the cache keys) and sends nothing."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def __call__(self) -> AsyncOpenAI:
        raise ConfigError("an estimate sends no request")  # pragma: no cover


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
    chosen_model = resolve_model(content, model, endpoint)
    items, _ = judge_items(store, dataset_id, item_ids)
    if not items:
        raise ConfigError("the run has no items (the filter kept none)")
    units = _run_units(content, spec, items, chosen_model, settings.order_mode)
    if spec is not None:
        pairwise = spec.is_pairwise
    else:
        pairwise = template_of_content(content).kind == "pairwise"
    stored: dict[str, Any] = {f: getattr(settings, f) for f in SETTING_FIELDS}
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
        prices=store.get_batch_prices() if batch else (store_prices(store) or None),
        client=_NoRequests(endpoint_identity(base_url)),  # a pool's cache keys name the pool
    )
    return runner.estimate(items, StoreCache(store))


def execute_run(
    store: Store,
    run_id: int,
    *,
    secrets: Mapping[str, Any] | None = None,
    client: Client | None = None,
    cancel_event: threading.Event | None = None,
    progress: Callable[[Progress], None] | None = None,
    shutdown_event: threading.Event | None = None,
    owner: str | None = None,
    lease_s: float = RUN_LEASE_S,
) -> RunSummary | None:
    """Carry out (or resume) a stored run, writing each result as it arrives.

    The run is held by a lease in ``owner``'s name (default: this process's direct caller; see
    :mod:`evalcore.runs._jobs`), renewed every second: a worker that dies stops renewing it, and
    another takes the run over. A run a live worker holds is left alone (``None``). A run stopped
    through ``cancel_event`` while ``shutdown_event`` is set (the server process is exiting) keeps its
    ``running`` status and gives its lease up: the next worker resumes it. A run whose lease was
    taken over (this process was thought gone) stops and changes nothing.

    Items already finished by this run are skipped; replies already in the cache cost nothing. The
    run ends ``done`` (every item has a result, some failures included), ``cancelled`` (someone
    asked it to stop) or ``failed`` (the endpoint refused, the key is missing, a template error, or
    every item failed: then the error names the first failure): the reason is saved with the run,
    never the key. Returns ``None`` when the run was already over or is held by another worker.

    Built-in metrics (template, pipeline and function metrics) run through
    :class:`~evalcore.judge.builtins.MetricRunner` with the same sink and cache; a pipeline's
    intermediates land in each result's ``details``.
    """
    run = store.get_run(run_id)
    if run.is_terminal:
        return None
    job = RunJob(store, run_id, owner or process_owner("direct"), lease_s=lease_s)
    if not job.claim():
        log.info("judge run %s is carried out by %s", run_id, store.get_run(run_id).lease_owner)
        return None
    run = store.get_run(run_id)
    if run.status == "cancelling":
        job.finish("cancelled")
        return None
    stop = cancel_event or threading.Event()
    with LeaseKeeper(job, stop) as keeper:
        if is_batch_run(run):  # through the provider's Batch API (evalcore.runs._batch)
            summary, error = execute_batch_run(
                store, run, secrets=secrets, client=client, cancel_event=stop, progress=progress
            )
        else:
            summary, error = judge_run_items(
                store,
                run,
                run.settings.get("item_ids"),
                secrets=secrets,
                client=client,
                cancel_event=stop,
                progress=progress,
            )
    if keeper.lost.is_set():
        log.warning("judge run %s was taken over by another worker; this one stops", run_id)
        return summary
    if summary is None:
        job.finish("failed", error=error)
        return None
    user_cancel = keeper.cancel_requested.is_set() or store.get_run(run_id).status == "cancelling"
    if (
        summary.cancelled
        and not user_cancel
        and shutdown_event is not None
        and shutdown_event.is_set()
    ):
        job.release()
        log.info("judge run %s stopped with the server; it resumes on the next start", run_id)
        return summary
    if summary.cancelled or user_cancel:
        job.finish("cancelled")
    elif summary.complete and _all_failed(store.run_progress(run_id)):
        reason = store.first_failure(run_id) or "no reason recorded"
        job.finish("failed", error=f"every item failed; the first: {reason}")
    elif summary.complete:
        job.finish("done")
    else:
        job.finish("interrupted", error="the run stopped before every item")
    return summary


def judge_run_items(
    store: Store,
    run: JudgeRunRecord,
    item_ids: Sequence[str] | None,
    *,
    secrets: Mapping[str, Any] | None = None,
    client: Client | None = None,
    cancel_event: threading.Event | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> tuple[RunSummary | None, str | None]:
    """Judge a run's items (``item_ids``: only those) into the store; the run's status is the
    caller's to set, except that it turns ``running`` here. The caller holds the job
    (:mod:`evalcore.runs._jobs`): its heartbeat sets ``cancel_event`` when the run is to stop.

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
            prices=store_prices(store),
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
