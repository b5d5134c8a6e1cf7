"""A project's data: datasets and their items, uploads, criteria, label imports, the agreement between
annotators, exports of the labels, and the project itself (annotators per item, new projects).

Putting a file into the store goes through the store's upload service (``load_upload``,
``plan_upload`` / ``plan_label_import``, ``save_upload`` / ``import_plan``): the file is checked in
full before anything is written, every label set of it goes to a criterion or is left out by choice,
and a bad file saves nothing. Files read and loaded are kept in the server's memo by their digest
(never by who asked: the caller is checked before the memo is asked).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import pandas as pd

from evalcore.data import ColumnMapping, LoadedFile, read_table, suggest_mapping
from evalcore.errors import ConfigError, DataError, EvalcoreError, PermissionDeniedError
from evalcore.labels import LIKERT_5, PAIRWISE, PASS_FAIL, SEVERITY, Scale
from evalcore.report import HumanCeiling, human_ceiling, kappa_heatmap, parse_scale, table_bytes
from evalcore.store import (
    CriterionRecord,
    DatasetKind,
    DatasetRecord,
    ProjectRecord,
    UploadPlan,
    import_plan,
    load_upload,
    offending_rows,
    plan_label_import,
    plan_upload,
    save_upload,
)
from evalcore.words import plural
from evalcore.workflows._session import Caller, Session, caller

__all__ = [
    "CRITERION_SCALES",
    "CUSTOM_SCALE",
    "EXPORT_FORMATS",
    "ITEM_FIELD_LABELS",
    "UPLOAD_TYPES",
    "Agreement",
    "Catalogue",
    "ColumnMapping",
    "CriterionRecord",
    "CriterionScale",
    "DatasetRecord",
    "ExportView",
    "FileTable",
    "LoadedFile",
    "ProjectRecord",
    "UploadCheck",
    "add_criterion",
    "agreement",
    "catalogue",
    "check_label_import",
    "check_upload",
    "create_project",
    "dataset_items",
    "describe_dataset",
    "export_file",
    "export_view",
    "file_token",
    "import_labels",
    "offending_rows",
    "preview_file",
    "read_file",
    "record_export",
    "save_file",
    "set_annotators_per_item",
]

#: The file types an upload takes.
UPLOAD_TYPES: Final = ("csv", "tsv", "jsonl", "json", "parquet")
#: The item fields a mapping names, with their labels.
ITEM_FIELD_LABELS: Final[dict[str, str]] = {
    "item_id": "Item id",
    "prompt": "Prompt",
    "response": "Response",
    "context": "Context",
    "reference": "Reference answer",
    "response_a": "Response A (pairwise)",
    "response_b": "Response B (pairwise)",
}
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


# --- files ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileTable:
    """An uploaded file's table as read, and the mapping its column names suggest."""

    name: str
    frame: pd.DataFrame
    guess: ColumnMapping

    @property
    def columns(self) -> list[str]:
        return [str(c) for c in self.frame.columns]


def read_file(session: Session, project_id: int, name: str, data: bytes) -> FileTable:
    """Read an uploaded file (any :data:`UPLOAD_TYPES`); a :class:`DataError` names what is wrong."""
    who = _manager(session, project_id)

    def read() -> FileTable:
        frame = read_table(data, name=name)
        return FileTable(name, frame, suggest_mapping(frame))

    return who.server.memo.get(("file", _digest(name, data)), read)


def _loaded(
    who: Caller,
    name: str,
    data: bytes,
    mapping: ColumnMapping | None,
    targets: Mapping[str, CriterionRecord | None],
) -> LoadedFile:
    chosen = tuple(sorted((m, None if c is None else (c.id, c.scale)) for m, c in targets.items()))
    return who.server.memo.get(
        ("loaded", _digest(name, data), mapping, chosen),
        lambda: load_upload(data, name=name, mapping=mapping, targets=dict(targets)),
    )


def preview_file(
    session: Session, project_id: int, name: str, data: bytes, mapping: ColumnMapping
) -> LoadedFile:
    """The file loaded with ``mapping``, its labels on the scales they suggest (for a preview and
    for choosing where they go); a :class:`DataError` names the file, column and rows."""
    return _loaded(_manager(session, project_id), name, data, mapping, {})


