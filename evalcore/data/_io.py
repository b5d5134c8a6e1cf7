"""Reading and writing tables: CSV, TSV, JSONL, JSON arrays and Parquet, with typed errors.

Every failure a file can cause is an :class:`~evalcore.errors.DataError` whose message names the file
and, where it makes sense, the row or line. The rules for cells:

- CSV/TSV cells are read as text, never guessed: ``"007"`` stays ``"007"`` and a response that says
  ``None`` or ``NA`` keeps those words. Only an empty cell is missing.
- JSONL and JSON keep JSON's own types (``null`` is missing; numbers stay numbers).
- Parquet keeps its column types; list columns come back as sequences.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any, TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from evalcore.errors import (
    ConfigError,
    DataError,
    EmptyFileError,
    EncodingError,
    EvalcoreError,
    FileTooLargeError,
    MalformedFileError,
)
from evalcore.limits import MAX_JSON_DEPTH, JsonTooDeepError, check_json_depth

from ._common import UNNAMED_SOURCE, RowRef, plain

#: What :func:`read_table` accepts: a path, raw bytes, or a binary file-like object (an upload).
Source: TypeAlias = str | os.PathLike[str] | bytes | bytearray | memoryview | IO[bytes] | IO[str]

#: The environment variable holding the upload limit in megabytes (MiB).
MAX_UPLOAD_ENV = "EVALCORE_MAX_UPLOAD_MB"
#: The upload limit when the environment does not set one, in megabytes (MiB).
DEFAULT_MAX_UPLOAD_MB = 200

#: The environment variable holding the most data rows a file may have.
MAX_ROWS_ENV = "EVALCORE_MAX_ROWS"
#: The row limit when the environment does not set one.
DEFAULT_MAX_ROWS = 2_000_000
#: The environment variable holding the limit on a file's decoded size in megabytes (MiB).
MAX_DECODED_ENV = "EVALCORE_MAX_DECODED_MB"
#: The decoded-size limit, as a multiple of the upload limit, when the environment does not set one.
DEFAULT_DECODED_FACTOR = 4

_MB = 1024 * 1024

#: Formats :func:`read_table` reads, and the names that select them.
_FORMAT_NAMES = {
    "csv": "csv",
    "tsv": "tsv",
    "tab": "tsv",
    "jsonl": "jsonl",
    "ndjson": "jsonl",
    "json": "json",
    "parquet": "parquet",
    "pq": "parquet",
}
_SPREADSHEETS = frozenset({".xlsx", ".xls", ".xlsm", ".ods", ".numbers"})
_WRITE_FORMATS = ("csv", "tsv", "jsonl", "json", "parquet")


@dataclass(frozen=True)
class Table:
    """A table read from a file, with the facts messages need about it."""

    frame: pd.DataFrame
    source: str
    fmt: str
    rows: RowRef


def _positive_env(variable: str, unit: str) -> float | None:
    """The positive number ``variable`` holds, ``None`` when unset; anything else is a ConfigError."""
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise ConfigError(f"{variable}={raw!r} is not a positive number of {unit}")
    return value


def max_upload_bytes() -> int:
    """The largest file, in bytes, that :func:`read_table` reads by default.

    Set by ``EVALCORE_MAX_UPLOAD_MB`` (megabytes of 1024 × 1024 bytes; fractions allowed), 200 by
    default. A value that is not a positive number is a :class:`~evalcore.errors.ConfigError`.

    >>> DEFAULT_MAX_UPLOAD_MB * 1024 * 1024  # the default, in bytes
    209715200
    """
    megabytes = _positive_env(MAX_UPLOAD_ENV, "megabytes")
    return int((DEFAULT_MAX_UPLOAD_MB if megabytes is None else megabytes) * _MB)


def max_rows() -> int:
    """The most data rows (JSONL: non-blank lines) a file may have, checked while it is read.

    Set by ``EVALCORE_MAX_ROWS`` (a positive whole number), 2,000,000 by default.

    >>> DEFAULT_MAX_ROWS
    2000000
    """
    rows = _positive_env(MAX_ROWS_ENV, "rows")
    return DEFAULT_MAX_ROWS if rows is None else max(1, int(rows))


def max_decoded_bytes() -> int:
    """The largest decoded size, in bytes, of a file's data (Parquet: its uncompressed pages).

    Set by ``EVALCORE_MAX_DECODED_MB`` (MiB); by default four times :func:`max_upload_bytes`, so a
    small compressed file cannot stand for gigabytes of data.

    >>> DEFAULT_DECODED_FACTOR * DEFAULT_MAX_UPLOAD_MB  # the default, in megabytes
    800
    """
    megabytes = _positive_env(MAX_DECODED_ENV, "megabytes")
    if megabytes is None:
        return DEFAULT_DECODED_FACTOR * max_upload_bytes()
    return int(megabytes * _MB)


def read_table(
    source: Source,
    *,
    name: str | None = None,
    fmt: str | None = None,
    max_bytes: int | None = None,
) -> pd.DataFrame:
    """Read a CSV, TSV, JSONL, JSON-array or Parquet file into a DataFrame.

    ``source`` is a path (``str`` or ``Path``; a ``str`` is always a path, never file content), raw
    ``bytes``, or a file-like object such as Streamlit's ``UploadedFile`` (its whole content is read).
    ``name`` is the display name used in messages and to choose the format (default: the path, or the
    object's ``name``). ``fmt`` forces a format (``csv``, ``tsv``, ``jsonl``, ``json``, ``parquet``);
    otherwise the name's extension decides, and the content is sniffed when the extension is unknown.

    CSV cells are text; only an empty cell is missing. Header names are stripped of surrounding
    spaces, and an empty header cell becomes ``column_<n>``. A CSV row with fewer fields than the
    header is padded with missing cells. Rows keep the file's order; the index is 0..n-1.

    Raises (all :class:`~evalcore.errors.DataError`, each naming the file):
    :class:`~evalcore.errors.FileTooLargeError` above ``max_bytes`` (default
    :func:`max_upload_bytes`), checked before the content is read;
    :class:`~evalcore.errors.EncodingError` for text that is not UTF-8 (a BOM is fine), naming the line
    and byte offset; :class:`~evalcore.errors.EmptyFileError` for no rows (or a header only);
    :class:`~evalcore.errors.MalformedFileError` for broken JSON (naming the line), a JSON line that is
    not an object, a CSV row with more fields than the header (naming the row), or bytes that are not
    Parquet.

    >>> read_table(b"id,answer\\n007,None\\n008,\\n", name="x.csv").to_dict("records")
    [{'id': '007', 'answer': 'None'}, {'id': '008', 'answer': nan}]
    """
    return read_source(source, name=name, fmt=fmt, max_bytes=max_bytes).frame


def read_source(
    source: Source,
    *,
    name: str | None = None,
    fmt: str | None = None,
    max_bytes: int | None = None,
) -> Table:
    """:func:`read_table`, also returning the display name, the format and how rows are named."""
    display = _display_name(source, name)
    limit = max_upload_bytes() if max_bytes is None else int(max_bytes)
    row_limit = max_rows()
    with guarded(display):
        data = _load_bytes(source, display, limit)
        kind = _resolve_format(fmt, display, data)
        if kind == "parquet":
            frame = _parse_parquet(data, display, row_limit, max_decoded_bytes())
            rows = RowRef("row")
        else:
            text = _decode(data, display)
            del data
            if kind in ("csv", "tsv"):
                frame = _parse_csv(text, display, "\t" if kind == "tsv" else ",", row_limit)
                rows = RowRef("row")
            else:
                frame, rows = _parse_json(text, display, kind, row_limit)
        _check_columns(frame, display)
    return Table(frame, display, kind, rows)


@contextlib.contextmanager
def guarded(display: str) -> Iterator[None]:
    """Turn any failure other than an :class:`~evalcore.errors.EvalcoreError` into a DataError.

    A loader works on bytes we do not control, through third-party parsers: whatever they raise
    (``MemoryError`` included) reaches the pages as a :class:`~evalcore.errors.DataError` naming
    ``display``, never as a bare exception.
    """
    try:
        yield
    except EvalcoreError:
        raise
    except MemoryError:
        raise DataError(
            f"{display} needs more memory than this server has to read; split it into smaller "
            f"files or lower its row count (the limit is {max_rows():,} rows, {MAX_ROWS_ENV})",
            source=display,
        ) from None
    except RecursionError:
        raise MalformedFileError(
            f"{display} is nested too deeply to be read", source=display
        ) from None
    except Exception as exc:
        raise DataError(
            f"{display} cannot be read: {type(exc).__name__}: {_clip(str(exc))}", source=display
        ) from exc


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _too_many_rows(display: str, found: str, limit: int) -> FileTooLargeError:
    return FileTooLargeError(
        f"{display} has {found} rows, above the limit of {limit:,} rows "
        f"(set {MAX_ROWS_ENV} to change it)",
        source=display,
    )


# --- getting the bytes ---------------------------------------------------------------------------


def _display_name(source: object, name: str | None) -> str:
    if name:
        return str(name)
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    found = getattr(source, "name", None)
    if isinstance(found, str) and found:
        return found
    return UNNAMED_SOURCE


def _size_text(size: int) -> str:
    if size >= _MB:
        return f"{size / _MB:.1f} MB"
    if size >= 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size} bytes"


def _check_size(size: int, limit: int, display: str) -> None:
    if size > limit:
        raise FileTooLargeError(
            f"{display} is {_size_text(size)}, above the upload limit of {_size_text(limit)} "
            f"(set {MAX_UPLOAD_ENV} to change it)",
            source=display,
        )


def _load_bytes(source: object, display: str, limit: int) -> bytes:
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        try:
            size = os.stat(path).st_size
            if os.path.isdir(path):
                raise DataError(f"{display} is a folder, not a file", source=display)
            _check_size(size, limit, display)
            with open(path, "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            raise DataError(f"{display}: no such file", source=display) from None
        except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
            reason = getattr(exc, "strerror", None) or exc
            raise DataError(f"{display} cannot be read: {reason}", source=display) from exc
    if isinstance(source, (bytes, bytearray, memoryview)):
        _check_size(len(source), limit, display)
        return bytes(source)
    if hasattr(source, "getvalue") or hasattr(source, "read"):
        return _read_stream(source, display, limit)
    raise TypeError(f"cannot read a table from {type(source).__name__}")


def _stream_size(stream: Any) -> int | None:
    size = getattr(stream, "size", None)
    if isinstance(size, int):
        return size
    getbuffer = getattr(stream, "getbuffer", None)
    if callable(getbuffer):
        with contextlib.suppress(Exception), getbuffer() as view:
            return int(view.nbytes)
    return None


def _read_stream(stream: Any, display: str, limit: int) -> bytes:
    size = _stream_size(stream)
    if size is not None:
        _check_size(size, limit, display)
    getvalue = getattr(stream, "getvalue", None)
    if callable(getvalue):
        content = getvalue()
    else:
        seekable = getattr(stream, "seekable", None)
        if callable(seekable) and seekable():
            stream.seek(0)
        content = stream.read(limit + 1)
    if isinstance(content, str):
        content = content.encode("utf-8")
    data = bytes(content)
    _check_size(len(data), limit, display)
    return data


# --- choosing the format -------------------------------------------------------------------------


def _resolve_format(fmt: str | None, display: str, data: bytes) -> str:
    if fmt:
        key = fmt.strip().lower().lstrip(".")
        if key not in _FORMAT_NAMES:
            raise DataError(
                f"{display}: unknown format {fmt!r}; expected csv, tsv, jsonl, json or parquet",
                source=display,
            )
        return _FORMAT_NAMES[key]
    extension = os.path.splitext(display)[1].lower()
    if extension[1:] in _FORMAT_NAMES:
        return _FORMAT_NAMES[extension[1:]]
    if extension in _SPREADSHEETS:
        raise MalformedFileError(
            f"{display} is a spreadsheet; export it as CSV (UTF-8) or Parquet first",
            source=display,
        )
    return _sniff(data, display)


def _sniff(data: bytes, display: str) -> str:
    if data[:4] == b"PAR1":
        return "parquet"
    hint = _binary_hint(data)
    if hint:
        raise MalformedFileError(
            f"{display} {hint}; expected CSV, JSONL or Parquet", source=display
        )
    head = data[:64].lstrip(codecs.BOM_UTF8).lstrip()
    if head[:1] in (b"[", b"{"):
        return "json"
    return "csv"


def _binary_hint(data: bytes) -> str:
    if data[:4] == b"PK\x03\x04":
        return "is a ZIP archive (an Excel workbook is one)"
    if data[:2] == b"\x1f\x8b":
        return "is gzip-compressed; decompress it first"
    if data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return "is UTF-16 text; save it as UTF-8"
    return ""


# --- text ------------------------------------------------------------------------------------------


def _decode(data: bytes, display: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        hint = _binary_hint(data)
        raise EncodingError(
            f"{display} is not UTF-8 text: byte 0x{data[exc.start]:02x} on line {line} "
            f"(byte offset {exc.start}) cannot be decoded"
            + (f"; the file {hint}" if hint else "; save the file as UTF-8 and upload it again"),
            source=display,
            rows=(line,),
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise EmptyFileError(f"{display} is empty", source=display)
    return text


@contextlib.contextmanager
def _large_csv_fields() -> Iterator[None]:
    previous = csv.field_size_limit()
    csv.field_size_limit(sys.maxsize)
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def _parse_csv(text: str, display: str, sep: str, row_limit: int) -> pd.DataFrame:
    try:
        raw = pd.read_csv(
            io.StringIO(text),
            # the header, the allowed rows and one more to tell that the limit is passed
            nrows=row_limit + 2,
            sep=sep,
            header=None,
            dtype=str,
            keep_default_na=False,
            na_values=[""],
            skip_blank_lines=True,
            engine="c",
            quotechar='"',
            doublequote=True,
        )
    except pd.errors.EmptyDataError:
        raise EmptyFileError(f"{display} is empty", source=display) from None
    except MemoryError:
        raise  # reported by guarded(), not as a malformed file
    # The parser is the boundary to untrusted bytes and raises several exception types; every one of
    # them is reported as a malformed file, located by a second, row-by-row pass.
    except Exception as exc:
        raise _locate_csv_error(text, sep, display, exc) from exc
    if raw.shape[0] == 0 or raw.shape[1] == 0:
        raise EmptyFileError(f"{display} is empty", source=display)
    names = []
    for position, value in enumerate(raw.iloc[0].tolist(), start=1):
        label = "" if pd.isna(value) else str(value).strip()
        names.append(label or f"column_{position}")
    if raw.shape[0] - 1 > row_limit:
        raise _too_many_rows(display, "more than " + f"{row_limit:,}", row_limit)
    frame = raw.iloc[1:].reset_index(drop=True)
    frame.columns = pd.Index(names, dtype=object)
    if frame.shape[0] == 0:
        raise EmptyFileError(
            f"{display} has a header ({_short(names)}) but no data rows", source=display
        )
    return frame


def _short(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return shown + (", …" if len(names) > limit else "")


def _locate_csv_error(text: str, sep: str, display: str, exc: Exception) -> MalformedFileError:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep, strict=True)
    width: int | None = None
    row = 0
    with _large_csv_fields():
        try:
            for record in reader:
                if not record:
                    continue
                if width is None:
                    width = len(record)
                    continue
                row += 1
                if len(record) > width:
                    return MalformedFileError(
                        f"{display}: row {row} (line {reader.line_num}) has {len(record)} fields "
                        f"but the header has {width}; quote text that contains "
                        f"{'tabs' if sep == chr(9) else 'commas'}",
                        source=display,
                        rows=(row,),
                    )
        except csv.Error as err:
            row += 1 if width is not None else 0
            where = f"row {row}" if width is not None else "the header"
            reason = str(err)
            if "unexpected end of data" in reason:
                reason = "a quoted field is never closed"
            return MalformedFileError(
                f"{display}: {where} (line {reader.line_num}) cannot be parsed: {reason}",
                source=display,
                rows=(row,) if width is not None else (),
            )
    detail = str(exc).replace("Error tokenizing data. C error: ", "").strip()
    return MalformedFileError(f"{display} is not a readable CSV file: {detail}", source=display)


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return "a number"
    return type(value).__name__


def _parse_json(text: str, display: str, kind: str, row_limit: int) -> tuple[pd.DataFrame, RowRef]:
    head = text.lstrip()
    document = kind == "json" and head.startswith(("[", "{"))
    try:  # nesting is bounded before anything is decoded (see evalcore.limits)
        check_json_depth(text, lines=not document)
    except JsonTooDeepError as exc:
        raise _too_deep(display, exc) from None
    if kind == "json" and head.startswith("["):
        return _parse_json_array(text, display, row_limit)
    if kind == "json" and head.startswith("{"):
        # A single object, possibly pretty-printed over several lines, is a one-row table.
        with contextlib.suppress(ValueError, RecursionError):
            whole = json.loads(text)
            if isinstance(whole, dict):
                return _records_frame([whole], display), RowRef("line", np.array([1]))
    return _parse_jsonl(text, display, row_limit)


def _too_deep(display: str, exc: JsonTooDeepError) -> MalformedFileError:
    return MalformedFileError(
        f"{display}: line {exc.line}: JSON nested deeper than {exc.limit} levels of arrays and "
        f"objects (evalcore reads at most {MAX_JSON_DEPTH})",
        source=display,
        rows=(exc.line,),
    )


def _parse_jsonl(text: str, display: str, row_limit: int) -> tuple[pd.DataFrame, RowRef]:
    # Split on "\n" only: U+2028 and friends may appear raw inside JSON strings.
    raw_lines = text.split("\n")
    numbers = [n for n, line in enumerate(raw_lines, start=1) if line.strip()]
    if not numbers:
        raise EmptyFileError(f"{display} is empty", source=display)
    if len(numbers) > row_limit:  # counted before any line is decoded
        raise _too_many_rows(display, f"{len(numbers):,}", row_limit)
    # Fast path: one parse of all lines as an array. It yields exactly one object per line only
    # when every line is an object on its own (each joining comma must be a top-level separator);
    # otherwise the line-by-line pass below finds the first bad line.
    with contextlib.suppress(ValueError, RecursionError):
        values = json.loads("[" + ",".join(raw_lines[n - 1] for n in numbers) + "]")
        if len(values) == len(numbers) and all(isinstance(v, dict) for v in values):
            return _records_frame(values, display), RowRef(
                "line", np.asarray(numbers, dtype=np.int64)
            )
    return _parse_jsonl_lines(raw_lines, display)


def _invalid_json(display: str, exc: Exception, line: int | None = None) -> MalformedFileError:
    """The error for text that does not parse, on ``line`` of a JSONL file or anywhere in a JSON one."""
    if isinstance(exc, json.JSONDecodeError):
        line = line or exc.lineno
        reason = f"{exc.msg} at column {exc.colno}"
    else:  # nesting too deep, a number too long
        reason = str(exc)
    where = f": line {line}" if line is not None else ""
    return MalformedFileError(
        f"{display}{where}: not valid JSON ({reason})",
        source=display,
        rows=(line,) if line is not None else (),
    )


def _parse_jsonl_lines(raw_lines: list[str], display: str) -> tuple[pd.DataFrame, RowRef]:
    records: list[dict[str, Any]] = []
    lines: list[int] = []
    for number, line in enumerate(raw_lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (RecursionError, ValueError) as exc:
            raise _invalid_json(display, exc, number) from None
        if not isinstance(value, dict):
            raise MalformedFileError(
                f"{display}: line {number}: expected a JSON object {{...}}, found {_json_kind(value)}",
                source=display,
                rows=(number,),
            )
        records.append(value)
        lines.append(number)
    if not records:
        raise EmptyFileError(f"{display} is empty", source=display)
    return _records_frame(records, display), RowRef("line", np.asarray(lines, dtype=np.int64))


def _parse_json_array(text: str, display: str, row_limit: int) -> tuple[pd.DataFrame, RowRef]:
    try:
        value = json.loads(text)
    except (RecursionError, ValueError) as exc:
        raise _invalid_json(display, exc) from None
    if not isinstance(value, list):
        raise MalformedFileError(
            f"{display}: expected a JSON array of objects, found {_json_kind(value)}",
            source=display,
        )
    if not value:
        raise EmptyFileError(f"{display} is empty (an empty JSON array)", source=display)
    if len(value) > row_limit:
        raise _too_many_rows(display, f"{len(value):,}", row_limit)
    for position, record in enumerate(value, start=1):
        if not isinstance(record, dict):
            raise MalformedFileError(
                f"{display}: row {position} of the JSON array is {_json_kind(record)}, "
                "not an object {...}",
                source=display,
                rows=(position,),
            )
    return _records_frame(value, display), RowRef("row")


def _records_frame(records: list[dict[str, Any]], display: str) -> pd.DataFrame:
    try:
        frame = pd.DataFrame.from_records(records)
    except (ValueError, TypeError, OverflowError) as exc:  # pragma: no cover - defensive
        raise MalformedFileError(f"{display}: the records cannot form a table ({exc})") from exc
    if frame.shape[1] == 0:
        raise EmptyFileError(f"{display} has rows but no fields", source=display)
    return frame


# --- Parquet ---------------------------------------------------------------------------------------


def _parse_parquet(data: bytes, display: str, row_limit: int, decoded_limit: int) -> pd.DataFrame:
    if not data:
        raise EmptyFileError(f"{display} is empty", source=display)
    if len(data) < 12 or data[:4] != b"PAR1" or data[-4:] != b"PAR1":
        hint = _binary_hint(data)
        raise MalformedFileError(
            f"{display} is not a Parquet file" + (f" (it {hint})" if hint else ""),
            source=display,
        )
    # pyarrow raises several exception types for damaged files; all of them mean the same thing here.
    try:
        parquet = pq.ParquetFile(pa.BufferReader(data))
    except Exception as exc:
        raise MalformedFileError(
            f"{display} is not a readable Parquet file ({_clip(str(exc))})", source=display
        ) from exc
    _check_parquet_metadata(parquet.metadata, display, row_limit, decoded_limit)
    try:
        frame = parquet.read().to_pandas()
    except MemoryError:
        raise
    except Exception as exc:
        raise MalformedFileError(
            f"{display} is not a readable Parquet file ({_clip(str(exc))})", source=display
        ) from exc
    if not isinstance(frame.index, pd.RangeIndex):
        frame = frame.reset_index()
    frame = frame.reset_index(drop=True)
    frame.columns = pd.Index([str(c) for c in frame.columns], dtype=object)
    if frame.shape[0] == 0 or frame.shape[1] == 0:
        raise EmptyFileError(f"{display} has no rows", source=display)
    return frame


def _check_parquet_metadata(
    metadata: pq.FileMetaData, display: str, row_limit: int, decoded_limit: int
) -> None:
    """Refuse, from the footer alone, a Parquet file whose rows or decoded pages pass the limits.

    Dictionary and run-length encoding let a few hundred kilobytes stand for millions of rows, so
    the row count is the check that matters; the row groups' uncompressed sizes catch the rest.
    """
    if metadata.num_rows > row_limit:
        raise _too_many_rows(display, f"{metadata.num_rows:,}", row_limit)
    decoded = sum(
        max(0, metadata.row_group(i).total_byte_size) for i in range(metadata.num_row_groups)
    )
    if decoded > decoded_limit:
        raise FileTooLargeError(
            f"{display} holds {_size_text(decoded)} of data once decompressed, above the limit of "
            f"{_size_text(decoded_limit)} (set {MAX_DECODED_ENV} to change it)",
            source=display,
        )


def _check_columns(frame: pd.DataFrame, display: str) -> None:
    seen: dict[str, int] = {}
    for position, column in enumerate(frame.columns, start=1):
        if column in seen:
            raise MalformedFileError(
                f"{display}: column {column!r} appears twice (columns {seen[column]} and {position}); "
                "column names must be unique",
                source=display,
                column=str(column),
            )
        seen[column] = position


# --- writing ---------------------------------------------------------------------------------------


def write_table(
    frame: pd.DataFrame,
    path_or_buffer: str | os.PathLike[str] | IO[bytes],
    fmt: str | None = None,
) -> None:
    """Write ``frame`` as CSV, TSV, JSONL, a JSON array or Parquet, in UTF-8, without the index.

    ``fmt`` defaults to the path's extension and is required for a buffer. JSONL is one JSON object
    per line; missing values become ``null`` (JSON) or an empty cell (CSV); list and dict cells are
    written as JSON text in CSV. :func:`read_table` reads every output back.

    >>> buffer = io.BytesIO()
    >>> write_table(pd.DataFrame({"id": ["1"], "label": [4.0]}), buffer, "jsonl")
    >>> buffer.getvalue()
    b'{"id": "1", "label": 4.0}\\n'
    """
    if fmt is None:
        if not isinstance(path_or_buffer, (str, os.PathLike)):
            raise DataError("write_table needs fmt= when writing to a buffer")
        fmt = os.path.splitext(os.fspath(path_or_buffer))[1]
    key = _FORMAT_NAMES.get(fmt.strip().lower().lstrip("."), "")
    if key not in _WRITE_FORMATS:
        raise DataError(f"cannot write format {fmt!r}; expected csv, tsv, jsonl, json or parquet")
    if key == "parquet":
        _write_parquet(frame, path_or_buffer)
        return
    if key in ("csv", "tsv"):
        payload = (
            _json_cells(frame)
            .to_csv(
                index=False,
                sep="\t" if key == "tsv" else ",",
                lineterminator="\n",
                # Quote all text: a bare "\r" inside a cell would otherwise end the row on reading.
                quoting=csv.QUOTE_NONNUMERIC,
            )
            .encode("utf-8")
        )
    else:
        lines = _json_lines(frame)
        body = "\n".join(lines) + "\n" if key == "jsonl" else "[\n" + ",\n".join(lines) + "\n]\n"
        payload = body.encode("utf-8")
    if isinstance(path_or_buffer, (str, os.PathLike)):
        with open(path_or_buffer, "wb") as handle:
            handle.write(payload)
    else:
        path_or_buffer.write(payload)


def _is_structure(value: object) -> bool:
    return isinstance(value, (list, tuple, dict, np.ndarray))


def _json_cells(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for column in out.columns:
        series = out[column]
        if series.dtype == object:
            out[column] = series.map(
                lambda v: json.dumps(plain(v), ensure_ascii=False) if _is_structure(v) else v
            )
    return out


def _json_values(series: pd.Series) -> list[Any]:
    """A column as JSON-ready Python values (missing → None), cheaply for the common dtypes."""
    exact = pd.api.types.is_bool_dtype(series) or pd.api.types.is_integer_dtype(series)
    if exact and not series.hasnans:
        return list(series.tolist())
    if pd.api.types.is_float_dtype(series) and series.dtype.kind == "f":
        return [None if v != v else v for v in series.tolist()]
    if isinstance(series.dtype, pd.StringDtype):
        return list(series.astype(object).where(series.notna(), None).tolist())
    return [v if type(v) is str else plain(v) for v in series.tolist()]


def _json_lines(frame: pd.DataFrame) -> list[str]:
    columns = [_json_values(frame[c]) for c in frame.columns]
    names = [str(c) for c in frame.columns]
    encode = json.JSONEncoder(ensure_ascii=False, default=str).encode
    return [encode(dict(zip(names, values, strict=True))) for values in zip(*columns, strict=True)]


def _write_parquet(frame: pd.DataFrame, target: Any) -> None:
    try:
        table = pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        table = pa.Table.from_pandas(_arrow_safe(frame), preserve_index=False)
    sink = os.fspath(target) if isinstance(target, (str, os.PathLike)) else target
    pq.write_table(table, sink)


def _arrow_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns mixing numbers and words (a label column before validation) are written as text."""
    out = frame.copy()
    for column in out.columns:
        series = out[column]
        if series.dtype != object:
            continue
        kinds = {type(v) for v in series if v is not None and not _is_na(v)}
        if len(kinds) > 1 and not any(
            issubclass(k, (list, tuple, dict, np.ndarray)) for k in kinds
        ):
            out[column] = series.map(lambda v: None if v is None or _is_na(v) else str(plain(v)))
    return out


def _is_na(value: object) -> bool:
    if _is_structure(value):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False
