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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import PurePath
from typing import Final

import numpy as np
import pandas as pd

from evalcore.data import (
    FIELD_ROLES,
    FRACTIONAL,
    JUDGE_FAILURE_WORDS,
    NULL_WORDS,
    ROLE_TEXT,
    ROLES,
    ColumnMapping,
    ColumnRole,
    Fractional,
    LabelSet,
    LoadedFile,
    Source,
    finer_scale,
    guess_roles,
    labels_long,
    load_file,
    mapping_from_roles,
    read_table,
    round_half,
    scale_text,
)
from evalcore.errors import (
    ConfigError,
    DataError,
    EvalcoreError,
    MissingColumnError,
    PermissionDeniedError,
    SessionEndedError,
    format_rows,
)
from evalcore.labels import PAIRWISE, Scale, infer_scale, normalize_label
from evalcore.store._records import CriterionRecord, DatasetKind, DatasetRecord
from evalcore.store._store import Store
from evalcore.words import plural

__all__ = [
    "MOSTLY_EMPTY",
    "CheckedImport",
    "CriterionPlan",
    "ImportPlan",
    "ImportResult",
    "JudgeColumn",
    "LabelImport",
    "UploadPlan",
    "apply_import",
    "check_import",
    "import_plan",
    "imported_run_name",
    "load_upload",
    "offending_rows",
    "plan_label_import",
    "plan_upload",
    "propose_import",
    "roles_from_table",
    "save_upload",
]

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)

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
        JudgeColumn(str(name), label_set.judges[name], label_set.reasons_of(str(name)))
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


# --- importing a file from its column roles ---------------------------------------------------------
#
# The one plan every surface applies (the Datasets page, ``evalcore dataset import``): the roles the
# guess proposes (``evalcore.data.guess_roles``), or the user's corrections of them, become one
# criterion per aspect (an existing criterion of that name, or a new one on the scale its labels
# suggest), one label set per annotator and one imported run per judge and criterion. Nothing is
# written until the whole file has been checked on those scales.

#: A response column empty on more than this share of the rows refuses the file.
MOSTLY_EMPTY: Final = 0.5


@dataclass(frozen=True)
class CriterionPlan:
    """Where the labels of one aspect go: an existing criterion of the project (``existing``) or a
    new one (``existing`` is ``None``) on ``scale`` (``None``: the labels suggest none; the check
    says why). ``fractional`` counts the fractional scores in its columns."""

    name: str
    kind: DatasetKind
    scale: Scale | None
    existing: CriterionRecord | None
    humans: tuple[str, ...]
    judges: tuple[str, ...]
    columns: tuple[str, ...]
    fractional: int = 0

    @property
    def is_new(self) -> bool:
        return self.existing is None

    def describe(self) -> str:
        """One line: the criterion, new or not, its scale, its annotators and judges."""
        labels = "labels not readable yet" if self.scale is None else scale_text(self.scale)
        state = "new criterion" if self.is_new else "existing criterion"
        people = ", ".join(self.humans) or "no annotators"
        judges = ", ".join(self.judges) or "no judges"
        return f"{self.name} ({state}, {labels}): annotators {people}; judges {judges}"


