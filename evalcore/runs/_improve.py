"""Optimisation jobs over the store: "Improve" a template version from a dataset's human labels.

:func:`start_optimization` registers a job (``improve_jobs``, migration 0008) and hands it to the
server's :class:`~evalcore.runs.RunWorker` (:meth:`~evalcore.runs.RunWorker.submit_improve`), whose
thread runs :func:`execute_optimization`: it reads the items, the majority human label of each and
the annotators' comments from the store, reuses the dataset's saved split of the same share and seed
(or makes one and saves it), and calls :func:`evalcore.improve.optimize` with the store's reply cache,
so a second optimisation with the same settings is answered from the cache. The job is held by a
lease (:class:`~evalcore.runs._jobs.ImproveJob`) renewed every second, so a worker that dies is
replaced by another, which goes on from the cache. Progress (phase, done/total, requests and cost
so far) is saved at most every half second; a cancel request made from any process is seen within a
second and stops the job with what is done kept in its report. A job that ends ``done`` has ended
every step (done equals total): a planned candidate that was not judged is taken out of the total
and listed in the report with its reason. The human ceiling of its report is the Calibrate page's
(:func:`evalcore.report.human_ceiling`) on the test items.

:func:`save_optimized_version` turns a finalist that beat the start on test into a new immutable
template version (:func:`evalcore.improve.save_candidate`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalcore.errors import ConfigError, EvalcoreError, NotFoundError
from evalcore.improve import (
    ImproveProgress,
    OptimizeReport,
    OptimizeSettings,
    Split,
    estimate_optimize,
    make_split,
    optimize,
    save_candidate,
)
from evalcore.judge import JudgeItem, client_factory
from evalcore.labels import Label
from evalcore.report import HumanCeiling, aggregate_human
from evalcore.report import human_ceiling as calibrate_ceiling
from evalcore.runs._common import (
    Client,
    endpoint_of,
    judge_items,
    key_policy,
    store_prices,
    template_of,
)
from evalcore.runs._io import StoreCache
from evalcore.runs._jobs import RUN_LEASE_S, ImproveJob, LeaseKeeper, process_owner
from evalcore.store import ImproveJobRecord, Store, TemplateVersionRecord

__all__ = [
    "ImproveEstimate",
    "ImproveInputs",
    "estimate_optimization",
    "execute_optimization",
    "human_ceiling",
    "improve_inputs",
    "job_report",
    "job_settings",
    "restart_optimization",
    "save_optimized_version",
    "split_name",
    "start_optimization",
]

log = logging.getLogger(__name__)

_SAVE_EVERY_S = 0.5  # progress is written at most this often

#: Reports of the jobs this process ran, by (database URL, job id): saving a candidate needs the
#: report's objects; after a restart they are rebuilt from the reply cache.
_REPORTS: dict[tuple[str, int], OptimizeReport] = {}
_REPORTS_LOCK = threading.Lock()


@dataclass(frozen=True)
class ImproveInputs:
    """What an optimisation of a dataset and criterion works on, read from the store."""

    items: list[JudgeItem]
    human: dict[str, Label]
    comments: dict[str, str]


@dataclass(frozen=True)
class ImproveEstimate:
    """An upper estimate of an optimisation (see :func:`evalcore.improve.estimate_optimize`)."""

    requests: int
    tokens_in: int
    tokens_out: int
    cost: float | None
    labelled: int


def split_name(test_share: float, seed: int) -> str:
    """The name a split of this share and seed is saved under, so that every optimisation with the
    same share and seed is measured on the same test items.

    >>> split_name(0.4, 0), split_name(0.3, 7)
    ('improve-test0.4-seed0', 'improve-test0.3-seed7')
    """
    return f"improve-test{test_share:g}-seed{int(seed)}"


def improve_inputs(store: Store, dataset_id: int, criterion_id: int) -> ImproveInputs:
    """The dataset's items, one human label per item (the majority; items without one are left
    out) and the annotators' latest comments joined per item."""
    store.authorize("manage", dataset_id=dataset_id)
    items, _ = judge_items(store, dataset_id)
    scale = store.get_criterion(criterion_id).scale
    matrix = store.annotation_matrix(dataset_id, criterion_id)
    human: dict[str, Label] = {}
    if matrix.shape[1]:
        values = aggregate_human(matrix, scale, "majority")  # the Calibrate page's policy
        for item_id, value in zip(matrix.index, values.tolist(), strict=True):
            if _present(value):
                human[str(item_id)] = value
    comments: dict[str, list[str]] = {}
    frame = store.export_annotations(dataset_id=dataset_id, criterion_id=criterion_id)
    if not frame.empty:
        kept = frame[frame["latest"].astype(bool) & frame["comment"].notna()]
        for item_id, comment in zip(kept["item_id"], kept["comment"], strict=True):
            text = str(comment).strip()
            if text and text not in comments.setdefault(str(item_id), []):
                comments[str(item_id)].append(text)
    return ImproveInputs(items, human, {k: " / ".join(v) for k, v in comments.items() if v})


