"""The confidence view of a calibration: from a file's confidence column and from the store with its
stored split. Every figure equals the metrics functions on the same items, picked independently
from the raw table by item id."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from evalcore.data import ColumnMapping, load_file
from evalcore.errors import DataError, EvalcoreError, MissingColumnError
from evalcore.improve import make_split
from evalcore.labels import Scale
from evalcore.metrics import (
    brier_score_loss,
    expected_calibration_error,
    fit_recalibration,
    multiclass_brier_score_loss,
    selective_outcome,
    selective_threshold,
)
from evalcore.report import (
    calibrate_runs,
    confidence_view,
    coverage_figure,
    file_confidences,
    file_data,
    load_calibration_data,
    reliability_figure,
    run_label_next,
)
from evalcore.store import JudgeResultInput, Store


def _frame(n: int = 400, seed: int = 0) -> pd.DataFrame:
    """A 1-3 scale; judge ``a`` is right with probability equal to its confidence, judge ``b``
    has no confidence; the first 20 items have no human label; a ``topic`` per item."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 4, n)
    conf = np.round(rng.uniform(0.34, 1.0, n), 3)
    right = rng.random(n) < conf
    human = truth.astype(object)
    human[:20] = None
    return pd.DataFrame(
        {
            "id": [f"i{i:03d}" for i in range(n)],
            "human": human,
            "a": np.where(right, truth, truth % 3 + 1),
            "b": np.where(rng.random(n) < 0.7, truth, truth % 3 + 1),
            "conf_a": conf,
            "topic": rng.choice(["news", "recipes"], n),
        }
    )


def _loaded(frame: pd.DataFrame):
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False)
    mapping = ColumnMapping(item_id="id", human="human", judge=("a", "b"))
    return load_file(buffer.getvalue().encode(), name="judged.csv", mapping=mapping)


def _calibration(frame: pd.DataFrame, *, slices: bool = False):
    loaded = _loaded(frame)
    (data,) = file_data(loaded, confidences={"a": "conf_a"})
    if slices:
        meta = pd.DataFrame({"topic": loaded.items["topic"].to_numpy()}, index=data.items.index)
        data = data.with_metadata(meta)
    return calibrate_runs(data, n_boot=0)


def _split(frame: pd.DataFrame):
    labelled = frame[frame["human"].notna()]
    return make_split(list(labelled["id"]), list(labelled["human"]), test_share=0.4, seed=3)


def test_the_view_equals_the_metrics_on_the_same_items() -> None:
    frame = _frame()
    calibration = _calibration(frame)
    split = _split(frame)
    view = confidence_view(calibration, split=split, target=0.8, risk=0.05, n_bins=10)
    a = view.runs[0]
    labelled = frame[frame["human"].notna()]
    assert a.summary is not None
    assert a.summary.n == len(labelled)
    assert a.summary.ece == pytest.approx(
        expected_calibration_error(labelled["human"], labelled["a"], labelled["conf_a"]), abs=1e-12
    )
    assert a.summary.brier == pytest.approx(
        brier_score_loss(labelled["human"], labelled["a"], labelled["conf_a"]), abs=1e-12
    )
    assert a.summary.brier_kind == "top-label"
    dev = frame[frame["id"].isin(split.dev)]
    test = frame[frame["id"].isin(split.test)]
    chosen = selective_threshold(dev["human"], dev["a"], dev["conf_a"], target=0.8, risk=0.05)
    assert a.selective is not None
    assert a.selective.threshold == chosen.threshold is not None
    assert a.selective.dev.candidates == chosen.candidates
    on_test = selective_outcome(
        test["human"], test["a"], test["conf_a"], threshold=chosen.threshold
    )
    assert a.selective.test == on_test
    assert a.selective.dev_ids == tuple(sorted(split.dev))
    assert a.selective.test_ids == tuple(sorted(split.test))
    assert f"decides {on_test.coverage:.0%} of items at ≥ 80% agreement" in a.selective.sentence()
    assert f"people get the other {1 - on_test.coverage:.0%}" in a.selective.sentence()
    fitted = fit_recalibration(dev["human"], dev["a"], dev["conf_a"], method="isotonic")
    assert a.recalibration is not None
    assert a.recalibration.ece_after == pytest.approx(
        expected_calibration_error(test["human"], test["a"], fitted.apply(test["conf_a"])),
        abs=1e-12,
    )
    # judge b has no confidence column: said, not guessed
    b = view.runs[1]
    assert b.summary is None
    assert b.selective is None
    assert b.notes == ("b: no verdict has a confidence.",)


