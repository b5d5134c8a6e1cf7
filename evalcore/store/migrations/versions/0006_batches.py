"""Batch mode: the provider batches of each run, and batch prices.

``judge_run_batches`` records every provider batch of a batch-mode run (its input file, the batch id
and the last status seen) as soon as each exists, so a resumed run never submits one twice;
``model_batch_prices`` holds a model's optional batch price beside its live one.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _text(name: str, length: int) -> sa.Column[object]:
    return sa.Column(name, sa.String(length), nullable=False)


def upgrade() -> None:
    op.create_table(
        "judge_run_batches",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("part", sa.Integer(), nullable=False),
        _text("path", 1000),
        sa.Column("requests", sa.Integer(), nullable=False),
        _text("file_id", 200),
        _text("batch_id", 200),
        _text("status", 32),
        sa.Column("completed", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        _text("output_file_id", 200),
        _text("error_file_id", 200),
        _text("error", 1000),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_judge_run_batches"),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["judge_runs.id"],
            name="fk_judge_run_batches_run_id_judge_runs",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint(
            "run_id", "round", "part", name="uq_judge_run_batches_run_id_round_part"
        ),
    )
    op.create_table(
        "model_batch_prices",
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("input_per_mtok", sa.Float(), nullable=False),
        sa.Column("output_per_mtok", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("model", name="pk_model_batch_prices"),
    )


def downgrade() -> None:
    op.drop_table("model_batch_prices")
    op.drop_table("judge_run_batches")