def _split(
    store: Store, dataset_id: int, criterion_id: int, inputs: ImproveInputs, settings: Any
) -> Split:
    """The saved split of this share and seed, or a new one (saved before anything is judged)."""
    name = split_name(settings.test_share, settings.split_seed)
    try:
        saved = store.get_split(dataset_id, criterion_id, name)
        return Split(saved.name, saved.seed, saved.test_share, saved.dev, saved.test)
    except NotFoundError:
        pass
    ids = list(inputs.human)
    split = make_split(
        ids,
        [inputs.human[i] for i in ids],
        test_share=settings.test_share,
        seed=settings.split_seed,
        name=name,
    )
    store.save_split(
        dataset_id,
        criterion_id,
        name,
        seed=split.seed,
        test_share=split.test_share,
        dev=split.dev,
        test=split.test,
    )
    return split


def estimate_optimization(
    store: Store,
    *,
    dataset_id: int,
    criterion_id: int,
    template_version_id: int,
    model: str,
    optimizer_model: str,
    settings: OptimizeSettings,
    manual_version_ids: Sequence[int] = (),
) -> ImproveEstimate:
    """Requests, tokens and cost an optimisation would need at most (cached replies of the start
    not counted). Raises :class:`~evalcore.improve.SplitTooSmallError` when the labels are too few."""
    inputs = improve_inputs(store, dataset_id, criterion_id)
    requests, tokens_in, tokens_out, cost = estimate_optimize(
        inputs.items,
        inputs.human,
        template_of(store, template_version_id),
        model=model,
        optimizer_model=optimizer_model,
        settings=settings,
        prices=store_prices(store),
        manual=[template_of(store, v) for v in manual_version_ids],
    )
    return ImproveEstimate(requests, tokens_in, tokens_out, cost, len(inputs.human))


def start_optimization(
    store: Store,
    *,
    dataset_id: int,
    criterion_id: int,
    template_version_id: int,
    endpoint_id: int,
    model: str,
    optimizer_endpoint_id: int,
    optimizer_model: str,
    settings: OptimizeSettings,
    author: str,
    manual_version_ids: Sequence[int] = (),
    worker: Any = None,
) -> int:
    """Register an optimisation and, with a ``worker`` (:class:`~evalcore.runs.RunWorker`), start it
    in the background; returns the job id (without a worker, call :func:`execute_optimization`).

    Needs ``manage`` on the dataset. Checked now, before anything is saved: the version is a judge
    template of the criterion, the endpoints exist and there are enough labels for a split.
    """
    store.authorize("manage", dataset_id=dataset_id)
    version = store.get_template_version(template_version_id)
    _check_version(store, version, criterion_id)
    template_of(store, template_version_id)  # a judge template, not a pipeline metric
    for v in manual_version_ids:
        template_of(store, v)
    store.get_endpoint(endpoint_id)
    store.get_endpoint(optimizer_endpoint_id)
    if not model or not optimizer_model:
        raise ConfigError("name the judge model and the optimiser model")
    inputs = improve_inputs(store, dataset_id, criterion_id)
    ids = list(inputs.human)
    # raises SplitTooSmallError (with the counts) before a job exists
    make_split(
        ids,
        [inputs.human[i] for i in ids],
        test_share=settings.test_share,
        seed=settings.split_seed,
    )
    job = store.create_improve_job(
        dataset_id,
        criterion_id,
        template_version_id,
        settings={
            "endpoint_id": endpoint_id,
            "model": model,
            "optimizer_endpoint_id": optimizer_endpoint_id,
            "optimizer_model": optimizer_model,
            "manual_version_ids": [int(v) for v in manual_version_ids],
            "optimize": dataclasses.asdict(settings),
        },
        author=author,
    )
    if worker is not None:
        worker.submit_improve(dataset_id, job.id)
    return job.id


def restart_optimization(
    store: Store, dataset_id: int, job_id: int, *, author: str, worker: Any = None
) -> int:
    """A new job with the settings of an earlier one (a cancelled one goes on from the cache)."""
    job = store.get_improve_job(dataset_id, job_id)
    s = job.settings
    return start_optimization(
        store,
        dataset_id=dataset_id,
        criterion_id=job.criterion_id,
        template_version_id=job.template_version_id,
        endpoint_id=int(s["endpoint_id"]),
        model=str(s["model"]),
        optimizer_endpoint_id=int(s["optimizer_endpoint_id"]),
        optimizer_model=str(s["optimizer_model"]),
        settings=job_settings(job),
        author=author,
        manual_version_ids=[int(v) for v in s.get("manual_version_ids") or ()],
        worker=worker,
    )


