"""The catalogue is complete and docs/metrics.md is current (regenerate its catalogue part with
``evalcore judge metrics --format markdown``; the statistics after the marker are written by hand)."""

from __future__ import annotations

from pathlib import Path

from evalcore.judge.builtins import (
    GROUP_TITLES,
    builtin_names,
    catalogue,
    catalogue_markdown,
    get_metric,
    list_metrics,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
REGENERATE = (
    "regenerate the part above the hand-written marker: evalcore judge metrics --format markdown"
)
#: Everything after this line of docs/metrics.md is written by hand (the statistics).
HAND_WRITTEN = "\n<!-- Written by hand below this line;"


def test_every_builtin_metric_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = [name for name in builtin_names() if f'<a id="{name}"></a>`{name}`' not in text]
    assert missing == [], f"docs/metrics.md lacks {missing}; {REGENERATE}"


def test_the_doc_is_not_stale() -> None:
    generated = DOC.read_text(encoding="utf-8").split(HAND_WRITTEN, 1)[0]
    assert generated == catalogue_markdown(), f"docs/metrics.md is stale; {REGENERATE}"


def test_every_registered_metric_has_a_complete_entry() -> None:
    entries = catalogue()
    assert {e.name for e in entries} == {s.name for s in list_metrics()}
    for entry in entries:
        assert entry.description
        assert entry.inputs
        assert entry.scale
        assert entry.threshold
        assert entry.pass_rule
        assert entry.example_inputs, entry.name
        assert entry.example_output, entry.name
        assert entry.group in GROUP_TITLES
        spec = get_metric(entry.name)
        assert entry.version == spec.version
        assert (entry.version == "") == (spec.kind == "function")


def test_the_doc_names_each_metrics_inputs_scale_and_threshold() -> None:
    text = DOC.read_text(encoding="utf-8")
    section = text.split('<a id="groundedness"></a>', 1)[1].split("### ", 1)[0]
    assert "question → `prompt`" in section
    assert "citations → `context`" in section
    assert "- **Scale**: 1–5" in section
    assert "- **Threshold**: 3; pass when the score is at least 3" in section
    section = text.split('<a id="violence"></a>', 1)[1].split("### ", 1)[0]
    assert "very low < low < medium < high" in section
    assert "below medium (at or above it is a defect)" in section
