"""The demo project written into a real store (SQLite file and PostgreSQL)."""

from __future__ import annotations

import pytest

from evalcore.demo import build_demo
from evalcore.demo.seed import ensure_demo, seed_demo
from evalcore.store import Store


def test_seed_writes_everything_and_is_idempotent(store: Store) -> None:
    demo = build_demo()
    project = seed_demo(store, demo)
    assert seed_demo(store, demo).id == project.id  # a second call changes nothing
    assert [p.name for p in store.list_projects()] == [demo.project_name]
    datasets = {d.name: d for d in store.list_datasets(project.id)}
    assert {name: d.n_items for name, d in datasets.items()} == {
        d.name: len(d.items) for d in demo.datasets
    }
    exported = store.export_annotations(project_id=project.id)
    assert len(exported) == len(demo.annotations)
    assert exported["time_spent_s"].notna().all()
    runs = store.list_runs(project_id=project.id)
    assert len(runs) == len(demo.runs)
    assert all(r.status == "done" for r in runs)
    for run in demo.runs:
        stored = next(r for r in runs if r.name == run.name)
        progress = store.run_progress(stored.id)
        expected = run.results["status"].value_counts()
        assert progress.ok == expected.get("ok", 0)
    versions = [
        v for t in store.list_templates(project.id) for v in store.list_template_versions(t.id)
    ]
    assert len(versions) == sum(len(t.versions) for t in demo.templates)
    # history: versions keep the demo's own dates, so "over time" charts have a time axis
    assert len({v.created_at.date() for v in versions}) > 1
    assert not any(
        e.api_key_env and e.api_key_env.startswith("sk-") for e in store.list_endpoints()
    )


def test_ensure_demo_only_seeds_an_empty_database(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALCORE_NO_DEMO", "1")
    assert ensure_demo(store) is None
    assert store.list_projects() == []
    monkeypatch.delenv("EVALCORE_NO_DEMO")
    assert ensure_demo(store) is not None
    assert ensure_demo(store) is None


def test_the_seeded_endpoints_are_openai_and_an_optional_local_server(store: Store) -> None:
    seed_demo(store)
    by_name = {e.name: e for e in store.list_endpoints()}
    openai = by_name["OpenAI"]
    assert (openai.base_url, openai.api_key_env) == ("https://api.openai.com/v1", "OPENAI_API_KEY")
    local = [e for e in by_name.values() if e.api_key_env is None]
    assert [e.base_url for e in local] == ["http://localhost:11434/v1"]  # needs no key
