"""What the store hands out: plain frozen dataclasses, never ORM rows.

A record is a snapshot: it does not change when the database does, holds no session and can be cached,
pickled or sent to another thread. Identifiers named ``id`` / ``*_id`` of type ``int`` are database
keys; ``external_id`` is the item id of the uploaded file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias, TypeVar

from evalcore.errors import StoreError
from evalcore.labels import Scale

__all__ = [
    "ANNOTATION_FLAGS",
    "BUILTIN_KEY",
    "DEFAULT_THRESHOLDS",
    "RUN_STATUSES",
    "TERMINAL_RUN_STATUSES",
    "AnnotationFlag",
    "AnnotationRecord",
    "AnnotationSource",
    "AnnotationTask",
    "AnnotatorRecord",
    "CriterionRecord",
    "DatasetKind",
    "DatasetRecord",
    "EndpointKind",
    "EndpointRecord",
    "ImportSummary",
    "ItemRecord",
    "JudgeResultInput",
    "JudgeRunRecord",
    "MembershipRecord",
    "MetricVersionContent",
    "ModelPriceRecord",
    "OrderMode",
    "PresentationOrder",
    "ProjectAdmins",
    "ProjectRecord",
    "QueueStatus",
    "ResultStatus",
    "RunProgress",
    "RunSource",
    "RunStatus",
    "SignInLockRecord",
    "TemplateRecord",
    "TemplateVersionContent",
    "TemplateVersionRecord",
    "UserRecord",
    "VersionContent",
    "parse_version_content",
    "record_from_row",
]

R = TypeVar("R")


def record_from_row(record: type[R], row: object, **converted: Any) -> R:
    """A ``record`` dataclass filled from the ORM ``row`` attribute of the same name as each field;
    ``converted`` gives the values that need more than a copy (JSON columns as plain dicts).

    >>> from types import SimpleNamespace
    >>> row = SimpleNamespace(model="m", input_per_mtok=1.0, output_per_mtok=2.0, updated_at=None)
    >>> record_from_row(ModelPriceRecord, row).output_per_mtok
    2.0
    """
    names = [f.name for f in fields(record) if f.init and f.name not in converted]  # type: ignore[arg-type]
    return record(**{name: getattr(row, name) for name in names}, **converted)


DatasetKind: TypeAlias = Literal["pointwise", "pairwise"]
AnnotationFlag: TypeAlias = Literal["skip", "unsure", "broken"]
AnnotationSource: TypeAlias = Literal["ui", "import"]
EndpointKind: TypeAlias = Literal["openai", "azure"]
OrderMode: TypeAlias = Literal["single", "both", "flip"]
PresentationOrder: TypeAlias = Literal["AB", "BA"]
ResultStatus: TypeAlias = Literal["ok", "unparsed", "failed"]
RunSource: TypeAlias = Literal["run", "import", "jury"]
RunStatus: TypeAlias = Literal[
    "pending", "running", "cancelling", "cancelled", "done", "failed", "interrupted"
]

ANNOTATION_FLAGS: tuple[str, ...] = ("skip", "unsure", "broken")
RUN_STATUSES: tuple[str, ...] = (
    "pending",
    "running",
    "cancelling",
    "cancelled",
    "done",
    "failed",
    "interrupted",
)
#: A run in one of these states has stopped for good (``finished_at`` is set on entering it).
TERMINAL_RUN_STATUSES: frozenset[str] = frozenset({"cancelled", "done", "failed", "interrupted"})

#: Thresholds a judge must reach to be called trustworthy, unless a project says otherwise.
DEFAULT_THRESHOLDS: dict[str, float] = {"balanced_accuracy": 0.8, "cohen_kappa": 0.6}


# --- projects, datasets, criteria, annotators --------------------------------------------------


@dataclass(frozen=True)
class ProjectRecord:
    """A project. ``settings`` always holds ``annotators_per_item`` and ``thresholds``."""

    id: int
    name: str
    description: str
    settings: dict[str, Any]
    created_at: datetime

    @property
    def annotators_per_item(self) -> int:
        """How many annotators should label each item (the queue stops assigning beyond it)."""
        return int(self.settings["annotators_per_item"])

    @property
    def thresholds(self) -> dict[str, float]:
        """Metric name → the value a judge must reach, e.g. ``{"cohen_kappa": 0.6}``."""
        return dict(self.settings["thresholds"])


@dataclass(frozen=True)
class DatasetRecord:
    """One immutable version of a named dataset."""

    id: int
    project_id: int
    name: str
    version: int
    kind: DatasetKind
    source_filename: str | None
    layout: str | None
    metadata_columns: tuple[str, ...]
    n_items: int
    created_at: datetime
    #: What each column of the file held, ``(column, role)`` in file order (empty for a dataset
    #: saved before roles were kept): see :data:`evalcore.data.ROLES`.
    column_roles: tuple[tuple[str, str], ...] = ()

    @property
    def item_fields(self) -> tuple[str, ...]:
        """The extra columns that are item fields: the judge's template variables and what the
        annotators see, besides prompt, response, context and reference. Without stored roles,
        every extra column (the old rule)."""
        if not self.column_roles:
            return self.metadata_columns
        return tuple(c for c, role in self.column_roles if role == "item_field")

    @property
    def label_columns(self) -> tuple[str, ...]:
        """The file's columns of labels, judges' labels and judges' reasons (never item fields)."""
        return tuple(c for c, role in self.column_roles if role in ("human", "judge", "reason"))