@dataclass(frozen=True)
class ImportPlan:
    """What importing a file would do, before anything is checked in full or written.

    ``roles`` says what each column holds; ``criteria`` where each aspect's labels go;
    ``fractional`` what happens to fractional scores (:data:`evalcore.data.FRACTIONAL`);
    ``dataset`` the saved dataset the labels go to (``None``: the file is a new dataset). Label
    columns without a criterion are listed in ``unplaced``: the user names one, or leaves them out.
    """

    source: str
    roles: tuple[ColumnRole, ...]
    kind: DatasetKind
    fractional: Fractional
    criteria: tuple[CriterionPlan, ...]
    n_rows: int
    dataset: DatasetRecord | None = None
    examples: tuple[str, ...] = ()
    unplaced_fractional: int = 0

    def columns_with(self, *roles: str) -> tuple[str, ...]:
        return tuple(r.column for r in self.roles if r.role in roles)

    @property
    def item_fields(self) -> tuple[str, ...]:
        """The extra columns the judge and the annotators see (besides prompt, response …)."""
        return self.columns_with("item_field")

    @property
    def metadata(self) -> tuple[str, ...]:
        return self.columns_with("metadata")

    @property
    def left_out(self) -> tuple[str, ...]:
        return self.columns_with("ignore")

    @property
    def unplaced(self) -> tuple[str, ...]:
        """Label columns that name no criterion (for labels one per row without a criterion
        column, the label column names it in its criterion cell)."""
        roles = {r.role for r in self.roles}
        long = {"annotator", "label"} <= roles and "criterion" not in roles
        return tuple(
            r.column
            for r in self.roles
            if (r.is_label or (long and r.role == "label")) and not r.criterion.strip()
        )

    @property
    def fractional_found(self) -> int:
        """How many label cells hold a fractional score (placed or not)."""
        placed = sum(c.fractional for c in self.criteria)
        return placed + self.unplaced_fractional

    def describe(self) -> list[str]:
        """The plan in lines of words: what the file becomes (the CLI prints them; the page shows
        them above its form)."""
        where = (
            f"labels for {self.dataset.name!r} version {self.dataset.version}"
            if self.dataset is not None
            else f"a {self.kind} dataset of {plural(self.n_rows, 'row')}"
        )
        lines = [f"{self.source}: {where}"]
        fields = [f"{r.role}: {r.column}" for r in self.roles if r.role in FIELD_ROLES]
        if self.dataset is None:
            lines.append("item fields: " + ", ".join([*fields, *self.item_fields] or ["none"]))
        lines += [f"criterion {c.describe()}" for c in self.criteria]
        if self.unplaced:
            lines.append(
                "labels without a criterion (name one, or leave them out): "
                + ", ".join(self.unplaced)
            )
        if self.fractional_found:
            lines.append(
                f"fractional scores: {self.fractional_found}; they are handled as chosen: "
                f"{FRACTIONAL[self.fractional]}"
            )
        if self.metadata:
            lines.append("metadata, kept and shown to nobody: " + ", ".join(self.metadata))
        if self.left_out:
            lines.append("left out: " + ", ".join(self.left_out))
        return lines

    def table(self) -> pd.DataFrame:
        """The roles as a table to correct: column, role (in words), criterion, name, example."""
        return pd.DataFrame(
            {
                "column": [r.column for r in self.roles],
                "role": [ROLE_TEXT[r.role] for r in self.roles],
                "criterion": [r.criterion for r in self.roles],
                "name": [r.name for r in self.roles],
                "example": list(self.examples) or [""] * len(self.roles),
            }
        )


def roles_from_table(table: pd.DataFrame) -> tuple[ColumnRole, ...]:
    """The roles of a table made by :meth:`ImportPlan.table` and edited (roles in words or names).

    >>> roles_from_table(pd.DataFrame({"column": ["a"], "role": ["human label"],
    ...                                "criterion": ["tone"], "name": [None]}))
    (ColumnRole(column='a', role='human', criterion='tone', name='', note=''),)
    """
    by_text = {text: role for role, text in ROLE_TEXT.items()} | {r: r for r in ROLES}
    found: list[ColumnRole] = []
    for row in table.to_dict("records"):
        column = str(row.get("column") or "")
        raw = str(row.get("role") or "").strip()
        if raw not in by_text:
            raise ConfigError(f"column {column!r}: there is no role {raw!r}")
        found.append(
            ColumnRole(
                column,
                by_text[raw],
                _cell(row.get("criterion")),
                _cell(row.get("name")),
            )
        )
    return tuple(found)


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value).strip()


def _numbers_and_words(
    frame: pd.DataFrame, columns: Sequence[str]
) -> tuple[list[float], list[str]]:
    numbers: list[float] = []
    words: list[str] = []
    for column in columns:
        for value in pd.unique(frame[column].dropna().to_numpy(dtype=object)):
            label = normalize_label(value)
            if isinstance(label, float):
                numbers.append(label)
            elif isinstance(label, str) and label.lower() not in NULL_WORDS | JUDGE_FAILURE_WORDS:
                words.append(label)
    return numbers, words


def _fractional_cells(frame: pd.DataFrame, columns: Sequence[str]) -> int:
    """How many cells of ``columns`` hold a number that is not whole (3.5)."""
    count = 0
    for column in columns:
        numbers = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
        finite = numbers[np.isfinite(numbers)]
        count += int((finite != np.floor(finite)).sum())
    return count


