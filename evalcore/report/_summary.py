"""A project at a glance: each criterion's best judge run against the project's thresholds, and the
history of every template version.

The verdict is a traffic light (:func:`verdict`), one rule for every check (:func:`light_of`) read
from the metric's 95 % interval:

- **green**: the interval's lower bound is at or above the threshold (shown to be met);
- **red**: the interval's upper bound is below the threshold (clearly missed);
- **amber**: the interval straddles the threshold, so the data cannot tell;
- **none**: nothing to judge (no run compared with people yet).

Without an interval (no resamples), the interval read is the value ± :data:`AMBER_MARGIN`. A run's
light is red when any check is red, green when every check is green, amber otherwise; its
:attr:`Verdict.words` say which check made it so.

Threshold names are those of the project settings (``balanced_accuracy``, ``cohen_kappa``,
``weighted_f1``, ``accuracy``, ``spearman``, ``kendall_tau``, or any report attribute such as
``cohen_kappa_linear``). ``cohen_kappa`` is read as the kappa the report shows: quadratic-weighted on
ordinal scales, unweighted otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from evalcore.errors import EvalcoreError, MetricError
from evalcore.metrics import CalibrationReport, headline_kappa, metric_def
from evalcore.report._calibration import (
    Calibration,
    RunCalibration,
    available_policies,
    calibrate_runs,
)
from evalcore.report._load import DataVersion, data_version, load_calibration_data
from evalcore.store import CriterionRecord, DatasetRecord, ProjectRecord, Store

__all__ = [
    "AMBER_MARGIN",
    "LIGHT_WORDS",
    "SUMMARY_METRICS",
    "CriterionSummary",
    "Light",
    "ProjectSummary",
    "ThresholdCheck",
    "Verdict",
    "history_frame",
    "interval_or_margin",
    "light_of",
    "project_calibrations",
    "project_summary",
    "project_version",
    "threshold_metric",
    "verdict",
]

Light = Literal["green", "amber", "red", "none"]

#: The declared metrics a summary and the history show (the kappa is the kind's headline kappa).
SUMMARY_METRICS: tuple[str, ...] = ("accuracy_balanced", "cohen_kappa", "f1_score_balanced")

#: Without an interval, a light reads the value ± this as its interval.
AMBER_MARGIN = 0.05


def threshold_metric(name: str, kind: str) -> tuple[str, str]:
    """(report attribute, people's name) that a project threshold ``name`` applies to, from the
    declared metric table (its keys and aliases); an undeclared name is read as a report attribute.

    >>> threshold_metric("cohen_kappa", "ordinal"), threshold_metric("cohen_kappa", "binary")
    (('cohen_kappa_quadratic', "Cohen's kappa (quadratic)"), ('cohen_kappa', "Cohen's kappa"))
    """
    if name == "cohen_kappa":
        declared = headline_kappa(kind)
        return declared.key, declared.name
    try:
        declared = metric_def(name)
    except MetricError:
        return name, name.replace("_", " ")
    return declared.key, declared.name


@dataclass(frozen=True)
class ThresholdCheck:
    """One project threshold against one report, lit by :func:`light_of` (see the module)."""

    threshold_name: str
    metric: str
    name: str
    threshold: float
    value: float | None
    ci: tuple[float, float] | None
    light: Light

    @property
    def met(self) -> bool:
        """Shown to be met: the whole interval is at or above the threshold (green)."""
        return self.light == "green"

    @property
    def close(self) -> bool:
        """Not ruled out: green or amber."""
        return self.light in ("green", "amber")

    @property
    def bounds(self) -> tuple[float, float] | None:
        """The interval the light was read from (:func:`interval_or_margin`)."""
        return None if self.value is None else interval_or_margin(self.value, self.ci)

    def describe(self) -> str:
        """E.g. ``"balanced accuracy 0.71 [0.64, 0.79] straddles 0.70 (amber)"``."""
        if self.value is None:
            return f"{self.name}: not computed (threshold {self.threshold:.2f})"
        shown = f"{self.value:.2f}"
        if self.ci is not None:
            shown += f" [{self.ci[0]:.2f}, {self.ci[1]:.2f}]"
        else:
            shown += f" (no interval: ±{AMBER_MARGIN:g})"
        return f"{self.name} {shown} {LIGHT_WORDS[self.light]} {self.threshold:.2f} ({self.light})"


#: How each light relates an interval to its threshold, in the words a check uses.
LIGHT_WORDS: Mapping[str, str] = {
    "green": "is wholly at or above",
    "amber": "straddles",
    "red": "is wholly below",
    "none": "cannot be compared with",
}


def interval_or_margin(value: float, ci: tuple[float, float] | None) -> tuple[float, float]:
    """The interval a light reads: ``ci``, or without one ``value`` ± :data:`AMBER_MARGIN`.

    >>> interval_or_margin(0.8, (0.7, 0.9)), interval_or_margin(0.8, None)
    ((0.7, 0.9), (0.75, 0.8500000000000001))
    """
    if ci is not None:
        return ci
    return value - AMBER_MARGIN, value + AMBER_MARGIN


#: Bounds this near a threshold count as touching it (floating-point noise, e.g. 0.85 - 0.05).
_TOUCH = 1e-9


def light_of(low: float, high: float, threshold: float) -> Light:
    """The one rule of every light: green when the interval's lower bound is at or above the
    threshold, red when its upper bound is below it, amber when it straddles it.

    >>> light_of(0.72, 0.88, 0.7), light_of(0.64, 0.79, 0.7), light_of(0.55, 0.69, 0.7)
    ('green', 'amber', 'red')
    >>> light_of(0.7, 0.8, 0.7), light_of(0.6, 0.7, 0.7)  # touching counts as not below
    ('green', 'amber')
    """
    if low >= threshold - _TOUCH:
        return "green"
    if high < threshold - _TOUCH:
        return "red"
    return "amber"


@dataclass(frozen=True)
class Verdict:
    """The traffic light of one judge run against a project's thresholds, and the checks behind it:
    red when any check is red, green when every check is, amber otherwise."""

    light: Light
    checks: tuple[ThresholdCheck, ...]

    @property
    def summary(self) -> str:
        """The checks in one line, as people read them."""
        if self.light == "none":
            return "no run compared with people yet" if not self.checks else "nothing computed"
        return "; ".join(c.describe() for c in self.checks)

    @property
    def words(self) -> str:
        """The light in one sentence that says why, e.g. ``"amber: Cohen's kappa's interval
        [0.52, 0.71] straddles 0.60, so the data cannot tell whether it is met"``."""
        if self.light == "none":
            return self.summary
        if not self.checks:
            return "green: this project sets no threshold"
        if self.light == "green":
            return "green: every interval is wholly at or above its threshold"
        worst = [c for c in self.checks if c.light == self.light]
        told = ", ".join(_told(c) for c in worst)
        if self.light == "red":
            return f"red: {told}, so the threshold is clearly missed"
        return f"amber: {told}, so the data cannot tell whether it is met"


def _told(check: ThresholdCheck) -> str:
    bounds = check.bounds
    if bounds is None:
        return f"{check.name} was not computed"
    interval = f"[{bounds[0]:.2f}, {bounds[1]:.2f}]"
    return f"{check.name}'s interval {interval} {LIGHT_WORDS[check.light]} {check.threshold:.2f}"


def verdict(report: CalibrationReport | None, thresholds: Mapping[str, float]) -> Verdict:
    """Judge a report against ``thresholds`` (see the module for the rule).

    >>> r = CalibrationReport.from_counts([[8, 2], [1, 9]], labels=["pass", "fail"], n_boot=0)
    >>> # balanced accuracy 0.85, no interval: read as [0.80, 0.90]
    >>> [verdict(r, {"balanced_accuracy": t}).light for t in (0.8, 0.85, 0.91)]
    ['green', 'amber', 'red']
    """
    if report is None:
        return Verdict("none", ())
    checks: list[ThresholdCheck] = []
    for key, threshold in thresholds.items():
        attr, name = threshold_metric(key, report.kind)
        raw = getattr(report, attr, None)
        value = None if raw is None or math.isnan(float(raw)) else float(raw)
        ci = report.ci.get(attr)
        if ci is not None and (math.isnan(ci[0]) or math.isnan(ci[1])):
            ci = None
        light: Light = "none"
        if value is not None:
            light = light_of(*interval_or_margin(value, ci), float(threshold))
        checks.append(ThresholdCheck(key, attr, name, float(threshold), value, ci, light))
    lights = {c.light for c in checks}
    if "red" in lights:
        overall: Light = "red"
    elif lights <= {"green"}:
        overall = "green"
    elif lights == {"none"}:
        overall = "none"
    else:
        overall = "amber"
    return Verdict(overall, tuple(checks))


@dataclass(frozen=True, eq=False)
class CriterionSummary:
    """One (criterion, dataset) of a project: its calibration, best run and verdict."""

    criterion: CriterionRecord
    dataset: DatasetRecord
    calibration: Calibration
    best: RunCalibration | None
    verdict: Verdict


@dataclass(frozen=True, eq=False)
class ProjectSummary:
    """Every criterion of a project with recorded runs, against the project's thresholds."""

    project: ProjectRecord
    policy: str
    thresholds: dict[str, float]
    criteria: tuple[CriterionSummary, ...]

    def table(self) -> pd.DataFrame:
        """The summary as people read it: one row per (criterion, dataset), text cells."""
        rows = []
        for s in self.criteria:
            best = s.best
            report = None if best is None else best.report
            kappa = headline_kappa(s.calibration.kind).key
            ceiling = s.calibration.ceiling
            rows.append(
                {
                    "criterion": s.criterion.name,
                    "dataset": f"{s.dataset.name} v{s.dataset.version}",
                    "verdict": s.verdict.light,
                    "best run": "–" if best is None else best.title,
                    "n": 0 if report is None else report.n,
                    **{
                        metric_def(key).name: _with_ci(
                            report, kappa if key == "cohen_kappa" else key
                        )
                        for key in SUMMARY_METRICS
                    },
                    "human ceiling (α / κ)": _ceiling_text(ceiling),
                    "human policy": s.calibration.policy_name,
                    "checks": s.verdict.summary,
                }
            )
        return pd.DataFrame(rows)


def _with_ci(report: CalibrationReport | None, attr: str) -> str:
    if report is None:
        return "–"
    value = getattr(report, attr, None)
    if value is None or math.isnan(value):
        return "–"
    ci = report.ci.get(attr)
    if ci is None or math.isnan(ci[0]) or math.isnan(ci[1]):
        return f"{value:.3f}"
    return f"{value:.3f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def _ceiling_text(ceiling: object) -> str:
    alpha = getattr(ceiling, "krippendorff_alpha", None)
    kappa = getattr(ceiling, "mean_pairwise_kappa", None)
    if alpha is None and kappa is None:
        return "–"

    def show(x: float | None) -> str:
        return "–" if x is None or math.isnan(x) else f"{x:.2f}"

    fragile = " (fragile)" if getattr(ceiling, "fragility", None) is not None else ""
    return f"{show(alpha)} / {show(kappa)}{fragile}"


def project_calibrations(
    store: Store,
    project_id: int,
    *,
    policy: str = "majority",
    criteria: Sequence[str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> list[Calibration]:
    """Calibrate every run of every (criterion, dataset) pair of a project that has runs.

    The baseline of each pair is its oldest run. A policy that does not apply to a criterion (median
    of a pairwise choice) falls back to majority for that criterion. ``criteria`` keeps only the
    criteria named (unknown names raise :class:`~evalcore.errors.EvalcoreError`).
    """
    known = store.list_criteria(project_id)
    if criteria is not None:
        names = {c.name for c in known}
        unknown = [c for c in criteria if c not in names]
        if unknown:
            raise EvalcoreError(
                f"no criterion named {unknown[0]!r} in this project "
                f"(criteria: {', '.join(sorted(names)) or 'none'})"
            )
        known = [c for c in known if c.name in criteria]
    runs = store.list_runs(project_id=project_id)
    out: list[Calibration] = []
    for criterion in known:
        pairs = sorted({r.dataset_id for r in runs if r.criterion_id == criterion.id})
        for dataset_id in pairs:
            mine = sorted(
                (r for r in runs if r.criterion_id == criterion.id and r.dataset_id == dataset_id),
                key=lambda r: (r.created_at, r.id),
            )
            data = load_calibration_data(store, dataset_id, criterion.id, [r.id for r in mine])
            usable = (
                policy if policy in available_policies(data.scale, data.annotators) else "majority"
            )
            out.append(calibrate_runs(data, policy=usable, n_boot=n_boot, seed=seed))
    return out


def project_version(store: Store, project_id: int) -> tuple[DataVersion, ...]:
    """The :class:`DataVersion` of every (dataset, criterion) of a project that has runs: what
    :func:`project_calibrations` reads changes exactly when this does."""
    pairs: dict[tuple[int, int], list[int]] = {}
    for run in store.list_runs(project_id=project_id):
        pairs.setdefault((run.dataset_id, run.criterion_id), []).append(run.id)
    return tuple(
        data_version(store, dataset, criterion, sorted(ids))
        for (dataset, criterion), ids in sorted(pairs.items())
    )


def project_summary(
    store: Store,
    project_id: int,
    *,
    policy: str = "majority",
    calibrations: Sequence[Calibration] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> ProjectSummary:
    """For each criterion of a project: its best run (highest balanced accuracy), the headline
    metrics with intervals, the human ceiling and the verdict against ``project.thresholds``."""
    project = store.get_project(project_id)
    if calibrations is None:
        calibrations = project_calibrations(
            store, project_id, policy=policy, n_boot=n_boot, seed=seed
        )
    summaries = []
    for calibration in calibrations:
        best = calibration.best()
        summaries.append(
            CriterionSummary(
                criterion=calibration.data.criterion,
                dataset=calibration.data.dataset,
                calibration=calibration,
                best=best,
                verdict=verdict(None if best is None else best.report, project.thresholds),
            )
        )
    return ProjectSummary(project, policy, project.thresholds, tuple(summaries))


def history_frame(
    calibrations: Sequence[Calibration], *, include_imported: bool = False
) -> pd.DataFrame:
    """The headline metrics of every template version's runs over time, for the history chart.

    One row per run with a report (imported judge labels, which have no template version, only with
    ``include_imported``): ``criterion``, ``dataset``, ``run``, ``template`` (``"(imported)"``
    for imported labels), ``version``, ``model``, ``series`` (template and model: one line per series),
    ``when`` (the template version's creation time, else the run's), ``version_created_at``,
    ``run_created_at``, ``n`` and each of :data:`SUMMARY_METRICS` (the report's keys; under
    ``cohen_kappa`` the headline kappa: quadratic-weighted on ordinal scales) with their interval
    bounds (``…_low``/``…_high``).
    """
    rows = []
    for calibration in calibrations:
        kappa = headline_kappa(calibration.kind).key
        for run in calibration.compared:
            report = run.report
            assert report is not None
            info = run.info
            if info.template is None and not include_imported:
                continue
            template = info.template or "(imported)"
            row = {
                "criterion": calibration.data.criterion.name,
                "dataset": calibration.data.dataset.name,
                "run_id": info.id,
                "run": run.title,
                "template": template,
                "version": info.version,
                "model": info.model,
                "series": f"{template} · {info.model}" if info.model else template,
                "when": pd.Timestamp(info.when),
                "version_created_at": None
                if info.version_created_at is None
                else pd.Timestamp(info.version_created_at),
                "run_created_at": pd.Timestamp(info.created_at),
                "n": report.n,
            }
            for key in SUMMARY_METRICS:
                attr = kappa if key == "cohen_kappa" else key
                value = getattr(report, attr)
                ci = report.ci.get(attr)
                row[key] = value
                row[f"{key}_low"] = None if ci is None else ci[0]
                row[f"{key}_high"] = None if ci is None else ci[1]
            rows.append(row)
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame = frame.sort_values(["criterion", "series", "when", "run_id"], kind="stable")
        frame = frame.reset_index(drop=True)
    return frame
