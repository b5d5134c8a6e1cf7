"""Judge tables: templates and their versions, endpoints, model prices, runs, results, reply cache.

Revision ID: 0002
Revises: 0001
Create Date: 2025-01-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _timestamp(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "judge_templates",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("criterion_id", sa.Integer(), nullable=False),
        _timestamp("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_judge_templates"),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name="fk_judge_templates_project_id_projects",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["criterion_id"],
            ["criteria.id"],
            name="fk_judge_templates_criterion_id_criteria",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("project_id", "name", name="uq_judge_templates_project_id_name"),
    )
    op.create_table(
        "template_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("template_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("content", sa.JSON(), nullable=False),
        sa.Column("author", sa.String(200), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        _timestamp("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_template_versions"),
        sa.ForeignKeyConstraint(
            ["template_id"],
            ["judge_templates.id"],
            name="fk_template_versions_template_id_judge_templates",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint(
            "template_id", "number", name="uq_template_versions_template_id_number"
        ),
        sa.CheckConstraint("number >= 1", name="ck_template_versions_number"),
    )
    op.create_index("ix_template_versions_content_hash", "template_versions", ["content_hash"])
    op.create_table(
        "endpoints",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("base_url", sa.String(1000), nullable=True),
        sa.Column("api_key_env", sa.String(200), nullable=True),
        sa.Column("api_version", sa.String(50), nullable=True),
        sa.Column("default_model", sa.String(200), nullable=True),
        sa.Column("extra", sa.JSON(), nullable=False),
        _timestamp("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_endpoints"),
        sa.UniqueConstraint("name", name="uq_endpoints_name"),
        sa.CheckConstraint("kind IN ('openai', 'azure')", name="ck_endpoints_kind"),
    )
    op.create_table(
        "model_prices",
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("input_per_mtok", sa.Float(), nullable=False),
        sa.Column("output_per_mtok", sa.Float(), nullable=False),
        _timestamp("created_at"),
        _timestamp("updated_at"),
        sa.PrimaryKeyConstraint("model", name="pk_model_prices"),
    )
    op.create_table(
        "judge_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("criterion_id", sa.Integer(), nullable=False),
        sa.Column("template_version_id", sa.Integer(), nullable=True),
        sa.Column("name", sa.String(300), nullable=False),
        sa.Column("model", sa.String(200), nullable=True),
        sa.Column("endpoint_id", sa.Integer(), nullable=True),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("order_mode", sa.String(16), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("n_planned", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        _timestamp("heartbeat_at", nullable=True),
        _timestamp("started_at", nullable=True),
        _timestamp("finished_at", nullable=True),
        _timestamp("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_judge_runs"),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name="fk_judge_runs_project_id_projects",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["datasets.id"],
            name="fk_judge_runs_dataset_id_datasets",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["criterion_id"],
            ["criteria.id"],
            name="fk_judge_runs_criterion_id_criteria",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["template_version_id"],
            ["template_versions.id"],
            name="fk_judge_runs_template_version_id_template_versions",
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["endpoint_id"],
            ["endpoints.id"],
            name="fk_judge_runs_endpoint_id_endpoints",
            ondelete="SET NULL",
        ),
        sa.CheckConstraint(
            "order_mode IN ('single', 'both', 'flip')", name="ck_judge_runs_order_mode"
        ),
        sa.CheckConstraint(
            "status IN ('pending', 'running', 'cancelling', 'cancelled', 'done', 'failed',"
            " 'interrupted')",
            name="ck_judge_runs_status",
        ),
        sa.CheckConstraint("source IN ('run', 'import')", name="ck_judge_runs_source"),
    )
    op.create_index(
        "ix_judge_runs_dataset_id_criterion_id", "judge_runs", ["dataset_id", "criterion_id"]
    )
    op.create_index("ix_judge_runs_status", "judge_runs", ["status"])
    op.create_table(
        "judge_results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("order", sa.String(2), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("label", sa.String(200), nullable=True),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("raw", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("tokens_in", sa.Integer(), nullable=True),
        sa.Column("tokens_out", sa.Integer(), nullable=True),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("latency_s", sa.Float(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("cache_key", sa.String(64), nullable=True),
        sa.Column("cached", sa.Boolean(), nullable=False),
        sa.Column("samples", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("details", sa.JSON(none_as_null=True), nullable=True),
        _timestamp("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_judge_results"),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["judge_runs.id"],
            name="fk_judge_results_run_id_judge_runs",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["item_id"], ["items.id"], name="fk_judge_results_item_id_items", ondelete="CASCADE"
        ),
        sa.UniqueConstraint(
            "run_id", "item_id", "order", name="uq_judge_results_run_id_item_id_order"
        ),
        sa.CheckConstraint("\"order\" IN ('AB', 'BA')", name="ck_judge_results_order"),
        sa.CheckConstraint(
            "status IN ('ok', 'unparsed', 'failed')", name="ck_judge_results_status"
        ),
    )
    op.create_table(
        "judge_cache",
        sa.Column("key", sa.String(128), nullable=False),
        sa.Column("model", sa.String(200), nullable=True),
        sa.Column("response", sa.JSON(), nullable=False),
        _timestamp("created_at"),
        sa.PrimaryKeyConstraint("key", name="pk_judge_cache"),
    )


def downgrade() -> None:
    op.drop_table("judge_cache")
    op.drop_table("judge_results")
    op.drop_index("ix_judge_runs_status", table_name="judge_runs")
    op.drop_index("ix_judge_runs_dataset_id_criterion_id", table_name="judge_runs")
    op.drop_table("judge_runs")
    op.drop_table("model_prices")
    op.drop_table("endpoints")
    op.drop_index("ix_template_versions_content_hash", table_name="template_versions")
    op.drop_table("template_versions")
    op.drop_table("judge_templates")
