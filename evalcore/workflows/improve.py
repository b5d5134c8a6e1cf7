"""Improving a judge template from the human labels: the Judge page's "Improve" workflow.

:func:`choices` and :func:`versions` say what can be improved (templates of criteria, not built-in
pipeline metrics); :data:`SETTINGS` declares the settings a person chooses, with their bounds and
defaults (:data:`evalcore.improve.OPTIMIZE_SETTINGS`). :func:`models` names the judge and optimiser
models a request would use, :func:`estimate` prices it, and the commands :func:`start`,
:func:`cancel`, :func:`restart` and :func:`save` are each one call (an optimisation runs in the
server's worker; its progress and report are read back with :func:`jobs` and :func:`job`, whose
:class:`Report` is the stored report read into typed fields).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import pandas as pd

from evalcore import runs
from evalcore.errors import ConfigError, EvalcoreError
from evalcore.improve import OPTIMIZE_SETTINGS, OptimizeSetting, OptimizeSettings
from evalcore.metrics import metric_def
from evalcore.store import CriterionRecord, EndpointRecord, ImproveJobRecord, TemplateVersionRecord
from evalcore.words import either, plural
from evalcore.workflows._session import Caller, Session, caller
from evalcore.workflows.judge import ask_admin, check_endpoint

__all__ = [
    "PHASES",
    "SETTINGS",
    "CandidateRow",
    "Choices",
    "Dropped",
    "EndpointRecord",
    "FinalistRow",
    "ImproveEstimate",
    "ImproveJobRecord",
    "ImproveRequest",
    "JobView",
    "Models",
    "OptimizeSetting",
    "Report",
    "VersionChoice",
    "cancel",
    "choices",
    "estimate",
    "job",
    "jobs",
    "models",
    "restart",
    "save",
    "start",
    "versions",
]

#: The settings a person chooses for an optimisation, in the order a form shows them (the
#: headline metric, the one setting that is a name, keeps its default: balanced accuracy).
SETTINGS: Final[tuple[OptimizeSetting, ...]] = tuple(
    s for s in OPTIMIZE_SETTINGS if s.kind is not str
)

#: What each phase of an optimisation is doing, for a progress line.
PHASES: Final[dict[str, str]] = {
    "start": "judging the starting version on dev",
    "fewshot": "few-shot candidates on dev",
    "rewrite": "instruction rewrites on dev",
    "manual": "hand-made candidates on dev",
    "test": "the finalists and the start on test",
}


@dataclass(frozen=True)
class Choices:
    """The criteria that have a judge template, and the endpoints an optimiser may run on."""

    criteria: tuple[CriterionRecord, ...]
    endpoints: tuple[EndpointRecord, ...]


def choices(session: Session, project_id: int) -> Choices:
    """What the Improve section offers in the project."""
    who = caller(session)
    criteria = tuple(
        c
        for c in who.store.list_criteria(project_id)
        if who.store.list_templates(project_id, criterion_id=c.id)
    )
    return Choices(criteria, tuple(who.store.list_endpoints()))


@dataclass(frozen=True)
class VersionChoice:
    """A judge-template version that can be improved (``label``: template name and number)."""

    id: int
    label: str


def versions(session: Session, project_id: int, criterion_id: int) -> tuple[VersionChoice, ...]:
    """The judge-template versions of the criterion's templates, newest first (built-in pipeline
    and template metrics are left out: copy one to improve it)."""
    who = caller(session)
    found: list[VersionChoice] = []
    for template in who.store.list_templates(project_id, criterion_id=criterion_id):
        for v in reversed(who.store.list_template_versions(template.id)):
            if runs.metric_of(v.parsed) is None:
                found.append(VersionChoice(v.id, f"{template.name} v{v.number}"))
    return tuple(found)


@dataclass(frozen=True)
class ImproveRequest:
    """An optimisation as the page asks for it: a starting version of a criterion's template on
    a dataset's labels, the judge's endpoint and typed model (empty: the version's own, else the
    endpoint's default), the optimiser's (empty model: the judge's), the values of
    :data:`SETTINGS` by name, and hand-edited versions to compare."""

    dataset_id: int
    criterion_id: int
    version_id: int
    endpoint_id: int | None
    model: str = ""
    optimizer_endpoint_id: int | None = None
    optimizer_model: str = ""
    values: Mapping[str, Any] = field(default_factory=dict)
    manual: tuple[int, ...] = ()

    def settings(self) -> OptimizeSettings:
        """The optimisation's settings (each value checked against :data:`SETTINGS`)."""
        return OptimizeSettings.from_values(self.values)


@dataclass(frozen=True)
class Models:
    """The judge and optimiser models an optimisation would use."""

    judge: str
    optimizer: str


def _models(who: Caller, request: ImproveRequest) -> Models:
    version = who.store.get_template_version(request.version_id)
    endpoint = None if request.endpoint_id is None else who.store.get_endpoint(request.endpoint_id)
    judge = runs.resolve_model(version.parsed, request.model.strip() or None, endpoint) or ""
    return Models(judge, request.optimizer_model.strip() or judge)


def models(session: Session, request: ImproveRequest) -> Models:
    """The models ``request`` would use (a :class:`~evalcore.errors.ConfigError` when the
    version, the typed model and the endpoint name none)."""
    return _models(caller(session), request)


@dataclass(frozen=True)
class ImproveEstimate:
    """At most what an optimisation would cost, on how many labelled items, and a note on the
    cost when a model has no price."""

    requests: int
    tokens_in: int
    tokens_out: int
    cost: float | None
    labelled: int
    note: str | None = None


def estimate(session: Session, request: ImproveRequest) -> ImproveEstimate:
    """An upper estimate of the optimisation (cached replies of the start are not counted)."""
    who = caller(session)
    chosen = _models(who, request)
    found = runs.estimate_optimization(
        who.store,
        dataset_id=request.dataset_id,
        criterion_id=request.criterion_id,
        template_version_id=request.version_id,
        model=chosen.judge,
        optimizer_model=chosen.optimizer,
        settings=request.settings(),
        manual_version_ids=request.manual,
    )
    note = None
    if found.cost is None:
        ask = (
            "add one on the Settings page"
            if who.actor.is_admin
            else ask_admin(
                who,
                who.store.get_dataset(request.dataset_id).project_id,
                f"add prices for {either(sorted({chosen.judge, chosen.optimizer}), 'and')}",
            )
        )
        note = f"A model has no price, so the cost is unknown and a budget cannot cap it: {ask}."
    return ImproveEstimate(
        found.requests, found.tokens_in, found.tokens_out, found.cost, found.labelled, note
    )


def _check_endpoints(who: Caller, dataset_id: int, endpoint_ids: Sequence[int]) -> None:
    """Refuse an optimisation whose judge or optimiser endpoint cannot authenticate (it runs in
    this server's worker, with this server's keys), with the reason a try gives."""
    who.store.authorize("manage", dataset_id=dataset_id)
    project_id = who.store.get_dataset(dataset_id).project_id
    for endpoint_id in dict.fromkeys(endpoint_ids):
        check_endpoint(who, project_id, who.store.get_endpoint(endpoint_id))


def start(session: Session, request: ImproveRequest) -> int:
    """Check and save the optimisation, and hand it to the server's worker; its job id. Refused
    before anything is saved when an endpoint cannot authenticate."""
    who = caller(session)
    if request.endpoint_id is None:
        raise ConfigError("choose an endpoint for the judge")
    if request.optimizer_endpoint_id is None:
        raise ConfigError("choose an endpoint for the optimiser")
    _check_endpoints(who, request.dataset_id, [request.endpoint_id, request.optimizer_endpoint_id])
    chosen = _models(who, request)
    return runs.start_optimization(
        who.store,
        dataset_id=request.dataset_id,
        criterion_id=request.criterion_id,
        template_version_id=request.version_id,
        endpoint_id=request.endpoint_id,
        model=chosen.judge,
        optimizer_endpoint_id=request.optimizer_endpoint_id,
        optimizer_model=chosen.optimizer,
        settings=request.settings(),
        author=who.name,
        manual_version_ids=request.manual,
        worker=who.server.worker,
    )


def jobs(session: Session, dataset_id: int) -> tuple[ImproveJobRecord, ...]:
    """The dataset's optimisations, newest first."""
    return tuple(caller(session).store.list_improve_jobs(dataset_id))


# --- a job and its report -----------------------------------------------------------------------------


def _pair(value: Any) -> tuple[float, float] | None:
    if isinstance(value, Sequence) and len(value) == 2 and all(v is not None for v in value):
        return float(value[0]), float(value[1])
    return None


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _interval(pair: tuple[float, float] | None) -> str:
    return "–" if pair is None else f"[{pair[0]:.3f}, {pair[1]:.3f}]"


@dataclass(frozen=True)
class CandidateRow:
    """A candidate (the start first) on dev: the headline metric with its 95% interval."""

    id: str
    kind: str
    dev: float | None
    interval: tuple[float, float] | None
    examples: int
    coverage: float | None
    requests: int | None
    note: str


@dataclass(frozen=True)
class FinalistRow:
    """A finalist (the start first) on test, and its paired difference from the start."""

    id: str
    kind: str
    test: float | None
    interval: tuple[float, float] | None
    difference: float | None
    difference_interval: tuple[float, float] | None
    mcnemar_p: float | None
    beats_start: bool


@dataclass(frozen=True)
class Dropped:
    """A candidate planned and not judged (or judged and not ranked), and why."""

    kind: str
    name: str
    reason: str
    steps: int


@dataclass(frozen=True)
class Report:
    """An optimisation's report, read from the job's stored JSON. ``dropped`` lists every
    candidate planned and not judged or not ranked, with its reason; ``planned_steps`` and
    ``steps`` are the progress steps planned and run (a report written before they were kept
    has neither: 0)."""

    split: str
    n_dev: int
    n_test: int
    requests: int
    cost: float | None
    metric: str
    metric_name: str
    stopped: str | None
    ceiling: float | None
    candidates: tuple[CandidateRow, ...]
    finalists: tuple[FinalistRow, ...]
    dropped: tuple[Dropped, ...] = ()
    planned_steps: int = 0
    steps: int = 0

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Report:
        split = data.get("split") or {}
        key = str(data.get("metric") or "")
        try:
            name = metric_def(key).name
        except EvalcoreError:
            name = key
        candidates = tuple(
            CandidateRow(
                id=str(c.get("id", "")),
                kind=str(c.get("kind", "")),
                dev=_number((c.get("dev") or {}).get(key)),
                interval=_pair(c.get("dev_interval")),
                examples=len(c.get("examples") or []),
                coverage=_number(c.get("coverage")),
                requests=None if c.get("requests") is None else int(c["requests"]),
                note=str(c.get("note") or ""),
            )
            for c in [data.get("start"), *(data.get("candidates") or [])]
            if c
        )
        finalists = tuple(
            FinalistRow(
                id=str(f.get("id", "")),
                kind=str(f.get("kind", "")),
                test=_number(f.get("test")),
                interval=_pair(f.get("test_interval")),
                difference=_number(f.get("difference")),
                difference_interval=_pair(f.get("difference_interval")),
                mcnemar_p=_number(f.get("mcnemar_p")),
                beats_start=bool(f.get("beats_start")),
            )
            for f in [data.get("start_test"), *(data.get("finalists") or [])]
            if f
        )
        dropped = tuple(
            Dropped(
                str(d.get("kind", "")),
                str(d.get("name", "")),
                str(d.get("reason", "")),
                int(d.get("steps") or 0),
            )
            for d in data.get("dropped") or []
        )
        steps = data.get("steps") or {}
        return cls(
            split=str(split.get("name", "")),
            n_dev=len(split.get("dev") or []),
            n_test=len(split.get("test") or []),
            requests=int(data.get("requests") or 0),
            cost=_number(data.get("cost")),
            metric=key,
            metric_name=name,
            stopped=data.get("stopped"),
            ceiling=_number(data.get("ceiling")),
            candidates=candidates,
            finalists=finalists,
            dropped=dropped,
            planned_steps=int(steps.get("planned") or 0),
            steps=int(steps.get("done") or 0),
        )

    @property
    def stopped_text(self) -> str | None:
        """What an early stop means for the figures."""
        if self.stopped == "budget":
            return "Stopped at the budget: the comparison covers what was done before it."
        if self.stopped == "cancelled":
            return "Cancelled: the comparison covers what was done before the cancel."
        return None

    @property
    def steps_text(self) -> str | None:
        """How many planned steps ran, and where the others went (``None``: all ran)."""
        if not self.dropped:
            return None
        left = self.planned_steps - self.steps
        return (
            f"{self.steps} of the {self.planned_steps} planned steps ran"
            + (f"; {left} were dropped" if left > 0 else "")
            + f". {plural(len(self.dropped), 'candidate')} planned were not judged or not "
            "ranked; each is listed with why."
        )

    def dropped_table(self) -> pd.DataFrame:
        """The candidates dropped, with their reasons."""
        return pd.DataFrame(
            [{"candidate": d.name, "kind": d.kind, "why": d.reason} for d in self.dropped],
            columns=["candidate", "kind", "why"],
        )

    @property
    def winners(self) -> tuple[str, ...]:
        """The finalists (not the start) that beat the start on test."""
        return tuple(f.id for f in self.finalists if f.beats_start and f.kind != "start")

    def candidate_table(self) -> pd.DataFrame:
        """The candidates on dev, as a table."""
        return pd.DataFrame(
            [
                {
                    "candidate": c.id,
                    "kind": c.kind,
                    f"{self.metric_name} (dev)": c.dev,
                    "95% interval": _interval(c.interval),
                    "examples": c.examples,
                    "coverage": c.coverage,
                    "requests": c.requests,
                    "note": c.note,
                }
                for c in self.candidates
            ]
        )

    def test_table(self) -> pd.DataFrame:
        """The start and the finalists on test, against the start."""
        return pd.DataFrame(
            [
                {
                    "candidate": f.id,
                    "kind": f.kind,
                    f"{self.metric_name} (test)": f.test,
                    "95% interval": _interval(f.interval),
                    "difference": f.difference,
                    "difference interval": _interval(f.difference_interval),
                    "McNemar p": f.mcnemar_p,
                    "beats start": f.beats_start,
                }
                for f in self.finalists
            ]
        )


@dataclass(frozen=True)
class JobView:
    """An optimisation as its panel shows it: progress, what may be done now, the report."""

    record: ImproveJobRecord
    phase: str
    done: int
    total: int
    requests: int
    cost: float | None
    report: Report | None

    @property
    def id(self) -> int:
        return self.record.id

    @property
    def fraction(self) -> float:
        if self.record.status == "done":
            return 1.0
        return min(1.0, self.done / self.total) if self.total else 0.0

    @property
    def line(self) -> str:
        status = self.record.status
        return status if self.record.is_terminal else f"{self.phase} · {status}"

    @property
    def can_cancel(self) -> bool:
        return not self.record.is_terminal and self.record.status != "cancelling"

    @property
    def stopping(self) -> bool:
        return self.record.status == "cancelling"

    @property
    def can_restart(self) -> bool:
        return self.record.status in ("cancelled", "failed")

    @property
    def saveable(self) -> tuple[str, ...]:
        """The candidates that may be saved as a new version: winners of a finished job."""
        if self.record.status != "done" or self.report is None:
            return ()
        return self.report.winners

    def label(self) -> str:
        # no status here: a picker's labels are not redrawn while a job's progress is polled
        r = self.record
        return f"#{r.id} · {r.created_at:%Y-%m-%d %H:%M} · {r.author}"


def job(session: Session, dataset_id: int, job_id: int) -> JobView:
    """One optimisation of the dataset, read from the store."""
    record = caller(session).store.get_improve_job(dataset_id, job_id)
    p = record.progress
    phase = p.get("phase")
    return JobView(
        record,
        PHASES.get(str(phase), str(phase or "waiting to start")),
        int(p.get("done") or 0),
        int(p.get("total") or 0),
        int(p.get("requests") or 0),
        _number(p.get("cost")),
        None if record.report is None else Report.from_json(record.report),
    )


def cancel(session: Session, dataset_id: int, job_id: int) -> None:
    """Ask an optimisation to stop; its report keeps what was done."""
    who = caller(session)
    who.store.request_improve_cancel(dataset_id, job_id)
    who.server.worker.cancel_improve(dataset_id, job_id)


def restart(session: Session, dataset_id: int, job_id: int) -> int:
    """A new optimisation with the settings of an ended one (what was done comes from the reply
    cache); its job id."""
    who = caller(session)
    who.store.authorize("manage", dataset_id=dataset_id)
    s = who.store.get_improve_job(dataset_id, job_id).settings
    _check_endpoints(who, dataset_id, [int(s["endpoint_id"]), int(s["optimizer_endpoint_id"])])
    return runs.restart_optimization(
        who.store, dataset_id, job_id, author=who.name, worker=who.server.worker
    )


def save(
    session: Session, dataset_id: int, job_id: int, candidate_id: str
) -> TemplateVersionRecord:
    """Save a finalist that beat the start on test as a new version of the starting template."""
    who = caller(session)
    return runs.save_optimized_version(
        who.store, dataset_id, job_id, candidate_id, author=who.name, secrets=who.server.secrets
    )
