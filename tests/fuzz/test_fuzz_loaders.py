"""Fuzzing the upload loaders, one format at a time, and the upload service on a real store.

Each case is a table of one of the layouts (or of random columns) whose cells may hold hostile
values: odd numbers and text, JSON nested around the limit or 100,000 levels deep (as raw JSON in
JSONL/JSON, as cell text in CSV/TSV/Parquet), often damaged afterwards (bytes overwritten,
inserted, deleted, or the file cut short). What loads must hold no value nested deeper than the
limit; everything else must be a typed error. The upload test also saves what loads into a real
SQLite store, and checks a refused upload left every table as it was.
"""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st

from evalcore.data import LoadedFile, load_file
from evalcore.errors import EvalcoreError
from evalcore.labels import LIKERT_5, PAIRWISE
from evalcore.limits import MAX_JSON_DEPTH, value_depth
from evalcore.store import (
    CriterionRecord,
    ProjectRecord,
    Store,
    load_upload,
    plan_upload,
    save_upload,
)
from tests.data.test_data_fuzz import _LAYOUT_SAMPLES, _text_cell, layout_tables, mappings, tables
from tests.fuzz.harness import (
    HOSTILE,
    Raw,
    damaged,
    fuzz_settings,
    note,
    typed,
    write_json,
)

FORMATS = ("csv", "tsv", "jsonl", "json", "parquet")


@st.composite
def hostile_tables(draw: st.DrawFn) -> tuple[list[str], list[list[Any]]]:
    """A layout's table (or random columns) with some cells replaced by hostile values."""
    names, rows = draw(layout_tables() | tables() | st.sampled_from(list(_LAYOUT_SAMPLES.values())))
    rows = [list(row) for row in rows]
    for _ in range(draw(st.integers(0, 3))):
        if not rows or not names:
            break
        row = draw(st.integers(0, len(rows) - 1))
        column = draw(st.integers(0, len(names) - 1))
        while len(rows[row]) <= column:
            rows[row].append(None)
        rows[row][column] = draw(HOSTILE)
    return names, rows


def _cell_text(value: Any) -> str:
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, list | dict):
        return write_json(value)
    return _text_cell(value)


def _nested_column(depth: int, rows: int) -> pa.Array:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return pa.array([value] * rows)


def encode(fmt: str, names: list[str], rows: list[list[Any]], draw: st.DrawFn) -> bytes:
    """The table as a file of ``fmt``, written by hand so that hostile values stay hostile."""
    if fmt in ("csv", "tsv"):
        out = io.StringIO()
        writer = csv.writer(out, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")
        writer.writerow(names)
        writer.writerows([_cell_text(v) for v in row] for row in rows)
        return out.getvalue().encode("utf-8")
    if fmt in ("jsonl", "json"):
        records = [dict(zip(names, row, strict=False)) for row in rows]
        if fmt == "jsonl":
            lines = [write_json(r) for r in records]
            if lines and draw(st.booleans()):  # a whole line of hostile JSON
                at = draw(st.integers(0, len(lines)))
                lines.insert(at, _cell_text(draw(HOSTILE)))
            return "\n".join(lines).encode("utf-8")
        indent = draw(st.sampled_from([None, 1]))
        if len(records) == 1 and draw(st.booleans()):  # a single object is a one-row table
            return write_json(records[0], indent=indent).encode("utf-8")
        return write_json(records, indent=indent).encode("utf-8")
    unique = list(dict.fromkeys(names)) or ["x"]
    columns: dict[str, Any] = {
        name: pa.array(
            [None if len(row) <= i or row[i] is None else _cell_text(row[i]) for row in rows],
            pa.string(),
        )
        for i, name in enumerate(unique)
    }
    if rows and draw(st.integers(0, 4)) == 0:  # a nested list column, deep or not
        columns["nested"] = _nested_column(draw(st.integers(1, 80)), len(rows))
    buffer = io.BytesIO()
    pq.write_table(pa.table(columns), buffer)
    return buffer.getvalue()


def safety_net(error: EvalcoreError) -> str:
    """The error's type, marked when it is the loaders' catch-all (``guarded``) that made a
    third-party exception typed: those are counted apart, as faults the net caught."""
    cause = error.__cause__
    if " cannot be read: " in str(error) and not isinstance(cause, EvalcoreError | None):
        return f"{type(error).__name__} (catch-all: {type(cause).__name__})"
    return type(error).__name__


def _check_loaded(loaded: LoadedFile) -> None:
    """What loads holds nothing deeper than the limit, and one item per id."""
    assert loaded.items["item_id"].is_unique
    for column in loaded.items.columns:
        for value in loaded.items[column].tolist():
            assert value_depth(value) <= MAX_JSON_DEPTH, column


@pytest.mark.parametrize("fmt", FORMATS)
@fuzz_settings(ci=25)
@given(table=hostile_tables(), data=st.data())
def test_fuzz_loader(
    fmt: str, table: tuple[list[str], list[list[Any]]], data: st.DataObject
) -> None:
    names, rows = table
    content = encode(fmt, names, rows, data.draw)
    if data.draw(st.integers(0, 3)) == 0:
        content = data.draw(damaged(content))
    mapping = data.draw(mappings(names))
    round_half_up = data.draw(st.booleans())
    loaded = typed(
        f"loader {fmt}",
        lambda: load_file(
            content, name=f"fuzz.{fmt}", mapping=mapping, round_half_up=round_half_up
        ),
        label=safety_net,
    )
    if loaded is not None:
        _check_loaded(loaded)


# --- the upload service on a real store -----------------------------------------------------------


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, ProjectRecord]]:
    path: Path = tmp_path_factory.mktemp("fuzz-uploads") / "store.sqlite"
    store = Store.open(f"sqlite:///{path}")
    try:
        project = store.create_project("fuzz")
        store.create_criterion(project.id, "fluency", kind="pointwise", scale=LIKERT_5)
        store.create_criterion(project.id, "pref", kind="pairwise", scale=PAIRWISE)
        yield store, project
    finally:
        store.close()


