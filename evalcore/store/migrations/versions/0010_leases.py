"""Leases: who carries out a run or an optimisation, and until when.

``judge_runs`` and ``improve_jobs`` get ``lease_owner`` (the process and worker holding the job:
host, process id, a nonce drawn when the process started, and the worker) and
``lease_expires_at`` (when another worker may take the job over unless the owner renews it). A
run killed with its server is taken over as soon as its lease expires, or at once by a new process
on the same host that sees the owner's process is gone.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLES = ("judge_runs", "improve_jobs")


def upgrade() -> None:
    for table in _TABLES:
        op.add_column(table, sa.Column("lease_owner", sa.String(200), nullable=True))
        op.add_column(
            table, sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True)
        )


def downgrade() -> None:
    for table in _TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("lease_expires_at")
            batch.drop_column("lease_owner")
