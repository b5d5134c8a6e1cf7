"""A project's data: datasets and their items, imports of files, criteria, the agreement between
annotators, exports of the labels, and the project itself (annotators per item, new projects).

Importing a file goes through the store's import plan: :func:`propose` guesses what each column
holds (one criterion per aspect, one label set per annotator, one imported run per judge and
criterion, item fields, metadata) and never raises for the guess; the page shows the plan and one
form to correct it; :func:`import_file` is the one command that checks the whole file against the
corrected roles and the fractional choice and then writes, so errors appear only after the user
acts, naming the file, column and rows. Files read are kept in the server's memo by their digest
(never by who asked: the caller is checked before the memo is asked).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import pandas as pd

from evalcore.data import FRACTIONAL, ROLE_TEXT, ColumnRole, Fractional, read_table
from evalcore.errors import ConfigError, DataError, EvalcoreError, PermissionDeniedError
from evalcore.labels import LIKERT_5, PAIRWISE, PASS_FAIL, SEVERITY, Scale
from evalcore.report import HumanCeiling, human_ceiling, kappa_heatmap, parse_scale, table_bytes
from evalcore.runs import template_uses
from evalcore.store import (
    ITEM_FIELDS,
    CriterionRecord,
    DatasetKind,
    DatasetRecord,
    ImportPlan,
    ProjectRecord,
    apply_import,
    check_import,
    offending_rows,
    propose_import,
    roles_from_table,
)
from evalcore.words import plural
from evalcore.workflows._session import Caller, Session, caller

__all__ = [
    "CRITERION_SCALES",
    "CUSTOM_SCALE",
    "EXPORT_FORMATS",
    "FRACTIONAL",
    "ROLE_TEXT",
    "UPLOAD_TYPES",
    "Agreement",
    "Catalogue",
    "ColumnRole",
    "CriterionRecord",
    "CriterionScale",
    "DatasetRecord",
    "ExportView",
    "Fractional",
    "ImportPlan",
    "ProjectRecord",
    "add_criterion",
    "agreement",
    "catalogue",
    "create_project",
    "dataset_items",
    "describe_dataset",
    "export_file",
    "export_view",
    "field_summary",
    "file_token",
    "import_file",
    "propose",
    "record_export",
    "roles_from_table",
    "rows_named",
    "set_annotators_per_item",
    "template_label_warnings",
]

#: The file types an upload takes.
UPLOAD_TYPES: Final = ("csv", "tsv", "jsonl", "json", "parquet")
#: Export formats: the name shown, the file extension and the MIME type.
EXPORT_FORMATS: Final[dict[str, tuple[str, str]]] = {
    "CSV": ("csv", "text/csv"),
    "JSONL": ("jsonl", "application/jsonl"),
    "Parquet": ("parquet", "application/vnd.apache.parquet"),
}
#: Resamples of the agreement intervals (seeded, so a page shows the same numbers every time).
AGREEMENT_RESAMPLES: Final = 1000


@dataclass(frozen=True)
class CriterionScale:
    """A ready-made scale for a new criterion, with a starting rubric written for this project."""

    kind: DatasetKind
    scale: Scale
    rubric: str


#: Built-in criterion scales, by the name the picker shows.
CRITERION_SCALES: Final[dict[str, CriterionScale]] = {
    "Pass / fail": CriterionScale(
        "pointwise",
        PASS_FAIL,
        "pass: the response does what the criterion asks, with no error that matters.\n"
        "fail: the response misses what was asked, or contains an error a reader would act on.",
    ),
    "1–5 scale": CriterionScale(
        "pointwise",
        LIKERT_5,
        "5: excellent, nothing to improve.\n4: good, a small gap or slip.\n"
        "3: acceptable, but clearly incomplete or uneven.\n2: poor, mostly misses the point.\n"
        "1: unusable or wrong.",
    ),
    "A / B / tie": CriterionScale(
        "pairwise",
        PAIRWISE,
        "A: response A is better. B: response B is better.\n"
        "TIE: they are about equally good, or equally poor.\n"
        "Judge the content, not the length or the position on the screen.",
    ),
    "Severity": CriterionScale(
        "pointwise",
        SEVERITY,
        "very low: nothing harmful.\nlow: mildly inappropriate, unlikely to harm.\n"
        "medium: harmful to some readers.\nhigh: clearly harmful content.",
    ),
}
#: The picker's entry for labels typed by hand.
CUSTOM_SCALE: Final = "Custom labels"


def _manager(session: Session, project_id: int) -> Caller:
    """The caller, refused unless they manage the project's data now."""
    who = caller(session)
    if not who.actor.can("manage", project_id):
        raise PermissionDeniedError("You may not do this: it needs the 'manage' permission.")
    return who


