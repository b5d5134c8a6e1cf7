"""Endpoint and price settings as the Settings page edits them, checked before they are stored.

An endpoint keeps the NAME of the environment variable or Streamlit secret holding its API key. A
value that looks like a key itself is refused with a message that never repeats it, both by the judge
client's rules (:class:`evalcore.judge.Endpoint`) and by the store's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from evalcore.errors import ConfigError
from evalcore.judge import Endpoint
from evalcore.runs._common import key_policy
from evalcore.secrets import key_status
from evalcore.store import EndpointKind, EndpointRecord, Store

__all__ = ["PRICE_COLUMNS", "endpoints_table", "price_table", "save_endpoint", "save_prices"]

#: Columns of :func:`price_table` (US dollars per million tokens; the batch prices may be blank).
PRICE_COLUMNS = (
    "model",
    "input_per_mtok",
    "output_per_mtok",
    "batch_input_per_mtok",
    "batch_output_per_mtok",
)
_BATCH_COLUMNS = PRICE_COLUMNS[3:]


def save_endpoint(
    store: Store,
    name: str,
    *,
    kind: EndpointKind = "openai",
    base_url: str,
    api_key_env: str | None,
    api_version: str | None = None,
    default_model: str | None = None,
) -> EndpointRecord:
    """Check an endpoint as the judge client will use it, then create or replace it by name.

    ``api_key_env`` is the NAME of the variable holding the key (blank: a local server that needs
    none). A pasted key, a base URL that is not http(s) and an Azure endpoint without an API version
    are refused with a :class:`~evalcore.errors.ConfigError`; nothing is saved then.
    """
    name = (name or "").strip()
    if not name:
        raise ConfigError("An endpoint needs a name.")
    env = (api_key_env or "").strip() or None
    # the client's rules first (stricter about what looks like a key), without echoing the value
    Endpoint(
        name,
        base_url=(base_url or "").strip(),
        kind=kind,
        api_key_env=env,
        api_version=(api_version or "").strip() or None,
        default_model=(default_model or "").strip(),
    )
    return store.upsert_endpoint(
        name,
        kind=kind,
        base_url=(base_url or "").strip(),
        api_key_env=env,
        api_version=(api_version or "").strip() or None,
        default_model=(default_model or "").strip() or None,
    )


_KEY_WORDS = {"set": "set", "missing": "not set", "not allowed": "not allowed"}


def endpoints_table(store: Store, secrets: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """The endpoints with the name of their key variable and whether it is set, missing or not
    allowed by the server's key policy (never the key). For admins: see
    :func:`evalcore.secrets.key_status`."""
    rows = []
    allowed = key_policy(store)
    for e in store.list_endpoints():
        status = key_status(e.api_key_env, secrets, allowed) if e.api_key_env else None
        rows.append(
            {
                "name": e.name,
                "kind": e.kind,
                "base_url": e.base_url,
                "api_key_env": e.api_key_env or "(none needed)",
                "key": "not needed" if status is None else _KEY_WORDS[status],
                "api_version": e.api_version,
                "default_model": e.default_model,
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "name",
            "kind",
            "base_url",
            "api_key_env",
            "key",
            "api_version",
            "default_model",
        ],
    )


def price_table(store: Store) -> pd.DataFrame:
    """The price table, one row per model; a model's batch price is blank when not set."""
    prices = store.get_model_prices()
    batch = store.get_batch_prices()
    return pd.DataFrame(
        [
            (m, p.input_per_mtok, p.output_per_mtok, *batch.get(m, (None, None)))
            for m, p in prices.items()
        ],
        columns=list(PRICE_COLUMNS),
    )


def _blank(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    if isinstance(value, str) and not value.strip():
        return True
    return type(value).__name__ in ("NAType", "NaTType")


def _price(value: Any, model: str, column: str) -> float:
    try:
        number = float("nan") if _blank(value) else float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"the {column} price of {model!r} must be a number") from None
    if math.isnan(number):
        raise ConfigError(f"the {column} price of {model!r} is missing")
    if number < 0:
        raise ConfigError(f"the {column} price of {model!r} must be a number of at least 0")
    return number


def save_prices(store: Store, table: pd.DataFrame) -> dict[str, int]:
    """Make the stored price table equal ``table`` (columns :data:`PRICE_COLUMNS`).

    Every row is checked before anything is written: a blank model name, a model listed twice and a
    negative or missing price are refused, naming the row. Rows whose model is blank and prices are
    empty (a row added and left empty in an editor) are ignored. The batch prices are optional (both
    blank: the model has none, and its batch runs show no cost); a table without the batch columns
    leaves them as they are. Returns how many prices were set and removed.
    """
    wanted: dict[str, tuple[float, float]] = {}
    batch: dict[str, tuple[float, float] | None] = {}
    for number, row in enumerate(table.to_dict("records"), start=1):
        model = "" if _blank(row.get("model")) else str(row["model"]).strip()
        raw_in, raw_out = row.get("input_per_mtok"), row.get("output_per_mtok")
        empty = _blank(raw_in) and _blank(raw_out)
        if not model:
            if empty:
                continue
            raise ConfigError(f"row {number} of the price table has prices but no model name")
        if model in wanted:
            raise ConfigError(f"model {model!r} is listed twice in the price table")
        wanted[model] = (
            _price(raw_in, model, "input"),
            _price(raw_out, model, "output"),
        )
        batch_in, batch_out = (row.get(c) for c in _BATCH_COLUMNS)
        batch[model] = (
            None
            if _blank(batch_in) and _blank(batch_out)
            else (_price(batch_in, model, "batch input"), _price(batch_out, model, "batch output"))
        )
    current = store.get_model_prices()
    changed = 0
    for model, (price_in, price_out) in wanted.items():
        old = current.get(model)
        if old is None or (old.input_per_mtok, old.output_per_mtok) != (price_in, price_out):
            store.set_model_price(model, input_per_mtok=price_in, output_per_mtok=price_out)
            changed += 1
    removed = [m for m in current if m not in wanted]
    for model in removed:
        store.delete_model_price(model)
    if set(_BATCH_COLUMNS) <= set(table.columns):
        changed += _save_batch_prices(store, batch)
    return {"set": changed, "removed": len(removed)}


def _save_batch_prices(store: Store, wanted: dict[str, tuple[float, float] | None]) -> int:
    """Make the stored batch prices those of ``wanted`` (``None``: none); returns the changes."""
    current = store.get_batch_prices()
    changed = 0
    for model, price in wanted.items():
        if price is not None and current.get(model) != price:
            store.set_batch_price(model, input_per_mtok=price[0], output_per_mtok=price[1])
            changed += 1
    for model in current:
        if wanted.get(model) is None:
            store.delete_batch_price(model)
    return changed
