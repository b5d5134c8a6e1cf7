"""The database schema as SQLAlchemy 2 declarative models.

These rows never leave :mod:`evalcore.store`: the repository turns them into the frozen dataclasses of
:mod:`evalcore.store._records`. Every change to this file needs an Alembic revision in
``migrations/versions``; ``tests/store/test_store_migrations.py`` fails when the two disagree.

Every table has a ``created_at`` in UTC. Timestamps are stored as UTC and always come back as aware
``datetime`` objects, on SQLite as on PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    """The current time, aware, in UTC."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp stored in UTC that always reads back as an aware UTC ``datetime``.

    SQLite has no time zones: the value is stored as naive UTC text. PostgreSQL stores
    ``timestamp with time zone``. A naive value given to the database is taken to be UTC already.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def table_of(model: type[Base]) -> Table:
    """The Core table of a model, for bulk statements."""
    return cast(Table, model.__table__)


def _created_at() -> Mapped[datetime]:
    return mapped_column(UTCDateTime, default=utcnow, nullable=False)


# --- 0001 core schema -------------------------------------------------------------------------


class Project(Base):
    __tablename__ = "projects"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = _created_at()


class Dataset(Base):
    __tablename__ = "datasets"
    __table_args__ = (
        UniqueConstraint("project_id", "name", "version"),
        CheckConstraint("kind IN ('pointwise', 'pairwise')", name="kind"),
        CheckConstraint("version >= 1", name="version"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    version: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16))
    source_filename: Mapped[str | None] = mapped_column(String(500))
    layout: Mapped[str | None] = mapped_column(String(50))
    metadata_columns: Mapped[list[Any]] = mapped_column(JSON, default=list)
    # column → role, as the file was imported (None: saved before roles were kept; every extra
    # column is then an item field)
    column_roles: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    n_items: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = _created_at()


