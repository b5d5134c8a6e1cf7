"""Fuzzing project archive import on a real SQLite store.

The starting point is the archive of a small project that fills every kind of row an archive
carries (items, annotations with revisions, a template version, an endpoint, prices, a run with
results that point into the reply cache). Each case changes it in one to three ways:

- a value of any row (any column, any table) becomes a hostile value: odd numbers, wrong types,
  text, or JSON nested around the limit or 100,000 levels deep (raw in the line);
- a row loses or gains a column, is repeated, is dropped, or gains rows the manifest does not list;
  a member becomes lines of deep JSON or garbage; reply-cache rows with keys no result names, and
  results naming keys of their own;
- the manifest's fields (format, version, schema revision, the tables' names, rows and columns)
  take hostile values, or the manifest becomes deep JSON;
- the zip itself: bytes overwritten, inserted or deleted, a member stored twice, an unknown
  member, a member's size in the central directory understated or overstated.

It is imported with and without the cache, shared or not. The import must succeed or raise a
typed error; a refused import leaves every table as it was; a successful one adds reply-cache rows
only under the new project's own keys, unless the cache was shared.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st

from evalcore.labels import LIKERT_5
from evalcore.store import JudgeResultInput, Store
from evalcore.store._archive import CACHE_TABLE, MANIFEST_MEMBER
from tests.fuzz.harness import (
    DEEP_JSON,
    HOSTILE,
    Raw,
    damaged,
    fuzz_settings,
    note,
    typed,
    write_json,
)

_IMPORTS = itertools.count()


def _small_project(store: Store) -> int:
    project = store.create_project("small")
    criterion = store.create_criterion(project.id, "fluency", kind="pointwise", scale=LIKERT_5)
    frame = pd.DataFrame(
        {
            "item_id": ["a", "b", "c"],
            "prompt": ["p1", "p2", "p3"],
            "response": ["r1", "r2", "r3"],
            "topic": ["x", "y", None],
        }
    )
    dataset = store.save_dataset(project.id, "answers", frame, kind="pointwise")
    items = list(store.items_frame(dataset.id).index)
    first = store.submit_annotation(items[0], criterion.id, "zoe", label=3, base_revision=0)
    store.submit_annotation(
        items[0], criterion.id, "zoe", label=4, base_revision=first.revision, comment="again"
    )
    store.submit_annotation(items[1], criterion.id, "yan", label=2, base_revision=0)
    template = store.create_template(project.id, "fluency judge", criterion.id)
    content = {
        "name": "fluency judge",
        "criterion": "fluency",
        "scale": [1, 2, 3, 4, 5],
        "user": "Rate {{ response }}",
    }
    version = store.save_template_version(template.id, content, author="zoe")
    endpoint = store.upsert_endpoint(
        "fake judge", base_url="http://127.0.0.1:9/v1", api_key_env="FAKE_API_KEY"
    )
    store.set_model_price("judge-mini", input_per_mtok=0.5, output_per_mtok=1.5)
    run = store.create_run(
        dataset.id,
        criterion.id,
        name="run",
        model="judge-mini",
        template_version_id=version.id,
        endpoint_id=endpoint.id,
    )
    keys = [hashlib.sha256(f"reply {i}".encode()).hexdigest() for i in items]
    store.cache_put_many(
        (key, "judge-mini", {"choices": [{"text": f"Score: {n + 1}"}], "tokens_in": 3})
        for n, key in enumerate(keys)
    )
    store.record_results(
        run.id,
        [
            JudgeResultInput(
                item_id=int(item),
                status="ok",
                label=2,
                raw="Score: 2",
                cache_key=key,
                tokens_in=3,
                tokens_out=1,
            )
            for item, key in zip(items, keys, strict=True)
        ],
    )
    store.set_run_status(run.id, "running")
    store.set_run_status(run.id, "done")
    return project.id


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, dict[str, bytes]]]:
    folder = tmp_path_factory.mktemp("fuzz-archives")
    source = Store.open(f"sqlite:///{folder / 'source.sqlite'}")
    path = folder / "small.zip"
    source.export_project(_small_project(source), path)
    source.close()
    with zipfile.ZipFile(path) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    target = Store.open(f"sqlite:///{folder / 'target.sqlite'}")
    try:
        yield target, members
    finally:
        target.close()


def _zip(members: list[tuple[str, bytes]], stored: bool = False) -> bytes:
    out = io.BytesIO()
    method = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(out, "w", method) as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a member stored twice, on purpose
        for name, data in members:
            zf.writestr(name, data)
    return out.getvalue()


def _rows(data: bytes) -> list[Any]:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def _lines(rows: list[Any]) -> bytes:
    return "".join(write_json(r) + "\n" for r in rows).encode("utf-8", "surrogatepass")


MEMBER_CHANGES = ["value", "drop column", "add column", "repeat", "drop", "extra", "garbage"]
MANIFEST_FIELDS = ["format", "format_version", "schema_revision", "project", "tables"]
TABLE_FIELDS = ["name", "rows", "columns", "member"]


@st.composite
def hostile_archives(draw: st.DrawFn, base: dict[str, bytes]) -> tuple[bytes, str]:
    """The small archive changed in one to three ways; returns its bytes and what was done."""
    rows: dict[str, list[Any]] = {n: _rows(d) for n, d in base.items() if n != MANIFEST_MEMBER}
    raw: dict[str, bytes] = {}  # members replaced by bytes that are not rows any more
    manifest: Any = json.loads(base[MANIFEST_MEMBER])
    done: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["member", "member", "member", "cache", "manifest", "zip"]))
        if where == "member":
            name = draw(st.sampled_from(sorted(rows)))
            change = draw(st.sampled_from(MEMBER_CHANGES))
            done.append(f"{name}: {change}")
            table = rows[name]
            if change == "garbage":
                lines = draw(st.lists(DEEP_JSON | st.text(max_size=20), max_size=3))
                raw[name] = "\n".join(lines).encode("utf-8", "surrogatepass")
                continue
            if not table:
                continue
            at = draw(st.integers(0, len(table) - 1))
            row = table[at]
            if change == "value" and isinstance(row, dict) and row:
                row[draw(st.sampled_from(sorted(row)))] = draw(HOSTILE)
            elif change == "drop column" and isinstance(row, dict) and row:
                row.pop(draw(st.sampled_from(sorted(row))))
            elif change == "add column" and isinstance(row, dict):
                row[draw(st.sampled_from(["extra", "id", "name"]))] = draw(HOSTILE)
            elif change == "repeat":
                table.insert(at, table[at])
            elif change == "drop":
                del table[at]
            else:
                table.extend([table[at]] * draw(st.integers(1, 20)))
        elif where == "cache":
            key = draw(st.sampled_from(["ab" * 32, "p1-" + "c" * 61, ""]) | st.text(max_size=70))
            reply = draw(st.sampled_from([{"choices": [], "tokens_in": 1}]) | HOSTILE)
            rows[f"{CACHE_TABLE}.jsonl"].append(
                {"key": key, "model": "m", "response": reply, "created_at": None}
            )
            results = rows["judge_results.jsonl"]
            if results and isinstance(results[0], dict) and draw(st.booleans()):
                results[0]["cache_key"] = key  # and a result that names it
            done.append("cache row")
        elif where == "manifest":
            if draw(st.integers(0, 5)) == 0 or not isinstance(manifest, dict):
                manifest = Raw(draw(DEEP_JSON))
                done.append("manifest: deep")
                continue
            field = draw(st.sampled_from(MANIFEST_FIELDS))
            tables = manifest.get("tables")
            if field == "tables" and isinstance(tables, list) and tables and draw(st.booleans()):
                table_entry = draw(st.sampled_from(tables))
                if isinstance(table_entry, dict):
                    sub = draw(st.sampled_from(TABLE_FIELDS))
                    table_entry[sub] = draw(HOSTILE | st.integers(-5, 10**9))
                    done.append(f"manifest: table {sub}")
            else:
                manifest[field] = draw(HOSTILE)
                done.append(f"manifest: {field}")
        else:
            done.append("zip")
    entries = [(n, raw[n] if n in raw else _lines(r)) for n, r in rows.items()]
    text = manifest.text if isinstance(manifest, Raw) else write_json(manifest, indent=2)
    entries.append((MANIFEST_MEMBER, text.encode("utf-8", "surrogatepass")))
    if draw(st.integers(0, 8)) == 0:
        entries.append(draw(st.sampled_from(entries)))  # a member stored twice
        done.append("zip: member twice")
    data = _zip(entries, stored=draw(st.booleans()))
    if "zip" in done:
        if draw(st.booleans()):
            data = draw(damaged(data))
        else:
            index = draw(st.integers(0, len(entries) - 1))
            data = _lie_about_a_size(data, index, draw(st.booleans()))
    return data, "; ".join(done)


def _lie_about_a_size(data: bytes, index: int, smaller: bool) -> bytes:
    """The zip with one member's uncompressed size in the central directory changed."""
    out = bytearray(data)
    at = -1
    for _ in range(index + 1):
        at = out.find(b"PK\x01\x02", at + 1)
        if at < 0:
            return bytes(out)
    size = int.from_bytes(out[at + 24 : at + 28], "little")
    size = size // 2 if smaller else min(2**32 - 1, size * 1000 + 10**6)
    out[at + 24 : at + 28] = size.to_bytes(4, "little")
    return bytes(out)