@dataclass(frozen=True)
class ItemRecord:
    """One item of a dataset; text fields are ``None`` when the file had no value."""

    id: int
    dataset_id: int
    external_id: str
    position: int
    prompt: str | None
    response: str | None
    context: str | None
    reference: str | None
    response_a: str | None
    response_b: str | None
    metadata: dict[str, Any]


@dataclass(frozen=True)
class CriterionRecord:
    """What is judged, on which scale, with the rubric annotators read."""

    id: int
    project_id: int
    name: str
    kind: DatasetKind
    scale: Scale
    rubric: str
    created_at: datetime


@dataclass(frozen=True)
class AnnotatorRecord:
    id: int
    name: str
    created_at: datetime


# --- annotation ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnnotationRecord:
    """One revision of one annotator's judgement of one item on one criterion.

    ``label`` is the canonical label text (:func:`evalcore.labels.format_label` of the scale's label),
    ``None`` for a skip; ``flag`` is ``"skip"``, ``"unsure"``, ``"broken"`` or ``None``.
    """

    id: int
    item_id: int
    criterion_id: int
    annotator_id: int
    annotator: str
    revision: int
    label: str | None
    flag: AnnotationFlag | None
    comment: str | None
    time_spent_s: float | None
    display_swapped: bool
    source: AnnotationSource
    created_at: datetime


@dataclass(frozen=True)
class QueueStatus:
    """Where one annotator stands in their queue for (dataset, criterion).

    ``total`` counts every position the annotator has been given (claims come in batches, so it
    grows); ``done`` the items whose latest annotation carries a label; ``skipped`` those whose latest
    annotation is a skip or a flag without a label; ``released`` the claims given back to the pool
    unanswered (signed out, another queue, or taken over after the lease). ``next_position`` is the
    first item never touched, else the first skipped one, else ``None``. ``team_left`` is how many
    items of the dataset still have fewer labels than the project's annotators per item (whoever
    holds them), or ``None`` when it was not counted.
    """

    dataset_id: int
    criterion_id: int
    annotator: str
    total: int
    done: int
    skipped: int
    next_position: int | None
    released: int = 0
    team_left: int | None = None

    @property
    def remaining(self) -> int:
        """Items the annotator holds with no annotation at all."""
        return self.total - self.done - self.skipped - self.released

    @property
    def finished(self) -> bool:
        """True when every item the annotator holds has a label."""
        return self.done >= self.total - self.released


