"""What a manager reads and exports: the project's summary with traffic lights, the history of
template versions, the human-level rates, and every export (each recorded in the audit log).

Every function checks the caller first; the project's calibrations are kept in the server's memo by
the data's version, so a second reader costs nothing and a new label or result is seen at once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import pandas as pd

from evalcore import report as R
from evalcore.errors import EvalcoreError
from evalcore.metrics import metric_def
from evalcore.report import (
    EXPORT_FORMATS,
    HUMAN_POLICIES,
    SUMMARY_METRICS,
    Calibration,
    CriterionSummary,
    ProjectSummary,
    mime_type,
    policy_name,
)
from evalcore.workflows._session import Caller, Session, caller
from evalcore.workflows.calibrate import N_BOOT

__all__ = [
    "EXPORT_FORMATS",
    "HUMAN_POLICIES",
    "SUMMARY_METRICS",
    "CriterionSummary",
    "Export",
    "ProjectReport",
    "export",
    "exports",
    "history",
    "metric_names",
    "mime_type",
    "policy_name",
    "project_report",
    "raters",
    "rates",
    "scores",
]


def _calibrations(who: Caller, project_id: int, policy: str) -> list[Calibration]:
    who.store.authorize("read", project_id=project_id)
    version = R.project_version(who.store, project_id)
    key = ("project-calibrations", project_id, policy, version)
    return who.server.memo.get(  # type: ignore[no-any-return]
        key,
        lambda: R.project_calibrations(who.server.store, project_id, policy=policy, n_boot=N_BOOT),
    )


@dataclass(frozen=True)
class ProjectReport:
    """The Reports page's content: every (criterion, dataset) calibrated, and the summary."""

    policy: str
    calibrations: tuple[Calibration, ...]
    summary: ProjectSummary | None

    @property
    def empty(self) -> bool:
        return not self.calibrations


def project_report(session: Session, project_id: int, policy: str = "majority") -> ProjectReport:
    """Every criterion's best judge against the project's thresholds, with intervals."""
    who = caller(session)
    policy = policy if policy in HUMAN_POLICIES else "majority"
    if not who.store.list_runs(project_id=project_id):
        return ProjectReport(policy, (), None)
    found = _calibrations(who, project_id, policy)
    summary = R.project_summary(who.store, project_id, policy=policy, calibrations=found)
    return ProjectReport(policy, tuple(found), summary)


def metric_names() -> dict[str, str]:
    """The metrics the history can show, by key, with their display names."""
    return {key: metric_def(key).name for key in SUMMARY_METRICS}


def history(report: ProjectReport, metric: str) -> tuple[pd.DataFrame, Any]:
    """The runs of every template version over time (a table and its figure) for ``metric``."""
    frame = R.history_frame(report.calibrations)
    names = metric_names()
    metric = metric if metric in names else SUMMARY_METRICS[0]
    figure = None if frame.empty else R.history_figure(frame, metric=metric, name=names[metric])
    return frame, figure


def rates(report: ProjectReport) -> tuple[pd.DataFrame | None, list[str]]:
    """For each binary criterion: the rate people would give the items only its best run labelled
    (labelled only, Rogan–Gladen, PPI++ side by side), and notes for those that could not be had."""
    frames, notes = [], []
    for c in report.calibrations:
        best = c.best() if c.kind == "binary" else None
        if best is None:
            continue
        try:
            found = R.run_rate_estimate(c.data, best.info.id, c.human)
        except EvalcoreError as exc:
            notes.append(str(exc))
            continue
        frame = R.rate_table(found)
        frame.insert(0, "judge run", best.title)
        frame.insert(0, "label", found.positive)
        frame.insert(0, "criterion", c.data.criterion.name)
        frames.append(frame)
    return (pd.concat(frames, ignore_index=True) if frames else None), notes


def scores(report: ProjectReport) -> tuple[pd.DataFrame | None, list[str]]:
    """For each criterion that is not binary: each label's share and, on ordinal scales, the mean
    score people would give the items only its best run labelled (labelled only and PPI++)."""
    frames, notes = [], []
    for c in report.calibrations:
        best = c.best() if c.kind != "binary" else None
        if best is None:
            continue
        try:
            found = R.run_score_estimate(c.data, best.info.id, c.human)
        except EvalcoreError as exc:
            notes.append(str(exc))
            continue
        frame = R.score_table(found)
        frame.insert(0, "judge run", best.title)
        frame.insert(0, "criterion", c.data.criterion.name)
        frames.append(frame)
    return (pd.concat(frames, ignore_index=True) if frames else None), notes


