"""Judge runs over the store: planning, estimates, execution and the background worker.

This layer joins :mod:`evalcore.judge` (templates, runner, client, built-in metrics) and
:mod:`evalcore.store` (datasets, template versions, results, cache). The dashboard and the CLI use it;
neither talks to the runner directly for stored runs.

- Runs: :func:`plan_run`, :func:`estimate_run` (:func:`estimate_content` for an unsaved version),
  :func:`execute_run`, :class:`RunWorker`, :func:`run_snapshot` (progress, rate, time left, from the
  store), :func:`rerun_failed`, :func:`failed_item_ids`, :func:`results_table`; the store-backed
  :class:`StoreSink` and :class:`StoreCache`, which can queue their writes to a :class:`StoreWriter`
  (one thread that commits them in groups).
- Batch mode (:mod:`evalcore.runs._batch`): ``plan_run(..., batch=BatchSettings(...))``, carried
  out by :func:`execute_batch_run` through the endpoint's Batch API with its batches kept in the
  store (:class:`StoreBatchLedger`); :func:`batch_progress` for a page, :func:`batch_prices`.
- Workers on many hosts (PostgreSQL): :func:`uses_external_workers` (``$EVALCORE_WORKERS``),
  :func:`enqueue_run` (a run's chunks as task-queue jobs), :class:`ChunkWorker` (the ``evalcore
  worker`` process), :func:`list_workers` / :func:`workers_table` (who is alive, doing what).
- Versions of every kind (:mod:`evalcore.runs._versions`): judge templates, built-in template metrics
  and their edited copies, pipeline and function metrics, as typed records
  (:class:`~evalcore.store.TemplateVersionContent`, :class:`~evalcore.store.MetricVersionContent`;
  :func:`as_content` reads the stored JSON). :func:`metric_of` / :func:`metric_content`,
  :func:`save_version` (no new version when nothing changed), :func:`restore_version`,
  :func:`diff_versions`, :func:`preview_messages`, :func:`version_variables`,
  :func:`copy_metric`, :func:`metric_version`, :func:`metric_criteria`.
- "Improve" (:mod:`evalcore.runs._improve`): :func:`start_optimization` registers an optimisation
  of a template version (:mod:`evalcore.improve`) that :meth:`RunWorker.submit_improve` carries out
  with the store's reply cache and saved split (:func:`execute_optimization`);
  :func:`estimate_optimization` before, :func:`save_optimized_version` after.
- "Try it": :func:`try_version` judges a few items synchronously and returns the results without
  saving a run.
- Settings: :func:`save_endpoint` (refuses a pasted key), :func:`endpoints_table` (key variable and
  whether it is set, never the key), :func:`price_table`, :func:`save_prices`.
"""

from evalcore.runs._batch import (
    BATCH_MODE,
    BatchProgress,
    BatchSettings,
    StoreBatchLedger,
    batch_prices,
    batch_progress,
    execute_batch_run,
    is_batch_run,
)
from evalcore.runs._config import (
    PRICE_COLUMNS,
    endpoints_table,
    price_table,
    save_endpoint,
    save_prices,
)
from evalcore.runs._improve import (
    ImproveEstimate,
    ImproveInputs,
    estimate_optimization,
    execute_optimization,
    human_ceiling,
    improve_inputs,
    job_report,
    job_settings,
    restart_optimization,
    save_optimized_version,
    split_name,
    start_optimization,
)
from evalcore.runs._io import StoreCache, StoreSink, StoreWriter
from evalcore.runs._queue import (
    CHUNK_SIZE,
    LEASE_S,
    QUEUE_SCHEMA,
    WORKER_COLUMNS,
    WORKERS_ENV,
    ChunkWorker,
    enqueue_run,
    list_workers,
    queue_app,
    uses_external_workers,
    workers_table,
)
from evalcore.runs._service import (
    RunSnapshot,
    RunWorker,
    api_key_is_set,
    endpoint_of,
    estimate_content,
    estimate_run,
    execute_run,
    failed_item_ids,
    judge_items,
    judge_run_items,
    key_policy,
    make_runner,
    plan_run,
    rerun_failed,
    resolve_model,
    results_table,
    run_settings,
    run_snapshot,
    template_of,
    version_of_run,
)
from evalcore.runs._trial import TRIAL_COLUMNS, TRIAL_ITEMS, Trial, try_version
from evalcore.runs._versions import (
    BUILTIN_KEY,
    ContentLike,
    SaveOutcome,
    VersionKind,
    as_content,
    builtin_template_name,
    copy_metric,
    diff_versions,
    ensure_metric_criterion,
    metric_content,
    metric_criteria,
    metric_of,
    metric_version,
    new_template_content,
    preview_messages,
    restore_version,
    same_content,
    save_version,
    template_content,
    template_of_content,
    template_uses,
    version_kind,
    version_variables,
)

__all__ = [
    "BATCH_MODE",
    "BUILTIN_KEY",
    "CHUNK_SIZE",
    "LEASE_S",
    "PRICE_COLUMNS",
    "QUEUE_SCHEMA",
    "TRIAL_COLUMNS",
    "TRIAL_ITEMS",
    "WORKERS_ENV",
    "WORKER_COLUMNS",
    "BatchProgress",
    "BatchSettings",
    "ChunkWorker",
    "ContentLike",
    "ImproveEstimate",
    "ImproveInputs",
    "RunSnapshot",
    "RunWorker",
    "SaveOutcome",
    "StoreBatchLedger",
    "StoreCache",
    "StoreSink",
    "StoreWriter",
    "Trial",
    "VersionKind",
    "api_key_is_set",
    "as_content",
    "batch_prices",
    "batch_progress",
    "builtin_template_name",
    "copy_metric",
    "diff_versions",
    "endpoint_of",
    "endpoints_table",
    "enqueue_run",
    "ensure_metric_criterion",
    "estimate_content",
    "estimate_optimization",
    "estimate_run",
    "execute_batch_run",
    "execute_optimization",
    "execute_run",
    "failed_item_ids",
    "human_ceiling",
    "improve_inputs",
    "is_batch_run",
    "job_report",
    "job_settings",
    "judge_items",
    "judge_run_items",
    "key_policy",
    "list_workers",
    "make_runner",
    "metric_content",
    "metric_criteria",
    "metric_of",
    "metric_version",
    "new_template_content",
    "plan_run",
    "preview_messages",
    "price_table",
    "queue_app",
    "rerun_failed",
    "resolve_model",
    "restart_optimization",
    "restore_version",
    "results_table",
    "run_settings",
    "run_snapshot",
    "same_content",
    "save_endpoint",
    "save_optimized_version",
    "save_prices",
    "save_version",
    "split_name",
    "start_optimization",
    "template_content",
    "template_of",
    "template_of_content",
    "template_uses",
    "try_version",
    "uses_external_workers",
    "version_kind",
    "version_of_run",
    "version_variables",
    "workers_table",
]
