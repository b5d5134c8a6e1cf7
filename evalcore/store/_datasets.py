"""Datasets and their items: saved once, atomically and in bulk, then never changed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from evalcore.errors import (
    ConfigError,
    DataError,
    DuplicateIdError,
    EmptyFileError,
    MissingColumnError,
    NotFoundError,
    StoreError,
)
from evalcore.errors import format_rows as _rows
from evalcore.store._base import (
    LOCK_DATASET_VERSION,
    StoreBase,
    bulk_insert,
    external_id,
    jsonable,
    row_record,
    text_value,
)
from evalcore.store._models import Dataset, Item, Project, table_of, utcnow
from evalcore.store._records import DatasetKind, DatasetRecord, ItemRecord

__all__ = ["ITEM_FIELDS", "DatasetsMixin", "dataset_record", "item_record"]

#: The item fields every dataset has (``None`` where the file has no value), in display order.
ITEM_FIELDS: tuple[str, ...] = (
    "prompt",
    "response",
    "context",
    "reference",
    "response_a",
    "response_b",
)


def dataset_record(row: Dataset) -> DatasetRecord:
    return row_record(
        DatasetRecord,
        row,
        metadata_columns=tuple(row.metadata_columns or ()),
        column_roles=tuple((str(c), str(r)) for c, r in (row.column_roles or {}).items()),
    )


def item_record(row: Item) -> ItemRecord:
    return row_record(ItemRecord, row, metadata=dict(row.meta or {}))


class DatasetsMixin(StoreBase):
    def save_dataset(
        self,
        project_id: int,
        name: str,
        items: pd.DataFrame,
        *,
        kind: DatasetKind = "pointwise",
        source_filename: str | None = None,
        layout: str | None = None,
        column_roles: Mapping[str, str] | None = None,
    ) -> DatasetRecord:
        """Save a new dataset, or the next version of one with the same name, in one transaction.

        ``items`` has an ``item_id`` column (the file's own ids, unique), any of the fields
        :data:`ITEM_FIELDS`, and any other columns, which are kept as each item's metadata. Rows keep
        their order (``position`` 0, 1, …). A pairwise dataset needs ``response_a`` and
        ``response_b``. Either everything is saved or nothing is: a duplicate id anywhere, even in the
        last row, leaves the database as it was and raises :class:`DuplicateIdError` naming the rows
        (numbered from 1).

        ``column_roles`` says what each column of the source file held (see
        :data:`evalcore.data.ROLES`); the extra columns marked ``item_field`` are the judge's
        template variables and what annotators see, the other extra columns are metadata. Without
        it every extra column is an item field.
        """
        name = str(name or "").strip()
        if not name:
            raise ConfigError("A dataset needs a name.")
        if kind not in ("pointwise", "pairwise"):
            raise ConfigError(f"A dataset is 'pointwise' or 'pairwise', not {kind!r}.")
        where = source_filename or f"dataset {name!r}"
        if not isinstance(items, pd.DataFrame):
            raise DataError(f"{where}: items must be a pandas DataFrame.", source=source_filename)
        columns = [str(c) for c in items.columns]
        if len(set(columns)) != len(columns):
            raise DataError(f"{where}: column names repeat.", source=source_filename)
        frame = items.set_axis(columns, axis=1)
        if "item_id" not in columns:
            raise MissingColumnError(
                f"{where} has no item_id column.", source=source_filename, column="item_id"
            )
        if kind == "pairwise":
            for needed in ("response_a", "response_b"):
                if needed not in columns:
                    raise MissingColumnError(
                        f"{where} is pairwise but has no {needed} column.",
                        source=source_filename,
                        column=needed,
                    )
        if frame.empty:
            raise EmptyFileError(f"{where} has no items.", source=source_filename)

        ids = [external_id(v) for v in frame["item_id"].tolist()]
        missing = [n + 1 for n, v in enumerate(ids) if v is None]
        if missing:
            raise DataError(
                f"{where}: item_id is empty in {_rows(missing)}.",
                source=source_filename,
                column="item_id",
                rows=missing,
            )
        meta_columns = [c for c in columns if c != "item_id" and c not in ITEM_FIELDS]
        roles = None if column_roles is None else {str(c): str(r) for c, r in column_roles.items()}
        if roles is not None:
            for column in meta_columns:
                roles.setdefault(column, "metadata")
            strays = [c for c, r in roles.items() if r == "item_field" and c not in meta_columns]
            if strays:
                raise DataError(
                    f"{where}: {', '.join(map(repr, strays))} marked as item fields but not "
                    "among the items' columns.",
                    source=source_filename,
                )
        n = len(frame)
        try:
            with self._write() as s:
                self._get(s, Project, project_id, "Project")
                self._lock(s, LOCK_DATASET_VERSION, project_id)
                latest = s.scalar(
                    select(func.max(Dataset.version)).where(
                        Dataset.project_id == project_id, Dataset.name == name
                    )
                )
                dataset = Dataset(
                    project_id=project_id,
                    name=name,
                    version=(latest or 0) + 1,
                    kind=kind,
                    source_filename=source_filename,
                    layout=layout,
                    metadata_columns=meta_columns,
                    column_roles=roles,
                    n_items=n,
                )
                s.add(dataset)
                s.flush()
                written = bulk_insert(
                    s,
                    table_of(Item),
                    ["dataset_id", "external_id", "position", *ITEM_FIELDS, "metadata"],
                    _item_rows(dataset.id, frame, ids, meta_columns),
                    constants={"created_at": utcnow()},
                )
                self._analyze(s, table_of(Item), written)
                return dataset_record(dataset)
        except IntegrityError as exc:
            duplicated = pd.Series(ids).duplicated(keep=False)
            rows = [int(i) + 1 for i in duplicated[duplicated].index]
            if rows:
                first = ids[rows[0] - 1]
                raise DuplicateIdError(
                    f"{where}: item id {first!r} appears more than once ({_rows(rows)}); "
                    "nothing was saved.",
                    source=source_filename,
                    column="item_id",
                    rows=rows,
                    item_id=first,
                ) from exc
            raise StoreError(f"{where} could not be saved (nothing was saved): {exc.orig}") from exc

    def get_dataset(self, dataset_id: int) -> DatasetRecord:
        with self._read() as s:
            return dataset_record(self._get(s, Dataset, dataset_id, "Dataset"))

    def get_dataset_by_name(
        self, project_id: int, name: str, version: int | None = None
    ) -> DatasetRecord:
        """A dataset by name: the given version, or the newest."""
        query = select(Dataset).where(Dataset.project_id == project_id, Dataset.name == name)
        query = (
            query.where(Dataset.version == version)
            if version is not None
            else query.order_by(Dataset.version.desc()).limit(1)
        )
        with self._read() as s:
            row = s.scalars(query).first()
            if row is None:
                which = f" version {version}" if version is not None else ""
                raise NotFoundError(f"Project {project_id} has no dataset {name!r}{which}.")
            return dataset_record(row)

    def list_datasets(
        self, project_id: int, *, name: str | None = None, latest_only: bool = False
    ) -> list[DatasetRecord]:
        """Datasets of a project by name and version (newest version first within a name)."""
        query = select(Dataset).where(Dataset.project_id == project_id)
        if name is not None:
            query = query.where(Dataset.name == name)
        query = query.order_by(Dataset.name, Dataset.version.desc())
        with self._read() as s:
            records = [dataset_record(r) for r in s.scalars(query)]
        if latest_only:
            newest: dict[str, DatasetRecord] = {}
            for record in records:
                newest.setdefault(record.name, record)
            records = list(newest.values())
        return records

    def count_items(self, dataset_id: int) -> int:
        with self._read() as s:
            return int(
                s.scalar(
                    select(func.count()).select_from(Item).where(Item.dataset_id == dataset_id)
                )
                or 0
            )

    def get_item(self, item_id: int) -> ItemRecord:
        """An item by its database id."""
        with self._read() as s:
            return item_record(self._get(s, Item, item_id, "Item"))

    def get_item_by_external_id(self, dataset_id: int, item_external_id: str) -> ItemRecord:
        """An item by the id it has in the dataset's file."""
        with self._read() as s:
            row = s.scalars(
                select(Item).where(
                    Item.dataset_id == dataset_id, Item.external_id == str(item_external_id)
                )
            ).one_or_none()
            if row is None:
                raise NotFoundError(
                    f"Dataset {dataset_id} has no item {item_external_id!r}.",
                    item_id=str(item_external_id),
                )
            return item_record(row)

    def items_frame(self, dataset_id: int) -> pd.DataFrame:
        """The items of a dataset in row order.

        The index (``item_pk``) is the database id that :meth:`get_item`, ``submit_annotation`` and
        ``record_result`` take. Columns: ``item_id`` (the file's id), :data:`ITEM_FIELDS`, then the
        dataset's metadata columns. Saving this frame again gives the same items.
        """
        with self._read() as s:
            dataset = dataset_record(self._get(s, Dataset, dataset_id, "Dataset"))
            cols = [Item.id, Item.external_id, *(getattr(Item, f) for f in ITEM_FIELDS), Item.meta]
            rows = (
                s.connection()
                .execute(select(*cols).where(Item.dataset_id == dataset_id).order_by(Item.position))
                .all()
            )
        names = ["item_pk", "item_id", *ITEM_FIELDS]
        frame = pd.DataFrame([tuple(r[:-1]) for r in rows], columns=names)
        meta_columns = list(dataset.metadata_columns)
        if meta_columns:
            meta = pd.DataFrame.from_records(
                [r[-1] or {} for r in rows], columns=meta_columns, nrows=len(rows)
            )
            frame = pd.concat([frame, meta], axis=1)
        return frame.set_index("item_pk")


def _item_rows(
    dataset_id: int, frame: pd.DataFrame, ids: list[str | None], meta_columns: list[str]
) -> Iterator[tuple[Any, ...]]:
    """Item rows in column order, converted column-wise (no per-row pandas)."""
    texts = [
        [text_value(v) for v in frame[f].tolist()] if f in frame.columns else [None] * len(frame)
        for f in ITEM_FIELDS
    ]
    meta_values = [frame[c].tolist() for c in meta_columns]
    for i, (ext, *fields) in enumerate(zip(ids, *texts, strict=True)):
        metadata = {
            c: jsonable(values[i]) for c, values in zip(meta_columns, meta_values, strict=True)
        }
        yield (dataset_id, ext, i, *fields, metadata)
