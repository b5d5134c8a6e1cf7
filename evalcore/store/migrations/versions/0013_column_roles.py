"""What each column of a dataset's file held: ``datasets.column_roles``.

A JSON object, column name → role (``item_field``, ``metadata``, ``human``, ``judge``, ``reason``,
``ignore`` or an item field's own name), written when a file is imported through its column roles.
The judge's template variables and what annotators see are the canonical fields plus the columns
marked ``item_field``; a dataset saved before this revision (NULL) keeps every extra column as an
item field, as it did.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("datasets") as batch:
        batch.add_column(sa.Column("column_roles", sa.JSON(), nullable=True))


def downgrade() -> None:
    # In place on both databases (SQLite 3.35 and later drops a column itself): a batch copy of the
    # table would drop the old one, and with foreign keys on, ON DELETE CASCADE would take every
    # item, label and run of every dataset with it.
    op.drop_column("datasets", "column_roles")
