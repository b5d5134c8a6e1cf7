"""Queue claims: an assignment can be given back to the pool, and carries the time of its lease.

``claimed_at`` is when the claim was made or last renewed (by a submit of the annotator in the same
queue); an open claim older than the project's lease may be taken over. The new state ``released``
marks a claim that went back to the pool unanswered: the row stays, so that the annotator's queue
positions stay contiguous and a late answer is still accepted.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD_STATES = "state IN ('open', 'labelled', 'skipped')"
_NEW_STATES = "state IN ('open', 'labelled', 'skipped', 'released')"


def upgrade() -> None:
    op.add_column("assignments", sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True))
    op.execute("UPDATE assignments SET claimed_at = created_at")
    with op.batch_alter_table("assignments") as batch:
        batch.alter_column("claimed_at", existing_type=sa.DateTime(timezone=True), nullable=False)
        batch.drop_constraint("ck_assignments_state", type_="check")
        batch.create_check_constraint(op.f("ck_assignments_state"), _NEW_STATES)


def downgrade() -> None:
    op.execute("DELETE FROM assignments WHERE state = 'released'")
    with op.batch_alter_table("assignments") as batch:
        batch.drop_constraint("ck_assignments_state", type_="check")
        batch.create_check_constraint(op.f("ck_assignments_state"), _OLD_STATES)
        batch.drop_column("claimed_at")
