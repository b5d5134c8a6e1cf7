"""The Calibrate page's project mode on the demo project, through AppTest: every view.

The demo's story shows: helpfulness v2 (mini) is better than v1 overall but worse on topic=shipping;
the both-order preference run is not position-consistent; groundedness has scores to sweep.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from evalcore.report import (
    REFERENCE_COLUMNS,
    calibrate_runs,
    disagreements,
    load_calibration_data,
)
from evalcore.store import Store
from evalcore.workflows.calibrate import matrix_cell as cell_from_selection
from ui.state import Calibrate as K
from ui.state import key

V1 = "helpfulness v1 (demo-judge-mini)"
V2 = "helpfulness v2 (demo-judge-mini)"
PRO = "helpfulness v2 (demo-judge-pro)"
BOTH = "preference v2 (demo-judge-mini, both orders)"


@pytest.fixture
def app_db(demo_db: str) -> str:
    """The pages open the demo project (see conftest.py)."""
    return demo_db


def _ids(store: Store) -> dict[str, int]:
    return {r.name: r.id for r in store.list_runs()}


def _open(open_app: Callable[..., AppTest]) -> AppTest:
    at = open_app(page="calibrate")
    assert not at.exception, at.exception
    return at


def _frame(at: AppTest, row: str) -> pd.DataFrame:
    """The first table with a row named ``row`` (only selectable tables keep their key in AppTest)."""
    for element in at.dataframe:
        value = element.value
        if row in value.index or any(str(i).startswith(row) for i in value.index):
            return value
    raise AssertionError(f"no table with a row {row!r}")


def _table(at: AppTest) -> pd.DataFrame:
    return _frame(at, "balanced accuracy")


def _number(cell: str) -> float:
    return float(re.match(r"[-+]?\d+\.\d+", cell).group(0))


def _items_line(at: AppTest) -> str:
    return next(m.value for m in at.markdown if " items** where" in m.value)


def test_opens_on_helpfulness_with_all_runs_side_by_side(open_app, demo: Store) -> None:
    at = _open(open_app)
    table = _table(at)
    assert list(table.columns) == [V1, V2, PRO, *REFERENCE_COLUMNS]
    # v2 is better than v1 overall; the pro model is best and carries the marks
    assert _number(table.loc["balanced accuracy", V2]) > _number(table.loc["balanced accuracy", V1])
    assert table.loc["balanced accuracy", PRO].endswith("★")
    assert table.loc["Δ balanced accuracy vs baseline", V1] == "baseline"
    assert table.loc["Δ balanced accuracy vs baseline", V2].startswith("+")
    assert "McNemar p (Δ accuracy) vs baseline" in table.index
    assert int(table.loc["unparsed", V2]) == 4
    assert "Cohen's kappa (quadratic)" in table.index
    captions = " ".join(c.value for c in at.caption)
    assert "human label: majority vote" in captions
    # the human ceiling beside the judges: the reference column
    assert table.loc["Cohen's kappa (quadratic)", "humans (ceiling)"].endswith("(mean pairwise)")
    assert float(table.loc["Krippendorff's α (humans)", "humans (ceiling)"].split()[0]) > 0.8
    assert table.loc["Krippendorff's α (humans)", V1] == ""
    assert "how much the annotators agree with each other" in captions
    assert len(at.get("plotly_chart")) == 1  # the confusion matrices


def test_the_headline_answers_first(open_app, demo: Store) -> None:
    at = _open(open_app)
    table = _table(at)
    markdown = [m.value for m in at.markdown]
    # the headline comes before the folded table: each run's row is drawn first
    first_table_row = next(i for i, m in enumerate(markdown) if m.startswith("**" + V1[:20]))
    badges = [m for m in markdown if "-badge[" in m]
    assert len(badges) == 3  # one per run, in run order
    assert markdown.index(badges[0]) > first_table_row
    # the pro run's balanced accuracy, as the full table shows it, with its light's words
    ba = table.loc["balanced accuracy", PRO].removesuffix(" ★").split(" [")[0]
    assert any(m.startswith(f"{float(ba):.2f} [") for m in markdown)
    pro = badges[2]
    assert pro.startswith(":orange-badge[amber]")
    assert "straddles 0.70" in pro
    captions = " ".join(c.value for c in at.caption)
    assert "humans among themselves" in captions
    assert "constant judge" in captions
    assert "amber: an interval straddles its threshold" in captions


def test_the_ceiling_setting_and_its_leave_one_out(open_app, demo: Store) -> None:
    at = _open(open_app)
    assert at.number_input(key=K.MIN_SHARED).value == 10
    assert any("Left out (fewer than 10 shared items)" in c.value for c in at.caption)
    loo = next(d.value for d in at.dataframe if "α without them" in d.value.columns)
    assert len(loo) >= 3  # one row per annotator kept
    raters = next(d.value for d in at.dataframe if "standard error" in d.value.columns)
    assert any(name.startswith("Fleiss") for name in raters["coefficient"])
    assert any(name.startswith("Gwet") for name in raters["coefficient"])
    # helpfulness is ordinal: the PPI++ estimate of the mean score and of each label's share
    texts = [d.value.astype(str).to_string() for d in at.dataframe]
    assert any("mean score" in t and "PPI++" in t for t in texts)
    at.number_input(key=K.MIN_SHARED).set_value(100_000).run()
    assert not at.exception
    captions = " ".join(c.value for c in at.caption)
    # nobody shares 100,000 items: everyone is kept, and the ceiling is called fragile
    assert "Fragile ceiling" in captions
    assert "fewer than 100000 items" in captions


def test_changing_the_policy_recomputes(open_app, demo: Store) -> None:
    at = _open(open_app)
    before = _table(at).loc["balanced accuracy", V1]
    assert at.selectbox(key=K.POLICY).options[:3] == [
        "majority vote",
        "median",
        "mean rounded half up",
    ]
    at.selectbox(key=K.POLICY).set_value("mean").run()
    assert not at.exception
    assert _table(at).loc["balanced accuracy", V1] != before
    assert "mean rounded half up" in " ".join(c.value for c in at.caption)
    at.selectbox(key=K.POLICY).set_value("annotator:ana").run()
    assert not at.exception
    ana = int(demo.annotation_matrix(1, 1)["ana"].notna().sum())
    assert int(_table(at).loc["items with a human label", V1]) == ana
    assert "annotator ana only" in " ".join(c.value for c in at.caption)


def test_choosing_runs_and_the_baseline(open_app, demo: Store) -> None:
    ids = _ids(demo)
    at = _open(open_app)
    at.multiselect(key=K.RUNS).set_value([ids[V1], ids[V2]]).run()
    assert list(_table(at).columns) == [V1, V2, *REFERENCE_COLUMNS]
    at.selectbox(key=K.BASELINE).set_value(ids[V2]).run()
    table = _table(at)
    assert table.loc["Δ balanced accuracy vs baseline", V2] == "baseline"
    assert table.loc["Δ balanced accuracy vs baseline", V1].startswith("-")


def test_a_confusion_cell_lists_its_items_and_opens_them(open_app, demo: Store) -> None:
    ids = _ids(demo)
    at = _open(open_app)
    at.toggle(key=key(K.HEAT, "norm")).set_value(True).run()
    assert not at.exception
    at.selectbox(key=K.CELL_RUN).set_value(ids[V1]).run()
    at.selectbox(key=K.CELL_HUMAN).set_value("3").run()
    at.selectbox(key=K.CELL_JUDGE).set_value("5").run()
    assert not at.exception
    # the list holds exactly the items the matrix counts in that cell
    data = load_calibration_data(demo, 1, 1, [ids[V1], ids[V2], ids[PRO]])
    report = calibrate_runs(data, n_boot=0).run(ids[V1]).report
    count = int(report.confusion_matrix[2, 4])
    assert f"**{count} items** where people said **3**" in _items_line(at)
    assert len(at.dataframe(key=K.CELL_ITEMS).value) == count
    first = at.selectbox(key=K.CELL_ITEM).value
    at.button(key=key(K.CELL_NAV, "next")).click().run()
    second = at.selectbox(key=K.CELL_ITEM).value
    assert second != first
    at.button(key=key(K.CELL_NAV, "prev")).click().run()
    assert at.selectbox(key=K.CELL_ITEM).value == first
    # the open item: its texts, every human label and each run's verdict with its raw reply
    text = " ".join(m.value for m in at.markdown)
    assert "**Prompt**" in text
    assert "**Response**" in text
    assert f"**{V1}**: **5**" in text
    assert any(e.label == "Raw reply" for e in at.expander)
    assert len(at.text) >= 3


def test_a_click_on_a_cell_is_read_from_the_selection() -> None:
    selection = {"selection": {"points": [{"customdata": [1, "2", "4", 7, 0.2]}]}}
    assert cell_from_selection(selection, [11, 12, 13]) == (12, "2", "4")
    assert cell_from_selection({"selection": {"points": []}}, [11]) is None
    assert cell_from_selection(selection, [11]) is None  # no such panel
    assert cell_from_selection(None, [11]) is None


def test_disagreements_sorted_and_filtered(open_app, demo: Store) -> None:
    ids = _ids(demo)
    at = _open(open_app)
    at.segmented_control(key=K.VIEW).set_value("Disagreements").run()
    assert not at.exception
    table = at.dataframe(key=K.DIS_TABLE).value
    assert list(table.columns) == ["item_id", "human", V1, V2, PRO, "wrong", "distance"]
    assert table["distance"].is_monotonic_decreasing
    assert table["distance"].iloc[0] == 4
    at.selectbox(key=K.DIS_WRONG).set_value(ids[V2]).run()
    at.selectbox(key=K.DIS_RIGHT).set_value(ids[V1]).run()
    assert not at.exception
    filtered = at.dataframe(key=K.DIS_TABLE).value
    data = load_calibration_data(demo, 1, 1, [ids[V1], ids[V2], ids[PRO]])
    expected = disagreements(calibrate_runs(data, n_boot=0), wrong=ids[V2], right=ids[V1])
    assert filtered["item_id"].tolist() == expected["item_id"].tolist()
    assert (filtered[V2] != filtered["human"]).all()
    assert (filtered[V1] == filtered["human"]).all()
    # the other way round: what v2 fixed
    at.selectbox(key=K.DIS_WRONG).set_value(ids[V1]).run()
    at.selectbox(key=K.DIS_RIGHT).set_value(ids[V2]).run()
    fixed = at.dataframe(key=K.DIS_TABLE).value
    assert len(fixed) > len(filtered)  # v2 is better overall
    assert at.selectbox(key=K.DIS_ITEM).value is not None
    at.button(key=key(K.DIS_NAV, "next")).click().run()
    assert not at.exception


def test_slices_show_v2_worse_on_shipping(open_app, demo: Store) -> None:
    at = _open(open_app)
    at.segmented_control(key=K.VIEW).set_value("Slices").run()
    at.selectbox(key=K.SLICE_COL).set_value("topic").run()
    assert not at.exception
    table = _frame(at, "(all)")
    shipping = next(i for i in table.index if i.startswith("shipping"))
    overall = next(i for i in table.index if i.startswith("(all)"))
    assert _number(table.loc[overall, V2]) > _number(table.loc[overall, V1])
    assert _number(table.loc[shipping, V2]) < _number(table.loc[shipping, V1])
    # one engine, one seed, one answer: the (all) slice repeats the main table, interval and all
    main = _table(at)
    for run in (V1, V2, PRO):
        sliced = table.loc[overall, run].split(" n=")[0]
        assert sliced == main.loc["balanced accuracy", run].removesuffix(" ★")
    at.selectbox(key=K.SLICE_METRIC).set_value("cohen_kappa_quadratic").run()
    assert not at.exception
    assert at.get("plotly_chart")


def test_binary_view_sweeps_scores(open_app, demo: Store) -> None:
    at = _open(open_app)
    at.selectbox(key=K.CRITERION).set_value(demo.get_criterion_by_name(1, "groundedness").id).run()
    assert not at.exception
    assert "true-positive rate" in _table(at).index
    at.segmented_control(key=K.VIEW).set_value("Scores and thresholds").run()
    assert not at.exception
    view = _frame(at, "bias-corrected pass rate")
    assert "bias-corrected pass rate" in view.index
    assert "no numeric score" in view.loc["note", "imported: legacy-judge"]
    assert view.loc["best threshold", "groundedness v1 (demo-judge-mini)"] != "–"
    assert "%" in view.loc["bias-corrected pass rate", "groundedness v2 (demo-judge-mini)"]


def test_pairwise_view_shows_position_bias(open_app, demo: Store) -> None:
    at = _open(open_app)
    dataset = demo.get_dataset_by_name(1, "reply-preference")
    at.selectbox(key=K.DATASET).set_value(dataset.id).run()
    assert not at.exception
    assert "median" not in at.selectbox(key=K.POLICY).options  # choices have no order
    at.segmented_control(key=K.VIEW).set_value("Pairwise").run()
    assert not at.exception
    view = _frame(at, "position consistency")
    consistency = view.loc["position consistency", BOTH]
    assert float(consistency.rstrip("%")) < 100.0
    assert view.loc["position consistency", "preference v1 (demo-judge-mini)"] == "–"
    assert "human TIE → judge TIE" in view.index


def test_no_runs_yet(
    open_app, demo: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'empty.sqlite'}"
    monkeypatch.setenv("EVALCORE_DATABASE_URL", url)
    monkeypatch.setenv("EVALCORE_NO_DEMO", "1")
    store = Store.open(url)
    store.create_project("empty")
    store.close()
    at = _open(open_app)
    assert "No judge run yet" in " ".join(i.value for i in at.info)


def test_runs_without_human_labels(open_app, demo: Store) -> None:
    project = demo.list_projects()[0]
    criterion = demo.create_criterion(
        project.id, "tone", kind="pointwise", scale=demo.get_criterion(1).scale
    )
    dataset = demo.get_dataset_by_name(project.id, "support-answers")
    demo.import_judge_labels(dataset.id, criterion.id, "tone judge", pd.Series({"sa-001": 3}))
    at = _open(open_app)
    at.selectbox(key=K.CRITERION).set_value(criterion.id).run()
    assert not at.exception
    assert "Nobody has labelled **tone**" in " ".join(i.value for i in at.info)


def test_disagreements_previous_next_follow_the_sort_on_screen(open_app, demo: Store) -> None:
    at = _open(open_app)
    at.segmented_control(key=K.VIEW).set_value("Disagreements").run()
    at.selectbox(key=K.DIS_SORT).set_value("item_id").run()
    assert not at.exception
    table = at.dataframe(key=K.DIS_TABLE).value
    assert table["item_id"].is_monotonic_increasing  # sorted in Python, as shown
    ids = at.session_state[K.DIS_IDS]
    names = dict(zip(ids, table["item_id"], strict=True))
    assert sorted(names.values()) == [names[i] for i in ids]  # the navigation order is the screen's
    at_open = ids.index(at.selectbox(key=K.DIS_ITEM).value)  # the item open before the sort stays
    at.button(key=key(K.DIS_NAV, "next")).click().run()
    # the next item is the next row on the screen, not the next worst
    assert at.selectbox(key=K.DIS_ITEM).value == ids[at_open + 1]
    at.button(key=key(K.DIS_NAV, "prev")).click().run()
    assert at.selectbox(key=K.DIS_ITEM).value == ids[at_open]


def test_a_run_whose_items_all_failed_keeps_its_column_and_a_note(open_app, demo: Store) -> None:
    from evalcore.store import JudgeResultInput

    helpfulness = demo.get_criterion_by_name(1, "helpfulness")
    dataset_id = next(r.dataset_id for r in demo.list_runs() if r.criterion_id == helpfulness.id)
    items = demo.items_frame(dataset_id)
    run = demo.create_run(dataset_id, helpfulness.id, name="all failed")
    demo.record_results(
        run.id,
        [
            JudgeResultInput(item_id=int(pk), status="failed", error="HTTP 500")
            for pk in items.index[:5]
        ],
    )
    demo.set_run_status(run.id, "done")
    at = _open(open_app)
    at.multiselect(key=K.RUNS).set_value([_ids(demo)[V1], run.id]).run()
    assert not at.exception
    table = _table(at)
    assert "all failed" in table.columns  # not silently dropped
    assert table.loc["balanced accuracy", "all failed"] == "–"
    assert table.loc["compared", "all failed"] == "0"
    notes = " ".join(w.value for w in at.warning)
    assert "all failed: no metrics" in notes
    assert "failed" in notes
