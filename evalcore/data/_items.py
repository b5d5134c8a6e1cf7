"""The items table: item ids, canonical text fields, conversations, passages and metadata."""

from __future__ import annotations

import ast
import contextlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalcore.errors import DataError, DuplicateIdError, MalformedFileError
from evalcore.limits import JsonTooDeepError, check_json_depth, load_json

from ._common import RowRef, plain, to_text
from ._layout import CANONICAL_COLUMNS, ITEM_FIELDS, Layout, VertexColumn
from ._mapping import ColumnMapping


@dataclass(frozen=True)
class Plan:
    """Which column plays which part in a table (decided once, used by items and labels)."""

    layout: Layout
    mapping: ColumnMapping | None
    id_column: str | None
    fields: dict[str, str]
    conversation: str | None
    passages: str | None
    long_form: bool
    vertex: tuple[VertexColumn, ...]
    consumed: frozenset[str]
    annotator: str | None = None
    label: str | None = None
    criterion: str | None = None


# --- item ids ---------------------------------------------------------------------------------------


def _id_text(value: Any) -> str | None:
    value = plain(value)
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value.strip() or None
    return to_text(value)


def _all_text(series: pd.Series) -> bool:
    """An object column whose values are all strings (missing cells aside)."""
    return bool(
        series.dtype == object and pd.api.types.infer_dtype(series, skipna=True) == "string"
    )


def id_strings(series: pd.Series) -> np.ndarray:
    """Ids as text, vectorised for the common column types; ``None`` where missing.

    Text is stripped of surrounding space (a blank cell is missing), whole numbers print without a
    decimal point (``7.0`` is ``"7"``), other floats as ``repr``. A column of Python objects that
    are all text (JSONL, a frame built by hand) takes the text path; a mixed one goes cell by cell.
    """
    if _all_text(series):
        series = series.astype("str")
    if isinstance(series.dtype, pd.StringDtype):
        stripped = series.str.strip()
        blank = (stripped.isna() | stripped.eq("")).to_numpy(dtype=bool, na_value=True)
        out: np.ndarray = stripped.to_numpy(dtype=object, na_value=None)
        out[blank] = None
        return out
    if pd.api.types.is_integer_dtype(series) and not pd.api.types.is_bool_dtype(series):
        present = series.notna().to_numpy()
        out = np.full(len(series), None, dtype=object)
        out[present] = series[present].astype(str).to_numpy(dtype=object)
        return out
    if pd.api.types.is_float_dtype(series):
        numbers = series.to_numpy(dtype="float64", na_value=np.nan)
        out = np.full(len(series), None, dtype=object)
        whole = np.isfinite(numbers) & (np.floor(numbers) == numbers) & (np.abs(numbers) < 2**63)
        out[whole] = numbers[whole].astype(np.int64).astype(str)
        other = ~np.isnan(numbers) & ~whole
        out[other] = [repr(float(x)) for x in numbers[other]]
        return out
    return np.asarray([_id_text(v) for v in series.tolist()], dtype=object)


def required_strings(
    frame: pd.DataFrame, column: str, rows: RowRef, source: str, *, what: str
) -> np.ndarray:
    """A column's values as text (:func:`id_strings`); a :class:`DataError` names the empty rows."""
    values = id_strings(frame[column])
    missing = pd.isna(values)
    if missing.any():
        where = np.flatnonzero(missing)
        raise DataError(
            f"{source}: column {column!r} {what} on {rows.describe(where)}; every row needs one",
            source=source,
            column=column,
            rows=rows.numbers(where[:20]),
        )
    return values


def item_ids(
    frame: pd.DataFrame, column: str | None, rows: RowRef, source: str, *, unique: bool = True
) -> np.ndarray:
    """The items' ids: ``column`` as text, else the row numbers ``"1"``, ``"2"``, ….

    With ``unique`` (the default) a repeated id is a :class:`DuplicateIdError`. The check is one
    hash pass over the ids (no Python loop per row); only a file that fails it is looked at again
    to name the repeated ids and their rows.
    """
    if column is None:
        return np.arange(1, len(frame) + 1).astype(str).astype(object)
    ids = required_strings(frame, column, rows, source, what="has no item id")
    if unique and not pd.Index(ids, dtype=object).is_unique:
        repeated = pd.Series(ids, dtype=object).duplicated(keep=False).to_numpy()
        raise _duplicate_ids(ids, repeated, column, rows, source)
    return ids


def _duplicate_ids(
    ids: np.ndarray, repeated: np.ndarray, column: str, rows: RowRef, source: str
) -> DuplicateIdError:
    positions = np.flatnonzero(repeated)
    distinct = pd.unique(ids[positions])
    shown = [
        f"{item_id!r} on {rows.describe(np.flatnonzero(ids == item_id))}"
        for item_id in distinct[:3]
    ]
    more = len(distinct) - len(shown)
    return DuplicateIdError(
        f"{source}: column {column!r} repeats item ids: {'; '.join(shown)}"
        + (f"; and {more} more repeated ids" if more > 0 else "")
        + ". Item ids must be unique",
        source=source,
        column=column,
        rows=rows.numbers(positions[:20]),
        item_id=str(distinct[0]),
    )


# --- item fields --------------------------------------------------------------------------------------