_UPLOADS = itertools.count()


_TABLES: dict[int, list[str]] = {}


def row_counts(store: Store) -> dict[str, int]:
    """Every table's row count, in one query (the table names are read once per database)."""
    tables = _TABLES.get(id(store))
    with store.engine.connect() as conn:
        if tables is None:
            names = sa.inspect(conn).get_table_names()
            tables = _TABLES[id(store)] = list(names)
        counts = ", ".join(f'(SELECT count(*) FROM "{t}")' for t in tables)
        row = conn.exec_driver_sql(f"SELECT {counts}").one()
    return dict(zip(tables, (int(n) for n in row), strict=True))


@fuzz_settings(ci=20)
@given(
    table=hostile_tables(),
    fmt=st.sampled_from(FORMATS),
    name=st.sampled_from(("answers", "", "  ", "x" * 300)) | st.text(max_size=8),
    data=st.data(),
)
def test_fuzz_upload(
    world: tuple[Store, ProjectRecord],
    table: tuple[list[str], list[list[Any]]],
    fmt: str,
    name: str,
    data: st.DataObject,
) -> None:
    store, project = world
    names, rows = table
    content = encode(fmt, names, rows, data.draw)
    if data.draw(st.integers(0, 4)) == 0:
        content = data.draw(damaged(content))
    criteria: dict[str, CriterionRecord] = {c.name: c for c in store.list_criteria(project.id)}
    before = row_counts(store)

    def upload() -> bool:
        preview = load_upload(content, name=f"up.{fmt}")
        targets = {m: criteria.get(m) for m in preview.metrics}
        loaded = load_upload(content, name=f"up.{fmt}", targets=targets)
        _check_loaded(loaded)
        plan = plan_upload(loaded, kind=loaded.kind, targets=targets)
        # a unique name: a saved upload never makes the next one a new version by chance
        unique = f"{name}-{next(_UPLOADS)}" if name.strip() else name
        save_upload(store, project.id, unique, plan)
        return True

    saved = typed("upload", upload, label=safety_net)
    after = row_counts(store)
    if saved is None and after != before:
        # import_plan's documented partial save: the dataset and the labels written before the
        # failing label part stay (the message names them); nothing else may change
        assert after["datasets"] == before["datasets"] + 1
        note("upload", "partly saved (documented)")
    elif saved is None:
        note("upload", "refused, store unchanged")
    else:
        assert after["datasets"] == before["datasets"] + 1
