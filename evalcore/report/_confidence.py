"""The judge's confidence beside a calibration: is it calibrated, and where can the judge decide
alone ("trust or escalate")? What to label next.

:func:`confidence_view` reads, for every run of a :class:`~evalcore.report.Calibration`, the
confidence of each verdict (the probability of the chosen label) and, when known, the probability
of every label; it returns a :class:`ConfidenceView`: per run (:class:`RunConfidence`) the
reliability bins, ECE and Brier score on every item with a human label, a verdict and a confidence
(:class:`ConfidenceSummary`), the same per slice, and on a dev/test split (the stored split of the
dataset and criterion, or a seeded split of a file's items):

- the selective threshold chosen on dev (:func:`~evalcore.metrics.selective_threshold`) and what it
  gives on test: coverage and agreement with its interval, the coverage–agreement curve
  (:class:`SelectiveReport`);
- a recalibration fitted on dev and judged on test (:class:`RecalibrationCheck`).

Where the confidences come from: a run's ``results`` may carry a ``confidence`` column (a float per
item, NaN when none) and a ``probabilities`` column (a mapping label -> probability per item, or
``None``); a file's ``--confidence`` column becomes the first (:func:`~evalcore.report.file_data`).
``confidences=`` overrides both per run.

:func:`run_label_next` proposes the next items to label for one run (and optionally a second run to
separate from it), never an item of the split's test part.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd

from evalcore.errors import EvalcoreError, MetricError
from evalcore.labels import Label, Scale
from evalcore.metrics import (
    MIN_DECIDED,
    CoverageCurve,
    LabelNext,
    Recalibration,
    Reliability,
    SelectiveOutcome,
    SelectiveThreshold,
    brier_score_loss,
    coverage_curve,
    expected_calibration_error,
    fit_recalibration,
    headline_kappa,
    label_next,
    multiclass_brier_score_loss,
    reliability_bins,
    selective_outcome,
    selective_threshold,
)
from evalcore.report._calibration import Calibration
from evalcore.report._load import RunInfo
from evalcore.report._views import slice_groups
from evalcore.words import plural

__all__ = [
    "CONFIDENCE_COLUMN",
    "PROBABILITIES_COLUMN",
    "ConfidenceSummary",
    "ConfidenceView",
    "DevTest",
    "RecalibrationCheck",
    "RunConfidence",
    "SelectiveReport",
    "SliceConfidence",
    "confidence_view",
    "run_label_next",
]

#: The column of a run's results that holds each verdict's confidence (float, NaN when none).
CONFIDENCE_COLUMN = "confidence"
#: The column of a run's results that holds each verdict's probability per label (a mapping).
PROBABILITIES_COLUMN = "probabilities"


class DevTest(Protocol):
    """A dev/test split by item id: :class:`evalcore.improve.Split` and the store's
    ``SplitRecord`` both are one."""

    @property
    def dev(self) -> Sequence[str]: ...

    @property
    def test(self) -> Sequence[str]: ...


def _num(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


@dataclass(frozen=True)
class ConfidenceSummary:
    """Calibration of the confidence on ``n`` items (human label, verdict and confidence).

    ``ece`` (top-label, ``reliability.n_bins`` equal-width bins), ``brier_top_label`` (confidence
    against agreement, 0 to 1) and ``brier_multiclass`` (over every label's probability, 0 to 2;
    ``None`` unless every one of the items has them); :attr:`brier` is the multiclass one when
    known. ``mean_confidence`` and ``agreement`` over all the items: their difference is the
    overall over-confidence.
    """

    n: int
    reliability: Reliability
    ece: float
    brier_top_label: float
    brier_multiclass: float | None
    mean_confidence: float
    agreement: float

    @property
    def brier(self) -> float:
        return self.brier_top_label if self.brier_multiclass is None else self.brier_multiclass

    @property
    def brier_kind(self) -> str:
        return "top-label" if self.brier_multiclass is None else "multiclass"

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "ece": self.ece,
            "n_bins": self.reliability.n_bins,
            "brier": self.brier,
            "brier_kind": self.brier_kind,
            "brier_top_label": self.brier_top_label,
            "brier_multiclass": self.brier_multiclass,
            "mean_confidence": self.mean_confidence,
            "agreement": self.agreement,
            "reliability": self.reliability.to_dict(),
        }


@dataclass(frozen=True)
class SelectiveReport:
    """Trust or escalate for one run: the threshold chosen on dev (``dev``), what it gives on test
    (``test``: coverage, agreement and its interval) and the coverage–agreement curve on test
    (``curve``); ``dev_ids``/``test_ids`` are the item ids of each part, so anyone can recompute
    it."""

    title: str
    dev: SelectiveThreshold
    test: SelectiveOutcome
    curve: CoverageCurve
    dev_ids: tuple[str, ...]
    test_ids: tuple[str, ...]

    @property
    def threshold(self) -> float | None:
        return self.dev.threshold

    def sentence(self) -> str:
        """What the judge decides, in the words of the Calibrate page.

        "the judge decides 78% of items at ≥ 90% agreement; people get the other 22%" (the coverage
        measured on test, the target agreement guaranteed on dev), then what test shows.
        """
        target = f"{self.dev.target:.0%}"
        if self.threshold is None:
            return (
                f"{self.title} decides no item at ≥ {target} agreement; people get all of them "
                f"(no confidence threshold passed on {plural(self.dev.n, 'dev item')})"
            )
        coverage = self.test.coverage
        text = (
            f"{self.title} decides {coverage:.0%} of items at ≥ {target} agreement; people get "
            f"the other {1 - coverage:.0%}"
        )
        if self.test.n_decided and self.test.interval is not None:
            low, high = self.test.interval
            text += (
                f" (confidence ≥ {self.threshold:.4g}; on test {self.test.n_agree} of "
                f"{self.test.n_decided} decided items agree: {self.test.agreement:.1%} "
                f"[{low:.1%}, {high:.1%}])"
            )
        return text

    def to_dict(self) -> dict[str, Any]:
        dev = self.dev.to_dict()
        return {
            "threshold": self.threshold,
            "target_agreement": self.dev.target,
            "risk": self.dev.risk,
            "min_decided": self.dev.min_decided,
            "dev": {
                "n": self.dev.n,
                "n_decided": self.dev.n_decided,
                "coverage": self.dev.coverage,
                "agreement": _num(self.dev.agreement),
                "lower_bound": self.dev.lower_bound,
                "bound_method": dev["bound_method"],
                "candidates": dev["candidates"],
            },
            "test": self.test.to_dict(),
            "sentence": self.sentence(),
            "guarantee": self.dev.guarantee(),
            "not_guaranteed": self.dev.not_guaranteed(),
            "curve": self.curve.to_dict(),
            "split": {"dev": list(self.dev_ids), "test": list(self.test_ids)},
        }


@dataclass(frozen=True)
class RecalibrationCheck:
    """A recalibration fitted on dev, judged on the test items: ECE and top-label Brier before and
    after (lower is better; a fit that does not help on test is worth knowing)."""

    recalibration: Recalibration
    n_test: int
    ece_before: float
    ece_after: float
    brier_before: float
    brier_after: float

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.recalibration.to_dict(),
            "fitted_on": "dev",
            "n_test": self.n_test,
            "test_ece_before": self.ece_before,
            "test_ece_after": self.ece_after,
            "test_brier_before": self.brier_before,
            "test_brier_after": self.brier_after,
        }


@dataclass(frozen=True)
class SliceConfidence:
    """One slice of a run's items: the confidence's calibration there (``None`` when no item of
    the slice has a confidence) and, on the slice's test items, what the run's threshold gives
    (``None`` without a split). The threshold's guarantee is for all items, not for a slice."""

    name: str
    n_items: int
    summary: ConfidenceSummary | None
    test: SelectiveOutcome | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "slice": self.name,
            "n_items": self.n_items,
            "summary": None if self.summary is None else self.summary.to_dict(),
            "test": None if self.test is None else self.test.to_dict(),
        }


