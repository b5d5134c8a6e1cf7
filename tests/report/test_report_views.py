"""Binary, pairwise and slice views with hand-worked numbers."""

from __future__ import annotations

import pandas as pd
import pytest

from evalcore.errors import EvalcoreError
from evalcore.report import (
    BEST_MARK,
    MAX_SLICE_VALUES,
    binary_analysis,
    calibrate_runs,
    load_calibration_data,
    load_metadata,
    pairwise_analysis,
    pairwise_table,
    slice_options,
    slice_table,
    slice_text,
)
from tests.report.conftest import Tiny, build_binary, build_pairwise


def test_binary_sweep_rates_and_corrected_pass_rate(sqlite_store) -> None:
    world = build_binary(sqlite_store)
    data = load_calibration_data(sqlite_store, world.dataset_id, world.criterion_id)
    calibration = calibrate_runs(data, n_boot=300)
    a = binary_analysis(calibration, world.run_id)
    # labelled q0..q5: humans P P P F F F, judge P P F F F P -> TP 2, FN 1, TN 2, FP 1
    assert a.tpr == pytest.approx(2 / 3)
    assert a.tnr == pytest.approx(2 / 3)
    assert a.positive == "pass"
    # scores 0.9 0.8 0.4 | 0.3 0.2 0.6; pass when score >= t:
    # t=0.2: TPR 1, TNR 0 -> 0.5;  t=0.3: 1, 1/3 -> 2/3;  t=0.4: 1, 2/3 -> 5/6
    # t=0.6: 2/3, 2/3 -> 2/3;      t=0.8: 2/3, 1 -> 5/6;   t=0.9: 1/3, 1 -> 2/3
    sweep = {round(p.threshold, 2): p.balanced_accuracy for p in a.points}
    assert sweep == pytest.approx(
        {0.2: 0.5, 0.3: 2 / 3, 0.4: 5 / 6, 0.6: 2 / 3, 0.8: 5 / 6, 0.9: 2 / 3}
    )
    assert a.best.threshold == pytest.approx(0.4)  # ties go to the lower threshold
    # unlabelled q6..q9: judge P P F F -> p_obs 1/2; theta = (1/2 + 2/3 - 1) / (2/3 + 2/3 - 1) = 1/2
    pr = a.pass_rate
    assert pr.p_obs == pytest.approx(0.5)
    assert pr.theta == pytest.approx(0.5)
    assert pr.n_unlabelled == 4
    assert pr.ci[0] <= pr.theta <= pr.ci[1]
    assert a.n_unlabelled == 4
    assert a.note is None
    assert list(a.sweep_frame().columns) == ["threshold", "balanced_accuracy", "tpr", "tnr", "n"]


def test_binary_view_explains_what_it_cannot_compute(sqlite_store) -> None:
    world = build_binary(sqlite_store)
    store = sqlite_store
    pks = load_calibration_data(store, world.dataset_id, world.criterion_id).items.index
    from evalcore.store import JudgeResultInput

    run = store.create_run(world.dataset_id, world.criterion_id, name="no scores")
    store.record_results(
        run.id,
        [JudgeResultInput(item_id=int(pk), status="ok", label="pass") for pk in pks[:6]],
    )
    data = load_calibration_data(store, world.dataset_id, world.criterion_id, [run.id])
    a = binary_analysis(calibrate_runs(data, n_boot=0), run.id)
    assert a.points == ()
    assert a.pass_rate is None
    assert "no numeric score" in a.note
    assert "every item the judge labelled has a human label" in a.note


def test_binary_view_needs_a_binary_criterion(tiny_sqlite: Tiny) -> None:
    data = load_calibration_data(
        tiny_sqlite.store, tiny_sqlite.dataset_id, tiny_sqlite.criterion_id
    )
    with pytest.raises(EvalcoreError, match="not a binary criterion"):
        binary_analysis(calibrate_runs(data, n_boot=0), tiny_sqlite.v1)