def _proposed_scale(
    numbers: list[float], words: list[str], kind: DatasetKind, fractional: Fractional
) -> Scale | None:
    """The scale a new criterion gets from its labels (``None`` when they suggest none)."""
    if kind == "pairwise":
        return PAIRWISE
    if numbers and words:
        return None
    if words:
        try:
            return infer_scale(words)
        except ValueError:
            return None
    if not numbers:
        return None
    whole = all(x.is_integer() for x in numbers)
    if whole or fractional == "refuse":
        low, high = math.floor(min(numbers)), math.ceil(max(numbers))
    elif fractional == "finer":
        return finer_scale(numbers)
    else:
        rounded = [round_half(x, fractional) for x in numbers]
        low, high = int(min(rounded)), int(max(rounded))
    if high - low > 100:
        return None
    return Scale.likert(low, max(high, low + 1))


def _fits(scale: Scale, numbers: list[float], words: list[str]) -> bool:
    """Whether a scale holds the labels (fractional scores once rounded: the user chooses how)."""
    try:
        for label in (*{round_half(x, "half-up") for x in numbers}, *words):
            scale.coerce(label)
    except ValueError:
        return False
    return True


def propose_import(
    source: Source,
    *,
    name: str,
    criteria: Sequence[CriterionRecord],
    roles: Sequence[ColumnRole] | None = None,
    fractional: Fractional = "refuse",
    dataset: DatasetRecord | None = None,
    frame: pd.DataFrame | None = None,
) -> ImportPlan:
    """The plan for a file: its column roles (``roles``, else :func:`evalcore.data.guess_roles`),
    one criterion per aspect (an existing one of ``criteria`` by name, else a new one on the scale
    its labels suggest) and what happens to fractional scores.

    Labels that name no aspect go to the one existing criterion of the dataset's kind whose scale
    holds them, when there is exactly one; else they wait for the user's choice. Only reading the
    file can fail here (a :class:`~evalcore.errors.DataError` naming it); everything else is
    checked by :func:`check_import`. ``dataset`` is the saved dataset labels go to (``None``: a new
    dataset); ``frame`` the table when it was read already.
    """
    table = read_table(source, name=name) if frame is None else frame
    found = tuple(roles) if roles is not None else guess_roles(table)
    by_role = {r.role for r in found}
    if dataset is not None:
        kind: DatasetKind = dataset.kind
    else:
        kind = "pairwise" if {"response_a", "response_b"} <= by_role else "pointwise"
    existing = {c.name.lower(): c for c in criteria}
    # a criterion named in another case is the existing one
    found = tuple(
        replace(r, criterion=existing[r.criterion.strip().lower()].name)
        if r.role in ("human", "judge", "reason", "label")
        and r.criterion.strip().lower() in existing
        else r
        for r in found
    )
    columns_of: dict[str, list[str]] = {}  # criterion → its label columns (or long-form rows)
    values_of: dict[str, tuple[list[float], list[str], int]] = {}
    members: dict[str, list[ColumnRole]] = {}
    long = {r.role: r for r in found if r.role in ("annotator", "label", "criterion")}
    if "annotator" in long and "label" in long:
        label, annotator = long["label"], long["annotator"]
        names = (
            table[long["criterion"].column].astype("string").str.strip()
            if "criterion" in long
            else pd.Series(label.criterion.strip(), index=table.index, dtype="string")
        )
        for value in pd.unique(names.dropna().to_numpy(dtype=object)):
            rows = table[names == value]
            numbers, words = _numbers_and_words(rows, [label.column])
            key = str(value)
            columns_of[key] = [label.column]
            values_of[key] = (numbers, words, _fractional_cells(rows, [label.column]))
            whos = pd.unique(rows[annotator.column].dropna().astype(str).to_numpy(dtype=object))
            members[key] = [ColumnRole(annotator.column, "human", key, str(w)) for w in whos]
    else:
        for role in found:
            if role.is_label:
                members.setdefault(role.criterion.strip(), []).append(role)
        for criterion, group in members.items():
            columns = [r.column for r in group]
            numbers, words = _numbers_and_words(table, columns)
            columns_of[criterion] = columns
            values_of[criterion] = (numbers, words, _fractional_cells(table, columns))
    if "" in members:  # labels that name no criterion: the one existing criterion that fits
        numbers, words, _count = values_of[""]
        fitting = [c for c in criteria if c.kind == kind and _fits(c.scale, numbers, words)]
        if len(fitting) == 1:
            name_ = fitting[0].name
            place = set(columns_of[""])
            found = tuple(
                replace(r, criterion=name_)
                if r.column in place and r.role in ("human", "judge", "reason", "label")
                else r
                for r in found
            )
            members.setdefault(name_, []).extend(
                replace(r, criterion=name_) for r in members.pop("")
            )
            columns_of.setdefault(name_, []).extend(columns_of.pop(""))
            previous = values_of.pop("")
            before = values_of.get(name_, ([], [], 0))
            values_of[name_] = (
                before[0] + previous[0],
                before[1] + previous[1],
                before[2] + previous[2],
            )
    plans: list[CriterionPlan] = []
    for criterion, group in members.items():
        if not criterion:
            continue
        numbers, words, count = values_of[criterion]
        record = existing.get(criterion.lower())
        scale = record.scale if record else _proposed_scale(numbers, words, kind, fractional)
        plans.append(
            CriterionPlan(
                record.name if record else criterion,
                record.kind if record else kind,
                scale,
                record,
                tuple(dict.fromkeys(r.name or r.column for r in group if r.role == "human")),
                tuple(dict.fromkeys(r.name or r.column for r in group if r.role == "judge")),
                tuple(dict.fromkeys(columns_of[criterion])),
                count,
            )
        )
    first = table.iloc[0] if len(table) else None
    examples = tuple(
        "" if first is None or pd.isna(first[r.column]) else str(first[r.column])[:60]
        for r in found
    )
    waiting = values_of.get("", ([], [], 0))[2]
    return ImportPlan(
        name, found, kind, fractional, tuple(plans), len(table), dataset, examples, waiting
    )


