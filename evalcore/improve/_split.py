"""A dev/test split of labelled items that later steps cannot leak across.

:func:`make_split` puts every label's items into dev and test in the same proportion (stratified),
in an order fixed by the seed, so the same items, labels and seed always give the same split. It
refuses a labelled set too small for the test part to mean anything: the guide is the half-width of
a 95% interval of a proportion near 0.5 on the test items (normal approximation,
``1.96 * sqrt(0.25 / n_test)``), and every label needs at least two items on each side.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalcore.errors import EvalcoreError
from evalcore.labels import Label, format_label, normalize_label

__all__ = ["MIN_PER_CLASS", "Split", "SplitTooSmallError", "make_split", "test_half_width"]

#: The fewest items of each label on each side of a split.
MIN_PER_CLASS = 2
_Z95 = 1.96


class SplitTooSmallError(EvalcoreError):
    """The labelled items are too few for a split whose test figures would mean anything."""


@dataclass(frozen=True)
class Split:
    """A named, seeded split of item ids into ``dev`` (to choose on) and ``test`` (to prove on)."""

    name: str
    seed: int
    test_share: float
    dev: tuple[str, ...]
    test: tuple[str, ...]

    def __post_init__(self) -> None:
        overlap = set(self.dev) & set(self.test)
        if overlap:
            raise EvalcoreError(
                f"split {self.name!r} has {len(overlap)} item(s) in both dev and test "
                f"(for example {sorted(overlap)[0]!r})"
            )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: name, seed, test_share and the two id lists."""
        return {
            "name": self.name,
            "seed": self.seed,
            "test_share": self.test_share,
            "dev": list(self.dev),
            "test": list(self.test),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Split:
        """Inverse of :meth:`to_dict`."""
        return cls(
            name=str(data.get("name", "default")),
            seed=int(data.get("seed", 0)),
            test_share=float(data.get("test_share", 0.4)),
            dev=tuple(str(x) for x in data["dev"]),
            test=tuple(str(x) for x in data["test"]),
        )


def test_half_width(n_test: int) -> float:
    """The 95% half-width of a proportion near 0.5 measured on ``n_test`` items (normal
    approximation); infinite for none.

    >>> round(test_half_width(25), 3)
    0.196
    """
    return math.inf if n_test <= 0 else _Z95 * math.sqrt(0.25 / n_test)


test_half_width.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def _needed_test_items(max_half_width: float) -> int:
    return math.ceil((_Z95 * 0.5 / max_half_width) ** 2 - 1e-9)


def make_split(
    item_ids: Sequence[str],
    labels: Sequence[Label],
    *,
    test_share: float = 0.4,
    seed: int = 0,
    name: str = "default",
    max_half_width: float = 0.2,
) -> Split:
    """Split labelled items into dev and test, stratified by label and seeded.

    Items whose label is missing are left out. Each label's items are shuffled by ``seed`` (after
    sorting their ids, so the input order does not matter) and ``round(n * test_share)`` of them go
    to test, at least :data:`MIN_PER_CLASS` on each side. Raises :class:`SplitTooSmallError` when
    a label has too few items, or when the test part's 95% half-width (:func:`test_half_width`)
    would be wider than ``max_half_width``; the message says how many labelled items there are and
    how many a split needs.

    >>> ids = [str(i) for i in range(60)]
    >>> s = make_split(ids, ["pass", "fail"] * 30, test_share=0.5)
    >>> len(s.dev), len(s.test)
    (30, 30)
    """
    if len(item_ids) != len(labels):
        raise EvalcoreError(
            f"a split needs one label per item ({len(item_ids)} ids, {len(labels)} labels)"
        )
    if not 0.0 < test_share < 1.0:
        raise EvalcoreError(f"the test share must be between 0 and 1, not {test_share}")
    if not max_half_width > 0:
        raise EvalcoreError(f"the largest half-width must be positive, not {max_half_width}")
    by_label: dict[Label, list[str]] = {}
    seen: set[str] = set()
    for item_id, raw in zip(item_ids, labels, strict=True):
        label = normalize_label(raw)
        key = str(item_id)
        if label is None:
            continue
        if key in seen:
            raise EvalcoreError(f"item {key!r} is given twice to the split")
        seen.add(key)
        by_label.setdefault(label, []).append(key)
    n = len(seen)
    n_needed_test = _needed_test_items(max_half_width)
    n_needed = math.ceil(n_needed_test / test_share - 1e-9)
    need_text = (
        f"a {round((1 - test_share) * 100)}/{round(test_share * 100)} split needs at least "
        f"{n_needed} (so that {n_needed_test} test items give a 95% interval no wider than "
        f"±{max_half_width:.2f}) and {MIN_PER_CLASS * 2} of every label"
    )
    if len(by_label) < 2:
        raise SplitTooSmallError(
            f"There are {n} labelled items with {len(by_label)} distinct label(s); "
            f"{need_text}, with at least two labels."
        )
    dev: list[str] = []
    test: list[str] = []
    rng = random.Random(seed)
    for label in sorted(by_label, key=lambda x: (isinstance(x, str), format_label(x))):
        ids = sorted(by_label[label])
        rng.shuffle(ids)
        if len(ids) < 2 * MIN_PER_CLASS:
            raise SplitTooSmallError(
                f"There are {n} labelled items, but only {len(ids)} labelled "
                f"{format_label(label)!r}; {need_text}."
            )
        k = min(max(round(len(ids) * test_share), MIN_PER_CLASS), len(ids) - MIN_PER_CLASS)
        test.extend(ids[:k])
        dev.extend(ids[k:])
    if test_half_width(len(test)) > max_half_width:
        raise SplitTooSmallError(
            f"There are {n} labelled items: the test part would have {len(test)}, whose 95% "
            f"interval is ±{test_half_width(len(test)):.2f} wide; {need_text}."
        )
    return Split(name, int(seed), float(test_share), tuple(sorted(dev)), tuple(sorted(test)))