@dataclass(frozen=True)
class RunConfidence:
    """One run's confidence: ``summary`` (``None`` when no item has one), ``selective`` and
    ``recalibration`` (``None`` without a split, or when the split has too few items: ``notes``
    says why), ``slices`` (empty without a slice column)."""

    info: RunInfo
    summary: ConfidenceSummary | None
    selective: SelectiveReport | None
    recalibration: RecalibrationCheck | None
    slices: tuple[SliceConfidence, ...]
    notes: tuple[str, ...]

    @property
    def title(self) -> str:
        return self.info.title

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge": self.title,
            "summary": None if self.summary is None else self.summary.to_dict(),
            "recalibration": None if self.recalibration is None else self.recalibration.to_dict(),
            "slices": [s.to_dict() for s in self.slices],
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class ConfidenceView:
    """Every run's :class:`RunConfidence`, with the settings they were computed with."""

    runs: tuple[RunConfidence, ...]
    n_bins: int
    target: float | None
    risk: float
    min_decided: int
    recalibration: str | None
    slice_column: str | None

    def run(self, run_id: int) -> RunConfidence:
        for run in self.runs:
            if run.info.id == run_id:
                return run
        raise KeyError(run_id)


def _aligned_confidence(
    calibration: Calibration, run_id: int, given: Mapping[int, Any] | None
) -> npt.NDArray[np.float64] | None:
    """The run's confidence per item of the calibration (NaN where none), or ``None``."""
    index = calibration.human.index
    if given is not None and run_id in given:
        values = given[run_id]
        series = (
            values
            if isinstance(values, pd.Series)
            else pd.Series(values, index=calibration.data.items.index)
        )
        return np.asarray(
            pd.to_numeric(series.reindex(index), errors="coerce").to_numpy(
                dtype=np.float64, na_value=np.nan
            ),
            dtype=np.float64,
        )
    results = calibration.data.run(run_id).results
    if CONFIDENCE_COLUMN not in results.columns:
        return None
    column = pd.to_numeric(results[CONFIDENCE_COLUMN].reindex(index), errors="coerce")
    return np.asarray(column.to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)


