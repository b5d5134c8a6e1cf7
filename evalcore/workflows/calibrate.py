"""Judge runs against people: the Calibrate page's workflow, for the project and for a file.

Project mode: :func:`choices` lists what can be compared; a :class:`Selection` (dataset, criterion,
runs, human policy, baseline run) names one comparison, and every view of it (:func:`project_view`,
:func:`disagreements`, :func:`cell`, :func:`item`, :func:`slices`, :func:`alt_test`,
:func:`self_agreement`, :func:`thresholds`, :func:`pairwise`, :func:`rates`) checks the caller,
reads the data's version, and answers from the server's memo when nothing changed. The numbers are
the one engine's (:func:`evalcore.report.calibrate_runs`).

File mode: :func:`read_files` reads uploaded files (any layout evalcore.data reads, or a column
mapping for a plain table) and calibrates every metric in them; nothing is saved.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

import pandas as pd

from evalcore import report as R
from evalcore.data import ColumnMapping, load_file, read_table, suggest_mapping
from evalcore.errors import EvalcoreError, LayoutError, PermissionDeniedError
from evalcore.labels import format_label
from evalcore.metrics import CalibrationReport
from evalcore.report import (
    CHANCE_COLUMN,
    CONSTANT_COLUMN,
    HUMAN_POLICIES,
    HUMANS_COLUMN,
    MIN_SHARED,
    Calibration,
    CalibrationData,
    DataVersion,
    ItemDetail,
    SideBySide,
    combine,
    confusion_heatmaps,
    policy_name,
)
from evalcore.store import (
    DEFAULT_THRESHOLDS,
    ROLE_PERMISSIONS,
    CriterionRecord,
    DatasetRecord,
    JudgeRunRecord,
)
from evalcore.words import plural
from evalcore.workflows._session import Caller, Session, caller

__all__ = [
    "CHANCE_COLUMN",
    "CONSTANT_COLUMN",
    "HUMANS_COLUMN",
    "HUMAN_POLICIES",
    "MIN_SHARED",
    "N_BOOT",
    "Calibration",
    "CalibrationReport",
    "Choices",
    "ColumnMapping",
    "Estimate",
    "FileResult",
    "Headline",
    "HeadlineRow",
    "ItemDetail",
    "ItemView",
    "ProjectView",
    "Selection",
    "SideBySide",
    "alt_test",
    "cell",
    "choices",
    "combine",
    "confusion_heatmaps",
    "disagreements",
    "file_columns",
    "file_headline",
    "headline",
    "item",
    "pairwise",
    "policy_name",
    "project_view",
    "rates",
    "read_files",
    "scores",
    "self_agreement",
    "short_name",
    "slices",
    "thresholds",
]

#: Bootstrap resamples of every interval on the pages (seeded: the same data gives the same page).
N_BOOT: Final = 1000
SEED: Final = 0


# --- what can be compared --------------------------------------------------------------------------


@dataclass(frozen=True)
class Choices:
    """A project's datasets that have runs, its criteria, and its runs."""

    datasets: tuple[DatasetRecord, ...]
    criteria: Mapping[int, CriterionRecord]
    runs: tuple[JudgeRunRecord, ...]

    @property
    def default_dataset(self) -> int | None:
        """The dataset of the project's first criterion that has runs."""
        if not self.runs:
            return None
        return min(self.runs, key=lambda r: (r.criterion_id, r.created_at, r.id)).dataset_id

    def criteria_of(self, dataset_id: int) -> list[int]:
        return sorted({r.criterion_id for r in self.runs if r.dataset_id == dataset_id})

    def runs_of(self, dataset_id: int, criterion_id: int) -> list[JudgeRunRecord]:
        """The runs of a (dataset, criterion), oldest first."""
        mine = (
            r for r in self.runs if r.dataset_id == dataset_id and r.criterion_id == criterion_id
        )
        return sorted(mine, key=lambda r: (r.created_at, r.id))


def choices(session: Session, project_id: int) -> Choices:
    who = caller(session)
    runs = tuple(who.store.list_runs(project_id=project_id))
    datasets = tuple(
        d for d in who.store.list_datasets(project_id) if any(r.dataset_id == d.id for r in runs)
    )
    criteria = {c.id: c for c in who.store.list_criteria(project_id)}
    return Choices(datasets, criteria, runs)