def job_settings(job: ImproveJobRecord) -> OptimizeSettings:
    """The optimisation settings a job was started with."""
    known = {f.name for f in dataclasses.fields(OptimizeSettings)}
    given = job.settings.get("optimize") or {}
    return OptimizeSettings(**{k: v for k, v in given.items() if k in known})


def _check_version(store: Store, version: TemplateVersionRecord, criterion_id: int) -> None:
    template = store.get_template(version.template_id)
    if template.criterion_id != criterion_id:
        criterion = store.get_criterion(template.criterion_id)
        raise ConfigError(
            f"template {template.name!r} judges {criterion.name!r}; choose a template of the "
            "criterion to improve"
        )


class _Progress:
    """Saves a job's progress at most every half second; a cancel request (seen in the status the
    save returns, or by the job's heartbeat) makes :meth:`should_stop` true."""

    def __init__(self, job: ImproveJob, stop: threading.Event) -> None:
        self.job = job
        self.stop = stop
        self.last: dict[str, Any] = {}
        self._saved_at = 0.0

    def __call__(self, p: ImproveProgress) -> None:
        new = {"phase": p.phase, "done": p.done, "total": p.total}
        phase_changed = new["phase"] != self.last.get("phase")
        self.last = {**new, "requests": p.requests, "cost": p.cost}
        if phase_changed or time.monotonic() - self._saved_at >= _SAVE_EVERY_S:
            self.save()

    def save(self, **extra: Any) -> None:
        self._saved_at = time.monotonic()
        if self.job.save_progress(self.last, **extra) == "cancelling":
            self.stop.set()

    def should_stop(self) -> bool:
        return self.stop.is_set()


def human_ceiling(
    store: Store,
    dataset_id: int,
    criterion_id: int,
    item_ids: Sequence[str],
    metric: str | None = None,
) -> HumanCeiling | None:
    """The annotators' agreement on ``item_ids`` (the test items), as the Calibrate page computes
    it (:func:`evalcore.report.human_ceiling`: Krippendorff's alpha and the mean pairwise kappa);
    ``None`` with fewer than two annotators. ``metric`` is not read (the ceiling does not depend
    on the headline metric; kept for the callers of the earlier signature)."""
    scale = store.get_criterion(criterion_id).scale
    matrix = store.annotation_matrix(dataset_id, criterion_id)
    matrix = matrix[matrix.index.astype(str).isin({str(i) for i in item_ids})]
    if matrix.shape[1] < 2 or matrix.empty:
        return None
    return calibrate_ceiling(matrix, scale)


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and value != value)


def _clients(
    store: Store,
    job: ImproveJobRecord,
    secrets: Mapping[str, Any] | None,
    client: Client | None,
) -> tuple[Client, Client]:
    if client is not None:
        return client, client
    allowed = key_policy(store)

    def one(endpoint_id: int) -> Client:
        record = store.get_endpoint(endpoint_id)
        return client_factory(endpoint_of(record, allowed), secrets=secrets)

    return one(int(job.settings["endpoint_id"])), one(int(job.settings["optimizer_endpoint_id"]))