def test_pairwise_win_rates_position_bias_and_ties(sqlite_store) -> None:
    world = build_pairwise(sqlite_store)
    data = load_calibration_data(sqlite_store, world.dataset_id, world.criterion_id)
    calibration = calibrate_runs(data, n_boot=0)
    both = pairwise_analysis(calibration, world.both)
    # humans A, B, TIE, A, B; the judge (AB order) A, B, A, A, A
    assert both.human_wins == pytest.approx({"A": 0.4, "B": 0.4, "TIE": 0.2})
    assert both.judge_wins == pytest.approx({"A": 0.8, "B": 0.2, "TIE": 0.0})
    # the same verdict in both orders on p0 (A, A) and p4 (A, A) only: 2/5
    assert both.position_consistency == pytest.approx(0.4)
    assert both.n_both_orders == 5
    # AB: first shown = A, chosen 4 times of 5 decided; BA: first shown = B, chosen once (p3) of 4
    # decided (p2 is a tie) -> (4 + 1) / (5 + 4) = 5/9
    assert both.first_position_preference == pytest.approx(5 / 9)
    # people's one tie (p2): the judge said A
    assert both.human_ties == {"A": 1, "B": 0, "TIE": 0}
    single = pairwise_analysis(calibration, world.single)
    assert single.position_consistency is None
    assert single.human_ties == {"A": 0, "B": 0, "TIE": 1}
    table = pairwise_table([single, both])
    assert table.loc["position consistency", "both"] == "40.0%"
    assert table.loc["position consistency", "single"] == "–"
    assert table.loc["human TIE → judge A", "both"] == "1 (100%)"


def test_slices_show_where_a_run_is_worse(tiny_sqlite: Tiny) -> None:
    t = tiny_sqlite
    data = load_calibration_data(t.store, t.dataset_id, t.criterion_id)
    data = data.with_metadata(load_metadata(t.store, t.dataset_id, ["topic"]))
    table = slice_table(data, "topic", n_boot=100)
    assert list(dict.fromkeys(table["slice"])) == ["(all)", "a", "b"]
    by = table.set_index(["slice", "run"])
    # topic a (q0..q3; q2 has no majority): v1 q0 ok, q1 2->3, q3 ok -> recalls 1, 0, 1 = 2/3;
    # v2 q0 ok, q1 ok, q3 3->2 -> recalls 1, 1, 0 = 2/3
    assert by.loc[("a", "v1"), "accuracy_balanced"] == pytest.approx(2 / 3)
    assert by.loc[("a", "v2"), "accuracy_balanced"] == pytest.approx(2 / 3)
    # topic b: v1 0.5, v2 1.0 (see the calibration tests)
    assert by.loc[("b", "v1"), "accuracy_balanced"] == pytest.approx(0.5)
    assert by.loc[("b", "v2"), "accuracy_balanced"] == pytest.approx(1.0)
    # the paired difference uses the items both runs labelled: only q4 (v1 wrong, v2 right) -> 1 - 0
    assert by.loc[("b", "v2"), "diff_accuracy_balanced"] == pytest.approx(1.0)
    assert by.loc[("b", "v2"), "n_items"] == 4
    text = slice_text(table)
    assert text.loc["b (4 items)", "v2"].endswith(BEST_MARK)
    assert text.loc["b (4 items)", "v2"].startswith("1.000")
    with pytest.raises(EvalcoreError, match="no metadata column 'colour'"):
        slice_table(data, "colour")


def test_rare_slice_values_are_pooled(tiny_sqlite: Tiny) -> None:
    t = tiny_sqlite
    data = load_calibration_data(t.store, t.dataset_id, t.criterion_id)
    data = data.with_metadata(load_metadata(t.store, t.dataset_id, ["topic"]))
    table = slice_table(data, "topic", max_slices=1, n_boot=0)
    assert list(dict.fromkeys(table["slice"])) == ["(all)", "a", "(other)"]


def test_only_columns_with_few_values_are_offered_for_slicing() -> None:
    n = 40
    frame = pd.DataFrame(
        {
            "topic": [f"t{i % 12}" for i in range(n)],  # 12 values: the most offered
            "item_code": [f"c{i % 13}" for i in range(n)],  # 13: one too many
            "lang": ["en"] * n,  # one value: nothing to compare
            "region": [None if i % 2 else "eu" for i in range(n - 1)] + ["us"],  # 2, blanks aside
        }
    )
    options = slice_options(frame, ["topic", "item_code", "lang", "region", "absent"])
    assert MAX_SLICE_VALUES == 12
    assert options.columns == ("topic", "region")
    assert options.left_out == (("item_code", 13), ("lang", 1), ("absent", 0))
    assert options.note == (
        "Not offered for slicing: item_code (13 values), lang (1 value), absent (0 values). "
        "A column is offered when it has 2 to 12 distinct values."
    )
    assert slice_options(frame, ["topic"]).note == ""
    assert slice_options(frame, ["item_code"], max_values=13).columns == ("item_code",)
