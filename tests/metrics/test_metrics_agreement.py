"""Agreement between annotators and aggregation of their labels."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from evalcore.errors import MetricError
from evalcore.labels import LIKERT_5, SEVERITY
from evalcore.metrics import (
    aggregate_labels,
    cohen_kappa,
    krippendorff_alpha,
    krippendorff_alpha_ci,
    pairwise_cohen_kappa,
)

RATINGS = pd.DataFrame(
    {
        "ann": [1, 1, 2, 2, 3, None],
        "bob": [1, 2, 2, 2, 3, 3],
        "cy": [None, None, None, 1, 3, 2],
    }
)


# --- pairwise kappa ---------------------------------------------------------------------------------


def test_pairwise_kappa_hand_worked() -> None:
    df = pairwise_cohen_kappa(RATINGS)
    assert list(df.index) == list(df.columns) == ["ann", "bob", "cy"]
    # ann vs bob on the 5 items both rated: p_o = 4/5;
    # ann (2, 2, 1)/5, bob (1, 3, 1)/5 -> p_e = (2 + 6 + 1)/25 = 9/25 -> (4/5 - 9/25)/(16/25) = 11/16
    assert df.loc["ann", "bob"] == pytest.approx(11 / 16)
    # ann vs cy share items 3 and 4 only: (2, 1) and (3, 3): p_o = 1/2;
    # ann (0, 1/2, 1/2), cy (1/2, 0, 1/2) -> p_e = 1/4 -> (1/2 - 1/4) / (3/4) = 1/3
    assert df.loc["ann", "cy"] == pytest.approx(1 / 3)
    assert (df.to_numpy() == df.to_numpy().T).all() or np.allclose(df, df.T, equal_nan=True)
    assert df.loc["bob", "bob"] == 1.0


def test_pairwise_kappa_equals_cohen_kappa_on_shared_items() -> None:
    rng = np.random.default_rng(1)
    ratings = rng.integers(1, 6, (80, 3)).astype(float)
    ratings[rng.random(ratings.shape) < 0.2] = np.nan
    df = pairwise_cohen_kappa(ratings, weights="quadratic", labels=LIKERT_5.labels)
    both = ~np.isnan(ratings[:, 0]) & ~np.isnan(ratings[:, 2])
    direct = cohen_kappa(
        ratings[both, 0], ratings[both, 2], weights="quadratic", labels=LIKERT_5.labels
    )
    assert df.loc[0, 2] == pytest.approx(direct)


def test_pairwise_kappa_nan_under_two_shared_items() -> None:
    df = pairwise_cohen_kappa(pd.DataFrame({"x": [1, 2, None], "y": [None, 1, 2]}))
    assert math.isnan(df.loc["x", "y"])  # only item 1 is shared


# --- Krippendorff's alpha ---------------------------------------------------------------------------


def test_alpha_nominal_hand_worked() -> None:
    ratings = [["a", "a", None], ["b", "b", "b"], ["a", "b", None], ["b", None, None]]
    # coincidences: item 0 -> o_aa += 2*1/1 = 2; item 1 -> o_bb += 3*2/2 = 3;
    # item 2 -> o_ab = o_ba += 1*1/1 = 1; item 3 has a single rating and counts for nothing.
    # o = [[2, 1], [1, 3]]: n_a = 3, n_b = 4, n = 7
    # alpha = 1 - (n - 1) * (o_ab + o_ba) / (2 * n_a * n_b) = 1 - 6 * 2 / 24 = 1/2
    assert krippendorff_alpha(ratings) == pytest.approx(0.5)


def test_alpha_ordinal_uses_marginal_ranks() -> None:
    ratings = [[1, 1], [2, 2], [3, 3], [1, 3]]
    # o = diag(2, 2, 2) + o_13 = o_31 = 1 -> n = (3, 2, 3), n = 8
    # ordinal delta(1, 3) = (3 + 2 + 3 - (3 + 3)/2)^2 = 25; delta(1, 2) = (3 + 2 - 5/2)^2 = 6.25;
    # delta(2, 3) = 6.25. observed sum o*delta = 2 * 25 = 50
    # expected sum n_c n_k delta = 2 * (3*2*6.25 + 3*3*25 + 2*3*6.25) = 2 * 300 = 600
    # alpha = 1 - 7 * 50 / 600 = 5/12
    assert krippendorff_alpha(ratings, level="ordinal") == pytest.approx(5 / 12)
    # an unused label in between changes nothing for ordinal alpha (its marginal is zero)
    assert krippendorff_alpha(ratings, level="ordinal", labels=[1, 2, 2.5, 3]) == pytest.approx(
        5 / 12
    )


def test_alpha_interval_uses_values() -> None:
    ratings = [[1, 1], [2, 2], [4, 4], [1, 4]]
    # o = diag(2, 2, 2) + o_14 = o_41 = 1 -> n = (3, 2, 3), n = 8; deltas (v_c - v_k)^2: 1, 9, 4
    # observed = 2 * 9 = 18; expected = 2 * (3*2*1 + 3*3*9 + 2*3*4) = 2 * 111 = 222
    # alpha = 1 - 7 * 18 / 222 = 1 - 126/222 = 16/37
    assert krippendorff_alpha(ratings, level="interval") == pytest.approx(16 / 37)


def test_alpha_word_scales_use_positions() -> None:
    words = [["low", "low"], ["medium", "medium"], ["high", "high"], ["low", "high"]]
    numbers = [[1, 1], [2, 2], [3, 3], [1, 3]]
    for level in ("ordinal", "interval"):
        assert krippendorff_alpha(words, level=level, labels=["low", "medium", "high"]) == (
            pytest.approx(krippendorff_alpha(numbers, level=level))
        )


def test_alpha_undefined_cases_are_nan() -> None:
    assert math.isnan(
        krippendorff_alpha([[1, 1], [1, 1]])
    )  # one label only: no expected disagreement
    assert math.isnan(krippendorff_alpha([[1, None], [None, 2]]))  # nothing pairable
    assert (
        krippendorff_alpha_ci([[1, None]], n_boot=10) == (pytest.approx(math.nan, nan_ok=True),) * 2
    )


def test_alpha_perfect_agreement_is_one() -> None:
    assert krippendorff_alpha([[1, 1, 1], [2, 2, None], [3, 3, 3]], level="ordinal") == 1.0


def test_alpha_invariances() -> None:
    rng = np.random.default_rng(2)
    truth = rng.integers(1, 6, 60)
    ratings = np.clip(truth[:, None] + rng.integers(-1, 2, (60, 4)), 1, 5).astype(float)
    ratings[rng.random(ratings.shape) < 0.2] = np.nan
    base = krippendorff_alpha(ratings, level="ordinal")
    # order of items and of annotators does not matter
    assert krippendorff_alpha(ratings[rng.permutation(60)], level="ordinal") == pytest.approx(base)
    assert krippendorff_alpha(ratings[:, [2, 0, 3, 1]], level="ordinal") == pytest.approx(base)
    # strings vs numbers, and a DataFrame vs an array
    as_strings = np.where(np.isnan(ratings), None, np.nan_to_num(ratings).astype(int).astype(str))
    assert krippendorff_alpha(as_strings, level="ordinal") == pytest.approx(base)
    assert krippendorff_alpha(pd.DataFrame(ratings), level="ordinal") == pytest.approx(base)


def test_alpha_ci_groups_patterns_and_is_reproducible() -> None:
    rng = np.random.default_rng(4)
    truth = rng.integers(1, 4, 300)
    ratings = np.clip(truth[:, None] + rng.integers(-1, 2, (300, 3)), 1, 3).astype(float)
    alpha = krippendorff_alpha(ratings, level="ordinal")
    low, high = krippendorff_alpha_ci(ratings, level="ordinal", n_boot=400, seed=1)
    assert low < alpha < high
    assert (low, high) == krippendorff_alpha_ci(ratings, level="ordinal", n_boot=400, seed=1)
    # the same items repeated ten times give the same point and a narrower interval
    tenfold = np.tile(ratings, (10, 1))
    assert krippendorff_alpha(tenfold, level="ordinal") == pytest.approx(alpha, abs=1e-3)
    low10, high10 = krippendorff_alpha_ci(tenfold, level="ordinal", n_boot=400, seed=1)
    assert high10 - low10 < (high - low) / 2


def test_pattern_grouping_paths_agree() -> None:
    from evalcore.metrics._agreement import _patterns

    rng = np.random.default_rng(0)
    small = rng.integers(0, 3, (500, 4))  # fits one int64 key per row
    wide = rng.integers(0, 3, (500, 45))  # 45 labels of base 3 do not: falls back to rows
    for counts in (small, wide):
        rows, frequency = _patterns(counts)
        expected_rows, expected_frequency = np.unique(counts, axis=0, return_counts=True)
        order = np.lexsort(rows.T[::-1])
        assert np.array_equal(rows[order], expected_rows)
        assert np.array_equal(frequency[order], expected_frequency)


def test_alpha_ci_matches_resampling_items_directly() -> None:
    rng = np.random.default_rng(8)
    truth = rng.integers(1, 4, 120)
    ratings = np.clip(truth[:, None] + rng.integers(-1, 2, (120, 3)), 1, 3).astype(float)
    direct = [krippendorff_alpha(ratings[rng.integers(0, 120, 120)]) for _ in range(400)]
    low, high = krippendorff_alpha_ci(ratings, n_boot=2000, seed=3)
    expected_low, expected_high = np.quantile(direct, [0.025, 0.975])
    assert low == pytest.approx(expected_low, abs=0.05)
    assert high == pytest.approx(expected_high, abs=0.05)


@pytest.mark.parametrize(
    ("ratings", "message"),
    [
        (pd.Series([1, 2]), "not one column"),
        (np.zeros(3), "2-D"),
        (pd.DataFrame([[1, 2]], columns=["a", "a"]), "repeated"),
    ],
)
def test_bad_ratings(ratings: object, message: str) -> None:
    with pytest.raises(MetricError, match=message):
        krippendorff_alpha(ratings)  # type: ignore[arg-type]


def test_bad_level() -> None:
    with pytest.raises(MetricError, match="level"):
        krippendorff_alpha([[1, 2]], level="ratio")  # type: ignore[arg-type]


# --- aggregation ------------------------------------------------------------------------------------


def test_majority_ties_and_empty_items_have_no_consensus() -> None:
    got = aggregate_labels(RATINGS, policy="majority")
    # items: (1,1,-) -> 1; (1,2,-) tie; (2,2,-) -> 2; (2,2,1) -> 2; (3,3,3) -> 3; (-,3,2) tie
    assert np.array_equal(got, [1.0, np.nan, 2.0, 2.0, 3.0, np.nan], equal_nan=True)
    assert got.dtype == np.float64


def test_median_and_mean_round_half_up() -> None:
    ratings = [[1, 2], [1, 3], [2, 3], [1, 1], [3, None]]
    # median of two = mean of the two middle positions, rounded half up:
    #   (1,2) -> 1.5 -> 2; (1,3) -> 2; (2,3) -> 2.5 -> 3; (1,1) -> 1; (3) -> 3
    assert aggregate_labels(ratings, policy="median").tolist() == [2.0, 2.0, 3.0, 1.0, 3.0]
    assert aggregate_labels(ratings, policy="mean").tolist() == [2.0, 2.0, 3.0, 1.0, 3.0]


def test_median_and_mean_of_three() -> None:
    ratings = [[1, 1, 5], [1, 2, 2], [1, 4, 5]]
    # median: 1, 2, 4; mean position on the 1-5 scale (positions 0..4):
    #   (0+0+4)/3 = 1.33 -> 1 -> label 2; (0+1+1)/3 = 0.67 -> 1 -> 2; (0+3+4)/3 = 2.33 -> 2 -> 3
    assert aggregate_labels(ratings, policy="median", labels=LIKERT_5.labels).tolist() == [1, 2, 4]
    assert aggregate_labels(ratings, policy="mean", labels=LIKERT_5.labels).tolist() == [2, 2, 3]


def test_positions_follow_labels_for_ordinal_words() -> None:
    ratings = pd.DataFrame({"a": ["low", "very low", "high"], "b": ["medium", "high", "high"]})
    got = aggregate_labels(ratings, policy="mean", labels=SEVERITY.labels, ordinal=True)
    # positions: (1, 2) -> 1.5 -> 2 medium; (0, 3) -> 1.5 -> 2 medium; (3, 3) -> high
    assert got.tolist() == ["medium", "medium", "high"]
    assert got.dtype == object
    with pytest.raises(MetricError, match="ordinal=True"):
        aggregate_labels(ratings, policy="median", labels=SEVERITY.labels)


def test_annotator_policy() -> None:
    got = aggregate_labels(RATINGS, policy="annotator:cy")
    assert np.array_equal(got, [np.nan, np.nan, np.nan, 1.0, 3.0, 2.0], equal_nan=True)
    assert aggregate_labels([[1, 2]], policy="annotator:1").tolist() == [2.0]
    with pytest.raises(MetricError, match="no annotator named 'dan'"):
        aggregate_labels(RATINGS, policy="annotator:dan")


def test_unknown_policy() -> None:
    with pytest.raises(MetricError, match="policy"):
        aggregate_labels(RATINGS, policy="vote")


def test_word_majority_returns_objects_with_none() -> None:
    got = aggregate_labels([["A", "A", "B"], ["A", "B", None]], policy="majority")
    assert got.tolist() == ["A", None]


def test_aggregation_matches_a_row_by_row_reference() -> None:
    rng = np.random.default_rng(0)
    ratings = rng.integers(1, 6, (2000, 4)).astype(float)
    ratings[rng.random(ratings.shape) < 0.3] = np.nan
    mean = aggregate_labels(ratings, policy="mean", labels=LIKERT_5.labels)
    median = aggregate_labels(ratings, policy="median", labels=LIKERT_5.labels)
    majority = aggregate_labels(ratings, policy="majority", labels=LIKERT_5.labels)
    for i, row in enumerate(ratings):
        seen = sorted(int(x) for x in row if not np.isnan(x))
        if not seen:
            assert np.isnan(mean[i])
            assert np.isnan(median[i])
            assert np.isnan(majority[i])
            continue
        assert mean[i] == math.floor(sum(seen) / len(seen) + 0.5)
        middle = (seen[(len(seen) - 1) // 2] + seen[len(seen) // 2]) / 2
        assert median[i] == math.floor(middle + 0.5)
        counts = {v: seen.count(v) for v in set(seen)}
        top = max(counts.values())
        winners = [v for v, c in counts.items() if c == top]
        assert (majority[i] == winners[0]) if len(winners) == 1 else np.isnan(majority[i])
