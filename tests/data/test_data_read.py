"""read_table / write_table: formats, sources, limits and every way a file can be broken."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest

from evalcore.data import max_upload_bytes, read_table, write_table
from evalcore.errors import (
    ConfigError,
    DataError,
    EmptyFileError,
    EncodingError,
    FileTooLargeError,
    MalformedFileError,
)

# --- formats and sources ---------------------------------------------------------------------------


def test_csv_cells_are_text_and_only_empty_cells_are_missing(write_file):
    path = write_file("answers.csv", 'id,response,score\n007,None,4\n008,NA,\n009,"a, b",5\n')
    frame = read_table(path)
    assert frame["id"].tolist() == ["007", "008", "009"]
    assert frame["response"].tolist() == ["None", "NA", "a, b"]
    assert frame["score"].iloc[0] == "4"
    assert pd.isna(frame["score"].iloc[1])
    assert list(frame.index) == [0, 1, 2]


def test_csv_with_utf8_bom_and_crlf_and_quoted_newlines(write_file):
    content = '\ufeffid,text\r\n1,"line one\r\nline two"\r\n2,é\r\n'.encode()
    frame = read_table(write_file("bom.csv", content))
    assert frame.columns.tolist() == ["id", "text"]
    assert frame["text"].tolist() == ["line one\r\nline two", "é"]


def test_blank_lines_in_csv_are_skipped():
    frame = read_table(b"a,b\n\n1,2\n\n3,4\n", name="gaps.csv")
    assert frame.to_dict("list") == {"a": ["1", "3"], "b": ["2", "4"]}


def test_tsv():
    frame = read_table(b"a\tb\nx, y\tz\n", name="t.tsv")
    assert frame.to_dict("list") == {"a": ["x, y"], "b": ["z"]}


def test_sources_path_str_bytes_and_file_like(write_file):
    content = b"a,b\n1,2\n"
    path = write_file("s.csv", content)
    expected = {"a": ["1"], "b": ["2"]}
    assert read_table(path).to_dict("list") == expected
    assert read_table(str(path)).to_dict("list") == expected
    assert read_table(content, name="s.csv").to_dict("list") == expected
    upload = io.BytesIO(content)
    upload.name = "upload.csv"
    upload.read()  # a rerun may find the stream already consumed: the whole buffer is still read
    assert read_table(upload).to_dict("list") == expected


class _Upload:
    """Shaped like Streamlit's UploadedFile: a name, a size and getvalue()."""

    def __init__(self, name: str, data: bytes, size: int | None = None) -> None:
        self.name = name
        self._data = data
        self.size = len(data) if size is None else size

    def getvalue(self) -> bytes:
        if self.size > 1000:
            raise AssertionError("the content was read although the size is over the limit")
        return self._data


def test_uploaded_file_like_object():
    frame = read_table(_Upload("up.jsonl", b'{"a": 1}\n'))
    assert frame.to_dict("list") == {"a": [1]}


def test_jsonl_keeps_json_types_and_skips_blank_lines():
    data = b'{"id": 1, "text": "x", "tags": ["a"]}\n\n{"id": 2, "text": null, "extra": true}\n'
    frame = read_table(data, name="d.jsonl")
    assert frame["id"].tolist() == [1, 2]
    assert frame["tags"].iloc[0] == ["a"]
    assert pd.isna(frame["text"].iloc[1])
    assert frame.columns.tolist() == ["id", "text", "tags", "extra"]


def test_json_array_and_json_name_holding_jsonl_and_a_single_object():
    assert read_table(b'[{"a": 1}, {"a": 2}]', name="d.json")["a"].tolist() == [1, 2]
    assert read_table(b'{"a": 1}\n{"a": 2}\n', name="d.json")["a"].tolist() == [1, 2]
    assert read_table(b'{\n  "a": 1\n}\n', name="one.json")["a"].tolist() == [1]


