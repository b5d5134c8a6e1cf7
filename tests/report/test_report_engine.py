"""The one engine: files and the store end in the same CalibrationData, one axis rule, the declared
metric table behind every table, and the incremental loader."""

from __future__ import annotations

import pandas as pd
import pytest

from evalcore.data import ColumnMapping, load_frame
from evalcore.errors import EvalcoreError
from evalcore.labels import Scale
from evalcore.metrics import CALIBRATION_METRICS, metrics_for
from evalcore.report import (
    BEST_MARK,
    CalibrationLoader,
    calibrate_runs,
    combine,
    data_version,
    file_data,
    load_calibration_data,
)
from evalcore.store import JudgeResultInput
from tests.report.conftest import Tiny

# humans 1, 2, 4, 5, 5 and a judge 1, 2, 5, 5, missing: nobody uses 3
FRAME = pd.DataFrame({"id": list("abcde"), "ana": [1, 2, 4, 5, 5], "judge": [1, 2, 5, 5, None]})
MAPPING = ColumnMapping(item_id="id", human=("ana",), judge=("judge",), metric="q")


def _file(declared: bool):
    scale = Scale.likert(1, 5) if declared else None
    loaded = load_frame(FRAME, source="f.csv", mapping=MAPPING, scales=scale)
    (data,) = file_data(loaded, declared=declared)
    return data


def test_a_files_numbers_sit_on_the_inferred_scale_and_words_on_the_observed_labels() -> None:
    # issue 21: numbers without a declared scale sit at their values on the inferred scale 1..5
    assert _file(declared=False).labels == (1.0, 2.0, 3.0, 4.0, 5.0)
    assert _file(declared=True).labels == (1.0, 2.0, 3.0, 4.0, 5.0)
    inferred = calibrate_runs(_file(declared=False), n_boot=0).runs[0].report
    declared = calibrate_runs(_file(declared=True), n_boot=0).runs[0].report
    assert inferred is not None
    assert declared is not None
    assert inferred.confusion_matrix.shape == declared.confusion_matrix.shape == (5, 5)
    assert declared.cohen_kappa_quadratic == pytest.approx(inferred.cohen_kappa_quadratic)
    # Vertex's view is the observed labels either way
    assert declared.observed() == inferred.observed()
    assert declared.observed()[0] == ["1", "2", "4", "5"]
    # words keep the observed labels (their scale is sorted words: nothing to infer between them)
    words = pd.DataFrame(
        {"id": list("abc"), "ana": ["bad", "ok", "ok"], "judge": ["ok", "ok", "ok"]}
    )
    (data,) = file_data(load_frame(words, source="w.csv", mapping=MAPPING))
    assert data.labels == ("bad", "ok")


def test_a_file_judge_is_a_run_whose_gaps_have_a_status() -> None:
    data = _file(declared=False)
    (run,) = data.runs
    assert run.info.title == "judge"
    assert run.results["status"].tolist() == ["ok", "ok", "ok", "ok", "missing"]
    coverage = calibrate_runs(data, n_boot=0).runs[0].coverage
    assert (coverage.n_human, coverage.n_compared, coverage.n_missing) == (5, 4, 1)


def test_the_store_axis_is_the_criterions_scale(tiny: Tiny) -> None:
    data = load_calibration_data(tiny.store, tiny.dataset_id, tiny.criterion_id)
    assert data.scale_declared
    assert data.labels == data.scale.labels


def test_a_metric_the_file_lacks_is_named() -> None:
    loaded = load_frame(FRAME, source="f.csv", mapping=MAPPING)
    with pytest.raises(EvalcoreError, match=r"no metric named 'nope'.*metrics found: q"):
        file_data(loaded, metrics=["nope"])


