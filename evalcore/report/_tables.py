"""The side-by-side table: one column per judge run, one row per metric, the best value marked."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from evalcore.metrics import CalibrationReport, Comparison, MetricDef, metrics_for

__all__ = [
    "BASELINE_ROWS",
    "BEST_MARK",
    "SideBySide",
    "combine",
    "headline_rows",
    "mark_best",
    "side_by_side",
]

#: Appended to the best value of a row in the text table.
BEST_MARK = " ★"

#: The rows that compare each run with the baseline run, in display order.
BASELINE_ROWS = (
    "Δ balanced accuracy vs baseline",
    "Δ weighted F1 vs baseline",
    "Δ accuracy vs baseline",
    "McNemar p (Δ accuracy) vs baseline",
)


def headline_rows(kind: str) -> list[tuple[str, str]]:
    """(report attribute, people's name) of the metrics shown for a scale kind, in display order.

    Read from the declared metric table (:data:`~evalcore.metrics.CALIBRATION_METRICS`): on ordinal
    scales the kappa shown is quadratic-weighted (near misses cost less) and the rank correlations
    are added; binary scales add the judge's true-positive and true-negative rates.

    >>> [name for _, name in headline_rows("binary")][-2:]
    ['true-positive rate', 'true-negative rate']
    """
    return [(m.key, m.name) for m in metrics_for(kind, shown=True)]


@dataclass(frozen=True)
class SideBySide:
    """``values``: numbers (rows = metric names, columns = runs); ``text``: the same as people read it,
    with intervals and the best value of each metric row marked; ``best``: where the marks are;
    ``references``: the columns that are references (the humans, the baselines), never marked."""

    values: pd.DataFrame
    text: pd.DataFrame
    best: pd.DataFrame
    references: tuple[str, ...] = ()


def _cell(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None or math.isnan(value):
        return "–"
    out = f"{value:.3f}"
    if ci is not None and not (math.isnan(ci[0]) or math.isnan(ci[1])):
        out += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
    return out


def side_by_side(
    columns: Sequence[tuple[str, CalibrationReport | None]],
    *,
    coverage: Mapping[str, Mapping[str, int]] | None = None,
    comparisons: Mapping[str, Comparison | None] | None = None,
    baseline: str | None = None,
    dropped_rows: bool = True,
    kind: str | None = None,
) -> SideBySide:
    """Build the side-by-side table of several judge runs on the same criterion.

    ``columns`` are (name, report) pairs; a report of ``None`` (a run with no item to compare) gets
    a column of "–" beside its coverage, so it never silently disappears. ``kind`` is the scale kind
    (default: the first report's). ``coverage`` optionally maps a column name to counts shown first
    (e.g. ``{"compared": 180, "unparsed": 3, "failed": 1}``). Count rows are not marked; every
    metric row marks its best value (the declared direction of each metric says which).
    ``dropped_rows=False`` leaves out the "n compared" and "n dropped" rows (when ``coverage`` says
    it better).

    ``comparisons`` maps a column to its :class:`~evalcore.metrics.Comparison` with the ``baseline``
    column (``None`` for the baseline itself): four rows are added at the end (:data:`BASELINE_ROWS`),
    the difference in balanced accuracy and in weighted F1 with their paired bootstrap intervals, the
    difference in accuracy with Newcombe's paired score interval, and McNemar's p of that same
    accuracy difference (exact, or mid-p when the comparison asked for it). The baseline column
    reads "baseline" there; these rows are not marked.
    """
    if not columns:
        raise ValueError("no runs to show")
    names = [name for name, _ in columns]
    if len(set(names)) != len(names):
        raise ValueError(f"column names repeat: {names}")
    reports = [r for _, r in columns if r is not None]
    if kind is None:
        if not reports:
            raise ValueError("no report to take the scale kind from; pass kind=")
        kind = reports[0].kind
    count_rows: list[str] = ["n compared", "n dropped"] if dropped_rows else []
    extra: list[str] = []
    if coverage:
        for counts in coverage.values():
            for key in counts:
                if key not in extra:
                    extra.append(key)
    declared = metrics_for(kind, shown=True)
    index = extra + count_rows + [m.name for m in declared]
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
            n, dropped = (0, 0) if report is None else (report.n, report.n_dropped)
            values.loc["n compared", name] = n
            values.loc["n dropped", name] = dropped
            text.loc["n compared", name] = str(n)
            text.loc["n dropped", name] = "–" if report is None else str(dropped)
        for m in declared:
            value = None if report is None else getattr(report, m.key)
            values.loc[m.name, name] = float("nan") if value is None else float(value)
            text.loc[m.name, name] = _cell(value, None if report is None else report.ci.get(m.key))
        if comparisons is not None:
            _comparison_cells(values, text, name, comparisons.get(name), name == baseline)
    mark_best(values, text, best, declared)
    return SideBySide(values=values, text=text, best=best)


def mark_best(
    values: pd.DataFrame,
    text: pd.DataFrame,
    best: pd.DataFrame,
    declared: Sequence[MetricDef],
    *,
    skip: Sequence[str] = (),
) -> None:
    """Mark (in place) the best value of every metric row that at least two columns have; the
    ``skip`` columns (references) take no part."""
    for m in declared:
        row = values.loc[m.name].drop(labels=[c for c in skip if c in values.columns])
        if row.notna().sum() < 2:
            continue
        top = row.max() if m.higher_is_better else row.min()
        for name in row.index:
            if row[name] == top:
                best.loc[m.name, name] = True
                text.loc[m.name, name] = text.loc[m.name, name] + BEST_MARK


def combine(tables: Sequence[tuple[str, SideBySide]], *, kind: str) -> SideBySide:
    """Several side-by-side tables (of several files, say) as one: columns titled ``"<name> · <column>"``
    and the best marks of every metric row set again across all of them.

    Rows are the union, in first-seen order; a cell a table does not have reads "–".
    """
    if len(tables) == 1:
        return tables[0][1]
    index: list[str] = []
    for _, table in tables:
        index += [row for row in table.values.index if row not in index]
    parts_v, parts_t = [], []
    skip: list[str] = []
    for name, table in tables:
        rename = {c: f"{name} · {c}" for c in table.values.columns}
        skip += [rename[c] for c in table.references if c in rename]
        parts_v.append(table.values.reindex(index).rename(columns=rename))
        plain = table.text.apply(lambda col: col.str.removesuffix(BEST_MARK))
        parts_t.append(plain.reindex(index).fillna("–").rename(columns=rename))
    values = pd.concat(parts_v, axis=1)
    text = pd.concat(parts_t, axis=1)
    best = pd.DataFrame(False, index=index, columns=values.columns)
    mark_best(values, text, best, metrics_for(kind, shown=True), skip=skip)
    return SideBySide(values=values, text=text, best=best, references=tuple(skip))


def _comparison_cells(
    values: pd.DataFrame,
    text: pd.DataFrame,
    name: str,
    comparison: Comparison | None,
    is_baseline: bool,
) -> None:
    diff_ba, diff_f1, diff_acc, p_row = BASELINE_ROWS
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
    values.loc[diff_acc, name] = comparison.diff_accuracy
    values.loc[p_row, name] = comparison.p_value
    text.loc[diff_ba, name] = _signed(
        comparison.diff_balanced_accuracy, comparison.diff_balanced_accuracy_ci
    )
    text.loc[diff_f1, name] = _signed(comparison.diff_weighted_f1, comparison.diff_weighted_f1_ci)
    text.loc[diff_acc, name] = _signed(comparison.diff_accuracy, comparison.diff_accuracy_ci)
    mid = ", mid-p" if comparison.mid_p else ""
    text.loc[p_row, name] = f"{comparison.p_value:.3g} (n={comparison.n}{mid})"


def _signed(value: float, ci: tuple[float, float] | None) -> str:
    if math.isnan(value):
        return "–"
    out = f"{value:+.3f}"
    if ci is not None and not (math.isnan(ci[0]) or math.isnan(ci[1])):
        out += f" [{ci[0]:+.2f}, {ci[1]:+.2f}]"
    return out
