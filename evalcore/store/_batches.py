"""Batch-mode runs: the provider batches of each run, and batch prices (migration 0006).

A run in batch mode sends its requests through a provider's Batch API. ``judge_run_batches`` keeps
every provider batch of a run (its input file, batch id and last known status) the moment each
exists, so any process that resumes the run picks up the same batches and never submits one twice.
``model_batch_prices`` holds the optional batch price of a model, beside its live price in
``model_prices``: a model without one has no batch cost (nothing is assumed).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from sqlalchemy import Float, ForeignKey, Integer, String, UniqueConstraint, delete, select
from sqlalchemy.orm import Mapped, mapped_column

from evalcore.errors import ConfigError, NotFoundError
from evalcore.store._base import StoreBase
from evalcore.store._models import Base, JudgeRun, UTCDateTime, utcnow

__all__ = ["BatchesMixin", "RunBatchRecord"]


class RunBatch(Base):
    """One provider batch of a run (``round`` 0: the run's first batches; then follow-ups)."""

    __tablename__ = "judge_run_batches"
    __table_args__ = (UniqueConstraint("run_id", "round", "part"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("judge_runs.id", ondelete="CASCADE"))
    round: Mapped[int] = mapped_column(Integer)
    part: Mapped[int] = mapped_column(Integer)
    path: Mapped[str] = mapped_column(String(1000), default="")
    requests: Mapped[int] = mapped_column(Integer, default=0)
    file_id: Mapped[str] = mapped_column(String(200), default="")
    batch_id: Mapped[str] = mapped_column(String(200), default="")
    status: Mapped[str] = mapped_column(String(32), default="written")
    completed: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)
    output_file_id: Mapped[str] = mapped_column(String(200), default="")
    error_file_id: Mapped[str] = mapped_column(String(200), default="")
    error: Mapped[str] = mapped_column(String(1000), default="")
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ModelBatchPrice(Base):
    """A model's batch price in US dollars per million input / output tokens."""

    __tablename__ = "model_batch_prices"

    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    input_per_mtok: Mapped[float] = mapped_column(Float)
    output_per_mtok: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


@dataclass(frozen=True)
class RunBatchRecord:
    """One provider batch of a run, as last saved."""

    round: int
    part: int
    path: str
    requests: int
    file_id: str
    batch_id: str
    status: str
    completed: int
    failed: int
    output_file_id: str
    error_file_id: str
    error: str
    updated_at: datetime


_SAVED = tuple(
    f.name for f in fields(RunBatchRecord) if f.name not in ("round", "part", "updated_at")
)


def _batch_record(row: RunBatch) -> RunBatchRecord:
    return RunBatchRecord(**{f.name: getattr(row, f.name) for f in fields(RunBatchRecord)})


class BatchesMixin(StoreBase):
    """The batches of batch-mode runs and batch prices (``Store`` mixes this in)."""

    def run_batches(self, run_id: int) -> list[RunBatchRecord]:
        """A run's provider batches, by round and part (none for a live run)."""
        with self._read() as s:
            rows = s.scalars(
                select(RunBatch)
                .where(RunBatch.run_id == run_id)
                .order_by(RunBatch.round, RunBatch.part)
            ).all()
            return [_batch_record(r) for r in rows]

    def save_run_batches(self, run_id: int, batches: Sequence[Mapping[str, Any]]) -> None:
        """Keep a run's batches as given (each a mapping with ``round``, ``part`` and the fields of
        :class:`RunBatchRecord`), in one transaction: rows not given are removed."""
        now = utcnow()
        with self._write() as s:
            if s.get(JudgeRun, run_id) is None:
                raise NotFoundError(f"Judge run {run_id} does not exist.")
            existing = {
                (r.round, r.part): r
                for r in s.scalars(select(RunBatch).where(RunBatch.run_id == run_id)).all()
            }
            wanted: set[tuple[int, int]] = set()
            for given in batches:
                key = (int(given["round"]), int(given["part"]))
                wanted.add(key)
                row = existing.get(key)
                if row is None:
                    row = RunBatch(run_id=run_id, round=key[0], part=key[1])
                    s.add(row)
                changed = False
                for name in _SAVED:
                    if name in given:
                        value = given[name]
                        value = (
                            int(value)
                            if name in ("requests", "completed", "failed")
                            else str(value)
                        )
                        if getattr(row, name) != value:
                            setattr(row, name, value)
                            changed = True
                if changed or row.updated_at is None:
                    row.updated_at = now
            for key, row in existing.items():
                if key not in wanted:
                    s.delete(row)

    def set_batch_price(self, model: str, *, input_per_mtok: float, output_per_mtok: float) -> None:
        """Set a model's batch price in US dollars per million input / output tokens."""
        model = str(model or "").strip()
        if not model:
            raise ConfigError("A batch price needs a model name.")
        prices = (float(input_per_mtok), float(output_per_mtok))
        if any(not (p >= 0) or math.isinf(p) for p in prices):
            raise ConfigError(f"Batch prices of {model!r} cannot be negative or NaN.")
        with self._write() as s:
            row = s.get(ModelBatchPrice, model)
            if row is None:
                row = ModelBatchPrice(model=model)
                s.add(row)
            row.input_per_mtok, row.output_per_mtok = prices
            row.updated_at = utcnow()

    def get_batch_prices(self) -> dict[str, tuple[float, float]]:
        """Every batch price set, by model: (input, output) dollars per million tokens."""
        with self._read() as s:
            rows = s.scalars(select(ModelBatchPrice).order_by(ModelBatchPrice.model)).all()
            return {r.model: (r.input_per_mtok, r.output_per_mtok) for r in rows}

    def delete_batch_price(self, model: str) -> None:
        """Forget a model's batch price (its batch runs then show no cost)."""
        with self._write() as s:
            s.execute(delete(ModelBatchPrice).where(ModelBatchPrice.model == model))