def _probability_matrix(calibration: Calibration, run_id: int) -> npt.NDArray[np.float64] | None:
    """Every label's probability per item (rows: items of the calibration; columns: its label
    axis), NaN rows where unknown; ``None`` when the run has no probabilities at all, or when a
    row does not sum to 1 over the axis."""
    results = calibration.data.run(run_id).results
    if PROBABILITIES_COLUMN not in results.columns:
        return None
    axis = list(calibration.labels)
    scale: Scale = calibration.data.scale
    position = {label: i for i, label in enumerate(axis)}
    out = np.full((len(calibration.human), len(axis)), np.nan)
    values = results[PROBABILITIES_COLUMN].reindex(calibration.human.index).to_numpy(dtype=object)
    for row, found in enumerate(values):
        if not isinstance(found, Mapping) or not found:
            continue
        out[row] = 0.0
        for key, p in found.items():
            try:
                label: Label | None = scale.coerce(key)
            except ValueError:
                label = None
            if label is None or label not in position:
                return None
            out[row, position[label]] = float(p)
    known = ~np.isnan(out).any(axis=1)
    if not known.any() or (np.abs(out[known].sum(axis=1) - 1.0) > 1e-6).any():
        return None
    return out


def _summary(
    human: npt.NDArray[Any],
    judge: npt.NDArray[Any],
    conf: npt.NDArray[np.float64],
    proba: npt.NDArray[np.float64] | None,
    labels: Sequence[Label],
    n_bins: int,
) -> ConfidenceSummary | None:
    try:
        bins = reliability_bins(human, judge, conf, n_bins=n_bins)
    except MetricError:
        return None  # no item with a human label, a verdict and a confidence
    top = brier_score_loss(human, judge, conf)
    scored = pd.notna(human) & pd.notna(judge) & ~np.isnan(conf)
    multiclass = None
    if proba is not None and not np.isnan(proba[scored]).any():
        multiclass = multiclass_brier_score_loss(human[scored], proba[scored], labels=labels)
    agree = np.asarray(human[scored] == judge[scored], dtype=np.float64)
    return ConfidenceSummary(
        n=bins.n,
        reliability=bins,
        ece=bins.ece,
        brier_top_label=top,
        brier_multiclass=multiclass,
        mean_confidence=float(np.mean(conf[scored])),
        agreement=float(np.mean(agree)),
    )


