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
import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
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
    RunSettings,
    RunSummary,
    client_factory,
    estimate,
)
from evalcore.runs._io import StoreCache, StoreSink
from evalcore.store import EndpointRecord, JudgeRunRecord, Store

__all__ = [
    "RunWorker",
    "estimate_run",
    "execute_run",
    "judge_items",
    "plan_run",
    "run_settings",
    "template_of",
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


def _cell(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    return value


def judge_items(
    store: Store, dataset_id: int, item_ids: Sequence[str] | None = None
) -> tuple[list[JudgeItem], dict[str, int]]:
    """The items of a dataset as the runner sees them, and their database ids by item id.

    Fields are the canonical ones (``prompt``, ``response``, ``context``, ``reference``,
    ``response_a``, ``response_b``), every metadata column, and the aliases other systems use
    (``question``, ``answer``, ``ground_truth``, ``baseline_model_response``; for a pairwise item
    ``response`` is ``response_a`` when it has no ``response``). ``item_ids`` keeps only those items.
    """
    frame = store.items_frame(dataset_id)
    if item_ids is not None:
        wanted = {str(i) for i in item_ids}
        frame = frame[frame["item_id"].astype(str).isin(wanted)]
    items: list[JudgeItem] = []
    db_ids: dict[str, int] = {}
    for db_id, row in zip(frame.index.tolist(), frame.to_dict("records"), strict=True):
        external = str(row.pop("item_id"))
        fields = {str(k): _cell(v) for k, v in row.items()}
        if fields.get("response") is None and fields.get("response_a") is not None:
            fields["response"] = fields["response_a"]
        for alias, source in _ALIASES.items():
            fields.setdefault(alias, fields.get(source))
        items.append(JudgeItem(external, fields))
        db_ids[external] = int(db_id)
    return items, db_ids


def template_of(store: Store, version_id: int) -> JudgeTemplate:
    """The judge template of a stored template version."""
    return JudgeTemplate.from_dict(store.get_template_version(version_id).content)


def run_settings(run: JudgeRunRecord) -> RunSettings:
    """The runner settings recorded with a run."""
    known = {k: v for k, v in run.settings.items() if k in _SETTING_FIELDS}
    return RunSettings(**known, order_mode=run.order_mode, seed=run.seed or 0)


def endpoint_of(record: EndpointRecord) -> Endpoint:
    """The judge client's view of a stored endpoint (the key stays in the environment)."""
    if not record.base_url:
        raise ConfigError(f"endpoint {record.name!r} has no base URL")
    return Endpoint(
        record.name,
        base_url=record.base_url,
        kind=record.kind,
        api_key_env=record.api_key_env,
        api_version=record.api_version,
        default_model=record.default_model or "",
        headers=tuple(sorted((record.extra.get("headers") or {}).items())),
    )


def plan_run(
    store: Store,
    *,
    dataset_id: int,
    template_version_id: int,
    endpoint_id: int,
    model: str | None = None,
    settings: RunSettings | None = None,
    item_ids: Sequence[str] | None = None,
    name: str | None = None,
) -> JudgeRunRecord:
    """Register a pending run; :class:`RunWorker` (or :func:`execute_run`) carries it out.

    ``item_ids`` restricts the run to a subset (a filter, or the failed items of an earlier run).
    Every item is checked against the template before the run is saved, so a variable that an item
    lacks is a clear error now, not a run full of failures.
    """
    settings = settings or RunSettings()
    version = store.get_template_version(template_version_id)
    template = JudgeTemplate.from_dict(version.content)
    template_record = store.get_template(version.template_id)
    endpoint = store.get_endpoint(endpoint_id)
    chosen_model = model or template.model.model or endpoint.default_model
    if not chosen_model:
        raise ConfigError("choose a model: the template and the endpoint name none")
    items, _ = judge_items(store, dataset_id, item_ids)
    if not items:
        raise ConfigError("the run has no items (the filter kept none)")
    # raises MissingVariableError naming the variable and the item, before anything is saved
    estimate(items, template, model=chosen_model, order_mode=settings.order_mode)
    units = len(items) * (2 if template.kind == "pairwise" and settings.order_mode == "both" else 1)
    stored: dict[str, Any] = {f: getattr(settings, f) for f in _SETTING_FIELDS}
    if item_ids is not None:
        stored["item_ids"] = [str(i) for i in item_ids]
    run_name = name or f"{template_record.name} v{version.number} · {chosen_model}"
    return store.create_run(
        dataset_id,
        template_record.criterion_id,
        name=run_name,
        model=chosen_model,
        template_version_id=template_version_id,
        endpoint_id=endpoint_id,
        settings=stored,
        order_mode=settings.order_mode if template.kind == "pairwise" else "single",
        seed=settings.seed,
        n_planned=units,
    )


def estimate_run(
    store: Store,
    *,
    dataset_id: int,
    template_version_id: int,
    model: str,
    order_mode: str = "single",
    item_ids: Sequence[str] | None = None,
) -> Estimate:
    """Requests, tokens and cost a run would need, and how many replies are already cached."""
    template = template_of(store, template_version_id)
    items, _ = judge_items(store, dataset_id, item_ids)
    prices = {m: (p.input_per_mtok, p.output_per_mtok) for m, p in store.get_model_prices().items()}
    return estimate(
        items,
        template,
        StoreCache(store),
        prices or None,
        model=model,
        order_mode=order_mode,  # type: ignore[arg-type]
    )


def execute_run(
    store: Store,
    run_id: int,
    *,
    secrets: Mapping[str, Any] | None = None,
    client: AsyncOpenAI | Callable[[], AsyncOpenAI] | None = None,
    cancel_event: threading.Event | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> RunSummary | None:
    """Carry out (or resume) a stored run, writing each result as it arrives.

    Items already finished by this run are skipped; replies already in the cache cost nothing. The
    run ends ``done`` (every item has a result, failures included), ``cancelled`` (someone asked it to
    stop) or ``failed`` (the endpoint refused, the key is missing, a template error): the reason is
    saved with the run, never the key. Returns ``None`` when the run was already over.
    """
    run = store.get_run(run_id)
    if run.is_terminal:
        return None
    if run.status == "cancelling":
        store.set_run_status(run_id, "cancelled")
        return None
    try:
        if run.template_version_id is None or run.endpoint_id is None:
            raise ConfigError(f"run {run.name!r} has no template version or endpoint to run")
        template = template_of(store, run.template_version_id)
        endpoint = endpoint_of(store.get_endpoint(run.endpoint_id))
        items, db_ids = judge_items(store, run.dataset_id, run.settings.get("item_ids"))
        settings = run_settings(run)
        prices = {
            m: (p.input_per_mtok, p.output_per_mtok) for m, p in store.get_model_prices().items()
        }
        factory = client if client is not None else client_factory(endpoint, secrets=secrets)
        runner = JudgeRunner(factory, template, settings=settings, model=run.model, prices=prices)
    except EvalcoreError as exc:
        store.set_run_status(run_id, "failed", error=str(exc))
        return None
    store.set_run_status(run_id, "running")
    sink = StoreSink(store, run_id, db_ids, cancel_event=cancel_event)
    try:
        summary = runner.run_sync(items, sink, StoreCache(store), progress=progress)
    except (JudgeError, EvalcoreError) as exc:
        store.set_run_status(run_id, "failed", error=str(exc))
        return None
    except Exception as exc:  # an unexpected fault: record it readably, keep what was saved
        log.exception("judge run %s stopped", run_id)
        store.set_run_status(run_id, "failed", error=f"{type(exc).__name__}: {exc}")
        return None
    finally:
        runner.close()
    if summary.cancelled or store.get_run(run_id).status == "cancelling":
        store.set_run_status(run_id, "cancelled")
    elif summary.complete:
        store.set_run_status(run_id, "done")
    else:
        store.set_run_status(run_id, "interrupted", error="the run stopped before every item")
    return summary


class RunWorker:
    """Background threads owned by the server that carry out judge runs.

    One worker per server process (the dashboard keeps it in ``st.cache_resource``). :meth:`submit`
    queues a run; :meth:`cancel` asks it to stop (from any process: the request goes through the
    store); :meth:`resume_stale` picks up runs a crashed or restarted server left behind.
    """

    def __init__(
        self,
        store: Store,
        *,
        secrets: Mapping[str, Any] | None = None,
        max_parallel: int = 2,
        client: AsyncOpenAI | Callable[[], AsyncOpenAI] | None = None,
    ) -> None:
        self.store = store
        self.secrets = secrets
        self._client = client
        self._pool = ThreadPoolExecutor(max_workers=max_parallel, thread_name_prefix="judge-run")
        self._lock = threading.Lock()
        self._active: dict[int, tuple[Future[RunSummary | None], threading.Event]] = {}

    def submit(self, run_id: int) -> None:
        """Start (or resume) a run in the background; a run already active here is left alone."""
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
            )
            self._active[run_id] = (future, event)

    def cancel(self, run_id: int) -> None:
        """Ask a run to stop; it ends ``cancelled`` with everything judged so far kept."""
        self.store.request_cancel(run_id)
        with self._lock:
            current = self._active.get(run_id)
        if current is not None:
            current[1].set()

    def is_active(self, run_id: int) -> bool:
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
            if not self.is_active(run.id):
                self.submit(run.id)
                resumed.append(run.id)
        return resumed

    def shutdown(self, *, wait: bool = True) -> None:
        with self._lock:
            events = [event for _, event in self._active.values()]
        for event in events:
            event.set()
        self._pool.shutdown(wait=wait)


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
