"""Sign-in hardening: OIDC identities bound to accounts, and sign-in limits held in the database.

- ``users.oidc_issuer`` / ``users.oidc_subject``: the identity provider's issuer and subject an
  account is bound to (both NULL for an account never used with single sign-on); the pair is unique.
- ``sign_in_limits``: one row per (scope, account, client) with the attempts in the current window,
  the lock and how many attempts the lock refused, and the last success of a pair. ``scope`` is
  ``pair`` (one name from one client address), ``client`` (every name from one address; account is
  ``''``) or ``account`` (one name from every address; client is ``''``).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _timestamp(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.add_column("users", sa.Column("oidc_issuer", sa.String(500), nullable=True))
    op.add_column("users", sa.Column("oidc_subject", sa.String(255), nullable=True))
    op.create_index(
        "uq_users_oidc_issuer_oidc_subject",
        "users",
        ["oidc_issuer", "oidc_subject"],
        unique=True,
    )
    op.create_table(
        "sign_in_limits",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("scope", sa.String(8), nullable=False),
        sa.Column("account", sa.String(200), nullable=False),
        sa.Column("client", sa.String(100), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        _timestamp("window_start"),
        _timestamp("locked_at", nullable=True),
        _timestamp("locked_until", nullable=True),
        sa.Column("refused", sa.Integer(), nullable=False),
        _timestamp("last_success_at", nullable=True),
        _timestamp("updated_at"),
        _timestamp("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_sign_in_limits"),
        sa.UniqueConstraint(
            "scope", "account", "client", name="uq_sign_in_limits_scope_account_client"
        ),
        sa.CheckConstraint(
            "scope IN ('pair', 'client', 'account')", name="ck_sign_in_limits_scope"
        ),
    )
    op.create_index("ix_sign_in_limits_updated_at", "sign_in_limits", ["updated_at"])


def downgrade() -> None:
    op.drop_index("ix_sign_in_limits_updated_at", table_name="sign_in_limits")
    op.drop_table("sign_in_limits")
    op.drop_index("uq_users_oidc_issuer_oidc_subject", table_name="users")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("oidc_subject")
        batch.drop_column("oidc_issuer")
