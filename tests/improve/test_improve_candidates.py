"""Candidate building on plain data: rewrite replies read defensively, examples kept literal."""

from __future__ import annotations

import pytest

from evalcore.improve._candidates import (
    DevView,
    add_examples,
    apply_rewrite,
    examples_section,
    fewshot_sets,
    parse_rewrite,
)
from evalcore.judge import JudgeItem, JudgeResult, JudgeTemplate, render
from evalcore.labels import PASS_FAIL


@pytest.fixture
def start() -> JudgeTemplate:
    return JudgeTemplate("t", "grounded", PASS_FAIL, "Be strict.", "Grade: {{ response }}")


def _view(n: int = 12) -> DevView:
    items = tuple(JudgeItem(f"d{i}", {"response": f"text {{{{ x }}}} {i}"}) for i in range(n))
    human = {i.item_id: ("pass" if k % 2 else "fail") for k, i in enumerate(items)}
    results = {
        i.item_id: JudgeResult(i.item_id, "AB", "ok", label="pass", reason="looks fine")
        for i in items
    }
    return DevView(items, human, {"d0": "the source never says this"}, results)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"system": "S", "rubric": "R"}', ("S", "R")),
        ('Here you go:\n```json\n{"system": "S2", "rubric": "R2"}\n```', ("S2", "R2")),
        ('noise {"other": 1} then {"rubric": "only"} end', ("", "only")),
        ("no json at all", None),
        ('{"system": 5, "rubric": null}', None),
        ('{"system": "unterminated', None),
    ],
)
def test_rewrite_replies_are_read_defensively(reply: str, expected: tuple[str, str] | None) -> None:
    assert parse_rewrite(reply) == expected


def test_examples_and_rewrites_stay_literal_text(start: JudgeTemplate) -> None:
    view = _view()
    section = examples_section(start, view, ["d0", "d1"])
    assert "Why: the source never says this" in section
    candidate = add_examples(start, section)
    system = render(candidate, {"response": "r"}, item_id="x")[0]["content"]
    assert "text {{ x }} 0" in system  # braces in an item are shown, not evaluated
    rewritten = apply_rewrite(start, "New {% if %} text", "Rule {{ one }}")
    shown = render(rewritten, {"response": "r"}, item_id="x")[0]["content"]
    assert "New {% if %} text" in shown
    assert "Rule {{ one }}" in shown  # the rubric is shown although the prompt lacks {{ rubric }}


def test_fewshot_sets_are_seeded_distinct_and_within_the_budget(start: JudgeTemplate) -> None:
    view = _view()
    sets = fewshot_sets(start, view, count=5, max_examples=4, token_budget=120, seed=1)
    assert sets == fewshot_sets(start, view, count=5, max_examples=4, token_budget=120, seed=1)
    assert len({ids for ids, _ in sets}) == len(sets) >= 3
    for ids, section in sets:
        assert 1 <= len(ids) <= 4
        assert (len(section) + 3) // 4 <= 120
    # the items the start got wrong (human "fail", judge "pass") come first
    wrong = set(view.wrong())
    assert all(ids[0] in wrong or len(set(ids) & wrong) > 0 for ids, _ in sets)


def test_a_dev_view_refuses_data_of_other_items() -> None:
    view = _view(2)
    with pytest.raises(ValueError, match="outside dev"):
        DevView(view.items, {**view.human, "t9": "pass"}, {}, {})