@dataclass(frozen=True)
class AnnotationTask:
    """Everything the Annotate page may show for one queue position, and nothing more.

    The blind rule: no judge output and no other annotator's label is ever part of a task. The
    ``label``/``flag``/``comment``/``revision`` fields are this annotator's own latest annotation
    (``revision`` 0 when there is none; submit with ``base_revision=task.revision``). When
    ``swapped`` is true a pairwise item is shown with ``response_b`` on the left.
    """

    item_id: int
    external_id: str
    dataset_id: int
    criterion_id: int
    position: int
    swapped: bool
    prompt: str | None
    response: str | None
    context: str | None
    reference: str | None
    response_a: str | None
    response_b: str | None
    metadata: dict[str, Any]
    label: str | None
    flag: AnnotationFlag | None
    comment: str | None
    revision: int


@dataclass(frozen=True)
class ImportSummary:
    """What :meth:`Store.import_labels` wrote."""

    rows: int
    imported: int
    missing: int
    annotators: tuple[str, ...]


# --- judge side -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TemplateRecord:
    id: int
    project_id: int
    name: str
    criterion_id: int
    created_at: datetime


#: The content key naming the registered metric a stored version records (the database format).
BUILTIN_KEY = "builtin"


@dataclass(frozen=True)
class TemplateVersionContent:
    """A version that is a judge template of the project: ``template`` is its content
    (:meth:`evalcore.judge.JudgeTemplate.content_dict`)."""

    template: Mapping[str, Any]
    kind: Literal["template"] = "template"

    def to_dict(self) -> dict[str, Any]:
        """The stored JSON."""
        return dict(self.template)


@dataclass(frozen=True)
class MetricVersionContent:
    """A version that records a registered metric as configured: ``name`` is the metric,
    ``settings`` everything else the version fixes (its threshold; a template metric's template
    content, an edited copy included; a pipeline's parameters, step prompts and model settings).

    >>> content = parse_version_content({"builtin": "f1_score", "kind": "function", "threshold": 0.5})
    >>> content.name, content.threshold, content.to_dict()["builtin"]
    ('f1_score', 0.5, 'f1_score')
    """

    name: str
    settings: Mapping[str, Any]
    kind: Literal["metric"] = "metric"

    @property
    def threshold(self) -> Any:
        """The pass threshold stored with the version (``None`` when it keeps the metric's own)."""
        return self.settings.get("threshold")

    def to_dict(self) -> dict[str, Any]:
        """The stored JSON: the settings with the metric's name under :data:`BUILTIN_KEY`."""
        return {**self.settings, BUILTIN_KEY: self.name}


#: A stored version's content, parsed: a judge template, or a registered metric.
VersionContent: TypeAlias = TemplateVersionContent | MetricVersionContent


def parse_version_content(data: Mapping[str, Any]) -> VersionContent:
    """Read a version's stored JSON into its typed record (the one place that knows the tag).

    >>> parse_version_content({"name": "t", "user": "Rate {{ response }}"}).kind
    'template'
    """
    name = data.get(BUILTIN_KEY)
    if name is None:
        return TemplateVersionContent({k: v for k, v in data.items() if k != BUILTIN_KEY})
    if not isinstance(name, str) or not name.strip():
        raise StoreError(f"A stored version names its metric with text, not {name!r}.")
    return MetricVersionContent(name, {k: v for k, v in data.items() if k != BUILTIN_KEY})


@dataclass(frozen=True)
class TemplateVersionRecord:
    """An immutable, content-hashed version of a judge template.

    ``content`` is the stored JSON, ``parsed`` the same content as a typed record (a judge template
    or a registered metric), read once when the store hands the version out.
    """

    id: int
    template_id: int
    number: int
    content_hash: str
    content: dict[str, Any]
    author: str
    note: str | None
    created_at: datetime
    parsed: VersionContent = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "parsed", parse_version_content(self.content))


@dataclass(frozen=True)
class EndpointRecord:
    """An OpenAI-compatible endpoint. ``api_key_env`` is the NAME of the variable holding the key."""

    id: int
    name: str
    kind: EndpointKind
    base_url: str | None
    api_key_env: str | None
    api_version: str | None
    default_model: str | None
    extra: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True)
class ModelPriceRecord:
    """US dollars per million input and output tokens."""

    model: str
    input_per_mtok: float
    output_per_mtok: float
    updated_at: datetime

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        """The price of one call."""
        return (tokens_in * self.input_per_mtok + tokens_out * self.output_per_mtok) / 1_000_000


