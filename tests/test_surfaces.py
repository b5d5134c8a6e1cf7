"""One engine, every surface: the same cases through the library, the CLI's ``--json`` (a real
subprocess of the installed ``evalcore``), the Calibrate page's upload mode (AppTest) and the HTML
report give the same numbers: n, balanced accuracy, weighted F1, the kappas and the intervals.

Each case is put into a store (a project of its own: dataset, criterion with its declared scale,
annotations, imported judge runs) for the library and the HTML report, and written as a plain table
(one column per annotator and per judge, empty cells for missing labels) for the CLI and the upload,
which both declare the same scale. The demo's Vertex export is read back by the CLI and the upload.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from evalcore.demo.seed import seed_demo
from evalcore.labels import Label
from evalcore.metrics import CALIBRATION_METRICS, metrics_for
from evalcore.report import (
    BEST_MARK,
    CHANCE_COLUMN,
    CONSTANT_COLUMN,
    Calibration,
    build_report,
    calibrate_runs,
    load_calibration_data,
    parse_scale,
    prevalence_row,
    project_calibrations,
    run_alt_test,
    table_bytes,
    vertex_table,
)
from evalcore.store import JudgeResultInput, Store
from tests.pages.conftest import sign_in
from ui.state import Calibrate as K
from ui.state import key

ROOT = Path(__file__).resolve().parents[1]
EVALCORE = Path(sys.executable).parent / "evalcore"
N_BOOT = 1000  # what the Calibrate page uses, so every surface draws the same resamples

P, F = "pass", "fail"


@dataclass(frozen=True)
class Case:
    name: str
    scale: str
    humans: dict[str, list[Label | None]]
    judges: dict[str, list[Label | None]]
    kind: str = "pointwise"
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def n_items(self) -> int:
        return len(next(iter(self.humans.values())))


CASES = [
    # nobody uses 3 on the declared 1-5 scale: the quadratic kappa must agree everywhere
    Case(
        "unused-label",
        "1,2,3,4,5",
        {"ana": [1, 2, 4, 5, 5, 4, 2, 1, 4, 5, 2, 4]},
        {"judge": [1, 2, 5, 5, 4, 4, 1, 1, 4, 5, 4, 2]},
    ),
    # a missing human label, a missing (failed) verdict each, and two judges (a comparison)
    Case(
        "missing",
        "1,2,3",
        {"ana": [1, 2, None, 3, 3, 2, 1, None, 2, 3]},
        {"v1": [1, None, 2, 3, 2, 2, None, 1, 2, 3], "v2": [1, 2, 3, 3, None, 2, 1, 1, 1, 3]},
    ),
    Case(
        "pairwise",
        "A,B,TIE",
        {"ana": ["A", "B", "TIE", "A", "B", "A", "B", "A", "TIE", "A"]},
        {"judge": ["A", "B", "A", "A", "A", "TIE", "B", "B", "TIE", "A"]},
        kind="pairwise",
    ),
    # three annotators: the majority is the human label, and they have a ceiling
    Case(
        "annotators",
        "pass,fail",
        {
            "ana": [P, P, F, F, P, P, F, P, F, P],
            "ben": [P, F, F, F, P, P, F, F, F, P],
            "cy": [P, P, F, P, F, P, P, P, F, F],
        },
        {"judge": [P, P, P, F, P, F, F, P, F, P]},
    ),
]


# --- putting a case into a store and into a file --------------------------------------------------


def _store_case(store: Store, case: Case) -> tuple[int, int, int]:
    """(project, dataset, criterion) ids of the case written into ``store``."""
    n = case.n_items
    project = store.create_project(case.name)
    items = pd.DataFrame({"item_id": [f"i{i}" for i in range(n)], "prompt": ["q"] * n})
    if case.kind == "pairwise":
        items["response_a"], items["response_b"] = "a", "b"
    else:
        items["response"] = "r"
    dataset = store.save_dataset(project.id, case.name, items, kind=case.kind)  # type: ignore[arg-type]
    scale = parse_scale(case.scale)
    assert scale is not None
    criterion = store.create_criterion(project.id, "crit", kind=case.kind, scale=scale)  # type: ignore[arg-type]
    long = [
        {"item_id": f"i{i}", "annotator": who, "label": label}
        for who, labels in case.humans.items()
        for i, label in enumerate(labels)
        if label is not None
    ]
    store.import_labels(dataset.id, criterion.id, pd.DataFrame(long))
    pk = {ext: int(i) for i, ext in store.items_frame(dataset.id)["item_id"].items()}
    for name, labels in case.judges.items():
        run = store.create_run(dataset.id, criterion.id, name=name)
        store.record_results(
            run.id,
            [
                JudgeResultInput(item_id=pk[f"i{i}"], status="ok", label=str(label))
                if label is not None
                else JudgeResultInput(item_id=pk[f"i{i}"], status="failed", error="HTTP 500")
                for i, label in enumerate(labels)
            ],
        )
        store.set_run_status(run.id, "done")
    return project.id, dataset.id, criterion.id


def _file_case(case: Case) -> bytes:
    columns = {"id": [f"i{i}" for i in range(case.n_items)]}
    columns.update(case.humans)  # one column per annotator, named like the annotator
    columns.update(case.judges)  # and per judge, named like the store's run
    return pd.DataFrame(columns).to_csv(index=False).encode()


# --- the surfaces -------------------------------------------------------------------------------


def _cli(path: Path, *args: str) -> list[dict]:
    out = subprocess.run(
        [str(EVALCORE), "calibrate", str(path), "--json", "--n-boot", str(N_BOOT), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def _cli_case(tmp_path: Path, case: Case) -> list[dict]:
    path = tmp_path / f"{case.name}.csv"
    path.write_bytes(_file_case(case))
    args = ["--id", "id", "--name", "crit", "--scale", case.scale]
    args += [a for who in case.humans for a in ("--human", who)]
    args += [a for name in case.judges for a in ("--judge", name)]
    if case.kind == "pairwise":
        args += ["--kind", "pairwise"]
    return _cli(path, *args)


@pytest.fixture
def upload_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("EVALCORE_DATABASE_URL", f"sqlite:///{tmp_path / 'app.sqlite'}")
    monkeypatch.setenv("EVALCORE_NO_DEMO", "1")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    sign_in(at, "eve", "engineer")
    at.run()
    at.switch_page("pages/calibrate.py")
    at.run()
    at.segmented_control(key=K.MODE).set_value("Upload a file").run()
    assert not at.exception, at.exception
    return at


def _upload(at: AppTest, name: str, data: bytes, scale: str = "") -> AppTest:
    at.file_uploader(key=K.FILES).set_value([(name, data, "text/csv")]).run()
    at.text_input(key=K.FILE_SCALE).set_value(scale).run()
    assert not at.exception, at.exception
    return at


def _upload_case(at: AppTest, case: Case) -> pd.DataFrame:
    _upload(at, f"{case.name}.csv", _file_case(case), case.scale)
    at.multiselect(key=key(K.MAP_HUMAN, f"{case.name}.csv")).set_value(list(case.humans)).run()
    at.multiselect(key=key(K.MAP_JUDGE, f"{case.name}.csv")).set_value(list(case.judges)).run()
    assert not at.exception, at.exception
    return at.dataframe[0].value


class _Tables(HTMLParser):
    """Every table of an HTML page as rows of cell texts."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.tables:
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _html_table(page: str, first_row: str) -> pd.DataFrame:
    """The side-by-side table of a report: the first table whose body starts with ``first_row``."""
    parser = _Tables()
    parser.feed(page)
    for rows in parser.tables:
        if len(rows) > 1 and rows[1] and rows[1][0] == first_row:
            head = rows[0]
            return pd.DataFrame(
                [r[1:] for r in rows[1:]], index=[r[0] for r in rows[1:]], columns=head[1:]
            )
    raise AssertionError(f"no table starting with {first_row!r}")


