"""The human ceiling's settings: annotators with too few shared items left out, alpha without each
annotator, and the declared fragility rule (hand-worked frames)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalcore.labels import Scale
from evalcore.metrics import krippendorff_alpha
from evalcore.report import FRAGILE_CHANGE, MIN_SHARED, human_ceiling, shared_counts


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
