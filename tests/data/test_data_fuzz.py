"""Fuzzing the loaders: hostile bytes and odd-but-valid tables, in every format and layout.

Each test feeds generated files to :func:`evalcore.data.load_file` (or the upload service on a real
SQLite store) and checks the contract of the boundary: the file loads, or the failure is an
``EvalcoreError`` (never a bare exception), each case within Hypothesis' ``deadline``, and a rejected
upload leaves the store as it was. The ``max_examples`` values are recorded in docs/reliability.md.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from evalcore.data import ColumnMapping, LoadedFile, load_file
from evalcore.errors import EvalcoreError
from evalcore.labels import LIKERT_5, PAIRWISE
from evalcore.store import (
    CriterionRecord,
    ProjectRecord,
    Store,
    load_upload,
    plan_upload,
    save_upload,
)

#: A generous per-case bound (Hypothesis fails a case that runs longer, twice in a row).
DEADLINE_MS = 2_000

#: Column names every layout looks for, and a few that only look like them.
NAMES = (
    "id",
    "item_id",
    "ID",
    "idx",
    "prompt",
    "instruction",
    "response",
    "question",
    "answer",
    "query",
    "context",
    "ground_truth",
    "messages",
    "user_input",
    "retrieved_contexts",
    "reference",
    "annotator",
    "label",
    "criterion",
    "baseline_model_response",
    "fluency/human_rating",
    "fluency/score",
    "fluency/explanation",
    "fluency/human_rating_2",
    "fluency/human_rating/alice",
    "pref/human_pairwise_choice",
    "pref/pairwise_choice",
    "/score",
    "a/b/score",
    "",
    " ",
)

#: Words the label parsers treat specially.
WORDS = ("NA", "N/A", "null", "None", "nan", "error", "invalid", "unparsed", "A", "B", "tie", "yes")

FORMATS = ("csv", "tsv", "jsonl", "json", "parquet")

odd_text = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12
) | st.sampled_from((*WORDS, "=1+1", "\r", "\n", '"', "\t", ",", "\ufeff", "\u2028"))
scalars = st.one_of(
    st.none(),
    odd_text,
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)
cells = st.one_of(
    scalars,
    st.lists(scalars, max_size=3),
    st.dictionaries(st.sampled_from(("role", "content", "x")), scalars, max_size=2),
)
column_names = st.sampled_from(NAMES) | st.text(max_size=6)


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[str], list[list[Any]]]:
    """A header (names may repeat or be empty) and up to 6 rows of mixed cells (ragged rows too)."""
    names = draw(st.lists(column_names, min_size=1, max_size=6))
    rows = draw(
        st.lists(st.lists(cells, min_size=0, max_size=len(names) + 1), min_size=0, max_size=6)
    )
    return names, rows


#: Values a label column may hold: in-scale numbers, near misses, words and gaps.
labels = st.one_of(
    st.integers(0, 6),
    st.sampled_from((1.0, 2.5, 4.49, 5.0, -0.0)),
    st.sampled_from(WORDS),
    st.none(),
)
_LABEL_MARKS = ("rating", "score", "label", "choice")
_LIST_COLUMNS = ("messages", "retrieved_contexts")


@st.composite
def layout_tables(draw: st.DrawFn) -> tuple[list[str], list[list[Any]]]:
    """The columns of one layout (plus a few others), 1–8 full rows of cells that suit them."""
    names = list(_LAYOUT_SAMPLES[draw(st.sampled_from(sorted(_LAYOUT_SAMPLES)))][0])
    names += draw(st.lists(column_names, max_size=2))
    names = list(dict.fromkeys(names))

    def cell(name: str) -> st.SearchStrategy[Any]:
        if any(mark in name for mark in _LABEL_MARKS):
            return labels
        if name in _LIST_COLUMNS:
            return st.lists(
                odd_text | st.fixed_dictionaries({"role": odd_text, "content": odd_text}),
                max_size=3,
            )
        if name in ("item_id", "id"):
            return st.sampled_from(("a", "b", "c", "007", "7", " a"))
        return scalars

    rows = draw(st.lists(st.tuples(*(cell(n) for n in names)).map(list), min_size=1, max_size=8))
    return names, rows


def _text_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def _encode(fmt: str, names: list[str], rows: list[list[Any]]) -> bytes:
    """The table as a file of ``fmt``, written by hand so that odd shapes survive."""
    if fmt in ("csv", "tsv"):
        out = io.StringIO()
        writer = csv.writer(out, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")
        writer.writerow(names)
        writer.writerows([_text_cell(v) for v in row] for row in rows)
        return out.getvalue().encode("utf-8")
    records = [dict(zip(names, row, strict=False)) for row in rows]
    if fmt == "jsonl":
        return "".join(json.dumps(r) + "\n" for r in records).encode("utf-8")
    if fmt == "json":
        return json.dumps(records).encode("utf-8")
    # Parquet: one column per distinct name, each as text (or all missing), so any table is writable.
    unique = list(dict.fromkeys(names))
    columns = {
        name: pa.array(
            [None if len(row) <= i or row[i] is None else _text_cell(row[i]) for row in rows],
            pa.string(),
        )
        for i, name in enumerate(unique)
    }
    buffer = io.BytesIO()
    pq.write_table(pa.table(columns), buffer)
    return buffer.getvalue()


@st.composite
def mappings(draw: st.DrawFn, names: list[str]) -> ColumnMapping | None:
    """No mapping, or one naming columns of the table (and now and then one that is not there)."""
    if draw(st.booleans()):
        return None
    pick = st.none() | st.sampled_from([*names, "missing"])
    picks = st.lists(st.sampled_from([*names, "missing"]), max_size=2)
    try:
        return ColumnMapping(
            item_id=draw(pick),
            prompt=draw(pick),
            response=draw(pick),
            human=tuple(draw(picks)),
            judge=tuple(draw(picks)),
            metric=draw(st.sampled_from(("label", "fluency", "x/y"))),
            kind=draw(st.sampled_from((None, "pointwise", "pairwise"))),
            annotator=draw(pick),
            label=draw(pick),
        )
    except (ValueError, EvalcoreError):  # the mapping's own checks on names; not under test here
        return None


def _load_or_typed_error(data: bytes, name: str, **options: Any) -> LoadedFile | None:
    try:
        loaded = load_file(data, name=name, **options)
    except EvalcoreError as exc:
        event(f"refused: {type(exc).__name__}")
        message = str(exc)
    else:
        event(f"loaded: {loaded.layout}")
        return loaded
    assert message.strip()  # a message for the person who uploaded the file
    return None


# --- hostile bytes -----------------------------------------------------------------------------


@settings(max_examples=1_000, deadline=DEADLINE_MS)
@given(
    data=st.binary(max_size=600)
    | st.builds(lambda b: b"PAR1" + b + b"PAR1", st.binary(max_size=200))
    | st.builds(lambda b: b"\xef\xbb\xbf" + b, st.binary(max_size=200)),
    extension=st.sampled_from((".csv", ".tsv", ".jsonl", ".json", ".parquet", ".txt", "")),
)
def test_random_bytes_load_or_raise_a_typed_error(data: bytes, extension: str) -> None:
    _load_or_typed_error(data, f"upload{extension}")


@settings(max_examples=500, deadline=DEADLINE_MS)
@given(
    text=st.lists(st.sampled_from((*'{}[]",:\n\r\t abc019.-eE\\/', *NAMES)), max_size=60).map(
        "".join
    ),
    extension=st.sampled_from((".csv", ".tsv", ".jsonl", ".json")),
)
def test_punctuation_soup_loads_or_raises_a_typed_error(text: str, extension: str) -> None:
    _load_or_typed_error(text.encode("utf-8"), f"soup{extension}")


# --- structurally valid, odd tables ------------------------------------------------------------


@settings(max_examples=1_500, deadline=DEADLINE_MS, suppress_health_check=[HealthCheck.too_slow])
@given(table=tables() | layout_tables(), fmt=st.sampled_from(FORMATS), data=st.data())
def test_odd_tables_in_every_format_and_layout(
    table: tuple[list[str], list[list[Any]]], fmt: str, data: st.DataObject
) -> None:
    names, rows = table
    mapping = data.draw(mappings(names))
    loaded = _load_or_typed_error(
        _encode(fmt, names, rows),
        f"odd.{fmt}",
        mapping=mapping,
        round_half_up=data.draw(st.booleans()),
    )
    if loaded is not None:  # what loads is consistent: one item row per id, label sets on them
        assert loaded.items["item_id"].is_unique
        for label_set in loaded.label_sets:
            assert label_set.human.index.equals(label_set.judges.index)


@settings(max_examples=500, deadline=DEADLINE_MS)
@given(
    fmt=st.sampled_from(FORMATS),
    layout=st.sampled_from(("vertex", "azure", "conversation", "ragas", "long")),
    cut=st.integers(0, 10**6),
    flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=4),
)
def test_damaged_files_of_each_layout(
    fmt: str, layout: str, cut: int, flips: list[tuple[int, int]]
) -> None:
    """A valid file of each layout, truncated and with a few bytes overwritten."""
    names, rows = _LAYOUT_SAMPLES[layout]
    data = bytearray(_encode(fmt, names, rows))
    assert load_file(bytes(data), name=f"ok.{fmt}").n_rows == len(rows)  # the intact file loads
    for position, value in flips:
        data[position % len(data)] = value
    _load_or_typed_error(bytes(data[: max(1, cut % (len(data) + 1))]), f"damaged.{fmt}")


_LAYOUT_SAMPLES: dict[str, tuple[list[str], list[list[Any]]]] = {
    "vertex": (
        ["prompt", "response", "fluency/human_rating", "fluency/score"],
        [["p1", "r1", 4, 5], ["p2", "r2", 2, 3]],
    ),
    "azure": (["question", "answer", "context", "ground_truth"], [["q?", "a", "c", "g"]] * 2),
    "conversation": (["messages"], [[[{"role": "user", "content": "hi"}]]] * 2),
    "ragas": (
        ["user_input", "response", "retrieved_contexts", "reference"],
        [["q", "r", ["c1", "c2"], "ref"], ["q2", "r2", ["c3"], "ref2"]],
    ),
    "long": (
        ["item_id", "annotator", "label", "criterion"],
        [["a", "x", 1, "f"], ["a", "y", 2, "f"]],
    ),
}


# --- a rejected upload leaves the store unchanged ----------------------------------------------


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, ProjectRecord]]:
    path: Path = tmp_path_factory.mktemp("fuzz") / "store.sqlite"
    store = Store.open(f"sqlite:///{path}")
    try:
        project = store.create_project("fuzz")
        store.create_criterion(project.id, "fluency", kind="pointwise", scale=LIKERT_5)
        store.create_criterion(project.id, "pref", kind="pairwise", scale=PAIRWISE)
        yield store, project
    finally:
        store.close()


def _row_counts(store: Store) -> dict[str, int]:
    with store.engine.connect() as conn:
        return {
            table: int(conn.exec_driver_sql(f'SELECT count(*) FROM "{table}"').scalar_one())
            for table in sa.inspect(conn).get_table_names()
        }


@settings(
    max_examples=300,
    deadline=DEADLINE_MS,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    table=layout_tables() | tables(),
    fmt=st.sampled_from(FORMATS),
    dataset_name=st.sampled_from(("answers", "", "  ", "x" * 300)) | st.text(max_size=8),
    data=st.data(),
)
def test_a_rejected_upload_leaves_the_store_unchanged(
    world: tuple[Store, ProjectRecord],
    table: tuple[list[str], list[list[Any]]],
    fmt: str,
    dataset_name: str,
    data: st.DataObject,
) -> None:
    store, project = world
    names, rows = table
    criteria: dict[str, CriterionRecord] = {c.name: c for c in store.list_criteria(project.id)}
    before = _row_counts(store)
    stage = "load"
    try:
        preview = load_upload(_encode(fmt, names, rows), name=f"up.{fmt}", mapping=None)
        targets = {m: criteria.get(m) for m in preview.metrics}
        loaded = load_upload(_encode(fmt, names, rows), name=f"up.{fmt}", targets=targets)
        plan = plan_upload(loaded, kind=loaded.kind, targets=targets)
        stage = "save"
        save_upload(store, project.id, dataset_name, plan)
    except EvalcoreError as exc:
        if "the next label import failed" in str(exc):
            # import_plan's documented partial save: the dataset and the label parts written
            # before the failing one stay, and the message names them.
            event("partly saved")
            assert _row_counts(store)["datasets"] == before["datasets"] + 1
            return
        event(f"refused at {stage}: {type(exc).__name__}")
        assert _row_counts(store) == before
    else:
        event("saved")
        after = _row_counts(store)
        assert after["datasets"] == before["datasets"] + 1
