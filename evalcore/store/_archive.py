"""Project archives: one zip file that carries a whole project from one database to another.

``store.export_project(project_id, path)`` writes, and ``store.import_project(path)`` reads, a zip
(deflate) holding ``manifest.json`` and one JSON Lines member per table: the project row and its
settings, datasets and items, criteria, the annotators its labels and queues name, assignments,
annotations with every revision, judge templates with every version, the endpoints its runs used
(their settings and the NAME of the key variable, never a key), the prices of the models its runs
used, runs with every result (and their provider batches), and the reply-cache rows those results
point to (optional). Users, memberships, the audit log, server settings and the task queue's
slices of runs are never in an archive.

Which tables go in, and in what order, comes from the models' foreign keys, not from a hand-kept
list: a table belongs to the project when a required foreign key ties it (through other such tables)
to ``projects``; a table without foreign keys that project rows point to and that has a unique name
column (annotators, endpoints) is *shared*, matched by that name in the target; two tables are
referenced by value rather than by a foreign key (:data:`VALUE_LINKS`). Rows are written in the
metadata's dependency order, so an import can insert parents first, let the database assign new ids
and rewrite every foreign key through the map of old id to new id.

Export reads one consistent snapshot and streams each table in batches; import runs in one
transaction, so a broken archive, a project name already taken or a constraint the data breaks
changes nothing, and the error names the member and the line.

An archive is outside input, bounded where it is read (each bound is refused as a ``DataError``
naming the member, and the line where there is one):

- its members decode to at most ``EVALCORE_MAX_ARCHIVE_MB`` (default 4096 MiB) together, and to
  at most :data:`MAX_ARCHIVE_RATIO` times the file's own size (plus 64 MiB): checked from the zip's
  headers before anything is read, and again on the bytes as they are decoded, since a header can
  lie; a member holds at most ``EVALCORE_MAX_ARCHIVE_ROWS`` rows (default 20,000,000), and never
  more than its manifest says (checked as each row is read, not at the end);
- every JSON line is nested at most :data:`~evalcore.limits.MAX_JSON_DEPTH` levels deep, every
  whole number fits 64 bits, and token counts are whole numbers from 0 to
  :data:`~evalcore.limits.MAX_TOKEN_COUNT`, in results and in cached replies;
- reply-cache rows are imported only when a result of the archive refers to them, and by default
  under keys of the imported project's own (:func:`archived_cache_key`): a request's cache key is
  predictable (a hash of what is sent), so a row under its plain key would answer that request for
  every project of the server with whatever the archive says. ``share_cache=True`` trusts the
  archive and puts its replies in the shared cache as they are.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final, Literal

from alembic.script import ScriptDirectory
from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Connection,
    Float,
    Integer,
    Select,
    String,
    Table,
    insert,
    select,
    union,
)
from sqlalchemy.exc import DBAPIError, StatementError

from evalcore.errors import ConfigError, DataError, EvalcoreError, NotFoundError, StoreError
from evalcore.limits import (
    MAX_TOKEN_COUNT,
    JsonTooDeepError,
    load_json,
    token_count,
)
from evalcore.store._base import StoreBase, _database_errors, jsonable
from evalcore.store._judge import _check_extra, _names, check_api_key_env, check_base_urls
from evalcore.store._migrate import alembic_config, current_revision
from evalcore.store._models import Base, UTCDateTime, utcnow

__all__ = [
    "ARCHIVE_FORMAT",
    "ARCHIVE_FORMAT_VERSION",
    "CACHE_TABLE",
    "DEFAULT_MAX_ARCHIVE_MB",
    "DEFAULT_MAX_ARCHIVE_ROWS",
    "EXCLUDED_TABLES",
    "MANIFEST_MEMBER",
    "MAX_ARCHIVE_ENV",
    "MAX_ARCHIVE_RATIO",
    "MAX_ARCHIVE_ROWS_ENV",
    "VALUE_LINKS",
    "ArchiveMixin",
    "ArchiveSummary",
    "archive_tables",
    "archived_cache_key",
    "max_archive_bytes",
    "max_archive_rows",
]

ARCHIVE_FORMAT: Final = "evalcore-project-archive"
ARCHIVE_FORMAT_VERSION: Final = 1
MANIFEST_MEMBER: Final = "manifest.json"

#: Decoded size an import reads at most, in MiB (members together); a zip bomb stops there.
MAX_ARCHIVE_ENV: Final = "EVALCORE_MAX_ARCHIVE_MB"
DEFAULT_MAX_ARCHIVE_MB: Final = 4096
#: Rows one member (one table) of an archive may hold at most.
MAX_ARCHIVE_ROWS_ENV: Final = "EVALCORE_MAX_ARCHIVE_ROWS"
DEFAULT_MAX_ARCHIVE_ROWS: Final = 20_000_000
#: How many times its own size an archive may decode to (plus :data:`_RATIO_SLACK`). Exports
#: compress 5 to 20 times (JSON lines with repeated keys); deflate can reach about 1,000, which
#: only a file made to expand (a zip bomb) does.
MAX_ARCHIVE_RATIO: Final = 100
_MB = 1024 * 1024
#: What any archive may decode to, whatever its size (small archives compress poorly anyway).
_RATIO_SLACK = 64 * _MB
_MAX_MANIFEST_BYTES = _MB
#: Longest line of a member (one row), in bytes.
_MAX_LINE_BYTES = 64 * _MB
#: Rows per read batch on export and per insert batch on import.
_BATCH = 1000
#: Rows per INSERT … RETURNING statement.
_RETURNING_PAGE = 500

#: Tables that never travel with a project: who may sign in and what they did is the server's,
#: and so are its task queue's slices of runs (``judge_run_chunks`` names the queue's job ids).
EXCLUDED_TABLES: Final = frozenset(
    {"users", "memberships", "audit_events", "server_settings", "judge_run_chunks"}
)
#: Tables a project's rows refer to by value: table → (referring table, column); the referred
#: table's primary key holds the value.
VALUE_LINKS: Final[Mapping[str, tuple[str, str]]] = {
    "model_prices": ("judge_runs", "model"),
    "model_batch_prices": ("judge_runs", "model"),
    "judge_cache": ("judge_results", "cache_key"),
}
#: The reply cache, which ``cache=False`` leaves out.
CACHE_TABLE: Final = "judge_cache"

TableRole = Literal["project", "owned", "shared", "valued"]


def max_archive_bytes() -> int:
    """The decoded size an import reads at most: ``EVALCORE_MAX_ARCHIVE_MB`` MiB (default 4096)."""
    raw = os.environ.get(MAX_ARCHIVE_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_ARCHIVE_MB * _MB
    try:
        megabytes = float(raw)
    except ValueError:
        megabytes = -1.0
    if not math.isfinite(megabytes) or megabytes <= 0:
        raise ConfigError(f"{MAX_ARCHIVE_ENV} must be a positive number of megabytes, not {raw!r}.")
    return int(megabytes * _MB)


def max_archive_rows() -> int:
    """The rows one member of an archive may hold: ``EVALCORE_MAX_ARCHIVE_ROWS`` (default
    20,000,000)."""
    raw = os.environ.get(MAX_ARCHIVE_ROWS_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_ARCHIVE_ROWS
    try:
        rows = float(raw)
    except ValueError:
        rows = -1.0
    if not math.isfinite(rows) or rows < 1:
        raise ConfigError(f"{MAX_ARCHIVE_ROWS_ENV} must be a positive number of rows, not {raw!r}.")
    return int(rows)


def archived_cache_key(project_id: int, key: str) -> str:
    """The key a reply-cache row of an archive is imported under into project ``project_id``
    (unless the import shares the archive's cache): ``p<id>-`` and a hash of both, 64 characters.

    No request's key (64 hexadecimal digits) is ever one of these, so an archived reply answers no
    request, of this project or another; it stays with the results that refer to it (which are
    rewritten to the same key) and travels with them in the next export.

    >>> key = archived_cache_key(7, "ab" * 32)
    >>> key[:3], len(key), key == archived_cache_key(8, "ab" * 32)
    ('p7-', 64, False)
    """
    prefix = f"p{project_id}-"
    digest = hashlib.sha256(f"{project_id}:{key}".encode()).hexdigest()
    return prefix + digest[: 64 - len(prefix)]


# --- which tables, in which order ---------------------------------------------------------------


@dataclass(frozen=True)
class TablePlan:
    """How one table travels: its role, its key, and the foreign keys to rewrite on import.

    ``links`` are (column, referred table) for every foreign key to an archived table; ``cleared``
    are nullable foreign-key columns to tables that stay behind (written as null); ``anchor`` is
    the required foreign key that ties an owned row to its project; ``natural`` is the unique column
    a shared row is matched by in the target.
    """

    table: Table
    role: TableRole
    key: str
    links: tuple[tuple[str, str], ...] = ()
    cleared: tuple[str, ...] = ()
    anchor: tuple[str, str] | None = None
    natural: str | None = None

    @property
    def name(self) -> str:
        return self.table.name

    @property
    def member(self) -> str:
        return f"{self.table.name}.jsonl"

    @property
    def new_keys(self) -> bool:
        """Whether the target database assigns this table's ids (an integer key)."""
        return self.role != "valued" and isinstance(self.table.c[self.key].type, Integer)


def _natural_key(table: Table) -> str | None:
    unique = [c.name for c in table.columns if c.unique and not c.primary_key]
    return unique[0] if len(unique) == 1 else None


def archive_tables() -> tuple[TablePlan, ...]:
    """Every table an archive holds, parents before children (from the models' foreign keys)."""
    tables = [t for t in Base.metadata.sorted_tables if t.name not in EXCLUDED_TABLES]
    shareable = {
        t.name
        for t in tables
        if t.name != "projects" and not t.foreign_keys and _natural_key(t) is not None
    }
    depth: dict[str, int] = {"projects": 0}
    anchors: dict[str, tuple[str, str]] = {}
    for table in tables:
        if table.name == "projects" or table.name in VALUE_LINKS:
            continue
        required = [fk for fk in table.foreign_keys if not fk.parent.nullable]
        ties = [fk for fk in required if fk.column.table.name in depth]
        if not ties or any(fk.column.table.name not in {*depth, *shareable} for fk in required):
            continue
        tie = min(ties, key=lambda fk: (depth[fk.column.table.name], fk.parent.name))
        depth[table.name] = depth[tie.column.table.name] + 1
        anchors[table.name] = (tie.parent.name, tie.column.table.name)
    shared = {
        fk.column.table.name
        for t in tables
        if t.name in depth
        for fk in t.foreign_keys
        if fk.column.table.name in shareable
    }
    plans: list[TablePlan] = []
    for table in tables:
        name = table.name
        if name in depth:
            role: TableRole = "project" if name == "projects" else "owned"
        elif name in shared:
            role = "shared"
        elif name in VALUE_LINKS and VALUE_LINKS[name][0] in depth:
            role = "valued"
        else:
            continue
        (key,) = (c.name for c in table.primary_key.columns)
        kept = {*depth, *shared}
        plans.append(
            TablePlan(
                table=table,
                role=role,
                key=key,
                links=tuple(
                    (fk.parent.name, fk.column.table.name)
                    for fk in sorted(table.foreign_keys, key=lambda f: f.parent.name)
                    if fk.column.table.name in kept
                ),
                cleared=tuple(
                    sorted(
                        fk.parent.name
                        for fk in table.foreign_keys
                        if fk.column.table.name not in kept
                    )
                ),
                anchor=anchors.get(name),
                natural=_natural_key(table) if role == "shared" else None,
            )
        )
    return tuple(plans)


def _selection(plans: Mapping[str, TablePlan], plan: TablePlan, project_id: int) -> Any:
    """The condition that picks the rows of ``plan``'s table that belong in the archive."""
    table = plan.table
    if plan.role == "project":
        return table.c[plan.key] == project_id
    if plan.role == "owned":
        assert plan.anchor is not None
        column, parent = plan.anchor
        return table.c[column].in_(_keys_of(plans, plans[parent], project_id))
    if plan.role == "shared":
        referring = [
            select(p.table.c[column]).where(_selection(plans, p, project_id))
            for p in plans.values()
            if p.role in ("project", "owned")
            for column, target in p.links
            if target == plan.name
        ]
        source = referring[0] if len(referring) == 1 else union(*referring)
        return table.c[plan.key].in_(source)
    origin_table, column = VALUE_LINKS[plan.name]
    origin = plans[origin_table]
    values = select(origin.table.c[column]).where(
        _selection(plans, origin, project_id), origin.table.c[column].is_not(None)
    )
    return table.c[plan.key].in_(values)


def _keys_of(plans: Mapping[str, TablePlan], plan: TablePlan, project_id: int) -> Select[Any]:
    return select(plan.table.c[plan.key]).where(_selection(plans, plan, project_id))


# --- values: database ⇄ JSON ----------------------------------------------------------------------


def _encoder(column: Column[Any]) -> Callable[[Any], Any] | None:
    kind = column.type
    if isinstance(kind, UTCDateTime):
        return lambda v: None if v is None else v.astimezone(UTC).isoformat()
    if isinstance(kind, Float):
        return lambda v: v if v is None or math.isfinite(v) else str(float(v))
    return None


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not a JSON value")


#: Columns that hold token counts: whole numbers from 0 to MAX_TOKEN_COUNT (or null).
_TOKEN_COLUMNS = frozenset({("judge_results", "tokens_in"), ("judge_results", "tokens_out")})
_INT64 = 2**63


def _whole_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -_INT64 <= value < _INT64


def _shown(value: Any) -> str:
    """A JSON value in a message: at most 60 characters of it."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return "a number of more than 30 digits"
    return json.dumps(value)[:60]


def _check_cached_reply(row: Mapping[str, Any]) -> None:
    """A cached reply's token counts are in reason, as a live reply's are."""
    response = row.get("response")
    if not isinstance(response, Mapping):
        raise ValueError("response should be a reply object")
    for name in ("tokens_in", "tokens_out"):
        if response.get(name) is not None:
            token_count(response[name], f"response.{name}")


def _decoder(column: Column[Any]) -> Callable[[Any], Any]:
    """A function that checks one archived value of ``column`` and returns the database value."""
    kind = column.type
    nullable = bool(column.nullable) or isinstance(kind, JSON)

    def check(value: Any, accept: Callable[[Any], bool], what: str) -> Any:
        if value is None:
            if not nullable:
                raise ValueError("is missing (null)")
            return None
        if not accept(value):
            raise ValueError(f"should be {what}, not {_shown(value)}")
        return value

    if isinstance(kind, JSON):
        return lambda v: v
    if isinstance(kind, UTCDateTime):

        def timestamp(value: Any) -> Any:
            text = check(value, lambda v: isinstance(v, str), "an ISO-8601 timestamp")
            if text is None:
                return None
            try:
                moment = datetime.fromisoformat(text)
            except ValueError as exc:
                raise ValueError(f"is not an ISO-8601 timestamp: {text[:60]!r}") from exc
            return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)

        return timestamp
    if isinstance(kind, Boolean):
        return lambda v: check(v, lambda x: isinstance(x, bool), "true or false")
    if (column.table.name, column.name) in _TOKEN_COLUMNS:

        def tokens(value: Any) -> Any:
            if value is None:
                return None
            try:
                return token_count(value)
            except ValueError:
                raise ValueError(
                    f"should be a token count, a whole number from 0 to {MAX_TOKEN_COUNT:,}, not "
                    f"{_shown(value)}"
                ) from None

        return tokens
    if isinstance(kind, Integer):
        return lambda v: check(v, _whole_number, "a whole number of at most 64 bits")
    if isinstance(kind, Float):

        def number(value: Any) -> Any:
            if value in ("nan", "inf", "-inf"):
                return float(value)
            checked = check(
                value,
                lambda x: isinstance(x, int | float) and not isinstance(x, bool),
                "a number",
            )
            try:
                return None if checked is None else float(checked)
            except OverflowError:
                raise ValueError("is too large a number") from None

        return number
    if isinstance(kind, String):
        limit = kind.length

        def text(value: Any) -> Any:
            checked = check(value, lambda x: isinstance(x, str), "text")
            if checked is not None and limit is not None and len(checked) > limit:
                raise ValueError(f"is longer than {limit} characters")
            return checked

        return text
    return lambda v: v


# --- the archive file -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ArchiveSummary:
    """What an export wrote or an import read: the project, rows per table, the file's size.

    ``matched`` counts, for an import, the shared rows (annotators, endpoints, model prices, cached
    replies) that the target already had and that were used instead of being added again;
    ``skipped`` the rows read but left out (cached replies no result of the archive refers to).
    """

    project: str
    project_id: int
    path: Path
    rows: Mapping[str, int]
    size_bytes: int
    matched: Mapping[str, int]
    skipped: Mapping[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        """One line for people: the project, and the non-empty tables with their row counts."""
        counts = ", ".join(f"{t} {n}" for t, n in self.rows.items() if n)
        reused = ", ".join(f"{t} {n}" for t, n in self.matched.items() if n)
        left = ", ".join(f"{t} {n}" for t, n in self.skipped.items() if n)
        text = f"project {self.project!r}: {counts}"
        text = f"{text} (already present, reused: {reused})" if reused else text
        return f"{text} (left out, no result refers to them: {left})" if left else text


class _Reader:
    """An opened archive: its manifest checked, its members read line by line within the cap."""

    def __init__(self, path: Path, archive: zipfile.ZipFile) -> None:
        self.path = path
        self.zip = archive
        self.size = path.stat().st_size
        self.configured_cap = max_archive_bytes()
        #: what the members may decode to: the configured cap, and the ratio to the file's size
        self.cap = min(self.configured_cap, MAX_ARCHIVE_RATIO * self.size + _RATIO_SLACK)
        self.row_cap = max_archive_rows()
        self.read_bytes = 0
        self.manifest = self._manifest()
        self.tables: dict[str, dict[str, Any]] = {}
        self._check_members()

    def fail(self, where: str, message: str) -> DataError:
        return DataError(f"{self.path.name}: {where}: {message}", source=str(self.path))

    def _manifest(self) -> dict[str, Any]:
        try:
            info = self.zip.getinfo(MANIFEST_MEMBER)
        except KeyError:
            raise DataError(
                f"{self.path.name} is not an evalcore project archive: it has no {MANIFEST_MEMBER}.",
                source=str(self.path),
            ) from None
        if info.file_size > _MAX_MANIFEST_BYTES:
            raise self.fail(MANIFEST_MEMBER, "larger than a manifest can be")
        raw = b"".join(self.lines(MANIFEST_MEMBER, info))
        try:
            manifest = load_json(raw, parse_constant=_reject_constant)
        except JsonTooDeepError as exc:
            raise self.fail(f"{MANIFEST_MEMBER}, line {exc.line}", _too_deep(exc)) from None
        except ValueError as exc:
            raise self.fail(MANIFEST_MEMBER, f"not valid JSON ({exc})") from exc
        if not isinstance(manifest, dict) or manifest.get("format") != ARCHIVE_FORMAT:
            raise self.fail(MANIFEST_MEMBER, "not the manifest of an evalcore project archive")
        version = manifest.get("format_version")
        if version != ARCHIVE_FORMAT_VERSION:
            raise self.fail(
                MANIFEST_MEMBER,
                f"archive format version {version!r}; this evalcore reads version "
                f"{ARCHIVE_FORMAT_VERSION} (use the evalcore that wrote it)",
            )
        revision = manifest.get("schema_revision")
        if not (isinstance(revision, str) and revision in _known_revisions()):
            raise self.fail(
                MANIFEST_MEMBER,
                f"made with schema revision {revision!r}, which this evalcore does not know; "
                "upgrade evalcore to import it",
            )
        return manifest

    def _check_members(self) -> None:
        listed = self.manifest.get("tables")
        plans = {p.name: p for p in archive_tables()}
        if not isinstance(listed, list):
            raise self.fail(MANIFEST_MEMBER, "'tables' should be a list")
        for n, entry in enumerate(listed, start=1):
            name = entry.get("name") if isinstance(entry, dict) else None
            plan = plans.get(name) if isinstance(name, str) else None
            where = f"{MANIFEST_MEMBER}, table {n}"
            if plan is None:
                raise self.fail(where, f"{name!r} is not a table a project archive holds")
            if name in self.tables:
                raise self.fail(where, f"table {name!r} is listed twice")
            rows, columns = entry.get("rows"), entry.get("columns")
            if not isinstance(rows, int) or isinstance(rows, bool) or rows < 0:
                raise self.fail(where, f"the row count of {name!r} should be a whole number")
            if rows > self.row_cap:
                raise self.fail(
                    where,
                    f"{name!r} has {rows:,} rows, more than the limit of {self.row_cap:,} "
                    f"(set {MAX_ARCHIVE_ROWS_ENV} to change it)",
                )
            if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
                raise self.fail(where, f"the columns of {name!r} should be a list of names")
            unknown = sorted(set(columns) - set(plan.table.c.keys()))
            if unknown:
                raise self.fail(where, f"{name!r} has no column {', '.join(unknown)}")
            if plan.key not in columns or len(set(columns)) != len(columns):
                raise self.fail(
                    where, f"the columns of {name!r} should each appear once, with the key"
                )
            self.tables[plan.name] = entry
        if self.tables.get("projects", {}).get("rows") != 1:
            raise self.fail(MANIFEST_MEMBER, "an archive holds exactly one project")
        expected = {MANIFEST_MEMBER, *(plans[t].member for t in self.tables)}
        names = self.zip.namelist()
        if len(names) != len(set(names)):
            raise self.fail("members", "a member appears twice")
        unknown_members = sorted(set(names) - expected)
        if unknown_members:
            raise self.fail(unknown_members[0], "unknown member (not in the manifest)")
        missing = sorted(expected - set(names))
        if missing:
            raise self.fail(missing[0], "listed in the manifest but missing")
        declared = 0
        for info in self.zip.infolist():
            if info.flag_bits & 0x1:
                raise self.fail(info.filename, "encrypted members are not supported")
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise self.fail(info.filename, "compressed with a method other than deflate")
            declared += info.file_size
        if declared > self.cap:
            raise self.fail("members", self._over_cap(f"they decode to {declared / _MB:.1f} MB"))

    def _over_cap(self, what: str) -> str:
        if self.cap < self.configured_cap:
            return (
                f"{what}, more than {MAX_ARCHIVE_RATIO} times the file's "
                f"{self.size / _MB:.1f} MB (and 64 MB more): no export expands that much"
            )
        return (
            f"{what}, more than the limit of {self.cap / _MB:.0f} MB "
            f"(set {MAX_ARCHIVE_ENV} to change it)"
        )

    def lines(self, member: str, info: zipfile.ZipInfo | None = None) -> Iterator[bytes]:
        """The lines of ``member``; the decoded bytes count against the cap as they are read
        (a header that understates a member's size cannot take the reading past it)."""
        info = info or self.zip.getinfo(member)
        try:
            with self.zip.open(info) as stream:
                number = 0
                while line := stream.readline(_MAX_LINE_BYTES + 1):
                    number += 1
                    self.read_bytes += len(line)
                    if self.read_bytes > self.cap:
                        raise self.fail(
                            member,
                            self._over_cap(
                                f"the archive decodes to more than {self.read_bytes / _MB:.1f} MB"
                            ),
                        )
                    if len(line) > _MAX_LINE_BYTES:
                        raise self.fail(
                            f"{member}, line {number}",
                            f"longer than {_MAX_LINE_BYTES // _MB} MB",
                        )
                    yield line
        except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, OSError) as exc:
            raise self.fail(member, f"the member is damaged ({exc})") from exc

    def rows(self, plan: TablePlan) -> Iterator[tuple[int, dict[str, Any]]]:
        """(line number, row) of the table's member, each a JSON object of the listed columns;
        a row more than the manifest lists is refused as soon as it is read."""
        columns = set(self.tables[plan.name]["columns"])
        expected = self.tables[plan.name]["rows"]
        number = count = 0
        for line in self.lines(plan.member):
            number += 1
            if not line.strip():
                continue
            where = f"{plan.member}, line {number}"
            count += 1
            if count > expected:
                raise self.fail(where, f"more rows than the manifest's {expected:,}")
            try:
                row = load_json(line, parse_constant=_reject_constant)
            except JsonTooDeepError as exc:
                raise self.fail(where, _too_deep(exc)) from None
            except ValueError as exc:  # UnicodeDecodeError is one
                raise self.fail(where, f"not valid JSON ({exc})") from exc
            if not isinstance(row, dict):
                raise self.fail(where, "a row should be a JSON object")
            if row.keys() != columns:
                odd = sorted(set(row) ^ columns)
                raise self.fail(where, f"the columns differ from the manifest's ({', '.join(odd)})")
            yield number, row


@functools.cache
def _known_revisions() -> frozenset[str]:
    """Every schema revision this evalcore knows (read once: Alembic loads each migration file)."""
    return frozenset(
        r.revision for r in ScriptDirectory.from_config(alembic_config()).walk_revisions()
    )


def _too_deep(exc: JsonTooDeepError) -> str:
    return f"nested deeper than {exc.limit} levels of arrays and objects"


@contextmanager
def _open_archive(path: Path) -> Iterator[_Reader]:
    if not path.is_file():
        raise DataError(f"There is no archive at {path}.", source=str(path))
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise DataError(
            f"{path.name} is not an evalcore project archive (not a zip file: {exc}).",
            source=str(path),
        ) from exc
    with archive:
        yield _Reader(path, archive)


# --- import: one transaction --------------------------------------------------------------------

_DB_ERRORS = (DBAPIError, StatementError)


def _reason(exc: Exception) -> str:
    orig = getattr(exc, "orig", None) or exc
    return str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__


def _endpoint_check(
    allowed: Sequence[str], hosts: Sequence[str]
) -> Callable[[dict[str, Any]], None]:
    """The check an endpoint new to the target passes: the same as one an admin saves there (the
    target server's allowed key names and endpoint hosts)."""

    def check(row: dict[str, Any]) -> None:
        check_api_key_env(row.get("api_key_env"), allowed)
        base_url = row.get("base_url")
        if base_url and str(base_url).strip():
            check_base_urls(str(base_url), hosts)
        _check_extra(row.get("extra") or {})

    return check


class _Loader:
    """Inserts an archive's tables into one open transaction, rewriting foreign keys."""

    def __init__(
        self,
        conn: Connection,
        reader: _Reader,
        plans: Sequence[TablePlan],
        checks: Mapping[str, Callable[[dict[str, Any]], None]],
        *,
        share_cache: bool = False,
    ) -> None:
        self.checks = checks
        self.conn = conn
        self.reader = reader
        self.plans = plans
        self.share_cache = share_cache
        referred = {target for p in plans for _, target in p.links}
        #: table → old id → new id, for the tables other rows refer to
        self.maps: dict[str, dict[Any, Any]] = {name: {} for name in referred}
        self.rows: dict[str, int] = {}
        self.matched: dict[str, int] = {}
        self.skipped: dict[str, int] = {}
        #: the reply-cache keys the archive's results refer to (as the archive writes them)
        self.cache_keys: set[str] = set()

    def _cache_key(self, key: str) -> str:
        """The key a result's or cached reply's ``key`` is imported under (see
        :func:`archived_cache_key`)."""
        if self.share_cache:
            return key
        return archived_cache_key(int(next(iter(self.maps["projects"].values()))), key)

    def load(self, plan: TablePlan, project_name: str | None) -> None:
        columns = self.reader.tables[plan.name]["columns"]
        decoders = {c: _decoder(plan.table.c[c]) for c in columns}
        results, cache = plan.name == "judge_results", plan.name == CACHE_TABLE
        batch: list[tuple[int, dict[str, Any]]] = []
        count = skipped = 0
        for number, row in self.reader.rows(plan):
            where = f"{plan.member}, line {number}"
            values: dict[str, Any] = {}
            for column, raw in row.items():
                try:
                    values[column] = decoders[column](raw)
                except ValueError as exc:
                    raise self.reader.fail(where, f"{column} {exc}") from exc
            count += 1
            if results and values.get("cache_key") is not None:
                self.cache_keys.add(values["cache_key"])
                values["cache_key"] = self._cache_key(values["cache_key"])
            elif cache:
                if values[plan.key] not in self.cache_keys:
                    skipped += 1  # no result of the archive refers to it: it is not imported
                    continue
                try:
                    _check_cached_reply(values)
                except ValueError as exc:
                    raise self.reader.fail(where, str(exc)) from exc
                values[plan.key] = self._cache_key(values[plan.key])
            self._relink(plan, values, where)
            if plan.role == "project" and project_name is not None:
                values["name"] = project_name
            batch.append((number, values))
            if len(batch) >= _BATCH:
                self._flush(plan, batch)
                batch = []
        if batch:
            self._flush(plan, batch)
        expected = self.reader.tables[plan.name]["rows"]
        if count != expected:
            raise self.reader.fail(plan.member, f"{count} rows, but the manifest says {expected}")
        self.rows[plan.name] = count - skipped
        if skipped:
            self.skipped[plan.name] = skipped

    def _relink(self, plan: TablePlan, values: dict[str, Any], where: str) -> None:
        for column, target in plan.links:
            old = values.get(column)
            if old is None:
                continue
            new = self.maps[target].get(old)
            if new is None:
                raise self.reader.fail(
                    where, f"{column} {old!r} names a row of {target} that is not in the archive"
                )
            values[column] = new
        for column in plan.cleared:
            if column in values:
                values[column] = None

    def _flush(self, plan: TablePlan, batch: list[tuple[int, dict[str, Any]]]) -> None:
        fresh = batch
        if plan.role in ("shared", "valued"):
            fresh = self._match(plan, batch)
        for number, values in fresh:
            check = self.checks.get(plan.name)
            if check is not None:
                try:
                    check(values)
                except EvalcoreError as exc:
                    raise type(exc)(f"{plan.member}, line {number}: {exc}") from exc
        if not fresh:
            return
        try:
            with self.conn.begin_nested():
                new_ids = self._insert(plan, [v for _, v in fresh])
        except _DB_ERRORS:
            new_ids = self._insert_one_by_one(plan, fresh)
        if plan.name in self.maps and plan.new_keys:
            mapping = self.maps[plan.name]
            for (_, values), new in zip(fresh, new_ids, strict=True):
                mapping[values[plan.key]] = new

    def _insert(self, plan: TablePlan, rows: list[dict[str, Any]]) -> list[Any]:
        table = plan.table
        if not plan.new_keys:
            self.conn.execute(insert(table), rows)
            return [r[plan.key] for r in rows]
        params = [{k: v for k, v in r.items() if k != plan.key} for r in rows]
        if plan.name not in self.maps:
            self.conn.execute(insert(table), params)
            return []
        stmt = insert(table).returning(table.c[plan.key], sort_by_parameter_order=True)
        # smaller statements than the default 1000 rows: faster on PostgreSQL with the ordering
        conn = self.conn.execution_options(insertmanyvalues_page_size=_RETURNING_PAGE)
        return list(conn.execute(stmt, params).scalars())

    def _insert_one_by_one(
        self, plan: TablePlan, fresh: list[tuple[int, dict[str, Any]]]
    ) -> list[Any]:
        """After a batch failed: insert row by row, to name the line the database refuses."""
        new_ids: list[Any] = []
        for number, values in fresh:
            try:
                with self.conn.begin_nested():
                    new_ids.extend(self._insert(plan, [values]))
            except _DB_ERRORS as exc:
                raise StoreError(
                    f"{self.reader.path.name}: {plan.member}, line {number}: the database refused "
                    f"the row ({_reason(exc)}); nothing was imported."
                ) from exc
        return new_ids

    def _match(
        self, plan: TablePlan, batch: list[tuple[int, dict[str, Any]]]
    ) -> list[tuple[int, dict[str, Any]]]:
        """The rows the target does not have yet; the others are mapped onto the target's rows."""
        column = plan.natural or plan.key
        table = plan.table
        wanted = [v[column] for _, v in batch]
        found = {
            natural: key
            for key, natural in self.conn.execute(
                select(table.c[plan.key], table.c[column]).where(table.c[column].in_(wanted))
            )
        }
        fresh = []
        for number, values in batch:
            existing = found.get(values[column])
            if existing is None:
                fresh.append((number, values))
            elif plan.name in self.maps:
                self.maps[plan.name][values[plan.key]] = existing
        self.matched[plan.name] = self.matched.get(plan.name, 0) + len(batch) - len(fresh)
        return fresh


# --- the store's methods ------------------------------------------------------------------------


class ArchiveMixin(StoreBase):
    """``export_project`` and ``import_project``: a project as one archive file."""

    def export_project(
        self, project_id: int, path: str | os.PathLike[str], *, cache: bool = True
    ) -> ArchiveSummary:
        """Write project ``project_id`` to the archive ``path`` (a zip, replaced if it exists).

        Everything the project holds goes in, read from one consistent snapshot and streamed table
        by table; ``cache=False`` leaves the reply cache out. Users, memberships and the audit log
        never do.
        """
        target = Path(path)
        partial = target.with_name(f".{target.name}.partial")
        plans = [p for p in archive_tables() if cache or p.name != CACHE_TABLE]
        by_name = {p.name: p for p in plans}
        counts: dict[str, int] = {}
        try:
            with self._snapshot() as conn:
                projects = by_name["projects"].table
                name = conn.execute(
                    select(projects.c.name).where(projects.c.id == project_id)
                ).scalar()
                if name is None:
                    raise NotFoundError(f"Project {project_id!r} does not exist.")
                with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
                    for plan in plans:
                        query = (
                            select(plan.table)
                            .where(_selection(by_name, plan, project_id))
                            .order_by(plan.table.c[plan.key])
                        )
                        with archive.open(plan.member, "w", force_zip64=True) as member:
                            counts[plan.name] = _write_rows(conn, plan, query, member)
                    manifest = {
                        "format": ARCHIVE_FORMAT,
                        "format_version": ARCHIVE_FORMAT_VERSION,
                        "evalcore_version": _evalcore_version(),
                        "schema_revision": current_revision(self.engine),
                        "created_at": utcnow().isoformat(),
                        "project": name,
                        "includes_cache": cache,
                        "tables": [
                            {
                                "name": p.name,
                                "member": p.member,
                                "rows": counts[p.name],
                                "columns": list(p.table.c.keys()),
                            }
                            for p in plans
                        ],
                    }
                    archive.writestr(MANIFEST_MEMBER, json.dumps(manifest, indent=2) + "\n")
            os.replace(partial, target)
        except OSError as exc:
            raise StoreError(f"Cannot write the archive {target}: {exc.strerror or exc}.") from exc
        finally:
            partial.unlink(missing_ok=True)
        summary = ArchiveSummary(
            project=str(name),
            project_id=project_id,
            path=target,
            rows=counts,
            size_bytes=target.stat().st_size,
            matched={},
        )
        self._audit_archive("project_exported", summary)
        return summary

    def import_project(
        self,
        path: str | os.PathLike[str],
        *,
        name: str | None = None,
        cache: bool = True,
        share_cache: bool = False,
    ) -> ArchiveSummary:
        """Add the project of the archive ``path`` to this database, in one transaction.

        New ids are assigned and every reference rewritten; annotators, endpoints and model prices
        the database already has (by name or model) are used as they are. ``name`` imports the
        project under another name; a project of the same name already here is refused. Any
        failure changes nothing.

        Of the archive's reply cache only the rows its results refer to are read (the others are
        counted in ``skipped``); ``cache=False`` skips it all. They are kept under keys of the new
        project's own (:func:`archived_cache_key`, the results rewritten to match), so they answer
        no request: a cache key is a predictable hash of a request, and an archive could otherwise
        decide what any project of this server is answered. ``share_cache=True`` trusts the
        archive: its replies go into the shared cache under their own keys (those the database
        already has are kept), where they answer the same request from any project.
        """
        source = Path(path)
        new_name = None if name is None else _project_name(name)
        with _open_archive(source) as reader:
            plans = [
                p
                for p in archive_tables()
                if p.name in reader.tables and (cache or p.name != CACHE_TABLE)
            ]
            # the cache goes last: its rows are kept only when a result refers to them
            plans.sort(key=lambda p: p.name == CACHE_TABLE)
            policy = _endpoint_check(
                _names(self.get_server_setting("allowed_key_names", [])),
                _names(self.get_server_setting("endpoint_hosts", [])),
            )
            checks = {"endpoints": policy}
            with self._write() as session:
                conn = session.connection()
                project = _archived_project_name(reader) if new_name is None else new_name
                projects = next(p.table for p in plans if p.role == "project")
                taken = conn.execute(
                    select(projects.c.id).where(projects.c.name == project)
                ).scalar()
                if taken is not None:
                    raise StoreError(
                        f"A project named {project!r} already exists in this database; import the "
                        "archive under another name (--as NEW_NAME on the command line)."
                    )
                loader = _Loader(conn, reader, plans, checks, share_cache=share_cache)
                with _database_errors():
                    for plan in plans:
                        loader.load(plan, project)
                        self._analyze(session, plan.table, loader.rows[plan.name])
                project_id = next(iter(loader.maps["projects"].values()))
        summary = ArchiveSummary(
            project=project,
            project_id=int(project_id),
            path=source,
            rows=loader.rows,
            size_bytes=source.stat().st_size,
            matched=loader.matched,
            skipped=loader.skipped,
        )
        self._audit_archive("project_imported", summary)
        return summary

    @contextmanager
    def _snapshot(self) -> Iterator[Connection]:
        """A read-only transaction that sees one moment of the database throughout."""
        engine = self.engine
        if engine.dialect.name == "postgresql":
            engine = engine.execution_options(
                isolation_level="REPEATABLE READ", postgresql_readonly=True
            )
        with _database_errors(), engine.connect() as conn, conn.begin():
            yield conn

    def _audit_archive(self, action: str, summary: ArchiveSummary) -> None:
        self.audit(
            action,
            target=summary.project,
            project_id=summary.project_id,
            detail={"file": summary.path.name, "rows": dict(summary.rows)},
        )

    if TYPE_CHECKING:
        audit: Callable[..., None]  # the users service's (_users.py), a sibling mixin of Store
        get_server_setting: Callable[..., Any]  # the same service's


def _write_rows(conn: Connection, plan: TablePlan, query: Select[Any], member: IO[bytes]) -> int:
    names = list(plan.table.c.keys())
    encoders = [(i, e) for i, c in enumerate(plan.table.columns) if (e := _encoder(c)) is not None]
    cleared = [names.index(c) for c in plan.cleared]
    count = 0
    result = conn.execution_options(yield_per=_BATCH).execute(query)
    for part in result.partitions():
        lines = []
        for row in part:
            values = list(row)
            for i, encode in encoders:
                values[i] = encode(values[i])
            for i in cleared:
                values[i] = None
            record = dict(zip(names, values, strict=True))
            try:
                text = json.dumps(record, ensure_ascii=False, allow_nan=False)
            except ValueError:  # a NaN inside a JSON column (SQLite keeps them)
                text = json.dumps(jsonable(record), ensure_ascii=False, allow_nan=False)
            lines.append(text)
        member.write(("\n".join(lines) + "\n").encode("utf-8"))
        count += len(lines)
    return count


def _archived_project_name(reader: _Reader) -> str:
    for _, row in reader.rows(next(p for p in archive_tables() if p.name == "projects")):
        value = row.get("name")
        if isinstance(value, str) and value.strip():
            return _project_name(value)
    raise reader.fail("projects.jsonl", "the project has no name")


def _project_name(name: str) -> str:
    cleaned = str(name or "").strip()
    if not cleaned or len(cleaned) > 200:
        raise ConfigError("A project needs a name of 1 to 200 characters.")
    return cleaned


def _evalcore_version() -> str:
    from evalcore import __version__

    return __version__
