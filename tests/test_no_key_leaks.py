"""A whole judge run with a recognisable fake key, then a search for the key where it must not be.

The key is a canary (``sk-canary-<uuid>``) in the variable ``CANARY_API_KEY``. The run goes through
the store-backed runner against the real fake server over HTTP, with an item that fails once and
then succeeds and an item that always fails with an error that repeats the key. The fake records
the ``Authorization`` header it got, which proves the key did reach the endpoint. Then the key is
searched for, on SQLite and on PostgreSQL, in: the database (the SQLite file's raw bytes with its
WAL, and every row of every table), the logs (every logger at DEBUG) and what the process printed,
every export (CSV, JSONL, Parquet, Vertex, the annotations export, the HTML report, every member of
the project archive), and every page of the app as rendered for an admin and for an engineer.
"""

from __future__ import annotations

import io
import logging
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from streamlit.testing.v1 import AppTest

from evalcore.labels import LIKERT_5
from evalcore.report import (
    EXPORT_FORMATS,
    build_report,
    calibrate_runs,
    human_labels_table,
    judge_results_table,
    load_calibration_data,
    metrics_table,
    table_bytes,
    vertex_table,
)
from evalcore.runs import execute_run, plan_run
from evalcore.store import Store
from evalcore.testing import FakeOpenAI, Fault
from tests.pages.conftest import APP, sign_in
from tests.runs.test_runs_service import FAST, TEMPLATE
from tests.store.conftest import (
    _pg_template,
    _sqlite_template,
    backend,
    store,
    store_url,
)

#: The store tests' fixtures (SQLite and PostgreSQL), found by name.
FIXTURES = (_pg_template, _sqlite_template, backend, store, store_url)

KEY_ENV = "CANARY_API_KEY"
PAGES = sorted(p.stem for p in (Path(__file__).resolve().parent.parent / "pages").glob("*.py"))


@pytest.fixture
def canary(monkeypatch: pytest.MonkeyPatch) -> str:
    value = f"sk-canary-{uuid.uuid4().hex}"
    monkeypatch.setenv(KEY_ENV, value)
    return value


@pytest.fixture
def fake(canary: str) -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(
        faults=[
            Fault.status_code(500, match="flaky-item", first=1),  # fails once, then answers
            # a careless endpoint that repeats the key it was given in its error message
            Fault.status_code(400, match="broken-item", message=f"refused for key {canary}"),
        ]
    ).start()
    yield server
    server.stop()


def _judge_a_whole_run(store: Store, fake: FakeOpenAI) -> dict[str, Any]:
    """A project with human labels and one finished judge run on the canary endpoint."""
    project = store.create_project("leaks", description="where is the key")
    criterion = store.create_criterion(project.id, "fluency", kind="pointwise", scale=LIKERT_5)
    n = 8
    hints = [f"expect={1 + i % 5}" for i in range(n)]
    hints[1] += " flaky-item"
    hints[2] += " broken-item"
    items = pd.DataFrame(
        {
            "item_id": [f"i{i}" for i in range(n)],
            "prompt": [f"question {i}" for i in range(n)],
            "response": [f"answer {i}" for i in range(n)],
            "hint": hints,
        }
    )
    dataset = store.save_dataset(project.id, "answers", items, kind="pointwise")
    labels = pd.DataFrame(
        {
            "item_id": [f"i{i}" for i in range(n)] * 2,
            "annotator": ["ann"] * n + ["bob"] * n,
            "label": [1 + i % 5 for i in range(n)] + [1 + (i + 1) % 5 for i in range(n)],
        }
    )
    store.import_labels(dataset.id, criterion.id, labels)
    template = store.create_template(project.id, "fluency", criterion.id)
    version = store.save_template_version(template.id, TEMPLATE, author="eve")
    endpoint = store.upsert_endpoint(
        "canary", base_url=fake.base_url, api_key_env=KEY_ENV, default_model="fake-judge"
    )
    run = plan_run(
        store,
        dataset_id=dataset.id,
        template_version_id=version.id,
        endpoint_id=endpoint.id,
        settings=FAST,
    )
    execute_run(store, run.id)
    return {"project": project, "criterion": criterion, "dataset": dataset, "run": run}


def _assert_the_run_reached_the_endpoint(store: Store, fake: FakeOpenAI, world: dict, key: str):
    run = store.get_run(world["run"].id)
    assert run.status == "done", run.error
    progress = store.run_progress(run.id)
    assert (progress.ok, progress.failed) == (7, 1)
    assert fake.count == 8 + 1  # every item once and the flaky one again (a 400 is not retried)
    sent = {dict(r.headers).get("authorization") for r in fake.requests}
    assert sent == {f"Bearer {key}"}
    errors = [e for e in store.results_frame(run.id)["error"].tolist() if e]
    assert errors == ["HTTP 400 (invalid_request_error): refused for key ***"]  # echoed, redacted


def _needles(key: str) -> list[bytes]:
    """The key, and its random part alone (in case something cut or re-cased the prefix)."""
    random_part = key.removeprefix("sk-canary-")
    return [key.encode(), random_part.encode(), random_part.upper().encode()]