def test_every_table_iterates_the_declared_metrics(tiny: Tiny) -> None:
    calibration = calibrate_runs(
        load_calibration_data(tiny.store, tiny.dataset_id, tiny.criterion_id), n_boot=0
    )
    rows = list(calibration.table().text.index)
    shown = [m.name for m in metrics_for("ordinal", shown=True)]
    assert [r for r in rows if r in {m.name for m in CALIBRATION_METRICS}] == shown
    exported = calibration.to_frame()
    keys = set(exported[exported["run"] != "(humans)"]["metric"])
    assert {m.key for m in CALIBRATION_METRICS} <= keys


def test_a_run_without_any_compared_item_keeps_its_column_and_says_why(tiny: Tiny) -> None:
    store = tiny.store
    run = store.create_run(tiny.dataset_id, tiny.criterion_id, name="broken")
    store.record_results(
        run.id,
        [JudgeResultInput(item_id=tiny.pk["q0"], status="failed", error="HTTP 500")],
    )
    data = load_calibration_data(store, tiny.dataset_id, tiny.criterion_id, [tiny.v1, run.id])
    calibration = calibrate_runs(data, n_boot=0)
    table = calibration.table().text
    assert list(table.columns)[:2] == ["v1", "broken"]
    assert table.loc["balanced accuracy", "broken"] == "–"
    assert table.loc["failed", "broken"] == "1"
    (note,) = calibration.notes()
    # majority labels on q0, q1, q3, q4, q5, q6: 6 items; one failed, five without a result
    assert note.startswith("broken: no metrics")
    assert "6 human-labelled items: 1 failed, 5 without a result" in note


def test_combining_files_marks_the_best_across_all_of_them() -> None:
    better = FRAME.assign(judge=[1, 2, 4, 5, 5])
    tables = []
    for name, frame in (("one.csv", FRAME), ("two.csv", better)):
        (data,) = file_data(load_frame(frame, source=name, mapping=MAPPING))
        tables.append((name, calibrate_runs(data, n_boot=0).table()))
    both = combine(tables, kind="ordinal")
    judges = ["one.csv · judge", "two.csv · judge"]
    assert [c for c in both.text.columns if c not in both.references] == judges
    # each file keeps its own baselines (its humans' shares), never marked best
    assert "two.csv · constant judge" in both.references
    assert not both.best[list(both.references)].any().any()
    assert both.text.loc["balanced accuracy", "two.csv · judge"].endswith(BEST_MARK)
    assert not both.text.loc["balanced accuracy", "one.csv · judge"].endswith(BEST_MARK)


def test_the_loader_reloads_only_what_changed(tiny: Tiny) -> None:
    store = tiny.store
    loader = CalibrationLoader(store)
    runs = [tiny.v1, tiny.v2]
    first, version = loader.load(tiny.dataset_id, tiny.criterion_id, runs)
    assert version == data_version(store, tiny.dataset_id, tiny.criterion_id, runs)
    again, same = loader.load(tiny.dataset_id, tiny.criterion_id, runs)
    assert same == version
    assert again.human is first.human  # kept, not read again
    assert again.runs[0].results is first.runs[0].results
    store.record_results(tiny.v2, [JudgeResultInput(item_id=tiny.pk["q7"], status="ok", label="1")])
    later, newer = loader.load(tiny.dataset_id, tiny.criterion_id, runs)
    assert newer.run(tiny.v2) != version.run(tiny.v2)
    assert later.human is first.human  # no new label: the humans are not read again
    assert later.runs[0].results is first.runs[0].results  # v1 did not change
    assert later.runs[1].results is not first.runs[1].results
    assert later.runs[1].results.loc[tiny.pk["q7"], "label"] == 1.0
    # the same data as a fresh load, and the same checks
    fresh = load_calibration_data(store, tiny.dataset_id, tiny.criterion_id, runs)
    pd.testing.assert_frame_equal(later.runs[1].results, fresh.runs[1].results)
    with pytest.raises(EvalcoreError, match="is not a run of criterion"):
        loader.load(tiny.dataset_id, tiny.criterion_id, [999_999])
