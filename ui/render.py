"""Small renderers the pages share: errors, metric tables, heatmaps."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd
import streamlit as st

from evalcore.errors import EvalcoreError, format_rows
from evalcore.metrics import CalibrationReport
from evalcore.report import SideBySide, confusion_heatmaps


def show_error(exc: EvalcoreError, *, title: str | None = None) -> None:
    """Show an evalcore error as the user should read it: the message, and the rows it names."""
    message = str(exc)
    st.error(f"**{title}**\n\n{message}" if title else message, icon=":material/error:")
    if exc.rows and format_rows(exc.rows) not in message:
        st.caption(f"Offending {format_rows(exc.rows)}")


def metric_table(table: SideBySide, *, key: str) -> None:
    """The side-by-side table; the best value of each metric row carries a star."""
    st.dataframe(
        table.text,
        key=key,
        width="stretch",
        column_config={"_index": st.column_config.TextColumn("metric")},
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
    normalize = st.toggle("Row-normalised", key=f"{key}_norm", help="Share of each human label")
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
