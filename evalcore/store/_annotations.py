"""The annotation queue and human annotations.

Rules kept here:

- An annotation is never updated: a change is a new revision, and the latest revision counts.
  ``UNIQUE (annotator, item, criterion, revision)`` makes a submit idempotent: replaying a submit on
  the same base revision finds the row it wrote instead of writing a second one.
- A skip (or a flag such as "broken" without a label) is an annotation with ``label = NULL``. In a queue
  it counts as *skipped*, not *done*; resuming goes to the first item never touched, then back to the
  skipped ones.
- The queue is blind: :meth:`queue_item` reads the item, the assignment and this annotator's own
  annotations, and no other table.
- Each assignment carries a ``state`` ("open", "labelled", "skipped") that every write of an annotation
  updates in the same transaction. It is a cache of "what is the latest revision", kept so that the
  Annotate page's progress and resume queries are index look-ups even with 100 000 items.
- Queues are claimed in batches, in dataset order, or in the order of the queue's active *queue
  order* (:mod:`evalcore.store._queue_orders`: escalation, "label next"), which then hands out only
  its items. When an annotator holds no open item (and on the
  first call) :meth:`ensure_queue` gives them the next ``claim_batch`` items that have fewer than the
  project's ``annotators_per_item`` holders: someone's open claim within the lease (``claim_lease_s``,
  renewed by every submit in the queue) or someone's answer. Positions only grow, so Previous, Next and
  "go to item" work over everything the annotator has had. Claims are serialised per dataset (an
  advisory lock on PostgreSQL, the single writer on SQLite): with one annotator per item, no two
  annotators hold the same item, whichever server process they use.
- A claim goes back to the pool unanswered (``release_claims``, or a takeover once the lease ran out) by
  becoming ``released``: the row and its position stay, so a late answer is still stored (the item then
  simply has one more label). Answered and skipped items are never released.
- A pairwise item's left/right order is a coin seeded by (annotator, dataset, item) so every annotator
  sees a stable, personal A/B order.
"""

from __future__ import annotations