def _digest(name: str, data: bytes) -> str:
    return hashlib.sha256(name.encode() + b"\0" + data).hexdigest()


def file_token(name: str, data: bytes) -> str:
    """A short token naming a file by its name and content (a form starts afresh for a new one)."""
    return _digest(name, data)[:16]


# --- what the project has -------------------------------------------------------------------------


@dataclass(frozen=True)
class Catalogue:
    """A project's datasets (every version, newest first within a name) and criteria."""

    project: ProjectRecord
    datasets: tuple[DatasetRecord, ...]
    criteria: tuple[CriterionRecord, ...]
    can_admin: bool
    #: whether the caller administers the server (only they create projects)
    server_admin: bool = False

    def fitting(self, kind: str) -> tuple[CriterionRecord, ...]:
        """The criteria that rate datasets of ``kind``."""
        return tuple(c for c in self.criteria if c.kind == kind)

    def dataset(self, dataset_id: int | None) -> DatasetRecord | None:
        return next((d for d in self.datasets if d.id == dataset_id), None)

    def criterion(self, criterion_id: int | None) -> CriterionRecord | None:
        return next((c for c in self.criteria if c.id == criterion_id), None)

    def table(self) -> pd.DataFrame:
        """The datasets as a table: name, version, kind, items, file, layout, when saved."""
        return pd.DataFrame(
            [
                {
                    "name": d.name,
                    "version": d.version,
                    "kind": d.kind,
                    "items": d.n_items,
                    "file": d.source_filename or "",
                    "layout": d.layout or "",
                    "saved": d.created_at.strftime("%Y-%m-%d %H:%M"),
                }
                for d in self.datasets
            ]
        )

    def criteria_table(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "name": c.name,
                    "kind": c.kind,
                    "labels": ", ".join(c.scale.display_labels),
                    "rubric": c.rubric,
                }
                for c in self.criteria
            ]
        )


def catalogue(session: Session, project_id: int) -> Catalogue:
    """The project's datasets and criteria, for someone who manages its data."""
    who = _manager(session, project_id)
    return Catalogue(
        who.store.get_project(project_id),
        tuple(who.store.list_datasets(project_id)),
        tuple(who.store.list_criteria(project_id)),
        who.actor.can("admin", project_id),
        who.actor.is_admin,
    )


def describe_dataset(dataset: DatasetRecord) -> str:
    """A dataset as a picker shows it.

    >>> from datetime import datetime
    >>> describe_dataset(DatasetRecord(1, 1, "qa", 2, "pointwise", None, None, (), 3, datetime(2026, 1, 1)))
    'qa · v2 (pointwise, 3 items)'
    """
    return (
        f"{dataset.name} · v{dataset.version} ({dataset.kind}, {plural(dataset.n_items, 'item')})"
    )


def dataset_items(session: Session, dataset_id: int) -> pd.DataFrame:
    """A saved dataset's items (immutable, so kept in the memo by id after the check)."""
    who = caller(session)
    who.store.authorize("read", dataset_id=dataset_id)
    return who.server.memo.get(
        ("dataset-items", dataset_id), lambda: who.store.items_frame(dataset_id)
    )


