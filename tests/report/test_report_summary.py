"""The project summary: traffic lights against thresholds, best runs, and the history frame."""

from __future__ import annotations

from datetime import datetime

import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from evalcore.metrics import CalibrationReport
from evalcore.report import (
    AMBER_MARGIN,
    history_figure,
    history_frame,
    light_of,
    project_calibrations,
    project_summary,
    threshold_metric,
    verdict,
)
from tests.report.conftest import Tiny, build_pairwise


def _report(table, labels, kind="nominal", n_boot=0):
    return CalibrationReport.from_counts(table, labels=labels, kind=kind, n_boot=n_boot)


def test_green_only_when_every_lower_bound_clears_its_threshold() -> None:
    # recalls 8/10 and 9/10 -> balanced accuracy 0.85; kappa (17/20 - 1/2) / (1 - 1/2) = 0.7;
    # no resamples: balanced accuracy has no interval, so it reads 0.85 +- AMBER_MARGIN =
    # [0.80, 0.90]; kappa keeps its analytic interval, about [0.37, 1.00]
    r = _report([[8, 2], [1, 9]], ["pass", "fail"])
    assert r.ci["cohen_kappa"][0] == pytest.approx(0.3674, abs=1e-4)
    v = verdict(r, {"balanced_accuracy": 0.8, "cohen_kappa": 0.3})
    assert v.light == "green"
    assert all(c.met for c in v.checks)
    assert v.checks[1].value == pytest.approx(0.7)
    assert v.words.startswith("green: every interval is wholly at or above")
    # kappa 0.7 >= 0.6, but its lower bound 0.37 does not clear it: amber, not green
    v = verdict(r, {"balanced_accuracy": 0.8, "cohen_kappa": 0.6})
    assert v.light == "amber"
    assert v.checks[1].light == "amber"
    assert v.checks[1].close
    assert not v.checks[1].met
    assert "Cohen's kappa's interval [0.37, 1.00] straddles 0.60" in v.words
    assert "cannot tell" in v.words


@pytest.mark.parametrize(
    ("low", "high", "threshold", "light"),
    [
        (0.72, 0.88, 0.70, "green"),  # lower bound clears
        (0.70, 0.88, 0.70, "green"),  # lower bound equal: at or above
        (0.64, 0.79, 0.70, "amber"),  # straddles, value may be above or below
        (0.55, 0.70, 0.70, "amber"),  # upper bound equal: not below
        (0.55, 0.69, 0.70, "red"),  # upper bound below
    ],
)
def test_the_one_light_rule(low: float, high: float, threshold: float, light: str) -> None:
    assert light_of(low, high, threshold) == light


def test_amber_when_the_interval_straddles_red_when_it_is_below() -> None:
    # recalls 80/100 and 90/100 -> 0.85, with an interval well inside (0, 1)
    r = _report([[80, 20], [10, 90]], ["pass", "fail"], n_boot=500)
    low, high = r.ci["accuracy_balanced"]
    assert low < 0.85 < high < 0.95
    # a threshold below the value but above the lower bound: the value meets it, the data do not
    # show it -> amber (the old rule said green)
    below = verdict(r, {"balanced_accuracy": (low + 0.85) / 2})
    assert below.light == "amber"
    assert "straddles" in below.words
    above = verdict(r, {"balanced_accuracy": (0.85 + high) / 2})
    assert above.light == "amber"
    assert verdict(r, {"balanced_accuracy": low}).light == "green"
    red = verdict(r, {"balanced_accuracy": high + 0.01})
    assert red.light == "red"
    assert red.words.startswith("red: balanced accuracy's interval")
    assert "is wholly below" in red.words


def test_without_intervals_the_light_reads_the_value_plus_minus_the_margin() -> None:
    r = _report([[8, 2], [1, 9]], ["pass", "fail"])  # 0.85, no interval
    assert verdict(r, {"balanced_accuracy": 0.85 - AMBER_MARGIN - 0.001}).light == "green"
    assert verdict(r, {"balanced_accuracy": 0.85 - AMBER_MARGIN + 0.001}).light == "amber"
    assert verdict(r, {"balanced_accuracy": 0.85 + AMBER_MARGIN - 0.001}).light == "amber"
    assert verdict(r, {"balanced_accuracy": 0.85 + AMBER_MARGIN + 0.001}).light == "red"


def test_one_red_check_makes_the_run_red() -> None:
    r = _report([[8, 2], [1, 9]], ["pass", "fail"])  # BA [0.80, 0.90], kappa [0.37, 1.00]
    v = verdict(r, {"balanced_accuracy": 0.95, "cohen_kappa": 0.6})
    assert [c.light for c in v.checks] == ["red", "amber"]
    assert v.light == "red"


