"""Judge runs over the store: planning, estimates, execution and the background worker.

This layer joins :mod:`evalcore.judge` (templates, runner, client, built-in metrics) and
:mod:`evalcore.store` (datasets, template versions, results, cache). The dashboard and the CLI use it;
neither talks to the runner directly for stored runs.

- Runs: :func:`plan_run`, :func:`estimate_run` (:func:`estimate_content` for an unsaved version),
  :func:`execute_run`, :class:`RunWorker`, :func:`run_snapshot` (progress, rate, time left, from the
  store), :func:`rerun_failed`, :func:`failed_item_ids`, :func:`results_table`; the store-backed
  :class:`StoreSink` and :class:`StoreCache`, which can queue their writes to a :class:`StoreWriter`
  (one thread that commits them in groups).
- Versions of every kind (:mod:`evalcore.runs._versions`): judge templates, built-in template metrics
  and their edited copies, pipeline and function metrics, as typed records
  (:class:`~evalcore.store.TemplateVersionContent`, :class:`~evalcore.store.MetricVersionContent`;
  :func:`as_content` reads the stored JSON). :func:`metric_of` / :func:`metric_content`,
  :func:`save_version` (no new version when nothing changed), :func:`restore_version`,
  :func:`diff_versions`, :func:`preview_messages`, :func:`version_variables`,
  :func:`copy_metric`, :func:`metric_version`, :func:`metric_criteria`.
- "Try it": :func:`try_version` judges a few items synchronously and returns the results without
  saving a run.
- Settings: :func:`save_endpoint` (refuses a pasted key), :func:`endpoints_table` (key variable and
  whether it is set, never the key), :func:`price_table`, :func:`save_prices`.
"""

from evalcore.runs._config import (
    PRICE_COLUMNS,
    endpoints_table,
    price_table,
    save_endpoint,
    save_prices,
)
from evalcore.runs._io import StoreCache, StoreSink, StoreWriter
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
    "BUILTIN_KEY",
    "PRICE_COLUMNS",
    "TRIAL_COLUMNS",
    "TRIAL_ITEMS",
    "ContentLike",
    "RunSnapshot",
    "RunWorker",
    "SaveOutcome",
    "StoreCache",
    "StoreSink",
    "StoreWriter",
    "Trial",
    "VersionKind",
    "api_key_is_set",
    "as_content",
    "builtin_template_name",
    "copy_metric",
    "diff_versions",
    "endpoint_of",
    "endpoints_table",
    "ensure_metric_criterion",
    "estimate_content",
    "estimate_run",
    "execute_run",
    "failed_item_ids",
    "judge_items",
    "make_runner",
    "metric_content",
    "metric_criteria",
    "metric_of",
    "metric_version",
    "new_template_content",
    "plan_run",
    "preview_messages",
    "price_table",
    "rerun_failed",
    "resolve_model",
    "restore_version",
    "results_table",
    "run_settings",
    "run_snapshot",
    "same_content",
    "save_endpoint",
    "save_prices",
    "save_version",
    "template_content",
    "template_of",
    "template_of_content",
    "template_uses",
    "try_version",
    "version_kind",
    "version_of_run",
    "version_variables",
]
