"""Exports: CSV/JSONL/Parquet round trips, and Vertex's metrics table read back by evalcore.data."""

from __future__ import annotations

import io
import math

import pandas as pd
import pytest

from evalcore.data import load_file, read_table
from evalcore.errors import EvalcoreError
from evalcore.report import (
    EXPORT_FORMATS,
    calibrate_runs,
    file_data,
    human_labels_table,
    judge_results_table,
    load_calibration_data,
    metrics_table,
    table_bytes,
    vertex_table,
)
from tests.report.conftest import Tiny, build_binary, build_pairwise


@pytest.mark.parametrize("fmt", EXPORT_FORMATS)
def test_tables_round_trip_through_every_format(tiny: Tiny, fmt: str) -> None:
    store = tiny.store
    data = load_calibration_data(store, tiny.dataset_id, tiny.criterion_id)
    calibration = calibrate_runs(data, n_boot=50)
    for frame in (
        human_labels_table(store, tiny.dataset_id, tiny.criterion_id),
        judge_results_table(store, calibration),
        metrics_table(calibration),
    ):
        back = read_table(table_bytes(frame, fmt), name=f"export.{fmt}")
        assert list(back.columns) == list(frame.columns)
        assert len(back) == len(frame)


def test_human_labels_and_judge_results_hold_everything(tiny: Tiny) -> None:
    store = tiny.store
    humans = human_labels_table(store, tiny.dataset_id, tiny.criterion_id)
    q1 = humans[(humans["item_id"] == "q1") & (humans["annotator"] == "ana")]
    assert q1["revision"].tolist() == [1, 2]
    assert q1["latest"].tolist() == [False, True]
    assert q1["comment"].tolist()[1] == "on second thought, a 2"
    data = load_calibration_data(store, tiny.dataset_id, tiny.criterion_id)
    results = judge_results_table(store, calibrate_runs(data, n_boot=0))
    assert set(results["run"]) == {"v1", "v2"}
    v1 = results[results["run"] == "v1"].set_index("item_id")
    assert v1.loc["q5", "status"] == "unparsed"
    assert v1.loc["q1", "reason"] == "reason 1.1"
    assert v1.loc["q1", "template_version"] == 1
    assert "api_key" not in " ".join(results.columns)


def test_metrics_export_matches_the_reports(tiny_sqlite: Tiny) -> None:
    t = tiny_sqlite
    data = load_calibration_data(t.store, t.dataset_id, t.criterion_id)
    calibration = calibrate_runs(data, n_boot=100)
    frame = read_table(table_bytes(metrics_table(calibration), "csv"), name="m.csv")
    row = frame[(frame["run"] == "v2") & (frame["metric"] == "accuracy_balanced")]
    assert float(row["value"].iloc[0]) == pytest.approx(2 / 3)


def _numbers(report) -> tuple:
    return (
        report.n,
        round(report.accuracy_balanced, 9),
        round(report.f1_score_balanced, 9),
        round(report.cohen_kappa, 9),
        report.confusion_matrix.tolist(),
    )


def test_vertex_pointwise_round_trip_gives_the_same_numbers(tiny_sqlite: Tiny) -> None:
    t = tiny_sqlite
    data = load_calibration_data(t.store, t.dataset_id, t.criterion_id)
    calibration = calibrate_runs(data, n_boot=0)
    table = vertex_table(t.store, calibration, runs={"fluency": t.v1})
    assert list(table.columns) == [
        "item_id",
        "prompt",
        "response",
        "fluency/human_rating",
        "fluency/score",
        "fluency/explanation",
    ]
    assert table.loc[4, "fluency/explanation"] == "reason 1.4"
    assert math.isnan(table.loc[5, "fluency/score"])  # unparsed: an empty score, not a label
    for fmt in EXPORT_FORMATS:
        loaded = load_file(table_bytes(table, fmt), name=f"vertex.{fmt}")
        assert loaded.layout == "vertex"
        (data,) = file_data(loaded)
        (judge,) = calibrate_runs(data, n_boot=0).runs
        # the file's axis is the labels it uses (1, 2, 3), the same as the scale here
        assert _numbers(judge.report) == _numbers(calibration.run(t.v1).report)


def test_vertex_table_defaults_to_the_best_run(tiny_sqlite: Tiny) -> None:
    t = tiny_sqlite
    calibration = calibrate_runs(
        load_calibration_data(t.store, t.dataset_id, t.criterion_id), n_boot=0
    )
    table = vertex_table(t.store, calibration)
    loaded = load_file(table_bytes(table, "csv"), name="v.csv")
    result = calibrate_runs(file_data(loaded)[0], n_boot=0)
    assert _numbers(result.runs[0].report) == _numbers(calibration.run(t.v2).report)


def test_vertex_pairwise_uses_candidate_baseline_words(sqlite_store) -> None:
    world = build_pairwise(sqlite_store)
    data = load_calibration_data(sqlite_store, world.dataset_id, world.criterion_id)
    calibration = calibrate_runs(data, n_boot=0)
    table = vertex_table(sqlite_store, calibration, runs={"preference": world.both})
    assert table["response"].tolist()[0] == "A0"
    assert table["baseline_model_response"].tolist()[0] == "B0"
    assert table["preference/human_pairwise_choice"].tolist() == [
        "CANDIDATE",
        "BASELINE",
        "TIE",
        "CANDIDATE",
        "BASELINE",
    ]
    assert table["preference/pairwise_choice"].tolist()[:2] == ["CANDIDATE", "BASELINE"]
    loaded = load_file(table_bytes(table, "jsonl"), name="pairs.jsonl")
    assert loaded.kind == "pairwise"
    result = calibrate_runs(file_data(loaded)[0], n_boot=0)
    assert _numbers(result.runs[0].report) == _numbers(calibration.run(world.both).report)
    canonical = vertex_table(
        sqlite_store, calibration, runs={"preference": world.both}, words="canonical"
    )
    assert canonical["preference/pairwise_choice"].tolist()[0] == "A"


def test_vertex_binary_round_trip(sqlite_store) -> None:
    world = build_binary(sqlite_store)
    data = load_calibration_data(sqlite_store, world.dataset_id, world.criterion_id)
    calibration = calibrate_runs(data, n_boot=0)
    table = vertex_table(sqlite_store, calibration)
    assert table["grounded/human_rating"].tolist()[:3] == ["pass", "pass", "pass"]
    loaded = load_file(io.BytesIO(table_bytes(table, "csv")), name="g.csv")
    result = calibrate_runs(file_data(loaded)[0], n_boot=0)
    assert result.runs[0].report.accuracy_balanced == pytest.approx(
        calibration.runs[0].report.accuracy_balanced
    )


def test_vertex_table_is_one_dataset(tiny_sqlite: Tiny, sqlite_store) -> None:
    world = build_pairwise(tiny_sqlite.store)
    t = tiny_sqlite
    a = calibrate_runs(load_calibration_data(t.store, t.dataset_id, t.criterion_id), n_boot=0)
    b = calibrate_runs(
        load_calibration_data(t.store, world.dataset_id, world.criterion_id), n_boot=0
    )
    with pytest.raises(EvalcoreError, match="one dataset"):
        vertex_table(t.store, [a, b])
    with pytest.raises(EvalcoreError, match="cannot export as 'xlsx'"):
        table_bytes(pd.DataFrame({"a": [1]}), "xlsx")
