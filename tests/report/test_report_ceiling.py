"""The human ceiling's settings: annotators with too few shared items left out, alpha without each
annotator, and the declared fragility rule (hand-worked frames)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalcore.labels import Scale
from evalcore.metrics import krippendorff_alpha
from evalcore.report import (
    FRAGILE_CHANGE,
    MIN_SHARED,
    build_report,
    human_ceiling,
    project_summary,
    shared_counts,
)
from evalcore.store import JudgeResultInput, Store
from tests.report.conftest import build_tiny


def _scale() -> Scale:
    return Scale.from_dict({"kind": "nominal", "labels": ["a", "b", "c"]})


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    """Three annotators on ``n`` items who agree on most of them; a fourth who rated three."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(["a", "b", "c"], size=n)
    frame = pd.DataFrame({name: truth.copy() for name in ("ann", "bo", "cy")}, dtype=object)
    for name in ("ann", "bo", "cy"):
        flip = rng.random(n) < 0.15
        frame.loc[flip, name] = rng.choice(["a", "b", "c"], size=int(flip.sum()))
    late = pd.Series([None] * n, dtype=object)
    late.iloc[:3] = truth[:3]
    frame["dee"] = late
    return frame


def test_shared_counts_by_hand() -> None:
    # item 0: a, b; item 1: a only; item 2: b, c -> a shares 1, b 2, c 1
    frame = pd.DataFrame({"a": [1, 2, None], "b": [1, None, 2], "c": [None, None, 2]})
    assert shared_counts(frame) == {"a": 1, "b": 2, "c": 1}


def test_an_annotator_with_few_shared_items_is_left_out() -> None:
    frame = _frame(40)
    assert MIN_SHARED == 10
    ceiling = human_ceiling(frame, _scale(), n_boot=0)
    assert ceiling is not None
    assert ceiling.left_out == ("dee",)  # 3 shared items < 10
    assert ceiling.n_annotators == 4
    kept = frame[["ann", "bo", "cy"]]
    assert ceiling.krippendorff_alpha == pytest.approx(
        krippendorff_alpha(kept, level="nominal", labels=["a", "b", "c"])
    )
    # a setting of 3 keeps her
    assert human_ceiling(frame, _scale(), n_boot=0, min_shared=3).left_out == ()


def test_leave_one_out_recomputes_alpha_without_each_annotator() -> None:
    frame = _frame(40)
    ceiling = human_ceiling(frame, _scale(), n_boot=0)
    assert ceiling is not None
    assert [x.annotator for x in ceiling.leave_one_out] == ["ann", "bo", "cy"]
    for x in ceiling.leave_one_out:
        rest = frame[[c for c in ("ann", "bo", "cy") if c != x.annotator]]
        expected = krippendorff_alpha(rest, level="nominal", labels=["a", "b", "c"])
        assert x.value == pytest.approx(expected)
        assert x.change == pytest.approx(expected - ceiling.krippendorff_alpha)


def test_fragile_when_one_annotator_moves_it_or_too_few_remain() -> None:
    # two annotators who always agree and a third who never does: alpha moves a lot without her
    labels = np.array(["a", "b", "c"] * 10, dtype=object)
    other = np.roll(labels, 1)
    frame = pd.DataFrame({"ann": labels, "bo": labels, "cy": other})
    ceiling = human_ceiling(frame, _scale(), n_boot=0)
    assert ceiling is not None
    without_cy = next(x for x in ceiling.leave_one_out if x.annotator == "cy")
    assert without_cy.value == pytest.approx(1.0)  # ann and bo agree on every item
    assert without_cy.change > FRAGILE_CHANGE
    assert ceiling.fragile
    assert ceiling.fragility.startswith("leaving cy out moves α by +")
    # three annotators who always agree: nothing moves it
    steady = human_ceiling(
        pd.DataFrame({"ann": labels, "bo": labels, "cy": labels}), _scale(), n_boot=0
    )
    assert steady is not None
    assert not steady.fragile
    assert steady.fragility is None
    # two annotators only: fragile whatever they agree on
    two = human_ceiling(frame[["ann", "bo"]], _scale(), n_boot=0)
    assert two is not None
    assert two.fragility == "the ceiling rests on 2 annotators (fewer than 3)"


def test_too_few_shared_items_for_anyone_keeps_everyone_and_says_so() -> None:
    frame = _frame(6)[["ann", "bo", "cy"]]  # 6 shared items each < 10
    ceiling = human_ceiling(frame, _scale(), n_boot=0)
    assert ceiling is not None
    assert ceiling.left_out == ()
    assert ceiling.krippendorff_alpha is not None
    assert ceiling.fragile
    assert "fewer than 10 items" in (ceiling.fragility or "")
    assert ceiling.to_dict()["fragile"] == ceiling.fragility


def test_the_report_and_the_summary_name_who_was_left_out_and_a_fragile_ceiling(
    sqlite_store: Store,
) -> None:
    """What the Calibrate page shows of the ceiling, a manager's export shows too."""
    frame = _frame(40)  # dee shares 3 items (< 10): left out; ann, bo and cy are kept
    project = sqlite_store.create_project("ceiling project")
    items = pd.DataFrame({"item_id": [f"q{i}" for i in range(40)], "response": ["r"] * 40})
    dataset = sqlite_store.save_dataset(project.id, "answers", items)
    criterion = sqlite_store.create_criterion(project.id, "topic", kind="pointwise", scale=_scale())
    long = frame.assign(item_id=items["item_id"]).melt(
        id_vars="item_id", var_name="annotator", value_name="label"
    )
    sqlite_store.import_labels(dataset.id, criterion.id, long.dropna())
    pk = {ext: int(i) for i, ext in sqlite_store.items_frame(dataset.id)["item_id"].items()}
    run = sqlite_store.create_run(dataset.id, criterion.id, name="judge v1")
    sqlite_store.record_results(
        run.id,
        [
            JudgeResultInput(item_id=pk[f"q{i}"], status="ok", label=label)
            for i, label in enumerate(frame["ann"])
        ],
    )
    page = build_report(sqlite_store, project.id, n_boot=0)
    assert "rated by at least two of the 3 annotators kept" in page
    assert "for sharing fewer than 10 items with the others: dee." in page
    summary = project_summary(sqlite_store, project.id, n_boot=0).table()
    ceiling = human_ceiling(frame, _scale(), n_boot=0)
    assert ceiling is not None
    assert (ceiling.n_kept, ceiling.n_annotators) == (3, 4)
    fragile = ceiling.fragility is not None
    assert ("Fragile ceiling" in page) is fragile
    assert summary.loc[0, "human ceiling (α / κ)"].endswith(" (fragile)") is fragile


def test_a_fragile_ceiling_is_flagged_in_the_report_and_the_summary(sqlite_store: Store) -> None:
    tiny = build_tiny(sqlite_store)  # ana and ben share 4 items (< 10), and there are only two
    page = build_report(sqlite_store, tiny.project_id, n_boot=0)
    assert "<b>Fragile ceiling</b>: some annotators share fewer than 10 items" in page
    summary = project_summary(sqlite_store, tiny.project_id, n_boot=0).table()
    assert summary.loc[0, "human ceiling (α / κ)"].endswith(" (fragile)")
