"""Confidence, juries and queue orders.

- ``judge_results`` gains ``probabilities`` (JSON: label text → probability over the criterion's
  scale) and ``confidence`` (the probability of the chosen label).
- ``judge_runs.source`` may be ``'jury'``: a run combined from other runs' results, whose members
  (and their weights) are rows of the new ``jury_members``.
- ``queue_orders`` and ``queue_order_items``: a named order of a dataset's items for one criterion's
  annotation queue (escalation, "label next"), with the reason annotators never see; at most one
  order per (dataset, criterion) is active.

On SQLite, widening the CHECK of ``judge_runs.source`` cannot go through a batch copy of the table:
dropping the old table with foreign keys on would delete every result through ``ON DELETE
CASCADE``. It uses SQLite's documented way of changing a CHECK constraint in place instead (edit
the table's SQL in ``sqlite_schema`` under ``writable_schema`` and bump ``schema_version``, in the
migration's transaction), which rewrites no row.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD_SOURCES = "source IN ('run', 'import')"
_NEW_SOURCES = "source IN ('run', 'import', 'jury')"


def _set_source_check(old: str, new: str) -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        found = bind.execute(
            sa.text("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'judge_runs'")
        ).scalar_one()
        if old not in found:
            raise RuntimeError(f"judge_runs has no CHECK ({old}) to change")
        version = int(bind.execute(sa.text("PRAGMA schema_version")).scalar_one())
        bind.execute(sa.text("PRAGMA writable_schema = ON"))
        bind.execute(
            sa.text(
                "UPDATE sqlite_master SET sql = :sql WHERE type = 'table' AND name = 'judge_runs'"
            ),
            {"sql": found.replace(old, new)},
        )
        bind.execute(sa.text(f"PRAGMA schema_version = {version + 1}"))
        bind.execute(sa.text("PRAGMA writable_schema = OFF"))
        return
    op.drop_constraint("ck_judge_runs_source", "judge_runs", type_="check")
    op.create_check_constraint("ck_judge_runs_source", "judge_runs", new)


def upgrade() -> None:
    op.add_column("judge_results", sa.Column("probabilities", sa.JSON(), nullable=True))
    op.add_column("judge_results", sa.Column("confidence", sa.Float(), nullable=True))
    _set_source_check(_OLD_SOURCES, _NEW_SOURCES)
    op.create_table(
        "jury_members",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("jury_run_id", sa.Integer(), nullable=False),
        sa.Column("member_run_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("weight", sa.Float(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_jury_members"),
        sa.ForeignKeyConstraint(
            ["jury_run_id"],
            ["judge_runs.id"],
            name="fk_jury_members_jury_run_id_judge_runs",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["member_run_id"],
            ["judge_runs.id"],
            name="fk_jury_members_member_run_id_judge_runs",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint(
            "jury_run_id", "member_run_id", name="uq_jury_members_jury_run_id_member_run_id"
        ),
        sa.CheckConstraint("weight > 0", name="ck_jury_members_weight"),
    )
    op.create_table(
        "queue_orders",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("criterion_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("author", sa.String(200), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("n_items", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_queue_orders"),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["datasets.id"],
            name="fk_queue_orders_dataset_id_datasets",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["criterion_id"],
            ["criteria.id"],
            name="fk_queue_orders_criterion_id_criteria",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint(
            "dataset_id",
            "criterion_id",
            "name",
            name="uq_queue_orders_dataset_id_criterion_id_name",
        ),
    )
    op.create_table(
        "queue_order_items",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("order_id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_queue_order_items"),
        sa.ForeignKeyConstraint(
            ["order_id"],
            ["queue_orders.id"],
            name="fk_queue_order_items_order_id_queue_orders",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["item_id"],
            ["items.id"],
            name="fk_queue_order_items_item_id_items",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("order_id", "rank", name="uq_queue_order_items_order_id_rank"),
        sa.UniqueConstraint("order_id", "item_id", name="uq_queue_order_items_order_id_item_id"),
    )


def downgrade() -> None:
    op.drop_table("queue_order_items")
    op.drop_table("queue_orders")
    op.drop_table("jury_members")
    op.execute("DELETE FROM judge_runs WHERE source = 'jury'")
    _set_source_check(_NEW_SOURCES, _OLD_SOURCES)
    with op.batch_alter_table("judge_results") as batch:
        batch.drop_column("confidence")
        batch.drop_column("probabilities")
