"""Intervals for a proportion: Wilson and Clopper–Pearson, never a Wald interval.

A Wald interval ``p ± z·sqrt(p(1−p)/n)`` collapses to a point at 0 or n successes (5 of 5 gives
[1, 1]) and undercovers at small n. These two do not:

- **Wilson** (score interval): the values of p whose score test at level ``1 − confidence`` is not
  rejected. Closed form; centred between p̂ and 1/2; coverage close to nominal on average.
  Convention of ``statsmodels.stats.proportion.proportion_confint(method="wilson")``.
- **Clopper–Pearson** (exact): inverts two one-sided binomial tests with Beta quantiles; at least
  nominal coverage for every p, so it is wider. Convention of ``proportion_confint(method="beta")``.
  :func:`clopper_pearson_lower` is the one-sided lower bound used by guarantees ("at least α with
  risk δ").

>>> [round(x, 4) for x in wilson_interval(5, 5)]  # 5 of 5: not [1, 1]
[0.5655, 1.0]
>>> [round(x, 4) for x in clopper_pearson_interval(0, 10)]
[0.0, 0.3085]
"""

from __future__ import annotations

import math
from statistics import NormalDist

from evalcore.errors import MetricError

__all__ = [
    "PROPORTION_METHODS",
    "clopper_pearson_interval",
    "clopper_pearson_lower",
    "proportion_interval",
    "wilson_interval",
]

#: The interval methods :func:`proportion_interval` knows, by name.
PROPORTION_METHODS = ("wilson", "clopper-pearson")


def _check(successes: float, n: float, confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise MetricError(f"confidence must be strictly between 0 and 1 (got {confidence!r})")
    if not (math.isfinite(n) and n > 0):
        raise MetricError(f"a proportion needs at least one trial (got n={n!r})")
    if not (math.isfinite(successes) and 0 <= successes <= n):
        raise MetricError(f"successes must be between 0 and n={n!r} (got {successes!r})")


def wilson_interval(successes: float, n: float, *, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` out of ``n``.

    With z the two-sided normal quantile, p̂ = successes/n:
    centre = (p̂ + z²/2n) / (1 + z²/n), half = z·sqrt(p̂(1−p̂)/n + z²/4n²) / (1 + z²/n).
    Always inside [0, 1], and never a single point for n > 0. ``successes`` may be fractional (an
    effective count); statsmodels accepts the same.

    >>> lo, hi = wilson_interval(3, 4)
    >>> round(lo, 4), round(hi, 4)  # centre (0.75 + 0.4802) / 1.9604, half 0.4402
    (0.3006, 0.9544)
    """
    _check(successes, n, confidence)
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    p = successes / n
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2.0 * n)) / denominator
    half = z * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def _beta_ppf(q: float, a: float, b: float) -> float:
    from scipy.stats import beta  # scipy costs start-up time: only where it is needed

    return float(beta.ppf(q, a, b))


def clopper_pearson_interval(
    successes: int, n: int, *, confidence: float = 0.95
) -> tuple[float, float]:
    """The exact (Clopper–Pearson) interval: the Beta(x, n−x+1) quantile at α/2 and the
    Beta(x+1, n−x) quantile at 1−α/2, with 0 at x = 0 and 1 at x = n.

    >>> [round(v, 4) for v in clopper_pearson_interval(5, 5)]
    [0.4782, 1.0]
    """
    _check(successes, n, confidence)
    alpha = 1.0 - confidence
    lower = 0.0 if successes == 0 else _beta_ppf(alpha / 2.0, successes, n - successes + 1)
    upper = 1.0 if successes == n else _beta_ppf(1.0 - alpha / 2.0, successes + 1, n - successes)
    return lower, upper


def clopper_pearson_lower(successes: int, n: int, *, confidence: float = 0.95) -> float:
    """The one-sided exact lower bound: the p with P(X ≥ successes | p) = 1 − confidence, that is
    the Beta(x, n−x+1) quantile at 1 − confidence (0 when there is no success). With probability
    at least ``confidence`` the true proportion is at or above it.

    >>> round(clopper_pearson_lower(30, 30, confidence=0.95), 4)  # 0.05 ** (1 / 30)
    0.9051
    """
    _check(successes, n, confidence)
    if successes == 0:
        return 0.0
    return _beta_ppf(1.0 - confidence, successes, n - successes + 1)


def proportion_interval(
    successes: float, n: float, *, confidence: float = 0.95, method: str = "wilson"
) -> tuple[float, float]:
    """The interval of ``method`` (``"wilson"`` or ``"clopper-pearson"``; see the module).

    >>> proportion_interval(2, 4, method="clopper-pearson") == clopper_pearson_interval(2, 4)
    True
    """
    if method == "wilson":
        return wilson_interval(successes, n, confidence=confidence)
    if method == "clopper-pearson":
        if successes != int(successes) or n != int(n):
            raise MetricError("the Clopper-Pearson interval needs whole counts")
        return clopper_pearson_interval(int(successes), int(n), confidence=confidence)
    raise MetricError(f"unknown interval method {method!r}; use one of {PROPORTION_METHODS}")