def run_label(run: JudgeRunRecord) -> str:
    """How a run is offered in the pickers: its name, when, and its status if not done."""
    extra = "" if run.status == "done" else f" · {run.status}"
    return f"{run.name} · {run.created_at:%Y-%m-%d}{extra}"


# --- one comparison ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """One comparison: the runs of a (dataset, criterion) against the humans combined by
    ``policy``, each compared with the ``baseline`` run (the first run when ``None``)."""

    dataset_id: int
    criterion_id: int
    runs: tuple[int, ...]
    policy: str = "majority"
    baseline: int | None = None
    min_shared: int = MIN_SHARED


def _loader(who: Caller) -> R.CalibrationLoader:
    # the loader reads with the trusted store; every caller of it was checked just before
    server = who.server
    return server.memo.get(("calibration-loader",), lambda: R.CalibrationLoader(server.store))


def _data(who: Caller, sel: Selection) -> tuple[CalibrationData, DataVersion]:
    who.store.authorize("read", dataset_id=sel.dataset_id, criterion_id=sel.criterion_id)
    for run_id in sel.runs:
        who.store.authorize("read", run_id=run_id)
    loader = _loader(who)
    version = loader.version(sel.dataset_id, sel.criterion_id, sel.runs)
    data, version = loader.load(sel.dataset_id, sel.criterion_id, sel.runs, version=version)
    return data, version


def _settle(sel: Selection, data: CalibrationData) -> Selection:
    """The policy and baseline actually used: a policy the scale allows, a baseline among the runs."""
    policies = R.available_policies(data.scale, data.annotators)
    policy = sel.policy if sel.policy in policies else "majority"
    baseline = sel.baseline if sel.baseline in sel.runs else (sel.runs[0] if sel.runs else None)
    return replace(sel, policy=policy, baseline=baseline)


def _ceiling(
    who: Caller, data: CalibrationData, version: DataVersion, min_shared: int
) -> R.HumanCeiling | bool:
    if min_shared < 1:
        raise EvalcoreError(f"min_shared must be at least 1 (got {min_shared})")

    def make() -> R.HumanCeiling | bool:
        if data.human.shape[1] < 2:
            return False
        found = R.human_ceiling(
            data.human, data.scale, labels=data.labels, n_boot=N_BOOT, seed=SEED,
            min_shared=min_shared,
        )  # fmt: skip
        return False if found is None else found

    key = ("ceiling", version.dataset_id, version.criterion_id, version.humans, min_shared)
    return who.server.memo.get(key, make)  # type: ignore[no-any-return]


def _calibrated(who: Caller, sel: Selection) -> tuple[Calibration, Selection, DataVersion]:
    data, version = _data(who, sel)
    sel = _settle(sel, data)

    def make() -> Calibration:
        return R.calibrate_runs(
            data,
            policy=sel.policy,
            baseline=sel.baseline,
            ceiling=_ceiling(who, data, version, sel.min_shared),
            n_boot=N_BOOT,
            seed=SEED,
        )

    found = who.server.memo.get(("calibration", version, sel), make)
    return found, sel, version


@dataclass(frozen=True)
class ProjectView:
    """A comparison as the page shows it: ``calibration`` is ``None`` until someone labelled."""

    selection: Selection
    policies: tuple[str, ...]
    calibration: Calibration | None
    criterion: CriterionRecord
    dataset: DatasetRecord
    titles: Mapping[int, str] = field(default_factory=dict)


def project_view(session: Session, sel: Selection) -> ProjectView:
    """Every run of the selection against the humans (with intervals, the ceiling, baselines)."""
    who = caller(session)
    data, _version = _data(who, sel)
    settled = _settle(sel, data)
    policies = tuple(R.available_policies(data.scale, data.annotators))
    titles = {r.info.id: r.info.title for r in data.runs}
    if data.human.shape[1] == 0:
        return ProjectView(settled, policies, None, data.criterion, data.dataset, titles)
    calibration, settled, _ = _calibrated(who, sel)
    return ProjectView(settled, policies, calibration, data.criterion, data.dataset, titles)


def cell(
    session: Session, sel: Selection, run_id: int, human: object, judge: object
) -> pd.DataFrame:
    """The items of one cell of a run's confusion matrix (people said ``human``, the run ``judge``)."""
    calibration, _, _ = _calibrated(caller(session), sel)
    return R.cell_items(calibration, run_id, human, judge)