# --- what must agree ------------------------------------------------------------------------------


def _rows(calibration: Calibration) -> list[str]:
    """The rows every text surface shows the same: coverage, every shown metric of the declared
    table (so a new metric is checked on every surface), the humans' label shares."""
    shares = [prevalence_row(label) for label in calibration.labels]
    return ["compared", *(m.name for m in metrics_for(calibration.kind, shown=True)), *shares]


def _plain(cell: str) -> str:
    return str(cell).removesuffix(BEST_MARK)


def _assert_json_matches(calibration: Calibration, records: list[dict]) -> None:
    assert [r["judge"] for r in records] == [r.title for r in calibration.runs]
    for run, record in zip(calibration.runs, records, strict=True):
        report = run.report
        assert report is not None
        assert record["n"] == report.n
        for m in CALIBRATION_METRICS:
            value = getattr(report, m.key)
            if value is None or value != value:
                assert record[m.key] is None, m.key
                continue
            assert record[m.key] == pytest.approx(value, abs=1e-12), m.key
            if m.key in report.ci and all(v == v for v in report.ci[m.key]):
                assert record["ci"][m.key] == pytest.approx(list(report.ci[m.key]), abs=1e-12)
        references = calibration.references()
        assert record["baselines"] == (None if references is None else references.to_dict())
        quadratic = report.cohen_kappa_quadratic
        assert record["cohen_kappa_quadratic"] == (
            None if quadratic is None else pytest.approx(quadratic, abs=1e-12)
        )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_surface_gives_the_same_numbers(
    case: Case, tmp_path: Path, upload_page: AppTest
) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'cases.sqlite'}")
    try:
        project_id, dataset_id, criterion_id = _store_case(store, case)
        data = load_calibration_data(store, dataset_id, criterion_id)
        library = calibrate_runs(data, n_boot=N_BOOT, seed=0)
        page = build_report(store, project_id, n_boot=N_BOOT, seed=0)
    finally:
        store.close()
    # the library's axis is the declared scale, unused labels included
    assert library.labels == parse_scale(case.scale).labels  # type: ignore[union-attr]
    expected = library.table().text.map(_plain)
    _assert_json_matches(library, _cli_case(tmp_path, case))
    uploaded = _upload_case(upload_page, case).map(_plain)
    reported = _html_table(page, "items with a human label").map(_plain)
    columns = [*(r.title for r in library.runs), CONSTANT_COLUMN, CHANCE_COLUMN]
    for surface, table in (("upload", uploaded), ("html", reported)):
        for row in _rows(library):
            for column in columns:
                got, want = table.loc[row, column], expected.loc[row, column]
                assert got == want, (surface, row, column)
    if len(case.humans) > 1:  # the ceiling column and the alpha row agree too
        for table in (uploaded, reported):
            assert (
                table.loc["Krippendorff's α (humans)", "humans (ceiling)"]
                == expected.loc["Krippendorff's α (humans)", "humans (ceiling)"]
            )
    if len(case.humans) >= 3:  # the Alt-Test: the library and the CLI's --alt-test agree
        args = ["--id", "id", "--name", "crit", "--scale", case.scale, "--alt-test"]
        args += [a for who in case.humans for a in ("--human", who)]
        args += [a for name in case.judges for a in ("--judge", name)]
        path = tmp_path / f"{case.name}.csv"
        records = _cli(path, *args, "--alt-test-min-items", "5", "--epsilon", "0.3")
        for run, record in zip(library.runs, records, strict=True):
            want = run_alt_test(data, run.info.id, min_items=5, epsilon=0.3).to_dict()
            assert record["alt_test"] == want
    if len(case.judges) > 1:  # the paired difference from the baseline
        other = library.runs[1].title
        for table in (uploaded, reported):
            row = "Δ balanced accuracy vs baseline"
            assert table.loc[row, other] == expected.loc[row, other]