def test_no_report_no_light() -> None:
    v = verdict(None, {"balanced_accuracy": 0.8})
    assert v.light == "none"
    assert "no run" in v.summary


def test_threshold_names_map_to_report_metrics() -> None:
    assert threshold_metric("balanced_accuracy", "binary")[0] == "accuracy_balanced"
    assert threshold_metric("weighted_f1", "ordinal")[0] == "f1_score_balanced"
    assert threshold_metric("cohen_kappa", "ordinal")[0] == "cohen_kappa_quadratic"
    assert threshold_metric("cohen_kappa", "pairwise")[0] == "cohen_kappa"
    assert threshold_metric("spearman", "ordinal")[0] == "spearman"


def test_project_summary_picks_the_best_run_and_judges_it(tiny_sqlite: Tiny) -> None:
    t = tiny_sqlite
    summary = project_summary(t.store, t.project_id, n_boot=200)
    (row,) = summary.criteria
    assert row.criterion.name == "fluency"
    assert row.best.title == "v2"  # 2/3 beats 0.5
    # thresholds: balanced accuracy >= 0.6 (2/3 met) and kappa >= 0.3 (quadratic on 1-3)
    assert summary.thresholds == {"balanced_accuracy": 0.6, "cohen_kappa": 0.3}
    # v2 on q0, q1, q3, q4, q5: humans 1, 2, 3, 1, 2; v2 1, 2, 2, 1, 2
    kappa = cohen_kappa_score([1, 2, 3, 1, 2], [1, 2, 2, 1, 2], weights="quadratic")
    assert row.verdict.checks[1].value == pytest.approx(kappa)
    assert kappa >= 0.3
    # both values clear their thresholds, but five items give intervals that straddle them
    ba_low = row.verdict.checks[0].ci[0]
    assert ba_low < 0.6
    assert row.verdict.light == "amber"
    table = summary.table()
    assert table.loc[0, "best run"] == "v2"
    assert table.loc[0, "balanced accuracy"].startswith("0.667 [")
    assert table.loc[0, "human policy"] == "majority vote"
    t.store.update_project_settings(t.project_id, {"thresholds": {"balanced_accuracy": 0.99}})
    stricter = project_summary(t.store, t.project_id, n_boot=200)
    assert stricter.criteria[0].verdict.light in ("amber", "red")


def test_project_calibrations_cover_every_criterion_with_runs(sqlite_store) -> None:
    from tests.report.conftest import build_tiny

    t = build_tiny(sqlite_store)
    calibrations = project_calibrations(sqlite_store, t.project_id, policy="mean", n_boot=0)
    assert [c.data.criterion.name for c in calibrations] == ["fluency"]
    assert calibrations[0].policy == "mean"
    world = build_pairwise(sqlite_store)
    project = sqlite_store.get_dataset(world.dataset_id).project_id
    # the mean does not apply to a pairwise choice: that criterion falls back to the majority
    (pairwise,) = project_calibrations(sqlite_store, project, policy="mean", n_boot=0)
    assert pairwise.policy == "majority"


def test_history_has_one_point_per_template_run(tiny_sqlite: Tiny) -> None:
    t = tiny_sqlite
    calibrations = project_calibrations(t.store, t.project_id, n_boot=100)
    t.store.import_judge_labels(
        t.dataset_id,
        t.criterion_id,
        "legacy",
        pd.Series({"q0": 1, "q1": 2}),
    )
    frame = history_frame(calibrations)
    assert frame["run"].tolist() == ["v1", "v2"]
    assert frame["version"].tolist() == [1, 2]
    assert frame["series"].tolist() == ["fluency-judge · tiny-model"] * 2
    assert frame["accuracy_balanced"].tolist() == pytest.approx([0.5, 2 / 3])
    assert frame["when"].tolist()[0] < frame["when"].tolist()[1]
    with_imported = history_frame(
        project_calibrations(t.store, t.project_id, n_boot=0), include_imported=True
    )
    assert "(imported)" in set(with_imported["template"])
    fig = history_figure(frame)
    assert len(fig.data) == 1
    assert list(fig.data[0].text) == ["v1", "v2"]
    # a date axis of datetimes (not strings or epoch numbers), its ticks in days or hours
    assert fig.layout.xaxis.type == "date"
    assert all(isinstance(x, datetime) for x in fig.data[0].x)
    assert list(fig.data[0].x) == [w.to_pydatetime() for w in frame["when"]]
    formats = [stop.value for stop in fig.layout.xaxis.tickformatstops]
    assert formats == ["%H:%M<br>%d %b %Y", "%d %b<br>%Y"]
