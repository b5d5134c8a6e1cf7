"""The side-by-side table: one column per judge run, one row per metric, the best value marked."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from evalcore.metrics import CalibrationReport, Comparison

__all__ = ["BASELINE_ROWS", "BEST_MARK", "SideBySide", "headline_rows", "side_by_side"]

#: Appended to the best value of a row in the text table.
BEST_MARK = " ★"

#: The rows that compare each run with the baseline run, in display order.
BASELINE_ROWS = (
    "Δ balanced accuracy vs baseline",
    "Δ weighted F1 vs baseline",
    "McNemar p vs baseline",
)


def headline_rows(kind: str) -> list[tuple[str, str]]:
    """(report attribute, people's name) of the metrics shown for a scale kind, in display order.

    On ordinal scales the kappa shown is quadratic-weighted (near misses cost less), and the rank
    correlations are added; binary scales add the judge's true-positive and true-negative rates.
    """
    rows = [
        ("accuracy_balanced", "balanced accuracy"),
        ("f1_score_balanced", "weighted F1"),
        ("accuracy", "accuracy"),
    ]
    if kind == "ordinal":
        rows += [
            ("cohen_kappa_quadratic", "Cohen's kappa (quadratic)"),
            ("spearman", "Spearman"),
            ("kendall_tau", "Kendall tau-b"),
        ]
    else:
        rows.append(("cohen_kappa", "Cohen's kappa"))
    if kind == "binary":
        rows += [("tpr", "true-positive rate"), ("tnr", "true-negative rate")]
    return rows


@dataclass(frozen=True)
class SideBySide:
    """``values``: numbers (rows = metric names, columns = runs); ``text``: the same as people read it,
    with intervals and the best value of each metric row marked; ``best``: where the marks are."""

    values: pd.DataFrame
    text: pd.DataFrame
    best: pd.DataFrame


def _cell(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None or math.isnan(value):
        return "–"
    out = f"{value:.3f}"
    if ci is not None and not (math.isnan(ci[0]) or math.isnan(ci[1])):
        out += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
    return out


def side_by_side(
    columns: Sequence[tuple[str, CalibrationReport]],
    *,
    coverage: Mapping[str, Mapping[str, int]] | None = None,
    comparisons: Mapping[str, Comparison | None] | None = None,
    baseline: str | None = None,
    dropped_rows: bool = True,
) -> SideBySide:
    """Build the side-by-side table of several judge runs on the same criterion.

    ``coverage`` optionally maps a column name to counts shown first (e.g. ``{"labelled": 180,
    "unparsed": 3, "failed": 1}``). Count rows are not marked; every metric row marks its highest value
    (all of them are "higher is better"). ``dropped_rows=False`` leaves out the "n compared" and
    "n dropped" rows (when ``coverage`` says it better).

    ``comparisons`` maps a column to its :class:`~evalcore.metrics.Comparison` with the ``baseline``
    column (``None`` for the baseline itself): three rows are added at the end (:data:`BASELINE_ROWS`),
    the difference in balanced accuracy and in weighted F1 with their paired intervals, and McNemar's
    exact p. The baseline column reads "baseline" there; these rows are not marked.
    """
    if not columns:
        raise ValueError("no runs to show")
    names = [name for name, _ in columns]
    if len(set(names)) != len(names):
        raise ValueError(f"column names repeat: {names}")
    kind = columns[0][1].kind
    count_rows: list[str] = ["n compared", "n dropped"] if dropped_rows else []
    extra: list[str] = []
    if coverage:
        for counts in coverage.values():
            for key in counts:
                if key not in extra:
                    extra.append(key)
    metric_rows = headline_rows(kind)
    index = extra + count_rows + [label for _, label in metric_rows]
    if comparisons is not None:
        index += list(BASELINE_ROWS)
    values = pd.DataFrame(index=index, columns=names, dtype=float)
    text = pd.DataFrame("", index=index, columns=names, dtype=object)
    best = pd.DataFrame(False, index=index, columns=names)
    for name, report in columns:
        for key in extra:
            count = (coverage or {}).get(name, {}).get(key)
            values.loc[key, name] = float("nan") if count is None else float(count)
            text.loc[key, name] = "–" if count is None else str(count)
        if dropped_rows:
            values.loc["n compared", name] = report.n
            values.loc["n dropped", name] = report.n_dropped
            text.loc["n compared", name] = str(report.n)
            text.loc["n dropped", name] = str(report.n_dropped)
        for attr, label in metric_rows:
            value = getattr(report, attr)
            values.loc[label, name] = float("nan") if value is None else float(value)
            text.loc[label, name] = _cell(value, report.ci.get(attr))
        if comparisons is not None:
            _comparison_cells(values, text, name, comparisons.get(name), name == baseline)
    if len(columns) > 1:
        for _, label in metric_rows:
            row = values.loc[label]
            if row.notna().sum() < 2:
                continue
            top = row.max()
            for name in names:
                if row[name] == top:
                    best.loc[label, name] = True
                    text.loc[label, name] = text.loc[label, name] + BEST_MARK
    return SideBySide(values=values, text=text, best=best)


def _comparison_cells(
    values: pd.DataFrame,
    text: pd.DataFrame,
    name: str,
    comparison: Comparison | None,
    is_baseline: bool,
) -> None:
    diff_ba, diff_f1, p_row = BASELINE_ROWS
    if is_baseline:
        for row in BASELINE_ROWS:
            text.loc[row, name] = "baseline"
        return
    if comparison is None:
        for row in BASELINE_ROWS:
            text.loc[row, name] = "–"
        return
    values.loc[diff_ba, name] = comparison.diff_balanced_accuracy
    values.loc[diff_f1, name] = comparison.diff_weighted_f1
    values.loc[p_row, name] = comparison.mcnemar_p
    text.loc[diff_ba, name] = _signed(
        comparison.diff_balanced_accuracy, comparison.diff_balanced_accuracy_ci
    )
    text.loc[diff_f1, name] = _signed(comparison.diff_weighted_f1, comparison.diff_weighted_f1_ci)
    text.loc[p_row, name] = f"{comparison.mcnemar_p:.3g} (n={comparison.n})"


def _signed(value: float, ci: tuple[float, float] | None) -> str:
    if math.isnan(value):
        return "–"
    out = f"{value:+.3f}"
    if ci is not None and not (math.isnan(ci[0]) or math.isnan(ci[1])):
        out += f" [{ci[0]:+.2f}, {ci[1]:+.2f}]"
    return out
