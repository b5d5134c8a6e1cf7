"""Hostile project archives (issue 19): each case reproduced, each ending in a clear error or in
nothing but the archive's own project being added.

- an archive whose rows decode to a thousand times its size, or to more rows than the limit, is
  refused from its headers and manifest before any row is read; rows beyond what the manifest
  lists are refused at the first one, not after the whole member was inserted;
- deep nesting in a row or in the manifest is a ``DataError`` naming the member and the line;
- token counts and whole numbers out of reason are refused naming the line;
- reply-cache rows are imported only when a result of the archive refers to them, and then under
  the imported project's own keys, so a forged reply under a predictable key answers no other
  project's request: a real run through :class:`FakeOpenAI` checks which reply a project gets.
"""

from __future__ import annotations

import json
import re
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from evalcore.errors import DataError
from evalcore.judge import JudgeItem, JudgeRunner, JudgeTemplate, MemorySink, RunSettings
from evalcore.labels import LIKERT_5
from evalcore.limits import MAX_JSON_DEPTH, MAX_TOKEN_COUNT
from evalcore.runs import StoreCache
from evalcore.store import Store
from evalcore.store._archive import (
    CACHE_TABLE,
    MANIFEST_MEMBER,
    MAX_ARCHIVE_RATIO,
    MAX_ARCHIVE_ROWS_ENV,
    archived_cache_key,
)
from evalcore.testing import FakeOpenAI
from tests.store.test_store_archive import _rewrite, build_full_project, row_counts


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    """For the refusals, which happen while rows are read and checked, before the database has a
    say: one backend is enough (the cache tests run on both)."""
    opened = Store.open(f"sqlite:///{tmp_path / 'target.sqlite'}")
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    store = Store.open(f"sqlite:///{folder / 'source.sqlite'}")
    project = build_full_project(store)
    path = folder / "full.zip"
    store.export_project(project.id, path)
    store.close()
    return path


def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def _rows(path: Path, member: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _members(path)[f"{member}.jsonl"].splitlines()]


def _with_rows(path: Path, target: Path, member: str, rows: list[dict[str, Any]]) -> Path:
    """``path`` with ``member``'s rows replaced, and the manifest's row count to match."""
    manifest = json.loads(_members(path)[MANIFEST_MEMBER])
    for table in manifest["tables"]:
        if table["name"] == member:
            table["rows"] = len(rows)
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    return _rewrite(
        path,
        target,
        {f"{member}.jsonl": data, MANIFEST_MEMBER: json.dumps(manifest).encode()},
    )


def _refused(store: Store, path: Path, message: str, **kwargs: Any) -> DataError:
    before = row_counts(store)
    with pytest.raises(DataError, match=message) as caught:
        store.import_project(path, **kwargs)
    assert row_counts(store) == before
    return caught.value


