"""Project archives: export and import keep every row, fail whole, and refuse hostile files.

The round trip goes SQLite → PostgreSQL → SQLite and compares every archived table row by row: each
row is read with its own id left out and every foreign key replaced by the referenced row's content
(recursively), so rows compare through what they mean, not through ids the import remapped.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import zipfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from evalcore.demo.seed import seed_demo
from evalcore.errors import ConfigError, DataError, PermissionDeniedError, StoreError
from evalcore.labels import LIKERT_5
from evalcore.store import Actor, JudgeResultInput, ProjectRecord, Store
from evalcore.store._archive import (
    CACHE_TABLE,
    EXCLUDED_TABLES,
    MANIFEST_MEMBER,
    MAX_ARCHIVE_ENV,
    archive_tables,
)
from evalcore.store._models import Base
from tests.store.conftest import _create_pg_database, _drop_pg_database, _pg_url
from tests.store.store_helpers import items_frame_for

ARCHIVED = [p.name for p in archive_tables()]
#: What the issue names, each of which the test project fills (other archived tables, such as a
#: run's provider batches, are compared all the same).
FILLED = (
    "projects", "datasets", "items", "criteria", "annotators", "assignments", "annotations",
    "judge_templates", "template_versions", "endpoints", "model_prices", "judge_runs",
    "judge_results", "judge_cache", "jury_members", "queue_orders", "queue_order_items",
)  # fmt: skip
#: Tables shared between projects, and the columns that use their rows (by key).
USED_BY = {
    "annotators": [("annotations", "annotator_id"), ("assignments", "annotator_id")],
    "endpoints": [("judge_runs", "endpoint_id")],
    "model_prices": [("judge_runs", "model")],
    "judge_cache": [("judge_results", "cache_key")],
    "model_batch_prices": [("judge_runs", "model")],
}


# --- a project with everything ------------------------------------------------------------------


def build_full_project(store: Store) -> ProjectRecord:
    """The demo, plus what it lacks: an endpoint and a price its runs use, queues with several
    revisions, and results that point into the reply cache."""
    project = seed_demo(store)
    dataset = store.list_datasets(project.id)[0]
    criterion = next(c for c in store.list_criteria(project.id) if c.kind == dataset.kind)
    endpoint = store.upsert_endpoint(
        "fake judge",
        base_url="http://127.0.0.1:9/v1",
        api_key_env="FAKE_API_KEY",
        default_model="demo-judge-mini",
        extra={"headers": {"X-Team": "eval"}},
    )
    store.set_model_price("demo-judge-mini", input_per_mtok=0.5, output_per_mtok=1.5)
    for annotator in ("zoe", "yan"):
        store.ensure_queue(dataset.id, criterion.id, annotator, limit=3)
        task = store.queue_item(dataset.id, criterion.id, annotator, 0)
        assert task is not None
        labels = criterion.scale.labels
        first = store.submit_annotation(
            task.item_id, criterion.id, annotator, label=labels[0], base_revision=0
        )
        store.submit_annotation(
            task.item_id,
            criterion.id,
            annotator,
            label=labels[-1],
            base_revision=first.revision,
            comment="changed my mind",
            time_spent_s=12.5,
        )
    run = store.create_run(
        dataset.id,
        criterion.id,
        name="cached run",
        model="demo-judge-mini",
        endpoint_id=endpoint.id,
        settings={"temperature": 0.0},
    )
    items = list(store.items_frame(dataset.id).index[:4])
    keys = [hashlib.sha256(f"reply {i}".encode()).hexdigest() for i in items]
    store.cache_put_many(
        (key, "demo-judge-mini", {"choices": [{"message": {"content": f"Score: {n}"}}]})
        for n, key in enumerate(keys)
    )
    store.record_results(
        run.id,
        [
            JudgeResultInput(
                item_id=int(item),
                status="ok",
                label=criterion.scale.labels[0],
                raw="Score",
                cache_key=key,
                tokens_in=10,
                tokens_out=2,
                probabilities={criterion.scale.labels[0]: 0.8, criterion.scale.labels[-1]: 0.2},
                confidence=0.8,
            )
            for item, key in zip(items, keys, strict=True)
        ],
    )
    store.set_run_status(run.id, "running")
    store.set_run_status(run.id, "done")
    # a jury of that run and another (its members point at runs: ids the import rewrites), and
    # an escalation order of the queue
    other = store.create_run(dataset.id, criterion.id, name="second opinion")
    store.create_jury_run(
        dataset.id, criterion.id, name="jury", members=[run.id, other.id], weights=[2.0, 1.0]
    )
    store.save_queue_order(
        dataset.id,
        criterion.id,
        "escalation",
        [int(i) for i in reversed(items)],
        reason="least sure first",
        source="escalation",
    )
    return project


# --- comparing databases through content --------------------------------------------------------


class Snapshot:
    """Every archived table of a database as a multiset of rows, ids replaced by content."""

    def __init__(self, store: Store, *, skip: tuple[str, ...] = ()) -> None:
        self.tables: dict[str, sa.Table] = {t.name: t for t in Base.metadata.sorted_tables}
        self.rows: dict[str, dict[Any, tuple[Any, ...]]] = {}
        with store.engine.connect() as conn:
            for name in ARCHIVED:
                if name in skip:
                    continue
                table = self.tables[name]
                (key,) = table.primary_key.columns
                self.rows[name] = {
                    r._mapping[key.name]: tuple(r) for r in conn.execute(sa.select(table))
                }
            for name, users in USED_BY.items():  # shared rows: only those the project uses
                if name not in self.rows:
                    continue
                used = {
                    value
                    for table, column in users
                    for value in conn.execute(sa.select(self.tables[table].c[column])).scalars()
                }
                self.rows[name] = {k: v for k, v in self.rows[name].items() if k in used}
        self._digest: dict[tuple[str, Any], str] = {}

    def content(self, name: str, row: tuple[Any, ...]) -> tuple[Any, ...]:
        table = self.tables[name]
        values = []
        for column, value in zip(table.columns, row, strict=True):
            if column.primary_key and isinstance(column.type, sa.Integer):
                continue
            fk = next(iter(column.foreign_keys), None)
            if fk is not None and value is not None:
                value = self.digest(fk.column.table.name, value)
            values.append((column.name, json.dumps(value, sort_keys=True, default=str)))
        return tuple(values)

    def digest(self, name: str, key: Any) -> str:
        found = self._digest.get((name, key))
        if found is None:
            found = hashlib.sha256(
                repr(self.content(name, self.rows[name][key])).encode()
            ).hexdigest()
            self._digest[(name, key)] = found
        return found

    def table(self, name: str) -> Counter[tuple[Any, ...]]:
        return Counter(self.content(name, row) for row in self.rows[name].values())


def assert_same_rows(a: Snapshot, b: Snapshot) -> None:
    assert a.rows.keys() == b.rows.keys()
    for name in a.rows:
        assert len(a.rows[name]) == len(b.rows[name]), name
        assert a.table(name) == b.table(name), name


def row_counts(store: Store) -> dict[str, int]:
    with store.engine.connect() as conn:
        return {
            t.name: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
            for t in Base.metadata.sorted_tables
        }


@pytest.fixture
def pg_store(request: pytest.FixtureRequest) -> Iterator[Store]:
    server = request.getfixturevalue("postgres_url")
    name = _create_pg_database(server, template=request.getfixturevalue("_pg_template"))
    opened = Store.open(_pg_url(server, name))
    try:
        yield opened
    finally:
        opened.close()
        _drop_pg_database(server, name)


def _advance_ids(store: Store, archive: Path) -> None:
    """Use up some ids of every project table (PostgreSQL's sequences do not go back)."""
    with zipfile.ZipFile(archive) as zf:
        content = json.loads(zf.open("template_versions.jsonl").readline())["content"]
    scratch = store.create_project("scratch")
    criterion = store.create_criterion(scratch.id, "c", kind="pointwise", scale=LIKERT_5)
    dataset = store.save_dataset(scratch.id, "d", items_frame_for(17), kind="pointwise")
    template = store.create_template(scratch.id, "t", criterion.id)
    version = store.save_template_version(template.id, content, author="x")
    store.create_run(dataset.id, criterion.id, name="r", template_version_id=version.id)
    with store.engine.begin() as conn:
        conn.execute(sa.delete(Base.metadata.tables["projects"]))


def _sqlite(path: Path) -> Store:
    return Store.open(f"sqlite:///{path}")


@pytest.fixture(scope="module")
def full_archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A SQLite database with the full project, and its archive."""
    folder = tmp_path_factory.mktemp("archive")
    store = _sqlite(folder / "source.sqlite")
    project = build_full_project(store)
    archive = folder / "full.zip"
    store.export_project(project.id, archive)
    store.close()
    return folder / "source.sqlite", archive


# --- the round trip ----------------------------------------------------------------------------


def test_round_trip_sqlite_postgresql_sqlite_keeps_every_row(
    full_archive: tuple[Path, Path], pg_store: Store, tmp_path: Path
) -> None:
    source_path, archive = full_archive
    source = _sqlite(source_path)
    first = source.get_project_by_name("Northwind support demo")
    before = Snapshot(source)
    assert all(before.rows[name] for name in FILLED), "the test project misses a table"

    _advance_ids(pg_store, archive)  # so that remapped ids differ from the source's
    started = time.perf_counter()
    # a trusted archive (share_cache) keeps every row as it was, the cache keys included
    imported = pg_store.import_project(archive, share_cache=True)
    pg_import_s = time.perf_counter() - started
    assert imported.project == first.name
    assert_same_rows(before, Snapshot(pg_store))

    again = tmp_path / "again.zip"
    started = time.perf_counter()
    pg_store.export_project(imported.project_id, again)
    pg_export_s = time.perf_counter() - started
    back = _sqlite(tmp_path / "back.sqlite")
    started = time.perf_counter()
    back.import_project(again, share_cache=True)
    sqlite_import_s = time.perf_counter() - started
    assert_same_rows(before, Snapshot(back))
    print(
        f"\narchive {archive.stat().st_size / 1e3:.0f} kB; PostgreSQL import {pg_import_s:.2f} s, "
        f"export {pg_export_s:.2f} s; SQLite import {sqlite_import_s:.2f} s"
    )
    source.close()
    back.close()


def test_manifest_lists_tables_rows_and_versions(full_archive: tuple[Path, Path]) -> None:
    source_path, archive = full_archive
    source = _sqlite(source_path)
    with zipfile.ZipFile(archive) as zf:
        manifest = json.loads(zf.read(MANIFEST_MEMBER))
        assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in zf.infolist())
        assert set(zf.namelist()) == {MANIFEST_MEMBER, *(f"{n}.jsonl" for n in ARCHIVED)}
        first_item = json.loads(zf.open("items.jsonl").readline())
        first_run = json.loads(zf.open("judge_runs.jsonl").readline())
    assert manifest["format"] == "evalcore-project-archive"
    assert manifest["format_version"] == 1
    assert manifest["schema_revision"] == source.schema_revision()
    used = Snapshot(source).rows
    assert {t["name"]: t["rows"] for t in manifest["tables"]} == {n: len(used[n]) for n in ARCHIVED}
    assert not EXCLUDED_TABLES & {t["name"] for t in manifest["tables"]}
    assert first_item["created_at"].endswith("+00:00")  # ISO-8601 UTC
    assert isinstance(first_item["metadata"], dict)  # JSON columns stay JSON
    assert isinstance(first_run["settings"], dict)
    source.close()


def test_only_the_project_and_what_it_uses_go_in(tmp_path: Path, store: Store) -> None:
    project = build_full_project(store)
    other = store.create_project("other")
    crit = store.create_criterion(other.id, "c", kind="pointwise", scale=LIKERT_5)
    store.upsert_endpoint("unused", base_url="http://127.0.0.1:9/v1")
    store.get_or_create_annotator("stranger")
    store.set_model_price("unused-model", input_per_mtok=1, output_per_mtok=1)
    summary = store.export_project(project.id, tmp_path / "p.zip", cache=False)
    assert CACHE_TABLE not in summary.rows
    assert summary.rows["projects"] == 1
    assert summary.rows["endpoints"] == 1  # the one its run used, not "unused" nor the demo's
    assert summary.rows["model_prices"] == 1
    assert "stranger" not in (tmp_path / "p.zip").read_bytes().decode("latin-1")
    with zipfile.ZipFile(tmp_path / "p.zip") as zf:
        assert f"{CACHE_TABLE}.jsonl" not in zf.namelist()
        criteria = [json.loads(line) for line in zf.open("criteria.jsonl")]
    assert crit.id not in {c["id"] for c in criteria}


# --- matching, names, permissions ---------------------------------------------------------------


def test_name_clash_is_refused_and_as_imports_a_copy(
    store: Store, full_archive: tuple[Path, Path]
) -> None:
    _, archive = full_archive
    store.import_project(archive, share_cache=True)
    counts = row_counts(store)
    with pytest.raises(StoreError, match=r"already exists.*--as"):
        store.import_project(archive)
    assert row_counts(store) == counts
    copy = store.import_project(archive, name="  Northwind copy ", share_cache=True)
    assert copy.project == "Northwind copy"
    # annotators, the endpoint, prices and (shared) cached replies are not duplicated
    assert copy.matched["annotators"] == copy.rows["annotators"] > 0
    assert copy.matched["endpoints"] == 1
    assert copy.matched[CACHE_TABLE] == copy.rows[CACHE_TABLE] == 4
    after = row_counts(store)
    for name in ("annotators", "endpoints", "model_prices", CACHE_TABLE):
        assert after[name] == counts[name]
    for name in ("items", "annotations", "judge_results", "template_versions"):
        assert after[name] == 2 * counts[name]
    original = store.get_project_by_name("Northwind support demo")
    assert [d.name for d in store.list_datasets(copy.project_id)] == [
        d.name for d in store.list_datasets(original.id)
    ]
    assert copy.project_id != original.id


def test_permissions(store: Store, full_archive: tuple[Path, Path], tmp_path: Path) -> None:
    _, archive = full_archive
    admin = store.acting_as(Actor.system("cli:test"))
    project = admin.import_project(archive)
    viewer = Actor("vera", "viewer", memberships={project.project_id: "viewer"})
    annotator = Actor("ana", "annotator", memberships={project.project_id: "annotator"})
    store.acting_as(viewer).export_project(project.project_id, tmp_path / "v.zip")
    with pytest.raises(PermissionDeniedError):
        store.acting_as(annotator).export_project(project.project_id, tmp_path / "a.zip")
    assert not (tmp_path / "a.zip").exists()
    with pytest.raises(PermissionDeniedError):
        store.acting_as(viewer).import_project(tmp_path / "v.zip", name="mine")
    log = store.audit_log()
    assert {"project_exported", "project_imported"} <= set(log["action"])
    assert "cli:test" in set(log["actor"])


# --- failures change nothing --------------------------------------------------------------------


def _rewrite(source: Path, target: Path, change: dict[str, bytes | None]) -> Path:
    """A copy of an archive with some members replaced (None: removed) or added."""
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            if info.filename in change:
                continue
            zout.writestr(info.filename, zin.read(info.filename))
        for name, data in change.items():
            if data is not None:
                zout.writestr(name, data)
    return target


def test_a_corrupt_last_member_rolls_everything_back(
    store: Store, full_archive: tuple[Path, Path], tmp_path: Path
) -> None:
    _, archive = full_archive
    last = [name for name in ARCHIVED if name in FILLED][-1]  # imported last of the filled ones
    with zipfile.ZipFile(archive) as zf:
        lines = zf.read(f"{last}.jsonl").splitlines()
    broken = [*lines[:-1], lines[-1][:-5]]
    bad = _rewrite(archive, tmp_path / "bad.zip", {f"{last}.jsonl": b"\n".join(broken) + b"\n"})
    before = row_counts(store)
    with pytest.raises(DataError, match=rf"{last}.jsonl, line {len(lines)}: not valid JSON"):
        store.import_project(bad)
    assert row_counts(store) == before


@pytest.mark.parametrize(
    ("member", "line", "column", "value", "error", "message"),
    [
        # CHECK (revision >= 1): the database refuses, and the line is found
        ("annotations", 8, "revision", 0, StoreError, "line 8: the database refused the row"),
        ("items", 3, "position", "three", DataError, "line 3: position should be a whole number"),
        ("judge_results", 1, "item_id", 10**9, DataError, "line 1: item_id 1000000000 names a"),
        ("endpoints", 1, "api_key_env", "sk-live-abcdefghijk", ConfigError, "line 1: api_key_env"),
    ],
)
def test_a_bad_row_names_its_line_and_changes_nothing(
    store: Store,
    full_archive: tuple[Path, Path],
    tmp_path: Path,
    member: str,
    line: int,
    column: str,
    value: Any,
    error: type[Exception],
    message: str,
) -> None:
    _, archive = full_archive
    with zipfile.ZipFile(archive) as zf:
        rows = [json.loads(text) for text in zf.open(f"{member}.jsonl")]
    rows[line - 1][column] = value
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    bad = _rewrite(archive, tmp_path / "bad.zip", {f"{member}.jsonl": data})
    before = row_counts(store)
    with pytest.raises(error, match=re.escape(f"{member}.jsonl, {message}")):
        store.import_project(bad)
    assert row_counts(store) == before


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"notes.txt": b"hello"}, "notes.txt: unknown member"),
        ({"items.jsonl": None}, "items.jsonl: listed in the manifest but missing"),
        ({"items.jsonl": b"[1, 2]\n"}, "items.jsonl, line 1: a row should be a JSON object"),
        ({"items.jsonl": b'{"id": 1}\n'}, "items.jsonl, line 1: the columns differ"),
        ({MANIFEST_MEMBER: b"{not json"}, "manifest.json: not valid JSON"),
    ],
)
def test_bad_members_are_named(
    store: Store,
    full_archive: tuple[Path, Path],
    tmp_path: Path,
    change: dict[str, bytes | None],
    message: str,
) -> None:
    _, archive = full_archive
    bad = _rewrite(archive, tmp_path / "bad.zip", change)
    before = row_counts(store)
    with pytest.raises(DataError, match=re.escape(message)):
        store.import_project(bad)
    assert row_counts(store) == before


def _manifest_with(archive: Path, tmp_path: Path, **changes: Any) -> Path:
    with zipfile.ZipFile(archive) as zf:
        manifest = json.loads(zf.read(MANIFEST_MEMBER))
    manifest.update(changes)
    return _rewrite(archive, tmp_path / "m.zip", {MANIFEST_MEMBER: json.dumps(manifest).encode()})


def test_wrong_format_version_and_unknown_schema_are_refused(
    store: Store, full_archive: tuple[Path, Path], tmp_path: Path
) -> None:
    _, archive = full_archive
    with pytest.raises(
        DataError, match=re.escape("format version 2; this evalcore reads version 1")
    ):
        store.import_project(_manifest_with(archive, tmp_path, format_version=2))
    with pytest.raises(DataError, match=r"schema revision 'ffff9999'.*upgrade evalcore"):
        store.import_project(_manifest_with(archive, tmp_path, schema_revision="ffff9999"))
    with pytest.raises(DataError, match="not the manifest"):
        store.import_project(_manifest_with(archive, tmp_path, format="something else"))


def test_zip_bombs_stop_at_the_cap(
    store: Store, full_archive: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, archive = full_archive
    monkeypatch.setenv(MAX_ARCHIVE_ENV, "1")
    bomb = _rewrite(archive, tmp_path / "bomb.zip", {"items.jsonl": b"\n" * (8 * 1024 * 1024)})
    assert bomb.stat().st_size < 200_000
    with pytest.raises(DataError, match="more than the limit of 1 MB"):
        store.import_project(bomb)
    # a member that declares a small size but holds more: the read stops at the declared size
    # and the checksum no longer matches
    monkeypatch.delenv(MAX_ARCHIVE_ENV)
    liar = tmp_path / "liar.zip"
    data = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as zf:
        info = zf.getinfo("items.jsonl")
    name = b"items.jsonl"  # its entry in the central directory: the name follows 46 bytes
    at = data.index(b"PK\x01\x02")
    while data[at + 46 : at + 46 + len(name)] != name:
        at = data.index(b"PK\x01\x02", at + 4)
    data[at + 24 : at + 28] = (info.file_size // 2).to_bytes(4, "little")
    liar.write_bytes(bytes(data))
    before = row_counts(store)
    with pytest.raises(DataError, match=re.escape("items.jsonl")):
        store.import_project(liar)
    assert row_counts(store) == before


def test_not_an_archive(store: Store, tmp_path: Path) -> None:
    text = tmp_path / "notes.zip"
    text.write_text("hello")
    with pytest.raises(DataError, match="not a zip file"):
        store.import_project(text)
    with pytest.raises(DataError, match="There is no archive"):
        store.import_project(tmp_path / "missing.zip")
    empty = tmp_path / "empty.zip"
    zipfile.ZipFile(empty, "w").close()
    with pytest.raises(DataError, match=re.escape("has no manifest.json")):
        store.import_project(empty)


def test_export_of_a_missing_project_writes_nothing(store: Store, tmp_path: Path) -> None:
    from evalcore.errors import NotFoundError

    with pytest.raises(NotFoundError):
        store.export_project(404, tmp_path / "x.zip")
    assert not [p for p in tmp_path.iterdir() if "x.zip" in p.name]


def test_an_imported_endpoint_meets_the_target_servers_policy(
    store: Store, full_archive: tuple[Path, Path]
) -> None:
    # the archive's endpoint names host 127.0.0.1 and key variable FAKE_API_KEY
    _, archive = full_archive
    store.set_server_setting("endpoint_hosts", ["judge.example.com"])
    before = row_counts(store)
    with pytest.raises(ConfigError, match=r"endpoints\.jsonl, line 1: .*127\.0\.0\.1"):
        store.import_project(archive)
    assert row_counts(store) == before
    store.set_server_setting("endpoint_hosts", ["127.0.0.1"])
    store.import_project(archive)
    assert store.get_endpoint_by_name("fake judge").base_url == "http://127.0.0.1:9/v1"