def test_parquet_round_trip_with_list_column(tmp_path: Path):
    frame = pd.DataFrame({"id": ["a", "b"], "ctx": [["p1", "p2"], []], "score": [1.5, None]})
    path = tmp_path / "f.parquet"
    write_table(frame, path)
    back = read_table(path)
    assert back["id"].tolist() == ["a", "b"]
    assert list(back["ctx"].iloc[0]) == ["p1", "p2"]
    assert pd.isna(back["score"].iloc[1])


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"a": 1}\n', {"a": [1]}),
        (b'  [{"a": 1}]', {"a": [1]}),
        (b"a,b\n1,2\n", {"a": ["1"], "b": ["2"]}),
    ],
)
def test_format_is_sniffed_without_a_known_extension(content, expected):
    assert read_table(content).to_dict("list") == expected
    assert read_table(content, name="upload.txt").to_dict("list") == expected


def test_parquet_is_sniffed_and_fmt_overrides_the_name():
    buffer = io.BytesIO()
    write_table(pd.DataFrame({"a": [1]}), buffer, "parquet")
    assert read_table(buffer.getvalue()).to_dict("list") == {"a": [1]}
    assert read_table(buffer.getvalue(), name="x.csv", fmt="parquet").to_dict("list") == {"a": [1]}
    assert read_table(b"a\n1\n", name="x.jsonl", fmt="CSV").to_dict("list") == {"a": ["1"]}


# --- limits ------------------------------------------------------------------------------------------


def test_max_upload_bytes_from_environment(monkeypatch):
    monkeypatch.delenv("EVALCORE_MAX_UPLOAD_MB", raising=False)
    assert max_upload_bytes() == 200 * 1024 * 1024
    monkeypatch.setenv("EVALCORE_MAX_UPLOAD_MB", "0.5")
    assert max_upload_bytes() == 512 * 1024
    monkeypatch.setenv("EVALCORE_MAX_UPLOAD_MB", "lots")
    with pytest.raises(ConfigError, match="EVALCORE_MAX_UPLOAD_MB"):
        max_upload_bytes()


def test_bytes_over_the_limit():
    with pytest.raises(FileTooLargeError) as info:
        read_table(b"a,b\n1,2\n", name="big.csv", max_bytes=5)
    assert str(info.value).startswith("big.csv is 8 bytes, above the upload limit of 5 bytes")
    assert info.value.source == "big.csv"


def test_environment_limit_applies_by_default(monkeypatch):
    monkeypatch.setenv("EVALCORE_MAX_UPLOAD_MB", "0.000001")  # one byte
    with pytest.raises(FileTooLargeError, match="EVALCORE_MAX_UPLOAD_MB"):
        read_table(b"a\n1\n", name="x.csv")


def test_path_over_the_limit_is_refused_before_reading(tmp_path: Path):
    # A sparse file of 4 GiB: reading it would take memory and time; the size check must come first.
    path = tmp_path / "huge.csv"
    with path.open("wb") as handle:
        handle.truncate(4 * 1024**3)
    with pytest.raises(FileTooLargeError, match=r"huge\.csv is 4096\.0 MB"):
        read_table(path, max_bytes=10 * 1024 * 1024)


def test_upload_over_the_limit_is_refused_from_its_size():
    with pytest.raises(FileTooLargeError, match=r"up\.csv"):
        read_table(_Upload("up.csv", b"a\n1\n", size=5000), max_bytes=1000)


# --- broken files ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["empty.csv", "empty.jsonl", "empty.json", "empty.parquet"])
def test_empty_file(write_file, name):
    path = write_file(name, b"")
    with pytest.raises(EmptyFileError, match=f"{name} is empty"):
        read_table(path)


@pytest.mark.parametrize("content", [b"\n\n  \n", b"\xef\xbb\xbf"])
def test_whitespace_only_file_is_empty(content):
    with pytest.raises(EmptyFileError, match=r"blank\.jsonl is empty"):
        read_table(content, name="blank.jsonl")