def raters(report: ProjectReport) -> pd.DataFrame | None:
    """Each criterion's agreement among all its annotators at once (Fleiss' κ, Gwet's AC1/AC2,
    Krippendorff's α) with the analytic standard error and 95 % intervals."""
    rows = []
    for c in report.calibrations:
        for r in () if c.ceiling is None else c.ceiling.coefficients:
            rows.append(
                {
                    "criterion": c.data.criterion.name,
                    "coefficient": r.name,
                    "value": round(r.value, 3),
                    "standard error": None if r.se is None else round(r.se, 3),
                    "interval": "–" if r.ci is None else f"[{r.ci[0]:.3f}, {r.ci[1]:.3f}]",
                    "items": r.n_items,
                    "annotators": r.n_raters,
                }
            )
    return pd.DataFrame(rows) if rows else None


# --- exports --------------------------------------------------------------------------------------

EXPORTS: Final = ("html", "human-labels", "judge-results", "metrics", "vertex")


@dataclass(frozen=True)
class Export:
    """A file to download: its name, type and what to ask for it (:func:`export`)."""

    kind: str
    file_name: str
    mime: str
    criterion: str | None
    fmt: str
    dataset_id: int | None = None


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "project"


def exports(
    session: Session,
    project_id: int,
    *,
    criterion: str | None = None,
    fmt: str = "csv",
    dataset_id: int | None = None,
) -> dict[str, Export]:
    """The downloads of the Reports page (not yet made: :func:`export` makes one when asked)."""
    who = caller(session)
    project = who.store.get_project(project_id)
    fmt = fmt if fmt in EXPORT_FORMATS else "csv"
    stem = _slug(project.name) + ("" if criterion is None else f"-{_slug(criterion)}")
    found = {
        "html": Export("html", f"{stem}-report.html", "text/html", criterion, "html"),
        **{
            kind: Export(kind, f"{stem}-{kind}.{fmt}", mime_type(fmt), criterion, fmt)
            for kind in ("human-labels", "judge-results", "metrics")
        },
    }
    if dataset_id is not None:
        name = _slug(who.store.get_dataset(dataset_id).name)
        found["vertex"] = Export(
            "vertex", f"{name}-vertex.{fmt}", mime_type(fmt), None, fmt, dataset_id
        )
    return found


def export(session: Session, project_id: int, what: Export, policy: str = "majority") -> bytes:
    """Make one export now, as the caller (checked now, with ``export``), and record it in the
    audit log."""
    who = caller(session)
    who.store.authorize("export", project_id=project_id)
    chosen = [
        c
        for c in _calibrations(who, project_id, policy)
        if what.criterion is None or c.data.criterion.name == what.criterion
    ]
    data = _make(who, project_id, what, policy, chosen)
    who.store.audit("export", target=what.file_name, project_id=project_id)
    return data


def _make(
    who: Caller, project_id: int, what: Export, policy: str, chosen: Sequence[Calibration]
) -> bytes:
    store = who.store
    if what.kind == "html":
        criteria = None if what.criterion is None else [what.criterion]
        return R.build_report(store, project_id, criteria=criteria, policy=policy).encode("utf-8")
    if what.kind == "human-labels":
        frames = [
            R.human_labels_table(store, c.data.dataset.id, c.data.criterion.id) for c in chosen
        ]
    elif what.kind == "judge-results":
        frames = [R.judge_results_table(store, c) for c in chosen]
    elif what.kind == "metrics":
        return R.table_bytes(R.metrics_table(chosen), what.fmt)
    elif what.kind == "vertex":
        of_dataset = [c for c in chosen if c.data.dataset.id == what.dataset_id]
        return R.table_bytes(R.vertex_table(store, of_dataset), what.fmt)
    else:
        raise EvalcoreError(f"There is no export {what.kind!r}.")
    return R.table_bytes(
        pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(), what.fmt
    )