def disagreements(
    session: Session, sel: Selection, wrong: int | None = None, right: int | None = None
) -> pd.DataFrame:
    """Items where runs disagree with the humans, worst first; ``wrong``/``right`` keep the items a
    run got wrong / right."""
    who = caller(session)
    calibration, settled, version = _calibrated(who, sel)
    key = ("disagreements", version, settled, wrong, right)
    return who.server.memo.get(key, lambda: R.disagreements(calibration, wrong=wrong, right=right))


@dataclass(frozen=True)
class ItemView:
    """One item in full (``detail``), and the humans' label of it under the comparison's policy."""

    detail: ItemDetail
    human: str
    policy: str


def item(session: Session, sel: Selection, item_pk: int) -> ItemView:
    """One item in full: its text, every human label with its comment, every run's verdict."""
    who = caller(session)
    calibration, _, _ = _calibrated(who, sel)
    data = calibration.data
    detail = R.item_detail(who.store, item_pk, data.criterion.id, [r.info for r in data.runs])
    human = calibration.human.get(item_pk)
    shown = "none" if human is None or human != human else format_label(human)
    return ItemView(detail, shown, calibration.policy_name)


@dataclass(frozen=True)
class SliceView:
    columns: tuple[str, ...]
    metrics: Mapping[str, str]
    table: pd.DataFrame | None = None
    figure: Any = None
    text: pd.DataFrame | None = None
    #: why some metadata columns are not offered (too many distinct values, or one)
    note: str = ""


def slices(session: Session, sel: Selection, column: str | None, metric: str | None) -> SliceView:
    """The metrics per value of a metadata column (``None``: only the choices). Only columns with
    few values are offered (``R.slice_options``). The ``(all)`` row is the main table's
    calibration: same engine, resamples and seed."""
    who = caller(session)
    calibration, settled, version = _calibrated(who, sel)
    dataset = calibration.data.dataset
    every = list(dataset.metadata_columns)
    options = who.server.memo.get(
        ("slice-options", version, dataset.id),
        lambda: R.slice_options(R.load_metadata(who.store, dataset.id, every), every),
    )
    columns, note = options.columns, options.note
    names = dict(R.slice_metrics(calibration.kind))
    if column not in columns or not names:
        return SliceView(columns, names, note=note)
    metric = metric if metric in names else next(iter(names))

    def make() -> pd.DataFrame:
        data = calibration.data.with_metadata(
            R.load_metadata(who.store, calibration.data.dataset.id, [column])
        )
        c = calibration
        return R.slice_table(
            data, column, policy=c.policy, baseline=c.baseline, n_boot=c.n_boot, seed=c.seed
        )

    table = who.server.memo.get(("slices", version, settled, column), make)
    figure = R.slice_figure(table, metric=metric, name=names[metric])
    return SliceView(columns, names, table, figure, R.slice_text(table, metric), note)


@dataclass(frozen=True)
class AltTestView:
    """The Alt-Test of one run: the verdict, the curve over ε and the per-annotator table."""

    result: Any
    figure: Any
    table: pd.DataFrame


ALT_TEST_SCORINGS: Final = {"accuracy": "accuracy (share equal)", "neg_rmse": "−RMSE"}


def default_scoring(calibration: Calibration) -> str:
    return R.default_scoring(calibration.data.scale)


def alt_test(
    session: Session | None,
    sel: Selection | None,
    run_id: int,
    scoring: str,
    epsilon: float,
    *,
    calibration: Calibration | None = None,
) -> AltTestView:
    """Can the judge stand in for one of the annotators? (needs three annotators or more). A file's
    calibration (``calibration``, no session) is tested as it is."""
    if calibration is None:
        assert session is not None
        assert sel is not None
        who = caller(session)
        calibration, settled, version = _calibrated(who, sel)
        key = ("alt-test", version, settled, run_id, scoring, epsilon)
        return who.server.memo.get(key, lambda: _alt(calibration, run_id, scoring, epsilon))
    return _alt(calibration, run_id, scoring, epsilon)


