"""Queue orders: which items an annotation queue hands out, and in which order (migration 0012).

By default the queue of a (dataset, criterion) hands out every item in dataset order. A *queue
order* is a named list of some of the dataset's items in a chosen order, saved with its source
(``"escalation"``, ``"label_next"``, ``"manual"``) and a reason written for the people who manage
the project. At most one order per (dataset, criterion) is *active*; while one is, claims
(:meth:`~evalcore.store.Store.ensure_queue`) hand out only its items, in its order, and the team's
count of items left counts only them; deactivating it returns the queue to dataset order.

Annotators stay blind: nothing of an order (its name, source, reason, or the ranks that came from a
judge's confidence) reaches :class:`~evalcore.store.AnnotationTask` or
:class:`~evalcore.store.QueueStatus`; they see the next item, as always. The labels they give are
ordinary annotations, so they count in every calibration.

Activating an order gives back to the pool the open (never answered) claims on items outside it,
so annotators move on to the ordered items at their next claim; their answered items stay theirs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
    delete,
    select,
    update,
)
from sqlalchemy.orm import Mapped, Session, mapped_column

from evalcore.errors import ConfigError, DataError, NotFoundError
from evalcore.store._base import IN_CHUNK, LOCK_QUEUE, StoreBase, chunks
from evalcore.store._models import (
    Assignment,
    Base,
    Criterion,
    Dataset,
    Item,
    UTCDateTime,
    table_of,
    utcnow,
)

__all__ = [
    "QUEUE_ORDER_SOURCES",
    "QueueOrder",
    "QueueOrderItem",
    "QueueOrderRecord",
    "QueueOrdersMixin",
]

#: Where a queue order came from.
QUEUE_ORDER_SOURCES: tuple[str, ...] = ("escalation", "label_next", "manual")


class QueueOrder(Base):
    """A named order of some items of a dataset for one criterion's queue."""

    __tablename__ = "queue_orders"
    __table_args__ = (UniqueConstraint("dataset_id", "criterion_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    criterion_id: Mapped[int] = mapped_column(ForeignKey("criteria.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(32))
    reason: Mapped[str] = mapped_column(Text)
    author: Mapped[str] = mapped_column(String(200))
    active: Mapped[bool] = mapped_column(Boolean, default=False)
    n_items: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)


