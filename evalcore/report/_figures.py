"""Plotly figures of calibration results.

Figures are plain ``plotly.graph_objects.Figure`` objects, so they render in Streamlit, in a notebook and
in the self-contained HTML report alike. Text that comes from a dataset (labels, run names) is passed to
plotly as data, never as HTML.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from evalcore.metrics import CalibrationReport

__all__ = ["confusion_heatmaps", "normalized_rows"]

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


def confusion_heatmaps(
    panels: Sequence[tuple[str, CalibrationReport]],
    *,
    normalize: bool = False,
    height: int = 420,
) -> go.Figure:
    """Confusion matrices side by side with the same axes and one colour scale.

    Rows are the human label (y axis, top to bottom in scale order), columns the judge's. With
    ``normalize`` each row shows shares of its human label (row-normalised), and the colour scale runs
    from 0 to 1; otherwise counts, with the colour scale from 0 to the largest cell of all panels, so
    that equal colours mean equal numbers across panels. Each panel also carries an invisible marker per
    cell (``customdata`` = [panel index, human label, judge label]) so a click on a cell can be read back
    as a point selection.
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
    fig = make_subplots(
        rows=1,
        cols=len(panels),
        subplot_titles=[_escape_plotly(t) for t, _ in panels],
        shared_yaxes=True,
        horizontal_spacing=0.04,
    )
    for index, ((_title, _report), z, counts) in enumerate(
        zip(panels, values, matrices, strict=True), start=1
    ):
        text = [
            [f"{v:.0%}" if normalize else f"{int(c)}" for v, c in zip(row_v, row_c, strict=True)]
            for row_v, row_c in zip(z, counts, strict=True)
        ]
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=shown,
                y=shown,
                zmin=0,
                zmax=zmax,
                coloraxis="coloraxis",
                text=text,
                texttemplate="%{text}",
                customdata=counts,
                hovertemplate=(
                    "human %{y} · judge %{x}<br>%{customdata} items"
                    + ("<br>%{z:.0%} of this human label" if normalize else "")
                    + "<extra></extra>"
                ),
            ),
            row=1,
            col=index,
        )
        xs, ys, data = [], [], []
        for i, human in enumerate(shown):
            for j, judge in enumerate(shown):
                xs.append(judge)
                ys.append(human)
                data.append([index - 1, labels[i], labels[j]])
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="markers",
                marker={"size": 28, "opacity": 0.01, "symbol": "square", "color": "#000"},
                customdata=data,
                hoverinfo="skip",
                showlegend=False,
            ),
            row=1,
            col=index,
        )
        fig.update_xaxes(title_text="judge", type="category", row=1, col=index)
    fig.update_yaxes(title_text="human", type="category", autorange="reversed", row=1, col=1)
    fig.update_yaxes(type="category", autorange="reversed")
    fig.update_layout(
        coloraxis={
            "colorscale": _COLORSCALE,
            "cmin": 0,
            "cmax": zmax,
            "colorbar": {"title": "share" if normalize else "items"},
        },
        height=height,
        margin={"l": 60, "r": 20, "t": 60, "b": 50},
        clickmode="event+select",
        dragmode=False,
    )
    return fig