_TABLES: dict[int, list[str]] = {}


def row_counts(store: Store) -> dict[str, int]:
    """Every table's row count, in one query (the table names are read once per database)."""
    tables = _TABLES.get(id(store))
    with store.engine.connect() as conn:
        if tables is None:
            names = sa.inspect(conn).get_table_names()
            tables = _TABLES[id(store)] = list(names)
        counts = ", ".join(f'(SELECT count(*) FROM "{t}")' for t in tables)
        row = conn.exec_driver_sql(f"SELECT {counts}").one()
    return dict(zip(tables, (int(n) for n in row), strict=True))


def _cache_keys(store: Store) -> set[str]:
    with store.engine.connect() as conn:
        return {row[0] for row in conn.exec_driver_sql("SELECT key FROM judge_cache")}


def read_back(store: Store, project_id: int) -> int:
    """Read an imported project back through the store, the way the pages and services do: what
    an import accepts must be readable (a row that imports and then breaks every page that reads
    it is the worst outcome). Returns how many things were read."""
    read = 1
    store.get_project(project_id)
    criteria = store.list_criteria(project_id)
    for dataset in store.list_datasets(project_id):
        store.items_frame(dataset.id)
        store.list_improve_jobs(dataset.id)
        for criterion in criteria:
            store.annotation_matrix(dataset.id, criterion.id)
            store.export_annotations(dataset_id=dataset.id, criterion_id=criterion.id)
            read += 2
    for template in store.list_templates(project_id):
        for version in store.list_template_versions(template.id):
            store.get_template_version(version.id)
            read += 1
    for run in store.list_runs(project_id=project_id):
        store.results_frame(run.id)
        store.run_progress(run.id)
        store.run_batches(run.id)
        read += 3
    store.list_endpoints()
    store.get_model_prices()
    return read


