"""Leases on background jobs: who carries out a run or an optimisation, and until when (0010).

A worker that starts a job (a judge run, live or batch, or an optimisation) first claims its lease:
``lease_owner`` names the worker, ``lease_expires_at`` says until when it holds the job. The worker
renews the lease every second or so while it works; the renewal also tells it the job's status, so
it sees a cancel request, and it tells it when the lease was lost (another worker took the job
over). A job whose lease expired, or whose owner the caller knows to be gone, may be claimed by
another worker; the claim is one conditional ``UPDATE``, so of two workers claiming at once exactly
one wins.

Which owners are gone is the caller's knowledge (:mod:`evalcore.runs` knows its own host's
processes); the store only compares names and times. Every method takes the kind of job
(``"run"`` or ``"improve"``) and its id.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, TypeAlias, cast

from sqlalchemy import and_, or_, select, update

from evalcore.errors import ConfigError
from evalcore.store._base import StoreBase
from evalcore.store._improve import ImproveJob
from evalcore.store._models import JudgeRun, utcnow

__all__ = ["LEASE_KINDS", "LeaseKind", "LeaseRecord", "LeasesMixin"]

LeaseKind: TypeAlias = Literal["run", "improve"]
#: The kinds of job that hold leases.
LEASE_KINDS: tuple[str, ...] = ("run", "improve")
#: Statuses of a job that is not over (a lease can be claimed on it).
_OPEN = ("pending", "running", "cancelling")
_MAX_OWNER = 200


@dataclass(frozen=True)
class LeaseRecord:
    """A job that is not over, with its lease: what a worker looks at to decide what to take.

    ``beat_at`` is the job's last sign of life (a run's heartbeat, an optimisation's last update);
    ``endpoint_id`` the endpoint its requests go to (``None``: none recorded); ``batch`` whether a
    run goes through a Batch API. ``owner`` and ``expires_at`` are ``None`` when nobody holds it.
    """

    kind: LeaseKind
    job_id: int
    project_id: int
    dataset_id: int
    status: str
    owner: str | None
    expires_at: datetime | None
    beat_at: datetime | None
    created_at: datetime
    endpoint_id: int | None
    batch: bool

    def expired(self, now: datetime) -> bool:
        """Whether nobody holds the job at ``now`` (no owner, or the lease ran out)."""
        return self.owner is None or self.expires_at is None or self.expires_at <= now


def _table(kind: str) -> Any:
    if kind == "run":
        return JudgeRun
    if kind == "improve":
        return ImproveJob
    raise ConfigError(f"a lease is held on a run or an optimisation, not a {kind!r}")


def _check_owner(owner: str) -> str:
    owner = str(owner).strip()
    if not owner or len(owner) > _MAX_OWNER:
        raise ConfigError(f"a lease owner is a name of 1 to {_MAX_OWNER} characters")
    return owner


def _lease_s(lease_s: float) -> timedelta:
    if not lease_s > 0:
        raise ConfigError(f"a lease lasts a positive number of seconds, not {lease_s}")
    return timedelta(seconds=float(lease_s))


class LeasesMixin(StoreBase):
    """Leases on runs and optimisations (``Store`` mixes this in)."""

    def claim_lease(
        self,
        kind: LeaseKind,
        job_id: int,
        owner: str,
        *,
        lease_s: float,
        replacing: str | None = None,
    ) -> bool:
        """Take the lease of a job that is not over, for ``lease_s`` seconds; whether it was taken.

        It is taken when nobody holds it, when its lease expired, when ``owner`` holds it already
        (a renewal), or when it is held by ``replacing`` (an owner the caller knows to be gone).
        """
        owner = _check_owner(owner)
        table = _table(kind)
        now = utcnow()
        free = or_(
            table.lease_owner.is_(None),
            table.lease_expires_at.is_(None),
            table.lease_expires_at <= now,
            table.lease_owner == owner,
        )
        if replacing is not None:
            free = or_(free, table.lease_owner == replacing)
        with self._write() as s:
            done = s.connection().execute(
                update(table)
                .where(and_(table.id == job_id, table.status.in_(_OPEN), free))
                .values(lease_owner=owner, lease_expires_at=now + _lease_s(lease_s))
            )
            return bool(done.rowcount)

    def renew_lease(
        self, kind: LeaseKind, job_id: int, owner: str, *, lease_s: float
    ) -> str | None:
        """Extend ``owner``'s lease by ``lease_s`` seconds from now and mark the job alive; returns
        the job's status (a worker sees a cancel request in it), or ``None`` when ``owner`` does not
        hold the lease any more (another worker took the job over: stop, and change nothing)."""
        owner = _check_owner(owner)
        table = _table(kind)
        now = utcnow()
        alive = {"heartbeat_at": now} if kind == "run" else {"updated_at": now}
        with self._write() as s:
            done = s.connection().execute(
                update(table)
                .where(table.id == job_id, table.lease_owner == owner)
                .values(lease_expires_at=now + _lease_s(lease_s), **alive)
            )
            if not done.rowcount:
                return None
            return cast(str | None, s.scalar(select(table.status).where(table.id == job_id)))

    def release_lease(self, kind: LeaseKind, job_id: int, owner: str) -> bool:
        """Give up ``owner``'s lease (the job ended, or stops to be resumed elsewhere); whether
        ``owner`` held it."""
        owner = _check_owner(owner)
        table = _table(kind)
        with self._write() as s:
            done = s.connection().execute(
                update(table)
                .where(table.id == job_id, table.lease_owner == owner)
                .values(lease_owner=None, lease_expires_at=None)
            )
            return bool(done.rowcount)

    def open_leases(self, kind: LeaseKind) -> list[LeaseRecord]:
        """Every job of ``kind`` that is not over (pending, running or being cancelled) with its
        lease, oldest first."""
        table = _table(kind)
        with self._read() as s:
            rows = s.scalars(
                select(table).where(table.status.in_(_OPEN)).order_by(table.created_at, table.id)
            ).all()
            return [_lease_record(kind, row) for row in rows]


def _lease_record(kind: LeaseKind, row: Any) -> LeaseRecord:
    settings = dict(row.settings or {})
    if kind == "run":
        endpoint = row.endpoint_id
        beat = row.heartbeat_at
        batch = settings.get("mode") == "batch"
    else:
        endpoint = settings.get("endpoint_id")
        beat = row.updated_at
        batch = False
    return LeaseRecord(
        kind=kind,
        job_id=int(row.id),
        project_id=int(row.project_id),
        dataset_id=int(row.dataset_id),
        status=str(row.status),
        owner=row.lease_owner,
        expires_at=row.lease_expires_at,
        beat_at=beat,
        created_at=row.created_at,
        endpoint_id=None if endpoint is None else int(endpoint),
        batch=batch,
    )