def _alt(calibration: Calibration, run_id: int, scoring: str, epsilon: float) -> AltTestView:
    data = calibration.data
    result = R.run_alt_test(data, run_id, scoring=scoring, epsilon=epsilon)
    curve = R.run_alt_test_curve(data, run_id, scoring=scoring)
    return AltTestView(result, R.alt_test_figure(curve, epsilon=epsilon), R.alt_test_table(result))


def self_agreement(session: Session, sel: Selection) -> pd.DataFrame | None:
    """The judge's agreement with itself across the samples of each run and across repeated runs of
    one version, beside the humans' own; ``None`` when no run kept samples or was repeated."""
    who = caller(session)
    calibration, _, version = _calibrated(who, sel)
    data = calibration.data
    entries = []
    for run in data.runs:

        def load(run_id: int = run.info.id) -> pd.DataFrame:
            return R.load_samples(who.server.store, run_id, data.scale, data.items.index)

        samples = who.server.memo.get(("samples", run.info.id, version.run(run.info.id)), load)
        found = R.self_agreement(samples, calibration.human, data.scale, labels=calibration.labels)
        if found is not None:
            entries.append((run.info.title, found))
    for name, group in R.repeated_runs(data.runs):
        found = R.self_agreement(
            R.runs_as_samples(group), calibration.human, data.scale, labels=calibration.labels
        )
        if found is not None:
            entries.append((f"{name} ({len(group)} runs)", found))
    if not entries:
        return None
    ceiling = calibration.ceiling
    alpha = None if ceiling is None else ceiling.krippendorff_alpha
    return R.self_agreement_table(entries, kind=calibration.kind, ceiling=alpha)


@dataclass(frozen=True)
class RateView:
    """The rate people would give the items only the judge labelled, for one run."""

    title: str
    positive: str
    n_labelled: int
    n_unlabelled: int
    table: pd.DataFrame | None
    notes: tuple[str, ...] = ()
    error: str | None = None


def _rate(calibration: Calibration, run_id: int, title: str) -> RateView:
    try:
        found = R.run_rate_estimate(calibration.data, run_id, calibration.human)
    except EvalcoreError as exc:
        return RateView(title, "", 0, 0, None, error=f"{title}: {exc}")
    ppi = found.ppi
    return RateView(
        title, str(found.positive), ppi.n_labelled, ppi.n_unlabelled, R.rate_table(found),
        tuple(found.notes),
    )  # fmt: skip


def _score(calibration: Calibration, run_id: int, title: str) -> RateView:
    try:
        found = R.run_score_estimate(calibration.data, run_id, calibration.human)
    except EvalcoreError as exc:
        return RateView(title, "", 0, 0, None, error=f"{title}: {exc}")
    first = found.shares[0][0]
    return RateView(
        title, "", first.n_labelled, first.n_unlabelled, R.score_table(found), tuple(found.notes)
    )


def scores(session: Session, sel: Selection) -> list[RateView]:
    """Any scale: what people would say about the items only the judge labelled (each label's
    share and, on ordinal scales, the mean score), labelled-only and by PPI++, for every run."""
    calibration, _, _ = _calibrated(caller(session), sel)
    return [_score(calibration, r.info.id, r.title) for r in calibration.compared]


def rates(session: Session, sel: Selection) -> list[RateView]:
    """Binary criteria: labelled-only, Rogan–Gladen and PPI++ for every compared run."""
    calibration, _, _ = _calibrated(caller(session), sel)
    return [_rate(calibration, r.info.id, r.title) for r in calibration.compared]


@dataclass(frozen=True)
class ThresholdView:
    positive: str
    figure: Any
    table: pd.DataFrame


