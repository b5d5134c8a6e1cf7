"""Projects, criteria and annotators."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from evalcore.errors import ConfigError, NotFoundError, StoreError
from evalcore.labels import Scale
from evalcore.store._base import StoreBase, jsonable, row_record
from evalcore.store._models import Annotator, Criterion, Project
from evalcore.store._records import (
    DEFAULT_THRESHOLDS,
    AnnotatorRecord,
    CriterionRecord,
    DatasetKind,
    ProjectRecord,
)

__all__ = ["ProjectsMixin", "criterion_record", "project_record"]

_KINDS = ("pointwise", "pairwise")


def project_record(row: Project) -> ProjectRecord:
    return row_record(ProjectRecord, row, settings=normalize_settings(row.settings or {}))


def criterion_record(row: Criterion) -> CriterionRecord:
    return row_record(CriterionRecord, row, scale=Scale.from_dict(row.scale))


def annotator_record(row: Annotator) -> AnnotatorRecord:
    return row_record(AnnotatorRecord, row)


def normalize_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Project settings with defaults filled in and checked.

    ``annotators_per_item`` is a whole number ≥ 1 (default 1); ``thresholds`` maps metric names to
    numbers (default :data:`DEFAULT_THRESHOLDS`). Other keys are kept as they are.
    """
    merged: dict[str, Any] = {
        "annotators_per_item": 1,
        "thresholds": dict(DEFAULT_THRESHOLDS),
        **jsonable(dict(settings)),
    }
    k = merged["annotators_per_item"]
    whole = isinstance(k, numbers.Real) and not isinstance(k, bool) and float(k).is_integer()
    if not whole or float(k) < 1:
        raise ConfigError(f"annotators_per_item must be a whole number of at least 1, not {k!r}.")
    merged["annotators_per_item"] = int(float(k))
    thresholds = merged["thresholds"]
    if not isinstance(thresholds, Mapping):
        raise ConfigError(f"thresholds must map metric names to numbers, not {thresholds!r}.")
    clean: dict[str, float] = {}
    for metric, value in thresholds.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ConfigError(f"threshold {metric!r} must be a number, not {value!r}.")
        clean[str(metric)] = float(value)
    merged["thresholds"] = clean
    return merged


class ProjectsMixin(StoreBase):
    # --- projects ---------------------------------------------------------------------------

    def create_project(
        self, name: str, *, description: str = "", settings: Mapping[str, Any] | None = None
    ) -> ProjectRecord:
        """Create a project; its name must be new. ``settings`` are checked and completed."""
        name = _required_name(name, "A project")
        clean = normalize_settings(settings or {})
        try:
            with self._write() as s:
                if s.scalar(select(Project.id).where(Project.name == name)) is not None:
                    raise StoreError(f"A project named {name!r} already exists.")
                row = Project(name=name, description=description or "", settings=clean)
                s.add(row)
                s.flush()
                return project_record(row)
        except IntegrityError as exc:
            raise StoreError(f"A project named {name!r} already exists.") from exc

    def get_project(self, project_id: int) -> ProjectRecord:
        with self._read() as s:
            return project_record(self._get(s, Project, project_id, "Project"))

    def get_project_by_name(self, name: str) -> ProjectRecord:
        with self._read() as s:
            row = s.scalars(select(Project).where(Project.name == name.strip())).one_or_none()
            if row is None:
                raise NotFoundError(f"There is no project named {name!r}.")
            return project_record(row)

    def list_projects(self) -> list[ProjectRecord]:
        """Every project, by name."""
        with self._read() as s:
            return [project_record(r) for r in s.scalars(select(Project).order_by(Project.name))]

    def update_project_settings(self, project_id: int, changes: Mapping[str, Any]) -> ProjectRecord:
        """Merge ``changes`` into the project's settings (top-level keys are replaced)."""
        with self._write() as s:
            row = self._get(s, Project, project_id, "Project")
            row.settings = normalize_settings({**(row.settings or {}), **dict(changes)})
            s.flush()
            return project_record(row)

    # --- criteria ---------------------------------------------------------------------------

    def create_criterion(
        self,
        project_id: int,
        name: str,
        *,
        kind: DatasetKind,
        scale: Scale,
        rubric: str = "",
    ) -> CriterionRecord:
        """Create a criterion of a project. A pairwise criterion has a pairwise scale, and only it."""
        name = _required_name(name, "A criterion")
        if kind not in _KINDS:
            raise ConfigError(f"A criterion is 'pointwise' or 'pairwise', not {kind!r}.")
        if (kind == "pairwise") != (scale.kind == "pairwise"):
            raise ConfigError(
                f"Criterion {name!r}: a {kind} criterion cannot use the {scale.kind} scale "
                f"{scale.display_labels}."
            )
        message = f"Project {project_id} already has a criterion named {name!r}."
        try:
            with self._write() as s:
                self._get(s, Project, project_id, "Project")
                taken = s.scalar(
                    select(Criterion.id).where(
                        Criterion.project_id == project_id, Criterion.name == name
                    )
                )
                if taken is not None:
                    raise StoreError(message)
                row = Criterion(
                    project_id=project_id,
                    name=name,
                    kind=kind,
                    scale=scale.to_dict(),
                    rubric=rubric or "",
                )
                s.add(row)
                s.flush()
                return criterion_record(row)
        except IntegrityError as exc:
            raise StoreError(message) from exc

    def get_criterion(self, criterion_id: int) -> CriterionRecord:
        with self._read() as s:
            return criterion_record(self._get(s, Criterion, criterion_id, "Criterion"))

    def get_criterion_by_name(self, project_id: int, name: str) -> CriterionRecord:
        with self._read() as s:
            row = s.scalars(
                select(Criterion).where(
                    Criterion.project_id == project_id, Criterion.name == name.strip()
                )
            ).one_or_none()
            if row is None:
                raise NotFoundError(f"Project {project_id} has no criterion named {name!r}.")
            return criterion_record(row)

    def list_criteria(self, project_id: int) -> list[CriterionRecord]:
        """The criteria of a project, by name."""
        with self._read() as s:
            rows = s.scalars(
                select(Criterion).where(Criterion.project_id == project_id).order_by(Criterion.name)
            )
            return [criterion_record(r) for r in rows]

    # --- annotators -------------------------------------------------------------------------

    def get_or_create_annotator(self, name: str) -> AnnotatorRecord:
        """The annotator called ``name`` (surrounding white space ignored), created on first use."""
        with self._write() as s:
            annotator_id = self._annotator_id(s, name)
            return annotator_record(self._get(s, Annotator, annotator_id, "Annotator"))

    def list_annotators(self) -> list[AnnotatorRecord]:
        with self._read() as s:
            return [
                annotator_record(r) for r in s.scalars(select(Annotator).order_by(Annotator.name))
            ]


def _required_name(name: str, what: str) -> str:
    cleaned = str(name or "").strip()
    if not cleaned:
        raise ConfigError(f"{what} needs a name.")
    return cleaned
