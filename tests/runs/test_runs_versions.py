"""Template versions of every kind in the store: save, no-op saves, restore, diff, built-in metrics.

Runs on SQLite and PostgreSQL (the ``store`` fixture).
"""

from __future__ import annotations

import pandas as pd
import pytest

from evalcore.errors import ConfigError, MissingVariableError, StoreError, TemplateError
from evalcore.judge import JudgeItem, JudgeTemplate
from evalcore.judge.builtins import builtin_names, configure_metric, get_metric
from evalcore.labels import LIKERT_5, PASS_FAIL
from evalcore.runs import (
    as_content,
    copy_metric,
    diff_versions,
    ensure_metric_criterion,
    judge_items,
    metric_content,
    metric_criteria,
    metric_of,
    metric_version,
    new_template_content,
    preview_messages,
    restore_version,
    save_version,
    template_content,
    version_kind,
    version_variables,
)
from evalcore.store import MetricVersionContent, Store, TemplateVersionContent

TEMPLATE = {
    "name": "helpful",
    "criterion": "helpfulness",
    "kind": "pointwise",
    # a list, as the demo stores it; the editor writes the scale as a dict
    "scale": [1, 2, 3, 4, 5],
    "system": "Rate helpfulness.",
    "user": "Q: {{ prompt }}\nA: {{ response }}",
    "output": {"parser": "json", "label_field": "score"},
    "model": {"model": "fake-judge"},
}


@pytest.fixture
def project(store: Store) -> dict:
    project = store.create_project("versions")
    criterion = store.create_criterion(project.id, "helpfulness", kind="pointwise", scale=LIKERT_5)
    items = pd.DataFrame(
        {
            "item_id": ["a", "b"],
            "prompt": ["Where is my order?", "Can I return boots?"],
            "response": ["It ships today.", "Yes, within 30 days."],
            "context": ["Orders ship in 2 days.", "Returns within 30 days."],
            "topic": ["orders", "returns"],
        }
    )
    dataset = store.save_dataset(project.id, "answers", items, kind="pointwise")
    template = store.create_template(project.id, "helpful", criterion.id)
    first = store.save_template_version(template.id, TEMPLATE, author="ana")
    return {
        "project": project,
        "criterion": criterion,
        "dataset": dataset,
        "template": template,
        "first": first,
    }


def test_an_edit_is_a_new_version_and_an_unchanged_save_is_not(store: Store, project: dict) -> None:
    template = JudgeTemplate.from_dict(TEMPLATE)
    # the same template written by the editor (scale as a dict, every default spelled out)
    same = save_version(store, project["template"].id, template_content(template), author="eve")
    assert (same.created, same.reason, same.version.number) == (False, "same as latest", 1)
    edited = JudgeTemplate.from_dict({**TEMPLATE, "user": TEMPLATE["user"] + "\nBe strict."})
    saved = save_version(
        store, project["template"].id, template_content(edited), author="eve", note="stricter"
    )
    assert (saved.created, saved.version.number, saved.version.author) == (True, 2, "eve")
    assert saved.version.note == "stricter"
    # editing version 1 and saving it unchanged makes no version 3
    again = save_version(
        store,
        project["template"].id,
        template_content(template),
        author="eve",
        base_version_id=project["first"].id,
    )
    assert (again.created, again.reason, again.version.number) == (False, "same as base", 1)
    assert len(store.list_template_versions(project["template"].id)) == 2


def test_a_template_that_does_not_compile_is_not_saved(store: Store, project: dict) -> None:
    broken = {**TEMPLATE, "user": "{{ prompt "}
    with pytest.raises(TemplateError, match="user prompt"):
        save_version(store, project["template"].id, broken, author="eve")
    assert len(store.list_template_versions(project["template"].id)) == 1


