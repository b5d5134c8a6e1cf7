"""Judge runs against humans over the store: one :class:`Calibration` per (dataset, criterion, runs).

Pure functions over :class:`~evalcore.report.CalibrationData`: the human label of each item by a named
policy, every run's :class:`~evalcore.metrics.CalibrationReport` with intervals and coverage, the paired
difference of every run from a baseline run, the human ceiling, the items of a confusion-matrix cell
and the disagreement table. Nothing here reads the database.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from evalcore.errors import EvalcoreError, MetricError
from evalcore.labels import Label, Scale, format_label
from evalcore.metrics import (
    CALIBRATION_METRICS,
    CalibrationReport,
    Comparison,
    compare,
    headline_kappa,
    metric_def,
    metrics_for,
)
from evalcore.report._data import RESULT_STATUSES, CalibrationData, RunInfo, scale_codes
from evalcore.report._labelsets import (
    HUMAN_POLICIES,
    HumanCeiling,
    aggregate_human,
    check_policy,
    human_ceiling,
)
from evalcore.report._tables import SideBySide, side_by_side
from evalcore.words import plural

__all__ = [
    "ALPHA_ROW",
    "CHANCE_COLUMN",
    "CONSTANT_COLUMN",
    "FLEISS_ROW",
    "HUMANS_COLUMN",
    "REFERENCE_COLUMNS",
    "Calibration",
    "Coverage",
    "References",
    "RunCalibration",
    "available_policies",
    "calibrate_runs",
    "cell_items",
    "disagreements",
    "human_label",
    "policy_name",
    "prevalence_row",
]


def available_policies(scale: Scale, annotators: Sequence[str] = ()) -> list[str]:
    """The human-label policies that apply to ``scale``: majority (always), median and mean (ordered
    scales), and ``annotator:<name>`` for each annotator."""
    named = [p for p in HUMAN_POLICIES if p == "majority" or scale.is_ordinal]
    return named + [f"annotator:{a}" for a in annotators]


def policy_name(policy: str) -> str:
    """How a report names a policy.

    >>> policy_name("mean"), policy_name("annotator:ana")
    ('mean rounded half up', 'annotator ana only')
    """
    names = {"majority": "majority vote", "median": "median", "mean": "mean rounded half up"}
    if policy.startswith("annotator:"):
        return f"annotator {policy.removeprefix('annotator:')} only"
    return names.get(policy, policy)


def human_label(data: CalibrationData, policy: str = "majority") -> pd.Series:
    """One human label per item (index = item database id) by ``policy``; missing where none.

    Items nobody labelled, and items without a majority under ``"majority"``, have no label.
    """
    if data.human.shape[1] == 0:
        return pd.Series(
            np.nan if data.scale.is_numeric else None,
            index=data.items.index,
            dtype=float if data.scale.is_numeric else object,
            name="human",
        )
    check_policy(policy, data.scale, data.annotators)
    if data.human.shape[1] == 1 and not policy.startswith("annotator:"):
        out = data.human.iloc[:, 0]
    else:
        out = aggregate_human(data.human, data.scale, policy)
    if data.scale.is_numeric:
        return out.astype(float).rename("human")
    return out.astype(object).where(out.notna(), None).rename("human")


@dataclass(frozen=True)
class Coverage:
    """Which items a run's metrics rest on.

    ``n_items``: items in the dataset (or slice); ``n_human``: of those, items with a human label under
    the policy; ``n_compared``: of those, items the run labelled (``ok``); ``n_unparsed``,
    ``n_failed`` and ``n_missing`` (no result recorded): the human-labelled items the run did not
    label. Unparsed and failed items are left out of the metrics, never counted as wrong.
    """

    n_items: int
    n_human: int
    n_compared: int
    n_unparsed: int
    n_failed: int
    n_missing: int

    def rows(self) -> dict[str, int]:
        """The counts as the side-by-side table names them, in display order."""
        return {
            "items with a human label": self.n_human,
            "compared": self.n_compared,
            "unparsed": self.n_unparsed,
            "failed": self.n_failed,
            "no result": self.n_missing,
        }

    def to_dict(self) -> dict[str, int]:
        return {
            "n_items": self.n_items,
            "n_human": self.n_human,
            "n_compared": self.n_compared,
            "n_unparsed": self.n_unparsed,
            "n_failed": self.n_failed,
            "n_missing": self.n_missing,
        }


@dataclass(frozen=True, eq=False)
class RunCalibration:
    """One run against the humans: its report (``None`` when no item could be compared), its
    coverage, and its paired comparison with the baseline run (``None`` for the baseline itself or
    when the two share no compared item)."""

    info: RunInfo
    coverage: Coverage
    report: CalibrationReport | None
    comparison: Comparison | None = None

    @property
    def title(self) -> str:
        return self.info.title


@dataclass(frozen=True, eq=False)
class Calibration:
    """Several runs of one criterion against the same human labels, on the same label axis.

    ``human`` is the policy's label per item (index = item database id, every item of the data or of
    the slice); ``labels`` the axis every confusion matrix shares (the criterion's scale);
    ``baseline`` the run every other run is compared with; ``ceiling`` the annotators' agreement with
    each other on the same items (``None`` with fewer than two annotators).
    """

    data: CalibrationData
    policy: str
    human: pd.Series
    labels: tuple[Label, ...]
    runs: tuple[RunCalibration, ...]
    baseline: int | None
    ceiling: HumanCeiling | None
    n_boot: int
    confidence: float
    seed: int

    @property
    def kind(self) -> str:
        return self.data.scale.kind

    @property
    def policy_name(self) -> str:
        return policy_name(self.policy)

    def run(self, run_id: int) -> RunCalibration:
        for run in self.runs:
            if run.info.id == run_id:
                return run
        raise KeyError(run_id)

    @property
    def compared(self) -> tuple[RunCalibration, ...]:
        """The runs with a report (at least one item compared)."""
        return tuple(r for r in self.runs if r.report is not None)

    def panels(self) -> list[tuple[str, CalibrationReport]]:
        """(title, report) of every run with a report: the confusion-matrix panels, same axes."""
        return [(r.title, r.report) for r in self.runs if r.report is not None]

    def best(self, metric: str = "accuracy_balanced") -> RunCalibration | None:
        """The run with the highest ``metric`` (ties: the higher headline kappa, then the first)."""
        scored = [
            (r, _value(r.report, metric), _value(r.report, headline_kappa(self.kind).key))
            for r in self.compared
        ]
        scored = [s for s in scored if not math.isnan(s[1])]
        if not scored:
            return None
        return max(scored, key=lambda s: (s[1], -math.inf if math.isnan(s[2]) else s[2]))[0]

    @property
    def policy_used(self) -> str:
        """The policy (``"majority"``, ``"annotator:ana"``, ...), or ``"single annotator"`` when one
        annotator's labels are all there is (every policy then gives the same label).
        :func:`policy_name` reads either as people do."""
        if self.data.human.shape[1] == 1 and not self.policy.startswith("annotator:"):
            return "single annotator"
        return self.policy

    def notes(self) -> list[str]:
        """One sentence for every run that has no item to compare (it still has a column of the
        table, with its coverage): why it has no metrics."""
        out = []
        for r in self.runs:
            if r.report is not None:
                continue
            c = r.coverage
            reasons = [
                f"{n} {word}"
                for n, word in ((c.n_failed, "failed"), (c.n_unparsed, "unparsed"))
                if n
            ]
            if c.n_missing:
                reasons.append(f"{c.n_missing} without a result")
            why = ", ".join(reasons) if reasons else "no human-labelled item"
            out.append(
                f"{r.title}: no metrics, no item has both a human label and a judge label "
                f"({plural(c.n_human, 'human-labelled item')}: {why})."
            )
        return out

    def references(self) -> References | None:
        """The honest baselines on the items with a human label: the humans' count of each label,
        and every shown metric for a constant judge (always the humans' most frequent label) and at
        chance (a judge drawing labels at random with the humans' shares; see
        :meth:`~evalcore.metrics.MetricDef.chance_level`). ``None`` when no item has a human label.
        """
        codes = _codes(self.human.to_numpy(), self.data.scale)
        position = np.full(len(self.data.scale.labels) + 1, -1, dtype=np.int64)
        for i, label in enumerate(self.labels):
            position[self.data.scale.index(label)] = i
        on_axis = position[codes]
        on_axis = on_axis[on_axis >= 0]
        if on_axis.size == 0:
            return None
        counts = np.bincount(on_axis, minlength=len(self.labels)).astype(np.int64)
        mode = int(np.argmax(counts))  # ties: the first in scale order
        constant_table = np.zeros((len(counts), len(counts)))
        constant_table[:, mode] = counts
        positive = 0
        if self.kind == "binary" and self.data.scale.positive in self.labels:
            positive = self.labels.index(self.data.scale.positive)
        declared = metrics_for(self.kind, shown=True)
        # rounded: the exact zeros of kappa at chance come out as 1e-16 otherwise
        constant = {m.key: round(float(m.evaluate(constant_table, positive)), 12) for m in declared}
        chance = {m.key: round(m.chance_level(counts, positive), 12) for m in declared}
        return References(self.labels, counts, mode, constant, chance)

    def table(self, *, ceiling: bool = True, references: bool = True) -> SideBySide:
        """The side-by-side table: coverage, metrics with intervals (best marked), differences from
        the baseline with their paired intervals and McNemar's p.

        Every run has a column, also one with no item to compare (its metrics read "–"; see
        :meth:`notes`). With ``ceiling`` (and a ceiling computed) a last column
        :data:`HUMANS_COLUMN` is the reference: the annotators' mean pairwise kappa in the kappa row
        (same weighting) and their Krippendorff's alpha with its interval in a row of its own, so
        each judge reads against people, not against 1.0. It takes no part in the best marks.

        With ``references`` two more reference columns follow (:data:`REFERENCE_COLUMNS`, see
        :meth:`references`): a constant judge that always gives the humans' most frequent label,
        and the chance level of every metric; rows :func:`prevalence_row` give the humans' share of
        each label. Neither takes part in the best marks.
        """
        if not self.runs:
            raise EvalcoreError(f"{self.data.criterion.name}: there is no judge run to show")
        columns = [(r.title, r.report) for r in self.runs]
        coverage = {r.title: r.coverage.rows() for r in self.runs}
        comparisons: dict[str, Comparison | None] = {r.title: r.comparison for r in self.runs}
        base = None
        if self.baseline is not None:
            base = next((r.title for r in self.runs if r.info.id == self.baseline), None)
        table = side_by_side(
            columns,
            coverage=coverage,
            comparisons=comparisons if len(self.runs) > 1 else None,
            baseline=base,
            dropped_rows=False,
            kind=self.kind,
        )
        agreement = self.ceiling
        if ceiling and agreement is not None and agreement.krippendorff_alpha is not None:
            table = _with_ceiling(table, agreement, self.kind)
        found = self.references() if references else None
        return table if found is None else _with_references(table, found, self.kind)

    def to_frame(self) -> pd.DataFrame:
        """Every run's metrics as a long table, for export: one row per (run, metric) with the
        interval, the coverage and the comparison with the baseline (``diff_<key>`` rows and
        ``mcnemar_p``), then the humans' agreement, the honest baselines (runs ``(constant judge)``
        and ``(chance)``, see :meth:`references`) and the humans' share of each label
        (``share_<label>``). Metric keys are those of the declared table."""
        rows: list[dict[str, Any]] = []
        where = {
            "dataset": self.data.dataset.name,
            "dataset_version": self.data.dataset.version,
            "criterion": self.data.criterion.name,
            "human_policy": self.policy,
        }

        def add(base: dict[str, Any], key: str, value: Any, ci: Any) -> None:
            low, high = (None, None) if ci is None else (_num(ci[0]), _num(ci[1]))
            value = value if value is None or isinstance(value, int) else _num(value)
            rows.append({**base, "metric": key, "value": value, "ci_low": low, "ci_high": high})

        for run in self.runs:
            base = {
                **where,
                "run_id": run.info.id,
                "run": run.title,
                "template": run.info.template,
                "template_version": run.info.version,
                "model": run.info.model,
                **run.coverage.to_dict(),
            }
            report = run.report
            for key in _EXPORTED:
                value = None if report is None else getattr(report, key)
                add(base, key, value, None if report is None else report.ci.get(key))
            c = run.comparison
            if c is not None:
                add(
                    base,
                    "diff_accuracy_balanced",
                    c.diff_balanced_accuracy,
                    c.diff_balanced_accuracy_ci,
                )
                add(base, "diff_f1_score_balanced", c.diff_weighted_f1, c.diff_weighted_f1_ci)
                add(base, "diff_accuracy", c.diff_accuracy, c.diff_accuracy_ci)
                add(base, "mcnemar_p", c.mcnemar_p, None)
                add(base, "mcnemar_midp", c.mcnemar_midp, None)
        if self.ceiling is not None:
            agreement = self.ceiling
            base = {**where, "run": "(humans)", "n_items": agreement.n_items}
            add(base, "human_krippendorff_alpha", agreement.krippendorff_alpha, agreement.alpha_ci)
            add(base, "human_mean_pairwise_kappa", agreement.mean_pairwise_kappa, None)
            for found_c in agreement.coefficients:
                add(base, f"human_{found_c.key}", found_c.value, found_c.interval)
                add(base, f"human_{found_c.key}_se", found_c.se, None)
        found = self.references()
        if found is not None:
            n = int(found.counts.sum())
            for run_name, values in (
                (f"({CONSTANT_COLUMN})", found.constant),
                (f"({CHANCE_COLUMN})", found.chance),
            ):
                base = {**where, "run": run_name, "n_human": n}
                for key, value in values.items():
                    add(base, key, value, None)
            base = {**where, "run": "(humans)", "n_human": n}
            for label, share in zip(found.labels, found.shares, strict=True):
                add(base, f"share_{format_label(label)}", share, None)
        return pd.DataFrame(rows)


#: The reference column of :meth:`Calibration.table`: the annotators with each other.
HUMANS_COLUMN = "humans (ceiling)"
#: The row of :meth:`Calibration.table` that holds the annotators' Krippendorff's alpha.
ALPHA_ROW = "Krippendorff's α (humans)"
#: The row of :meth:`Calibration.table` that holds the annotators' Fleiss' kappa (all of them).
FLEISS_ROW = "Fleiss' κ (humans)"


def _with_interval(value: float, ci: tuple[float, float] | None) -> str:
    shown = "–" if math.isnan(value) else f"{value:.3f}"
    if ci is not None and not any(math.isnan(v) for v in ci):
        shown += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
    return shown


def _with_ceiling(table: SideBySide, agreement: HumanCeiling, kind: str) -> SideBySide:
    kappa_row = headline_kappa(kind).name
    rows = list(table.text.index)
    at = rows.index(kappa_row) + 1 if kappa_row in rows else len(rows)
    order = [*rows[:at], ALPHA_ROW, *rows[at:]]
    text = table.text.reindex(order).fillna("")
    values = table.values.reindex(order)
    best = table.best.reindex(order).fillna(False).astype(bool)
    text[HUMANS_COLUMN] = ""
    values[HUMANS_COLUMN] = np.nan
    best[HUMANS_COLUMN] = False
    if agreement.mean_pairwise_kappa is not None and kappa_row in rows:
        text.loc[kappa_row, HUMANS_COLUMN] = f"{agreement.mean_pairwise_kappa:.3f} (mean pairwise)"
        values.loc[kappa_row, HUMANS_COLUMN] = agreement.mean_pairwise_kappa
    alpha = float(agreement.krippendorff_alpha or math.nan)
    shown = f"{alpha:.3f}"
    if agreement.alpha_ci is not None and not any(math.isnan(v) for v in agreement.alpha_ci):
        shown += f" [{agreement.alpha_ci[0]:.2f}, {agreement.alpha_ci[1]:.2f}]"
    text.loc[ALPHA_ROW, HUMANS_COLUMN] = shown
    values.loc[ALPHA_ROW, HUMANS_COLUMN] = alpha
    fleiss = agreement.coefficient("fleiss_kappa")
    if fleiss is not None:
        at = list(text.index).index(ALPHA_ROW) + 1
        order = [*list(text.index)[:at], FLEISS_ROW, *list(text.index)[at:]]
        text = text.reindex(order).fillna("")
        values = values.reindex(order)
        best = best.reindex(order).fillna(False).astype(bool)
        text.loc[FLEISS_ROW, HUMANS_COLUMN] = _with_interval(fleiss.value, fleiss.interval)
        values.loc[FLEISS_ROW, HUMANS_COLUMN] = fleiss.value
    ac1 = agreement.coefficient("gwet_ac1")
    ac1_row = metric_def("gwet_ac1").name
    if ac1 is not None and ac1_row in rows:
        text.loc[ac1_row, HUMANS_COLUMN] = _with_interval(ac1.value, ac1.interval) + " (all)"
        values.loc[ac1_row, HUMANS_COLUMN] = ac1.value
    return SideBySide(
        values=values, text=text, best=best, references=(*table.references, HUMANS_COLUMN)
    )


#: The reference column of a judge that always gives the humans' most frequent label.
CONSTANT_COLUMN = "constant judge"
#: The reference column of the chance level of each metric.
CHANCE_COLUMN = "chance"
#: Every reference column of :meth:`Calibration.table`, in display order (none is a run).
REFERENCE_COLUMNS = (HUMANS_COLUMN, CONSTANT_COLUMN, CHANCE_COLUMN)


def prevalence_row(label: Label) -> str:
    """The row of :meth:`Calibration.table` with the humans' share of ``label``.

    >>> prevalence_row("pass")
    'share of pass (humans)'
    """
    return f"share of {format_label(label)} (humans)"


@dataclass(frozen=True)
class References:
    """The honest baselines of a calibration (:meth:`Calibration.references`): the humans'
    ``counts`` of each label of ``labels``, the index of their most frequent label (``mode``, what
    the constant judge says), and per shown metric key the ``constant`` judge's value and the
    ``chance`` level."""

    labels: tuple[Label, ...]
    counts: npt.NDArray[np.int64]
    mode: int
    constant: dict[str, float]
    chance: dict[str, float]

    @property
    def shares(self) -> list[float]:
        total = float(self.counts.sum())
        return [float(c) / total for c in self.counts]

    def to_dict(self) -> dict[str, Any]:
        return {
            "labels": [format_label(x) for x in self.labels],
            "counts": [int(c) for c in self.counts],
            "shares": self.shares,
            "constant_label": format_label(self.labels[self.mode]),
            "constant": {k: _num(v) for k, v in self.constant.items()},
            "chance": {k: _num(v) for k, v in self.chance.items()},
        }


def _with_references(table: SideBySide, found: References, kind: str) -> SideBySide:
    shares = [prevalence_row(label) for label in found.labels]
    rows = [r for r in table.text.index if r not in shares]
    # the shares go after the coverage rows, right before the first metric
    names = {m.name for m in metrics_for(kind, shown=True)}
    at = next((i for i, r in enumerate(rows) if r in names), len(rows))
    order = [*rows[:at], *shares, *rows[at:]]
    text = table.text.reindex(order).fillna("")
    values = table.values.reindex(order)
    best = table.best.reindex(order).fillna(False).astype(bool)
    for column in (CONSTANT_COLUMN, CHANCE_COLUMN):
        text[column] = ""
        values[column] = np.nan
        best[column] = False
    for row, share in zip(shares, found.shares, strict=True):
        text.loc[row, CHANCE_COLUMN] = f"{share:.1%}"
        values.loc[row, CHANCE_COLUMN] = share
    text.loc[shares[found.mode], CONSTANT_COLUMN] = "always this label"
    for m in metrics_for(kind, shown=True):
        for column, where in ((CONSTANT_COLUMN, found.constant), (CHANCE_COLUMN, found.chance)):
            value = where.get(m.key, math.nan)
            values.loc[m.name, column] = value
            text.loc[m.name, column] = "–" if math.isnan(value) else f"{value:.3f}"
    return SideBySide(
        values=values,
        text=text,
        best=best,
        references=(*table.references, CONSTANT_COLUMN, CHANCE_COLUMN),
    )


#: The columns of :meth:`Calibration.to_frame`: the number compared, then every declared metric.
_EXPORTED = ("n", *(m.key for m in CALIBRATION_METRICS))


def _num(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def _value(report: CalibrationReport | None, metric: str) -> float:
    if report is None:
        return math.nan
    value = getattr(report, metric, None)
    return math.nan if value is None else float(value)


def _codes(values: pd.Series | npt.NDArray[Any], scale: Scale) -> npt.NDArray[np.int64]:
    return scale_codes(values, scale)


def calibrate_runs(
    data: CalibrationData,
    *,
    policy: str = "majority",
    baseline: int | None = None,
    mask: npt.NDArray[np.bool_] | pd.Series | None = None,
    ceiling: bool | HumanCeiling = True,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    mid_p: bool = False,
) -> Calibration:
    """Calibrate every run of ``data`` against the humans aggregated by ``policy``.

    ``baseline`` (a run id; default the first run) is the run the others are compared with: paired
    bootstrap intervals of the differences in balanced accuracy and weighted F1, and the accuracy
    difference with Newcombe's paired interval beside McNemar's test of it (exact; mid-p with
    ``mid_p``) on the items both runs and the humans labelled. ``ceiling``: compute the human ceiling
    (``True``), leave it out (``False``), or use this one (a :class:`HumanCeiling` already computed
    for the same humans, e.g. kept while the policy changes). ``mask`` (one boolean per item of
    ``data.items``) restricts everything to a slice. The axis of every confusion matrix (and of every
    weighted kappa) is ``data.labels``: the declared scale, else the labels observed in the data, in
    the scale's order; every panel has the same rows and columns, and a slice keeps the axis of the
    whole data.

    This is the one engine: the store (:func:`load_calibration_data`) and files
    (:func:`file_data`) both end in a :class:`CalibrationData`, and every surface (the CLI, the
    Calibrate and Reports pages, the HTML report, the exports) renders the :class:`Calibration`
    made here.
    """
    scale = data.scale
    runs = data.runs
    if baseline is not None and baseline not in [r.info.id for r in runs]:
        raise EvalcoreError(f"the baseline run {baseline} is not one of the runs compared")
    if baseline is None and runs:
        baseline = runs[0].info.id
    keep = np.ones(len(data.items), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if keep.shape != (len(data.items),):
        raise EvalcoreError(
            f"the slice mask has {keep.shape[0]} values for {plural(len(data.items), 'item')}"
        )
    human_all = human_label(data, policy)
    human = human_all if keep.all() else human_all[keep]
    labelled = human.notna().to_numpy()
    kind = scale.kind
    positive = scale.positive if kind == "binary" else None
    reports: dict[int, CalibrationReport | None] = {}
    coverages: dict[int, Coverage] = {}
    judged: dict[int, npt.NDArray[Any]] = {}
    human_values = human.to_numpy()
    axis = data.labels
    everything = bool(keep.all())
    for run in runs:
        # status codes follow RESULT_STATUSES: ok, unparsed, failed, missing
        status = run.results["status"].cat.codes.to_numpy()
        judge_values = run.results["label"].to_numpy()
        if not everything:
            status, judge_values = status[keep], judge_values[keep]
        counts = np.bincount(status[labelled], minlength=len(RESULT_STATUSES))
        coverages[run.info.id] = Coverage(
            n_items=int(keep.sum()),
            n_human=int(labelled.sum()),
            n_compared=int(counts[0]),
            n_unparsed=int(counts[1]),
            n_failed=int(counts[2]),
            n_missing=int(counts[3]),
        )
        judged[run.info.id] = judge_values
        try:
            reports[run.info.id] = CalibrationReport.from_counts(
                _count_table(human_values, judge_values, scale, axis),
                labels=axis,
                kind=kind,  # type: ignore[arg-type]
                metric=data.criterion.name,
                positive=positive,
                n_dropped=int(len(human_values) - coverages[run.info.id].n_compared),
                n_boot=n_boot,
                confidence=confidence,
                seed=seed,
            )
        except MetricError:
            reports[run.info.id] = None
    calibrated: list[RunCalibration] = []
    for run in runs:
        comparison = None
        if baseline is not None and run.info.id != baseline and reports[run.info.id] is not None:
            try:
                comparison = compare(
                    human_values,
                    judged[baseline],
                    judged[run.info.id],
                    labels=axis,
                    n_boot=n_boot,
                    confidence=confidence,
                    seed=seed,
                    mid_p=mid_p,
                )
            except MetricError:
                comparison = None  # no item that both runs and the humans labelled
        calibrated.append(
            RunCalibration(run.info, coverages[run.info.id], reports[run.info.id], comparison)
        )
    if isinstance(ceiling, HumanCeiling):
        agreement: HumanCeiling | None = ceiling
    elif ceiling and data.human.shape[1] >= 2:
        agreement = human_ceiling(data.human[keep], scale, labels=axis, n_boot=n_boot, seed=seed)
    else:
        agreement = None
    return Calibration(
        data=data,
        policy=policy,
        human=human,
        labels=axis,
        runs=tuple(calibrated),
        baseline=baseline,
        ceiling=agreement,
        n_boot=n_boot,
        confidence=confidence,
        seed=seed,
    )


def _count_table(
    human: npt.NDArray[Any], judge: npt.NDArray[Any], scale: Scale, axis: Sequence[Label]
) -> npt.NDArray[np.int64]:
    """k x k counts on ``axis`` (rows = human, columns = judge) of the items both labelled."""
    k = len(axis)
    position = np.full(len(scale.labels) + 1, -1, dtype=np.int64)  # the last slot: missing (-1)
    for i, label in enumerate(axis):
        position[scale.index(label)] = i
    h, j = position[_codes(human, scale)], position[_codes(judge, scale)]
    both = (h >= 0) & (j >= 0)
    return np.bincount(h[both] * k + j[both], minlength=k * k).reshape(k, k).astype(np.int64)


# --- drilling down ----------------------------------------------------------------------------------


def _label_on(scale: Scale, value: object) -> Label:
    try:
        label = scale.coerce(value)
    except ValueError:
        label = None
    if label is None:
        raise EvalcoreError(f"{value!r} is not a label of the scale {scale.display_labels}")
    return label


def cell_items(calibration: Calibration, run_id: int, human: object, judge: object) -> pd.DataFrame:
    """The items in one confusion-matrix cell of a run: humans said ``human``, the judge ``judge``.

    Labels may be given as labels or as people read them (``"4"``). Returns the items in dataset order:
    index = item database id, columns ``item_id``, ``human``, ``judge`` and ``score``.
    """
    scale = calibration.data.scale
    want_h, want_j = _label_on(scale, human), _label_on(scale, judge)
    results = calibration.data.run(run_id).results.loc[calibration.human.index]
    h = calibration.human.to_numpy()
    j = results["label"].to_numpy()
    hit = (_codes(h, scale) == scale.index(want_h)) & (_codes(j, scale) == scale.index(want_j))
    index = calibration.human.index[hit]
    return pd.DataFrame(
        {
            "item_id": calibration.data.items.loc[index, "item_id"].to_numpy(),
            "human": [format_label(want_h)] * len(index),
            "judge": [format_label(want_j)] * len(index),
            "score": results.loc[index, "score"].to_numpy(),
        },
        index=index,
    )


def disagreements(
    calibration: Calibration,
    *,
    wrong: int | None = None,
    right: int | None = None,
    include_agreements: bool = False,
) -> pd.DataFrame:
    """Items where the judge runs and the humans disagree, worst first.

    One row per item with a human label (index = item database id): ``item_id``, ``human``, one
    column per run (titled like the run) with its label, or ``unparsed``/``failed``/``no result``
    when it gave none; ``wrong``: how many runs gave another label than the humans; and on ordered
    scales ``distance``: the largest number of scale steps between a run's label and the humans'.
    Sorted by distance (ordered scales), then by ``wrong``, then dataset order.

    ``wrong=X, right=Y`` keeps the items run X got wrong and run Y got right (both gave a label):
    "version 7 wrong, version 6 right" and, swapped, the other way round. Without filters only items
    at least one run got wrong are listed, unless ``include_agreements``.
    """
    data = calibration.data
    scale = data.scale
    human = calibration.human
    labelled = human.notna().to_numpy()
    index = human.index[labelled]
    h_codes = _codes(human.to_numpy()[labelled], scale)
    positions = data.items.index.get_indexer(index)
    n_wrong = np.zeros(len(index), dtype=np.int64)
    distance = np.zeros(len(index), dtype=np.int64)
    judged: list[tuple[str, npt.NDArray[np.int64], npt.NDArray[np.int64]]] = []
    wrong_of: dict[int, npt.NDArray[np.bool_]] = {}
    right_of: dict[int, npt.NDArray[np.bool_]] = {}
    for run in calibration.runs:
        results = data.run(run.info.id).results
        j_codes = _codes(results["label"].to_numpy()[positions], scale)
        status = results["status"].cat.codes.to_numpy()[positions].astype(np.int64)
        has = j_codes >= 0
        is_wrong = has & (j_codes != h_codes)
        wrong_of[run.info.id], right_of[run.info.id] = is_wrong, has & (j_codes == h_codes)
        n_wrong += is_wrong
        if scale.is_ordinal:
            distance = np.maximum(distance, np.where(has, np.abs(j_codes - h_codes), 0))
        judged.append((run.title, j_codes, status))
    keep = np.ones(len(index), dtype=bool) if include_agreements else n_wrong > 0
    for name, run_id, side in (("wrong", wrong, wrong_of), ("right", right, right_of)):
        if run_id is None:
            continue
        if run_id not in side:
            raise EvalcoreError(f"filter {name}={run_id}: that run is not part of the calibration")
        keep &= side[run_id]
    # worst first: the largest distance (ordered scales), the most runs wrong, then dataset order
    at = np.flatnonzero(keep)
    keys = [positions[at], -n_wrong[at]] + ([-distance[at]] if scale.is_ordinal else [])
    at = at[np.lexsort(keys)]
    shown = np.array([format_label(x) for x in scale.labels], dtype=object)
    # a run without a label shows why: its status (ok, unparsed, failed, missing -> no result)
    gaps = np.array(["", "unparsed", "failed", "no result"], dtype=object)
    frame = pd.DataFrame(
        {
            "item_id": data.items["item_id"].to_numpy()[positions[at]],
            "human": shown[h_codes[at]],
        },
        index=index[at],
    )
    for title, j_codes, status in judged:
        codes = j_codes[at]
        frame[title] = np.where(codes >= 0, shown[np.maximum(codes, 0)], gaps[status[at]])
    frame["wrong"] = n_wrong[at]
    if scale.is_ordinal:
        frame["distance"] = distance[at]
    return frame
