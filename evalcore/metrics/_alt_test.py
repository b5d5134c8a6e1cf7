"""The Alternative Annotator Test: can a judge stand in for one of the annotators?

After Calderon, Reichart and Dror (ACL 2025). For each annotator ``h`` in turn, every item ``h``
labelled is scored twice against the *other* annotators' labels ``R`` on that item: once with the
judge's label ``J`` and once with ``h``'s own label ``H``. The alignment of a label ``x`` with ``R``
is ``accuracy`` (the share of ``R`` equal to ``x``) or ``neg_rmse`` (``-sqrt(mean((x - r)**2))``).
The judge wins an item when ``align(J, R) >= align(H, R)``, the annotator when
``align(H, R) >= align(J, R)`` (a tie counts for both). With ``d = w_H - w_J`` over ``h``'s items,
a one-sided one-sample t-test asks whether ``mean(d) < epsilon``: ``epsilon`` is the advantage the
judge is granted for being cheaper. The Benjamini-Yekutieli procedure at ``q`` over the annotators'
p-values says which annotators the judge beats; the share of them is the winning rate ``omega``, and
the judge passes at ``omega >= 0.5``. The advantage probability ``rho_h`` is the mean of ``w_J``.

Everything is computed on an items x annotators x annotators cube of pairwise alignments, so the cost
is a few array passes plus one t-test per annotator.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt
import pandas as pd

from evalcore.errors import MetricError
from evalcore.metrics._agreement import Ratings, encode_ratings
from evalcore.metrics._encode import FloatArray, LabelArray

__all__ = [
    "ALT_TEST_SCORINGS",
    "ALT_TEST_SCORING_DEFS",
    "AltTest",
    "AltTestAnnotator",
    "AltTestScoring",
    "alt_test",
    "alt_test_curve",
    "alt_test_scoring",
    "benjamini_yekutieli",
    "default_alt_test_scoring",
]

Scoring: TypeAlias = Literal["accuracy", "neg_rmse"]


@dataclass(frozen=True)
class AltTestScoring:
    """One alignment score of the Alt-Test, declared once: ``name`` (what :func:`alt_test` takes),
    ``title`` (what people read), the scale kinds it is the default for (``default_for``), whether
    it needs numeric labels and a one-line ``description``. The command line and the pages list and
    default the scorings from :data:`ALT_TEST_SCORING_DEFS`."""

    name: str
    title: str
    default_for: frozenset[str]
    numeric: bool
    description: str


#: Every alignment score the test knows, in the order a menu shows them.
ALT_TEST_SCORING_DEFS: tuple[AltTestScoring, ...] = (
    AltTestScoring(
        "accuracy",
        "accuracy (share equal)",
        frozenset({"nominal", "binary", "pairwise"}),
        False,
        "The share of the other annotators' labels equal to the label.",
    ),
    AltTestScoring(
        "neg_rmse",
        "−RMSE",
        frozenset({"ordinal"}),
        True,
        "Minus the root mean squared distance to the other annotators' labels.",
    ),
)
#: The names of the alignment scores (:data:`ALT_TEST_SCORING_DEFS`).
ALT_TEST_SCORINGS: tuple[str, ...] = tuple(s.name for s in ALT_TEST_SCORING_DEFS)


def alt_test_scoring(name: str) -> AltTestScoring:
    """The declared alignment score called ``name``; :class:`~evalcore.errors.MetricError` naming
    the known ones otherwise.

    >>> alt_test_scoring("neg_rmse").title
    '−RMSE'
    """
    for scoring in ALT_TEST_SCORING_DEFS:
        if scoring.name == name:
            return scoring
    known = ", ".join(f"{s.name} ({s.title})" for s in ALT_TEST_SCORING_DEFS)
    raise MetricError(f"unknown Alt-Test scoring {name!r}; one of {known}")


def default_alt_test_scoring(kind: str) -> str:
    """The alignment score the Alt-Test uses on scales of ``kind`` unless told otherwise:
    ``neg_rmse`` on ordinal scales, ``accuracy`` on nominal, binary and pairwise ones.

    >>> default_alt_test_scoring("ordinal"), default_alt_test_scoring("binary")
    ('neg_rmse', 'accuracy')
    """
    for scoring in ALT_TEST_SCORING_DEFS:
        if kind in scoring.default_for:
            return scoring.name
    raise MetricError(f"no Alt-Test scoring is declared for {kind!r} scales")


def benjamini_yekutieli(p_values: npt.ArrayLike, q: float = 0.05) -> npt.NDArray[np.bool_]:
    """Which hypotheses the Benjamini-Yekutieli step-up procedure rejects at false-discovery rate q.

    With the m p-values sorted ascending and ``H_m = 1 + 1/2 + ... + 1/m``, the largest k with
    ``p_(k) <= (k / m) * q / H_m`` is found and the k smallest are rejected (none when there is no
    such k). A NaN p-value is never rejected but counts in m.

    >>> benjamini_yekutieli([0.001, 0.02, 0.9], q=0.05).tolist()  # H_3 = 11/6; 1/3 * 0.05 / H_3 = 0.0091
    [True, False, False]
    """
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    rejected = np.zeros(m, dtype=bool)
    if m == 0:
        return rejected
    if not 0.0 < q < 1.0:
        raise MetricError(f"q must be strictly between 0 and 1 (got {q!r})")
    harmonic = float(np.sum(1.0 / np.arange(1, m + 1)))
    order = np.argsort(np.where(np.isnan(p), np.inf, p), kind="stable")
    sorted_p = p[order]
    bounds = np.arange(1, m + 1) / m * q / harmonic
    passing = np.flatnonzero(sorted_p <= bounds)  # NaN compares False
    if passing.size:
        rejected[order[: passing[-1] + 1]] = True
    return rejected


@dataclass(frozen=True)
class AltTestAnnotator:
    """The test against one annotator.

    ``n`` is the number of kept items this annotator labelled. A tested annotator has ``p_value``
    (NaN when ``d`` is constant: never a rejection), ``advantage_probability`` (rho: the share of
    items the judge wins) and ``won`` (the judge beats this annotator after the BY correction);
    ``mean_difference`` is the mean of ``d = w_H - w_J``. A skipped one has ``skipped`` (why) and
    ``None`` elsewhere.
    """

    annotator: Hashable
    n: int
    p_value: float | None = None
    advantage_probability: float | None = None
    mean_difference: float | None = None
    won: bool | None = None
    skipped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: NaN becomes ``None``; a skipped annotator keeps only ``n`` and ``skipped``."""
        out: dict[str, Any] = {"annotator": str(self.annotator), "n": self.n}
        if self.skipped is not None:
            out["skipped"] = self.skipped
            return out
        out.update(
            {
                "p_value": _json(self.p_value),
                "advantage_probability": _json(self.advantage_probability),
                "mean_difference": _json(self.mean_difference),
                "won": self.won,
            }
        )
        return out


