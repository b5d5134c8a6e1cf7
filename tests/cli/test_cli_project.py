"""``evalcore project export/import`` through a real subprocess, between real databases.

The PostgreSQL leg runs when ``EVALCORE_TEST_POSTGRES_URL`` names a server (``.ci/run`` starts one).
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalcore.demo.seed import seed_demo
from evalcore.store import Store
from tests.store.conftest import _create_pg_database, _drop_pg_database, _pg_url

ROOT = Path(__file__).resolve().parents[2]
_MAIN = "import sys; from evalcore.cli import main; sys.exit(main(sys.argv[1:]))"
DEMO = "Northwind support demo"


def _evalcore(*args: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "EVALCORE_DATABASE_URL"}
    return subprocess.run(
        [sys.executable, "-c", _MAIN, "project", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env=environment,
        timeout=300,
    )


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('cli') / 'source.sqlite'}"
    store = Store.open(url)
    seed_demo(store)
    store.close()
    return url


def _counts(url: str, project: str) -> tuple[int, int, int]:
    store = Store.open(url)
    try:
        found = store.get_project_by_name(project)
        datasets = store.list_datasets(found.id)
        items = sum(store.count_items(d.id) for d in datasets)
        runs = len(store.list_runs(project_id=found.id))
        return len(datasets), items, runs
    finally:
        store.close()


def test_export_then_import_into_a_new_sqlite_file(source: str, tmp_path: Path) -> None:
    archive = tmp_path / "demo.zip"
    done = _evalcore("export", DEMO, "--out", str(archive), "--database-url", source)
    assert done.returncode == 0, done.stderr
    assert f"wrote {archive}" in done.stderr
    assert "items 423" in done.stderr
    with zipfile.ZipFile(archive) as zf:
        assert "manifest.json" in zf.namelist()
        assert "judge_cache.jsonl" in zf.namelist()

    target = f"sqlite:///{tmp_path / 'new' / 'target.sqlite'}"
    (tmp_path / "new").mkdir()
    done = _evalcore("import", str(archive), "--database-url", target)
    assert done.returncode == 0, done.stderr
    assert f"imported {archive}: project {DEMO!r}" in done.stderr
    assert _counts(target, DEMO) == _counts(source, DEMO)

    again = _evalcore("import", str(archive), "--database-url", target)
    assert again.returncode == 2
    assert "already exists" in again.stderr
    assert "--as NEW_NAME" in again.stderr
    assert "Traceback" not in again.stderr
    copy = _evalcore("import", str(archive), "--as", "demo copy", "--database-url", target)
    assert copy.returncode == 0, copy.stderr
    assert _counts(target, "demo copy") == _counts(source, DEMO)

    store = Store.open(target)
    try:
        log = store.audit_log(action="project_imported")
    finally:
        store.close()
    assert set(log["target"]) == {DEMO, "demo copy"}
    assert all(actor.startswith("cli:") for actor in log["actor"])


def test_no_cache_leaves_the_reply_cache_out(source: str, tmp_path: Path) -> None:
    archive = tmp_path / "demo.zip"
    done = _evalcore("export", DEMO, "--out", str(archive), "--no-cache", "--database-url", source)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(archive) as zf:
        assert "judge_cache.jsonl" not in zf.namelist()


@pytest.fixture
def pg_url(postgres_url: str) -> Iterator[str]:
    name = _create_pg_database(postgres_url)
    try:
        yield _pg_url(postgres_url, name)
    finally:
        _drop_pg_database(postgres_url, name)


def test_move_to_postgresql_and_back(source: str, pg_url: str, tmp_path: Path) -> None:
    archive = tmp_path / "demo.zip"
    assert (
        _evalcore("export", DEMO, "--out", str(archive), "--database-url", source).returncode == 0
    )
    done = _evalcore("import", str(archive), "--database-url", pg_url)
    assert done.returncode == 0, done.stderr
    back = tmp_path / "back.zip"
    done = _evalcore("export", DEMO, "--out", str(back), "--database-url", pg_url)
    assert done.returncode == 0, done.stderr
    target = f"sqlite:///{tmp_path / 'back.sqlite'}"
    done = _evalcore("import", str(back), "--database-url", target)
    assert done.returncode == 0, done.stderr
    assert _counts(target, DEMO) == _counts(pg_url, DEMO) == _counts(source, DEMO)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["export", "no such project", "--out", "{tmp}/x.zip"], "There is no project named"),
        (["export", DEMO, "--out", "{tmp}/missing/x.zip"], "does not exist"),
        (["export", DEMO, "--out", "{tmp}"], "is a folder"),
        (["import", "{tmp}/nothing.zip"], "There is no archive"),
        (["import", "{tmp}/junk.zip"], "not a zip file"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    source: str, tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "junk.zip").write_text("not a zip")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    done = _evalcore(*argv, "--database-url", source)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_help_says_what_is_left_out() -> None:
    done = _evalcore("export", "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "Users, memberships and the audit log are not included" in text


def test_share_cache_is_a_choice_apart_from_no_cache(source: str, tmp_path: Path) -> None:
    archive = tmp_path / "demo.zip"
    assert (
        _evalcore("export", DEMO, "--out", str(archive), "--database-url", source).returncode == 0
    )
    target = f"sqlite:///{tmp_path / 'target.sqlite'}"
    both = _evalcore(
        "import", str(archive), "--no-cache", "--share-cache", "--database-url", target
    )
    assert both.returncode == 2
    assert "not allowed with argument" in both.stderr
    shared = _evalcore("import", str(archive), "--share-cache", "--database-url", target)
    assert shared.returncode == 0, shared.stderr
    assert _counts(target, DEMO) == _counts(source, DEMO)
    done = _evalcore("import", "--help")
    assert "--share-cache" in done.stdout
