"""Saved dev/test splits (migration 0007) and saving an optimised candidate as a template version."""

from __future__ import annotations

import pytest

from evalcore.errors import ConfigError, NotFoundError, PermissionDeniedError
from evalcore.improve import (
    Candidate,
    CandidateResult,
    FinalistResult,
    OptimizeReport,
    make_split,
    save_candidate,
)
from evalcore.judge import JudgeTemplate
from evalcore.labels import PASS_FAIL
from evalcore.store import Actor, CriterionRecord, DatasetRecord, ProjectRecord, Store


def test_a_split_is_saved_once_and_read_back(
    store: Store, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    split = make_split([f"i{n}" for n in range(80)], ["pass", "fail"] * 40, seed=4)
    saved = store.save_split(
        dataset.id, fluency.id, "v1", seed=4, test_share=0.4, dev=split.dev, test=split.test
    )
    again = store.save_split(
        dataset.id, fluency.id, "v1", seed=4, test_share=0.4, dev=split.dev, test=split.test
    )
    assert again.id == saved.id
    read = store.get_split(dataset.id, fluency.id, "v1")
    assert (read.dev, read.test, read.seed, read.test_share) == (split.dev, split.test, 4, 0.4)
    with pytest.raises(ConfigError, match="never changed"):
        store.save_split(
            dataset.id, fluency.id, "v1", seed=5, test_share=0.4, dev=split.test, test=split.dev
        )
    with pytest.raises(NotFoundError, match="No split named 'v2'"):
        store.get_split(dataset.id, fluency.id, "v2")
    with pytest.raises(ConfigError, match="both dev and test"):
        store.save_split(
            dataset.id, fluency.id, "bad", seed=0, test_share=0.5, dev=["a"], test=["a"]
        )


def test_viewers_read_splits_and_only_managers_save_them(
    store: Store, project: ProjectRecord, dataset: DatasetRecord, fluency: CriterionRecord
) -> None:
    store.save_split(dataset.id, fluency.id, "v1", seed=0, test_share=0.5, dev=["a"], test=["b"])
    viewer = store.acting_as(Actor("vic", "viewer", {project.id: "viewer"}))
    assert viewer.get_split(dataset.id, fluency.id, "v1").test == ("b",)
    with pytest.raises(PermissionDeniedError):
        viewer.save_split(dataset.id, fluency.id, "v2", seed=0, test_share=0.5, dev=[], test=[])
    engineer = store.acting_as(Actor("eve", "engineer", {project.id: "engineer"}))
    engineer.save_split(dataset.id, fluency.id, "v2", seed=0, test_share=0.5, dev=["a"], test=[])


def _report(
    start: JudgeTemplate, better: JudgeTemplate, *, beats: bool
) -> tuple[Candidate, OptimizeReport]:
    split = make_split([f"i{n}" for n in range(80)], ["pass", "fail"] * 40)
    first = Candidate("start", "start", start)
    candidate = Candidate("fewshot-1", "fewshot", better, examples=split.dev[:2])
    dev = {"accuracy_balanced": 0.9}
    report = OptimizeReport(
        split=split,
        start=CandidateResult(first, {"accuracy_balanced": 0.6}, (0.5, 0.7), 48, 0.0, 1.0),
        candidates=[CandidateResult(candidate, dev, (0.8, 0.97), 48, 0.0, 1.0)],
        start_test=FinalistResult(first, 0.55, (0.4, 0.7)),
        finalists=[FinalistResult(candidate, 0.85, (0.7, 0.95), 0.3, (0.15, 0.45), 0.001, beats)],
        ceiling=None,
        best=candidate if beats else None,
        stopped=None,
        requests=200,
        cost=0.0,
    )
    return candidate, report


def test_a_candidate_that_beat_the_start_becomes_a_new_version_with_its_story(
    store: Store, project: ProjectRecord, fluency: CriterionRecord
) -> None:
    start = JudgeTemplate("t", "fluency", PASS_FAIL, "Be careful.", "Grade: {{ response }}")
    better = JudgeTemplate("t", "fluency", PASS_FAIL, "Be careful. RULE fail: x.", start.user)
    template = store.create_template(project.id, "t", fluency.id)
    store.save_template_version(template.id, start.content_dict(), author="eve")
    candidate, report = _report(start, better, beats=True)
    saved = save_candidate(store, template.id, candidate, report, author="eve")
    assert saved.number == 2
    assert saved.content_hash == store.get_template_version(saved.id).content_hash
    assert JudgeTemplate.from_dict(saved.content) == better
    note = saved.note or ""
    assert "fewshot candidate fewshot-1" in note
    assert "split 'default'" in note
    assert "48 dev / 32 test" in note
    assert candidate.examples[0] in note
    assert "dev accuracy_balanced: 0.900" in note
    assert "test accuracy_balanced: 0.850" in note
    losing, report = _report(start, better, beats=False)
    with pytest.raises(ConfigError, match="did not beat"):
        save_candidate(store, template.id, losing, report, author="eve")
