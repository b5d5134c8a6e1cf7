"""Plotly figures of calibration results.

Figures are plain ``plotly.graph_objects.Figure`` objects, so they render in Streamlit, in a notebook and
in the self-contained HTML report alike. Text that comes from a dataset (labels, run names) is passed to
plotly as data, never as HTML.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from evalcore.metrics import CalibrationReport, metric_def

if TYPE_CHECKING:
    from evalcore.report._confidence import RunConfidence, SelectiveReport

__all__ = [
    "agreement_figure",
    "alt_test_figure",
    "confusion_heatmaps",
    "coverage_figure",
    "history_figure",
    "kappa_heatmap",
    "normalized_rows",
    "reliability_figure",
    "slice_figure",
    "threshold_figure",
]

_COLORSCALE = "Blues"


def normalized_rows(matrix: np.ndarray) -> np.ndarray:
    """Each row divided by its total (rows with no items stay zero).

    >>> normalized_rows(np.array([[1, 3], [0, 0]])).tolist()
    [[0.25, 0.75], [0.0, 0.0]]
    """
    matrix = np.asarray(matrix, dtype=float)
    totals = matrix.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(totals > 0, matrix / np.where(totals == 0, 1, totals), 0.0)
    return out


def _escape_plotly(text: str) -> str:
    # plotly renders a small HTML subset in titles and tick labels; show dataset text literally
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _panel_domains(n: int, spacing: float) -> list[tuple[float, float]]:
    """x domains of ``n`` side-by-side panels with ``spacing`` between them (as make_subplots)."""
    width = (1.0 - spacing * (n - 1)) / n
    return [(i * (width + spacing), i * (width + spacing) + width) for i in range(n)]


def confusion_heatmaps(
    panels: Sequence[tuple[str, CalibrationReport]],
    *,
    normalize: bool = False,
    height: int = 420,
    selectable: bool = True,
    per_row: int = 3,
) -> go.Figure:
    """Confusion matrices in a grid of at most ``per_row`` a row (``height`` each row), with the
    same axes and one colour scale.

    Rows are the human label (y axis, top to bottom in scale order), columns the judge's. With
    ``normalize`` each row shows shares of its human label (row-normalised), and the colour scale runs
    from 0 to 1; otherwise counts, with the colour scale from 0 to the largest cell of all panels, so
    that equal colours mean equal numbers across panels. Each panel also carries an invisible marker per
    cell (``customdata`` = [panel index, human label, judge label, count, row share]) that answers hover
    and click (``hoverdistance`` reaches across a cell), so a click on a cell is read back as a point
    selection; the selected cell is shaded. ``selectable=False`` leaves the markers out (a static page:
    the heatmap answers hover itself). Built as one figure dict (no per-trace validation), so it is
    cheap enough to redraw on every change.
    """
    if not panels:
        raise ValueError("no confusion matrices to draw")
    labels = panels[0][1].confusion_matrix_labels
    for title, report in panels[1:]:
        if report.confusion_matrix_labels != labels:
            raise ValueError(f"panel {title!r} has other labels than the first panel")
    shown = [_escape_plotly(x) for x in labels]
    matrices = [np.asarray(r.confusion_matrix, dtype=float) for _, r in panels]
    values = [normalized_rows(m) if normalize else m for m in matrices]
    zmax = 1.0 if normalize else max(float(m.max()) for m in matrices) or 1.0
    hover = (
        "human %{y} · judge %{x}<br>%{customdata[3]} items"
        + ("<br>%{customdata[4]:.0%} of this human label" if normalize else "")
        + "<br>click to list them<extra></extra>"
    )
    static_hover = (
        "human %{y} · judge %{x}<br>%{customdata} items"
        + ("<br>%{z:.0%} of this human label" if normalize else "")
        + "<extra></extra>"
    )
    xs = [judge for _human in shown for judge in shown]
    ys = [human for human in shown for _judge in shown]
    traces: list[dict[str, Any]] = []
    layout: dict[str, Any] = {
        "coloraxis": {
            "colorscale": _COLORSCALE,
            "cmin": 0,
            "cmax": zmax,
            "colorbar": {"title": {"text": "share" if normalize else "items"}},
        },
        "height": height,
        "margin": {"l": 60, "r": 20, "t": 60, "b": 50},
        "clickmode": "event+select",
        "dragmode": False,
        "hovermode": "closest",
        "hoverdistance": 200,
        "annotations": [],
    }
    per_row = max(1, per_row)
    n_rows = -(-len(panels) // per_row)
    layout["height"] = height * n_rows
    across = _panel_domains(min(len(panels), per_row), 0.04)
    gap = 0.12 / n_rows if n_rows > 1 else 0.0
    tall = (1.0 - gap * (n_rows - 1)) / n_rows
    rows = [(1.0 - r * (tall + gap) - tall, 1.0 - r * (tall + gap)) for r in range(n_rows)]
    domains = [across[i % per_row] for i in range(len(panels))]
    for index, ((title, _report), z, counts, domain) in enumerate(
        zip(panels, values, matrices, domains, strict=True)
    ):
        row = rows[index // per_row]
        suffix = "" if index == 0 else str(index + 1)
        text = [
            [f"{v:.0%}" if normalize else f"{int(c)}" for v, c in zip(row_v, row_c, strict=True)]
            for row_v, row_c in zip(z, counts, strict=True)
        ]
        traces.append(
            {
                "type": "heatmap",
                "z": z.tolist(),
                "x": shown,
                "y": shown,
                "zmin": 0,
                "zmax": zmax,
                "coloraxis": "coloraxis",
                "text": text,
                "texttemplate": "%{text}",
                "customdata": counts.astype(int).tolist(),
                "xaxis": f"x{suffix}",
                "yaxis": f"y{suffix}",
                # with markers, the marker on top of the cell answers hover and click
                **({"hoverinfo": "skip"} if selectable else {"hovertemplate": static_hover}),
            }
        )
        if selectable:
            k = len(labels)
            traces.append(
                {
                    "type": "scatter",
                    "x": xs,
                    "y": ys,
                    "mode": "markers",
                    "marker": {"size": 30, "opacity": 0.01, "symbol": "square", "color": "#000"},
                    "selected": {"marker": {"opacity": 0.3}},
                    "unselected": {"marker": {"opacity": 0.01}},
                    "customdata": [
                        [index, labels[i], labels[j], int(counts[i, j]), float(z[i, j])]
                        for i in range(k)
                        for j in range(k)
                    ],
                    "hovertemplate": hover,
                    "showlegend": False,
                    "xaxis": f"x{suffix}",
                    "yaxis": f"y{suffix}",
                }
            )
        layout[f"xaxis{suffix}"] = {
            "domain": list(domain),
            "anchor": f"y{suffix}",
            "type": "category",
            "title": {"text": "judge"},
        }
        layout[f"yaxis{suffix}"] = {
            "domain": list(row),
            "anchor": f"x{suffix}",
            "type": "category",
            "autorange": "reversed",
            **({} if index == 0 else {"matches": "y"}),
            **({"title": {"text": "human"}} if index % per_row == 0 else {"showticklabels": False}),
        }
        layout["annotations"].append(
            {
                "text": _escape_plotly(title),
                "x": (domain[0] + domain[1]) / 2,
                "y": row[1],
                "xref": "paper",
                "yref": "paper",
                "xanchor": "center",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": 16},
            }
        )
    return go.Figure({"data": traces, "layout": layout})


_PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)


def _error(
    values: Sequence[float], lows: Sequence[float], highs: Sequence[float]
) -> dict[str, Any]:
    plus = [max(0.0, h - v) if _finite(h, v) else 0.0 for v, h in zip(values, highs, strict=True)]
    minus = [
        max(0.0, v - lo) if _finite(lo, v) else 0.0 for v, lo in zip(values, lows, strict=True)
    ]
    return {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus}


def _finite(*values: object) -> bool:
    return all(isinstance(v, int | float) and math.isfinite(v) for v in values)


def agreement_figure(
    runs: Sequence[tuple[str, float | None, tuple[float, float] | None]],
    *,
    metric: str,
    ceiling: float | None = None,
    ceiling_name: str = "human ceiling",
    alpha: float | None = None,
    height: int = 320,
) -> go.Figure:
    """One metric per run as bars with their 95 % intervals, and the humans' agreement as a
    reference line: how far each judge is from people, not just from 1.0.

    ``runs`` holds (title, value, interval) per run; ``ceiling`` (e.g. the annotators' mean pairwise
    kappa) is drawn as a dashed line, ``alpha`` (Krippendorff's alpha) as a dotted one.
    """
    titles = [_escape_plotly(t) for t, _, _ in runs]
    values = [float("nan") if v is None else float(v) for _, v, _ in runs]
    lows = [float("nan") if ci is None else ci[0] for _, _, ci in runs]
    highs = [float("nan") if ci is None else ci[1] for _, _, ci in runs]
    shapes: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    for value, name, dash, anchor in (
        (ceiling, ceiling_name, "dash", "left"),
        (alpha, "humans: Krippendorff's α", "dot", "right"),
    ):
        if value is not None and math.isfinite(value):
            shapes.append(
                {
                    "type": "line",
                    "xref": "paper",
                    "x0": 0,
                    "x1": 1,
                    "yref": "y",
                    "y0": value,
                    "y1": value,
                    "line": {"dash": dash, "color": "#444", "width": 1.5},
                }
            )
            notes.append(
                {
                    "text": f"{_escape_plotly(name)} {value:.2f}",
                    "xref": "paper",
                    "x": 0 if anchor == "left" else 1,
                    "xanchor": anchor,
                    "yref": "y",
                    "y": value,
                    "yanchor": "bottom" if anchor == "left" else "top",
                    "showarrow": False,
                }
            )
    bar = {
        "type": "bar",
        "x": titles,
        "y": values,
        "error_y": _error(values, lows, highs),
        "marker": {"color": [_PALETTE[i % len(_PALETTE)] for i in range(len(runs))]},
        "text": [f"{v:.2f}" if math.isfinite(v) else "–" for v in values],
        "textposition": "inside",
        "hovertemplate": "%{x}<br>%{y:.3f}<extra></extra>",
        "showlegend": False,
    }
    low = min([0.0, *(v for v in lows + values if math.isfinite(v))])
    layout = {
        "height": height,
        "yaxis": {"title": {"text": _escape_plotly(metric)}, "range": [low, 1.0]},
        "xaxis": {"type": "category"},
        "margin": {"l": 60, "r": 20, "t": 30, "b": 40},
        "shapes": shapes,
        "annotations": notes,
    }
    return go.Figure({"data": [bar], "layout": layout})


def alt_test_figure(
    curve: pd.DataFrame, *, epsilon: float | None = None, title: str = "", height: int = 340
) -> go.Figure:
    """The Alt-Test against epsilon: the winning rate (omega) and the advantage probability (rho)
    of a judge for each epsilon of ``curve`` (see :func:`evalcore.metrics.alt_test_curve`), the
    pass line at 0.5 and, when given, the chosen ``epsilon`` marked."""
    fig = go.Figure()
    lines = (
        ("winning_rate", "winning rate ω", "ω", {"color": _PALETTE[0], "shape": "hv"}),
        ("advantage_probability", "advantage probability ρ", "ρ", {"color": _PALETTE[1]}),
    )
    for column, name, symbol, line in lines:
        fig.add_trace(
            go.Scatter(
                x=curve["epsilon"],
                y=curve[column],
                mode="lines+markers" if column == "winning_rate" else "lines",
                name=name,
                line=line,
                hovertemplate=f"ε %{{x:.2f}}<br>{symbol} %{{y:.2f}}<extra></extra>",
            )
        )
    fig.add_hline(y=0.5, line={"color": "grey", "dash": "dash"}, annotation_text="pass at ω ≥ 0.5")
    if epsilon is not None:
        fig.add_vline(x=epsilon, line={"color": "grey", "width": 1})
    fig.update_layout(
        title=_escape_plotly(title) if title else None,
        xaxis={"title": "ε (advantage granted to the judge)", "range": [-0.005, 0.305]},
        yaxis={"title": "share", "range": [-0.02, 1.02]},
        height=height,
        margin={"l": 50, "r": 20, "t": 40 if title else 20, "b": 40},
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


def threshold_figure(
    sweeps: Sequence[tuple[str, Sequence[Any], Any | None]], *, height: int = 360
) -> go.Figure:
    """Balanced accuracy against the score threshold, one line per run, the best threshold marked.

    ``sweeps`` holds (title, sweep points, best point) per run; points have ``threshold``,
    ``balanced_accuracy``, ``tpr`` and ``tnr`` (see :func:`evalcore.metrics.threshold_sweep`).
    """
    fig = go.Figure()
    for i, (title, points, best) in enumerate(sweeps):
        if not points:
            continue
        color = _PALETTE[i % len(_PALETTE)]
        name = _escape_plotly(title)
        fig.add_trace(
            go.Scatter(
                x=[p.threshold for p in points],
                y=[p.balanced_accuracy for p in points],
                customdata=[[p.tpr, p.tnr] for p in points],
                mode="lines",
                name=name,
                line={"color": color},
                hovertemplate=(
                    "threshold %{x:.3f}<br>balanced accuracy %{y:.3f}"
                    "<br>TPR %{customdata[0]:.3f} · TNR %{customdata[1]:.3f}<extra>%{fullData.name}</extra>"
                ),
            )
        )
        if best is not None:
            fig.add_trace(
                go.Scatter(
                    x=[best.threshold],
                    y=[best.balanced_accuracy],
                    mode="markers+text",
                    marker={"symbol": "star", "size": 14, "color": color},
                    text=[f"best {best.threshold:.2f} → {best.balanced_accuracy:.3f}"],
                    textposition="top center",
                    name=f"{name}: best threshold",
                    showlegend=False,
                    hovertemplate="best threshold %{x:.3f}<br>balanced accuracy %{y:.3f}<extra></extra>",
                )
            )
    fig.update_layout(
        height=height,
        xaxis_title="score threshold (positive when score ≥ threshold)",
        yaxis_title="balanced accuracy",
        yaxis_range=[0.0, 1.05],
        margin={"l": 60, "r": 20, "t": 30, "b": 50},
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


def slice_figure(
    table: Any,
    *,
    metric: str = "accuracy_balanced",
    name: str | None = None,
    height: int = 380,
) -> go.Figure:
    """A metric per slice and run as grouped bars with 95 % intervals (from
    :func:`evalcore.report.slice_table`), so a judge that is good overall but bad on one slice shows.
    ``name`` (the axis title) defaults to the declared metric's name."""
    name = metric_def(metric).name if name is None else name
    fig = go.Figure()
    slices = list(dict.fromkeys(table["slice"]))
    for i, run in enumerate(dict.fromkeys(table["run"])):
        part = table[table["run"] == run].set_index("slice").reindex(slices)
        values = part[metric].astype(float).tolist()
        fig.add_trace(
            go.Bar(
                x=[_escape_plotly(str(s)) for s in slices],
                y=values,
                name=_escape_plotly(str(run)),
                marker_color=_PALETTE[i % len(_PALETTE)],
                error_y=_error(
                    values,
                    part[f"{metric}_low"].astype(float).tolist(),
                    part[f"{metric}_high"].astype(float).tolist(),
                ),
                customdata=part["n"].fillna(0).astype(int).tolist(),
                hovertemplate="%{x}<br>%{y:.3f} (n=%{customdata})<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_layout(
        barmode="group",
        height=height,
        yaxis_title=_escape_plotly(name),
        xaxis_type="category",
        margin={"l": 60, "r": 20, "t": 30, "b": 50},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


#: The history's date axis: day and month over the year while ticks are days or more apart, the
#: time of day above the date when they are closer (runs of one day).
HISTORY_TICKS: Final = (
    {"dtickrange": [None, 86_400_000], "value": "%H:%M<br>%d %b %Y"},
    {"dtickrange": [86_400_000, None], "value": "%d %b<br>%Y"},
)


def history_figure(
    frame: Any,
    *,
    metric: str = "accuracy_balanced",
    name: str | None = None,
    height: int = 360,
) -> go.Figure:
    """A headline metric of each template version over time: one panel per criterion, one line per
    template and model (x = the version's creation time, UTC, on a date axis: ``HISTORY_TICKS``),
    each point labelled with its version. ``name`` (the axis title) defaults to the declared
    metric's name."""
    name = metric_def(metric).name if name is None else name
    criteria = list(dict.fromkeys(frame["criterion"])) if len(frame) else []
    if not criteria:
        fig = go.Figure()
        fig.update_layout(height=height)
        return fig
    fig = make_subplots(
        rows=1,
        cols=len(criteria),
        subplot_titles=[_escape_plotly(str(c)) for c in criteria],
        shared_yaxes=True,
        horizontal_spacing=0.05,
    )
    series_colors: dict[str, str] = {}
    for col, criterion in enumerate(criteria, start=1):
        part = frame[frame["criterion"] == criterion]
        for series, rows in part.groupby("series", sort=False):
            color = series_colors.setdefault(
                str(series), _PALETTE[len(series_colors) % len(_PALETTE)]
            )
            values = rows[metric].astype(float).tolist()
            labels = [
                f"v{int(v)}" if v is not None and v == v else "imported"
                for v in rows["version"].tolist()
            ]
            fig.add_trace(
                go.Scatter(
                    x=list(pd.to_datetime(rows["when"]).dt.to_pydatetime()),
                    y=values,
                    mode="lines+markers+text",
                    text=labels,
                    textposition="top center",
                    name=_escape_plotly(f"{criterion}: {series}"),
                    line={"color": color},
                    error_y=_error(
                        values,
                        rows[f"{metric}_low"].astype(float).tolist(),
                        rows[f"{metric}_high"].astype(float).tolist(),
                    ),
                    customdata=[_escape_plotly(str(r)) for r in rows["run"].tolist()],
                    hovertemplate="%{customdata}<br>%{x|%Y-%m-%d}<br>%{y:.3f}<extra></extra>",
                ),
                row=1,
                col=col,
            )
    fig.update_yaxes(title_text=_escape_plotly(name), row=1, col=1)
    fig.update_xaxes(type="date", tickformatstops=HISTORY_TICKS, hoverformat="%Y-%m-%d %H:%M")
    fig.update_layout(
        height=height,
        margin={"l": 60, "r": 20, "t": 50, "b": 40},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def cell_from_selection(selection: Any, run_ids: Sequence[int]) -> tuple[int, str, str] | None:
    """(run id, human label, judge label) of the confusion-matrix cell a chart selection points at.

    ``selection`` is the chart's state (``{"selection": {"points": [...]}}``); each cell's marker
    carries ``customdata`` = [panel index, human label, judge label, ...] and panel ``i`` shows
    ``run_ids[i]`` (see :func:`confusion_heatmaps`). ``None`` when nothing (or nothing known) is
    selected.

    >>> cell_from_selection({"selection": {"points": [{"customdata": [1, "4", "5"]}]}}, [7, 9])
    (9, '4', '5')
    """
    points = ((selection or {}).get("selection") or {}).get("points") or []
    for point in points:
        custom = point.get("customdata")
        if isinstance(custom, list | tuple) and len(custom) >= 3:
            panel = int(custom[0])
            if 0 <= panel < len(run_ids):
                return run_ids[panel], str(custom[1]), str(custom[2])
    return None


def kappa_heatmap(kappas: pd.DataFrame, *, weights: str | None = None) -> go.Figure:
    """Pairwise Cohen's kappa between annotators (a square table) as an annotated heatmap.

    ``weights`` names the kappa's weighting for the title ("linear", "quadratic" or none).
    """
    names = [_escape_plotly(str(c)) for c in kappas.columns]
    values = kappas.to_numpy(dtype=float)
    text = [["–" if math.isnan(v) else f"{v:.2f}" for v in row] for row in values]
    heat = go.Heatmap(
        z=values,
        x=names,
        y=names,
        text=text,
        texttemplate="%{text}",
        zmin=-1,
        zmax=1,
        colorscale="RdBu",
        hovertemplate="%{y} vs %{x}: %{text}<extra></extra>",
    )
    fig = go.Figure(heat)
    fig.update_layout(
        title=f"Cohen's kappa{f' ({weights})' if weights else ''}",
        height=120 + 40 * len(names),
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        yaxis={"autorange": "reversed"},
    )
    return fig


def reliability_figure(runs: Sequence[RunConfidence], *, height: int = 380) -> go.Figure:
    """The reliability diagram: per confidence bin, the agreement with people (with its Wilson
    interval) against the bin's mean confidence, one line per run with a confidence, and the
    diagonal a calibrated judge follows. The hover gives each bin's count and range."""
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[0.0, 1.0],
            y=[0.0, 1.0],
            mode="lines",
            line={"color": "#999999", "dash": "dot"},
            name="calibrated",
            hoverinfo="skip",
        )
    )
    shown = [(run, run.summary) for run in runs if run.summary is not None]
    for i, (run, summary) in enumerate(shown):
        bins = summary.reliability
        filled = [b for b in range(bins.n_bins) if bins.counts[b]]
        edges = bins.edges
        fig.add_trace(
            go.Scatter(
                x=[bins.mean_confidence[b] for b in filled],
                y=[bins.agreement[b] for b in filled],
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [bins.high[b] - bins.agreement[b] for b in filled],
                    "arrayminus": [bins.agreement[b] - bins.low[b] for b in filled],
                },
                customdata=[[bins.counts[b], edges[b], edges[b + 1]] for b in filled],
                mode="lines+markers",
                name=f"{_escape_plotly(run.title)} (ECE {summary.ece:.3f})",
                line={"color": _PALETTE[i % len(_PALETTE)]},
                hovertemplate=(
                    "confidence %{customdata[1]:.2f}–%{customdata[2]:.2f}: %{customdata[0]} items"
                    "<br>mean confidence %{x:.3f}<br>agreement %{y:.3f}"
                    "<extra>%{fullData.name}</extra>"
                ),
            )
        )
    fig.update_layout(
        height=height,
        xaxis_title="judge's confidence (mean of the bin)",
        yaxis_title="agreement with people",
        xaxis_range=[0.0, 1.02],
        yaxis_range=[0.0, 1.05],
        margin={"l": 60, "r": 20, "t": 30, "b": 50},
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


def coverage_figure(reports: Sequence[SelectiveReport], *, height: int = 380) -> go.Figure:
    """Coverage against agreement on the test part, one line per run, with the target agreement
    as a line and the threshold chosen on dev marked: what each threshold would buy."""
    fig = go.Figure()
    target = None
    for i, report in enumerate(reports):
        curve = report.curve
        color = _PALETTE[i % len(_PALETTE)]
        name = _escape_plotly(report.title)
        target = report.dev.target
        fig.add_trace(
            go.Scatter(
                x=list(curve.coverage),
                y=list(curve.agreement),
                customdata=[
                    [t, d, lo, hi]
                    for t, d, lo, hi in zip(
                        curve.thresholds, curve.n_decided, curve.low, curve.high, strict=True
                    )
                ],
                mode="lines",
                name=name,
                line={"color": color},
                hovertemplate=(
                    "confidence ≥ %{customdata[0]:.3f}: decides %{customdata[1]} items "
                    "(%{x:.0%})<br>agreement %{y:.3f} [%{customdata[2]:.3f}, "
                    "%{customdata[3]:.3f}]<extra>%{fullData.name}</extra>"
                ),
            )
        )
        if report.threshold is not None and report.test.n_decided:
            fig.add_trace(
                go.Scatter(
                    x=[report.test.coverage],
                    y=[report.test.agreement],
                    mode="markers",
                    marker={"symbol": "star", "size": 14, "color": color},
                    name=f"{name}: threshold {report.threshold:.3g} (chosen on dev)",
                    showlegend=False,
                    hovertemplate=(
                        "threshold chosen on dev: %{customdata:.3f}<br>coverage %{x:.0%}"
                        "<br>agreement %{y:.3f}<extra></extra>"
                    ),
                    customdata=[report.threshold],
                )
            )
    if target is not None:
        fig.add_hline(y=target, line={"color": "#999999", "dash": "dash"}, annotation_text="target")
    fig.update_layout(
        height=height,
        xaxis_title="coverage (share of test items the judge decides)",
        yaxis_title="agreement with people among them",
        xaxis_range=[0.0, 1.02],
        yaxis_range=[0.0, 1.05],
        xaxis_tickformat=".0%",
        margin={"l": 60, "r": 20, "t": 30, "b": 50},
        legend={"orientation": "h", "y": -0.25},
    )
    return fig
