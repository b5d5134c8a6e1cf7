"""Pairwise verdicts: win rates and position bias."""

from __future__ import annotations

import math

import pytest

from evalcore.errors import MetricError
from evalcore.metrics import first_position_preference, position_consistency, win_rates


def test_win_rates_hand_worked() -> None:
    # 2 A, 1 B, 1 TIE among 4 verdicts; "model_B" and "tie" are mapped, None is dropped
    assert win_rates(["A", "model_B", "tie", "a", None]) == {"A": 0.5, "B": 0.25, "TIE": 0.25}


def test_win_rates_errors() -> None:
    with pytest.raises(MetricError, match="not a pairwise choice"):
        win_rates(["A", "maybe"])
    with pytest.raises(MetricError, match="no verdict"):
        win_rates([None, "error"])


def test_position_consistency_hand_worked() -> None:
    ab = ["A", "B", "TIE", "A", "B", None]
    ba = ["A", "A", "TIE", "B", "B", "A"]
    # last item dropped; same verdict on items 0, 2, 4 -> 3/5
    assert position_consistency(ab, ba) == pytest.approx(3 / 5)


def test_first_position_preference_hand_worked() -> None:
    ab = ["A", "A", "B", "TIE"]  # first shown = A: chose first on items 0 and 1
    ba = ["B", "A", "B", "TIE"]  # first shown = B: chose first on items 0 and 2
    # non-tie verdicts: 3 + 3 = 6; first chosen: 2 + 2 = 4 -> 2/3
    assert first_position_preference(ab, ba) == pytest.approx(4 / 6)


def test_an_always_first_judge_and_an_unbiased_one() -> None:
    # a judge that always picks what it sees first says A in AB order and B in BA order
    assert first_position_preference(["A"] * 5, ["B"] * 5) == 1.0
    assert position_consistency(["A"] * 5, ["B"] * 5) == 0.0
    # a consistent judge with no preference
    assert first_position_preference(["A", "B"], ["A", "B"]) == 0.5
    assert position_consistency(["A", "B"], ["A", "B"]) == 1.0


def test_only_ties_give_nan_preference() -> None:
    assert math.isnan(first_position_preference(["TIE"], ["tie"]))


def test_pairwise_errors() -> None:
    with pytest.raises(MetricError, match="differ in length"):
        position_consistency(["A"], ["A", "B"])
    with pytest.raises(MetricError, match="no comparable rows"):
        first_position_preference([None], ["A"])
