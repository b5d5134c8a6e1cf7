"""Splits: the named dev/test split of a dataset's labelled items for one criterion.

``splits`` keeps each split (its seed, test share and the two lists of item ids), so successive
optimisations of a judge are proved on the same test items.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "splits",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("criterion_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("test_share", sa.Float(), nullable=False),
        sa.Column("dev", sa.JSON(), nullable=False),
        sa.Column("test", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_splits"),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["datasets.id"],
            name="fk_splits_dataset_id_datasets",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["criterion_id"],
            ["criteria.id"],
            name="fk_splits_criterion_id_criteria",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint(
            "dataset_id", "criterion_id", "name", name="uq_splits_dataset_id_criterion_id_name"
        ),
    )


def downgrade() -> None:
    op.drop_table("splits")