class QueueOrderItem(Base):
    """One item of a queue order and its rank (0 first)."""

    __tablename__ = "queue_order_items"
    __table_args__ = (
        UniqueConstraint("order_id", "rank"),
        UniqueConstraint("order_id", "item_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    order_id: Mapped[int] = mapped_column(ForeignKey("queue_orders.id", ondelete="CASCADE"))
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"))
    rank: Mapped[int] = mapped_column(Integer)


@dataclass(frozen=True)
class QueueOrderRecord:
    """A saved queue order. ``reason`` is for the people who manage the project, never for
    annotators. ``item_ids`` (database ids, in order) are filled by :meth:`save_queue_order` and
    :meth:`get_queue_order`, and empty in lists (``n_items`` says how many)."""

    id: int
    dataset_id: int
    criterion_id: int
    name: str
    source: str
    reason: str
    author: str
    active: bool
    n_items: int
    created_at: datetime
    updated_at: datetime
    item_ids: tuple[int, ...] = ()


def _record(row: QueueOrder, item_ids: Sequence[int] = ()) -> QueueOrderRecord:
    plain = {f.name: getattr(row, f.name) for f in fields(QueueOrderRecord) if f.name != "item_ids"}
    return QueueOrderRecord(**plain, item_ids=tuple(int(i) for i in item_ids))


def active_order_id(conn: Any, dataset_id: int, criterion_id: int) -> int | None:
    """The id of the active order of a (dataset, criterion) queue, or None (a Core read)."""
    found = conn.execute(
        select(QueueOrder.id).where(
            QueueOrder.dataset_id == dataset_id,
            QueueOrder.criterion_id == criterion_id,
            QueueOrder.active.is_(True),
        )
    ).scalar()
    return None if found is None else int(found)


class QueueOrdersMixin(StoreBase):
    """Named queue orders (``Store`` mixes this in)."""

    def save_queue_order(
        self,
        dataset_id: int,
        criterion_id: int,
        name: str,
        item_ids: Sequence[int],
        *,
        reason: str = "",
        source: str = "manual",
        author: str = "",
        activate: bool = True,
    ) -> QueueOrderRecord:
        """Save the order ``item_ids`` (database ids of the dataset's items, first to label
        first) under ``name``; saving a name again replaces its items and reason.

        With ``activate`` (the default) it becomes the queue's active order at once (see the
        module docstring). An item outside the dataset, or named twice, raises
        :class:`~evalcore.errors.DataError` naming it and saves nothing.
        """
        name = str(name or "").strip()
        if not name:
            raise ConfigError("A queue order needs a name.")
        if source not in QUEUE_ORDER_SOURCES:
            raise ConfigError(
                f"A queue order comes from {', '.join(QUEUE_ORDER_SOURCES)}, not {source!r}."
            )
        ids = [int(i) for i in item_ids]
        if not ids:
            raise ConfigError(f"Queue order {name!r} lists no item.")
        seen: set[int] = set()
        for item in ids:
            if item in seen:
                raise DataError(f"Queue order {name!r} names item {item} twice.", item_id=str(item))
            seen.add(item)
        with self._write() as s:
            self._pair(s, dataset_id, criterion_id)
            known: set[int] = set()
            for group in chunks(sorted(seen), IN_CHUNK):
                known.update(
                    int(i)
                    for i in s.execute(
                        select(Item.id).where(Item.id.in_(group), Item.dataset_id == dataset_id)
                    ).scalars()
                )
            strangers = [i for i in ids if i not in known]
            if strangers:
                raise DataError(
                    f"Queue order {name!r}: item {strangers[0]} is not an item of dataset "
                    f"{dataset_id} ({len(strangers)} such); nothing was saved.",
                    item_id=str(strangers[0]),
                )
            row = self._order_row(s, dataset_id, criterion_id, name)
            now = utcnow()
            if row is None:
                row = QueueOrder(
                    dataset_id=dataset_id,
                    criterion_id=criterion_id,
                    name=name,
                    created_at=now,
                    active=False,
                )
                s.add(row)
            row.source, row.reason, row.author = source, str(reason), str(author)
            row.n_items, row.updated_at = len(ids), now
            s.flush()
            s.execute(delete(QueueOrderItem).where(QueueOrderItem.order_id == row.id))
            conn = s.connection()
            table = table_of(QueueOrderItem)
            for start in range(0, len(ids), 5_000):
                conn.execute(
                    table.insert(),
                    [
                        {"order_id": row.id, "item_id": item, "rank": start + k}
                        for k, item in enumerate(ids[start : start + 5_000])
                    ],
                )
            self._analyze(s, table, len(ids))
            if activate:
                self._activate(s, row)
            return _record(row, ids)

    def activate_queue_order(
        self, dataset_id: int, criterion_id: int, name: str
    ) -> QueueOrderRecord:
        """Make the saved order ``name`` the queue's active one (see the module docstring)."""
        with self._write() as s:
            row = self._order_row(s, dataset_id, criterion_id, name)
            if row is None:
                raise NotFoundError(f"No queue order named {name!r} is saved for this queue.")
            self._activate(s, row)
            return _record(row)

    def deactivate_queue_order(self, dataset_id: int, criterion_id: int) -> bool:
        """Return the queue to dataset order; whether an order was active."""
        with self._write() as s:
            result = s.connection().execute(
                update(QueueOrder)
                .where(
                    QueueOrder.dataset_id == dataset_id,
                    QueueOrder.criterion_id == criterion_id,
                    QueueOrder.active.is_(True),
                )
                .values(active=False, updated_at=utcnow())
            )
            return bool(result.rowcount)

    def get_queue_order(self, dataset_id: int, criterion_id: int, name: str) -> QueueOrderRecord:
        """The saved order ``name`` with its items; raises :class:`NotFoundError`."""
        with self._read() as s:
            row = self._order_row(s, dataset_id, criterion_id, name)
            if row is None:
                raise NotFoundError(f"No queue order named {name!r} is saved for this queue.")
            items = s.execute(
                select(QueueOrderItem.item_id)
                .where(QueueOrderItem.order_id == row.id)
                .order_by(QueueOrderItem.rank)
            ).scalars()
            return _record(row, list(items))

    def list_queue_orders(
        self, dataset_id: int, criterion_id: int | None = None
    ) -> list[QueueOrderRecord]:
        """The orders saved for a dataset (and criterion), newest first, without their items."""
        query = select(QueueOrder).where(QueueOrder.dataset_id == dataset_id)
        if criterion_id is not None:
            query = query.where(QueueOrder.criterion_id == criterion_id)
        with self._read() as s:
            rows = s.scalars(query.order_by(QueueOrder.updated_at.desc(), QueueOrder.id.desc()))
            return [_record(r) for r in rows]

    def active_queue_order(self, dataset_id: int, criterion_id: int) -> QueueOrderRecord | None:
        """The queue's active order (without its items), or None: dataset order."""
        with self._read() as s:
            found = active_order_id(s.connection(), dataset_id, criterion_id)
            return (
                None if found is None else _record(self._get(s, QueueOrder, found, "Queue order"))
            )

    # --- helpers ----------------------------------------------------------------------------

    def _pair(self, s: Session, dataset_id: int, criterion_id: int) -> None:
        dataset = self._get(s, Dataset, dataset_id, "Dataset")
        criterion = self._get(s, Criterion, criterion_id, "Criterion")
        if criterion.project_id != dataset.project_id:
            raise NotFoundError(
                f"Criterion {criterion.name!r} belongs to another project than dataset "
                f"{dataset.name!r}."
            )

    @staticmethod
    def _order_row(s: Session, dataset_id: int, criterion_id: int, name: str) -> QueueOrder | None:
        return s.scalars(
            select(QueueOrder).where(
                QueueOrder.dataset_id == dataset_id,
                QueueOrder.criterion_id == criterion_id,
                QueueOrder.name == str(name).strip(),
            )
        ).first()

    def _activate(self, s: Session, row: QueueOrder) -> None:
        """Make ``row`` the only active order of its queue and release open claims outside it."""
        self._lock(s, LOCK_QUEUE, row.dataset_id)
        now = utcnow()
        s.execute(
            update(QueueOrder)
            .where(
                QueueOrder.dataset_id == row.dataset_id,
                QueueOrder.criterion_id == row.criterion_id,
                QueueOrder.id != row.id,
                QueueOrder.active.is_(True),
            )
            .values(active=False, updated_at=now)
        )
        row.active = True
        row.updated_at = now
        s.flush()
        listed = select(QueueOrderItem.item_id).where(QueueOrderItem.order_id == row.id)
        s.execute(
            update(Assignment)
            .where(
                Assignment.dataset_id == row.dataset_id,
                Assignment.criterion_id == row.criterion_id,
                Assignment.state == "open",
                Assignment.item_id.not_in(listed),
            )
            .values(state="released")
        )
