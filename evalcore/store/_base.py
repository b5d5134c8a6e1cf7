"""What every part of the repository shares: transactions, locks, look-ups and value cleaning."""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import fields
from datetime import date, datetime
from typing import Any, TypeVar

from sqlalchemy import Engine, Table, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session
from sqlalchemy.orm import sessionmaker as SessionMaker

from evalcore.errors import LabelOutOfScaleError, NotFoundError, StoreError
from evalcore.labels import Scale, format_label, is_missing
from evalcore.store._models import Annotator, Base, table_of, utcnow

__all__ = ["RevisionConflictError", "StoreBase"]

_M = TypeVar("_M", bound=Base)

#: Rows per executemany batch for bulk inserts.
BATCH_ROWS = 5_000
#: Bulk writes of at least this many rows refresh PostgreSQL's planner statistics.
ANALYZE_AFTER_ROWS = 1_000
#: Values per ``IN (...)`` list, safely under every backend's parameter limit.
IN_CHUNK = 500

# Namespaces of PostgreSQL advisory locks (first key); the second key is an id.
LOCK_DATASET_VERSION = 1
LOCK_QUEUE = 2
LOCK_TEMPLATE_VERSION = 3
LOCK_ANNOTATION_IMPORT = 4
LOCK_ADMINS = 5


class RevisionConflictError(StoreError):
    """A submit was based on a revision that someone (another window, another tab) already replaced.

    ``latest`` is the revision that is in the database now; reload the item and submit again on top of
    it.
    """

    def __init__(self, message: str, *, item_id: str | None = None, latest: Any = None) -> None:
        super().__init__(message, item_id=item_id)
        self.latest = latest


class StoreBase:
    """Transactions and helpers; the public methods live in the mixins that make up ``Store``."""

    engine: Engine
    sessionmaker: SessionMaker[Session]
    _write_sessions: SessionMaker[Session]

    # --- transactions -----------------------------------------------------------------------

    @contextmanager
    def _read(self) -> Iterator[Session]:
        """A read transaction (a plain ``BEGIN`` on SQLite)."""
        with _database_errors(), self.sessionmaker() as session, session.begin():
            yield session

    @contextmanager
    def _write(self) -> Iterator[Session]:
        """A write transaction, committed on leaving; ``BEGIN IMMEDIATE`` on SQLite.

        ``IntegrityError`` is passed through unchanged so that callers can turn a unique violation into
        an idempotent answer; other database errors become :class:`StoreError`.
        """
        with _database_errors(), self._write_sessions() as session, session.begin():
            yield session

    @property
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self.engine.dialect.name

    def _lock(self, session: Session, namespace: int, key: int) -> None:
        """Serialise writers on (namespace, key) until the transaction ends.

        SQLite write transactions already hold the database's single write lock; PostgreSQL takes a
        transaction-scoped advisory lock.
        """
        if self.dialect == "postgresql":
            session.execute(select(func.pg_advisory_xact_lock(namespace, key)))

    def _analyze(self, session: Session, table: Table, rows: int) -> None:
        """After a bulk write on PostgreSQL, refresh the planner's statistics of ``table``.

        Without it the planner still believes a just-filled table is empty until autovacuum comes
        by, and picks nested scans that turn milliseconds into minutes. SQLite needs nothing.
        """
        if self.dialect == "postgresql" and rows >= ANALYZE_AFTER_ROWS:
            session.connection().exec_driver_sql(f"ANALYZE {table.name}")

    def _insert(self, table: Table) -> Any:
        """The dialect's ``INSERT`` construct, which knows ``ON CONFLICT``."""
        if self.dialect == "postgresql":
            return postgresql.insert(table)
        if self.dialect == "sqlite":
            return sqlite.insert(table)
        raise StoreError(f"unsupported database backend {self.dialect!r}")  # pragma: no cover

    # --- look-ups ---------------------------------------------------------------------------

    @staticmethod
    def _get(session: Session, model: type[_M], key: object, what: str) -> _M:
        row = session.get(model, key)
        if row is None:
            raise NotFoundError(f"{what} {key!r} does not exist.")
        return row

    def _find_annotator(self, session: Session, name: str) -> int | None:
        """The id of annotator ``name``, or None."""
        query = select(Annotator.id).where(Annotator.name == _annotator_name(name))
        found = session.connection().execute(query).scalar()
        return None if found is None else int(found)

    def _annotator_id(self, session: Session, name: str) -> int:
        """The id of annotator ``name``, created when missing (safe under concurrency)."""
        found = self._find_annotator(session, name)
        if found is not None:
            return found
        name = _annotator_name(name)
        stmt = self._insert(table_of(Annotator)).values(name=name, created_at=utcnow())
        conn = session.connection()
        conn.execute(stmt.on_conflict_do_nothing(index_elements=["name"]))
        return int(conn.execute(select(Annotator.id).where(Annotator.name == name)).scalar_one())