def test_the_figures_plot_the_view() -> None:
    frame = _frame(seed=4)
    view = confidence_view(_calibration(frame), split=_split(frame), target=0.7)
    a = view.runs[0]
    assert a.summary is not None
    assert a.selective is not None
    diagram = reliability_figure(view.runs)
    (line,) = [t for t in diagram.data if t.name.startswith("a ")]
    bins = a.summary.reliability
    assert list(line.y) == [bins.agreement[b] for b in range(bins.n_bins) if bins.counts[b]]
    curve = coverage_figure([a.selective])
    assert list(curve.data[0].x) == list(a.selective.curve.coverage)
    star = curve.data[1]
    assert (star.x[0], star.y[0]) == (a.selective.test.coverage, a.selective.test.agreement)


def test_the_view_per_slice() -> None:
    frame = _frame(seed=1)
    calibration = _calibration(frame, slices=True)
    split = _split(frame)
    view = confidence_view(calibration, split=split, target=0.8, slice_column="topic")
    a = view.runs[0]
    assert [s.name for s in a.slices] == ["news", "recipes"]
    assert a.selective is not None
    for part in a.slices:
        rows = frame[(frame["topic"] == part.name) & frame["human"].notna()]
        assert part.summary is not None
        assert part.summary.ece == pytest.approx(
            expected_calibration_error(rows["human"], rows["a"], rows["conf_a"]), abs=1e-12
        )
        in_test = rows[rows["id"].isin(split.test)]
        assert part.test == selective_outcome(
            in_test["human"], in_test["a"], in_test["conf_a"], threshold=a.selective.threshold
        )
    assert sum(s.n_items for s in a.slices) == len(frame)


def test_probabilities_give_the_multiclass_brier() -> None:
    frame = _frame(seed=2)
    calibration = _calibration(frame)
    rng = np.random.default_rng(5)
    proba = rng.dirichlet([1, 1, 1], size=len(frame))
    results = calibration.data.runs[0].results
    results["probabilities"] = [{"1": p[0], "2": p[1], "3": p[2]} for p in proba]
    view = confidence_view(calibration, target=None, recalibration=None)
    s = view.runs[0].summary
    assert s is not None
    labelled = frame["human"].notna().to_numpy()
    assert s.brier_kind == "multiclass"
    assert s.brier == pytest.approx(
        multiclass_brier_score_loss(
            frame["human"][labelled], proba[labelled], labels=[1.0, 2.0, 3.0]
        ),
        abs=1e-12,
    )
    assert view.runs[0].notes == ()  # no split asked for: nothing to say about one


def test_without_a_split_there_is_no_threshold_and_the_view_says_so() -> None:
    view = confidence_view(_calibration(_frame(seed=3)), target=0.9)
    assert view.runs[0].selective is None
    assert "no dev/test split" in view.runs[0].notes[0]


def test_a_bad_confidence_cell_names_the_file_column_row_and_item() -> None:
    frame = _frame(n=40)
    frame["conf_a"] = frame["conf_a"].astype(object)
    frame.loc[6, "conf_a"] = 1.5
    with pytest.raises(
        DataError, match=r"judged\.csv: column 'conf_a', row 7 \(item 'i006'\): '1\.5' is not"
    ):
        file_confidences(_loaded(frame), {"a": "conf_a"})
    frame.loc[6, "conf_a"] = "very sure"
    with pytest.raises(DataError, match=r"row 7 .*'very sure' is not a confidence") as info:
        file_data(_loaded(frame), confidences={"a": "conf_a"})
    assert info.value.rows == (7,)
    assert info.value.item_id == "i006"
    with pytest.raises(MissingColumnError, match="no column 'nope'"):
        file_confidences(_loaded(frame), {"a": "nope"})
    with pytest.raises(EvalcoreError, match="no judge named 'c'"):
        file_data(_loaded(_frame(n=40)), confidences={"c": "conf_a"})


