"""``evalcore db upgrade`` / ``db revision`` through a real subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from evalcore.store import Store, head_revision


def _evalcore(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalcore", *args], capture_output=True, text=True, timeout=120
    )


def test_upgrade_creates_and_migrates_a_new_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'team.sqlite'}"
    done = _evalcore("db", "upgrade", "--database-url", url)
    assert done.returncode == 0, done.stderr
    assert f"revision {head_revision()}" in done.stdout
    store = Store.open(url, migrate=False)
    assert store.is_up_to_date()
    store.close()
    shown = _evalcore("db", "revision", "--database-url", url)
    assert shown.returncode == 0
    assert "up to date" in shown.stdout


def test_revision_says_when_the_schema_is_behind_and_does_not_upgrade(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    old = Store(url)
    old.migrate("0001")
    old.close()
    shown = _evalcore("db", "revision", "--database-url", url)
    assert shown.returncode == 0
    assert "revision 0001" in shown.stdout
    assert f"the newest is {head_revision()}" in shown.stdout
    store = Store.open(url, migrate=False)
    assert store.schema_revision() == "0001"
    store.close()


def test_a_missing_file_and_a_bad_url_are_one_line_errors(tmp_path: Path) -> None:
    missing = _evalcore("db", "revision", "--database-url", f"sqlite:///{tmp_path / 'no.sqlite'}")
    assert missing.returncode == 2
    assert "there is no database" in missing.stderr
    bad = _evalcore("db", "upgrade", "--database-url", "not a url")
    assert bad.returncode == 2
    assert "is not a database URL" in bad.stderr
    assert "Traceback" not in missing.stderr + bad.stderr


def test_a_misspelled_options_value_is_not_echoed() -> None:
    # argparse would print "unrecognized arguments: --password-e hunter2-secret"
    done = _evalcore("db", "upgrade", "--password-e", "hunter2-secret", "--other=x")
    assert done.returncode == 2
    assert "hunter2-secret" not in done.stderr
    assert "=x" not in done.stderr
    assert "--password-e" in done.stderr
    assert "--other" in done.stderr
