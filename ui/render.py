"""Small renderers the pages share: errors, metric tables, heatmaps."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd
import streamlit as st

from evalcore.errors import EvalcoreError, format_rows
from evalcore.metrics import CalibrationReport
from evalcore.report import HUMANS_COLUMN, SideBySide, confusion_heatmaps
from ui import state


def show_error(exc: EvalcoreError, *, title: str | None = None) -> None:
    """Show an evalcore error as the user should read it: the message, and the rows it names."""
    message = str(exc)
    st.error(f"**{title}**\n\n{message}" if title else message, icon=":material/error:")
    if exc.rows and format_rows(exc.rows) not in message:
        st.caption(f"Offending {format_rows(exc.rows)}")


def metric_table(table: SideBySide, *, key: str) -> None:
    """The side-by-side table; the best value of each metric row carries a star. It is as tall as
    its rows (the Δ and McNemar rows at the bottom are never scrolled out of sight), and the metric
    names and the humans' ceiling stay pinned while the run columns scroll sideways."""
    st.dataframe(
        table.text,
        key=key,
        width="stretch",
        height="content",
        column_config={
            "_index": st.column_config.TextColumn("metric", pinned=True),
            # the reference column stays in sight beside the names, however many runs there are
            HUMANS_COLUMN: st.column_config.TextColumn(HUMANS_COLUMN, pinned=True, width="medium"),
        },
    )


def heatmaps(
    panels: Sequence[tuple[str, CalibrationReport]],
    *,
    key: str,
    selectable: bool = False,
    on_select: Callable[[], None] | None = None,
) -> object:
    """Confusion matrices side by side with a counts / row-normalised switch.

    With ``selectable`` a click on a cell selects it (a point selection whose ``customdata`` is
    [panel index, human label, judge label]); ``on_select`` is then called on every change of the
    selection (before the rerun), and the selection is returned.
    """
    normalize = st.toggle(
        "Row-normalised", key=state.key(key, "norm"), help="Share of each human label"
    )
    fig = confusion_heatmaps(
        panels, normalize=normalize, height=380 + 20 * len(panels[0][1].labels)
    )
    if selectable:
        return st.plotly_chart(
            fig,
            key=key,
            on_select=on_select or "rerun",
            selection_mode="points",
            config={"displaylogo": False},
        )
    st.plotly_chart(fig, key=key, config={"displaylogo": False})
    return None


def fmt(value: float | None, digits: int = 3) -> str:
    if value is None or pd.isna(value):
        return "–"
    return f"{value:.{digits}f}"