def test_empty_cells_are_verdicts_without_a_confidence() -> None:
    frame = _frame(n=60)
    frame["conf_a"] = frame["conf_a"].astype(object)
    frame.loc[20:29, "conf_a"] = None
    found = file_confidences(_loaded(frame), {"a": "conf_a"})["a"]
    assert int(found.isna().sum()) == 10
    view = confidence_view(_calibration(frame), target=None, recalibration=None)
    assert view.runs[0].summary is not None
    assert view.runs[0].summary.n == 30  # 60 items, 20 without a human label, 10 without confidence


# --- the store: a stored split, a run's confidences -------------------------------------------------


def _store_world(store: Store):
    n = 160
    rng = np.random.default_rng(11)
    truth = rng.integers(1, 4, n)
    conf = np.round(rng.uniform(0.34, 1.0, n), 3)
    verdict = np.where(rng.random(n) < conf, truth, truth % 3 + 1)
    project = store.create_project("confidence project")
    items = pd.DataFrame({"item_id": [f"q{i}" for i in range(n)], "response": ["r"] * n})
    dataset = store.save_dataset(project.id, "answers", items)
    criterion = store.create_criterion(
        project.id, "quality", kind="pointwise", scale=Scale.likert(1, 3)
    )
    labelled = np.arange(n) >= 40  # q0..q39 unlabelled
    store.import_labels(
        dataset.id,
        criterion.id,
        pd.DataFrame(
            {
                "item_id": [f"q{i}" for i in range(n) if labelled[i]],
                "annotator": "ana",
                "label": [int(truth[i]) for i in range(n) if labelled[i]],
            }
        ),
    )
    pk = {ext: int(i) for i, ext in store.items_frame(dataset.id)["item_id"].items()}
    run = store.create_run(dataset.id, criterion.id, name="judge v1")
    store.record_results(
        run.id,
        [
            JudgeResultInput(item_id=pk[f"q{i}"], status="ok", label=str(int(verdict[i])))
            for i in range(n)
        ],
    )
    store.set_run_status(run.id, "done")
    ids = [f"q{i}" for i in range(40, n)]
    split = make_split(ids, [int(truth[i]) for i in range(40, n)], test_share=0.4, seed=1)
    # the stored test part also holds five items nobody has labelled (yet): never proposed
    store.save_split(
        dataset.id,
        criterion.id,
        "default",
        seed=1,
        test_share=0.4,
        dev=split.dev,
        test=(*split.test, "q0", "q1", "q2", "q3", "q4"),
    )
    confidence = pd.Series({pk[f"q{i}"]: conf[i] for i in range(n)})
    return dataset.id, criterion.id, run.id, confidence, truth, verdict, conf


def test_the_store_path_uses_the_stored_split(store: Store) -> None:
    dataset_id, criterion_id, run_id, confidence, truth, verdict, conf = _store_world(store)
    data = load_calibration_data(store, dataset_id, criterion_id)
    calibration = calibrate_runs(data, n_boot=0)
    stored = store.get_split(dataset_id, criterion_id, "default")
    view = confidence_view(
        calibration,
        split=stored,
        confidences={run_id: confidence},
        target=0.75,
        risk=0.1,
        min_decided=20,
    )
    run = view.run(run_id)
    assert run.selective is not None
    dev = np.array([int(x[1:]) for x in stored.dev])
    test = np.array([int(x[1:]) for x in stored.test if int(x[1:]) >= 40])
    chosen = selective_threshold(
        truth[dev], verdict[dev], conf[dev], target=0.75, risk=0.1, min_decided=20
    )
    assert run.selective.dev.candidates == chosen.candidates
    assert run.selective.test == selective_outcome(
        truth[test], verdict[test], conf[test], threshold=chosen.threshold
    )
    # the unlabelled items of the stored test part take no part in it, and are never proposed
    assert run.selective.test_ids == tuple(sorted(f"q{i}" for i in test))
    proposal = run_label_next(
        calibration, run_id, n=40, split=stored, confidences={run_id: confidence}, n_boot=100
    )
    assert len(proposal.items) == 35  # 40 unlabelled, 5 of them in the test part
    assert not {"q0", "q1", "q2", "q3", "q4"} & set(proposal.item_ids)
    assert proposal.metric == "cohen_kappa_quadratic"  # the headline kappa of an ordinal scale