@dataclass(frozen=True)
class AltTest:
    """The result of :func:`alt_test`.

    ``winning_rate`` (omega, in [0, 1], NaN with no tested annotator) is the share of tested
    annotators the judge beats; ``advantage_probability`` the mean rho over them; ``passed`` is
    ``winning_rate >= 0.5``. ``annotators`` lists every annotator, tested or skipped, in column
    order; the parameters used are kept beside the result.
    """

    winning_rate: float
    advantage_probability: float
    passed: bool
    epsilon: float
    q: float
    scoring: str
    n_items: int
    min_annotators: int
    min_items: int
    annotators: tuple[AltTestAnnotator, ...]

    @property
    def tested(self) -> tuple[AltTestAnnotator, ...]:
        return tuple(a for a in self.annotators if a.skipped is None)

    @property
    def skipped(self) -> tuple[AltTestAnnotator, ...]:
        return tuple(a for a in self.annotators if a.skipped is not None)

    def verdict(self) -> str:
        """One sentence for people: does the judge pass, and against how many annotators."""
        tested = self.tested
        if not tested:
            return (
                "The Alt-Test could not run: no annotator has "
                f"{self.min_items} items shared with the judge and another annotator."
            )
        won = sum(1 for a in tested if a.won)
        verb = "passes" if self.passed else "does not pass"
        return (
            f"The judge {verb} the Alt-Test at ε = {self.epsilon:g}: it beats {won} of "
            f"{len(tested)} annotators (winning rate {self.winning_rate:.2f}; it needs 0.5) and "
            f"wins {self.advantage_probability:.0%} of the items on average."
        )

    def sentence(self) -> str:
        """The verdict as one sentence a manager can repeat, saying what failed when it fails.

        >>> from dataclasses import replace
        >>> a = AltTestAnnotator("ana", 40, 0.01, 0.8, 0.1, True)
        >>> b = AltTestAnnotator("bo", 40, 0.30, 0.6, -0.1, False)
        >>> t = AltTest(0.5, 0.7, True, 0.1, 0.05, "accuracy", 40, 3, 30, (a, b))
        >>> t.sentence()
        'The judge can stand in for an annotator: it beat 1 of 2 annotators (ε = 0.1, q = 0.05).'
        >>> replace(t, winning_rate=0.0, passed=False, annotators=(b,)).sentence()
        'The judge cannot yet stand in for an annotator: it beat 0 of 1 annotators, half are needed (ε = 0.1, q = 0.05); not beaten: bo.'
        """
        tested = self.tested
        settings = f"(ε = {self.epsilon:g}, q = {self.q:g})"
        if not tested:
            return (
                "There is no telling whether the judge can stand in for an annotator: no "
                f"annotator shares {self.min_items} items with the judge and another annotator."
            )
        won = sum(1 for a in tested if a.won)
        if self.passed:
            return (
                f"The judge can stand in for an annotator: it beat {won} of {len(tested)} "
                f"annotators {settings}."
            )
        lost = ", ".join(str(a.annotator) for a in tested if not a.won)
        return (
            f"The judge cannot yet stand in for an annotator: it beat {won} of {len(tested)} "
            f"annotators, half are needed {settings}; not beaten: {lost}."
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with the keys of ``evalcore calibrate --alt-test --json``."""
        return {
            "winning_rate": _json(self.winning_rate),
            "advantage_probability": _json(self.advantage_probability),
            "passed": self.passed,
            "epsilon": self.epsilon,
            "q": self.q,
            "scoring": self.scoring,
            "n_items": self.n_items,
            "min_annotators": self.min_annotators,
            "min_items": self.min_items,
            "annotators": [a.to_dict() for a in self.annotators],
        }


def _json(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


@dataclass(frozen=True)
class _Wins:
    """Per annotator column: which kept items it labelled, and who won each of them."""

    names: list[Hashable]
    n_items: int
    own: npt.NDArray[np.bool_]  # items x annotators: kept and labelled by the annotator
    w_judge: FloatArray  # items x annotators, 0/1 (meaningful where ``own``)
    w_human: FloatArray


def _values(annotators: Ratings, judge: LabelArray, scoring: str) -> tuple[list[Hashable], Any]:
    """The labels as numbers (codes on one axis for accuracy, the labels for neg_rmse), NaN missing;
    the judge is the last column."""
    alt_test_scoring(scoring)  # a declared one, or a MetricError naming them
    if isinstance(annotators, pd.DataFrame):
        names: list[Hashable] = list(annotators.columns)
        raw = annotators.to_numpy(dtype=object)
    else:
        raw = np.asarray(annotators, dtype=object)
        if raw.ndim != 2:
            raise MetricError(f"annotators must be 2-D, items x annotators (got shape {raw.shape})")
        names = list(range(raw.shape[1]))
    verdicts = np.asarray(judge, dtype=object).ravel()
    if verdicts.shape[0] != raw.shape[0]:
        raise MetricError(
            f"judge has {verdicts.shape[0]} labels for {raw.shape[0]} items of the annotators' table"
        )
    if len(names) < 3:
        raise MetricError(f"the Alt-Test needs at least 3 annotators (got {len(names)})")
    table = encode_ratings(np.column_stack([raw, verdicts]), None)
    codes = table.codes
    if scoring == "accuracy":
        values = codes.astype(np.float64)
    else:
        if not all(isinstance(x, float) for x in table.labels):
            raise MetricError("neg_rmse scoring needs numeric labels; use scoring='accuracy'")
        values = np.asarray(table.labels, dtype=np.float64)[np.maximum(codes, 0)]
    values[codes < 0] = np.nan
    return names, values


def _wins(annotators: Ratings, judge: LabelArray, scoring: str, min_annotators: int) -> _Wins:
    names, values = _values(annotators, judge, scoring)
    human, verdict = values[:, :-1], values[:, -1]
    present = ~np.isnan(human)
    kept = ~np.isnan(verdict) & (present.sum(axis=1) >= min_annotators)
    human, present, verdict = human[kept], present[kept], verdict[kept]
    m = human.shape[1]
    # others[i, h, g]: annotator g is in R for annotator h on item i
    others = present[:, None, :] & present[:, :, None] & ~np.eye(m, dtype=bool)[None, :, :]
    n_others = others.sum(axis=2).astype(np.float64)
    with np.errstate(invalid="ignore"):
        if scoring == "accuracy":
            h_hits = human[:, :, None] == human[:, None, :]
            j_hits = verdict[:, None, None] == human[:, None, :]
            h_score = (h_hits & others).sum(axis=2)
            j_score = (j_hits & others).sum(axis=2)
            # both over the same |R|: compare counts, no rounding
            j_align, h_align = j_score.astype(np.float64), h_score.astype(np.float64)
        else:
            h_sq = np.where(others, (human[:, :, None] - human[:, None, :]) ** 2, 0.0).sum(axis=2)
            j_sq = np.where(others, (verdict[:, None, None] - human[:, None, :]) ** 2, 0.0)
            j_sq = j_sq.sum(axis=2)
            # -sqrt(mean) is decreasing in the sum of squares over the same |R|: compare sums
            j_align, h_align = -j_sq, -h_sq
    own = present & (n_others > 0)
    w_judge = (j_align >= h_align).astype(np.float64)
    w_human = (h_align >= j_align).astype(np.float64)
    return _Wins(names, int(kept.sum()), own, w_judge, w_human)


def _one_sided_p(d: FloatArray, epsilon: float) -> float:
    if d.size < 2 or np.all(d == d[0]):
        return math.nan  # constant d: no variance, never a rejection
    from scipy import stats  # here, not at the top: it costs half a second of every CLI start

    return float(stats.ttest_1samp(d, epsilon, alternative="less").pvalue)


def _check(epsilon: float, q: float, min_annotators: int, min_items: int) -> None:
    if not (math.isfinite(epsilon) and 0.0 <= epsilon <= 1.0):
        raise MetricError(f"epsilon must be between 0 and 1 (got {epsilon!r})")
    if not 0.0 < q < 1.0:
        raise MetricError(f"q must be strictly between 0 and 1 (got {q!r})")
    if min_annotators < 2:
        raise MetricError(f"min_annotators must be at least 2 (got {min_annotators!r})")
    if min_items < 2:
        raise MetricError(f"min_items must be at least 2 (got {min_items!r})")


def _result(
    wins: _Wins, epsilon: float, q: float, scoring: str, min_annotators: int, min_items: int
) -> AltTest:
    n = wins.own.sum(axis=0)
    tested = np.flatnonzero(n >= min_items)
    p_values = np.full(len(wins.names), math.nan)
    rho = np.full(len(wins.names), math.nan)
    mean_d = np.full(len(wins.names), math.nan)
    for column in tested:
        rows = wins.own[:, column]
        d = wins.w_human[rows, column] - wins.w_judge[rows, column]
        p_values[column] = _one_sided_p(d, epsilon)
        rho[column] = float(wins.w_judge[rows, column].mean())
        mean_d[column] = float(d.mean())
    rejected = np.zeros(len(wins.names), dtype=bool)
    rejected[tested] = benjamini_yekutieli(p_values[tested], q)
    rows_out = []
    for h, name in enumerate(wins.names):
        if n[h] < min_items:
            rows_out.append(
                AltTestAnnotator(
                    name,
                    int(n[h]),
                    skipped=f"{int(n[h])} shared items, fewer than {min_items}",
                )
            )
        else:
            rows_out.append(
                AltTestAnnotator(
                    name,
                    int(n[h]),
                    p_value=float(p_values[h]),
                    advantage_probability=float(rho[h]),
                    mean_difference=float(mean_d[h]),
                    won=bool(rejected[h]),
                )
            )
    omega = float(rejected[tested].mean()) if tested.size else math.nan
    advantage = float(rho[tested].mean()) if tested.size else math.nan
    return AltTest(
        winning_rate=omega,
        advantage_probability=advantage,
        passed=bool(tested.size and omega >= 0.5),
        epsilon=float(epsilon),
        q=float(q),
        scoring=scoring,
        n_items=wins.n_items,
        min_annotators=int(min_annotators),
        min_items=int(min_items),
        annotators=tuple(rows_out),
    )


def alt_test(
    annotators: Ratings,
    judge: LabelArray,
    *,
    scoring: Scoring = "accuracy",
    epsilon: float = 0.2,
    q: float = 0.05,
    min_annotators: int = 2,
    min_items: int = 30,
) -> AltTest:
    """The Alternative Annotator Test of a judge against several annotators.

    ``annotators`` is an items x annotators table (a DataFrame whose columns are the annotators, or a
    2-D array) of raw labels, missing where an annotator did not label an item; ``judge`` has the
    judge's label of each item (missing allowed). The items kept are those the judge labelled and at
    least ``min_annotators`` annotators labelled; an annotator with at least ``min_items`` kept items
    is tested, the others are listed as skipped. ``scoring`` is the alignment of a label with the
    other annotators' labels: ``"accuracy"`` (share equal; for nominal, binary and pairwise scales)
    or ``"neg_rmse"`` (minus the root mean squared difference; for ordinal and numeric scales, and
    it needs numeric labels). ``epsilon`` (0.2: the paper's choice against crowd workers; 0.1-0.15
    against experts) is the advantage granted to the judge, ``q`` the false-discovery rate of the
    Benjamini-Yekutieli correction. See the module docstring for the definitions.

    The winning rate lies in [0, 1] (1: the judge beats every annotator) and the judge passes at 0.5
    or more. Raises :class:`~evalcore.errors.MetricError` with fewer than 3 annotator columns, a
    judge of another length or bad parameters.

    >>> humans = [[1, 1, 1], [1, 1, 0], [0, 0, 0], [0, 1, 1]] * 10
    >>> result = alt_test(humans, [1, 1, 0, 1] * 10, min_items=10)
    >>> result.passed, round(result.winning_rate, 3), result.advantage_probability
    (True, 0.667, 1.0)
    >>> [a.won for a in result.annotators]  # the middle one ties every item: constant d, no test
    [True, False, True]
    """
    _check(epsilon, q, min_annotators, min_items)
    wins = _wins(annotators, judge, scoring, min_annotators)
    return _result(wins, epsilon, q, scoring, min_annotators, min_items)


def alt_test_curve(
    annotators: Ratings,
    judge: LabelArray,
    epsilons: Sequence[float] = tuple(np.round(np.linspace(0.0, 0.3, 31), 3)),
    *,
    scoring: Scoring = "accuracy",
    q: float = 0.05,
    min_annotators: int = 2,
    min_items: int = 30,
) -> pd.DataFrame:
    """The winning rate and the advantage probability for each ``epsilon`` (default 0 to 0.3 by
    0.01): one row per epsilon, columns ``epsilon``, ``winning_rate``, ``advantage_probability``.
    The wins are computed once; only the t-tests depend on epsilon.

    >>> humans = [[1, 1, 1], [1, 1, 0], [0, 0, 0], [0, 1, 1]] * 10
    >>> curve = alt_test_curve(humans, [1, 1, 0, 1] * 10, [0.0, 0.2], min_items=10)
    >>> curve["winning_rate"].round(3).tolist()
    [0.667, 0.667]
    """
    for eps in epsilons:
        _check(float(eps), q, min_annotators, min_items)
    wins = _wins(annotators, judge, scoring, min_annotators)
    rows = []
    for eps in epsilons:
        result = _result(wins, float(eps), q, scoring, min_annotators, min_items)
        rows.append((float(eps), result.winning_rate, result.advantage_probability))
    return pd.DataFrame(rows, columns=["epsilon", "winning_rate", "advantage_probability"])
