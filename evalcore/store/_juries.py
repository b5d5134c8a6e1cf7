"""Jury runs: a run whose results were combined from other runs over the same items (migration 0012).

A jury is an ordinary row of ``judge_runs`` with ``source = 'jury'``, its results ordinary rows of
``judge_results``, so every reader (the calibration loader, exports, archives) treats it like any
run. Its members, their order and weights are rows of ``jury_members``. Combining the members'
verdicts is :func:`evalcore.judge.jury_results`; :func:`evalcore.runs.create_jury` joins the two.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import CheckConstraint, Float, ForeignKey, Integer, UniqueConstraint, select
from sqlalchemy.orm import Mapped, mapped_column

from evalcore.errors import ConfigError, NotFoundError
from evalcore.labels import Scale
from evalcore.store._base import StoreBase
from evalcore.store._judge import _result_row  # the one place a result becomes a row
from evalcore.store._models import (
    Base,
    Criterion,
    Item,
    JudgeResult,
    JudgeRun,
    UTCDateTime,
    table_of,
    utcnow,
)
from evalcore.store._records import JudgeResultInput, JudgeRunRecord, record_from_row

__all__ = ["JuriesMixin", "JuryMember", "JuryMemberRecord"]


class JuryMember(Base):
    """One member run of a jury run, with its place and weight."""

    __tablename__ = "jury_members"
    __table_args__ = (
        UniqueConstraint("jury_run_id", "member_run_id"),
        CheckConstraint("weight > 0", name="weight"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    jury_run_id: Mapped[int] = mapped_column(ForeignKey("judge_runs.id", ondelete="CASCADE"))
    member_run_id: Mapped[int] = mapped_column(ForeignKey("judge_runs.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    weight: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)


@dataclass(frozen=True)
class JuryMemberRecord:
    """A member of a jury: its run id, name, place among the members (from 0) and weight."""

    jury_run_id: int
    member_run_id: int
    name: str
    position: int
    weight: float


class JuriesMixin(StoreBase):
    """Jury runs (``Store`` mixes this in)."""

    if TYPE_CHECKING:  # from JudgeMixin (evalcore/store/_judge.py)

        def _new_run(
            self,
            s: Any,
            dataset_id: int,
            criterion_id: int,
            *,
            name: str,
            model: str | None,
            template_version_id: int | None,
            endpoint_id: int | None,
            settings: Mapping[str, Any] | None,
            order_mode: str,
            seed: int | None,
            n_planned: int | None,
            source: str,
            status: str = "pending",
        ) -> JudgeRun: ...

        def _upsert_results(self, s: Any, rows: list[dict[str, Any]]) -> None: ...

    def create_jury_run(
        self,
        dataset_id: int,
        criterion_id: int,
        *,
        name: str,
        members: Sequence[int],
        weights: Sequence[float] | None = None,
        settings: Mapping[str, Any] | None = None,
        results: Sequence[JudgeResultInput] = (),
    ) -> JudgeRunRecord:
        """Save a jury run with its members and its results in one transaction (``done``).

        ``members`` are run ids, at least two, distinct, each a run of this dataset and criterion
        (a jury may be a member of another); ``weights`` one positive number per member (default
        1 each). ``results`` are the jury's results, recorded as :meth:`record_results` does.
        Anything wrong raises :class:`~evalcore.errors.ConfigError` (or ``NotFoundError``) naming
        the member, and saves nothing.
        """
        ids = [int(m) for m in members]
        if len(ids) < 2:
            raise ConfigError(f"A jury needs at least two member runs, not {len(ids)}.")
        if len(set(ids)) != len(ids):
            twice = next(m for m in ids if ids.count(m) > 1)
            raise ConfigError(f"Run {twice} is named twice as a member of the jury.")
        weight_of = [1.0] * len(ids) if weights is None else [float(w) for w in weights]
        if len(weight_of) != len(ids):
            raise ConfigError(f"A jury of {len(ids)} members needs {len(ids)} weights.")
        for member, weight in zip(ids, weight_of, strict=True):
            if not (math.isfinite(weight) and weight > 0):
                raise ConfigError(
                    f"The weight of member run {member} must be positive, not {weight}."
                )
        with self._write() as s:
            criterion = self._get(s, Criterion, criterion_id, "Criterion")
            for member in ids:
                run = s.get(JudgeRun, member)
                if run is None:
                    raise NotFoundError(f"Member run {member} of the jury does not exist.")
                if run.dataset_id != dataset_id or run.criterion_id != criterion_id:
                    raise ConfigError(
                        f"Member run {member} ({run.name!r}) judges another dataset or criterion "
                        f"than the jury (dataset {dataset_id}, criterion {criterion.name!r})."
                    )
            jury = self._new_run(
                s,
                dataset_id,
                criterion_id,
                name=name,
                model=None,
                template_version_id=None,
                endpoint_id=None,
                settings=dict(settings or {}),
                order_mode="single",
                seed=None,
                n_planned=None,
                source="jury",
                status="done",
            )
            now = utcnow()
            jury.started_at = now
            jury.finished_at = now
            for position, (member, weight) in enumerate(zip(ids, weight_of, strict=True)):
                s.add(
                    JuryMember(
                        jury_run_id=jury.id,
                        member_run_id=member,
                        position=position,
                        weight=weight,
                        created_at=now,
                    )
                )
            if results:
                scale = Scale.from_dict(criterion.scale)
                known = dict(
                    s.execute(
                        select(Item.id, Item.external_id).where(Item.dataset_id == dataset_id)
                    ).all()
                )
                strangers = sorted({r.item_id for r in results if r.item_id not in known})
                if strangers:
                    raise NotFoundError(
                        f"Jury {name!r}: items {strangers[:5]} are not in its dataset."
                    )
                rows = [_result_row(jury.id, r, scale, known[r.item_id], now) for r in results]
                self._upsert_results(s, rows)
                self._analyze(s, table_of(JudgeResult), len(rows))
            s.flush()
            return record_from_row(JudgeRunRecord, jury, settings=dict(jury.settings or {}))

    def jury_members(self, run_id: int) -> list[JuryMemberRecord]:
        """The members of jury run ``run_id`` in their order (empty for a run that is no jury)."""
        with self._read() as s:
            self._get(s, JudgeRun, run_id, "Judge run")
            rows = s.execute(
                select(JuryMember, JudgeRun.name)
                .join(JudgeRun, JudgeRun.id == JuryMember.member_run_id)
                .where(JuryMember.jury_run_id == run_id)
                .order_by(JuryMember.position)
            ).all()
            return [
                JuryMemberRecord(
                    jury_run_id=run_id,
                    member_run_id=int(m.member_run_id),
                    name=str(member_name),
                    position=int(m.position),
                    weight=float(m.weight),
                )
                for m, member_name in rows
            ]