def _labels_of(calibration: Calibration, run_id: int) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """(human, judge) labels per item of the calibration, on the scale (missing: NaN/None)."""
    human = calibration.human.to_numpy()
    results = calibration.data.run(run_id).results.reindex(calibration.human.index)
    ok = (results["status"] == "ok").to_numpy()
    labels = np.asarray(results["label"].to_numpy())
    if calibration.data.scale.is_numeric:
        judge = np.where(ok, labels.astype(np.float64), np.nan)
    else:
        judge = np.asarray(pd.Series(labels, dtype=object).where(ok, None).to_numpy(), dtype=object)
    return human, judge


def _parts(
    calibration: Calibration, split: DevTest
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    ids = calibration.data.items["item_id"].reindex(calibration.human.index).astype(str)
    dev = ids.isin({str(x) for x in split.dev}).to_numpy()
    test = ids.isin({str(x) for x in split.test}).to_numpy()
    return dev, test


def confidence_view(
    calibration: Calibration,
    *,
    split: DevTest | None = None,
    confidences: Mapping[int, Any] | None = None,
    n_bins: int = 10,
    target: float | None = 0.9,
    risk: float = 0.05,
    min_decided: int = MIN_DECIDED,
    recalibration: str | None = "isotonic",
    slice_column: str | None = None,
    max_slices: int = 20,
) -> ConfidenceView:
    """The confidence of every run of ``calibration`` against its human labels (see the module).

    ``split`` (dev and test item ids; the items of neither part take no part in the selective
    procedure or the recalibration) enables the selective threshold at ``target`` agreement with
    ``risk`` (``target=None``: no threshold) and the recalibration (``"isotonic"`` or
    ``"temperature"``; ``None``: none). ``slice_column`` (a column of ``calibration.data.metadata``)
    adds the view per slice. ``confidences`` maps a run id to its confidences (a Series indexed
    like ``calibration.data.items``, or one value per item), instead of the run's ``confidence``
    column.
    """
    dev = test = None
    if split is not None:
        dev, test = _parts(calibration, split)
    groups: list[tuple[str, npt.NDArray[np.bool_]]] = []
    if slice_column is not None:
        positions = calibration.data.items.index.get_indexer(calibration.human.index)
        groups = [
            (name, mask[positions])
            for name, mask in slice_groups(calibration.data, slice_column, max_slices=max_slices)
        ]
    ids = calibration.data.items["item_id"].reindex(calibration.human.index).astype(str).to_numpy()
    out: list[RunConfidence] = []
    for run in calibration.runs:
        run_id = run.info.id
        conf = _aligned_confidence(calibration, run_id, confidences)
        if conf is None or np.isnan(conf).all():
            out.append(
                RunConfidence(
                    run.info, None, None, None, (), (f"{run.title}: no verdict has a confidence.",)
                )
            )
            continue
        outside = ~np.isnan(conf) & ((conf < 0) | (conf > 1))
        if outside.any():
            at = int(np.flatnonzero(outside)[0])
            raise EvalcoreError(
                f"{run.title}: item {ids[at]!r} has confidence {float(conf[at])!r}; a confidence is a "
                "probability between 0 and 1",
                item_id=str(ids[at]),
            )
        human, judge = _labels_of(calibration, run_id)
        proba = _probability_matrix(calibration, run_id)
        labels = list(calibration.labels)
        summary = _summary(human, judge, conf, proba, labels, n_bins)
        notes: list[str] = []
        selective = None
        recal = None
        if dev is not None and test is not None:
            dev_ids = tuple(sorted(ids[dev & pd.notna(human)]))
            test_ids = tuple(sorted(ids[test & pd.notna(human)]))
            if target is not None:
                if (dev & pd.notna(human)).any() and (test & pd.notna(human)).any():
                    chosen = selective_threshold(
                        human[dev],
                        judge[dev],
                        conf[dev],
                        target=target,
                        risk=risk,
                        min_decided=min_decided,
                    )
                    on_test = selective_outcome(
                        human[test], judge[test], conf[test], threshold=chosen.threshold
                    )
                    curve = coverage_curve(human[test], judge[test], conf[test])
                    selective = SelectiveReport(
                        run.title, chosen, on_test, curve, dev_ids, test_ids
                    )
                else:
                    notes.append(f"{run.title}: the split has no labelled item in dev or in test.")
            if recalibration is not None:
                try:
                    fitted = fit_recalibration(
                        human[dev], judge[dev], conf[dev], method=recalibration
                    )
                    after = fitted.apply(conf[test])
                    recal = RecalibrationCheck(
                        fitted,
                        n_test=int(
                            (
                                pd.notna(human[test])
                                & pd.notna(judge[test])
                                & ~np.isnan(conf[test])
                            ).sum()
                        ),
                        ece_before=expected_calibration_error(
                            human[test], judge[test], conf[test], n_bins=n_bins
                        ),
                        ece_after=expected_calibration_error(
                            human[test], judge[test], after, n_bins=n_bins
                        ),
                        brier_before=brier_score_loss(human[test], judge[test], conf[test]),
                        brier_after=brier_score_loss(human[test], judge[test], after),
                    )
                except MetricError as exc:
                    notes.append(f"{run.title}: no recalibration ({exc}).")
        elif target is not None or recalibration is not None:
            notes.append(f"{run.title}: no dev/test split, so no threshold and no recalibration.")
        slices: list[SliceConfidence] = []
        for name, mask in groups:
            part = _summary(
                human[mask],
                judge[mask],
                conf[mask],
                None if proba is None else proba[mask],
                labels,
                n_bins,
            )
            in_test: SelectiveOutcome | None = None
            if selective is not None and test is not None:
                keep = mask & test
                in_test = selective_outcome(
                    human[keep], judge[keep], conf[keep], threshold=selective.threshold
                )
            slices.append(SliceConfidence(name, int(mask.sum()), part, in_test))
        out.append(RunConfidence(run.info, summary, selective, recal, tuple(slices), tuple(notes)))
    return ConfidenceView(
        runs=tuple(out),
        n_bins=int(n_bins),
        target=target,
        risk=float(risk),
        min_decided=int(min_decided),
        recalibration=recalibration,
        slice_column=slice_column,
    )


def run_label_next(
    calibration: Calibration,
    run_id: int,
    *,
    n: int,
    metric: str | None = None,
    other: int | None = None,
    split: DevTest | None = None,
    confidences: Mapping[int, Any] | None = None,
    members: pd.DataFrame | None = None,
    slice_column: str | None = None,
    max_slices: int = 20,
    n_sim: int = 50,
    n_boot: int = 500,
    seed: int = 0,
) -> LabelNext:
    """The next ``n`` items to label for ``metric`` of run ``run_id`` (default the headline kappa
    of the scale: quadratic-weighted on ordinal scales), or to separate it from run ``other``.

    Items of ``split.test`` are never proposed. ``members`` (items x members, indexed like
    ``calibration.data.items``) are a jury's member labels; ``slice_column`` spreads the batch over
    the slices of a metadata column. The item ids are the dataset's own
    (``calibration.data.items["item_id"]``); see :func:`evalcore.metrics.label_next`.
    """
    key = metric or headline_kappa(calibration.kind).key
    human, judge = _labels_of(calibration, run_id)
    conf = _aligned_confidence(calibration, run_id, confidences)
    other_labels = None if other is None else _labels_of(calibration, other)[1]
    ids = calibration.data.items["item_id"].reindex(calibration.human.index).astype(str).to_numpy()
    exclude = None
    if split is not None:
        # a hashed lookup: np.isin on arrays of strings compares every pair (20 s at 10**5 items)
        exclude = pd.Index(ids).isin({str(x) for x in split.test})
    slices = None
    if slice_column is not None:
        positions = calibration.data.items.index.get_indexer(calibration.human.index)
        slices = np.full(len(ids), None, dtype=object)
        for name, mask in slice_groups(calibration.data, slice_column, max_slices=max_slices):
            slices[mask[positions]] = name
    jury = None if members is None else members.reindex(calibration.human.index)
    positive = None
    if calibration.kind == "binary":
        positive = calibration.data.scale.positive
    return label_next(
        human,
        judge,
        n=n,
        metric=key,
        y_conf=conf,
        y_other=other_labels,
        y_members=jury,
        exclude=exclude,
        slices=slices,
        item_ids=ids,
        labels=list(calibration.labels),
        positive=positive if positive in calibration.labels else None,
        n_sim=n_sim,
        n_boot=n_boot,
        seed=seed,
    )