def test_header_only_csv(write_file):
    path = write_file("header.csv", "id,prompt,response\n")
    with pytest.raises(EmptyFileError) as info:
        read_table(path)
    assert str(info.value) == f"{path} has a header (id, prompt, response) but no data rows"


def test_empty_json_array_and_parquet_without_rows(tmp_path: Path):
    with pytest.raises(EmptyFileError, match="empty JSON array"):
        read_table(b"[]", name="e.json")
    path = tmp_path / "none.parquet"
    write_table(pd.DataFrame({"a": pd.Series([], dtype=float)}), path)
    with pytest.raises(EmptyFileError, match=r"none\.parquet has no rows"):
        read_table(path)


def test_bad_json_on_line_17(write_file):
    good = "".join(json.dumps({"id": i, "text": f"t{i}"}) + "\n" for i in range(16))
    path = write_file("runs.jsonl", good + '{"id": 16, "text": "oops",}\n{"id": 17}\n')
    with pytest.raises(MalformedFileError) as info:
        read_table(path)
    message = str(info.value)
    assert message.startswith(f"{path}: line 17: not valid JSON")
    assert info.value.rows == (17,)


def test_jsonl_line_numbers_count_blank_lines():
    data = b'{"a": 1}\n\n\n{"a": 2\n'
    with pytest.raises(MalformedFileError, match=r"^g\.jsonl: line 4: not valid JSON"):
        read_table(data, name="g.jsonl")


@pytest.mark.parametrize(
    ("line", "found"), [("[1, 2]", "an array"), ('"text"', "a string"), ("3", "a number")]
)
def test_jsonl_line_that_is_not_an_object(line, found):
    data = ('{"a": 1}\n' + line + "\n").encode()
    with pytest.raises(MalformedFileError) as info:
        read_table(data, name="n.jsonl")
    assert str(info.value) == f"n.jsonl: line 2: expected a JSON object {{...}}, found {found}"


def test_json_array_with_a_non_object():
    with pytest.raises(MalformedFileError, match=r"a\.json: row 2 of the JSON array is a number"):
        read_table(b'[{"a": 1}, 5]', name="a.json")


def test_json_nested_too_deeply_is_malformed_not_a_crash():
    with pytest.raises(MalformedFileError, match="line 1"):
        read_table(b'{"a": ' + b"[" * 100_000 + b"}\n", name="deep.jsonl")


def test_csv_row_with_too_many_fields_names_the_data_row(write_file):
    # The quoted newline makes file lines and data rows differ: the message names both.
    path = write_file("wide.csv", 'id,text\n1,"two\nlines"\n2,ok\n3,too,many\n4,ok\n')
    with pytest.raises(MalformedFileError) as info:
        read_table(path)
    assert str(info.value).startswith(f"{path}: row 3 (line 5) has 3 fields but the header has 2")
    assert info.value.rows == (3,)


def test_csv_first_data_row_with_an_extra_field_is_not_taken_as_an_index():
    with pytest.raises(MalformedFileError, match=r"^x\.csv: row 1 \(line 2\) has 3 fields"):
        read_table(b"a,b\n1,2,3\n4,5\n", name="x.csv")


def test_csv_with_an_unclosed_quote_names_the_row():
    with pytest.raises(MalformedFileError) as info:
        read_table(b'a,b\n1,2\n3,"never closed\n4,5\n', name="q.csv")
    assert "q.csv: row 2" in str(info.value)
    assert "never closed" in str(info.value)


def test_csv_rows_with_fewer_fields_are_padded_with_missing_cells():
    frame = read_table(b"a,b,c\n1\n2,3,4\n", name="short.csv")
    assert frame["a"].tolist() == ["1", "2"]
    assert pd.isna(frame.loc[0, "c"])


def test_duplicate_column_names_are_refused():
    with pytest.raises(
        MalformedFileError, match=r"d\.csv: column 'x' appears twice \(columns 1 and 3\)"
    ):
        read_table(b"x,y,x\n1,2,3\n", name="d.csv")


