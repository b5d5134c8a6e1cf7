"""The views of a calibration that depend on the criterion's kind, and slicing by metadata.

- binary criteria: the threshold sweep over the judge's numeric score, TPR and TNR, and the pass rate of
  the items no person labelled, corrected for the judge's errors (:func:`binary_analysis`);
- pairwise criteria: win rates by humans and by the judge, position consistency and first-position
  preference of runs judged in both orders, and what the judge says when people call a tie
  (:func:`pairwise_analysis`);
- any criterion: the same metrics per value of a metadata column (:func:`slice_table`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pandas as pd

from evalcore.errors import EvalcoreError, MetricError
from evalcore.labels import format_label
from evalcore.metrics import (
    CorrectedPassRate,
    SweepPoint,
    best_threshold,
    corrected_pass_rate,
    first_position_preference,
    metrics_for,
    position_consistency,
    threshold_sweep,
    win_rates,
)
from evalcore.report._calibration import Calibration, calibrate_runs
from evalcore.report._data import CalibrationData, RunInfo
from evalcore.report._tables import BEST_MARK
from evalcore.words import plural

__all__ = [
    "MAX_SLICE_VALUES",
    "PairwiseAnalysis",
    "SliceOptions",
    "ThresholdAnalysis",
    "binary_analysis",
    "pairwise_analysis",
    "pairwise_table",
    "slice_groups",
    "slice_metrics",
    "slice_options",
    "slice_table",
    "slice_text",
]

#: Most thresholds a sweep tries (distinct scores, or quantiles of them when there are more).
MAX_THRESHOLDS = 201


@dataclass(frozen=True, eq=False)
class ThresholdAnalysis:
    """A binary criterion's run seen through its numeric score and on the unlabelled items.

    ``points``: balanced accuracy, TPR and TNR of "positive when score >= threshold" over the
    human-labelled items with a score (empty when the run has no scores); ``best``: the threshold with
    the highest balanced accuracy; ``tpr``/``tnr``: the judge's rates with its own labels (95 %
    intervals in ``tpr_ci``/``tnr_ci``); ``pass_rate``: the judge's positive rate on the items no
    annotator labelled, corrected for its TPR and TNR, with its interval (``None`` with ``note``
    saying why, when it cannot be estimated).
    """

    run: RunInfo
    positive: str
    points: tuple[SweepPoint, ...]
    best: SweepPoint | None
    tpr: float | None
    tnr: float | None
    tpr_ci: tuple[float, float] | None
    tnr_ci: tuple[float, float] | None
    pass_rate: CorrectedPassRate | None
    n_unlabelled: int
    note: str | None = None

    def sweep_frame(self) -> pd.DataFrame:
        """The sweep as a table: threshold, balanced_accuracy, tpr, tnr, n."""
        return pd.DataFrame(self.points, columns=list(SweepPoint._fields))


def _thresholds(scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    distinct = np.unique(scores)
    if distinct.size <= MAX_THRESHOLDS:
        return distinct
    return np.unique(np.quantile(distinct, np.linspace(0.0, 1.0, MAX_THRESHOLDS)))


def binary_analysis(
    calibration: Calibration, run_id: int, *, n_boot: int | None = None, seed: int | None = None
) -> ThresholdAnalysis:
    """The threshold sweep, TPR/TNR and the corrected pass rate of one run of a binary criterion.

    The pass rate is estimated on the items nobody labelled (the judge's positive share there,
    corrected by its TPR and TNR on the labelled items, see
    :func:`evalcore.metrics.corrected_pass_rate`); items the run did not label are left out.
    """
    data = calibration.data
    scale = data.scale
    if scale.kind != "binary":
        raise EvalcoreError(
            f"{data.criterion.name} is not a binary criterion ({scale.kind} scale); the threshold "
            "view needs two labels"
        )
    n_boot = calibration.n_boot if n_boot is None else n_boot
    seed = calibration.seed if seed is None else seed
    positive = scale.positive
    run = calibration.run(run_id)
    results = data.run(run_id).results.loc[calibration.human.index]
    human = calibration.human.to_numpy()
    labelled = calibration.human.notna().to_numpy()
    score = results["score"].to_numpy(dtype=np.float64)
    judge = results["label"].to_numpy()
    has_score = labelled & ~np.isnan(score)
    points: tuple[SweepPoint, ...] = ()
    best = None
    notes: list[str] = []
    if has_score.any():
        try:
            sweep = threshold_sweep(
                human[has_score],
                score[has_score],
                positive=positive,
                thresholds=_thresholds(score[has_score]),
            )
            points, best = tuple(sweep), best_threshold(sweep)
        except MetricError as exc:
            notes.append(f"no threshold sweep: {exc}")
    else:
        notes.append("no threshold sweep: the run recorded no numeric score")
    nobody = data.human.loc[calibration.human.index].notna().sum(axis=1).to_numpy() == 0
    unlabelled = nobody & (results["status"].to_numpy() == "ok")
    pass_rate = None
    if not unlabelled.any():
        notes.append("no corrected pass rate: every item the judge labelled has a human label")
    else:
        judged = labelled & (results["status"].to_numpy() == "ok")
        try:
            pass_rate = corrected_pass_rate(
                judge[unlabelled],
                human[judged],
                judge[judged],
                positive=positive,
                n_boot=n_boot,
                seed=seed,
            )
        except MetricError as exc:
            notes.append(f"no corrected pass rate: {exc}")
    report = run.report
    return ThresholdAnalysis(
        run=run.info,
        positive=format_label(positive),
        points=points,
        best=best,
        tpr=None if report is None else report.tpr,
        tnr=None if report is None else report.tnr,
        tpr_ci=None if report is None else report.ci.get("tpr"),
        tnr_ci=None if report is None else report.ci.get("tnr"),
        pass_rate=pass_rate,
        n_unlabelled=int(unlabelled.sum()),
        note="; ".join(notes) or None,
    )


@dataclass(frozen=True, eq=False)
class PairwiseAnalysis:
    """A pairwise criterion's run: who wins, and whether the order of the responses matters.

    ``human_wins``/``judge_wins``: shares of A, B and TIE on the items both humans and the run
    labelled (so they compare like with like); ``judge_wins_all``: the run's shares on every item it
    labelled. ``position_consistency`` and ``first_position_preference`` need a run judged in both
    orders (``n_both_orders`` items with a verdict in each); they are ``None`` otherwise.
    ``human_ties``: on the items people called a tie, how many times the run said A, B and TIE.
    """

    run: RunInfo
    n_compared: int
    human_wins: dict[str, float] | None
    judge_wins: dict[str, float] | None
    judge_wins_all: dict[str, float] | None
    n_both_orders: int
    position_consistency: float | None
    first_position_preference: float | None
    human_ties: dict[str, int]


def pairwise_analysis(calibration: Calibration, run_id: int) -> PairwiseAnalysis:
    """Win rates, position bias and the treatment of human ties of one run of a pairwise criterion."""
    data = calibration.data
    if data.scale.kind != "pairwise":
        raise EvalcoreError(
            f"{data.criterion.name} is not a pairwise criterion ({data.scale.kind} scale)"
        )
    results = data.run(run_id).results.loc[calibration.human.index]
    human = calibration.human.to_numpy()
    judge = results["label"].to_numpy()
    swapped = results["label_swapped"].to_numpy()
    has_h = calibration.human.notna().to_numpy()
    has_j = results["label"].notna().to_numpy()
    both = has_h & has_j

    def shares(values: npt.NDArray[Any]) -> dict[str, float] | None:
        return win_rates(values) if len(values) else None

    in_both = has_j & results["label_swapped"].notna().to_numpy()
    consistency = preference = None
    if in_both.any():
        consistency = position_consistency(judge[in_both], swapped[in_both])
        first = first_position_preference(judge[in_both], swapped[in_both])
        preference = None if math.isnan(first) else first
    ties = both & (human == "TIE")
    said = pd.Series(judge[ties]).value_counts()
    return PairwiseAnalysis(
        run=calibration.run(run_id).info,
        n_compared=int(both.sum()),
        human_wins=shares(human[both]),
        judge_wins=shares(judge[both]),
        judge_wins_all=shares(judge[has_j]),
        n_both_orders=int(in_both.sum()),
        position_consistency=consistency,
        first_position_preference=preference,
        human_ties={c: int(said.get(c, 0)) for c in ("A", "B", "TIE")},
    )


def _share(value: float | None) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.1%}"


def pairwise_table(analyses: Sequence[PairwiseAnalysis]) -> pd.DataFrame:
    """The pairwise view as people read it: rows = measures, one column per run (text)."""
    rows: dict[str, dict[str, str]] = {}
    for a in analyses:
        column: dict[str, str] = {"items compared": str(a.n_compared)}
        for who, wins in (("humans", a.human_wins), ("judge", a.judge_wins)):
            for choice in ("A", "B", "TIE"):
                column[f"{choice} wins ({who})"] = _share(None if wins is None else wins[choice])
        for choice in ("A", "B", "TIE"):
            column[f"{choice} wins (judge, all items)"] = _share(
                None if a.judge_wins_all is None else a.judge_wins_all[choice]
            )
        column["items judged in both orders"] = str(a.n_both_orders)
        column["position consistency"] = _share(a.position_consistency)
        column["first-position preference"] = _share(a.first_position_preference)
        total = sum(a.human_ties.values())
        for choice in ("A", "B", "TIE"):
            n = a.human_ties[choice]
            column[f"human TIE → judge {choice}"] = f"{n} ({n / total:.0%})" if total else "–"
        rows[a.run.title] = column
    return pd.DataFrame(rows)


def slice_metrics(kind: str) -> list[tuple[str, str]]:
    """(key, people's name) of the metrics a slice table of a scale kind holds: those its tables
    show (:func:`evalcore.metrics.metrics_for`).

    >>> [key for key, _ in slice_metrics("ordinal")][:3]
    ['accuracy_balanced', 'f1_score_balanced', 'accuracy']
    """
    return [(m.key, m.name) for m in metrics_for(kind, shown=True)]


#: A metadata column is offered for slicing when it has at least two and at most this many distinct
#: values: with more, most slices hold a handful of items and their intervals say nothing.
MAX_SLICE_VALUES: Final = 12


@dataclass(frozen=True)
class SliceOptions:
    """The metadata columns worth slicing by, and those left out with their number of values."""

    columns: tuple[str, ...]
    left_out: tuple[tuple[str, int], ...] = ()
    max_values: int = MAX_SLICE_VALUES

    @property
    def note(self) -> str:
        """Why the columns left out are not offered ("" when none is)."""
        if not self.left_out:
            return ""
        named = ", ".join(f"{c} ({plural(n, 'value')})" for c, n in self.left_out)
        return (
            f"Not offered for slicing: {named}. A column is offered when it has 2 to "
            f"{self.max_values} distinct values."
        )


def slice_options(
    metadata: pd.DataFrame, columns: Sequence[str], *, max_values: int = MAX_SLICE_VALUES
) -> SliceOptions:
    """Which of ``columns`` (of ``metadata``, as :func:`~evalcore.report.load_metadata` gives it)
    are offered for slicing: those with 2 to ``max_values`` distinct values, missing values not
    counted; the others are left out, with their count.

    >>> frame = pd.DataFrame({"lang": ["en", "de", "en"], "id": ["a", "b", "c"], "one": ["x"] * 3})
    >>> options = slice_options(frame, ["lang", "id", "one"], max_values=2)
    >>> options.columns, options.left_out
    (('lang',), (('id', 3), ('one', 1)))
    """
    offered: list[str] = []
    left_out: list[tuple[str, int]] = []
    for column in columns:
        n = int(metadata[column].nunique(dropna=True)) if column in metadata.columns else 0
        if 2 <= n <= max_values:
            offered.append(column)
        else:
            left_out.append((column, n))
    return SliceOptions(tuple(offered), tuple(left_out), max_values)


def slice_groups(
    data: CalibrationData, column: str, *, max_slices: int = 20
) -> list[tuple[str, npt.NDArray[np.bool_]]]:
    """The slices of the metadata column ``column``: (name, one boolean per item of
    ``data.items``), in display order. The ``max_slices`` most frequent values get a slice each,
    sorted by name; the rest are pooled as ``(other)`` and items without a value as ``(none)``.
    ``data.metadata`` must hold ``column`` (see :func:`~evalcore.report.load_metadata`).
    """
    if column not in data.metadata.columns:
        raise EvalcoreError(
            f"no metadata column {column!r} loaded (loaded: {', '.join(data.metadata.columns) or 'none'})"
        )
    values = data.metadata[column].astype(object)
    values = values.where(values.notna(), "(none)")
    counts = values.value_counts()
    kept = list(counts.index[:max_slices])
    named = values.where(values.isin(kept), "(other)")
    order = [*sorted(str(v) for v in kept if v != "(none)")]
    if "(other)" in set(named):
        order.append("(other)")
    if "(none)" in kept:
        order.append("(none)")
    text = named.astype(str)
    return [(name, (text == name).to_numpy()) for name in order]


def slice_table(
    data: CalibrationData,
    column: str,
    *,
    policy: str = "majority",
    baseline: int | None = None,
    max_slices: int = 20,
    n_boot: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """The metrics of every run per value of the metadata column ``column`` (a long table).

    ``data.metadata`` must hold ``column`` (see :func:`~evalcore.report.load_metadata`). The
    ``max_slices`` most frequent values get a slice each; the rest are pooled as ``(other)`` and
    items without a value as ``(none)``. Columns: ``slice``, ``n_items``, ``run_id``, ``run``,
    ``n`` (items compared), each of :func:`slice_metrics` of the scale's kind with ``_low``/``_high`` interval bounds,
    and ``diff_accuracy_balanced`` with its interval against the baseline run. An ``(all)`` slice
    comes first, for reference: with the same ``n_boot`` and ``seed`` it is the main table's
    calibration, interval for interval (one engine, one seed).
    """
    rows: list[dict[str, Any]] = []
    slices = [("(all)", np.ones(len(data.items), dtype=bool))]
    slices += slice_groups(data, column, max_slices=max_slices)
    for name, mask in slices:
        calibration = calibrate_runs(
            data,
            policy=policy,
            baseline=baseline,
            mask=mask,
            ceiling=False,
            n_boot=n_boot,
            seed=seed,
        )
        for run in calibration.runs:
            row: dict[str, Any] = {
                "slice": name,
                "n_items": int(mask.sum()),
                "run_id": run.info.id,
                "run": run.title,
                "n": 0 if run.report is None else run.report.n,
            }
            for attr, _label in slice_metrics(data.scale.kind):
                value = None if run.report is None else getattr(run.report, attr)
                ci = None if run.report is None else run.report.ci.get(attr)
                row[attr] = np.nan if value is None else float(value)
                row[f"{attr}_low"] = np.nan if ci is None else ci[0]
                row[f"{attr}_high"] = np.nan if ci is None else ci[1]
            comp = run.comparison
            row["diff_accuracy_balanced"] = np.nan if comp is None else comp.diff_balanced_accuracy
            ci = None if comp is None else comp.diff_balanced_accuracy_ci
            row["diff_accuracy_balanced_low"] = np.nan if ci is None else ci[0]
            row["diff_accuracy_balanced_high"] = np.nan if ci is None else ci[1]
            rows.append(row)
    return pd.DataFrame(rows)


def slice_text(table: pd.DataFrame, metric: str = "accuracy_balanced") -> pd.DataFrame:
    """A slice table as people read it: rows = slices (with their item count), columns = runs,
    cells = the metric with its interval and the number compared; the best run of each slice marked.
    """
    if table.empty:
        return pd.DataFrame()
    runs = list(dict.fromkeys(table["run"]))
    slices = list(dict.fromkeys(table["slice"]))
    out = pd.DataFrame("", index=pd.Index([], dtype=object), columns=runs, dtype=object)
    for name in slices:
        part = table[table["slice"] == name].set_index("run")
        label = f"{name} ({plural(int(part['n_items'].iloc[0]), 'item')})"
        top = part[metric].max()
        for run in runs:
            v, lo, hi, n = (
                part.loc[run, k] for k in (metric, f"{metric}_low", f"{metric}_high", "n")
            )
            if pd.isna(v):
                cell = "–"
            else:
                cell = f"{v:.3f}"
                if not (pd.isna(lo) or pd.isna(hi)):
                    cell += f" [{lo:.2f}, {hi:.2f}]"
                cell += f" n={int(n)}"
                if part[metric].notna().sum() > 1 and v == top:
                    cell += BEST_MARK
            out.loc[label, run] = cell
    out.index.name = "slice"
    return out
