"""Reading a plain JSONL items file with the standard library alone (no pandas).

``evalcore judge run`` reads its items before the first request; importing pandas for a JSONL file
of plain rows costs more than reading it. :func:`read_plain_jsonl` reads such a file with :mod:`json`
and returns its rows when they need no layout work: every row an object with the same keys, an
``item_id`` of unique non-empty strings, scalar values, and a ``"plain"`` layout whose canonical
fields are already spelled canonically. Anything else returns ``None`` and the caller takes the
general path (:func:`evalcore.data.read_table` and :func:`evalcore.data.items_from_frame`), which
gives the same items for such a file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalcore.data._layout import CANONICAL_COLUMNS, ID_COLUMNS, detect_layout

__all__ = ["read_plain_jsonl"]

_SCALARS = (str, int, float, bool)


def read_plain_jsonl(path: Path | str, limit: int | None = None) -> list[dict[str, Any]] | None:
    """The rows of a plain JSONL file (at most ``limit``), or ``None`` when it needs the general path.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
    ...     _ = f.write('{"item_id": "a", "prompt": "2+2?", "response": "4"}\\n')
    >>> read_plain_jsonl(f.name)
    [{'item_id': 'a', 'prompt': '2+2?', 'response': '4'}]
    >>> os.unlink(f.name)
    """
    source = Path(path)
    if source.suffix.lower() != ".jsonl":
        return None
    rows: list[dict[str, Any]] = []
    keys: list[str] | None = None
    try:
        with source.open("r", encoding="utf-8") as handle:
            for line in handle:
                if limit is not None and len(rows) >= max(0, limit):
                    break
                if not line.strip():
                    continue
                row = json.loads(line)
                if not isinstance(row, dict):
                    return None
                if keys is None:
                    keys = list(row)
                elif list(row) != keys:
                    return None
                rows.append(row)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # the general path reports it, naming the file and line
    if not rows or keys is None or not _plain(keys):
        return None
    ids = [row["item_id"] for row in rows]
    if not all(isinstance(i, str) and i.strip() == i and i for i in ids):
        return None
    if len(set(ids)) != len(ids):
        return None
    for row in rows:
        for value in row.values():
            if not isinstance(value, _SCALARS) or (isinstance(value, float) and value != value):
                return None
    return rows


def _plain(keys: list[str]) -> bool:
    """Keys whose canonical fields are already canonical, with ``item_id`` the only id column."""
    if "item_id" not in keys or detect_layout(keys) != "plain":
        return False
    lower = [k.lower() for k in keys]
    reserved = {*CANONICAL_COLUMNS, *ID_COLUMNS}
    for key, low in zip(keys, lower, strict=True):
        if low in reserved and key != low:
            return False  # "Prompt" or "ID": the general path decides what it means
    return not any(low in ID_COLUMNS and low != "item_id" for low in lower) and all(
        "/" not in k for k in keys
    )
