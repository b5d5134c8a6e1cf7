"""Can the judge stand in for people: the Alt-Test of a run, and the human-level rate of the items
only the judge labelled. Pure functions over :class:`~evalcore.report.CalibrationData`, the one input
of every calibration, so the CLI, the pages and the HTML report show the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import pandas as pd

from evalcore.errors import EvalcoreError, MetricError
from evalcore.labels import Scale, format_label
from evalcore.metrics import (
    AltTest,
    RateEstimates,
    ScoreEstimates,
    alt_test,
    alt_test_curve,
    default_alt_test_scoring,
    estimate_rate,
    estimate_scores,
)
from evalcore.report._calibration import _label_on
from evalcore.report._data import CalibrationData, RunData, scale_codes

T = TypeVar("T")

__all__ = [
    "ALT_TEST_EPSILONS",
    "alt_test_table",
    "default_scoring",
    "rate_table",
    "run_alt_test",
    "run_alt_test_curve",
    "run_rate_estimate",
    "run_score_estimate",
    "score_table",
]

#: The epsilons of the Alt-Test chart: 0 to 0.3 by 0.01.
ALT_TEST_EPSILONS: tuple[float, ...] = tuple(round(0.01 * i, 2) for i in range(31))


def default_scoring(scale: Scale) -> str:
    """The Alt-Test's alignment score for a scale, as declared in
    :data:`evalcore.metrics.ALT_TEST_SCORING_DEFS`: ``neg_rmse`` on ordinal scales, else
    ``accuracy`` (nominal, binary and pairwise).

    >>> from evalcore.labels import LIKERT_5, PASS_FAIL
    >>> default_scoring(LIKERT_5), default_scoring(PASS_FAIL)
    ('neg_rmse', 'accuracy')
    """
    return default_alt_test_scoring(scale.kind)


def _positions(values: pd.Series | npt.NDArray[Any], scale: Scale) -> npt.NDArray[np.float64]:
    """Labels as numbers: the label itself on numeric scales, else its position; NaN missing."""
    codes = scale_codes(values, scale)
    if scale.is_numeric:
        lookup = np.asarray([*scale.labels, np.nan], dtype=np.float64)
    else:
        lookup = np.asarray([*range(len(scale.labels)), np.nan], dtype=np.float64)
    return lookup[codes]


def _run(data: CalibrationData, run_id: int) -> RunData:
    try:
        return data.run(run_id)
    except KeyError:
        raise EvalcoreError(f"run {run_id} is not part of this calibration") from None


def _alt_inputs(data: CalibrationData, run_id: int) -> tuple[pd.DataFrame, npt.NDArray[Any]]:
    run = _run(data, run_id)
    humans = pd.DataFrame(
        {name: _positions(data.human[name].to_numpy(), data.scale) for name in data.human.columns},
        index=data.human.index,
    )
    ok = run.results["status"].cat.codes.to_numpy() == 0
    judge = np.where(ok, _positions(run.results["label"].to_numpy(), data.scale), np.nan)
    return humans, judge


def _scoring(data: CalibrationData, scoring: str | None) -> str:
    return default_scoring(data.scale) if scoring is None else scoring


def _alt(data: CalibrationData, run_id: int, compute: Callable[..., T], **options: Any) -> T:
    """``compute(humans, judge, **options)`` on one run's labels, its errors naming the criterion."""
    humans, judge = _alt_inputs(data, run_id)
    options["scoring"] = _scoring(data, options.get("scoring"))
    try:
        return compute(humans, judge, **options)
    except MetricError as exc:
        raise EvalcoreError(f"{data.criterion.name}: Alt-Test: {exc}") from exc


def run_alt_test(
    data: CalibrationData,
    run_id: int,
    *,
    scoring: str | None = None,
    epsilon: float = 0.2,
    q: float = 0.05,
    min_annotators: int = 2,
    min_items: int = 30,
) -> AltTest:
    """The Alt-Test (:func:`evalcore.metrics.alt_test`) of one run against every annotator of the
    data. ``scoring=None`` picks :func:`default_scoring` of the scale. Raises
    :class:`~evalcore.errors.EvalcoreError` naming the criterion when it cannot run (fewer than 3
    annotators, a scoring that does not fit the scale)."""
    return _alt(
        data,
        run_id,
        alt_test,
        scoring=scoring,
        epsilon=epsilon,
        q=q,
        min_annotators=min_annotators,
        min_items=min_items,
    )