@dataclass(frozen=True)
class UploadCheck:
    """A file checked as a new dataset: what was loaded and what saving it writes."""

    loaded: LoadedFile
    plan: UploadPlan
    existing_version: int | None

    @property
    def labels(self) -> str:
        """The labels saved with the dataset, in words (empty when none)."""
        return ", ".join(self.plan.describe())


def _targets(
    who: Caller, project_id: int, targets: Mapping[str, int | None]
) -> dict[str, CriterionRecord | None]:
    criteria = {c.id: c for c in who.store.list_criteria(project_id)}
    found: dict[str, CriterionRecord | None] = {}
    for metric, criterion_id in targets.items():
        if criterion_id is None:
            found[metric] = None
        elif criterion_id not in criteria:
            raise ConfigError(f"The project has no criterion {criterion_id}; choose another.")
        else:
            found[metric] = criteria[criterion_id]
    return found


def check_upload(
    session: Session,
    project_id: int,
    name: str,
    data: bytes,
    mapping: ColumnMapping,
    *,
    kind: DatasetKind,
    targets: Mapping[str, int | None],
    dataset_name: str = "",
) -> UploadCheck:
    """Load and check a file as a new dataset of ``kind`` (labels going to the criteria of
    ``targets``, by id; ``None``: left out). Raises the first problem, naming the file, column and
    rows; writes nothing."""
    who = _manager(session, project_id)
    chosen = _targets(who, project_id, targets)
    loaded = _loaded(who, name, data, mapping, chosen)
    plan = plan_upload(loaded, kind=kind, targets=chosen)
    existing = who.store.list_datasets(project_id, name=dataset_name) if dataset_name else []
    return UploadCheck(loaded, plan, existing[0].version if existing else None)


def save_file(
    session: Session,
    project_id: int,
    name: str,
    data: bytes,
    mapping: ColumnMapping,
    *,
    kind: DatasetKind,
    targets: Mapping[str, int | None],
    dataset_name: str,
) -> str:
    """Check the file again and save it as dataset ``dataset_name`` (a new version when the name
    exists), with its labels; what was saved, in words."""
    who = _manager(session, project_id)
    chosen = _targets(who, project_id, targets)
    plan = plan_upload(_loaded(who, name, data, mapping, chosen), kind=kind, targets=chosen)
    dataset = save_upload(who.store, project_id, dataset_name, plan)
    labels = ", ".join(plan.describe())
    return (
        f"Saved {dataset.name!r} version {dataset.version} with {plural(dataset.n_items, 'item')}"
        + (f" and {labels}." if labels else ".")
    )


def _label_plan(
    session: Session,
    dataset_id: int,
    criterion_id: int,
    name: str,
    data: bytes,
    mapping: ColumnMapping,
) -> tuple[Caller, DatasetRecord, UploadPlan]:
    dataset = caller(session).store.get_dataset(dataset_id)
    who = _manager(session, dataset.project_id)
    criterion = who.store.get_criterion(criterion_id)
    loaded = _loaded(who, name, data, mapping, {criterion.name: criterion})
    return who, dataset, plan_label_import(who.store, dataset, criterion, loaded)


def check_label_import(
    session: Session,
    dataset_id: int,
    criterion_id: int,
    name: str,
    data: bytes,
    mapping: ColumnMapping,
) -> UploadPlan:
    """Check a file of labels for a criterion on a saved dataset (every id must be in it)."""
    return _label_plan(session, dataset_id, criterion_id, name, data, mapping)[2]


def import_labels(
    session: Session,
    dataset_id: int,
    criterion_id: int,
    name: str,
    data: bytes,
    mapping: ColumnMapping,
) -> str:
    """Check the file again and import its labels; what was written, in words."""
    who, dataset, plan = _label_plan(session, dataset_id, criterion_id, name, data, mapping)
    written = import_plan(who.store, dataset, plan)
    return f"Imported {', '.join(written)} into {dataset.name}."


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