class Item(Base):
    __tablename__ = "items"
    __table_args__ = (
        UniqueConstraint("dataset_id", "external_id"),
        # Unique as well as the index that serves "the dataset in row order".
        UniqueConstraint("dataset_id", "position"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    external_id: Mapped[str] = mapped_column(String(500))
    position: Mapped[int] = mapped_column(Integer)
    prompt: Mapped[str | None] = mapped_column(Text)
    response: Mapped[str | None] = mapped_column(Text)
    context: Mapped[str | None] = mapped_column(Text)
    reference: Mapped[str | None] = mapped_column(Text)
    response_a: Mapped[str | None] = mapped_column(Text)
    response_b: Mapped[str | None] = mapped_column(Text)
    # "metadata" is reserved on declarative classes; the column keeps the plain name.
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    created_at: Mapped[datetime] = _created_at()


class Criterion(Base):
    __tablename__ = "criteria"
    __table_args__ = (
        UniqueConstraint("project_id", "name"),
        CheckConstraint("kind IN ('pointwise', 'pairwise')", name="kind"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(16))
    scale: Mapped[dict[str, Any]] = mapped_column(JSON)
    rubric: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = _created_at()


class Annotator(Base):
    __tablename__ = "annotators"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = _created_at()


class Assignment(Base):
    __tablename__ = "assignments"
    __table_args__ = (
        UniqueConstraint("annotator_id", "item_id", "criterion_id"),
        # The queue of one annotator for (dataset, criterion), in order: also the index that serves it.
        UniqueConstraint("annotator_id", "dataset_id", "criterion_id", "position"),
        # How many annotators an item already has (ensure_queue honours annotators_per_item).
        Index(None, "dataset_id", "criterion_id", "item_id"),
        # Progress and resume: counts by state, the first open position - index-only look-ups.
        Index(
            "ix_assignments_queue_state",
            "annotator_id",
            "dataset_id",
            "criterion_id",
            "state",
            "position",
        ),
        CheckConstraint("state IN ('open', 'labelled', 'skipped', 'released')", name="state"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    criterion_id: Mapped[int] = mapped_column(ForeignKey("criteria.id", ondelete="CASCADE"))
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"))
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    swapped: Mapped[bool] = mapped_column(Boolean, default=False)
    # This annotator's progress on the item, kept in step with ``annotations`` by every write there:
    # "open" (never answered), "labelled" (latest revision has a label), "skipped" (it has none),
    # "released" (given back to the pool unanswered, 0004: the row keeps the position).
    state: Mapped[str] = mapped_column(String(16), default="open")
    created_at: Mapped[datetime] = _created_at()
    # The claim's lease: when it was made, or renewed by the annotator's latest submit in the queue.
    claimed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)


class Annotation(Base):
    """One revision of one annotator's judgement of one item on one criterion; never updated."""

    __tablename__ = "annotations"
    __table_args__ = (
        # What makes a submit idempotent: one row per revision.
        UniqueConstraint("annotator_id", "item_id", "criterion_id", "revision"),
        # The labels of a criterion item by item (annotation matrix, exports).
        Index(None, "criterion_id", "item_id"),
        CheckConstraint("revision >= 1", name="revision"),
        CheckConstraint("flag IS NULL OR flag IN ('skip', 'unsure', 'broken')", name="flag"),
        CheckConstraint("source IN ('ui', 'import')", name="source"),
        CheckConstraint("label IS NOT NULL OR flag IS NOT NULL", name="label_or_flag"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"))
    criterion_id: Mapped[int] = mapped_column(ForeignKey("criteria.id", ondelete="CASCADE"))
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"))
    revision: Mapped[int] = mapped_column(Integer)
    label: Mapped[str | None] = mapped_column(String(200))
    flag: Mapped[str | None] = mapped_column(String(16))
    comment: Mapped[str | None] = mapped_column(Text)
    time_spent_s: Mapped[float | None] = mapped_column(Float)
    display_swapped: Mapped[bool] = mapped_column(Boolean, default=False)
    source: Mapped[str] = mapped_column(String(16), default="ui")
    created_at: Mapped[datetime] = _created_at()


# --- 0002 judge tables ------------------------------------------------------------------------


class JudgeTemplate(Base):
    __tablename__ = "judge_templates"
    __table_args__ = (UniqueConstraint("project_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    criterion_id: Mapped[int] = mapped_column(ForeignKey("criteria.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = _created_at()


class TemplateVersion(Base):
    __tablename__ = "template_versions"
    __table_args__ = (
        UniqueConstraint("template_id", "number"),
        CheckConstraint("number >= 1", name="number"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    template_id: Mapped[int] = mapped_column(ForeignKey("judge_templates.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    content_hash: Mapped[str] = mapped_column(String(64), index=True)
    content: Mapped[dict[str, Any]] = mapped_column(JSON)
    author: Mapped[str] = mapped_column(String(200))
    note: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created_at()


class Endpoint(Base):
    __tablename__ = "endpoints"
    __table_args__ = (CheckConstraint("kind IN ('openai', 'azure')", name="kind"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    base_url: Mapped[str | None] = mapped_column(String(1000))
    api_key_env: Mapped[str | None] = mapped_column(String(200))
    api_version: Mapped[str | None] = mapped_column(String(50))
    default_model: Mapped[str | None] = mapped_column(String(200))
    extra: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = _created_at()


class ModelPrice(Base):
    __tablename__ = "model_prices"

    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    input_per_mtok: Mapped[float] = mapped_column(Float)
    output_per_mtok: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = _created_at()
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class JudgeRun(Base):
    __tablename__ = "judge_runs"
    __table_args__ = (
        Index(None, "dataset_id", "criterion_id"),
        Index(None, "status"),
        CheckConstraint("order_mode IN ('single', 'both', 'flip')", name="order_mode"),
        CheckConstraint(
            "status IN ('pending', 'running', 'cancelling', 'cancelled', 'done', 'failed',"
            " 'interrupted')",
            name="status",
        ),
        # 0009: "jury", a run combined from the results of other runs (jury_members)
        CheckConstraint("source IN ('run', 'import', 'jury')", name="source"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    criterion_id: Mapped[int] = mapped_column(ForeignKey("criteria.id", ondelete="CASCADE"))
    template_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("template_versions.id", ondelete="SET NULL")
    )
    name: Mapped[str] = mapped_column(String(300))
    model: Mapped[str | None] = mapped_column(String(200))
    endpoint_id: Mapped[int | None] = mapped_column(ForeignKey("endpoints.id", ondelete="SET NULL"))
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    order_mode: Mapped[str] = mapped_column(String(16), default="single")
    seed: Mapped[int | None] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    n_planned: Mapped[int] = mapped_column(Integer, default=0)
    source: Mapped[str] = mapped_column(String(16), default="run")
    error: Mapped[str | None] = mapped_column(Text)
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = _created_at()
    # who carries the run out, until when (migration 0009; see evalcore.store._leases)
    lease_owner: Mapped[str | None] = mapped_column(String(200))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class JudgeResult(Base):
    __tablename__ = "judge_results"
    __table_args__ = (
        # One result per (run, item, presentation order): a replay is not a duplicate.
        UniqueConstraint("run_id", "item_id", "order"),
        CheckConstraint("\"order\" IN ('AB', 'BA')", name="order"),
        CheckConstraint("status IN ('ok', 'unparsed', 'failed')", name="status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("judge_runs.id", ondelete="CASCADE"))
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"))
    order: Mapped[str] = mapped_column(String(2), default="AB")
    status: Mapped[str] = mapped_column(String(16))
    label: Mapped[str | None] = mapped_column(String(200))
    score: Mapped[float | None] = mapped_column(Float)
    reason: Mapped[str | None] = mapped_column(Text)
    raw: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    tokens_in: Mapped[int | None] = mapped_column(Integer)
    tokens_out: Mapped[int | None] = mapped_column(Integer)
    cost: Mapped[float | None] = mapped_column(Float)
    latency_s: Mapped[float | None] = mapped_column(Float)
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    cache_key: Mapped[str | None] = mapped_column(String(64))
    cached: Mapped[bool] = mapped_column(Boolean, default=False)
    samples: Mapped[list[Any] | None] = mapped_column(JSON(none_as_null=True))
    details: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    created_at: Mapped[datetime] = _created_at()
    # 0009: label text -> probability over the criterion's scale, and that of the chosen label
    probabilities: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    confidence: Mapped[float | None] = mapped_column(Float)


class JudgeCache(Base):
    __tablename__ = "judge_cache"

    key: Mapped[str] = mapped_column(String(128), primary_key=True)
    model: Mapped[str | None] = mapped_column(String(200))
    response: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = _created_at()


# --- 0003 teams: accounts, project membership, the audit log, server settings ------------------


class User(Base):
    """A person who signs in: a local account (Argon2id hash) or one made by an OIDC sign-in."""

    __tablename__ = "users"
    __table_args__ = (
        CheckConstraint("role IN ('admin', 'engineer', 'annotator', 'viewer')", name="role"),
        CheckConstraint("source IN ('local', 'oidc')", name="source"),
        # 0009: one account per identity-provider identity (NULLs: not bound, never equal)
        Index("uq_users_oidc_issuer_oidc_subject", "oidc_issuer", "oidc_subject", unique=True),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    email: Mapped[str | None] = mapped_column(String(320), unique=True)
    # the role in every project the user belongs to, unless a membership says otherwise;
    # "admin" is an administrator of the whole server, member of every project
    role: Mapped[str] = mapped_column(String(16))
    password_hash: Mapped[str | None] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(16), default="local")
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    failed_attempts: Mapped[int] = mapped_column(Integer, default=0)
    locked_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_sign_in_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = _created_at()
    # 0009: the OIDC identity (issuer, subject) the account is bound to, if any
    oidc_issuer: Mapped[str | None] = mapped_column(String(500))
    oidc_subject: Mapped[str | None] = mapped_column(String(255))


class Membership(Base):
    """A user's role in one project."""

    __tablename__ = "memberships"
    __table_args__ = (
        UniqueConstraint("project_id", "user_id"),
        CheckConstraint("role IN ('admin', 'engineer', 'annotator', 'viewer')", name="role"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = _created_at()


class AuditEvent(Base):
    """Who did what, when: sign-ins, role and membership changes, endpoint changes, deletions,
    exports. Names, not foreign keys, so that an entry outlives the user or project it names."""

    __tablename__ = "audit_events"
    __table_args__ = (Index(None, "created_at"), Index(None, "action"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    actor: Mapped[str | None] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(64))
    target: Mapped[str | None] = mapped_column(String(500))
    project_id: Mapped[int | None] = mapped_column(Integer)
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = _created_at()


class ServerSetting(Base):
    """A server-wide setting an admin edits (allowed key variables, endpoint hosts, OIDC rules)."""

    __tablename__ = "server_settings"

    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[Any] = mapped_column(JSON, nullable=True)
    updated_by: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = _created_at()
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


# --- 0009 sign-in limits -------------------------------------------------------------------------


class SignInLimit(Base):
    """Sign-in attempts of one name from one client address (``pair``), of every name from one
    address (``client``, account ``''``) or of one name from every address (``account``, client
    ``''``): the attempts in the current window, the lock, and what the lock refused.

    Keyed by the name as typed, not by a user id, so that a name that does not exist is limited
    the same way as one that does."""

    __tablename__ = "sign_in_limits"
    __table_args__ = (
        UniqueConstraint("scope", "account", "client"),
        Index(None, "updated_at"),
        CheckConstraint("scope IN ('pair', 'client', 'account')", name="scope"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    scope: Mapped[str] = mapped_column(String(8))
    account: Mapped[str] = mapped_column(String(200))
    client: Mapped[str] = mapped_column(String(100))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    window_start: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    locked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    locked_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    refused: Mapped[int] = mapped_column(Integer, default=0)
    last_success_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    created_at: Mapped[datetime] = _created_at()