def run_alt_test_curve(
    data: CalibrationData,
    run_id: int,
    *,
    epsilons: Sequence[float] = ALT_TEST_EPSILONS,
    scoring: str | None = None,
    q: float = 0.05,
    min_annotators: int = 2,
    min_items: int = 30,
) -> pd.DataFrame:
    """Winning rate and advantage probability of one run for each epsilon (the Alt-Test chart)."""
    return _alt(
        data,
        run_id,
        alt_test_curve,
        epsilons=epsilons,
        scoring=scoring,
        q=q,
        min_annotators=min_annotators,
        min_items=min_items,
    )


def run_rate_estimate(
    data: CalibrationData,
    run_id: int,
    human: pd.Series,
    *,
    positive: object = None,
    confidence: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> RateEstimates:
    """The rate of the scale's positive label people would give, from one run's labels on every item
    and ``human`` (one label per item, e.g. :attr:`Calibration.human`; missing = unlabelled).

    The labelled items are those with a human label; the unlabelled ones, those without one that the
    run labelled. ``positive`` defaults to the scale's positive label (its first). Binary scales
    only; raises :class:`~evalcore.errors.EvalcoreError` naming the
    criterion otherwise, or when either set is too small.
    """
    scale = data.scale
    name = data.criterion.name
    if scale.kind != "binary":
        raise EvalcoreError(f"{name}: the human-level rate needs a binary criterion ({scale.kind})")
    run = _run(data, run_id)
    try:
        positive = scale.positive if positive is None else _label_on(scale, positive)
    except EvalcoreError as exc:
        raise EvalcoreError(f"{name}: {exc}") from exc
    ok = run.results["status"].cat.codes.to_numpy() == 0
    judge = np.where(ok, run.results["label"].to_numpy(dtype=object), None)
    on_items = human.reindex(data.items.index)
    labelled = on_items.notna().to_numpy()
    if not labelled.any():
        raise EvalcoreError(f"{name}: no item has a human label, so there is nothing to calibrate")
    try:
        return estimate_rate(
            on_items.to_numpy(dtype=object)[labelled],
            judge[labelled],
            judge[~labelled],
            positive=positive,
            confidence=confidence,
            n_boot=n_boot,
            seed=seed,
        )
    except MetricError as exc:
        raise EvalcoreError(
            f"{name}: the rate of {format_label(positive)!r} cannot be estimated: {exc}"
        ) from exc


def run_score_estimate(
    data: CalibrationData,
    run_id: int,
    human: pd.Series,
    *,
    confidence: float = 0.95,
) -> ScoreEstimates:
    """What people would say about the items only one run labelled, on a scale of any kind: each
    label's share and, on ordinal scales, the mean score (its numbers, or positions 1..k for words),
    each labelled-only and by PPI++ (:func:`evalcore.metrics.estimate_scores`). The labelled items
    are those with a human label (``human``, e.g. :attr:`Calibration.human`), the unlabelled ones
    those without one that the run labelled. Raises :class:`~evalcore.errors.EvalcoreError` naming
    the criterion when either set is too small.
    """
    scale = data.scale
    name = data.criterion.name
    run = _run(data, run_id)
    ok = run.results["status"].cat.codes.to_numpy() == 0
    judge = np.where(ok, run.results["label"].to_numpy(dtype=object), None)
    on_items = human.reindex(data.items.index)
    labelled = on_items.notna().to_numpy()
    if not labelled.any():
        raise EvalcoreError(f"{name}: no item has a human label, so there is nothing to calibrate")
    try:
        return estimate_scores(
            on_items.to_numpy(dtype=object)[labelled],
            judge[labelled],
            judge[~labelled],
            labels=scale.labels,
            ordinal=scale.is_ordinal,
            confidence=confidence,
        )
    except MetricError as exc:
        raise EvalcoreError(f"{name}: the human-level scores cannot be estimated: {exc}") from exc


def score_table(estimates: ScoreEstimates) -> pd.DataFrame:
    """The estimates of :func:`run_score_estimate` as people read them: one row per quantity (the
    mean score first, then each label's share) and method, with the interval, its method and the
    judge's own figure on the unlabelled items."""
    rows = []
    quantities: list[tuple[str, Any, float, bool]] = []
    if estimates.mean is not None and estimates.judge_mean is not None:
        quantities.append(("mean score", estimates.mean, estimates.judge_mean, False))
    for label, pair, judge in zip(
        estimates.labels, estimates.shares, estimates.judge_shares, strict=True
    ):
        quantities.append((f"share of {format_label(label)}", pair, judge, True))
    for quantity, pair, judge, share in quantities:
        for e in pair:
            shown = (lambda v: f"{v:.1%}") if share else (lambda v: f"{v:.3f}")
            note = e.note or ""
            if e.fallback_ci is not None:
                note = (
                    f"a single point; the labelled items' Wilson interval is "
                    f"[{shown(e.fallback_ci[0])}, {shown(e.fallback_ci[1])}]"
                )
            rows.append(
                {
                    "quantity": quantity,
                    "method": e.method + ("" if e.lam is None else f" (λ = {e.lam:.2f})"),
                    "estimate": shown(e.rate),
                    "interval": f"[{shown(e.ci[0])}, {shown(e.ci[1])}] ({e.confidence:.0%})",
                    "interval method": e.interval,
                    "note": note,
                    "judge on unlabelled": shown(judge),
                    "labelled items": e.n_labelled,
                    "unlabelled items": e.n_unlabelled,
                }
            )
    return pd.DataFrame(rows)


def alt_test_table(result: AltTest) -> pd.DataFrame:
    """The per-annotator table of an Alt-Test as people read it: one row per annotator with the
    items compared, the share the judge wins (rho), the mean of ``d``, the one-sided p-value and
    whether the judge beats that annotator (or why the annotator was skipped)."""
    rows = []
    for a in result.annotators:
        if a.skipped is not None:
            rows.append(
                {
                    "annotator": str(a.annotator),
                    "items": a.n,
                    "judge wins (ρ)": "–",
                    "mean d": "–",
                    "p-value": "–",
                    "judge beats them": f"skipped: {a.skipped}",
                }
            )
            continue
        p = a.p_value
        rows.append(
            {
                "annotator": str(a.annotator),
                "items": a.n,
                "judge wins (ρ)": f"{a.advantage_probability:.2f}",
                "mean d": f"{a.mean_difference:+.3f}",
                "p-value": "– (d constant)" if p is None or p != p else f"{p:.3g}",
                "judge beats them": "yes" if a.won else "no",
            }
        )
    return pd.DataFrame(rows)


def rate_table(estimates: RateEstimates) -> pd.DataFrame:
    """The three estimates of :func:`run_rate_estimate` side by side, baseline first: method, rate
    (of ``estimates.positive``), interval, how it was made, a note (a single-point PPI++ interval
    names the labelled items' Wilson interval), its width, and the items each used."""
    rows = []
    for e in estimates.estimates():
        note = e.note or ""
        if e.fallback_ci is not None:
            note = (
                f"a single point; the labelled items' Wilson interval is "
                f"[{e.fallback_ci[0]:.1%}, {e.fallback_ci[1]:.1%}]"
            )
        rows.append(
            {
                "method": e.method + ("" if e.lam is None else f" (λ = {e.lam:.2f})"),
                "rate": f"{e.rate:.1%}",
                "interval": f"[{e.ci[0]:.1%}, {e.ci[1]:.1%}] ({e.confidence:.0%})",
                "interval method": e.interval,
                "note": note,
                "width": f"{e.width:.1%}",
                "labelled items": e.n_labelled,
                "unlabelled items": e.n_unlabelled,
            }
        )
    return pd.DataFrame(rows)