@dataclass(frozen=True)
class CheckedImport:
    """A plan checked against the whole file: what loading it gave, the items to save (ignored
    columns and rows without a response left out), and the label sets with their criteria."""

    plan: ImportPlan
    loaded: LoadedFile
    items: pd.DataFrame
    targets: tuple[tuple[LabelSet, CriterionPlan], ...]
    dropped_rows: tuple[int, ...] = ()

    def describe(self) -> list[str]:
        """What saving writes, one phrase per part ("12 human labels for fluency", ...)."""
        parts = [
            part
            for label_set, criterion in self.targets
            for part in _label_import(
                label_set, _provisional(criterion), self.plan.source
            ).describe()
        ]
        if self.dropped_rows:
            parts.append(
                f"{plural(len(self.dropped_rows), 'row')} without a response left out "
                f"({format_rows(list(self.dropped_rows))})"
            )
        return parts


def _provisional(criterion: CriterionPlan) -> CriterionRecord:
    """A stand-in record for a criterion the import will create (the check needs its scale)."""
    if criterion.existing is not None:
        return criterion.existing
    assert criterion.scale is not None
    return CriterionRecord(0, 0, criterion.name, criterion.kind, criterion.scale, "", _EPOCH)


def _check_roles(plan: ImportPlan) -> None:
    source = plan.source
    seen: dict[str, str] = {}
    for role in plan.roles:
        if role.role in FIELD_ROLES or role.role in ("annotator", "label", "criterion"):
            if role.role in seen:
                raise DataError(
                    f"{source}: the columns {seen[role.role]!r} and {role.column!r} are both "
                    f"marked {ROLE_TEXT[role.role]!r}; one column holds it",
                    source=source,
                    column=role.column,
                )
            seen[role.role] = role.column
    needed = ("response_a", "response_b") if plan.kind == "pairwise" else ("response",)
    missing = [f for f in needed if f not in seen]
    if plan.dataset is None and missing:  # the file itself first, then its labels
        words = missing[0].replace("_", " ")
        columns = ", ".join(repr(r.column) for r in plan.roles)
        raise MissingColumnError(
            f"{source}: no column is marked as the {words}, which the annotators and the judge "
            f"rate; the columns are: {columns}",
            source=source,
            column=missing[0],
        )
    if plan.unplaced:
        raise DataError(
            f"{source}: the label columns {', '.join(map(repr, plan.unplaced))} name no criterion; "
            "type the criterion they rate (an existing one, or a new name), or leave them out",
            source=source,
            column=plan.unplaced[0],
        )
    long = {"annotator", "label"} & set(seen)
    if long and long != {"annotator", "label"}:
        raise DataError(
            f"{source}: labels given one per row need both an annotator column and a label column",
            source=source,
        )


