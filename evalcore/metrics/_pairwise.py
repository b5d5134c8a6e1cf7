"""Pairwise verdicts (A / B / TIE): win rates and position bias of a judge run in both orders."""

from __future__ import annotations

import math

import numpy as np

from evalcore.errors import MetricError
from evalcore.labels import canonical_choice
from evalcore.metrics._encode import IntArray, LabelArray, normalize_column

_CHOICES = ("A", "B", "TIE")
_A, _B, _TIE = 0, 1, 2


def _choice_codes(values: LabelArray, name: str) -> IntArray:
    """Codes 0 = A, 1 = B, 2 = TIE, -1 = missing; any common vocabulary, case-insensitive."""
    column = normalize_column(values, name)
    lookup = np.full(len(column.values) + 1, -1, dtype=np.int64)
    for i, label in enumerate(column.values):
        try:
            choice = canonical_choice(label)
        except ValueError:
            raise MetricError(
                f"{name} holds {label!r}, which is not a pairwise choice (A, B or tie)"
            ) from None
        lookup[i] = -1 if choice is None else _CHOICES.index(choice)
    return lookup[column.codes]


def _paired(choice_ab: LabelArray, choice_ba: LabelArray) -> tuple[IntArray, IntArray]:
    ab = _choice_codes(choice_ab, "choice_ab")
    ba = _choice_codes(choice_ba, "choice_ba")
    if len(ab) != len(ba):
        raise MetricError(
            f"the label arrays differ in length (choice_ab has {len(ab)}, choice_ba has {len(ba)} rows)"
        )
    keep = (ab >= 0) & (ba >= 0)
    if not keep.any():
        raise MetricError(
            f"no comparable rows: every one of the {len(ab)} items misses a verdict in one order"
        )
    return ab[keep], ba[keep]


def win_rates(choices: LabelArray) -> dict[str, float]:
    """Share of ``"A"``, ``"B"`` and ``"TIE"`` among the non-missing verdicts.

    Verdicts in any common vocabulary (``model_A``, ``baseline``, ``tie``...) are mapped to A/B/TIE;
    a value that is not a pairwise choice raises ``MetricError``, and so does having no verdict.
    Each share ranges from 0 to 1 and the three sum to 1.

    >>> win_rates(["A", "model_b", "tie", "A", None])
    {'A': 0.5, 'B': 0.25, 'TIE': 0.25}
    """
    codes = _choice_codes(choices, "choices")
    codes = codes[codes >= 0]
    if codes.size == 0:
        raise MetricError("choices has no verdict (every value is missing)")
    counts = np.bincount(codes, minlength=3)
    return {name: float(counts[i] / codes.size) for i, name in enumerate(_CHOICES)}


def position_consistency(choice_ab: LabelArray, choice_ba: LabelArray) -> float:
    """Share of items whose verdict is the same when the two responses are shown in either order.

    ``choice_ab`` holds the verdicts with the original A shown first, ``choice_ba`` those with B shown
    first, both already mapped back to the original frame (so an unbiased judge gives the same
    letter). Range 0 (worst) to 1 (best, no position effect). Symmetric. Items missing a verdict in
    either order are dropped; no item left raises ``MetricError``.

    >>> position_consistency(["A", "B", "TIE", "A"], ["A", "A", "TIE", "B"])
    0.5
    """
    ab, ba = _paired(choice_ab, choice_ba)
    return float(np.count_nonzero(ab == ba) / ab.size)


def first_position_preference(choice_ab: LabelArray, choice_ba: LabelArray) -> float:
    """Share of non-tie verdicts, over both orders, that chose the response shown first.

    In the AB order the original A is shown first, in the BA order the original B is (verdicts are in
    the original frame). 0.5 means no position preference; 1 means the judge always picks the first
    response, 0 always the second. NaN when every verdict is a tie. Items missing a verdict in either
    order are dropped; no item left raises ``MetricError``.

    >>> first_position_preference(["A", "A", "B"], ["B", "A", "TIE"])  # 3 of 5 non-ties
    0.6
    """
    ab, ba = _paired(choice_ab, choice_ba)
    chose_first = np.count_nonzero(ab == _A) + np.count_nonzero(ba == _B)
    decided = np.count_nonzero(ab != _TIE) + np.count_nonzero(ba != _TIE)
    return float(chose_first / decided) if decided else math.nan
