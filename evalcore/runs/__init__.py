"""Judge runs over the store: planning, estimates, execution and the background worker.

This layer joins :mod:`evalcore.judge` (templates, runner, client) and :mod:`evalcore.store`
(datasets, results, cache). The dashboard and the CLI use it; neither talks to the runner directly for
stored runs.
"""

from evalcore.runs._io import StoreCache, StoreSink
from evalcore.runs._service import (
    RunWorker,
    endpoint_of,
    estimate_run,
    execute_run,
    failed_item_ids,
    judge_items,
    plan_run,
    results_table,
    run_settings,
    template_of,
)

__all__ = [
    "RunWorker",
    "StoreCache",
    "StoreSink",
    "endpoint_of",
    "estimate_run",
    "execute_run",
    "failed_item_ids",
    "judge_items",
    "plan_run",
    "results_table",
    "run_settings",
    "template_of",
]
