"""Reading raw label arrays: the semantics of `normalize_label`, vectorized."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalcore.errors import MetricError
from evalcore.labels import SEVERITY, normalize_label
from evalcore.metrics import confusion_labels, confusion_matrix
from evalcore.metrics._encode import normalize_column

MISSING = [None, float("nan"), np.nan, pd.NA, "", "  ", "error", "ERROR", " Error "]


def _decoded(values: object) -> list[object]:
    column = normalize_column(values, "y")
    return [None if c < 0 else column.values[c] for c in column.codes]


@pytest.mark.parametrize("raw", MISSING, ids=repr)
def test_every_missing_spelling_is_missing(raw: object) -> None:
    assert _decoded([raw, 1]) == [None, 1.0]


def test_matches_normalize_label_cell_by_cell() -> None:
    raw = ["4", 4, 4.0, " 4 ", "4.50", np.int64(3), np.float32(2.5), "tie", " tie ", "Tie", None]
    assert _decoded(np.array(raw[:7], dtype=object)) == [normalize_label(x) for x in raw[:7]]
    assert _decoded(raw[7:]) == [normalize_label(x) for x in raw[7:]]


@pytest.mark.parametrize(
    "values",
    [
        [1, 2, None],
        (1, 2, None),
        np.array([1.0, 2.0, np.nan]),
        [*np.array([1, 2, 3])[:2].tolist(), None],
        pd.Series([1, 2, None], dtype="Int64"),
        pd.Series(["1", "2.0", None]),
        pd.Series(["1", "2", "error"], dtype="string"),
        pd.Series(pd.Categorical(["1", "2", None])),
        np.array(["1", "2", ""]),
    ],
    ids=lambda v: type(v).__name__ + ":" + str(getattr(v, "dtype", "")),
)
def test_containers_and_dtypes_agree(values: object) -> None:
    assert _decoded(values) == [1.0, 2.0, None]


def test_booleans_read_as_pass_fail() -> None:
    assert _decoded(np.array([True, False])) == ["pass", "fail"]
    assert _decoded(pd.Series([True, None], dtype="boolean")) == ["pass", None]


def test_mixed_numbers_and_words_in_one_array_raise() -> None:
    with pytest.raises(MetricError, match="y_true mixes numbers and words"):
        confusion_matrix([1, "good"], [1, 2])


def test_numbers_on_one_side_words_on_the_other_need_labels() -> None:
    with pytest.raises(MetricError, match="pass labels="):
        confusion_matrix([1, 2], ["a", "b"])
    # with explicit labels a mixed axis is allowed
    cm = confusion_matrix([1, 2], ["a", "b"], labels=[1, 2, "a", "b"])
    assert cm.tolist()[0] == [0, 0, 1, 0]


def test_words_sort_as_strings_numbers_numerically() -> None:
    assert confusion_labels(["b", "B", "a"], ["c", None, "a"]) == ["B", "a", "b", "c"]
    assert confusion_labels(["2", 10, 1], [1.5, 3, 2]) == [1.0, 1.5, 2.0, 3.0, 10.0]


def test_explicit_labels_accept_a_scale_and_normalize() -> None:
    assert confusion_labels(["low"], ["high"], labels=SEVERITY.labels) == list(SEVERITY.labels)
    assert confusion_labels([1], [2], labels=["1", "2", "3"]) == [1.0, 2.0, 3.0]


@pytest.mark.parametrize(
    ("labels", "message"),
    [(["a", "a"], "repeat"), (["a", None], "missing"), ("ab", "single string")],
)
def test_bad_explicit_labels(labels: object, message: str) -> None:
    with pytest.raises(MetricError, match=message):
        confusion_matrix(["a"], ["a"], labels=labels)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (np.zeros((2, 2)), "one-dimensional"),
        (pd.DataFrame({"a": [1]}), "not a table"),
        ("abc", "array of labels"),
        (5, "array of labels"),
        ([[1], [2]], "nested"),
    ],
)
def test_bad_arrays(values: object, message: str) -> None:
    with pytest.raises(MetricError, match=message):
        confusion_matrix(values, [1, 2])  # type: ignore[arg-type]


def test_unknown_label_message_lists_a_few() -> None:
    with pytest.raises(MetricError, match=r"y_pred has label\(s\) '9', '8'"):
        confusion_matrix([1, 2], [9, 8], labels=[1, 2])


def test_large_string_arrays_are_coded_without_errors() -> None:
    rng = np.random.default_rng(0)
    words = np.array(["a", "b", "c", "error", None], dtype=object)
    y = words[rng.integers(0, 5, 200_000)]
    cm = confusion_matrix(y, y)
    # "error" and None rows are dropped; everything else is on the diagonal
    assert cm.sum() == np.count_nonzero([v in ("a", "b", "c") for v in y])
    assert np.count_nonzero(cm - np.diag(np.diag(cm))) == 0
