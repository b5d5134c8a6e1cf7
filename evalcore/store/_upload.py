"""Putting a file into the store: load it on the chosen criteria's scales, plan, check, then write.

One path serves both a dataset upload (items, plus any labels the file carries) and a label import
into a dataset already saved:

1. :func:`load_upload` reads the file with :func:`evalcore.data.load_file`, each label set that has a
   target criterion on that criterion's scale (so a label off the scale is an error naming its row);
2. :func:`plan_upload` (a new dataset) or :func:`plan_label_import` (a saved one) checks everything
   the store could refuse and returns an :class:`UploadPlan`; nothing is written yet. Every label set
   in the file must either go to a criterion or be left out on purpose: labels are never dropped
   silently;
3. :func:`save_upload` writes the dataset (one transaction) and then :func:`import_plan` writes each
   label import (one transaction each); a failure part-way says exactly what was saved.

Judge label columns become finished judge runs named :func:`imported_run_name`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath

import pandas as pd

from evalcore.data import ColumnMapping, LabelSet, LoadedFile, Source, labels_long, load_file
from evalcore.errors import (
    ConfigError,
    DataError,
    EvalcoreError,
    PermissionDeniedError,
    SessionEndedError,
)
from evalcore.store._records import CriterionRecord, DatasetKind, DatasetRecord
from evalcore.store._store import Store
from evalcore.words import plural

__all__ = [
    "JudgeColumn",
    "LabelImport",
    "UploadPlan",
    "import_plan",
    "imported_run_name",
    "load_upload",
    "offending_rows",
    "plan_label_import",
    "plan_upload",
    "save_upload",
]

#: Where a label set goes: a criterion, or ``None`` to leave it out on purpose.
Targets = Mapping[str, CriterionRecord | None]


def imported_run_name(judge: str) -> str:
    """The name of the judge run a judge label column becomes.

    >>> imported_run_name("gpt-4o")
    'imported: gpt-4o'
    """
    return f"imported: {judge}"


@dataclass(frozen=True)
class JudgeColumn:
    """One judge's labels (indexed by the file's item ids) and its reasons, when the file has them."""

    name: str
    labels: pd.Series
    reasons: pd.Series | None = None

    @property
    def run_name(self) -> str:
        return imported_run_name(self.name)


@dataclass(frozen=True)
class LabelImport:
    """The labels of one label set of the file, bound for one criterion."""

    metric: str
    criterion: CriterionRecord
    human: pd.DataFrame  # long form: item_id, annotator, label
    judges: tuple[JudgeColumn, ...] = ()

    @property
    def n_human(self) -> int:
        return len(self.human)

    def describe(self) -> list[str]:
        """What this import writes, one phrase per part ("12 human labels for fluency", ...)."""
        human = f"{plural(self.n_human, 'human label')} for {self.criterion.name}"
        judges = [f"judge {j.name} for {self.criterion.name}" for j in self.judges]
        return [human, *judges] if self.n_human else judges


@dataclass(frozen=True)
class UploadPlan:
    """What a checked upload writes: the items (``None`` for a label import), then the labels.

    ``left_out`` names the label sets the user chose not to import, so a page can say so.
    """

    source: str
    layout: str
    kind: DatasetKind
    items: pd.DataFrame | None
    imports: tuple[LabelImport, ...] = ()
    left_out: tuple[str, ...] = field(default_factory=tuple)

    def describe(self) -> list[str]:
        """One phrase per part of the labels this plan writes (empty when it writes none)."""
        return [part for each in self.imports for part in each.describe()]

    def label_counts(self) -> pd.DataFrame:
        """How many labels each annotator and each judge gives (the index), per criterion."""
        rows = [
            (each.criterion.name, str(who), int(n))
            for each in self.imports
            for who, n in each.human.groupby("annotator", sort=True).size().items()
        ] + [
            (each.criterion.name, f"{judge.name} (judge)", int(judge.labels.notna().sum()))
            for each in self.imports
            for judge in each.judges
        ]
        return pd.DataFrame(rows, columns=["criterion", "from", "labels"]).set_index("from")


def _has_labels(label_set: LabelSet) -> bool:
    return bool(label_set.human.notna().any().any() or label_set.judges.notna().any().any())


def load_upload(
    source: Source,
    *,
    name: str,
    mapping: ColumnMapping | None = None,
    targets: Targets | None = None,
) -> LoadedFile:
    """Read an uploaded file, each label set with a target criterion on that criterion's scale.

    Without targets the scales are inferred from the labels (good for a preview and for choosing the
    targets); with them a label off a criterion's scale raises an error naming its row.
    """
    scales = {m: c.scale for m, c in (targets or {}).items() if c is not None}
    return load_file(source, name=name, mapping=mapping, scales=scales or None)


def _label_import(label_set: LabelSet, criterion: CriterionRecord, source: str) -> LabelImport:
    if label_set.kind != criterion.kind:
        raise DataError(
            f"{source}: the labels {label_set.metric!r} are {label_set.kind}, but criterion "
            f"{criterion.name!r} is {criterion.kind}.",
            source=source,
        )
    if label_set.scale != criterion.scale:
        raise ConfigError(
            f"{source}: the labels {label_set.metric!r} were not read on the scale of criterion "
            f"{criterion.name!r}; load the file with load_upload(..., targets=...) first."
        )
    judges = tuple(
        JudgeColumn(str(name), label_set.judges[name], label_set.explanations)
        for name in label_set.judges.columns
    )
    return LabelImport(label_set.metric, criterion, labels_long(label_set), judges)


def _imports(
    loaded: LoadedFile, targets: Targets
) -> tuple[tuple[LabelImport, ...], tuple[str, ...]]:
    """The label imports of a loaded file; every label set with labels needs a decision."""
    imports: list[LabelImport] = []
    left_out: list[str] = []
    for label_set in loaded.label_sets:
        if label_set.metric not in targets:
            if not _has_labels(label_set):
                continue
            raise DataError(
                f"{loaded.source}: choose the criterion the labels {label_set.metric!r} go to, or "
                "choose not to import them; nothing was saved.",
                source=loaded.source,
            )
        criterion = targets[label_set.metric]
        if criterion is None:
            left_out.append(label_set.metric)
        else:
            imports.append(_label_import(label_set, criterion, loaded.source))
    unknown = sorted(set(targets) - set(loaded.metrics))
    if unknown:
        raise ConfigError(f"{loaded.source} has no labels named {', '.join(map(repr, unknown))}.")
    return tuple(imports), tuple(left_out)


def plan_upload(loaded: LoadedFile, *, kind: DatasetKind, targets: Targets) -> UploadPlan:
    """Check a loaded file as a new dataset of ``kind`` with its labels going to ``targets``.

    Raises a :class:`~evalcore.errors.DataError` naming the file when a pairwise dataset lacks its
    two responses, when a criterion's kind is not the dataset's, or when a label set of the file has
    no decision (a criterion, or ``None`` for "do not import").
    """
    if kind == "pairwise":
        missing = [c for c in ("response_a", "response_b") if c not in loaded.items.columns]
        if missing:
            raise DataError(
                f"{loaded.source}: a pairwise dataset needs the columns response_a and response_b; "
                f"choose the {' and '.join(missing)} column.",
                source=loaded.source,
            )
    for criterion in targets.values():
        if criterion is not None and criterion.kind != kind:
            raise DataError(
                f"{loaded.source}: criterion {criterion.name!r} is {criterion.kind}, but the "
                f"dataset is {kind}.",
                source=loaded.source,
            )
    imports, left_out = _imports(loaded, targets)
    return UploadPlan(loaded.source, loaded.layout, kind, loaded.items, imports, left_out)


def plan_label_import(
    store: Store, dataset: DatasetRecord, criterion: CriterionRecord, loaded: LoadedFile
) -> UploadPlan:
    """Check a file of labels for ``criterion`` on the saved ``dataset`` (every id must be in it).

    The file's label set named after the criterion is the one imported (map the columns with
    ``ColumnMapping(metric=criterion.name, ...)``).
    """
    label_set = loaded.label_set(criterion.name) if criterion.name in loaded.metrics else None
    if label_set is None:
        raise DataError(
            f"{loaded.source} has no labels for {criterion.name!r}.", source=loaded.source
        )
    known = set(store.items_frame(dataset.id)["item_id"].astype(str))
    unknown = [str(i) for i in label_set.human.index if str(i) not in known]
    if unknown:
        raise DataError(
            f"{loaded.source}: dataset {dataset.name!r} has no item {unknown[0]!r} "
            f"(the file has {plural(len(unknown), 'item')} the dataset lacks); nothing was imported.",
            source=loaded.source,
            item_id=unknown[0],
        )
    imports, _ = _imports(loaded, {criterion.name: criterion})
    return UploadPlan(loaded.source, loaded.layout, dataset.kind, None, imports)


def import_plan(store: Store, dataset: DatasetRecord, plan: UploadPlan) -> list[str]:
    """Write a plan's labels into ``dataset``, one transaction per part; returns what was written.

    When a part fails, the :class:`~evalcore.errors.EvalcoreError` raised says which parts were
    written before it (they stay: each was complete).
    """
    done: list[str] = []
    try:
        for each in plan.imports:
            parts = iter(each.describe())
            if each.n_human:
                store.import_labels(dataset.id, each.criterion.id, each.human)
                done.append(next(parts))
            for judge, part in zip(each.judges, parts, strict=True):
                store.import_judge_labels(
                    dataset.id, each.criterion.id, judge.run_name, judge.labels, judge.reasons
                )
                done.append(part)
    except (PermissionDeniedError, SessionEndedError):
        raise  # who may do what is not a failure of the file
    except EvalcoreError as exc:
        saved = "; ".join(done) or "no labels"
        raise EvalcoreError(
            f"{dataset.name!r} version {dataset.version} has {saved} from {plan.source}, but the "
            f"next label import failed: {exc}. Import the remaining labels under Labels."
        ) from exc
    return done


def save_upload(store: Store, project_id: int, name: str, plan: UploadPlan) -> DatasetRecord:
    """Save a planned upload as dataset ``name`` (a new version when the name exists), then its labels."""
    if plan.items is None:
        raise ConfigError("this plan imports labels into a saved dataset; use import_plan")
    dataset = store.save_dataset(
        project_id,
        name,
        plan.items,
        kind=plan.kind,
        source_filename=plan.source,
        layout=plan.layout,
    )
    import_plan(store, dataset, plan)
    return dataset


def offending_rows(
    exc: EvalcoreError, data: bytes, frame: pd.DataFrame | None, *, name: str
) -> pd.DataFrame | None:
    """The rows of an uploaded file that an error names, as they are in it (at most 20).

    CSV, TSV, JSON and Parquet errors count data rows from 1 (``frame`` is the table as read);
    JSONL errors name lines of the file, shown as text. ``None`` when the error names no row.

    >>> err = DataError("bad", rows=[2])
    >>> offending_rows(err, b"", pd.DataFrame({"x": ["a", "b"]}), name="f.csv").to_dict()
    {'x': {2: 'b'}}
    """
    rows = [r for r in exc.rows if r >= 1][:20]
    if PurePath(name).suffix.lower() in (".jsonl", ".ndjson") and rows:
        lines = data.decode("utf-8", errors="replace").split("\n")
        shown = [(r, lines[r - 1][:500]) for r in rows if r <= len(lines)]
        return pd.DataFrame(shown, columns=["line", "text"]).set_index("line")
    inside = [r for r in rows if frame is not None and r <= len(frame)]
    if frame is None or not inside:
        return None
    out = frame.iloc[[r - 1 for r in inside]].copy()
    out.index = pd.Index(inside, name="row")
    return out
