"""Projects, criteria and annotators: create, read, list, invariants."""

from __future__ import annotations

import dataclasses

import pytest

from evalcore.errors import ConfigError, NotFoundError, StoreError
from evalcore.labels import LIKERT_5, PAIRWISE, PASS_FAIL, Scale
from evalcore.store import DEFAULT_THRESHOLDS, ProjectRecord, Store


def test_project_round_trip_with_default_settings(store: Store) -> None:
    created = store.create_project("summaries", description="news summaries")
    assert created.settings == {"annotators_per_item": 1, "thresholds": DEFAULT_THRESHOLDS}
    assert created.annotators_per_item == 1
    assert created.created_at.tzinfo is not None
    assert store.get_project(created.id) == created
    assert store.get_project_by_name("summaries") == created
    assert [p.name for p in store.list_projects()] == ["summaries"]


def test_records_are_frozen_dataclasses_not_orm_rows(store: Store) -> None:
    created = store.create_project("p")
    assert dataclasses.is_dataclass(created)
    with pytest.raises(dataclasses.FrozenInstanceError):
        created.name = "q"  # type: ignore[misc]


def test_project_names_are_unique(store: Store) -> None:
    store.create_project("p")
    with pytest.raises(StoreError, match="already exists"):
        store.create_project(" p ")


def test_missing_project_is_not_found(store: Store) -> None:
    with pytest.raises(NotFoundError):
        store.get_project(404)
    with pytest.raises(NotFoundError):
        store.get_project_by_name("nope")


def test_update_settings_merges_and_validates(store: Store, project: ProjectRecord) -> None:
    updated = store.update_project_settings(
        project.id, {"annotators_per_item": 3, "thresholds": {"cohen_kappa": 0.7}}
    )
    assert updated.annotators_per_item == 3
    assert updated.thresholds == {"cohen_kappa": 0.7}
    assert store.get_project(project.id).annotators_per_item == 3
    for bad in ({"annotators_per_item": 0}, {"annotators_per_item": 1.5}, {"thresholds": 3}):
        with pytest.raises(ConfigError):
            store.update_project_settings(project.id, bad)
    assert store.get_project(project.id).annotators_per_item == 3


def test_criterion_keeps_its_scale(store: Store, project: ProjectRecord) -> None:
    severity = Scale(("low", "medium", "high"), "ordinal", "severity")
    created = store.create_criterion(
        project.id, "harm", kind="pointwise", scale=severity, rubric="How harmful?"
    )
    again = store.get_criterion(created.id)
    assert again == created
    assert again.scale == severity
    assert store.get_criterion_by_name(project.id, "harm") == created
    store.create_criterion(project.id, "correct", kind="pointwise", scale=PASS_FAIL)
    assert [c.name for c in store.list_criteria(project.id)] == ["correct", "harm"]


def test_criterion_names_are_unique_per_project(store: Store) -> None:
    a = store.create_project("a")
    b = store.create_project("b")
    store.create_criterion(a.id, "fluency", kind="pointwise", scale=LIKERT_5)
    store.create_criterion(b.id, "fluency", kind="pointwise", scale=LIKERT_5)
    with pytest.raises(StoreError, match="already has a criterion"):
        store.create_criterion(a.id, "fluency", kind="pointwise", scale=LIKERT_5)


def test_criterion_kind_must_match_its_scale(store: Store, project: ProjectRecord) -> None:
    with pytest.raises(ConfigError):
        store.create_criterion(project.id, "pref", kind="pairwise", scale=LIKERT_5)
    with pytest.raises(ConfigError):
        store.create_criterion(project.id, "pref", kind="pointwise", scale=PAIRWISE)
    with pytest.raises(NotFoundError):
        store.create_criterion(999, "x", kind="pointwise", scale=LIKERT_5)


def test_get_or_create_annotator_is_idempotent(store: Store) -> None:
    first = store.get_or_create_annotator("ada")
    again = store.get_or_create_annotator(" ada ")
    assert first == again
    store.get_or_create_annotator("bob")
    assert [a.name for a in store.list_annotators()] == ["ada", "bob"]
    with pytest.raises(StoreError):
        store.get_or_create_annotator("  ")