def test_latin1_byte_on_line_3(write_file):
    content = b"id,text\n1,cafe\n2,caf\xe9\n"
    path = write_file("latin.csv", content)
    offset = content.index(b"\xe9")
    with pytest.raises(EncodingError) as info:
        read_table(path)
    assert str(info.value).startswith(
        f"{path} is not UTF-8 text: byte 0xe9 on line 3 (byte offset {offset}) cannot be decoded"
    )
    assert info.value.rows == (3,)


def test_utf16_file_gets_a_hint():
    content = "a,b\n1,2\n".encode("utf-16")
    with pytest.raises(EncodingError, match="UTF-16"):
        read_table(content, name="u.csv")


def test_not_parquet_bytes_with_a_parquet_name(write_file):
    path = write_file("results.parquet", b"id,label\n1,2\n")
    with pytest.raises(MalformedFileError) as info:
        read_table(path)
    assert str(info.value) == f"{path} is not a Parquet file"


def test_truncated_parquet_is_malformed():
    buffer = io.BytesIO()
    write_table(pd.DataFrame({"a": range(100)}), buffer, "parquet")
    data = buffer.getvalue()
    broken = data[:40] + data[-8:]
    with pytest.raises(MalformedFileError, match=r"t\.parquet is not a readable Parquet file"):
        read_table(broken, name="t.parquet")


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [
        ("book.xlsx", b"PK\x03\x04rest", "book.xlsx is a spreadsheet"),
        ("data", b"PK\x03\x04rest", "ZIP archive"),
        ("data.bin", b"\x1f\x8b\x08\x00", "gzip-compressed"),
    ],
)
def test_binary_files_get_a_clear_message(name, content, match):
    with pytest.raises(MalformedFileError, match=match):
        read_table(content, name=name)


def test_missing_file_and_folder_and_unknown_format(tmp_path: Path):
    with pytest.raises(DataError, match=r"nope\.csv: no such file"):
        read_table(tmp_path / "nope.csv")
    with pytest.raises(DataError, match="is a folder"):
        read_table(tmp_path)
    with pytest.raises(DataError, match="unknown format 'xlsx'"):
        read_table(b"a\n1\n", fmt="xlsx")


# --- writing -----------------------------------------------------------------------------------------


def test_write_jsonl_is_one_utf8_object_per_line():
    frame = pd.DataFrame(
        {"id": ["1", "2"], "text": ["é\nnext", None], "score": [4.0, float("nan")]}
    )
    buffer = io.BytesIO()
    write_table(frame, buffer, "jsonl")
    lines = buffer.getvalue().decode("utf-8").splitlines()
    assert lines == [
        '{"id": "1", "text": "é\\nnext", "score": 4.0}',
        '{"id": "2", "text": null, "score": null}',
    ]


def test_write_csv_stores_lists_as_json_text(tmp_path: Path):
    frame = pd.DataFrame({"id": ["1"], "ctx": [["a", "b, c"]]})
    write_table(frame, tmp_path / "out.csv")
    back = read_table(tmp_path / "out.csv")
    assert json.loads(back["ctx"].iloc[0]) == ["a", "b, c"]


def test_write_json_array_and_parquet_with_mixed_label_column(tmp_path: Path):
    frame = pd.DataFrame({"label": pd.Series([4.0, "A", None], dtype=object)})
    write_table(frame, tmp_path / "out.json")
    assert json.loads((tmp_path / "out.json").read_text()) == [
        {"label": 4.0},
        {"label": "A"},
        {"label": None},
    ]
    write_table(frame, tmp_path / "out.parquet")
    assert read_table(tmp_path / "out.parquet")["label"].tolist()[:2] == ["4.0", "A"]


def test_write_needs_a_format_for_a_buffer():
    with pytest.raises(DataError, match="fmt="):
        write_table(pd.DataFrame({"a": [1]}), io.BytesIO())
    with pytest.raises(DataError, match="cannot write format 'xlsx'"):
        write_table(pd.DataFrame({"a": [1]}), io.BytesIO(), "xlsx")
