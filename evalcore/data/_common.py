"""Small pieces the loaders share: how a file names its rows in messages, and value helpers."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from evalcore.errors import format_rows
from evalcore.labels import format_label

#: Display name used when a source has no name (raw bytes without ``name=``).
UNNAMED_SOURCE = "uploaded file"


@dataclass(frozen=True)
class RowRef:
    """How the rows of a table are named in messages.

    CSV, TSV, Parquet and JSON arrays count data rows from 1 (``"row 4"``); JSONL names the line of the
    file (``"line 17"``), which differs from the row number when the file has blank lines. ``lines`` holds
    the file line of every row for JSONL and is ``None`` otherwise.
    """

    unit: Literal["row", "line"] = "row"
    lines: np.ndarray | None = None

    def numbers(self, positions: Sequence[int] | np.ndarray) -> list[int]:
        """The row (or line) numbers of 0-based row positions."""
        pos = np.asarray(positions, dtype=np.int64)
        if self.lines is None:
            return [int(p) + 1 for p in pos]
        return [int(self.lines[p]) for p in pos]

    def describe(self, positions: Sequence[int] | np.ndarray) -> str:
        """``"rows 4, 9, 12"`` or ``"lines 5, 7"`` for 0-based row positions."""
        text = format_rows(self.numbers(positions))
        if self.unit == "line" and text.startswith("row"):
            text = "line" + text[3:]
        return text

    def take(self, positions: np.ndarray) -> RowRef:
        """The reference of a subset of rows (kept in the given order)."""
        if self.lines is None:
            return RowRef(self.unit, np.asarray(positions, dtype=np.int64) + 1)
        return RowRef(self.unit, self.lines[np.asarray(positions, dtype=np.int64)])


def quote_list(names: Sequence[str], limit: int = 30) -> str:
    """Column names for a message: ``a, b, c`` (long lists end with "and N more")."""
    shown = ", ".join(str(n) for n in names[:limit])
    more = len(names) - limit
    return shown + (f" and {more} more" if more > 0 else "") if names else "(none)"


def show_value(value: object) -> str:
    """A label value as a message shows it: numbers bare (``7``), words quoted (``'x'``)."""
    if isinstance(value, float):
        return format_label(value)
    return repr(value)


def plain(value: Any) -> Any:
    """Turn numpy/pandas containers and scalars into plain Python (lists, dicts, str, float, ...)."""
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def to_text(value: object) -> str | None:
    """A text field's value as ``str`` (``None`` when blank).

    Lists of passages are joined with a blank line; a dict with a ``content`` or ``text`` key gives
    that text; other structures become JSON; numbers print as they read (``4.0`` as ``4``).
    """
    value = plain(value)
    if value is None:
        return None
    if isinstance(value, str):
        return value if value != "" else None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return format_label(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        parts = [to_text(v) for v in value]
        return "\n\n".join(p for p in parts if p) or None
    if isinstance(value, dict):
        for key in ("content", "text"):
            if isinstance(value.get(key), str):
                return str(value[key])
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)