import dataclasses
import hashlib
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
from sqlalchemy import (
    BigInteger,
    Boolean,
    ColumnElement,
    Integer,
    String,
    and_,
    bindparam,
    case,
    cast,
    func,
    insert,
    literal,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, aliased

from evalcore.errors import (
    ConfigError,
    DataError,
    DuplicateIdError,
    LabelOutOfScaleError,
    MissingColumnError,
    NotFoundError,
    StoreError,
    format_rows,
)
from evalcore.labels import Scale, is_missing
from evalcore.store._base import (
    IN_CHUNK,
    LOCK_ANNOTATION_IMPORT,
    LOCK_QUEUE,
    RevisionConflictError,
    StoreBase,
    bulk_insert,
    canonical_label,
    chunks,
    external_id,
)
from evalcore.store._models import (
    Annotation,
    Annotator,
    Assignment,
    Criterion,
    Dataset,
    Item,
    Project,
    UTCDateTime,
    table_of,
    utcnow,
)
from evalcore.store._queue_orders import QueueOrder, QueueOrderItem, active_order_id
from evalcore.store._records import (
    ANNOTATION_FLAGS,
    AnnotationFlag,
    AnnotationRecord,
    AnnotationSource,
    AnnotationTask,
    ImportSummary,
    QueueStatus,
)

__all__ = ["AnnotationsMixin", "ClaimSettings", "claim_settings"]


def _annotation_record(row: Any, annotator: str) -> AnnotationRecord:
    """A record from an ORM row or a Core row of ``annotations``."""
    return AnnotationRecord(
        id=row.id,
        item_id=row.item_id,
        criterion_id=row.criterion_id,
        annotator_id=row.annotator_id,
        annotator=annotator,
        revision=row.revision,
        label=row.label,
        flag=row.flag,  # type: ignore[arg-type]
        comment=row.comment,
        time_spent_s=row.time_spent_s,
        display_swapped=row.display_swapped,
        source=row.source,  # type: ignore[arg-type]
        created_at=row.created_at,
    )


#: The item fields an annotation task shows.
_TASK_FIELDS = ("prompt", "response", "context", "reference", "response_a", "response_b")

#: Knuth's multiplicative constant: spreads consecutive item ids over the coin's bit.
_COIN_MULTIPLIER = 2_654_435_761


def _coin_seed(annotator: str, dataset_id: int) -> int:
    digest = hashlib.sha256(f"{annotator}\x1f{dataset_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def swap_expression(annotator: str, dataset_id: int) -> ColumnElement[bool]:
    """SQL for a stable coin per (annotator, item): bit 16 of a seeded multiplicative hash of the id.

    Computed in the database (integer arithmetic only, the same on SQLite and PostgreSQL) so that a
    100 000-item queue is created by one ``INSERT ... SELECT``.
    """
    big = BigInteger()
    seed = literal(_coin_seed(annotator, dataset_id), big)
    mixed = (cast(Item.id, big) * literal(_COIN_MULTIPLIER, big) + seed) % literal(2**32, big)
    return (mixed // literal(65_536, big)) % literal(2, big) == literal(1, big)


def _set_state(
    conn: Any, annotator_id: int, criterion_id: int, item_ids: Sequence[int], state: str
) -> None:
    """Set the queue state of one annotator's assignments of ``item_ids``.

    One ``executemany`` keyed on the full unique key (annotator, item, criterion), so that every row
    is an index look-up on both backends, whatever the planner knows about the table.
    """
    if not item_ids:
        return
    stmt = (
        update(Assignment)
        .where(
            Assignment.annotator_id == bindparam("a"),
            Assignment.item_id == bindparam("i"),
            Assignment.criterion_id == bindparam("c"),
        )
        .values(state=state)
    )
    conn.execute(stmt, [{"a": annotator_id, "i": i, "c": criterion_id} for i in item_ids])


def _refresh_states(conn: Any, annotator_id: int, dataset_id: int, criterion_id: int) -> None:
    """Bring the open assignments of one annotator's queue in step with their annotations.

    Only open rows can be behind (an answer given before the item was claimed); every other write
    keeps the state itself. The latest revision of each item and whether it has a label come out of
    one aggregate: the maximum of ``2 * revision + has_label`` (the latest revision dominates; the
    low bit is its label).
    """
    has_label = case((Annotation.label.is_(None), 0), else_=1)
    mine = aliased(Assignment)
    rows = conn.execute(
        select(Annotation.item_id, func.max(Annotation.revision * 2 + has_label))
        .join(
            mine,
            (mine.item_id == Annotation.item_id)
            & (mine.annotator_id == annotator_id)
            & (mine.criterion_id == criterion_id),
        )
        .where(
            Annotation.annotator_id == annotator_id,
            Annotation.criterion_id == criterion_id,
            mine.dataset_id == dataset_id,
            mine.state == "open",
        )
        .group_by(Annotation.item_id)
    ).all()
    _set_state(conn, annotator_id, criterion_id, [i for i, k in rows if k % 2 == 1], "labelled")
    _set_state(conn, annotator_id, criterion_id, [i for i, k in rows if k % 2 == 0], "skipped")


# --- claims ---------------------------------------------------------------------------------------

#: Items claimed at a time when the project does not say (``claim_batch``).
DEFAULT_CLAIM_BATCH = 20
#: Seconds an open claim is kept without a submit in its queue (``claim_lease_s``).
DEFAULT_CLAIM_LEASE_S = 1800.0


@dataclass(frozen=True)
class ClaimSettings:
    """A project's claim rules: annotators per item, the batch size and the lease in seconds."""

    per_item: int
    batch: int
    lease_s: float


def claim_settings(settings: Mapping[str, Any]) -> ClaimSettings:
    """The claim rules from a project's settings, with the defaults; a bad value is a ConfigError.

    >>> claim_settings({"annotators_per_item": 2})
    ClaimSettings(per_item=2, batch=20, lease_s=1800.0)
    """
    batch = settings.get("claim_batch", DEFAULT_CLAIM_BATCH)
    if not _whole(batch) or batch < 1:
        raise ConfigError(f"claim_batch must be a whole number of at least 1, not {batch!r}.")
    lease = settings.get("claim_lease_s", DEFAULT_CLAIM_LEASE_S)
    if isinstance(lease, bool) or not isinstance(lease, numbers.Real) or not float(lease) > 0:
        raise ConfigError(f"claim_lease_s must be a positive number of seconds, not {lease!r}.")
    return ClaimSettings(
        per_item=int(settings.get("annotators_per_item", 1)),
        batch=int(batch),
        lease_s=float(lease),
    )


def _whole(value: Any) -> bool:
    return (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and float(value).is_integer()
    )


def _holds_open(conn: Any, annotator_id: int, dataset_id: int, criterion_id: int) -> bool:
    found = conn.execute(
        select(Assignment.id)
        .where(
            Assignment.annotator_id == annotator_id,
            Assignment.dataset_id == dataset_id,
            Assignment.criterion_id == criterion_id,
            Assignment.state == "open",
        )
        .limit(1)
    ).first()
    return found is not None


@dataclass(frozen=True)
class _Claim:
    """One claim of a batch of items by one annotator, inside the caller's locked transaction."""

    conn: Any
    dataset_id: int
    criterion_id: int
    annotator_id: int
    per_item: int
    cutoff: datetime
    swapped: ColumnElement[bool]
    #: the queue's active order (:mod:`evalcore.store._queue_orders`): only its items, in its
    #: order; None: every item in dataset order
    order_id: int | None = None

    def run(self, batch: int) -> int:
        """Claim up to ``batch`` free items unless the annotator holds an open one; rows added.

        Items the annotator had already answered before claiming them count as answered at once;
        when a whole batch was answered already, the next batch is claimed, until one is open.
        """
        added = 0
        while batch > 0 and not _holds_open(
            self.conn, self.annotator_id, self.dataset_id, self.criterion_id
        ):
            now = utcnow()
            taken = self._reopen(batch, now)
            fresh = self._insert(batch - taken, now) if taken < batch else 0
            if taken + fresh == 0:
                break
            added += fresh
            self._take_over()
            _refresh_states(self.conn, self.annotator_id, self.dataset_id, self.criterion_id)
        return added

    def _mine(self, row: Any) -> ColumnElement[bool]:
        return and_(
            row.annotator_id == self.annotator_id,
            row.dataset_id == self.dataset_id,
            row.criterion_id == self.criterion_id,
        )

    def _free(self, item_id: Any) -> ColumnElement[bool]:
        """SQL: the item has fewer holders than ``per_item``, not counting this annotator.

        A holder is someone else's open claim within the lease, or someone else's answer (a label,
        a skip or an imported label, whether or not it came through a queue).
        """
        other = aliased(Assignment)
        claims = (
            select(func.count())
            .select_from(other)
            .where(
                other.dataset_id == self.dataset_id,
                other.criterion_id == self.criterion_id,
                other.item_id == item_id,
                other.annotator_id != self.annotator_id,
                other.state == "open",
                other.claimed_at >= self.cutoff,
            )
            .scalar_subquery()
        )
        answers = (
            select(func.count(func.distinct(Annotation.annotator_id)))
            .where(
                Annotation.criterion_id == self.criterion_id,
                Annotation.item_id == item_id,
                Annotation.annotator_id != self.annotator_id,
            )
            .scalar_subquery()
        )
        return claims + answers < self.per_item

    def _listed(self) -> Any:
        """The item ids of the active order (a subquery); only called with one."""
        return select(QueueOrderItem.item_id).where(QueueOrderItem.order_id == self.order_id)

    def _reopen(self, batch: int, now: datetime) -> int:
        """Take back this annotator's own released claims of items still free (and in the active
        order, if any), in position order."""
        mine = aliased(Assignment)
        wanted = select(mine.id).where(
            self._mine(mine), mine.state == "released", self._free(mine.item_id)
        )
        if self.order_id is not None:
            wanted = wanted.where(mine.item_id.in_(self._listed()))
        wanted = wanted.order_by(mine.position).limit(batch)
        result = self.conn.execute(
            update(Assignment).where(Assignment.id.in_(wanted)).values(state="open", claimed_at=now)
        )
        return int(result.rowcount or 0)

    def _insert(self, batch: int, now: datetime) -> int:
        """Claim the first ``batch`` free items the annotator never had, after their last position:
        in dataset order, or in the active order's."""
        start = self._end()
        mine = aliased(Assignment)

        def had(item_id: Any) -> Any:
            return (
                select(mine.id)
                .where(
                    mine.annotator_id == self.annotator_id,
                    mine.criterion_id == self.criterion_id,
                    mine.item_id == item_id,
                )
                .exists()
            )

        # The inner query walks the dataset (or the order) in order and stops at ``batch`` free
        # items.
        if self.order_id is None:
            picked = (
                select(Item.id.label("item_id"), Item.position.label("rank"))
                .where(Item.dataset_id == self.dataset_id, ~had(Item.id), self._free(Item.id))
                .order_by(Item.position)
                .limit(batch)
                .subquery("picked")
            )
        else:
            listed = QueueOrderItem.item_id
            picked = (
                select(listed.label("item_id"), QueueOrderItem.rank.label("rank"))
                .where(QueueOrderItem.order_id == self.order_id, ~had(listed), self._free(listed))
                .order_by(QueueOrderItem.rank)
                .limit(batch)
                .subquery("picked")
            )
        rows = (
            select(
                literal(self.dataset_id, Integer()),
                literal(self.criterion_id, Integer()),
                literal(self.annotator_id, Integer()),
                Item.id,
                func.row_number().over(order_by=picked.c.rank) - 1 + literal(int(start), Integer()),
                self.swapped,
                literal("open", String()),
                literal(now, UTCDateTime()),
                literal(now, UTCDateTime()),
            )
            .join(picked, picked.c.item_id == Item.id)
            .order_by(picked.c.rank)
        )
        columns = [
            "dataset_id",
            "criterion_id",
            "annotator_id",
            "item_id",
            "position",
            "swapped",
            "state",
            "created_at",
            "claimed_at",
        ]
        self.conn.execute(insert(Assignment).from_select(columns, rows))
        return self._end() - start  # (the driver's rowcount of INSERT ... SELECT may be -1)

    def _end(self) -> int:
        """One past the annotator's last position in the queue (0 for none)."""
        mine = aliased(Assignment)
        end = self.conn.execute(
            select(func.coalesce(func.max(mine.position) + 1, 0)).where(self._mine(mine))
        ).scalar_one()
        return int(end)

    def _take_over(self) -> None:
        """Release the stale open claims of others on the items this annotator now holds open."""
        mine = aliased(Assignment)
        held = select(mine.item_id).where(self._mine(mine), mine.state == "open")
        self.conn.execute(
            update(Assignment)
            .where(
                Assignment.dataset_id == self.dataset_id,
                Assignment.criterion_id == self.criterion_id,
                Assignment.annotator_id != self.annotator_id,
                Assignment.state == "open",
                Assignment.claimed_at < self.cutoff,
                Assignment.item_id.in_(held),
            )
            .values(state="released")
        )


def _team_left(conn: Any, dataset_id: int, criterion_id: int) -> int:
    """Items of the queue (the dataset's, or the active order's) with fewer annotators whose
    answer has a label than the project asks."""
    found = conn.execute(
        select(Dataset.n_items, Project.settings)
        .join(Project, Project.id == Dataset.project_id)
        .where(Dataset.id == dataset_id)
    ).first()
    if found is None:
        raise NotFoundError(f"Dataset {dataset_id!r} does not exist.")
    per_item = int((found.settings or {}).get("annotators_per_item", 1))
    total = int(found.n_items)
    order_id = active_order_id(conn, dataset_id, criterion_id)
    complete = (
        select(Annotation.item_id)
        .join(Item, Item.id == Annotation.item_id)
        .where(
            Item.dataset_id == dataset_id,
            Annotation.criterion_id == criterion_id,
            Annotation.label.is_not(None),
        )
        .group_by(Annotation.item_id)
        .having(func.count(func.distinct(Annotation.annotator_id)) >= per_item)
    )
    if order_id is not None:
        listed = select(QueueOrderItem.item_id).where(QueueOrderItem.order_id == order_id)
        complete = complete.where(Annotation.item_id.in_(listed))
        total = int(
            conn.execute(select(QueueOrder.n_items).where(QueueOrder.id == order_id)).scalar_one()
        )
    counted = complete.subquery("complete")
    labelled = conn.execute(select(func.count()).select_from(counted)).scalar_one()
    return max(0, total - int(labelled))


class AnnotationsMixin(StoreBase):
    # --- queue ------------------------------------------------------------------------------

    def ensure_queue(
        self, dataset_id: int, criterion_id: int, annotator: str, *, limit: int | None = None
    ) -> QueueStatus:
        """Give ``annotator`` their next batch of items for (dataset, criterion) when they hold none open.

        An annotator with an open item (never answered) keeps their queue as it is. Otherwise they
        claim a batch (the project's ``claim_batch``, or ``limit`` when given) of the items, in
        dataset order, that have fewer than ``annotators_per_item`` holders: someone else's fresh
        open claim or someone else's answer; while the queue has an active queue order, only its
        items, in its order. Claims they gave back themselves come back first, at
        their old positions; new ones go after the last position they had. An open claim of someone
        else older than the lease (``claim_lease_s``) does not count, and is released in the same
        transaction. Serialised per dataset across processes (PostgreSQL's advisory lock, SQLite's
        single writer), so with one annotator per item no two annotators hold the same item.
        """
        name = annotator.strip()
        if self._holds_open(dataset_id, criterion_id, name):
            return self.queue_status(dataset_id, criterion_id, name)
        with self._write() as s:
            dataset, criterion = self._dataset_and_criterion(s, dataset_id, criterion_id)
            project = self._get(s, Project, dataset.project_id, "Project")
            rules = claim_settings(project.settings or {})
            batch = rules.batch if limit is None else max(0, int(limit))
            self._lock(s, LOCK_QUEUE, dataset_id)
            annotator_id = self._annotator_id(s, name)
            claim = _Claim(
                conn=s.connection(),
                dataset_id=dataset_id,
                criterion_id=criterion_id,
                annotator_id=annotator_id,
                per_item=rules.per_item,
                cutoff=utcnow() - timedelta(seconds=rules.lease_s),
                swapped=(
                    swap_expression(name, dataset_id)
                    if criterion.kind == "pairwise"
                    else literal(False, Boolean())
                ),
                order_id=active_order_id(s.connection(), dataset_id, criterion_id),
            )
            added = claim.run(batch)
            self._analyze(s, table_of(Assignment), added)
        return self.queue_status(dataset_id, criterion_id, name)

    def release_claims(self, dataset_id: int, criterion_id: int, annotator: str) -> int:
        """Give the annotator's open (never answered) items of a queue back to the pool; how many.

        Call it when they sign out or move to another queue. Answered and skipped items stay theirs.
        The rows stay, marked ``released``, so positions do not move and a late answer is still
        stored; their next claim in this queue takes the released items back first if they are free.
        """
        name = annotator.strip()
        with self._write() as s:
            annotator_id = self._find_annotator(s, name)
            if annotator_id is None:
                return 0
            result = s.connection().execute(
                update(Assignment)
                .where(
                    Assignment.annotator_id == annotator_id,
                    Assignment.dataset_id == dataset_id,
                    Assignment.criterion_id == criterion_id,
                    Assignment.state == "open",
                )
                .values(state="released")
            )
            return int(result.rowcount or 0)

    def _holds_open(self, dataset_id: int, criterion_id: int, annotator: str) -> bool:
        """Whether the annotator holds an open item of the queue (a read; no write lock taken)."""
        with self._read() as s:
            annotator_id = self._find_annotator(s, annotator)
            if annotator_id is None:
                return False
            return _holds_open(s.connection(), annotator_id, dataset_id, criterion_id)

    def queue_status(
        self, dataset_id: int, criterion_id: int, annotator: str, *, team: bool = True
    ) -> QueueStatus:
        """How far ``annotator`` is in what they were given ("37 of 40"), where to resume, and how
        many items the team has left (``team_left``; None with ``team=False``).

        One grouped count over the queue's index (milliseconds for any queue). Counting what the
        team has left reads every label of the dataset: about 0.1 s with 50 000 labels, so a page
        that redraws often asks for it now and then.
        """
        name = annotator.strip()
        with self._read() as s:
            conn = s.connection()
            team_left = _team_left(conn, dataset_id, criterion_id) if team else None
            annotator_id = self._find_annotator(s, name)
            if annotator_id is None:
                return QueueStatus(
                    dataset_id, criterion_id, name, 0, 0, 0, None, team_left=team_left
                )
            rows = conn.execute(
                select(Assignment.state, func.count(), func.min(Assignment.position))
                .where(
                    Assignment.annotator_id == annotator_id,
                    Assignment.dataset_id == dataset_id,
                    Assignment.criterion_id == criterion_id,
                )
                .group_by(Assignment.state)
            ).all()
        count = {state: int(n) for state, n, _first in rows}
        first = {state: int(p) for state, _n, p in rows}
        return QueueStatus(
            dataset_id=dataset_id,
            criterion_id=criterion_id,
            annotator=name,
            total=sum(count.values()),
            done=count.get("labelled", 0),
            skipped=count.get("skipped", 0),
            next_position=first.get("open", first.get("skipped")),
            released=count.get("released", 0),
            team_left=team_left,
        )

    def next_open_position(
        self,
        dataset_id: int,
        criterion_id: int,
        annotator: str,
        start: int = 0,
        *,
        include_skipped: bool = False,
    ) -> int | None:
        """The first queue position at or after ``start`` that this annotator has not answered.

        Items they skipped are passed over unless ``include_skipped``. ``None`` when there is none.
        """
        states = ("open", "skipped") if include_skipped else ("open",)
        with self._read() as s:
            annotator_id = self._find_annotator(s, annotator)
            if annotator_id is None:
                return None
            conn = s.connection()
            found = [
                conn.execute(
                    select(Assignment.position)
                    .where(
                        Assignment.annotator_id == annotator_id,
                        Assignment.dataset_id == dataset_id,
                        Assignment.criterion_id == criterion_id,
                        Assignment.state == state,
                        Assignment.position >= start,
                    )
                    .order_by(Assignment.position)
                    .limit(1)
                ).scalar()
                for state in states
            ]
        positions = [int(p) for p in found if p is not None]
        return min(positions) if positions else None

    def queue_item(
        self, dataset_id: int, criterion_id: int, annotator: str, position: int
    ) -> AnnotationTask | None:
        """What the Annotate page shows at ``position`` of this annotator's queue; None past the end.

        Blind: the task holds the item, the display order and this annotator's own latest annotation,
        read from ``assignments``, ``items`` and ``annotations`` (filtered to this annotator) only.
        """
        with self._read() as s:
            annotator_id = self._find_annotator(s, annotator)
            if annotator_id is None:
                return None
            conn = s.connection()
            found = conn.execute(
                select(
                    Item.id,
                    Item.external_id,
                    *(getattr(Item, f) for f in _TASK_FIELDS),
                    Item.meta,
                    Assignment.swapped,
                )
                .join(Assignment, Assignment.item_id == Item.id)
                .where(
                    Assignment.annotator_id == annotator_id,
                    Assignment.dataset_id == dataset_id,
                    Assignment.criterion_id == criterion_id,
                    Assignment.position == position,
                )
            ).first()
            if found is None:
                return None
            own = conn.execute(
                select(Annotation.label, Annotation.flag, Annotation.comment, Annotation.revision)
                .where(
                    Annotation.annotator_id == annotator_id,
                    Annotation.item_id == found.id,
                    Annotation.criterion_id == criterion_id,
                )
                .order_by(Annotation.revision.desc())
                .limit(1)
            ).first()
        return AnnotationTask(
            item_id=int(found.id),
            external_id=str(found.external_id),
            dataset_id=dataset_id,
            criterion_id=criterion_id,
            position=int(position),
            swapped=bool(found.swapped),
            **{f: getattr(found, f) for f in _TASK_FIELDS},
            metadata=self._shown_fields(s, dataset_id, dict(found.metadata or {})),
            label=own.label if own else None,
            flag=own.flag if own else None,
            comment=own.comment if own else None,
            revision=int(own.revision) if own else 0,
        )

    def _shown_fields(self, s: Any, dataset_id: int, meta: dict[str, Any]) -> dict[str, Any]:
        """The extra fields an annotator may see: the dataset's item fields, never its metadata
        (aggregates, label-like columns)."""
        row = s.get(Dataset, dataset_id)
        if row is None or row.column_roles is None:
            return meta
        shown = {c for c, role in row.column_roles.items() if role == "item_field"}
        return {k: v for k, v in meta.items() if k in shown}

    # --- annotations ------------------------------------------------------------------------

    def submit_annotation(
        self,
        item_id: int,
        criterion_id: int,
        annotator: str,
        *,
        label: object,
        base_revision: int,
        comment: str | None = None,
        flag: AnnotationFlag | None = None,
        time_spent_s: float | None = None,
        display_swapped: bool = False,
        source: AnnotationSource = "ui",
    ) -> AnnotationRecord:
        """Record one judgement as revision ``base_revision + 1``, committed before returning.

        ``label`` is read on the criterion's scale (``Scale.coerce``) and stored as its canonical
        text; a label off the scale raises :class:`LabelOutOfScaleError` naming the item. A skip is
        ``label=None`` with a ``flag``. A pairwise label is always in canonical terms (``A`` =
        ``response_a``) whichever side it was shown on; ``display_swapped`` records how it was shown. ``base_revision`` is the revision the annotator saw (0 for
        none, ``AnnotationTask.revision`` otherwise).

        Idempotent: replaying the same submit (same base revision, label, flag and comment) returns
        the revision it wrote. A different submit on a base revision that was already replaced raises
        :class:`RevisionConflictError` (another window changed the item first).
        """
        if isinstance(base_revision, bool) or int(base_revision) != base_revision:
            raise StoreError(f"base_revision must be a whole number, not {base_revision!r}.")
        if base_revision < 0:
            raise StoreError(f"base_revision cannot be negative ({base_revision}).")
        if flag is not None and flag not in ANNOTATION_FLAGS:
            raise StoreError(f"flag must be one of {', '.join(ANNOTATION_FLAGS)}, not {flag!r}.")
        if source not in ("ui", "import"):
            raise StoreError(f"source must be 'ui' or 'import', not {source!r}.")
        comment = comment if comment else None
        name = annotator.strip()
        revision = int(base_revision) + 1
        try:
            with self._write() as s:
                conn = s.connection()
                external, scale = self._item_and_scale(conn, item_id, criterion_id)
                text = canonical_label(scale, label, item=external)
                if text is None and flag is None:
                    raise DataError(
                        f"item {external!r}: give a label, or a flag to skip it.", item_id=external
                    )
                annotator_id = self._annotator_id(s, name)
                latest, existing = _revision_state(
                    conn, annotator_id, item_id, criterion_id, revision
                )
                if base_revision < latest:
                    return _replayed(existing, name, external, latest, text, flag, comment)
                if base_revision > latest:
                    raise StoreError(
                        f"item {external!r}: revision {base_revision} does not exist "
                        f"(the latest is {latest}); reload the item."
                    )
                record = AnnotationRecord(
                    id=0,
                    item_id=item_id,
                    criterion_id=criterion_id,
                    annotator_id=annotator_id,
                    annotator=name,
                    revision=revision,
                    label=text,
                    flag=flag,
                    comment=comment,
                    time_spent_s=None if time_spent_s is None else float(time_spent_s),
                    display_swapped=bool(display_swapped),
                    source=source,
                    created_at=utcnow(),
                )
                values = {
                    f.name: getattr(record, f.name)
                    for f in dataclasses.fields(record)
                    if f.name not in ("id", "annotator")
                }
                conn.execute(
                    update(Assignment)
                    .where(
                        Assignment.annotator_id == annotator_id,
                        Assignment.item_id == item_id,
                        Assignment.criterion_id == criterion_id,
                    )
                    .values(state="skipped" if text is None else "labelled")
                )
                # A submit renews the lease of every open claim the annotator holds in this queue.
                conn.execute(
                    update(Assignment)
                    .where(
                        Assignment.annotator_id == annotator_id,
                        Assignment.dataset_id
                        == select(Item.dataset_id).where(Item.id == item_id).scalar_subquery(),
                        Assignment.criterion_id == criterion_id,
                        Assignment.state == "open",
                    )
                    .values(claimed_at=record.created_at)
                )
                inserted = conn.execute(table_of(Annotation).insert().values(values))
                key = inserted.inserted_primary_key
                assert key is not None
                return dataclasses.replace(record, id=int(key[0]))
        except IntegrityError:
            # A concurrent submit on the same base revision committed first: read what it wrote.
            with self._read() as s:
                conn = s.connection()
                external, scale = self._item_and_scale(conn, item_id, criterion_id)
                found = self._find_annotator(s, name)
                if found is None:
                    raise
                latest, existing = _revision_state(conn, found, item_id, criterion_id, revision)
                if existing is None:
                    raise
                text = canonical_label(scale, label, item=external)
                return _replayed(existing, name, external, latest, text, flag, comment)

    def _item_and_scale(self, conn: Any, item_id: int, criterion_id: int) -> tuple[str, Scale]:
        """The item's own id and the criterion's scale, checking both exist in the same project."""
        found = conn.execute(
            select(Item.external_id, Dataset.project_id)
            .join(Dataset, Dataset.id == Item.dataset_id)
            .where(Item.id == item_id)
        ).first()
        if found is None:
            raise NotFoundError(f"Item {item_id!r} does not exist.")
        external, project_id = found
        criterion = conn.execute(
            select(Criterion.project_id, Criterion.name, Criterion.scale).where(
                Criterion.id == criterion_id
            )
        ).first()
        if criterion is None:
            raise NotFoundError(f"Criterion {criterion_id!r} does not exist.")
        if criterion.project_id != project_id:
            raise NotFoundError(
                f"item {external!r}: criterion {criterion.name!r} belongs to another project.",
                item_id=external,
            )
        return str(external), Scale.from_dict(criterion.scale)

    def annotation_history(
        self, item_id: int, criterion_id: int, *, annotator: str | None = None
    ) -> list[AnnotationRecord]:
        """Every revision of an item's annotations on a criterion, by annotator then revision."""
        query = (
            select(Annotation, Annotator.name)
            .join(Annotator, Annotator.id == Annotation.annotator_id)
            .where(Annotation.item_id == item_id, Annotation.criterion_id == criterion_id)
            .order_by(Annotator.name, Annotation.revision)
        )
        if annotator is not None:
            query = query.where(Annotator.name == annotator.strip())
        with self._read() as s:
            return [_annotation_record(row, name) for row, name in s.execute(query).all()]

    def import_labels(
        self, dataset_id: int, criterion_id: int, labels_long: pd.DataFrame
    ) -> ImportSummary:
        """Import human labels in long form, atomically and in bulk (``source="import"``).

        Columns: ``item_id`` (the dataset's own ids), ``annotator``, ``label`` and optionally
        ``comment``, ``time_spent_s`` (seconds the annotator spent) and ``created_at`` (when the label
        was given; a timezone-naive time is read as UTC; default: now). Rows without a label are not imported (counted as ``missing``). Each imported
        label becomes the annotator's next revision of the item. An unknown item, a label off the
        scale or the same (annotator, item) twice raises an error naming the rows (numbered from 1)
        and imports nothing.
        """
        for column in ("item_id", "annotator", "label"):
            if column not in labels_long.columns:
                raise MissingColumnError(
                    f"The labels to import have no {column} column.", column=column
                )
        with self._read() as s:
            _dataset, criterion = self._dataset_and_criterion(s, dataset_id, criterion_id)
            scale = Scale.from_dict(criterion.scale)
            id_of = dict(
                s.execute(
                    select(Item.external_id, Item.id).where(Item.dataset_id == dataset_id)
                ).all()
            )
        has_comment = "comment" in labels_long.columns
        n_rows = len(labels_long)
        spent = (
            [None if is_missing(v) else float(v) for v in labels_long["time_spent_s"].tolist()]
            if "time_spent_s" in labels_long.columns
            else [None] * n_rows
        )
        now = utcnow()
        when = (
            [
                now if is_missing(v) else _as_utc(pd.Timestamp(v).to_pydatetime())
                for v in labels_long["created_at"].tolist()
            ]
            if "created_at" in labels_long.columns
            else [now] * n_rows
        )
        ids = [external_id(v) for v in labels_long["item_id"].tolist()]
        names = labels_long["annotator"].tolist()
        raw_labels = labels_long["label"].tolist()
        comments = labels_long["comment"].tolist() if has_comment else [None] * len(ids)

        unknown = [n + 1 for n, ext in enumerate(ids) if ext is None or ext not in id_of]
        if unknown:
            raise _item_error(
                DataError,
                f"Dataset {dataset_id} has no item {{item!r}} ({{rows}} of the labels); nothing was "
                "imported.",
                ids,
                unknown,
            )
        no_name = [n + 1 for n, a in enumerate(names) if is_missing(a) or not str(a).strip()]
        if no_name:
            raise DataError(
                f"The annotator is empty in {format_rows(no_name)}; nothing was imported.",
                column="annotator",
                rows=no_name,
            )
        # (row in the file, item pk, annotator, label text, comment)
        rows: list[tuple[int, int, str, str, str | None]] = []
        extra: dict[int, tuple[float | None, datetime]] = {}
        bad: list[int] = []
        first_error: LabelOutOfScaleError | None = None
        missing = 0
        for n, (ext, who, raw, note) in enumerate(
            zip(ids, names, raw_labels, comments, strict=True), start=1
        ):
            try:
                text = canonical_label(scale, raw, item=ext, row=n)
            except LabelOutOfScaleError as exc:
                bad.append(n)
                first_error = first_error or exc
                continue
            if text is None:
                missing += 1
                continue
            note_text = None if is_missing(note) else str(note)
            rows.append((n, id_of[str(ext)], str(who).strip(), text, note_text or None))
            extra[n] = (spent[n - 1], when[n - 1])
        if bad:
            assert first_error is not None
            raise LabelOutOfScaleError(
                f"{first_error.message}; {format_rows(bad)} are off the scale; nothing was imported.",
                column="label",
                rows=bad,
                item_id=first_error.item_id,
            )
        by_key: dict[tuple[int, str], list[int]] = {}
        for n, pk, who, _text, _note in rows:
            by_key.setdefault((pk, who), []).append(n)
        repeated = sorted(n for found in by_key.values() if len(found) > 1 for n in found)
        if repeated:
            raise _item_error(
                DuplicateIdError,
                "An annotator labels item {item!r} more than once ({rows}); nothing was imported.",
                ids,
                repeated,
            )

        annotators = tuple(sorted({who for _n, _pk, who, _t, _c in rows}))
        with self._write() as s:
            self._lock(s, LOCK_ANNOTATION_IMPORT, criterion_id)
            annotator_ids = {who: self._annotator_id(s, who) for who in annotators}
            latest: dict[tuple[int, int], int] = {}
            for group in chunks(list(annotator_ids.values()), IN_CHUNK):
                for a_id, i_id, rev in s.execute(
                    select(
                        Annotation.annotator_id, Annotation.item_id, func.max(Annotation.revision)
                    )
                    .join(Item, Item.id == Annotation.item_id)
                    .where(
                        Item.dataset_id == dataset_id,
                        Annotation.criterion_id == criterion_id,
                        Annotation.annotator_id.in_(group),
                    )
                    .group_by(Annotation.annotator_id, Annotation.item_id)
                ).all():
                    latest[(a_id, i_id)] = int(rev)
            bulk_insert(
                s,
                table_of(Annotation),
                [
                    "item_id",
                    "annotator_id",
                    "revision",
                    "label",
                    "comment",
                    "time_spent_s",
                    "created_at",
                ],
                (
                    (
                        pk,
                        annotator_ids[who],
                        latest.get((annotator_ids[who], pk), 0) + 1,
                        text,
                        note,
                        *extra[n],
                    )
                    for n, pk, who, text, note in rows
                ),
                constants={
                    "criterion_id": criterion_id,
                    "display_swapped": False,
                    "source": "import",
                },
            )
            conn = s.connection()
            for who, annotator_id in annotator_ids.items():
                imported = [pk for _n, pk, name, _t, _c in rows if name == who]
                _set_state(conn, annotator_id, criterion_id, imported, "labelled")
            self._analyze(s, table_of(Annotation), len(rows))
        return ImportSummary(
            rows=len(ids), imported=len(rows), missing=missing, annotators=annotators
        )

    def _latest_annotations(self, s: Session, dataset_id: int, criterion_id: int) -> list[Any]:
        """(external id, position, annotator, label, flag) of every latest annotation, item order."""
        newer = aliased(Annotation)
        query = (
            select(
                Item.external_id, Item.position, Annotator.name, Annotation.label, Annotation.flag
            )
            .join(Item, Item.id == Annotation.item_id)
            .join(Annotator, Annotator.id == Annotation.annotator_id)
            .where(
                Item.dataset_id == dataset_id,
                Annotation.criterion_id == criterion_id,
                ~select(newer.id)
                .where(
                    newer.annotator_id == Annotation.annotator_id,
                    newer.item_id == Annotation.item_id,
                    newer.criterion_id == Annotation.criterion_id,
                    newer.revision > Annotation.revision,
                )
                .exists(),
            )
            .order_by(Item.position, Annotator.name)
        )
        return list(s.execute(query).all())

    def annotation_matrix(self, dataset_id: int, criterion_id: int) -> pd.DataFrame:
        """Human labels of a criterion: one row per item with a label, one column per annotator.

        The index is the item's own id (``item_id``), in dataset order; columns are annotator names,
        sorted. A cell holds the annotator's latest label parsed back onto the scale (a float for
        numeric scales, else the word); it is missing when they gave none or their latest revision is
        a skip.
        """
        with self._read() as s:
            _dataset, criterion = self._dataset_and_criterion(s, dataset_id, criterion_id)
            scale = Scale.from_dict(criterion.scale)
            rows = self._latest_annotations(s, dataset_id, criterion_id)
        labelled = [(ext, who, scale.coerce(label)) for ext, _p, who, label, _f in rows if label]
        if not labelled:
            empty = pd.DataFrame(index=pd.Index([], name="item_id", dtype=object))
            empty.columns.name = "annotator"
            return empty
        long = pd.DataFrame(labelled, columns=["item_id", "annotator", "label"])
        order = list(dict.fromkeys(long["item_id"]))
        matrix = long.pivot(index="item_id", columns="annotator", values="label")
        matrix = matrix.reindex(index=order, columns=sorted(matrix.columns))
        if scale.is_numeric:
            matrix = matrix.astype(float)
        else:
            matrix = matrix.astype(object).where(matrix.notna(), None)
        matrix.index.name = "item_id"
        matrix.columns.name = "annotator"
        return matrix

    def annotator_label_counts(self, dataset_id: int, criterion_id: int) -> pd.DataFrame:
        """Per annotator: how often they gave each label of the scale, how many they skipped, total.

        Counts latest revisions. Rows are annotators (sorted); columns the scale's labels as displayed,
        then ``skipped`` and ``total``.
        """
        with self._read() as s:
            _dataset, criterion = self._dataset_and_criterion(s, dataset_id, criterion_id)
            scale = Scale.from_dict(criterion.scale)
            rows = self._latest_annotations(s, dataset_id, criterion_id)
        columns = [*scale.display_labels, "skipped", "total"]
        counts: dict[str, dict[str, int]] = {}
        for _ext, _pos, who, label, _flag in rows:
            row = counts.setdefault(who, dict.fromkeys(columns, 0))
            row[label if label is not None else "skipped"] += 1
            row["total"] += 1
        frame = pd.DataFrame.from_dict(counts, orient="index", columns=columns).sort_index()
        frame.index.name = "annotator"
        return frame.astype(int)

    def export_annotations(
        self,
        *,
        project_id: int | None = None,
        dataset_id: int | None = None,
        criterion_id: int | None = None,
    ) -> pd.DataFrame:
        """Every revision of every annotation of a project, a dataset and/or a criterion.

        Columns: dataset, dataset_version, item_id (the file's id), criterion, annotator, revision,
        latest (whether this revision counts), label, flag, comment, time_spent_s, display_swapped,
        source, created_at. Sorted by dataset, item order, criterion, annotator, revision.
        """
        if project_id is None and dataset_id is None and criterion_id is None:
            raise StoreError("Say which project, dataset or criterion to export.")
        query = (
            select(
                Dataset.name,
                Dataset.version,
                Item.external_id,
                Criterion.name,
                Annotator.name,
                Annotation.revision,
                Annotation.label,
                Annotation.flag,
                Annotation.comment,
                Annotation.time_spent_s,
                Annotation.display_swapped,
                Annotation.source,
                Annotation.created_at,
                Annotation.item_id,
                Annotation.annotator_id,
                Annotation.criterion_id,
            )
            .join(Item, Item.id == Annotation.item_id)
            .join(Dataset, Dataset.id == Item.dataset_id)
            .join(Criterion, Criterion.id == Annotation.criterion_id)
            .join(Annotator, Annotator.id == Annotation.annotator_id)
            .order_by(
                Dataset.name,
                Dataset.version,
                Item.position,
                Criterion.name,
                Annotator.name,
                Annotation.revision,
            )
        )
        if project_id is not None:
            query = query.where(Dataset.project_id == project_id)
        if dataset_id is not None:
            query = query.where(Item.dataset_id == dataset_id)
        if criterion_id is not None:
            query = query.where(Annotation.criterion_id == criterion_id)
        with self._read() as s:
            rows = s.execute(query).all()
        columns = [
            "dataset",
            "dataset_version",
            "item_id",
            "criterion",
            "annotator",
            "revision",
            "label",
            "flag",
            "comment",
            "time_spent_s",
            "display_swapped",
            "source",
            "created_at",
        ]
        frame = pd.DataFrame([tuple(r) for r in rows], columns=[*columns, "_i", "_a", "_c"])
        if frame.empty:
            return frame[columns]
        last = frame.groupby(["_i", "_a", "_c"])["revision"].transform("max")
        frame.insert(6, "latest", frame["revision"] == last)
        return frame.drop(columns=["_i", "_a", "_c"]).reset_index(drop=True)

    # --- helpers ----------------------------------------------------------------------------

    def _dataset_and_criterion(
        self, s: Session, dataset_id: int, criterion_id: int
    ) -> tuple[Dataset, Criterion]:
        dataset = self._get(s, Dataset, dataset_id, "Dataset")
        criterion = self._get(s, Criterion, criterion_id, "Criterion")
        if criterion.project_id != dataset.project_id:
            raise NotFoundError(
                f"Criterion {criterion.name!r} belongs to another project than dataset "
                f"{dataset.name!r}."
            )
        return dataset, criterion


def _revision_state(
    conn: Any, annotator_id: int, item_id: int, criterion_id: int, revision: int
) -> tuple[int, Any]:
    """(latest revision, the row at ``revision`` or None) of one annotator's item on a criterion."""
    key = (
        Annotation.annotator_id == annotator_id,
        Annotation.item_id == item_id,
        Annotation.criterion_id == criterion_id,
    )
    latest = int(conn.execute(select(func.max(Annotation.revision)).where(*key)).scalar() or 0)
    existing = None
    if revision <= latest:
        existing = conn.execute(
            select(table_of(Annotation)).where(*key, Annotation.revision == revision)
        ).first()
    return latest, existing


def _replayed(
    existing: Any,
    annotator: str,
    item: str,
    latest: int,
    label: str | None,
    flag: str | None,
    comment: str | None,
) -> AnnotationRecord:
    """The existing revision when a submit is a replay of the one that wrote it; else a conflict."""
    record = _annotation_record(existing, annotator)
    if (existing.label, existing.flag, existing.comment) == (label, flag, comment):
        return record
    raise RevisionConflictError(
        f"item {item!r}: revision {existing.revision} was already saved with another answer "
        f"(the latest revision is {latest}); reload the item and submit again.",
        item_id=item,
        latest=record,
    )


def _item_error(
    kind: type[DataError], message: str, ids: list[str | None], rows: list[int]
) -> DataError:
    """An error about the items of some rows (from 1): ``message`` names the first item and the rows."""
    first = ids[rows[0] - 1]
    text = message.format(item=first, rows=format_rows(rows))
    return kind(text, column="item_id", rows=rows, item_id=first)


def _as_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