def test_restore_saves_an_old_version_as_the_newest(store: Store, project: dict) -> None:
    edited = {**TEMPLATE, "user": "Only: {{ response }}"}
    second = save_version(store, project["template"].id, edited, author="eve").version
    restored = restore_version(store, project["first"].id, author="ben")
    assert restored.created
    assert restored.version.number == 3
    assert restored.version.content == project["first"].content
    assert restored.version.note == "restored version 1"
    assert restored.version.author == "ben"
    # restoring the newest version is a no-op
    assert not restore_version(store, restored.version.id, author="ben").created
    diff = diff_versions(second, restored.version, name="helpful ")
    assert "--- helpful v2" in diff
    assert "+++ helpful v3" in diff
    assert "-Only: {{ response }}" in diff
    assert "+A: {{ response }}" in diff
    assert diff_versions(project["first"], restored.version) == ""


def test_preview_renders_and_names_a_missing_variable_and_item(store: Store, project: dict) -> None:
    items, _ = judge_items(store, project["dataset"].id)
    messages = preview_messages(TEMPLATE, items[0])
    assert messages[-1]["content"] == "Q: Where is my order?\nA: It ships today."
    with pytest.raises(MissingVariableError) as caught:
        preview_messages({**TEMPLATE, "user": "{{ refrence }}"}, items[1])
    assert caught.value.variable == "refrence"
    assert caught.value.item_id == "b"
    assert "refrence" in str(caught.value)
    assert "item b" in str(caught.value)
    variables = version_variables(TEMPLATE, items)
    # item fields, metadata columns, aliases and the built-in variables
    assert {"prompt", "response", "context", "topic", "question", "answer"} <= set(variables)
    assert {"criterion", "rubric", "labels"} <= set(variables)


def test_every_builtin_metric_round_trips_through_its_stored_content() -> None:
    for name in builtin_names():
        spec = get_metric(name)
        content = metric_content(spec)
        back = metric_of(content)
        assert back is not None
        assert back.name == name
        assert back.version == spec.version
        assert back.threshold == spec.threshold
        assert metric_content(back) == content
        assert version_kind(content) == ("template" if spec.kind == "template" else spec.kind)
    configured = configure_metric("factual_correctness", {"mode": "precision", "beta": "2"})
    back = metric_of(metric_content(configured.with_threshold(0.7)))
    assert back is not None
    assert back.pipeline is not None
    assert (back.pipeline.mode, back.pipeline.beta, back.threshold) == ("precision", 2.0, 0.7)  # type: ignore[attr-defined]
    assert metric_of(TEMPLATE) is None


def test_stored_versions_are_read_into_typed_records(store: Store, project: dict) -> None:
    plain = store.get_template_version(project["first"].id)
    assert isinstance(plain.parsed, TemplateVersionContent)
    assert plain.parsed.to_dict() == plain.content == TEMPLATE
    # a row in the database format earlier versions wrote: the template, a "builtin" tag and a
    # threshold in one dict
    groundedness = get_metric("groundedness")
    row = {**groundedness.template.content_dict(), "builtin": "groundedness", "threshold": 4}  # type: ignore[union-attr]
    old = store.save_template_version(project["template"].id, row, author="old release")
    loaded = store.get_template_version(old.id)
    assert isinstance(loaded.parsed, MetricVersionContent)
    assert (loaded.parsed.name, loaded.parsed.threshold) == ("groundedness", 4)
    assert loaded.parsed.to_dict() == loaded.content == row  # the database format is unchanged
    assert version_kind(loaded.parsed) == version_kind(loaded.content) == "template"
    spec = metric_of(loaded.parsed)
    assert spec is not None
    assert (spec.name, spec.threshold) == ("groundedness", 4)
    assert as_content(loaded.content) == loaded.parsed
    # saving the typed record again is no new version
    again = save_version(store, project["template"].id, loaded.parsed, author="eve")
    assert (again.created, again.version.id) == (False, old.id)


def test_a_version_naming_its_metric_with_no_text_is_refused() -> None:
    with pytest.raises(StoreError, match="names its metric"):
        as_content({"builtin": 7, "threshold": 1})