def _assert_absent(where: str, blob: bytes | str, key: str) -> None:
    data = blob.encode("utf-8", "backslashreplace") if isinstance(blob, str) else blob
    found = [n.decode() for n in _needles(key) if n in data]
    assert not found, f"the key was found in {where}"


def _every_row(store: Store) -> Iterator[tuple[str, str]]:
    inspector = sa.inspect(store.engine)
    with store.engine.connect() as conn:
        for table in inspector.get_table_names():
            for row in conn.execute(sa.text(f'SELECT * FROM "{table}"')):
                yield table, repr(tuple(row))


def _database_files(url: str) -> list[Path]:
    database = make_url(url).database or ""
    main = Path(database)
    return [p for p in (main, Path(f"{database}-wal"), Path(f"{database}-shm")) if p.exists()]


def _exports(store: Store, world: dict) -> Iterator[tuple[str, bytes]]:
    data = load_calibration_data(store, world["dataset"].id, world["criterion"].id)
    calibration = calibrate_runs(data, n_boot=50)
    tables = {
        "human labels": human_labels_table(store, world["dataset"].id, world["criterion"].id),
        "judge results": judge_results_table(store, calibration),
        "metrics": metrics_table(calibration),
        "vertex": vertex_table(store, calibration, runs={"fluency": world["run"].id}),
        "annotations": store.export_annotations(project_id=world["project"].id),
    }
    for name, frame in tables.items():
        assert not frame.empty, name
        for fmt in EXPORT_FORMATS:
            yield f"the {name} export ({fmt})", table_bytes(frame, fmt)
    html = build_report(store, world["project"].id, n_boot=50)
    assert "fluency" in html
    yield "the HTML report", html.encode()


def _archive(store: Store, world: dict, tmp_path: Path) -> bytes:
    """The bytes of the project's archive (``evalcore project export``), reply cache included."""
    target = tmp_path / "project.zip"
    store.export_project(world["project"].id, target)
    return target.read_bytes()


def test_a_whole_run_leaves_the_key_in_no_row_log_or_export(
    store: Store,
    store_url: str,
    backend: str,
    fake: FakeOpenAI,
    canary: str,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("evalcore", "openai", "httpx", "httpcore", "sqlalchemy.engine"):
        caplog.set_level(logging.DEBUG, logger=name)
    world = _judge_a_whole_run(store, fake)
    _assert_the_run_reached_the_endpoint(store, fake, world, canary)

    rows = 0
    for table, row in _every_row(store):
        _assert_absent(f"a row of {table}", row, canary)
        rows += 1
    assert rows > 20
    if backend == "sqlite":
        with store.engine.connect() as conn:  # nothing hides in pages freed by a checkpoint
            conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")
        files = _database_files(store_url)
        assert files
        for path in files:
            _assert_absent(f"the database file {path.name}", path.read_bytes(), canary)

    exports = 0
    for where, blob in _exports(store, world):
        _assert_absent(where, blob, canary)
        exports += 1
    assert exports == 5 * len(EXPORT_FORMATS) + 1
    archive = _archive(store, world, tmp_path)
    with zipfile.ZipFile(io.BytesIO(archive)) as opened:
        members = {m: opened.read(m) for m in opened.namelist()}
    assert any(b"refused for key ***" in data for data in members.values())
    for member, data in members.items():  # the zip compresses: search each member's text too
        _assert_absent(f"the project archive's {member}", data, canary)
    _assert_absent("the project archive", archive, canary)

    assert caplog.records  # the run did log (sqlalchemy at least)
    for record in caplog.records:
        _assert_absent(f"a log record of {record.name}", record.getMessage(), canary)
        _assert_absent(f"the arguments of a log record of {record.name}", repr(record.args), canary)
    out, err = capfd.readouterr()
    _assert_absent("standard output", out, canary)
    _assert_absent("standard error", err, canary)


def _walk(node: Any) -> Iterator[Any]:
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def _page_text(at: AppTest) -> str:
    """Everything an AppTest run rendered: every element's message (markdown, text, code, captions,
    tables and dataframes as their Arrow bytes, widget labels and values), exceptions included."""
    parts = [str(getattr(node, "proto", "")) for node in _walk(at._tree)]
    parts += [str(e.value) for e in at.exception]
    return "\n".join(parts)


@pytest.mark.parametrize("role", ["admin", "engineer"])
def test_no_page_shows_the_key(
    store: Store,
    store_url: str,
    fake: FakeOpenAI,
    canary: str,
    role: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = _judge_a_whole_run(store, fake)
    _assert_the_run_reached_the_endpoint(store, fake, world, canary)
    monkeypatch.setenv("EVALCORE_DATABASE_URL", store_url)
    monkeypatch.setenv("EVALCORE_NO_DEMO", "1")
    shown: dict[str, str] = {}
    for page in PAGES:
        at = sign_in(AppTest.from_file(APP, default_timeout=120), "root", role)
        at.run()
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        text = _page_text(at)
        _assert_absent(f"the {page} page as {role}", text, canary)
        shown[page] = text
    assert "canary" in shown["judge"]  # the endpoint is offered by its name
    if role == "admin":
        assert KEY_ENV in shown["settings"]  # the endpoints table shows the variable's name
    assert sum(len(t) for t in shown.values()) > 50_000