@dataclass(frozen=True)
class JudgeRunRecord:
    id: int
    project_id: int
    dataset_id: int
    criterion_id: int
    template_version_id: int | None
    name: str
    model: str | None
    endpoint_id: int | None
    settings: dict[str, Any]
    order_mode: OrderMode
    seed: int | None
    status: RunStatus
    n_planned: int
    source: RunSource
    error: str | None
    heartbeat_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    created_at: datetime
    #: the worker carrying the run out and until when it holds it (see evalcore.store._leases)
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None

    @property
    def is_terminal(self) -> bool:
        """True once the run has stopped for good."""
        return self.status in TERMINAL_RUN_STATUSES


@dataclass(frozen=True)
class JudgeResultInput:
    """One judge outcome to record (see :meth:`Store.record_results`).

    ``item_id`` is the database id of the item (``items_frame(...).index``).
    """

    item_id: int
    status: ResultStatus
    order: PresentationOrder = "AB"
    label: str | None = None
    score: float | None = None
    reason: str | None = None
    raw: str | None = None
    error: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost: float | None = None
    latency_s: float | None = None
    attempts: int = 1
    cache_key: str | None = None
    cached: bool = False
    samples: list[Any] | None = None
    details: dict[str, Any] | None = field(default=None)
    #: label (as given, read on the scale) → probability; every value in [0, 1]
    probabilities: Mapping[Any, float] | None = None
    #: the probability of ``label``, in [0, 1]
    confidence: float | None = None


@dataclass(frozen=True)
class RunProgress:
    """Aggregates over the results of one run (computed in SQL)."""

    run_id: int
    planned: int
    ok: int
    unparsed: int
    failed: int
    tokens_in: int
    tokens_out: int
    cost: float
    first_at: datetime | None
    last_at: datetime | None

    @property
    def finished(self) -> int:
        """Results recorded so far, whatever their status."""
        return self.ok + self.unparsed + self.failed

    @property
    def fraction(self) -> float:
        """Share of the planned results recorded, 0.0-1.0 (1.0 for an empty plan)."""
        return 1.0 if self.planned <= 0 else min(1.0, self.finished / self.planned)


@dataclass(frozen=True)
class MembershipRecord:
    """A user's role in one project."""

    project_id: int
    project_name: str
    user_id: int
    user_name: str
    role: str


@dataclass(frozen=True)
class ProjectAdmins:
    """The names to ask for what only an admin may do: the server's admins and the project's."""

    server: tuple[str, ...]
    project: tuple[str, ...] = ()


@dataclass(frozen=True)
class UserRecord:
    """An account. ``role`` is the user's role in every project they belong to (``"admin"``: the
    whole server); ``memberships`` are those projects. The password hash never leaves the store."""

    id: int
    name: str
    role: str
    email: str | None
    source: str
    disabled: bool
    has_password: bool
    locked_until: datetime | None
    last_sign_in_at: datetime | None
    created_at: datetime
    memberships: tuple[MembershipRecord, ...] = ()
    #: the single sign-on identity (issuer, subject) the account is linked to, if any
    oidc_issuer: str | None = None
    oidc_subject: str | None = None

    def is_locked(self, now: datetime | None = None) -> bool:
        """Whether failed sign-ins from many addresses keep the name guarded at ``now`` (default:
        the current time): only addresses it signed in from before may try it then. A lock of
        one address is not an account lock (see ``Store.sign_in_locks``)."""
        if self.locked_until is None:
            return False
        return self.locked_until > (now or datetime.now(UTC))


@dataclass(frozen=True)
class SignInLockRecord:
    """A sign-in limit that refuses attempts now: ``scope`` ``"pair"`` (``account`` from
    ``client``), ``"client"`` (every name from ``client``) or ``"account"`` (``account`` from
    addresses it was not used from before); the ``attempts`` that filled it and how many it has
    ``refused`` since ``locked_at``, until ``locked_until``."""

    scope: str
    account: str | None
    client: str | None
    attempts: int
    refused: int
    locked_at: datetime | None
    locked_until: datetime | None