@fuzz_settings(ci=40)
@given(data=st.data(), cache=st.booleans(), share=st.booleans())
def test_fuzz_archive_import(
    world: tuple[Store, dict[str, bytes]],
    data: st.DataObject,
    cache: bool,
    share: bool,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    store, base = world
    content, what = data.draw(hostile_archives(base))
    path = tmp_path_factory.getbasetemp() / "case.zip"
    path.write_bytes(content)
    before = row_counts(store)
    keys_before = _cache_keys(store)
    name = f"fuzz {next(_IMPORTS)}"
    summary = typed(
        "archive import",
        lambda: store.import_project(path, name=name, cache=cache, share_cache=share and cache),
    )
    if summary is None:
        assert row_counts(store) == before, what
        note("archive import", "refused, store unchanged")
        return
    assert store.get_project_by_name(name).id == summary.project_id
    typed("archive read-back", lambda: read_back(store, summary.project_id))
    added = _cache_keys(store) - keys_before
    if not share:
        assert all(k.startswith(f"p{summary.project_id}-") for k in added), what
    note("archive import", "imported")


def test_the_base_archive_imports(world: tuple[Store, dict[str, bytes]], tmp_path: Path) -> None:
    # the starting point is a whole archive, so what the cases change is what gets refused
    store, base = world
    path = tmp_path / "base.zip"
    path.write_bytes(_zip(list(base.items())))
    summary = store.import_project(path, name="base")
    assert summary.rows[CACHE_TABLE] == 3
    assert summary.rows["judge_results"] == 3
    assert summary.rows["annotations"] == 3
    assert isinstance(Raw("x"), Raw)