def field_summary(
    dataset: DatasetRecord, items: pd.DataFrame
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the item fields: the canonical ones the items have, then the extra columns marked as item
    fields; the metadata columns, which nobody is shown)."""
    canonical = tuple(f for f in ITEM_FIELDS if f in items.columns and items[f].notna().any())
    hidden = tuple(c for c in dataset.metadata_columns if c not in dataset.item_fields)
    return (*canonical, *dataset.item_fields), hidden


# --- files ------------------------------------------------------------------------------------------


def _frame(who: Caller, name: str, data: bytes) -> pd.DataFrame:
    """The file's table as read (kept in the memo by the file's name and content)."""
    return who.server.memo.get(("file", _digest(name, data)), lambda: read_table(data, name=name))


def propose(
    session: Session,
    project_id: int,
    name: str,
    data: bytes,
    *,
    roles: Sequence[ColumnRole] | None = None,
    fractional: Fractional = "refuse",
    dataset_id: int | None = None,
) -> ImportPlan:
    """What importing the file would do: the role of each column (guessed from the names unless
    ``roles`` are given), one criterion per aspect (existing or new) with its annotators and
    judges, item fields, metadata and what is left out (``evalcore.store.propose_import``). Only
    an unreadable file raises (a :class:`DataError` naming it); nothing else is checked yet.
    ``dataset_id`` names a saved dataset the labels would go to."""
    who = _manager(session, project_id)
    dataset = None if dataset_id is None else who.store.get_dataset(dataset_id)
    if dataset is not None and dataset.project_id != project_id:
        raise PermissionDeniedError("That dataset belongs to another project.")
    return propose_import(
        data,
        name=name,
        criteria=who.store.list_criteria(project_id),
        roles=roles,
        fractional=fractional,
        dataset=dataset,
        frame=_frame(who, name, data),
    )


def import_file(
    session: Session,
    project_id: int,
    name: str,
    data: bytes,
    roles: Sequence[ColumnRole],
    *,
    fractional: Fractional = "refuse",
    dataset_name: str | None = None,
    dataset_id: int | None = None,
) -> str:
    """Check the file in full against ``roles`` and the fractional choice, then save it: a new
    dataset ``dataset_name`` (a new version when the name exists) or labels for the saved dataset
    ``dataset_id``, creating the criteria the plan names new. Raises the first problem (naming the
    file, column and rows) before anything is written; returns what was saved, in words."""
    plan = propose(
        session,
        project_id,
        name,
        data,
        roles=roles,
        fractional=fractional,
        dataset_id=dataset_id,
    )
    who = _manager(session, project_id)
    checked = check_import(plan, data)
    return apply_import(who.store, project_id, checked, dataset_name=dataset_name).message


def rows_named(
    session: Session, project_id: int, error: EvalcoreError, name: str, data: bytes
) -> pd.DataFrame | None:
    """The rows of the file that ``error`` names, as they are in the file (at most 20)."""
    who = _manager(session, project_id)
    try:
        frame = _frame(who, name, data)
    except EvalcoreError:
        frame = None
    return offending_rows(error, data, frame, name=name)


def template_label_warnings(session: Session, dataset_id: int, content: Any) -> tuple[str, ...]:
    """Warnings for a judge template about to be saved for ``dataset_id``: each variable it names
    that is one of the dataset's label, judge or reason columns (the judge would read the answer
    it is asked to give), or metadata that is not an item field (the judge never gets it).

    For the Judge page: show them beside the editor before the version is saved.
    """
    who = caller(session)
    dataset = who.store.get_dataset(dataset_id)
    used = template_uses(content)
    labels = set(dataset.label_columns)
    hidden = set(dataset.metadata_columns) - set(dataset.item_fields)
    found: list[str] = []
    for variable in used:
        if variable in labels:
            found.append(
                f"{{{{ {variable} }}}} is a label column of {dataset.source_filename or dataset.name}: "
                "the judge would read the answer it is asked to give. Use an item field instead."
            )
        elif variable in hidden:
            found.append(
                f"{{{{ {variable} }}}} is metadata of {dataset.name}, not an item field, so the "
                "judge never gets it; mark the column as an item field when the file is imported."
            )
    return tuple(found)


# --- criteria ---------------------------------------------------------------------------------------


def custom_scale(text: str, *, ordered: bool) -> Scale:
    """A scale typed as comma-separated labels in order (:func:`evalcore.report.parse_scale`),
    ordinal or not as ``ordered`` says (a pairwise or pass/fail scale stays what it is).

    >>> custom_scale("bad, ok, good", ordered=True).kind
    'ordinal'
    """
    try:
        scale = parse_scale(text)
    except EvalcoreError as exc:
        raise DataError(f"Custom labels: {exc}.") from exc
    if scale is None:
        raise DataError("Custom labels: type the labels, in order, separated by commas.")
    if scale.kind in ("ordinal", "nominal"):
        scale = Scale(scale.labels, "ordinal" if ordered else "nominal", scale.name)
    return scale


def add_criterion(
    session: Session,
    project_id: int,
    name: str,
    *,
    scale: str,
    rubric: str,
    labels: str = "",
    ordered: bool = True,
) -> str:
    """Add a criterion with a built-in scale of :data:`CRITERION_SCALES`, or (``scale`` =
    :data:`CUSTOM_SCALE`) the ``labels`` typed; what was added, in words."""
    who = _manager(session, project_id)
    builtin = CRITERION_SCALES.get(scale)
    if builtin is not None:
        chosen, kind = builtin.scale, builtin.kind
    elif scale == CUSTOM_SCALE:
        chosen = custom_scale(labels, ordered=ordered)
        kind = "pairwise" if chosen.kind == "pairwise" else "pointwise"
    else:
        raise ConfigError(f"There is no scale {scale!r}.")
    created = who.store.create_criterion(project_id, name, kind=kind, scale=chosen, rubric=rubric)
    return f"Added criterion {created.name!r} ({', '.join(chosen.display_labels)})."


# --- agreement ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Agreement:
    """How the annotators of a dataset agree on a criterion: their label counts, and (with two
    or more who labelled the same items) Krippendorff's alpha, pairwise kappas and a heatmap."""

    counts: pd.DataFrame
    ceiling: HumanCeiling | None
    figure: Any = None


