"""Core schema: projects, datasets, items, criteria, annotators, assignments, annotations.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _created_at() -> sa.Column[object]:
    return sa.Column("created_at", sa.DateTime(timezone=True), nullable=False)


def upgrade() -> None:
    op.create_table(
        "projects",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        _created_at(),
        sa.PrimaryKeyConstraint("id", name="pk_projects"),
        sa.UniqueConstraint("name", name="uq_projects_name"),
    )
    op.create_table(
        "annotators",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        _created_at(),
        sa.PrimaryKeyConstraint("id", name="pk_annotators"),
        sa.UniqueConstraint("name", name="uq_annotators_name"),
    )
    op.create_table(
        "datasets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("source_filename", sa.String(500), nullable=True),
        sa.Column("layout", sa.String(50), nullable=True),
        sa.Column("metadata_columns", sa.JSON(), nullable=False),
        sa.Column("n_items", sa.Integer(), nullable=False),
        _created_at(),
        sa.PrimaryKeyConstraint("id", name="pk_datasets"),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name="fk_datasets_project_id_projects",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint(
            "project_id", "name", "version", name="uq_datasets_project_id_name_version"
        ),
        sa.CheckConstraint("kind IN ('pointwise', 'pairwise')", name="ck_datasets_kind"),
        sa.CheckConstraint("version >= 1", name="ck_datasets_version"),
    )
    op.create_table(
        "items",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("external_id", sa.String(500), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=True),
        sa.Column("response", sa.Text(), nullable=True),
        sa.Column("context", sa.Text(), nullable=True),
        sa.Column("reference", sa.Text(), nullable=True),
        sa.Column("response_a", sa.Text(), nullable=True),
        sa.Column("response_b", sa.Text(), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=False),
        _created_at(),
        sa.PrimaryKeyConstraint("id", name="pk_items"),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["datasets.id"],
            name="fk_items_dataset_id_datasets",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("dataset_id", "external_id", name="uq_items_dataset_id_external_id"),
        sa.UniqueConstraint("dataset_id", "position", name="uq_items_dataset_id_position"),
    )
    op.create_table(
        "criteria",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("scale", sa.JSON(), nullable=False),
        sa.Column("rubric", sa.Text(), nullable=False),
        _created_at(),
        sa.PrimaryKeyConstraint("id", name="pk_criteria"),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name="fk_criteria_project_id_projects",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("project_id", "name", name="uq_criteria_project_id_name"),
        sa.CheckConstraint("kind IN ('pointwise', 'pairwise')", name="ck_criteria_kind"),
    )
    op.create_table(
        "assignments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("criterion_id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("swapped", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        _created_at(),
        sa.PrimaryKeyConstraint("id", name="pk_assignments"),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["datasets.id"],
            name="fk_assignments_dataset_id_datasets",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["criterion_id"],
            ["criteria.id"],
            name="fk_assignments_criterion_id_criteria",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["annotator_id"],
            ["annotators.id"],
            name="fk_assignments_annotator_id_annotators",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["item_id"], ["items.id"], name="fk_assignments_item_id_items", ondelete="CASCADE"
        ),
        sa.UniqueConstraint(
            "annotator_id",
            "item_id",
            "criterion_id",
            name="uq_assignments_annotator_id_item_id_criterion_id",
        ),
        sa.UniqueConstraint(
            "annotator_id",
            "dataset_id",
            "criterion_id",
            "position",
            name="uq_assignments_annotator_id_dataset_id_criterion_id_position",
        ),
        sa.CheckConstraint("state IN ('open', 'labelled', 'skipped')", name="ck_assignments_state"),
    )
    op.create_index(
        "ix_assignments_dataset_id_criterion_id_item_id",
        "assignments",
        ["dataset_id", "criterion_id", "item_id"],
    )
    op.create_index(
        "ix_assignments_queue_state",
        "assignments",
        ["annotator_id", "dataset_id", "criterion_id", "state", "position"],
    )
    op.create_table(
        "annotations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("criterion_id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("label", sa.String(200), nullable=True),
        sa.Column("flag", sa.String(16), nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("time_spent_s", sa.Float(), nullable=True),
        sa.Column("display_swapped", sa.Boolean(), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        _created_at(),
        sa.PrimaryKeyConstraint("id", name="pk_annotations"),
        sa.ForeignKeyConstraint(
            ["item_id"], ["items.id"], name="fk_annotations_item_id_items", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["criterion_id"],
            ["criteria.id"],
            name="fk_annotations_criterion_id_criteria",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["annotator_id"],
            ["annotators.id"],
            name="fk_annotations_annotator_id_annotators",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint(
            "annotator_id",
            "item_id",
            "criterion_id",
            "revision",
            name="uq_annotations_annotator_id_item_id_criterion_id_revision",
        ),
        sa.CheckConstraint("revision >= 1", name="ck_annotations_revision"),
        sa.CheckConstraint(
            "flag IS NULL OR flag IN ('skip', 'unsure', 'broken')", name="ck_annotations_flag"
        ),
        sa.CheckConstraint("source IN ('ui', 'import')", name="ck_annotations_source"),
        sa.CheckConstraint(
            "label IS NOT NULL OR flag IS NOT NULL", name="ck_annotations_label_or_flag"
        ),
    )
    op.create_index(
        "ix_annotations_criterion_id_item_id", "annotations", ["criterion_id", "item_id"]
    )


def downgrade() -> None:
    op.drop_index("ix_annotations_criterion_id_item_id", table_name="annotations")
    op.drop_table("annotations")
    op.drop_index(
        "ix_assignments_queue_state",
        table_name="assignments",
    )
    op.drop_index("ix_assignments_dataset_id_criterion_id_item_id", table_name="assignments")
    op.drop_table("assignments")
    op.drop_table("criteria")
    op.drop_table("items")
    op.drop_table("datasets")
    op.drop_table("annotators")
    op.drop_table("projects")