def _interval(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None or value != value:
        return "–"
    return f"{value:.3f}" + ("" if ci is None else f" [{ci[0]:.2f}, {ci[1]:.2f}]")


def thresholds(session: Session, sel: Selection) -> ThresholdView:
    """Binary criteria: balanced accuracy against the score threshold, TPR/TNR and the
    bias-corrected pass rate of every compared run."""
    calibration, _, _ = _calibrated(caller(session), sel)
    analyses = [R.binary_analysis(calibration, r.info.id) for r in calibration.compared]
    sweeps = [(a.run.title, a.points, a.best) for a in analyses if a.points]
    positive = analyses[0].positive if analyses else ""
    rows = {}
    for a in analyses:
        pr = a.pass_rate
        rate = (
            "–"
            if pr is None
            else f"{pr.theta:.1%}" + ("" if pr.ci is None else f" [{pr.ci[0]:.1%}, {pr.ci[1]:.1%}]")
        )
        rows[a.run.title] = {
            "TPR (judge's labels)": _interval(a.tpr, a.tpr_ci),
            "TNR (judge's labels)": _interval(a.tnr, a.tnr_ci),
            "best threshold": "–" if a.best is None else f"{a.best.threshold:.3f}",
            "balanced accuracy there": "–" if a.best is None else f"{a.best.balanced_accuracy:.3f}",
            "unlabelled items judged": str(a.n_unlabelled),
            f"judge's {positive} rate there": "–" if pr is None else f"{pr.p_obs:.1%}",
            f"bias-corrected {positive} rate": rate,
            "note": a.note or "",
        }
    figure = R.threshold_figure(sweeps) if sweeps else None
    return ThresholdView(str(positive), figure, pd.DataFrame(rows))


def pairwise(session: Session, sel: Selection) -> pd.DataFrame:
    """Pairwise criteria: win rates by humans and judge, position bias, human ties."""
    calibration, _, _ = _calibrated(caller(session), sel)
    return R.pairwise_table(
        [R.pairwise_analysis(calibration, r.info.id) for r in calibration.compared]
    )


def matrix_cell(selection: Any, panel_runs: Sequence[int]) -> tuple[int, str, str] | None:
    """The (run, human label, judge label) of a click on a confusion matrix, or None."""
    return R.cell_from_selection(selection, list(panel_runs))


def label_text(value: Any) -> str:
    return format_label(value)


# --- files -------------------------------------------------------------------------------------------


def _reader(session: Session) -> Caller:
    """A caller who may calibrate a file: one whose role reads calibrations, in a project or by
    their own role (a file's calibration reads nothing from the store and saves nothing, so a
    member of no project may use it too, as :func:`~evalcore.workflows.identity.may_open` says)."""
    try:
        return caller(session, anywhere="read")
    except PermissionDeniedError:
        who = caller(session)
        if "read" not in ROLE_PERMISSIONS[who.actor.role]:
            raise
        return who


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_columns(session: Session, name: str, data: bytes) -> list[str]:
    """The columns of a plain table (for the mapping form)."""
    who = _reader(session)
    frame = who.server.memo.get(
        ("file-table", name, _digest(data)), lambda: read_table(data, name=name)
    )
    return [str(c) for c in frame.columns]


@dataclass(frozen=True)
class FileResult:
    """What one uploaded file gave: its calibrations, or that it needs a column mapping.

    ``guessed`` says, for a plain table read without a mapping, which label columns were guessed
    from their names (:func:`evalcore.data.suggest_mapping`); ``None`` when none was guessed."""

    name: str
    calibrations: tuple[Calibration, ...] = ()
    needs_mapping: bool = False
    guessed: str | None = None


def _guess(name: str, data: bytes) -> tuple[ColumnMapping, str] | None:
    """A plain table's label columns guessed from their names, and the guess in words; ``None``
    unless some criterion gets both human and judge columns."""
    mapping = suggest_mapping(read_table(data, name=name))
    groups = [(g.metric, len(g.human), len(g.judge)) for g in mapping.groups]
    if mapping.human and mapping.judge:
        groups.append((mapping.metric, len(mapping.human), len(mapping.judge)))
    groups = [g for g in groups if g[1] and g[2]]
    if not groups:
        return None
    said = "; ".join(
        f"{metric}: {plural(h, 'human column')}, {plural(j, 'judge column')}"
        for metric, h, j in groups
    )
    return mapping, said


def read_files(
    session: Session,
    files: Sequence[tuple[str, bytes]],
    *,
    mappings: Mapping[str, ColumnMapping] | None = None,
    policy: str = "majority",
    scale: str | None = None,
) -> list[FileResult]:
    """Calibrate every metric of every file (``mappings`` by file name for plain tables;
    ``scale`` a declared scale such as ``"1,2,3,4,5"``). Nothing is saved. A file's error is
    raised as the evalcore error it is, naming the file."""
    who = _reader(session)
    declared = R.parse_scale(scale)
    found: list[FileResult] = []
    for name, data in files:
        mapping = (mappings or {}).get(name)
        key = (
            "file",
            name,
            _digest(data),
            mapping,
            policy,
            None if declared is None else declared.labels,
        )

        def make(
            name: str = name, data: bytes = data, mapping: ColumnMapping | None = mapping
        ) -> FileResult:
            guessed = None
            try:
                loaded = load_file(data, name=name, mapping=mapping, scales=declared)
            except LayoutError:
                if mapping is not None:
                    raise
                guess = _guess(name, data)
                if guess is None:
                    return FileResult(name, needs_mapping=True)
                try:
                    loaded = load_file(data, name=name, mapping=guess[0], scales=declared)
                except EvalcoreError:  # the guess does not read: the user names the columns
                    return FileResult(name, needs_mapping=True)
                guessed = guess[1]
            calibrations = tuple(
                R.calibrate_runs(d, policy=policy, n_boot=N_BOOT, seed=SEED)
                for d in R.file_data(loaded, declared=declared is not None)
            )
            return FileResult(name, calibrations, guessed=guessed)

        found.append(who.server.memo.get(key, make))
    return found


def file_mapping(
    human: Sequence[str], judge: Sequence[str], item: str | None
) -> ColumnMapping | None:
    """The mapping of a plain table's label columns (``None`` until both sides have one)."""
    if not human or not judge:
        return None
    return ColumnMapping(item_id=item, human=tuple(human), judge=tuple(judge), metric="label")


# --- the headline: each run's answer first ---------------------------------------------------------------

#: A run's name is cut to this many characters where space is short (the full name beside it).
SHORT_NAME: Final = 32


def short_name(title: str, limit: int = SHORT_NAME) -> str:
    """``title`` cut to ``limit`` characters with an ellipsis (the full name goes in a tooltip)."""
    return title if len(title) <= limit else title[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class Estimate:
    """A value with its 95 % interval (``None`` when not computed), and how people read it."""

    value: float | None
    ci: tuple[float, float] | None = None

    @property
    def text(self) -> str:
        """E.g. ``"0.71 [0.63, 0.78]"``, or ``"–"``."""
        if self.value is None or self.value != self.value:
            return "–"
        if self.ci is None or self.ci[0] != self.ci[0]:
            return f"{self.value:.2f}"
        return f"{self.value:.2f} [{self.ci[0]:.2f}, {self.ci[1]:.2f}]"


def _estimate(report: CalibrationReport | None, attr: str) -> Estimate:
    if report is None:
        return Estimate(None)
    raw = getattr(report, attr, None)
    value = None if raw is None or raw != raw else float(raw)
    ci = report.ci.get(attr)
    return Estimate(value, None if ci is None else (float(ci[0]), float(ci[1])))


@dataclass(frozen=True)
class HeadlineRow:
    """One run's answer: its balanced accuracy and kappa with intervals, its coverage, and the
    light against the project's thresholds with the words that say which bound decided it."""

    run_id: int
    title: str
    short: str
    balanced_accuracy: Estimate
    kappa: Estimate
    n_compared: int
    n_human: int
    light: str
    words: str
    checks: str


@dataclass(frozen=True)
class Headline:
    """The top of the Calibrate page: a row per selected run, against the humans' own agreement
    (``ceiling_kappa``: mean pairwise kappa, ``ceiling_alpha``: Krippendorff's alpha; ``None``
    with fewer than two annotators) and a constant judge (always the humans' most frequent label)."""

    rows: tuple[HeadlineRow, ...]
    kappa_name: str
    thresholds: Mapping[str, float]
    ceiling_kappa: Estimate | None
    ceiling_alpha: Estimate | None
    constant_balanced_accuracy: float | None
    constant_kappa: float | None
    ceiling: R.HumanCeiling | None = None
    #: whose thresholds these are, as the rule names them
    whose: str = "of this project"

    def coefficients(self) -> pd.DataFrame | None:
        """The annotators' agreement among all of them at once (Fleiss' κ, Gwet's AC1/AC2,
        Krippendorff's α): value, analytic standard error and 95 % intervals."""
        if self.ceiling is None or not self.ceiling.coefficients:
            return None

        def pair(ci: tuple[float, float] | None) -> str:
            return "–" if ci is None or ci[0] != ci[0] else f"[{ci[0]:.3f}, {ci[1]:.3f}]"

        return pd.DataFrame(
            [
                {
                    "coefficient": c.name,
                    "value": f"{c.value:.3f}",
                    "standard error": "–" if c.se is None or c.se != c.se else f"{c.se:.3f}",
                    "interval (analytic)": pair(c.ci),
                    "interval (bootstrap)": pair(c.boot_ci),
                    "items": c.n_items,
                }
                for c in self.ceiling.coefficients
            ]
        )

    def leave_one_out(self) -> pd.DataFrame | None:
        """The ceiling without each annotator: α without them and the change (``None`` with
        fewer than three annotators kept)."""
        if self.ceiling is None or not self.ceiling.leave_one_out:
            return None
        return pd.DataFrame(
            [
                {
                    "left out": x.annotator,
                    "α without them": "–" if x.value is None else f"{x.value:.3f}",
                    "change": "–" if x.change is None else f"{x.change:+.3f}",
                }
                for x in self.ceiling.leave_one_out
            ]
        )

    @property
    def rule(self) -> str:
        """The light's rule and the thresholds, in one line."""
        shown = ", ".join(f"{k.replace('_', ' ')} ≥ {v:g}" for k, v in self.thresholds.items())
        return (
            f"Thresholds {self.whose}: {shown or 'none'}. Green: every 95% interval wholly at "
            "or above its threshold; amber: an interval straddles its threshold, the data cannot "
            "tell; red: an interval wholly below it."
        )


def headline(session: Session, sel: Selection) -> Headline | None:
    """Each selected run's balanced accuracy and kappa with intervals and its light against the
    project's thresholds, beside the human ceiling and a constant judge; ``None`` until someone
    labelled the criterion."""
    who = caller(session)
    data, _version = _data(who, sel)
    if data.human.shape[1] == 0:
        return None
    calibration, _, _ = _calibrated(who, sel)
    project = who.store.get_project(data.dataset.project_id)
    return _headline(calibration, project.thresholds, "of this project")


def file_headline(calibration: Calibration) -> Headline | None:
    """The same answer for one metric of an uploaded file (a calibration :func:`read_files`
    returned): each judge column against the default thresholds, a file having no project;
    ``None`` without a human label."""
    if calibration.data.human.shape[1] == 0:
        return None
    return _headline(calibration, DEFAULT_THRESHOLDS, "by default (a file has no project)")


def _headline(calibration: Calibration, thresholds: Mapping[str, float], whose: str) -> Headline:
    kappa = R.threshold_metric("cohen_kappa", calibration.kind)
    rows = []
    for run in calibration.runs:
        found = R.verdict(run.report, thresholds)
        rows.append(
            HeadlineRow(
                run_id=run.info.id,
                title=run.title,
                short=short_name(run.title),
                balanced_accuracy=_estimate(run.report, "accuracy_balanced"),
                kappa=_estimate(run.report, kappa[0]),
                n_compared=run.coverage.n_compared,
                n_human=run.coverage.n_human,
                light=found.light,
                words=found.words,
                checks=found.summary,
            )
        )
    ceiling = calibration.ceiling
    references = calibration.references()
    constant = None if references is None else references.constant
    return Headline(
        rows=tuple(rows),
        kappa_name=kappa[1],
        thresholds=dict(thresholds),
        ceiling_kappa=None if ceiling is None else Estimate(ceiling.mean_pairwise_kappa),
        ceiling_alpha=None
        if ceiling is None
        else Estimate(ceiling.krippendorff_alpha, ceiling.alpha_ci),
        constant_balanced_accuracy=None if constant is None else constant.get("accuracy_balanced"),
        constant_kappa=None if constant is None else constant.get(kappa[0]),
        ceiling=ceiling,
        whose=whose,
    )
