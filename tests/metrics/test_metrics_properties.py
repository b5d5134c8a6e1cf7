"""Property tests: ranges, perfect agreement, bootstrap intervals and reproducibility."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import evalcore.metrics as m

LABELS = st.sampled_from([1, 2, 3, 4, 5])
PAIRS = st.integers(min_value=1, max_value=60).flatmap(
    lambda n: st.tuples(
        st.lists(LABELS, min_size=n, max_size=n), st.lists(LABELS, min_size=n, max_size=n)
    )
)
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _in(value: float, low: float, high: float) -> bool:
    return math.isnan(value) or low - 1e-12 <= value <= high + 1e-12


@FAST
@given(PAIRS)
def test_ranges(pair: tuple[list[int], list[int]]) -> None:
    a, b = pair
    for fn in (m.accuracy, m.balanced_accuracy, m.weighted_f1):
        assert 0.0 <= fn(a, b) <= 1.0
    for weights in (None, "linear", "quadratic"):
        assert _in(m.cohen_kappa(a, b, weights=weights), -1.0, 1.0)
    assert _in(m.spearman(a, b), -1.0, 1.0)
    assert _in(m.kendall_tau_b(a, b), -1.0, 1.0)
    for row in m.per_class_metrics(a, b):
        assert 0 <= row.precision <= 1
        assert 0 <= row.recall <= 1
        assert 0 <= row.f1 <= 1


@FAST
@given(st.lists(LABELS, min_size=1, max_size=60))
def test_perfect_agreement_scores_one(a: list[int]) -> None:
    for fn in (m.accuracy, m.balanced_accuracy, m.weighted_f1):
        assert fn(a, a) == 1.0
    if len(set(a)) > 1:  # a constant array leaves kappa and the correlations undefined
        for weights in (None, "linear", "quadratic"):
            assert m.cohen_kappa(a, a, weights=weights) == 1.0
        assert abs(m.spearman(a, a) - 1.0) < 1e-12
        assert abs(m.kendall_tau_b(a, a) - 1.0) < 1e-12
    else:
        assert math.isnan(m.cohen_kappa(a, a))
        assert math.isnan(m.spearman(a, a))


@FAST
@given(PAIRS)
def test_balanced_accuracy_is_mean_recall_over_present_classes(
    pair: tuple[list[int], list[int]],
) -> None:
    a, b = pair
    recalls = [
        sum(1 for x, y in zip(a, b, strict=True) if x == y == c) / a.count(c)
        for c in sorted(set(a))
    ]
    assert abs(m.balanced_accuracy(a, b) - sum(recalls) / len(recalls)) < 1e-12


@FAST
@given(PAIRS, st.integers(min_value=0, max_value=2**31))
def test_count_table_bootstrap_is_reproducible(
    pair: tuple[list[int], list[int]], seed: int
) -> None:
    a, b = pair
    first = m.calibrate(a, b, n_boot=40, seed=seed, kind="ordinal")
    second = m.calibrate(a, b, n_boot=40, seed=seed, kind="ordinal")
    assert first.to_dict() == second.to_dict()
    table = m.confusion_matrix(a, b)
    assert np.array_equal(
        m.resample_table(table, n_boot=15, seed=seed), m.resample_table(table, n_boot=15, seed=seed)
    )


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=0, max_value=10_000))
def test_intervals_contain_the_point_estimate_in_typical_cases(seed: int) -> None:
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, 300)
    judge = np.where(rng.random(300) < 0.6, human, rng.integers(1, 6, 300))
    report = m.calibrate(human, judge, kind="ordinal", n_boot=300, seed=seed)
    for name, (low, high) in report.ci.items():
        point = getattr(report, name)
        assume(not math.isnan(point))
        assert low <= point <= high, name


@FAST
@given(PAIRS)
def test_table_metrics_agree_with_the_array_functions(pair: tuple[list[int], list[int]]) -> None:
    a, b = pair
    table = m.confusion_matrix(a, b)
    pairs = {
        "accuracy_balanced": m.balanced_accuracy(a, b),
        "f1_score_balanced": m.weighted_f1(a, b),
        "accuracy": m.accuracy(a, b),
        "cohen_kappa_linear": m.cohen_kappa(a, b, weights="linear"),
        "kendall_tau": m.kendall_tau_b(a, b),
        "spearman": m.spearman(a, b),
    }
    for name, value in pairs.items():
        got = float(m.table_metric(table, name))  # type: ignore[arg-type]
        assert (math.isnan(got) and math.isnan(value)) or abs(got - value) < 1e-12


@FAST
@given(
    st.lists(
        st.lists(st.one_of(st.none(), LABELS), min_size=3, max_size=3), min_size=1, max_size=30
    )
)
def test_alpha_is_at_most_one(rows: list[list[int | None]]) -> None:
    for level in ("nominal", "ordinal", "interval"):
        alpha = m.krippendorff_alpha(rows, level=level)  # type: ignore[arg-type]
        assert math.isnan(alpha) or alpha <= 1.0 + 1e-12


@FAST
@given(
    st.floats(min_value=0, max_value=1),
    st.floats(min_value=0.5, max_value=1),
    st.floats(min_value=0.5, max_value=1),
)
def test_bias_corrected_rate_is_a_rate(p_obs: float, tpr: float, tnr: float) -> None:
    assume(tpr + tnr > 1.0 + 1e-9)
    assert 0.0 <= m.bias_corrected_rate(p_obs, tpr, tnr) <= 1.0


@FAST
@given(st.text(max_size=40), st.text(max_size=40))
def test_token_f1_is_a_symmetric_rate(x: str, y: str) -> None:
    score = m.token_f1(x, y)
    assert 0.0 <= score <= 1.0
    assert score == m.token_f1(y, x)