@contextmanager
def _database_errors() -> Iterator[None]:
    try:
        yield
    except IntegrityError:
        raise
    except DBAPIError as exc:
        raise StoreError(f"The database refused the operation: {exc.orig}") from exc


def _annotator_name(name: str) -> str:
    cleaned = str(name).strip()
    if not cleaned:
        raise StoreError("An annotator needs a name.")
    return cleaned


def bulk_insert(
    session: Session,
    table: Table,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    constants: Mapping[str, Any] | None = None,
) -> int:
    """Insert many rows with the driver's ``executemany``, in batches; returns the row count.

    The column types' own bind processors (JSON, timestamps) convert each value exactly as SQLAlchemy
    would, but SQLAlchemy's per-row statement machinery is skipped, which makes a 100 000-row upload
    several times faster. ``constants`` are values shared by every row (such as ``created_at``),
    converted once. Runs inside the session's transaction.
    """
    conn = session.connection()
    dialect = conn.dialect
    constants = dict(constants or {})
    names = [*columns, *constants]
    quote = dialect.identifier_preparer.quote
    marker = "?" if dialect.paramstyle == "qmark" else "%s"
    sql = (
        f"INSERT INTO {dialect.identifier_preparer.format_table(table)} "
        f"({', '.join(quote(n) for n in names)}) VALUES ({', '.join([marker] * len(names))})"
    )

    def processor(name: str) -> Any:
        return table.c[name].type.dialect_impl(dialect).bind_processor(dialect)

    procs = [(i, p) for i, n in enumerate(columns) if (p := processor(n)) is not None]
    fixed = tuple(
        value if (proc := processor(name)) is None else proc(value)
        for name, value in constants.items()
    )
    total = 0
    batch: list[tuple[Any, ...]] = []
    for row in rows:
        if procs:
            values = list(row)
            for i, proc in procs:
                values[i] = proc(values[i])
            batch.append((*values, *fixed))
        else:
            batch.append((*row, *fixed))
        if len(batch) >= BATCH_ROWS:
            conn.exec_driver_sql(sql, batch)
            total += len(batch)
            batch = []
    if batch:
        conn.exec_driver_sql(sql, batch)
        total += len(batch)
    return total


# --- value cleaning -------------------------------------------------------------------------------


_R = TypeVar("_R")


def row_record(cls: type[_R], row: Any, **computed: Any) -> _R:
    """A frozen record of ``cls`` from an ORM row: each field read from the row's attribute of the
    same name, except the ones given in ``computed`` (renamed or converted columns)."""
    given = {f.name: getattr(row, f.name) for f in fields(cls) if f.name not in computed}  # type: ignore[arg-type]
    return cls(**given, **computed)


def jsonable(value: Any) -> Any:
    """A JSON-safe copy of ``value``: NaN/NA → None, numpy scalars → Python, dates → ISO text."""
    kind = type(value)
    if value is None or kind is str or kind is bool or kind is int:
        return value
    if kind is float:
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, numbers.Number):
        return jsonable(value.tolist())  # numpy arrays
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        return None if math.isnan(number) or math.isinf(number) else number
    if is_missing(value):  # pandas.NA, NaT (before datetime: NaT is one)
        return None
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def text_value(value: Any) -> str | None:
    """A cell as text for an item field: missing → None, lists/dicts → JSON, numbers → their text."""
    if value is None:
        return None
    if type(value) is str:
        return value
    if type(value) is float and math.isnan(value):
        return None
    if isinstance(value, list | tuple | dict):
        return json.dumps(jsonable(value), ensure_ascii=False)
    if hasattr(value, "tolist") and not isinstance(value, numbers.Number):
        return json.dumps(jsonable(value.tolist()), ensure_ascii=False)
    if is_missing(value):
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def external_id(value: Any) -> str | None:
    """An item id from a file as text (``7``, ``7.0`` and ``"7"`` are the same id); None if missing."""
    if type(value) is str:
        return value.strip() or None
    if isinstance(value, bool):
        return str(value)
    if is_missing(value):
        return None
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        number = float(value)
        if number.is_integer():
            return str(int(number))
        return format_label(number)
    text = str(value).strip()
    return text or None


def canonical_label(
    scale: Scale, value: Any, *, item: str | None, row: int | None = None
) -> str | None:
    """The canonical text of ``value`` on ``scale``; None when missing; an error naming the item."""
    try:
        label = scale.coerce(value)
    except ValueError as exc:
        where = f"item {item!r}" if item is not None else "the label"
        if row is not None:
            where += f" (row {row})"
        raise LabelOutOfScaleError(
            f"{where}: {exc}", item_id=item, rows=(row,) if row is not None else ()
        ) from exc
    return None if label is None else format_label(label)


def chunks(values: Sequence[Any], size: int = IN_CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]