def _response_rows(plan: ImportPlan, items: pd.DataFrame) -> tuple[int, ...]:
    """The 1-based positions of the items without a response (for a wide file, its rows); refuses
    a file whose response column is missing or empty on more than :data:`MOSTLY_EMPTY` of its
    items, naming the columns it has."""
    source = plan.source
    needed = ("response_a", "response_b") if plan.kind == "pairwise" else ("response",)
    by_role: dict[str, str] = {r.role: r.column for r in plan.roles}
    columns = ", ".join(repr(r.column) for r in plan.roles)
    empty = np.zeros(len(items), dtype=bool)
    for needed_field in needed:
        words = needed_field.replace("_", " ")
        column = by_role.get(needed_field)
        if column is None or needed_field not in items.columns:
            raise MissingColumnError(
                f"{source}: no column is marked as the {words}, which the annotators and the "
                f"judge rate; the columns are: {columns}",
                source=source,
                column=needed_field,
            )
        text = items[needed_field].astype("string").str.strip()
        blank = (text.isna() | text.eq("")).to_numpy(dtype=bool, na_value=True)
        if len(items) and blank.sum() > MOSTLY_EMPTY * len(items):
            where = [int(i) + 1 for i in np.flatnonzero(blank)]
            raise DataError(
                f"{source}: the {words} column {column!r} is empty on {len(where)} of "
                f"{len(items)} rows ({format_rows(where)}); a dataset needs its responses. Is "
                f"another column the {words}? The columns are: {columns}",
                source=source,
                column=column,
                rows=where[:20],
            )
        empty |= blank
    return tuple(int(i) + 1 for i in np.flatnonzero(empty))


def _without(label_set: LabelSet, keep: pd.Index) -> LabelSet:
    reasons = (
        None
        if label_set.reasons is None
        else {j: s.loc[keep] for j, s in label_set.reasons.items()}
    )
    explanations = None if label_set.explanations is None else label_set.explanations.loc[keep]
    return LabelSet(
        label_set.metric,
        label_set.kind,
        label_set.scale,
        label_set.human.loc[keep],
        label_set.judges.loc[keep],
        explanations,
        reasons,
    )


def check_import(plan: ImportPlan, source: Source) -> CheckedImport:
    """Check ``plan`` against the whole file (``source``, as read for the plan) on the criteria's
    scales, after the fractional choice. Writes nothing.

    Refuses, naming the file and the columns or rows (:class:`~evalcore.errors.DataError` and its
    subclasses): a role given to two columns, labels without a criterion, a new dataset whose
    response column is missing or empty on more than half of its rows (rows with no response
    otherwise are left out, with their labels, and said), a criterion of the other kind, fractional
    scores that a criterion's scale does not hold (with ``"finer"``, an existing criterion on whole
    numbers), and anything loading the file refuses (a label off its scale, repeated ids …).
    """
    _check_roles(plan)
    name = plan.source
    for criterion in plan.criteria:
        if criterion.kind != plan.kind:
            raise DataError(
                f"{name}: criterion {criterion.name!r} is {criterion.kind}, but the dataset is "
                f"{plan.kind}; give the labels of {', '.join(criterion.columns)} another criterion",
                source=name,
            )
        whole = criterion.scale is not None and all(
            isinstance(x, float) and x.is_integer() for x in criterion.scale.labels
        )
        if plan.fractional == "finer" and criterion.fractional and criterion.existing and whole:
            raise DataError(
                f"{name}: criterion {criterion.name!r} exists with the scale "
                f"{scale_text(criterion.existing.scale)}, which has no room for the "
                f"{criterion.fractional} fractional scores of {', '.join(criterion.columns)}; "
                "round them, or send them to a new criterion (another name)",
                source=name,
            )
    mapping = mapping_from_roles(plan.roles, kind=plan.kind if plan.kind == "pairwise" else None)
    scales = {c.name: c.scale for c in plan.criteria if c.scale is not None}
    loaded = load_file(
        source,
        name=name,
        mapping=mapping,
        scales=scales or None,
        fractional=None if plan.fractional == "refuse" else plan.fractional,
    )
    items = loaded.items.drop(columns=[c for c in plan.left_out if c in loaded.items.columns])
    dropped: tuple[int, ...] = ()
    label_sets = {s.metric: s for s in loaded.label_sets}
    if plan.dataset is None:
        dropped = _response_rows(plan, items)
        if dropped:
            keep_rows = np.ones(len(items), dtype=bool)
            keep_rows[[r - 1 for r in dropped]] = False
            items = items[keep_rows].reset_index(drop=True)
            keep = pd.Index(items["item_id"], dtype=object)
            label_sets = {m: _without(s, keep) for m, s in label_sets.items()}
    targets = []
    for criterion in plan.criteria:
        label_set = label_sets.get(criterion.name)
        if label_set is None:
            continue
        if criterion.scale is None:  # the labels suggested none: keep what loading inferred
            criterion = replace(criterion, scale=label_set.scale)
        _label_import(label_set, _provisional(criterion), name)  # the kind and scale agree
        targets.append((label_set, criterion))
    return CheckedImport(plan, loaded, items, tuple(targets), dropped)


