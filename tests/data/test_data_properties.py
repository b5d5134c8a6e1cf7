"""Properties: what write_table writes, load_file reads back; no input makes loading crash."""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcore.data import ColumnMapping, load_file, read_table, write_table
from evalcore.errors import EvalcoreError
from evalcore.labels import LIKERT_5

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
FUZZ = settings(max_examples=200, deadline=None)

# Text with the characters that break naive writers: delimiters, quotes, line breaks, unicode.
_TRICKY = st.sampled_from([",", '"', "'", "\n", "\r\n", "\t", "é", "雪", "🙂", "\u2028", "\\", " "])
TEXT = st.lists(st.one_of(st.text(max_size=6), _TRICKY), max_size=5).map("".join)
ID = st.text(min_size=1, max_size=8).filter(lambda s: s.strip() == s and s != "")
SCORE = st.sampled_from([1.0, 2.0, 3.0, 4.0, 5.0, None])
CHOICE = st.sampled_from(["model_A", "model_B", "tie", "A", "Candidate", "BASELINE", None])


@st.composite
def tables(draw: st.DrawFn, label: st.SearchStrategy[object] = SCORE) -> pd.DataFrame:
    n = draw(st.integers(min_value=1, max_value=8))
    ids = draw(st.lists(ID, min_size=n, max_size=n, unique=True))
    column = st.lists(label, min_size=n, max_size=n)
    frame = pd.DataFrame(
        {
            "id": ids,
            "prompt": draw(st.lists(TEXT, min_size=n, max_size=n)),
            "response": draw(st.lists(TEXT, min_size=n, max_size=n)),
            "h1": pd.Series(draw(column), dtype=object),
            "h2": pd.Series(draw(column), dtype=object),
            "j": pd.Series(draw(column), dtype=object),
        }
    )
    labels = pd.concat([frame["h1"], frame["h2"], frame["j"]])
    if labels.isna().all():
        frame.loc[0, "h1"] = draw(label.filter(lambda v: v is not None))
    return frame


MAPPING = ColumnMapping(
    item_id="id", prompt="prompt", response="response", human=("h1", "h2"), judge=("j",), metric="m"
)


def _text(value: str) -> str | None:
    return value if value != "" else None


def _check_round_trip(frame: pd.DataFrame, loaded, canonical) -> None:  # type: ignore[no-untyped-def]
    items = loaded.items
    assert items["item_id"].tolist() == frame["id"].tolist()
    for field in ("prompt", "response"):
        got = [None if pd.isna(v) else v for v in items[field].tolist()]
        assert got == [_text(v) for v in frame[field]]
    label_set = loaded.label_set("m")

    def labels(values: pd.Series) -> list[object]:
        # numbers come as float64 with NaN where missing, words as objects with None
        return [None if isinstance(v, float) and v != v else v for v in values.tolist()]

    for column in ("h1", "h2"):
        assert labels(label_set.human[column]) == [canonical(v) for v in frame[column]]
    assert labels(label_set.judges["j"]) == [canonical(v) for v in frame["j"]]


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl", "json", "parquet"])
@SETTINGS
@given(frame=tables())
def test_write_then_load_round_trips_scores(fmt: str, frame: pd.DataFrame) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"table.{fmt}"
        write_table(frame, path)
        loaded = load_file(path, mapping=MAPPING, scales=LIKERT_5)
    _check_round_trip(frame, loaded, lambda v: v)


_CHOICES = {
    "model_A": "A",
    "A": "A",
    "Candidate": "A",
    "model_B": "B",
    "BASELINE": "B",
    "tie": "TIE",
}


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
@SETTINGS
@given(frame=tables(CHOICE))
def test_write_then_load_round_trips_pairwise_choices(fmt: str, frame: pd.DataFrame) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"pairs.{fmt}"
        write_table(frame, path)
        loaded = load_file(path, mapping=MAPPING)
    assert loaded.label_set("m").kind == "pairwise"
    _check_round_trip(frame, loaded, lambda v: None if v is None else _CHOICES[v])


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
@SETTINGS
@given(frame=tables())
def test_read_table_round_trips_text_cells(fmt: str, frame: pd.DataFrame) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"t.{fmt}"
        write_table(frame[["id", "prompt"]], path)
        back = read_table(path)
    assert back["id"].tolist() == frame["id"].tolist()
    expected = [_text(v) for v in frame["prompt"]] if fmt == "csv" else frame["prompt"].tolist()
    assert [None if pd.isna(v) else v for v in back["prompt"]] == expected


NAMES = st.sampled_from(
    [
        None,
        "",
        "x.csv",
        "x.tsv",
        "x.jsonl",
        "x.json",
        "x.parquet",
        "x.PARQUET",
        ".parquet",
        "noext",
        "a.b.c",
        "x.",
        "ünï code.csv",
        "x.xlsx",
        "x.txt",
    ]
)
FORMATS = st.sampled_from([None, "csv", "tsv", "jsonl", "json", "parquet"])
PIECES = st.sampled_from(
    [
        b",",
        b'"',
        b"\n",
        b"\r",
        b"\t",
        b"{",
        b"}",
        b"[",
        b"]",
        b":",
        b"a",
        b"1",
        b"-",
        b"null",
        b'"k"',
        b"\xef\xbb\xbf",
        b"PAR1",
        b"\x00",
        b"\xe9",
        b"\\",
        b"id",
        b"label",
        b"item_id",
        b"annotator",
        b"f/score",
        b"f/human_rating",
        b"messages",
        b"user_input",
        b"question",
    ]
)
CSVISH = st.lists(PIECES, max_size=60).map(b"".join)


@FUZZ
@given(data=st.one_of(st.binary(max_size=400), CSVISH), name=NAMES, fmt=FORMATS)
def test_read_table_raises_only_evalcore_errors(
    data: bytes, name: str | None, fmt: str | None
) -> None:
    try:
        frame = read_table(data, name=name, fmt=fmt)
    except EvalcoreError:
        return
    assert isinstance(frame, pd.DataFrame)
    assert len(frame) > 0


@FUZZ
@given(data=st.one_of(st.binary(max_size=300), CSVISH), name=NAMES)
def test_load_file_raises_only_evalcore_errors(data: bytes, name: str | None) -> None:
    for mapping in (None, ColumnMapping(human=("label",))):
        with contextlib.suppress(EvalcoreError):
            load_file(data, name=name, mapping=mapping)


RECORD = st.dictionaries(
    st.sampled_from(
        [
            "id",
            "item_id",
            "annotator",
            "label",
            "f/score",
            "f/human_rating",
            "messages",
            "user_input",
            "response",
            "retrieved_contexts",
            "question",
            "answer",
        ]
    ),
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.just(10**400)
        | st.floats()
        | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(["role", "content", "context", "citations"]), inner, max_size=3
            )
        ),
        max_leaves=8,
    ),
    max_size=6,
)


@FUZZ
@given(records=st.lists(RECORD, min_size=1, max_size=5))
def test_load_file_on_arbitrary_json_records_raises_only_evalcore_errors(
    records: list[dict[str, object]],
) -> None:
    data = "\n".join(json.dumps(r) for r in records).encode()
    with contextlib.suppress(EvalcoreError):
        load_file(data, name="r.jsonl")
