"""evalcore against reference implementations on random data: scikit-learn, SciPy, krippendorff."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.stats
from sklearn import metrics as skm

from evalcore.metrics import (
    balanced_accuracy,
    cohen_kappa,
    confusion_labels,
    confusion_matrix,
    kendall_tau_b,
    krippendorff_alpha,
    per_class_metrics,
    spearman,
    weighted_f1,
)


def _random_pair(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 8))
    n = int(rng.integers(2, 80))
    human = rng.integers(1, k + 1, n)
    if seed % 3 == 0:  # an unrelated judge
        judge = rng.integers(1, k + 2, n)  # sometimes with a label only the judge uses
    else:  # a judge that is off by at most one step
        judge = np.clip(human + rng.integers(-1, 2, n), 1, k)
    return human, judge


def _same(ours: float, theirs: float) -> bool:
    if math.isnan(ours) or math.isnan(theirs):
        return math.isnan(ours) and math.isnan(theirs)
    return ours == pytest.approx(theirs, abs=1e-12)


@pytest.mark.parametrize("seed", range(40))
def test_against_sklearn(seed: int) -> None:
    human, judge = _random_pair(seed)
    labels = sorted(set(human) | set(judge))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns about classes only the judge uses
        assert (confusion_matrix(human, judge) == skm.confusion_matrix(human, judge)).all()
        assert _same(balanced_accuracy(human, judge), skm.balanced_accuracy_score(human, judge))
        assert _same(
            weighted_f1(human, judge),
            skm.f1_score(human, judge, average="weighted", zero_division=0),
        )
        for weights in (None, "linear", "quadratic"):
            theirs = skm.cohen_kappa_score(human, judge, labels=labels, weights=weights)
            assert _same(cohen_kappa(human, judge, weights=weights), theirs)
        p, r, f, s = skm.precision_recall_fscore_support(
            human, judge, labels=labels, zero_division=0
        )
    ours = per_class_metrics(human, judge)
    assert [m.support for m in ours] == s.tolist()
    assert np.allclose([m.precision for m in ours], p)
    assert np.allclose([m.recall for m in ours], r)
    assert np.allclose([m.f1 for m in ours], f)


@pytest.mark.parametrize("seed", range(8))
def test_against_sklearn_with_explicit_labels_including_unused(seed: int) -> None:
    human, judge = _random_pair(seed)
    labels = list(range(0, 12))  # 0 and 9..11 never occur
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert (
            confusion_matrix(human, judge, labels=labels)
            == skm.confusion_matrix(human, judge, labels=labels)
        ).all()
        for weights in (None, "linear", "quadratic"):
            theirs = skm.cohen_kappa_score(human, judge, labels=labels, weights=weights)
            assert _same(cohen_kappa(human, judge, labels=labels, weights=weights), theirs)


@pytest.mark.parametrize("seed", range(40))
def test_against_scipy_rank_correlations(seed: int) -> None:
    human, judge = _random_pair(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on constant input
        rho = scipy.stats.spearmanr(human, judge).statistic
        tau = scipy.stats.kendalltau(human, judge).statistic
    assert _same(spearman(human, judge), float(rho))
    assert _same(kendall_tau_b(human, judge), float(tau))


def test_string_labels_against_sklearn_on_the_same_strings() -> None:
    rng = np.random.default_rng(11)
    words = np.array(["bad", "fair", "good", "great", "poor"], dtype=object)
    human = words[rng.integers(0, 5, 500)]
    judge = np.where(rng.random(500) < 0.6, human, words[rng.integers(0, 5, 500)])
    assert confusion_labels(human, judge) == sorted(words)
    assert (confusion_matrix(human, judge) == skm.confusion_matrix(human, judge)).all()
    assert balanced_accuracy(human, judge) == pytest.approx(
        skm.balanced_accuracy_score(human, judge)
    )
    assert weighted_f1(human, judge) == pytest.approx(
        skm.f1_score(human, judge, average="weighted")
    )


# --- Krippendorff's alpha ---------------------------------------------------------------------------

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 coders x 12 units, values 1-5,
# with missing data. The paper reports alpha 0.743 (nominal), 0.815 (ordinal) and 0.849 (interval).
_N = np.nan
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, _N, _N, _N],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _N, 3],
        [_N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _N],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _N],
    ]
).T  # items x coders


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]
)
def test_alpha_matches_the_published_example(level: str, published: float) -> None:
    alpha = krippendorff_alpha(KRIPPENDORFF_2011, level=level)  # type: ignore[arg-type]
    assert round(alpha, 3) == published


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_against_the_krippendorff_package(seed: int, level: str) -> None:
    krippendorff = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(seed)
    items, coders, k = int(rng.integers(4, 40)), int(rng.integers(2, 6)), int(rng.integers(2, 7))
    truth = rng.integers(1, k + 1, items)
    ratings = np.clip(truth[:, None] + rng.integers(-1, 2, (items, coders)), 1, k).astype(float)
    ratings[rng.random(ratings.shape) < 0.25] = np.nan
    ours = krippendorff_alpha(ratings, level=level)  # type: ignore[arg-type]
    try:
        theirs = krippendorff.alpha(reliability_data=ratings.T, level_of_measurement=level)
    except ValueError:  # the package refuses inputs with a single value; we return NaN there
        theirs = math.nan
    assert _same(ours, float(theirs))