def text_values(series: pd.Series) -> pd.Series:
    """A text field as a ``str`` Series with a fresh index; blank cells are missing.

    Text columns (Arrow strings, or Python strings as JSONL gives them) are converted in one step;
    only a column holding other values (numbers, lists, objects) goes cell by cell.
    """
    if _all_text(series):
        series = series.astype("str")
    if isinstance(series.dtype, pd.StringDtype):
        out = series.reset_index(drop=True).astype("str")
        return out.mask(out.eq("").fillna(False).astype(bool))
    return pd.Series([to_text(v) for v in series.tolist()], dtype="str")


def _text_series(values: pd.Series | np.ndarray | list[Any]) -> pd.Series:
    if isinstance(values, pd.Series):
        return values.reset_index(drop=True).astype("str")
    return pd.Series(values, dtype="str")


def _parse_list_text(text: str) -> list[Any] | None:
    try:  # a cell nested too deeply stays text (the bound of evalcore.limits, here for literals too)
        check_json_depth(text)
    except JsonTooDeepError:
        return None
    with contextlib.suppress(ValueError, RecursionError):
        value = json.loads(text)
        return value if isinstance(value, list) else None
    with contextlib.suppress(ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        value = ast.literal_eval(text)
        return list(value) if isinstance(value, (list, tuple)) else None
    return None


def _passages(value: Any) -> list[str] | None:
    value = plain(value)
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        parsed = _parse_list_text(text) if text.startswith("[") else None
        if parsed is None:
            return [value]
        value = parsed
    if isinstance(value, list):
        return [t for t in (to_text(v) for v in value) if t is not None]
    text_value = to_text(value)
    return [text_value] if text_value else None


def _citations(context: Any) -> list[str]:
    if context is None:
        return []
    if isinstance(context, str):
        return [context] if context.strip() else []
    if isinstance(context, dict):
        citations = context.get("citations")
        if citations is None:
            text = to_text(context)
            return [text] if text else []
        context = citations
    if isinstance(context, list):
        return [t for t in (to_text(c) for c in context) if t]
    text = to_text(context)
    return [text] if text else []


def _bad_conversation(
    source: str, column: str, rows: RowRef, position: int, what: str
) -> MalformedFileError:
    return MalformedFileError(
        f"{source}: {column} on {rows.describe([position])} {what}; a conversation is a list "
        "of {role, content} turns",
        source=source,
        column=column,
        rows=rows.numbers([position]),
    )


def _conversations(
    series: pd.Series, rows: RowRef, source: str, column: str
) -> tuple[list[str | None], list[str | None], list[str | None], list[str | None]]:
    conversations: list[str | None] = []
    prompts: list[str | None] = []
    responses: list[str | None] = []
    contexts: list[str | None] = []
    for position, raw in enumerate(series.tolist()):
        value = plain(raw)
        if isinstance(value, str) and value.strip():
            try:
                value = plain(load_json(value))
            except JsonTooDeepError as exc:
                raise _bad_conversation(
                    source, column, rows, position, f"is JSON nested deeper than {exc.limit} levels"
                ) from None
            except (ValueError, RecursionError):
                value = "not JSON"
        if value is None or value == "":
            for out in (conversations, prompts, responses, contexts):
                out.append(None)
            continue
        if not isinstance(value, list):
            raise _bad_conversation(source, column, rows, position, "is not a list of turns")
        prompt = response = None
        passages: list[str] = []
        for number, turn in enumerate(value, start=1):
            if not isinstance(turn, dict):
                raise _bad_conversation(
                    source, column, rows, position, f"has a turn {number} that is not an object"
                )
            role = str(turn.get("role", "")).strip().lower()
            if role == "user":
                prompt = to_text(turn.get("content"))
            elif role == "assistant":
                response = to_text(turn.get("content"))
                passages.extend(_citations(turn.get("context")))
        conversations.append(json.dumps(value, ensure_ascii=False, default=str))
        prompts.append(prompt)
        responses.append(response)
        contexts.append("\n\n".join(passages) if passages else None)
    return conversations, prompts, responses, contexts


def build_items(
    frame: pd.DataFrame,
    ids: np.ndarray,
    plan: Plan,
    rows: RowRef,
    source: str,
    *,
    metadata: bool,
) -> pd.DataFrame:
    fields: dict[str, Any] = {}
    for field in ITEM_FIELDS:
        column = plan.fields.get(field)
        if column is not None and column != plan.passages:
            fields[field] = text_values(frame[column])
    passages: list[list[str] | None] | None = None
    if plan.passages is not None:
        passages = [_passages(v) for v in frame[plan.passages].tolist()]
        fields["context"] = [("\n\n".join(p) or None) if p else None for p in passages]
    if plan.conversation is not None:
        conv, prompts, responses, contexts = _conversations(
            frame[plan.conversation], rows, source, plan.conversation
        )
        fields.setdefault("prompt", prompts)
        fields.setdefault("response", responses)
        fields.setdefault("context", contexts)
        fields["conversation"] = conv
    data: dict[str, pd.Series] = {"item_id": _text_series(ids)}
    for field in CANONICAL_COLUMNS[1:]:
        if field in fields:
            data[field] = _text_series(fields[field])
    if metadata:
        for column in frame.columns:
            if column in plan.consumed:
                continue
            name = column
            # an exact mapping's extra column never takes a canonical field's name
            reserved = CANONICAL_COLUMNS if plan.mapping is not None and plan.mapping.exact else ()
            while name in data or name in reserved:
                name = f"{name}_original"
            if column == plan.passages and passages is not None:
                data[name] = pd.Series(passages, dtype=object)
            else:
                data[name] = frame[column].reset_index(drop=True)
    items = pd.DataFrame(data)
    items.index = pd.RangeIndex(len(items))
    return items
