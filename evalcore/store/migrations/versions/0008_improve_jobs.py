"""Optimisation jobs: what an "Improve" run was asked, how far it got, and its report.

``improve_jobs`` holds one row per optimisation of a template version on a dataset and criterion:
its settings, its progress (phase, done/total, requests, cost so far), its status, and the report
as JSON once it ended.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_PARENTS = (
    ("project_id", "projects"),
    ("dataset_id", "datasets"),
    ("criterion_id", "criteria"),
    ("template_version_id", "template_versions"),
)


def upgrade() -> None:
    op.create_table(
        "improve_jobs",
        sa.Column("id", sa.Integer(), nullable=False),
        *(sa.Column(column, sa.Integer(), nullable=False) for column, _ in _PARENTS),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("progress", sa.JSON(), nullable=False),
        sa.Column("report", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("author", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_improve_jobs"),
        *(
            sa.ForeignKeyConstraint(
                [column],
                [f"{table}.id"],
                name=f"fk_improve_jobs_{column}_{table}",
                ondelete="CASCADE",
            )
            for column, table in _PARENTS
        ),
        sa.CheckConstraint(
            "status IN ('pending', 'running', 'cancelling', 'done', 'cancelled', 'failed')",
            name="ck_improve_jobs_status",
        ),
    )
    op.create_index(
        "ix_improve_jobs_dataset_id_created_at", "improve_jobs", ["dataset_id", "created_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_improve_jobs_dataset_id_created_at", table_name="improve_jobs")
    op.drop_table("improve_jobs")
