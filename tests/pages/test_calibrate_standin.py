"""The Calibrate page's newer views through AppTest, on the demo project: the honest baselines, the
Alt-Test (project and upload modes), the judge's agreement with itself and the human-level rate."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from evalcore.report import CHANCE_COLUMN, CONSTANT_COLUMN, prevalence_row
from evalcore.store import JudgeResultInput, Store
from ui.state import Calibrate as K
from ui.state import key

V1 = "helpfulness v1 (demo-judge-mini)"


@pytest.fixture
def app_db(demo_db: str) -> str:
    return demo_db


def _open(open_app: Callable[..., AppTest]) -> AppTest:
    at = open_app(page="calibrate")
    assert not at.exception, at.exception
    return at


def _frame(at: AppTest, row: str) -> pd.DataFrame:
    for element in at.dataframe:
        value = element.value
        if row in value.index or row in value.columns:
            return value
    raise AssertionError(f"no table with a row or column {row!r}")


def _view(at: AppTest, name: str) -> AppTest:
    at.segmented_control(key=K.VIEW).set_value(name).run()
    assert not at.exception, at.exception
    return at


def test_the_table_shows_the_honest_baselines(open_app, demo: Store) -> None:
    at = _open(open_app)
    table = _frame(at, "balanced accuracy")
    assert CONSTANT_COLUMN in table.columns
    assert CHANCE_COLUMN in table.columns
    # the 1-5 scale: five share rows, the shares add up to 100%
    shares = [
        float(table.loc[prevalence_row(float(v)), CHANCE_COLUMN].rstrip("%")) for v in range(1, 6)
    ]
    assert sum(shares) == pytest.approx(100.0, abs=0.3)
    assert table.loc["Cohen's kappa (quadratic)", CHANCE_COLUMN] in ("0.000", "-0.000")
    # the judges beat the constant judge on balanced accuracy
    assert float(table.loc["balanced accuracy", CONSTANT_COLUMN]) == pytest.approx(0.2)
    assert float(table.loc["balanced accuracy", V1].split()[0]) > 0.2
    assert not table.loc["balanced accuracy", CONSTANT_COLUMN].endswith("★")
    assert "always gives the humans' most frequent label" in " ".join(c.value for c in at.caption)


def test_the_alt_test_view_in_the_demo(open_app, demo: Store) -> None:
    at = _view(_open(open_app), "Replace an annotator?")
    verdict = [m.value for m in at.warning] + [m.value for m in at.success]
    assert any("Alt-Test at ε = 0.2" in v for v in verdict)
    # first the sentence a manager can repeat, with the test's settings
    assert any(v.startswith("The judge can") and "(ε = 0.2, q = 0.05)" in v for v in verdict)
    assert len(at.get("plotly_chart")) == 1
    table = _frame(at, "judge wins (ρ)")
    assert list(table["annotator"]) == ["ana", "ben", "chloe", "dev", "farah"]
    assert at.selectbox(key=key(K.ALT, "scoring")).value == "neg_rmse"  # an ordinal scale
    # granting the judge more advantage never lowers the number of annotators it beats
    before = (table["judge beats them"] == "yes").sum()
    at.slider(key=key(K.ALT, "epsilon")).set_value(0.3).run()
    assert not at.exception
    after = (_frame(at, "judge wins (ρ)")["judge beats them"] == "yes").sum()
    assert after >= before
    assert any("ε = 0.3" in m.value for m in [*at.warning, *at.success])


def test_the_alt_test_needs_three_annotators(open_app, demo: Store) -> None:
    at = _open(open_app)
    at.selectbox(key=K.POLICY).set_value("annotator:ana").run()
    at = _view(at, "Replace an annotator?")
    # the annotators are the data's, whatever the policy: the test still runs
    assert any("Alt-Test" in m.value for m in [*at.warning, *at.success])


def test_self_agreement_of_a_sampled_run(open_app, demo: Store) -> None:
    base = next(r for r in demo.list_runs() if r.name == V1)
    items = demo.items_frame(base.dataset_id)
    rng = np.random.default_rng(0)
    run = demo.create_run(base.dataset_id, base.criterion_id, name="sampled x3")
    results = []
    for pk in items.index[:120]:
        first = int(rng.integers(1, 6))
        samples = [first, first, int(np.clip(first + rng.integers(-1, 2), 1, 5))]
        results.append(
            JudgeResultInput(
                item_id=int(pk),
                status="ok",
                label=max(set(samples), key=samples.count),
                samples=samples,  # type: ignore[arg-type]
            )
        )
    demo.record_results(run.id, results)
    demo.set_run_status(run.id, "done")
    at = _open(open_app)
    at.multiselect(key=K.RUNS).set_value([base.id, run.id]).run()
    at = _view(at, "Self-agreement")
    table = _frame(
        at, "items whose samples disagree"
    )  # AppTest keeps keys of selectable tables only
    assert list(table.columns) == ["sampled x3"]
    assert table.loc["samples", "sampled x3"] == "3"
    assert table.loc["items with 2+ samples", "sampled x3"] == "120"
    share = float(table.loc["items whose samples disagree", "sampled x3"].rstrip("%"))
    assert 0.0 < share < 100.0
    assert table.loc["Krippendorff's α (humans)", "sampled x3"] != "–"


def test_self_agreement_without_samples_says_how_to_get_them(open_app, demo: Store) -> None:
    at = _view(_open(open_app), "Self-agreement")
    assert any("n > 1" in m.value for m in at.info)


def test_the_rate_people_would_give(open_app, demo: Store) -> None:
    at = _open(open_app)
    at.selectbox(key=K.CRITERION).set_value(demo.get_criterion_by_name(1, "groundedness").id).run()
    at = _view(at, "Scores and thresholds")
    table = _frame(at, "unlabelled items")
    methods = table["method"].tolist()
    assert methods[0] == "labelled only"
    assert methods[-1].startswith("PPI++ (λ = ")
    assert all(cell.endswith("(95%)") for cell in table["interval"])
    assert int(table["unlabelled items"].iloc[-1]) > 0


def test_the_alt_test_in_upload_mode(open_app) -> None:
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 2, 60)
    words = np.array(["fail", "pass"], dtype=object)
    frame = pd.DataFrame({"id": [f"i{k}" for k in range(60)]})
    for name in ("ann", "bob", "cy", "dee"):
        frame[name] = words[np.where(rng.random(60) < 0.8, truth, 1 - truth)]
    frame["judge"] = words[np.where(rng.random(60) < 0.9, truth, 1 - truth)]
    at = _open(open_app)
    at.segmented_control(key=K.MODE).set_value("Upload a file").run()
    at.file_uploader(key=K.FILES).set_value(
        [("alt.csv", frame.to_csv(index=False).encode(), "text/csv")]
    ).run()
    at.multiselect(key=key(K.MAP_HUMAN, "alt.csv")).set_value(["ann", "bob", "cy", "dee"]).run()
    at.multiselect(key=key(K.MAP_JUDGE, "alt.csv")).set_value(["judge"]).run()
    assert not at.exception, at.exception
    prefix = key(K.FILE_ALT, "label", "alt.csv")
    assert at.selectbox(key=key(prefix, "scoring")).value == "accuracy"
    assert any("Alt-Test at ε = 0.2" in m.value for m in [*at.warning, *at.success])
    assert list(_frame(at, "judge wins (ρ)")["annotator"]) == ["ann", "bob", "cy", "dee"]
    assert CONSTANT_COLUMN in _frame(at, "balanced accuracy").columns
