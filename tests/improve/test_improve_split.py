"""make_split: stratified, seeded, deterministic, and refused when the test part means nothing."""

from __future__ import annotations

import pytest

from evalcore.improve import Split, SplitTooSmallError, make_split, test_half_width
from evalcore.labels import Label


def _data(n_pass: int, n_fail: int) -> tuple[list[str], list[Label]]:
    ids = [f"p{i}" for i in range(n_pass)] + [f"f{i}" for i in range(n_fail)]
    return ids, ["pass"] * n_pass + ["fail"] * n_fail


def test_split_is_stratified_by_label() -> None:
    ids, labels = _data(60, 40)
    split = make_split(ids, labels, test_share=0.4, seed=3)
    test_pass = sum(i.startswith("p") for i in split.test)
    test_fail = sum(i.startswith("f") for i in split.test)
    assert (test_pass, test_fail) == (24, 16)  # 0.4 * 60, 0.4 * 40
    assert len(split.dev) == 60
    assert set(split.dev) | set(split.test) == set(ids)
    assert not set(split.dev) & set(split.test)


def test_split_is_deterministic_and_seeded() -> None:
    ids, labels = _data(50, 50)
    one = make_split(ids, labels, seed=1)
    again = make_split(list(reversed(ids)), list(reversed(labels)), seed=1)
    other = make_split(ids, labels, seed=2)
    assert one == again  # the input order does not matter
    assert one.test != other.test


def test_items_without_a_label_are_left_out() -> None:
    ids, labels = _data(40, 40)
    ids.append("unlabelled")
    labels.append(None)  # type: ignore[arg-type]
    split = make_split(ids, labels)
    assert "unlabelled" not in split.dev + split.test


def test_too_few_items_for_a_narrow_interval_is_refused_with_the_numbers() -> None:
    # 30 items at 40%: 12 on test, 1.96 * sqrt(0.25 / 12) = 0.283 > 0.2; 25 test items are needed
    ids, labels = _data(15, 15)
    with pytest.raises(SplitTooSmallError) as caught:
        make_split(ids, labels, test_share=0.4)
    message = str(caught.value)
    assert "30 labelled items" in message
    assert "at least 63" in message  # ceil(25 / 0.4)
    assert make_split(ids, labels, test_share=0.4, max_half_width=0.3).test


def test_a_rare_class_is_refused() -> None:
    ids, labels = _data(100, 3)
    with pytest.raises(SplitTooSmallError, match="only 3 labelled 'fail'"):
        make_split(ids, labels)


def test_one_label_only_is_refused() -> None:
    ids, labels = _data(100, 0)
    with pytest.raises(SplitTooSmallError, match="1 distinct label"):
        make_split(ids, labels)


def test_half_width_rule() -> None:
    assert test_half_width(25) == pytest.approx(0.196)  # 1.96 * 0.5 / 5
    assert test_half_width(0) == float("inf")


def test_split_round_trips_through_a_dict() -> None:
    ids, labels = _data(40, 40)
    split = make_split(ids, labels, name="v1")
    assert Split.from_dict(split.to_dict()) == split