def _optimize(
    store: Store,
    job: ImproveJobRecord,
    *,
    secrets: Mapping[str, Any] | None,
    client: Client | None,
    progress: Callable[[ImproveProgress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> OptimizeReport:
    """Run (or, from the cache, run again) the optimisation a job describes."""
    settings = job_settings(job)
    inputs = improve_inputs(store, job.dataset_id, job.criterion_id)
    split = _split(store, job.dataset_id, job.criterion_id, inputs, settings)
    judge_client, optimizer_client = _clients(store, job, secrets, client)
    return optimize(
        inputs.items,
        inputs.human,
        template_of(store, job.template_version_id),
        judge_client=judge_client,
        model=str(job.settings["model"]),
        optimizer_client=optimizer_client,
        optimizer_model=str(job.settings["optimizer_model"]),
        settings=settings,
        cache=StoreCache(store),
        split=split,
        manual=[template_of(store, v) for v in job.settings.get("manual_version_ids") or ()],
        progress=progress,
        should_stop=should_stop,
        comments=inputs.comments,
        prices=store_prices(store),
        annotations=store.annotation_matrix(job.dataset_id, job.criterion_id),
    )


def execute_optimization(
    store: Store,
    dataset_id: int,
    job_id: int,
    *,
    secrets: Mapping[str, Any] | None = None,
    client: Client | None = None,
    cancel_event: threading.Event | None = None,
    shutdown_event: threading.Event | None = None,
    owner: str | None = None,
    lease_s: float = RUN_LEASE_S,
) -> OptimizeReport | None:
    """Carry out a registered optimisation; ``None`` when it was over already, is held by another
    live worker, or failed.

    The job is held by a lease in ``owner``'s name (see :mod:`evalcore.runs._jobs`), renewed every
    second. ``client`` replaces both endpoints' clients (tests). The job ends ``done``,
    ``cancelled`` (asked to stop: its report keeps what was done, and a new job with the same
    settings goes on from the cache) or ``failed`` (the reason saved, never a key). Stopped by the
    server shutting down (``shutdown_event``), it stays ``running`` and gives its lease up: the next
    worker runs it again, answered from the cache. A job whose lease was taken over stops and
    changes nothing.
    """
    job = store.get_improve_job(dataset_id, job_id)
    if job.is_terminal:
        return None
    lease = ImproveJob(store, dataset_id, job_id, owner or process_owner("direct"), lease_s=lease_s)
    if not lease.claim():
        log.info("optimisation %s is carried out by another worker", job_id)
        return None
    job = store.get_improve_job(dataset_id, job_id)
    if job.status == "cancelling":
        lease.finish("cancelled")
        return None
    store.update_improve_job(dataset_id, job_id, status="running")
    stop = cancel_event or threading.Event()
    tracker = _Progress(lease, stop)
    error: str | None = None
    with LeaseKeeper(lease, stop) as keeper:
        try:
            report = _optimize(
                store,
                job,
                secrets=secrets,
                client=client,
                progress=tracker,
                should_stop=tracker.should_stop,
            )
        except EvalcoreError as exc:
            report, error = None, str(exc)
        except Exception as exc:  # an unexpected fault: recorded readably
            log.exception("optimisation %s stopped", job_id)
            report, error = None, f"{type(exc).__name__}: {exc}"
    if keeper.lost.is_set():
        log.warning("optimisation %s was taken over by another worker; this one stops", job_id)
        return report
    if report is None:
        lease.finish("failed", error=error)
        return None
    with _REPORTS_LOCK:
        _REPORTS[(str(store.url), job_id)] = report
    # the saved progress is the report's: every step ended (done == total) unless it was cancelled
    steps = {"done": report.steps}
    if report.stopped != "cancelled":
        steps["total"] = report.steps
    tracker.last = {**tracker.last, **steps, "requests": report.requests, "cost": report.cost}
    user_cancel = (
        keeper.cancel_requested.is_set()
        or store.get_improve_job(dataset_id, job_id).status == "cancelling"
    )
    if (
        report.stopped == "cancelled"
        and not user_cancel
        and shutdown_event is not None
        and shutdown_event.is_set()
    ):
        # the server is exiting: the job stays running, and the next worker goes on from the cache
        tracker.save(report=report.to_dict())
        lease.release()
        log.info("optimisation %s stopped with the server; it resumes on the next start", job_id)
        return report
    tracker.save()
    status = "cancelled" if report.stopped == "cancelled" else "done"
    lease.finish(status, report=report.to_dict())
    return report


def job_report(
    store: Store,
    dataset_id: int,
    job_id: int,
    *,
    secrets: Mapping[str, Any] | None = None,
    client: Client | None = None,
) -> OptimizeReport:
    """The report of a finished job as objects: kept by this process, else rebuilt by running the
    job's optimisation again, which the reply cache answers."""
    with _REPORTS_LOCK:
        kept = _REPORTS.get((str(store.url), job_id))
    if kept is not None:
        return kept
    job = store.get_improve_job(dataset_id, job_id)
    if job.status != "done":
        raise ConfigError(f"optimisation {job_id} is {job.status}: only a finished one is saved")
    report = _optimize(store, job, secrets=secrets, client=client)
    with _REPORTS_LOCK:
        _REPORTS[(str(store.url), job_id)] = report
    return report


def save_optimized_version(
    store: Store,
    dataset_id: int,
    job_id: int,
    candidate_id: str,
    *,
    author: str,
    secrets: Mapping[str, Any] | None = None,
    client: Client | None = None,
) -> TemplateVersionRecord:
    """Save a finalist of a finished job as a new version of the starting template.

    Only a finalist that beat the start on test (by the paired interval or the margin) is saved;
    anything else is a :class:`~evalcore.errors.ConfigError`. Needs ``manage`` on the dataset.
    """
    store.authorize("manage", dataset_id=dataset_id)
    job = store.get_improve_job(dataset_id, job_id)
    if job.status != "done":
        raise ConfigError(f"optimisation {job_id} is {job.status}: only a finished one is saved")
    report = job_report(store, dataset_id, job_id, secrets=secrets, client=client)
    finalist = next((f for f in report.finalists if f.candidate.id == candidate_id), None)
    if finalist is None or not finalist.beats_start:
        raise ConfigError(
            f"candidate {candidate_id!r} did not beat the starting version on test; "
            "only a candidate that did is saved"
        )
    template_id = store.get_template_version(job.template_version_id).template_id
    return save_candidate(store, template_id, finalist.candidate, report, author=author)