def test_the_unused_label_is_on_the_axis_with_or_without_the_declared_scale(
    tmp_path: Path,
) -> None:
    # the same file without the declared scale: numeric labels sit on the inferred scale (whole
    # numbers from the lowest to the highest, so 3 is there although nobody used it), and the
    # quadratic kappa is the declared scale's (issue 21: the axis is the scale)
    case = CASES[0]
    path = tmp_path / "plain.csv"
    path.write_bytes(_file_case(case))
    declared = _cli(
        path, "--id", "id", "--human", "ana", "--judge", "judge", "--scale", "1,2,3,4,5"
    )
    observed = _cli(path, "--id", "id", "--human", "ana", "--judge", "judge")
    assert declared[0]["axis_labels"] == observed[0]["axis_labels"] == ["1", "2", "3", "4", "5"]
    # Vertex's labels are the observed ones either way
    assert declared[0]["confusion_matrix_labels"] == observed[0]["confusion_matrix_labels"]
    assert declared[0]["accuracy_balanced"] == observed[0]["accuracy_balanced"]
    assert declared[0]["cohen_kappa_quadratic"] == pytest.approx(
        observed[0]["cohen_kappa_quadratic"]
    )


def test_the_demo_vertex_export_reads_back_to_the_same_numbers(
    tmp_path: Path, upload_page: AppTest
) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'demo.sqlite'}")
    try:
        project = seed_demo(store)
        calibrations = project_calibrations(store, project.id, n_boot=N_BOOT)
        dataset_id = next(
            c.data.dataset.id for c in calibrations if c.data.criterion.name == "groundedness"
        )
        mine = [c for c in calibrations if c.data.dataset.id == dataset_id]
        exported = table_bytes(vertex_table(store, mine), "csv")
    finally:
        store.close()
    assert b",nan," not in exported  # missing is an empty cell
    assert b'"nan"' not in exported
    path = tmp_path / "vertex.csv"
    path.write_bytes(exported)
    records = {r["metric"]: r for r in _cli(path)}
    uploaded = _upload(upload_page, "vertex.csv", exported).dataframe[0].value
    assert {s.value for s in upload_page.subheader} == {c.data.criterion.name for c in mine}
    groundedness = next(c for c in mine if c.data.criterion.name == "groundedness")
    best = groundedness.best()
    assert best is not None
    assert best.report is not None
    # the demo's groundedness: 0.806 in the store, and 0.806 read back (not 0.769: no "nan" label)
    assert round(best.report.accuracy_balanced, 3) == 0.806
    for calibration in mine:
        run = calibration.best()
        assert run is not None
        assert run.report is not None
        record = records[calibration.data.criterion.name]
        assert record["n"] == run.report.n
        for name in ("accuracy_balanced", "f1_score_balanced", "cohen_kappa"):
            assert record[name] == pytest.approx(getattr(run.report, name), abs=1e-12), name
    first = mine[0].best()
    assert first is not None
    assert first.report is not None
    shown = uploaded.loc["balanced accuracy", "judge"]
    assert re.match(re.escape(f"{first.report.accuracy_balanced:.3f}"), html.unescape(shown))
