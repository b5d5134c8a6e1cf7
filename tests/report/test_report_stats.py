"""Issue 21 in the engine: the axis is the scale, the ceiling among all annotators, the paired row of
the accuracy difference, intervals that never collapse, and the file path's imports."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.data import ColumnMapping, load_file
from evalcore.metrics import calibrate, estimate_rate, ppi_rate, rater_agreement
from evalcore.report import BASELINE_ROWS, FLEISS_ROW, calibrate_runs, file_data


def _calibration(frame: pd.DataFrame, judges: tuple[str, ...], humans: tuple[str, ...] = ("h",)):
    loaded = load_file(
        frame.to_csv(index=False).encode(),
        name="t.csv",
        mapping=ColumnMapping(human=humans, judge=judges),
    )
    (data,) = file_data(loaded)
    return calibrate_runs(data, n_boot=0)


def test_a_judges_weighted_figures_do_not_depend_on_another_column() -> None:
    # humans use 1..5; judge "a" uses 1, 2, 4, 5; judge "b" is the only one to use 3
    human = [1, 2, 3, 4, 5, 1, 2, 4, 5, 3, 2, 4]
    frame = pd.DataFrame(
        {
            "h": human,
            "a": [1, 2, 4, 4, 5, 2, 1, 5, 5, 2, 2, 4],
            "b": [1, 3, 3, 4, 5, 1, 2, 3, 5, 3, 3, 4],
        }
    )
    alone = _calibration(frame, ("a",)).runs[0].report
    beside = _calibration(frame, ("a", "b")).runs[0].report
    assert alone is not None
    assert beside is not None
    assert alone.labels == beside.labels == (1.0, 2.0, 3.0, 4.0, 5.0)
    for key in ("cohen_kappa_linear", "cohen_kappa_quadratic", "gwet_ac1", "gwet_ac2_linear"):
        assert getattr(alone, key) == pytest.approx(getattr(beside, key), abs=1e-12)
    # and they are the figures on the scale 1..5 (the inferred scale of the file)
    direct = calibrate(frame["h"], frame["a"], labels=[1, 2, 3, 4, 5], kind="ordinal", n_boot=0)
    assert alone.cohen_kappa_linear == pytest.approx(direct.cohen_kappa_linear, abs=1e-12)


def test_the_ceiling_has_every_coefficient_among_all_annotators() -> None:
    rng = np.random.default_rng(0)
    base = rng.integers(1, 6, 40)
    humans = {
        f"h{i}": np.where(rng.random(40) < 0.7, base, rng.integers(1, 6, 40)) for i in range(3)
    }
    frame = pd.DataFrame({**humans, "j": np.clip(base + rng.integers(-1, 2, 40), 1, 5)})
    calibration = calibrate_runs(
        file_data(
            load_file(
                frame.to_csv(index=False).encode(),
                name="c.csv",
                mapping=ColumnMapping(human=tuple(humans), judge=("j",)),
            )
        )[0],
        n_boot=50,
    )
    ceiling = calibration.ceiling
    assert ceiling is not None
    keys = [c.key for c in ceiling.coefficients]
    assert keys == [
        "fleiss_kappa",
        "gwet_ac1",
        "gwet_ac2_linear",
        "gwet_ac2_quadratic",
        "krippendorff_alpha_nominal",
        "krippendorff_alpha_ordinal",
        "krippendorff_alpha_interval",
    ]
    table = frame[list(humans)].to_numpy()
    fleiss = ceiling.coefficient("fleiss_kappa")
    assert fleiss is not None
    direct = rater_agreement(table, coefficient="fleiss_kappa", labels=[1, 2, 3, 4, 5], n_boot=0)
    assert fleiss.value == pytest.approx(direct.value)
    assert fleiss.se == pytest.approx(direct.se)
    assert fleiss.boot_ci is not None
    assert ceiling.coefficient("krippendorff_alpha_ordinal").se is None  # bootstrap only
    record = ceiling.to_dict()["coefficients"]
    assert record["gwet_ac1"]["interval_method"] == "analytic (t, n - 1)"
    assert calibration.ceiling.krippendorff_alpha == pytest.approx(
        ceiling.coefficient("krippendorff_alpha_ordinal").value
    )
    text = calibration.table().text
    assert text.loc[FLEISS_ROW, "humans (ceiling)"].startswith(f"{fleiss.value:.3f} [")
    exported = calibration.to_frame()
    assert "human_fleiss_kappa" in set(exported["metric"])
    assert "human_gwet_ac2_quadratic_se" in set(exported["metric"])


def test_the_paired_row_compares_accuracy_with_its_own_interval() -> None:
    frame = pd.DataFrame(
        {
            "h": [1, 1, 2, 2, 1, 2, 1, 2],
            "a": [1, 2, 2, 1, 1, 2, 2, 2],
            "b": [1, 1, 2, 2, 1, 2, 1, 1],
        }
    )
    calibration = _calibration(frame, ("a", "b"))
    comparison = calibration.runs[1].comparison
    assert comparison is not None
    # a right on 5, b right on 7: b − a = 2/8; discordant: a right b wrong 1, a wrong b right 3
    assert comparison.diff_accuracy == pytest.approx(0.25)
    assert (comparison.a_right_b_wrong, comparison.a_wrong_b_right) == (1, 3)
    low, high = comparison.diff_accuracy_ci
    assert low < 0.25 < high
    assert comparison.mcnemar_p == pytest.approx(0.625)  # 2 * P(X <= 1 | 4, 1/2) = 2 * 5/16
    assert comparison.mcnemar_midp == pytest.approx(0.375)  # 2 * (5/16 - 4/16 / 2)
    rows = {row["quantity"]: row for row in comparison.rows()}
    assert rows["accuracy"]["test"] == "McNemar exact"
    assert rows["accuracy_balanced"]["interval"] == "paired percentile bootstrap"
    text = calibration.table().text
    assert text.loc[BASELINE_ROWS[2], "b"].startswith("+0.250 [")
    assert text.loc[BASELINE_ROWS[3], "b"] == "0.625 (n=8)"
    assert json.dumps(comparison.to_dict(), allow_nan=False)


def test_perfect_agreement_gets_a_wilson_interval_not_a_point() -> None:
    report = calibrate(["pass"] * 5, ["pass"] * 5, labels=["pass", "fail"], kind="binary", n_boot=0)
    low, high = report.ci["accuracy"]
    assert low == pytest.approx(5 / (5 + 1.959964**2), abs=1e-6)  # Wilson at 5 of 5
    assert high == 1.0
    assert report.ci_methods["accuracy"] == report.ci_methods["tpr"] == "Wilson score"
    assert math.isnan(report.ci["tnr"][0])  # no human negative: TNR undefined


def test_a_degenerate_ppi_interval_keeps_its_number_and_gives_the_wilson_one() -> None:
    # 5 of 5 labelled pass and the judge says pass on them; the judge fails 2 of 6 unlabelled:
    # lambda = cov 0 / ... = 0, so the estimate is 1 with SE 0: ppi-python's point [1, 1]
    found = ppi_rate(["pass"] * 5, ["pass"] * 5, ["pass"] * 4 + ["fail"] * 2, positive="pass")
    assert found.ci == (1.0, 1.0)
    assert found.fallback_ci == pytest.approx((5 / (5 + 1.959964**2), 1.0), abs=1e-6)
    assert "single point" in (found.note or "")
    both = estimate_rate(
        ["pass"] * 5, ["pass"] * 5, ["pass"] * 4 + ["fail"] * 2, positive="pass", n_boot=0
    )
    assert any("single point" in note for note in both.notes)
    assert both.labelled.ci[0] < 1.0  # the labelled-only baseline never collapses


def test_a_constant_judge_gets_lambda_zero_and_says_why() -> None:
    found = ppi_rate([1, 0, 1, 1], [1, 1, 1, 1], [1] * 10, positive=1)
    assert found.lam == 0.0
    assert found.rate == pytest.approx(0.75)
    assert "NaN" in (found.note or "")


def test_calibrating_a_file_never_imports_the_database_layer(tmp_path: Path) -> None:
    path = tmp_path / "v.csv"
    pd.DataFrame(
        {"item_id": ["a", "b", "c", "d"], "q/human_rating": [1, 2, 3, 4], "q/score": [1, 2, 4, 4]}
    ).to_csv(path, index=False)
    code = (
        "import sys, io, contextlib\n"
        "from evalcore.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['calibrate', {str(path)!r}, '--json']) == 0\n"
        "print(sorted(m for m in ('sqlalchemy', 'plotly', 'evalcore.store._store', 'scipy')"
        " if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
