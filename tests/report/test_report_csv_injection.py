"""CSV exports are safe to open in a spreadsheet (OWASP's CSV-injection advice); JSONL and Parquet
keep every value exactly as it is."""

from __future__ import annotations

import csv
import io
import re

import pandas as pd
import pytest

from evalcore.data import read_table
from evalcore.labels import Scale
from evalcore.report import (
    calibrate_runs,
    csv_safe,
    human_labels_table,
    judge_results_table,
    load_calibration_data,
    metrics_table,
    table_bytes,
    vertex_table,
)
from evalcore.store import JudgeResultInput, Store

LINK = '=HYPERLINK("http://x")'
PAYLOADS = [LINK, "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1"]
TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
# a cell that is only a decimal number is that number to a spreadsheet: data, not a formula
NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _csv_cells(data: bytes) -> list[str]:
    """Every cell of a CSV file as a spreadsheet would see it (header included)."""
    return [cell for row in csv.reader(io.StringIO(data.decode("utf-8"))) for cell in row]


def _assert_inert(data: bytes) -> None:
    unsafe = [c for c in _csv_cells(data) if c.startswith(TRIGGERS) and not NUMBER.fullmatch(c)]
    assert unsafe == []


@pytest.fixture
def hostile(sqlite_store: Store) -> tuple[Store, int, int, int]:
    """A dataset whose texts, metadata, labels, comments, annotator, criterion and run names are
    all formulas."""
    store = sqlite_store
    project = store.create_project("p")
    items = pd.DataFrame(
        {
            "item_id": ["=1+1", "q1", "q2"],
            "prompt": [LINK, "+1+1", "ok"],
            "response": ["-2+3", "@SUM(A1)", "\t=1"],
            "topic": [LINK, "a", "a"],
        }
    )
    dataset = store.save_dataset(project.id, "d", items)
    criterion = store.create_criterion(
        project.id, "=crit()", kind="pointwise", scale=Scale((LINK, "+1+1"), "nominal")
    )
    pk = {ext: int(i) for i, ext in store.items_frame(dataset.id)["item_id"].items()}
    labels = pd.DataFrame(
        {"item_id": ["=1+1", "q1", "q2"], "annotator": "@annotator", "label": [LINK, "+1+1", LINK]}
    )
    store.import_labels(dataset.id, criterion.id, labels)
    store.submit_annotation(
        pk["q1"], criterion.id, "@annotator", label=LINK, base_revision=1, comment="\t=1"
    )
    template = store.create_template(project.id, "-t", criterion.id)
    version = store.save_template_version(template.id, {"user": "rate"}, author="@eve")
    run = store.create_run(
        dataset.id, criterion.id, name="-2+3", model="+m", template_version_id=version.id
    )
    store.record_results(
        run.id,
        [
            JudgeResultInput(item_id=pk[e], status="ok", label=lab, reason="@SUM(A1)", raw=LINK)
            for e, lab in (("=1+1", LINK), ("q1", "+1+1"), ("q2", LINK))
        ],
    )
    store.set_run_status(run.id, "done")
    return store, dataset.id, criterion.id, run.id


def _tables(store: Store, dataset_id: int, criterion_id: int) -> dict[str, pd.DataFrame]:
    calibration = calibrate_runs(load_calibration_data(store, dataset_id, criterion_id), n_boot=0)
    return {
        "annotations": human_labels_table(store, dataset_id, criterion_id),
        "results": judge_results_table(store, calibration),
        "metrics": metrics_table(calibration),
        "vertex": vertex_table(store, calibration),
        "items": store.items_frame(dataset_id),
    }


def test_every_csv_export_neutralises_formula_cells(hostile) -> None:
    store, dataset_id, criterion_id, _ = hostile
    tables = _tables(store, dataset_id, criterion_id)
    for name, frame in tables.items():
        data = table_bytes(frame, "csv")
        _assert_inert(data)
        cells = _csv_cells(data)
        assert any(c.startswith("'") for c in cells), name  # the payloads were there, quoted
    # each payload comes back with its quote, so a reader sees exactly what was written, inert
    cells = set(_csv_cells(table_bytes(tables["vertex"], "csv")))
    assert {"'=1+1", "'" + LINK, "'+1+1", "'-2+3", "'@SUM(A1)", "'\t=1", "'=crit()/score"} <= cells
    assert {"'-2+3", "'@annotator"} <= set(_csv_cells(table_bytes(tables["results"], "csv"))) | set(
        _csv_cells(table_bytes(tables["annotations"], "csv"))
    )


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_jsonl_and_parquet_keep_every_value(hostile, fmt: str) -> None:
    store, dataset_id, criterion_id, _ = hostile
    tables = _tables(store, dataset_id, criterion_id)
    back = read_table(table_bytes(tables["vertex"], fmt), name=f"v.{fmt}")
    assert "=crit()/score" in back.columns
    assert back["item_id"].tolist() == ["=1+1", "q1", "q2"]
    assert back["response"].tolist() == ["-2+3", "@SUM(A1)", "\t=1"]
    results = read_table(table_bytes(tables["results"], fmt), name=f"r.{fmt}")
    assert set(results["run"]) == {"-2+3"}
    assert set(results["raw"]) == {LINK}
    notes = read_table(table_bytes(tables["annotations"], fmt), name=f"a.{fmt}")
    assert "\t=1" in notes["comment"].tolist()


def test_numbers_stay_numbers() -> None:
    frame = pd.DataFrame(
        {"value": [-0.5, 2.0], "word": ["-1", "+2.5e3"], "text": pd.array(["=1", None], "string")}
    )
    data = table_bytes(frame, "csv")
    # -0.5 is a float cell and "-1" / "+2.5e3" are plain numbers: data, not formulas
    assert data.decode().splitlines() == [
        '"value","word","text"',
        '-0.5,"-1","\'=1"',
        '2.0,"+2.5e3",""',
    ]
    assert csv_safe(frame)["word"].tolist() == ["-1", "+2.5e3"]
    assert frame["text"].tolist()[0] == "=1"  # the caller's frame is left as it was


@pytest.mark.parametrize("payload", PAYLOADS)
def test_each_payload_is_prefixed(payload: str) -> None:
    assert csv_safe(pd.DataFrame({"c": [payload]}))["c"].tolist() == ["'" + payload]
