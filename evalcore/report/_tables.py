"""The side-by-side table: one column per judge run, one row per metric, the best value marked."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from evalcore.metrics import CalibrationReport

__all__ = ["BEST_MARK", "SideBySide", "headline_rows", "side_by_side"]

#: Appended to the best value of a row in the text table.
BEST_MARK = " ★"


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
) -> SideBySide:
    """Build the side-by-side table of several judge runs on the same criterion.

    ``coverage`` optionally maps a column name to counts shown first (e.g. ``{"labelled": 180,
    "unparsed": 3, "failed": 1}``). Count rows are not marked; every metric row marks its highest value
    (all of them are "higher is better").
    """
    if not columns:
        raise ValueError("no runs to show")
    names = [name for name, _ in columns]
    if len(set(names)) != len(names):
        raise ValueError(f"column names repeat: {names}")
    kind = columns[0][1].kind
    count_rows: list[str] = ["n compared", "n dropped"]
    extra: list[str] = []
    if coverage:
        for counts in coverage.values():
            for key in counts:
                if key not in extra:
                    extra.append(key)
    metric_rows = headline_rows(kind)
    index = extra + count_rows + [label for _, label in metric_rows]
    values = pd.DataFrame(index=index, columns=names, dtype=float)
    text = pd.DataFrame("", index=index, columns=names, dtype=object)
    best = pd.DataFrame(False, index=index, columns=names)
    for name, report in columns:
        for key in extra:
            count = (coverage or {}).get(name, {}).get(key)
            values.loc[key, name] = float("nan") if count is None else float(count)
            text.loc[key, name] = "–" if count is None else str(count)
        values.loc["n compared", name] = report.n
        values.loc["n dropped", name] = report.n_dropped
        text.loc["n compared", name] = str(report.n)
        text.loc["n dropped", name] = str(report.n_dropped)
        for attr, label in metric_rows:
            value = getattr(report, attr)
            values.loc[label, name] = float("nan") if value is None else float(value)
            text.loc[label, name] = _cell(value, report.ci.get(attr))
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
