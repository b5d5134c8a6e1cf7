"""Upload limits beyond the byte size: rows and decoded size, checked while reading.

A small compressed file can stand for far more data than its size says; these tests build such files
cheaply (a dictionary-encoded column repeats one value) and check that they are refused from the
Parquet footer or while the text is counted, with messages naming the file and the limit. Failures
of the third-party readers themselves (``MemoryError``) become a ``DataError`` naming the file.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.data import load_file, max_decoded_bytes, max_rows, read_table
from evalcore.errors import ConfigError, DataError, FileTooLargeError

WriteFile = Callable[[str, str | bytes], Path]


@pytest.fixture(autouse=True)
def _default_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("EVALCORE_MAX_UPLOAD_MB", "EVALCORE_MAX_ROWS", "EVALCORE_MAX_DECODED_MB"):
        monkeypatch.delenv(variable, raising=False)


def _parquet_bomb(row_groups: int, rows_per_group: int = 1_000_000) -> bytes:
    """A Parquet file of ``row_groups × rows_per_group`` rows of one repeated answer.

    Each group is written from the same dictionary array (1 MB of int8 indices), so building the
    file never holds more than one group in memory; run-length encoding keeps the file tiny.
    """
    indices = pa.array(np.zeros(rows_per_group, dtype=np.int8))
    column = pa.DictionaryArray.from_arrays(indices, pa.array(["the very same answer"]))
    table = pa.table({"prompt": column, "response": column, "lang": column})
    buffer = io.BytesIO()
    with pq.ParquetWriter(buffer, table.schema, compression="zstd") as writer:
        for _ in range(row_groups):
            writer.write_table(table, row_group_size=rows_per_group)
    return buffer.getvalue()


def test_a_small_parquet_file_of_twenty_million_rows_is_refused_from_its_footer(
    write_file: WriteFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _parquet_bomb(20)
    assert len(data) < 400 * 1024  # a few hundred KB on disk...
    assert pq.ParquetFile(io.BytesIO(data)).metadata.num_rows == 20_000_000  # ...20 million rows
    path = write_file("bomb.parquet", data)

    # Nothing may be decoded: reading any row group would be a failure of the footer check.
    def no_decoding(*args: object, **kwargs: object) -> None:
        raise AssertionError("the rows were decoded")

    monkeypatch.setattr(pq.ParquetFile, "read", no_decoding)
    monkeypatch.setattr(pq.ParquetFile, "read_row_group", no_decoding)
    with pytest.raises(FileTooLargeError) as caught:
        load_file(path)
    message = str(caught.value)
    assert "bomb.parquet" in message
    assert "20,000,000 rows" in message
    assert "limit of 2,000,000 rows" in message
    assert "EVALCORE_MAX_ROWS" in message


def test_the_row_limit_is_configurable_for_parquet(
    write_file: WriteFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_file("three.parquet", _parquet_bomb(1, rows_per_group=3))
    monkeypatch.setenv("EVALCORE_MAX_ROWS", "3")
    assert len(read_table(path)) == 3  # at the limit: read
    monkeypatch.setenv("EVALCORE_MAX_ROWS", "2")
    with pytest.raises(FileTooLargeError, match=r"three\.parquet has 3 rows.*limit of 2 rows"):
        read_table(path)


def test_parquet_refused_by_its_decompressed_size(
    write_file: WriteFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2,000 distinct 40-character answers: at least 80,000 bytes of pages once decompressed,
    # far above a limit of 0.01 MB = 10,485 bytes, while the compressed file is small.
    answers = [f"{n:040d}" for n in range(2_000)]
    buffer = io.BytesIO()
    pq.write_table(pa.table({"response": answers}), buffer, compression="zstd")
    path = write_file("wide.parquet", buffer.getvalue())
    assert len(read_table(path)) == 2_000  # the default decoded limit (800 MB) lets it through
    monkeypatch.setenv("EVALCORE_MAX_DECODED_MB", "0.01")
    with pytest.raises(
        FileTooLargeError, match=r"wide\.parquet.*decompressed.*EVALCORE_MAX_DECODED"
    ):
        read_table(path)


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("six.csv", "id,response\n" + "".join(f"{n},r{n}\n" for n in range(6))),
        ("six.tsv", "id\tresponse\n" + "".join(f"{n}\tr{n}\n" for n in range(6))),
        ("six.jsonl", "".join(json.dumps({"id": n, "response": "r"}) + "\n" for n in range(6))),
        ("six.json", json.dumps([{"id": n, "response": "r"} for n in range(6)])),
    ],
)
def test_text_files_over_the_row_limit(
    write_file: WriteFile, monkeypatch: pytest.MonkeyPatch, name: str, content: str
) -> None:
    path = write_file(name, content)
    monkeypatch.setenv("EVALCORE_MAX_ROWS", "6")
    assert len(read_table(path)) == 6
    monkeypatch.setenv("EVALCORE_MAX_ROWS", "5")
    with pytest.raises(FileTooLargeError) as caught:
        load_file(path)
    assert name in str(caught.value)
    assert "limit of 5 rows" in str(caught.value)
    assert "EVALCORE_MAX_ROWS" in str(caught.value)


def test_a_large_csv_is_not_decoded_past_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # 200,000 rows against a limit of 10: the reader stops after 12 lines (header, 10, one more).
    content = b"id,response\n" + b"1,yes\n" * 200_000
    seen: list[int] = []
    real = pd.read_csv

    def counting(*args: object, **kwargs: object) -> object:
        frame = real(*args, **kwargs)
        seen.append(len(frame))
        return frame

    monkeypatch.setattr("pandas.read_csv", counting)
    monkeypatch.setenv("EVALCORE_MAX_ROWS", "10")
    with pytest.raises(FileTooLargeError, match="more than 10 rows"):
        read_table(content, name="long.csv")
    assert seen == [12]


def test_limit_variables_are_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    assert max_rows() == 2_000_000
    assert max_decoded_bytes() == 4 * 200 * 1024 * 1024
    monkeypatch.setenv("EVALCORE_MAX_UPLOAD_MB", "10")
    assert max_decoded_bytes() == 4 * 10 * 1024 * 1024  # follows the upload limit
    monkeypatch.setenv("EVALCORE_MAX_DECODED_MB", "1.5")
    assert max_decoded_bytes() == 1_572_864  # 1.5 × 1,048,576
    monkeypatch.setenv("EVALCORE_MAX_ROWS", "none")
    with pytest.raises(ConfigError, match="EVALCORE_MAX_ROWS='none'"):
        max_rows()
    monkeypatch.setenv("EVALCORE_MAX_DECODED_MB", "-1")
    with pytest.raises(ConfigError, match="EVALCORE_MAX_DECODED_MB"):
        max_decoded_bytes()


def _out_of_memory(*args: object, **kwargs: object) -> None:
    raise MemoryError


def test_memory_error_in_the_parquet_reader_names_the_file(
    write_file: WriteFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_file("big.parquet", _parquet_bomb(1, rows_per_group=10))
    monkeypatch.setattr(pq.ParquetFile, "read", _out_of_memory)
    with pytest.raises(DataError, match=r"big\.parquet needs more memory") as caught:
        load_file(path)
    assert caught.value.source == str(path)


@pytest.mark.parametrize(
    ("name", "target"),
    [("big.csv", "pandas.read_csv"), ("big.jsonl", "json.loads"), ("big.json", "json.loads")],
)
def test_memory_error_in_the_text_readers_names_the_file(
    monkeypatch: pytest.MonkeyPatch, name: str, target: str
) -> None:
    content = b'[{"id": 1, "response": "r"}]' if name.endswith(".json") else b'{"id": 1}\n'
    if name.endswith(".csv"):
        content = b"id,response\n1,r\n"
    monkeypatch.setattr(target, _out_of_memory)
    with pytest.raises(DataError, match=f"{name} needs more memory"):
        read_table(content, name=name)


def test_any_other_reader_failure_is_a_data_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise SystemError("internal parser state")

    monkeypatch.setattr("pandas.DataFrame.from_records", broken)
    with pytest.raises(DataError, match=r"odd\.jsonl cannot be read: SystemError"):
        load_file(b'{"response": "r"}\n', name="odd.jsonl")
