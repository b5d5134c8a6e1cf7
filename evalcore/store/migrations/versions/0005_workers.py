"""Workers: run chunks, worker heartbeats, and (on PostgreSQL) the task queue's own schema.

``judge_run_chunks`` splits a run into the slices that task-queue jobs judge; ``judge_workers`` holds
each ``evalcore worker`` process with its heartbeat and what it is doing. On PostgreSQL the task
queue (procrastinate) gets its tables, functions and triggers in a schema of its own,
``evalcore_queue``, so they never mix with the store's tables; it is created once, here, under the
migration lock. SQLite has no task queue (runs stay in the app's process there).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The PostgreSQL schema that holds the task queue (as ``evalcore.runs.QUEUE_SCHEMA``).
QUEUE_SCHEMA = "evalcore_queue"


def _timestamp(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "judge_run_chunks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("chunk", sa.Integer(), nullable=False),
        sa.Column("item_ids", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("job_id", sa.BigInteger(), nullable=True),
        sa.Column("worker", sa.String(200), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        _timestamp("started_at", nullable=True),
        _timestamp("finished_at", nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_judge_run_chunks"),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["judge_runs.id"],
            name="fk_judge_run_chunks_run_id_judge_runs",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("run_id", "chunk", name="uq_judge_run_chunks_run_id_chunk"),
        sa.CheckConstraint(
            "state IN ('pending', 'running', 'done', 'cancelled', 'failed')",
            name="ck_judge_run_chunks_state",
        ),
    )
    op.create_table(
        "judge_workers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("concurrency", sa.Integer(), nullable=False),
        _timestamp("started_at"),
        _timestamp("heartbeat_at"),
        _timestamp("stopped_at", nullable=True),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.Column("chunk", sa.Integer(), nullable=True),
        sa.Column("items_done", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_judge_workers"),
    )
    op.create_index("ix_judge_workers_heartbeat_at", "judge_workers", ["heartbeat_at"])
    if op.get_bind().dialect.name == "postgresql":
        _create_queue_schema()


def _create_queue_schema() -> None:
    """procrastinate's schema, in :data:`QUEUE_SCHEMA` (skipped when the schema is there)."""
    from procrastinate.schema import SchemaManager

    bind = op.get_bind()
    present = bind.exec_driver_sql(
        f"SELECT to_regclass('{QUEUE_SCHEMA}.procrastinate_jobs') IS NOT NULL"
    ).scalar()
    if present:
        return
    previous = bind.exec_driver_sql("SELECT current_setting('search_path')").scalar()
    bind.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {QUEUE_SCHEMA}")
    bind.exec_driver_sql(f"SET LOCAL search_path TO {QUEUE_SCHEMA}")
    bind.exec_driver_sql(SchemaManager.get_schema().replace("%", "%%"))
    bind.execute(sa.text("SELECT set_config('search_path', :path, true)"), {"path": previous})


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"DROP SCHEMA IF EXISTS {QUEUE_SCHEMA} CASCADE")
    op.drop_index("ix_judge_workers_heartbeat_at", table_name="judge_workers")
    op.drop_table("judge_workers")
    op.drop_table("judge_run_chunks")