# --- size and rows ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bomb(archive: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The issue's case at a tenth of the scale: 2.4 million annotation rows (240 MB) that
    deflate to a few hundred kB; the manifest lists them honestly, the headers give the sizes."""
    tmp_path = tmp_path_factory.mktemp("bomb")
    row = _rows(archive, "annotations")[0]
    line = (json.dumps(row) + "\n").encode()
    count = 240_000_000 // len(line)
    manifest = json.loads(_members(archive)[MANIFEST_MEMBER])
    for table in manifest["tables"]:
        if table["name"] == "annotations":
            table["rows"] = count
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive) as zin, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            if info.filename == "annotations.jsonl":
                with zout.open(info.filename, "w", force_zip64=True) as member:
                    chunk = line * 10_000
                    for _ in range(count // 10_000):
                        member.write(chunk)
                    member.write(line * (count % 10_000))
            elif info.filename == MANIFEST_MEMBER:
                zout.writestr(MANIFEST_MEMBER, json.dumps(manifest))
            else:
                zout.writestr(info.filename, zin.read(info.filename))
    return bomb, count


def test_a_small_archive_of_huge_rows_is_refused_from_its_headers(
    sqlite_store: Store, bomb: tuple[Path, int]
) -> None:
    path, count = bomb
    size = path.stat().st_size
    assert size < 2_000_000  # a file of under 2 MB that decodes to over 240 MB
    started = time.perf_counter()
    error = _refused(sqlite_store, path, rf"more than {MAX_ARCHIVE_RATIO} times the file's")
    assert "members: they decode to 2" in str(error)
    print(
        f"\n{size / 1e6:.2f} MB archive of {count:,} rows refused in "
        f"{time.perf_counter() - started:.3f} s"
    )


def test_rows_beyond_the_manifests_count_are_refused_at_the_first(
    sqlite_store: Store, archive: Path, tmp_path: Path
) -> None:
    rows = _rows(archive, "annotations")
    listed = len(rows)
    extra = _rewrite(
        archive,
        tmp_path / "extra.zip",
        {"annotations.jsonl": "".join(json.dumps(r) + "\n" for r in rows * 2).encode()},
    )
    _refused(
        sqlite_store,
        extra,
        re.escape(
            f"annotations.jsonl, line {listed + 1}: more rows than the manifest's {listed:,}"
        ),
    )


def test_the_row_limit_is_read_from_the_manifest_and_configurable(
    sqlite_store: Store, archive: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MAX_ARCHIVE_ROWS_ENV, "100")
    items = len(_rows(archive, "items"))
    _refused(
        sqlite_store, archive, re.escape(f"'items' has {items:,} rows, more than the limit of 100")
    )
    monkeypatch.setenv(MAX_ARCHIVE_ROWS_ENV, "many")
    from evalcore.errors import ConfigError

    with pytest.raises(ConfigError, match=MAX_ARCHIVE_ROWS_ENV):
        sqlite_store.import_project(archive)


# --- nesting, numbers, token counts -------------------------------------------------------------


def _set(member: str, line: int, column: str, value: Any) -> Callable[[Path, Path], Path]:
    def change(path: Path, target: Path) -> Path:
        rows = _rows(path, member)
        rows[line - 1][column] = value
        return _with_rows(path, target, member, rows)

    return change


def _raw(member: str, line: int, column: str, text: str) -> Callable[[Path, Path], Path]:
    """Put raw JSON text (that json.dumps would not write) as the value of ``column``."""

    def change(path: Path, target: Path) -> Path:
        rows = _rows(path, member)
        rows[line - 1][column] = "@@RAW@@"
        data = "".join(json.dumps(r) + "\n" for r in rows).replace('"@@RAW@@"', text)
        return _rewrite(path, target, {f"{member}.jsonl": data.encode()})

    return change


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(
            _raw("items", 2, "metadata", "[" * 100_000),
            "items.jsonl, line 2: nested deeper than 64 levels",
            id="100k-brackets",
        ),
        pytest.param(
            _raw("items", 3, "metadata", '{"a": ' * 50_000),
            "items.jsonl, line 3: nested deeper than 64 levels",
            id="50k-objects",
        ),
        pytest.param(
            _set("items", 1, "metadata", json.loads("[" * (MAX_JSON_DEPTH + 1) + "]" * 65)),
            "items.jsonl, line 1: nested deeper than 64 levels",
            id="one-over",
        ),
        pytest.param(
            _set("judge_results", 2, "tokens_in", -5),
            "judge_results.jsonl, line 2: tokens_in should be a token count, a whole number "
            f"from 0 to {MAX_TOKEN_COUNT:,}, not -5",
            id="negative-tokens",
        ),
        pytest.param(
            _set("judge_results", 1, "tokens_out", 1e308),
            "judge_results.jsonl, line 1: tokens_out should be a token count",
            id="1e308-tokens",
        ),
        pytest.param(
            _raw("judge_results", 1, "tokens_out", "Infinity"),
            "judge_results.jsonl, line 1: not valid JSON (Infinity is not a JSON value)",
            id="Infinity-tokens",
        ),
        pytest.param(
            _set("items", 2, "position", 2**70),
            "items.jsonl, line 2: position should be a whole number of at most 64 bits",
            id="70-bit-integer",
        ),
        pytest.param(
            _set("judge_results", 1, "cost", 10**400),
            "judge_results.jsonl, line 1: cost is too large a number",
            id="huge-float",
        ),
        pytest.param(
            _set(CACHE_TABLE, 1, "response", {"choices": [], "tokens_in": -1}),
            f"{CACHE_TABLE}.jsonl, line 1: response.tokens_in should be a whole number",
            id="cached-reply-tokens",
        ),
    ],
)
def test_hostile_values_are_named_by_member_and_line(
    sqlite_store: Store,
    archive: Path,
    tmp_path: Path,
    change: Callable[[Path, Path], Path],
    message: str,
) -> None:
    _refused(sqlite_store, change(archive, tmp_path / "bad.zip"), re.escape(message))


def test_a_deeply_nested_manifest_is_refused(
    sqlite_store: Store, archive: Path, tmp_path: Path
) -> None:
    manifest = json.loads(_members(archive)[MANIFEST_MEMBER])
    text = json.dumps(manifest, indent=1).replace(
        '"created_at"', '"x": ' + "[" * 10_000 + '1, "created_at"', 1
    )
    bad = _rewrite(archive, tmp_path / "m.zip", {MANIFEST_MEMBER: text.encode()})
    _refused(sqlite_store, bad, r"manifest\.json, line \d+: nested deeper than 64 levels")


# --- the reply cache ----------------------------------------------------------------------------

TEMPLATE = JudgeTemplate(
    "fluency", "fluency", LIKERT_5, "", "Rate this answer 1-5.\n{{ response }}\nexpect=2"
)


def _victim_request(fake: FakeOpenAI) -> tuple[JudgeRunner, JudgeItem, str]:
    """A run another project of the server will make, and its (predictable) cache key."""
    runner = JudgeRunner(
        lambda: openai.AsyncOpenAI(base_url=fake.base_url, api_key="k", max_retries=0),
        TEMPLATE,
        model="fake-judge",
        settings=RunSettings(backoff_base=0.01),
    )
    item = JudgeItem("q1", {"response": "Paris is the capital of France."})
    (request,) = list(runner.batch_requests([item]))
    return runner, item, request.custom_id


def _forged(archive: Path, tmp_path: Path, key: str, *, with_result: bool) -> Path:
    """The archive with a cached reply saying "Score: 5" under ``key``; ``with_result``: and a
    result of the archive's own run that refers to it."""
    forged = {"choices": [{"text": "Score: 5", "finish_reason": "stop"}], "tokens_in": 1}
    cache = _rows(archive, CACHE_TABLE)
    cache.append({**cache[0], "key": key, "response": forged})
    path = _with_rows(archive, tmp_path / "cache.zip", CACHE_TABLE, cache)
    if with_result:
        results = _rows(archive, "judge_results")
        next(r for r in results if not r["cache_key"])["cache_key"] = key
        path = _with_rows(path, tmp_path / "forged.zip", "judge_results", results)
    return path