def test_a_builtin_template_metric_prepares_its_inputs_in_the_preview(
    store: Store, project: dict
) -> None:
    items, _ = judge_items(store, project["dataset"].id)
    content = metric_content(get_metric("groundedness"))
    # the shipped prompt reads {{ transcript }}, which single-turn items get as ""
    text = preview_messages(content, items[0])[-1]["content"]
    assert "Orders ship in 2 days." in text
    assert "It ships today." in text
    assert "transcript" in version_variables(content, items)
    with pytest.raises(MissingVariableError, match="ground_truth"):
        preview_messages(metric_content(get_metric("similarity")), items[0])


def test_copy_a_builtin_into_the_project_and_edit_it(store: Store, project: dict) -> None:
    project_id = project["project"].id
    spec = get_metric("coherence")
    # helpfulness is on the same 1-5 scale, so the copy may judge it
    assert [c.name for c in metric_criteria(store, project_id, spec)] == ["helpfulness"]
    copy = copy_metric(store, project_id, spec, author="eve", criterion_id=project["criterion"].id)
    template = store.get_template(copy.template_id)
    assert (template.name, template.criterion_id) == ("coherence copy", project["criterion"].id)
    assert copy.note is not None
    assert "coherence" in copy.note
    again = copy_metric(store, project_id, spec, author="eve")
    assert store.get_template(again.template_id).name == "coherence copy 2"
    # a new criterion named after the metric was made for the second copy
    assert store.get_criterion(store.get_template(again.template_id).criterion_id).name == (
        "coherence"
    )
    # an edit keeps the link to the metric, so runs still prepare inputs and add verdicts
    edited = JudgeTemplate.from_dict(copy.content)
    edited = JudgeTemplate.from_dict({**copy.content, "system": edited.system + " Be brief."})
    saved = save_version(
        store, copy.template_id, template_content(edited, like=copy.content), author="eve"
    ).version
    spec_back = metric_of(saved.content)
    assert spec_back is not None
    assert spec_back.name == "coherence"
    assert spec_back.template is not None
    assert spec_back.template.system.endswith("Be brief.")
    assert "Be brief." in diff_versions(copy, saved)


def test_a_copy_cannot_judge_a_criterion_on_another_scale(store: Store, project: dict) -> None:
    passfail = store.create_criterion(
        project["project"].id, "grounded", kind="pointwise", scale=PASS_FAIL
    )
    with pytest.raises(ConfigError, match="same scale"):
        copy_metric(
            store,
            project["project"].id,
            get_metric("groundedness"),
            author="eve",
            criterion_id=passfail.id,
        )
    # pipeline metrics give pass/fail: that criterion fits them
    fits = metric_criteria(store, project["project"].id, get_metric("factual_correctness"))
    assert [c.name for c in fits] == ["grounded"]


def test_metric_version_is_one_template_per_metric_and_a_version_per_configuration(
    store: Store, project: dict
) -> None:
    project_id = project["project"].id
    store.create_criterion(project_id, "violence", kind="pointwise", scale=PASS_FAIL)
    spec = get_metric("violence")
    # "violence" is taken by a pass/fail criterion: the metric gets its own on its levels
    criterion = ensure_metric_criterion(store, project_id, spec)
    assert criterion.name.startswith("violence (")
    assert criterion.scale.labels == spec.scale.labels
    first = metric_version(store, project_id, spec, author="eve")
    same = metric_version(store, project_id, spec, author="eve")
    stricter = metric_version(store, project_id, spec.with_threshold("low"), author="eve")
    assert first.id == same.id
    assert stricter.template_id == first.template_id
    assert stricter.number == 2
    name = store.get_template(first.template_id).name
    assert name.startswith("violence (built-in)")
    diff = diff_versions(first, stricter)
    assert "threshold: medium → low" in diff


def test_a_new_template_starts_from_a_prompt_that_renders(store: Store, project: dict) -> None:
    content = new_template_content("mine", project["criterion"])
    template = JudgeTemplate.from_dict(content)
    assert template.scale == project["criterion"].scale
    item = JudgeItem("x", {"prompt": "q", "response": "a"})
    assert "q" in preview_messages(content, item)[-1]["content"]