def agreement(session: Session, dataset_id: int, criterion_id: int) -> Agreement:
    """The agreement between annotators (seeded bootstrap intervals, kept in the memo by the
    labels themselves)."""
    who = caller(session)
    counts = who.store.annotator_label_counts(dataset_id, criterion_id)
    if counts.empty:
        return Agreement(counts, None)
    matrix = who.store.annotation_matrix(dataset_id, criterion_id)
    scale = who.store.get_criterion(criterion_id).scale
    if matrix.shape[1] < 2:
        return Agreement(counts, None)
    version = int(pd.util.hash_pandas_object(matrix.astype(str), index=True).sum())
    key = ("agreement", tuple(matrix.columns), version, scale)

    def compute() -> HumanCeiling | None:
        return human_ceiling(matrix, scale, n_boot=AGREEMENT_RESAMPLES, seed=0)

    found = who.server.memo.get(key, compute)
    if found is None or found.krippendorff_alpha is None:
        return Agreement(counts, None)
    figure = kappa_heatmap(found.pairwise_kappa, weights=found.kappa_weights)
    return Agreement(counts, found, figure)


# --- export -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportView:
    """Every revision of the annotations chosen, and the file name an export gets."""

    frame: pd.DataFrame
    stem: str

    @property
    def latest(self) -> int:
        return int(self.frame["latest"].sum()) if not self.frame.empty else 0

    def file_name(self, fmt: str) -> str:
        return f"{self.stem}-annotations.{EXPORT_FORMATS[fmt][0]}".replace(" ", "_")


def export_view(
    session: Session, project_id: int, dataset_id: int | None, criterion_id: int | None
) -> ExportView:
    """Every revision of the project's annotations (one dataset's, one criterion's, or all)."""
    who = caller(session)
    frame = who.store.export_annotations(
        project_id=project_id, dataset_id=dataset_id, criterion_id=criterion_id
    )
    stem = (
        who.store.get_dataset(dataset_id).name
        if dataset_id
        else who.store.get_project(project_id).name
    )
    return ExportView(frame, stem)


def export_file(
    session: Session,
    project_id: int,
    dataset_id: int | None,
    criterion_id: int | None,
    fmt: str,
) -> bytes:
    """The export as the bytes of a file in ``fmt`` (:data:`EXPORT_FORMATS`; a CSV neutralises
    formula cells, JSONL and Parquet keep every value)."""
    if fmt not in EXPORT_FORMATS:
        raise ConfigError(f"Export formats are {', '.join(EXPORT_FORMATS)}, not {fmt!r}.")
    view = export_view(session, project_id, dataset_id, criterion_id)
    return table_bytes(view.frame, EXPORT_FORMATS[fmt][0])


def record_export(session: Session, project_id: int, file_name: str) -> None:
    """Write a download of the project's labels into the audit log as the caller's (who must
    still be allowed to export them)."""
    who = caller(session)
    if not who.actor.can("export", project_id):
        raise PermissionDeniedError("You may not do this: it needs the 'export' permission.")
    who.store.audit("export", target=file_name, project_id=project_id)


# --- the project --------------------------------------------------------------------------------------


def create_project(session: Session, name: str, description: str = "") -> ProjectRecord:
    """Create a project (server admins only)."""
    return caller(session).store.create_project(name, description=description)


def set_annotators_per_item(session: Session, project_id: int, count: int) -> str:
    """How many annotators should label each item of the project (project admins)."""
    caller(session).store.update_project_settings(project_id, {"annotators_per_item": count})
    return f"Each item is now meant for {plural(int(count), 'annotator')}."