def _judge(store: Store, runner: JudgeRunner, item: JudgeItem) -> str:
    sink = MemorySink()
    runner.run_sync([item], sink, StoreCache(store))
    (result,) = sink.results.values()
    return str(result.label)


def test_a_cached_reply_no_result_refers_to_is_left_out(
    store: Store, archive: Path, tmp_path: Path
) -> None:
    with FakeOpenAI() as fake:
        runner, item, key = _victim_request(fake)
        summary = store.import_project(
            _forged(archive, tmp_path, key, with_result=False), share_cache=True
        )
        assert summary.skipped == {CACHE_TABLE: 1}
        assert "left out, no result refers to them: judge_cache 1" in summary.describe()
        assert store.cache_get(key) is None
        assert _judge(store, runner, item) == "2.0"  # the endpoint's answer
        assert fake.count == 1


def test_a_forged_reply_answers_no_other_projects_request(
    store: Store, archive: Path, tmp_path: Path
) -> None:
    with FakeOpenAI() as fake:
        runner, item, key = _victim_request(fake)
        summary = store.import_project(_forged(archive, tmp_path, key, with_result=True))
        assert summary.skipped == {}
        assert summary.rows[CACHE_TABLE] == 5  # the 4 honest replies and the forged one
        # kept with its result, under the imported project's key
        scoped = archived_cache_key(summary.project_id, key)
        assert store.cache_get(scoped) is not None
        assert store.cache_get(key) is None
        assert _judge(store, runner, item) == "2.0"  # the endpoint's answer, not "5"
        assert fake.count == 1


def test_sharing_the_cache_is_trusting_the_archive(
    store: Store, archive: Path, tmp_path: Path
) -> None:
    # what share_cache=True means, shown with the same forged archive: the reply is used
    with FakeOpenAI() as fake:
        runner, item, key = _victim_request(fake)
        store.import_project(_forged(archive, tmp_path, key, with_result=True), share_cache=True)
        assert _judge(store, runner, item) == "5.0"
        assert fake.count == 0


def test_imported_results_keep_their_cached_replies_through_another_export(
    store: Store, archive: Path, tmp_path: Path
) -> None:
    first = store.import_project(archive)
    again = tmp_path / "again.zip"
    exported = store.export_project(first.project_id, again)
    assert exported.rows[CACHE_TABLE] == 4
    results = [r["cache_key"] for r in _rows(again, "judge_results") if r["cache_key"]]
    assert {r["key"] for r in _rows(again, CACHE_TABLE)} == set(results)
    assert all(k.startswith(f"p{first.project_id}-") for k in results)
