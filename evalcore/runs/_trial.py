""" "Try it on a few items": a small synchronous run of a version that is not saved as a run.

:func:`try_version` judges the first few items of a dataset (or chosen ones) with a template version's
content, saved or not, through the same runner, client, retries and parsing as a full run, and returns
the results in memory. Nothing is written to the runs or results tables. Replies do go to the shared
reply cache, so a full run of the same version afterwards does not pay for them again (and trying the
same version twice costs nothing the second time: those results say ``cached``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from evalcore.errors import ConfigError
from evalcore.judge import JudgeResult, MemorySink, RunSettings, RunSummary
from evalcore.runs._common import Client, judge_items, key_policy, make_runner, store_prices
from evalcore.runs._io import StoreCache
from evalcore.runs._versions import ContentLike, as_content, metric_of
from evalcore.store import Store

__all__ = ["TRIAL_COLUMNS", "TRIAL_ITEMS", "Trial", "try_version"]

#: How many items "try it" judges by default.
TRIAL_ITEMS = 5

#: Columns of :meth:`Trial.table`, in order (the Judge page shows a stored run's results the same).
TRIAL_COLUMNS = (
    "item_id",
    "order",
    "status",
    "label",
    "score",
    "reason",
    "raw",
    "error",
    "tokens",
    "latency_s",
    "cost",
    "cached",
)


@dataclass(frozen=True)
class Trial:
    """The results of :func:`try_version`, in item order."""

    results: tuple[JudgeResult, ...]
    summary: RunSummary
    model: str

    def table(self) -> pd.DataFrame:
        """One row per result: the raw reply beside the parsed label, status, reason and error."""
        rows: list[dict[str, Any]] = []
        for r in self.results:
            data = r.to_dict()
            rows.append(
                {c: data[c] for c in TRIAL_COLUMNS if c != "label"} | {"label": data["label_text"]}
            )
        return pd.DataFrame(rows, columns=list(TRIAL_COLUMNS))


def try_version(
    store: Store,
    content: ContentLike,
    *,
    dataset_id: int,
    endpoint_id: int | None,
    model: str | None = None,
    n_items: int = TRIAL_ITEMS,
    item_ids: Sequence[str] | None = None,
    settings: RunSettings | None = None,
    secrets: Mapping[str, Any] | None = None,
    client: Client | None = None,
) -> Trial:
    """Judge ``n_items`` items (the first ones, or ``item_ids``) with ``content``, synchronously.

    By default at most 2 attempts per request with short waits, so that a try answers quickly; a
    full run retries more patiently. ``content`` is a version's content (:meth:`evalcore.judge.JudgeTemplate.content_dict`, or a
    built-in metric's, see :mod:`evalcore.runs._versions`), saved or not. Raises what a run would
    raise before its first request (a missing variable or input names the variable and the item; a
    missing API key names the variable) and :class:`~evalcore.errors.JudgeError` when the endpoint
    refuses the requests. A reply that does not parse is an ``unparsed`` result, never an error.
    """
    store.authorize("manage", dataset_id=dataset_id)
    if n_items < 1:
        raise ConfigError("try it on at least one item")
    items, _ = judge_items(store, dataset_id, item_ids)
    items = items[:n_items]
    if not items:
        raise ConfigError("the dataset has no items to try")
    endpoint = store.get_endpoint(endpoint_id) if endpoint_id is not None else None
    content = as_content(content)
    spec = metric_of(content)
    if settings is None:
        # a try should answer quickly: one retry, short waits
        settings = RunSettings(
            concurrency=n_items,
            max_attempts=2,
            backoff_max=2.0,
            max_retry_after=5.0,
            order_mode=spec.order_mode if spec is not None else "single",
        )
    runner = make_runner(
        content,
        endpoint=endpoint,
        model=model,
        settings=settings,
        prices=store_prices(store),
        secrets=secrets,
        client=client,
        allowed_key_names=key_policy(store),
    )
    sink = MemorySink()
    try:
        summary = runner.run_sync(items, sink, StoreCache(store))
    finally:
        runner.close()
    order = {item.item_id: n for n, item in enumerate(items)}
    results = sorted(sink, key=lambda r: (order.get(r.item_id, len(order)), r.order))
    return Trial(tuple(results), summary, runner.model or "")