@dataclass(frozen=True)
class ImportResult:
    """What :func:`apply_import` wrote: the dataset, the criteria it created, the label parts."""

    dataset: DatasetRecord
    created: tuple[str, ...]
    written: tuple[str, ...]
    new_dataset: bool

    @property
    def message(self) -> str:
        d = self.dataset
        head = (
            f"Saved {d.name!r} version {d.version} with {plural(d.n_items, 'item')}"
            if self.new_dataset
            else f"Imported into {d.name!r} version {d.version}"
        )
        made = f"; new criteria: {', '.join(self.created)}" if self.created else ""
        labels = f" and {', '.join(self.written)}" if self.written else ""
        return f"{head}{labels}{made}."


def apply_import(
    store: Store, project_id: int, checked: CheckedImport, *, dataset_name: str | None = None
) -> ImportResult:
    """Write a checked import: the dataset (a new version when ``dataset_name`` exists; the plan's
    saved dataset otherwise), the new criteria, then each label set (one transaction each).

    The column roles are kept with the dataset (which columns are item fields, which are
    metadata, which were labels). A failure part-way says what was written before it.
    """
    plan = checked.plan
    target = plan.dataset
    if target is None:
        if not (dataset_name or "").strip():
            raise ConfigError(f"{plan.source}: the new dataset needs a name.")
        roles = {r.column: r.role for r in plan.roles}
        dataset = store.save_dataset(
            project_id,
            str(dataset_name).strip(),
            checked.items,
            kind=plan.kind,
            source_filename=plan.source,
            layout=checked.loaded.layout,
            column_roles=roles,
        )
    else:
        dataset = target
        known = set(store.items_frame(dataset.id)["item_id"].astype(str))
        for label_set, _criterion in checked.targets:
            unknown = [str(i) for i in label_set.human.index if str(i) not in known]
            if unknown:
                raise DataError(
                    f"{plan.source}: dataset {dataset.name!r} has no item {unknown[0]!r} (the "
                    f"file has {plural(len(unknown), 'item')} the dataset lacks); nothing was "
                    "imported.",
                    source=plan.source,
                    item_id=unknown[0],
                )
    created: list[str] = []
    imports: list[LabelImport] = []
    for label_set, criterion in checked.targets:
        record = criterion.existing
        if record is None:
            assert criterion.scale is not None
            record = store.create_criterion(
                project_id, criterion.name, kind=criterion.kind, scale=criterion.scale
            )
            created.append(record.name)
        imports.append(_label_import(label_set, record, plan.source))
    upload = UploadPlan(plan.source, checked.loaded.layout, plan.kind, None, tuple(imports))
    written = import_plan(store, dataset, upload)
    return ImportResult(dataset, tuple(created), tuple(written), target is None)
