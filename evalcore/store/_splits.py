"""Named dev/test splits of a dataset's labelled items for one criterion (migration 0007).

A split is saved once and reused, so that successive optimisations of a judge are proved on the
same test items. The store keeps the ids as given; choosing them is ``evalcore.improve.make_split``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Float, ForeignKey, Integer, String, UniqueConstraint, select
from sqlalchemy.orm import Mapped, mapped_column

from evalcore.errors import ConfigError, NotFoundError
from evalcore.store._base import StoreBase
from evalcore.store._models import Base, Criterion, Dataset, UTCDateTime, utcnow

__all__ = ["SplitRecord", "SplitsMixin"]


class SplitRow(Base):
    """One named split of a dataset's items for a criterion."""

    __tablename__ = "splits"
    __table_args__ = (UniqueConstraint("dataset_id", "criterion_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    criterion_id: Mapped[int] = mapped_column(ForeignKey("criteria.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    seed: Mapped[int] = mapped_column(Integer)
    test_share: Mapped[float] = mapped_column(Float)
    dev: Mapped[list[Any]] = mapped_column(JSON)
    test: Mapped[list[Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)


@dataclass(frozen=True)
class SplitRecord:
    """A saved split: item ids (the dataset's own ids) in ``dev`` and ``test``."""

    id: int
    dataset_id: int
    criterion_id: int
    name: str
    seed: int
    test_share: float
    dev: tuple[str, ...]
    test: tuple[str, ...]
    created_at: datetime


def _record(row: SplitRow) -> SplitRecord:
    plain = {f.name: getattr(row, f.name) for f in fields(SplitRecord)}
    plain["dev"], plain["test"] = tuple(map(str, row.dev)), tuple(map(str, row.test))
    return SplitRecord(**plain)


class SplitsMixin(StoreBase):
    """Saved dev/test splits (``Store`` mixes this in)."""

    def save_split(
        self,
        dataset_id: int,
        criterion_id: int,
        name: str,
        *,
        seed: int,
        test_share: float,
        dev: Sequence[str],
        test: Sequence[str],
    ) -> SplitRecord:
        """Save a split under ``name`` for a dataset and criterion, once.

        A split is never changed: saving the same ids again returns the saved split; different ids
        under a name already used raise :class:`~evalcore.errors.ConfigError` (choose another name).
        """
        name = str(name or "").strip()
        if not name:
            raise ConfigError("A split needs a name.")
        dev_ids, test_ids = [str(x) for x in dev], [str(x) for x in test]
        both = set(dev_ids) & set(test_ids)
        if both:
            raise ConfigError(
                f"Split {name!r} puts {len(both)} item(s) in both dev and test "
                f"(for example {sorted(both)[0]!r})."
            )
        with self._write() as s:
            dataset = self._get(s, Dataset, dataset_id, "Dataset")
            criterion = self._get(s, Criterion, criterion_id, "Criterion")
            if dataset.project_id != criterion.project_id:
                raise ConfigError(
                    f"Criterion {criterion.name!r} is not in the project of dataset "
                    f"{dataset.name!r}."
                )
            row = s.scalars(
                select(SplitRow).where(
                    SplitRow.dataset_id == dataset_id,
                    SplitRow.criterion_id == criterion_id,
                    SplitRow.name == name,
                )
            ).first()
            if row is not None:
                same = (
                    list(row.dev) == dev_ids
                    and list(row.test) == test_ids
                    and row.seed == int(seed)
                    and row.test_share == float(test_share)
                )
                if not same:
                    raise ConfigError(
                        f"A different split named {name!r} is already saved for this dataset "
                        "and criterion; splits are never changed, so choose another name."
                    )
                return _record(row)
            row = SplitRow(
                dataset_id=dataset_id,
                criterion_id=criterion_id,
                name=name,
                seed=int(seed),
                test_share=float(test_share),
                dev=dev_ids,
                test=test_ids,
            )
            s.add(row)
            s.flush()
            return _record(row)

    def get_split(self, dataset_id: int, criterion_id: int, name: str) -> SplitRecord:
        """The split saved under ``name``; raises :class:`~evalcore.errors.NotFoundError`."""
        with self._read() as s:
            row = s.scalars(
                select(SplitRow).where(
                    SplitRow.dataset_id == dataset_id,
                    SplitRow.criterion_id == criterion_id,
                    SplitRow.name == name,
                )
            ).first()
            if row is None:
                raise NotFoundError(
                    f"No split named {name!r} is saved for dataset {dataset_id} and criterion "
                    f"{criterion_id}."
                )
            return _record(row)
