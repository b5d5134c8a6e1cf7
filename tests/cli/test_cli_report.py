"""`evalcore report PROJECT --criterion C --out report.html`: the file, and exit status 2 on bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcore.cli import main
from evalcore.store import Store
from tests.report.conftest import build_tiny


@pytest.fixture
def database(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'cli.sqlite'}"
    store = Store.open(url)
    build_tiny(store)
    store.close()
    return url


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = main(["report", *args])
    return status, capsys.readouterr().err


def test_writes_the_html_report(database: str, tmp_path: Path, capsys) -> None:
    out = tmp_path / "report.html"
    status, err = _run(
        capsys,
        "tiny project",
        "--criterion",
        "fluency",
        "--out",
        str(out),
        "--database-url",
        database,
        "--n-boot",
        "50",
    )
    assert status == 0, err
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert "fluency" in html
    assert "Plotly.newPlot(" in html
    assert f"wrote {out}" in err


def test_options_choose_runs_policy_baseline_and_slices(
    database: str, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "r.html"
    status, err = _run(
        capsys,
        "tiny project",
        "--out",
        str(out),
        "--database-url",
        database,
        "--dataset",
        "tiny",
        "--policy",
        "median",
        "--runs",
        "v1",
        "v2",
        "--baseline",
        "v2",
        "--slice-by",
        "topic",
        "--n-boot",
        "0",
    )
    assert status == 0, err
    html = out.read_text(encoding="utf-8")
    assert "human label: median" in html
    assert "baseline: v2" in html
    assert "By topic" in html


def test_the_database_url_comes_from_the_environment(
    database: str, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALCORE_DATABASE_URL", database)
    out = tmp_path / "env.html"
    status, err = _run(capsys, "tiny project", "--out", str(out), "--n-boot", "0")
    assert status == 0, err
    assert out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "there is no project named 'nope'"),
        (["tiny project", "--criterion", "colour"], "has no criterion 'colour'"),
        (["tiny project", "--policy", "loudest"], "unknown human policy 'loudest'"),
        (["tiny project", "--policy", "annotator:zoe"], "no annotator named 'zoe'"),
        (["tiny project", "--runs", "v7"], "no run 'v7'"),
        (["tiny project", "--dataset", "other"], "has no dataset 'other'"),
        (["tiny project", "--slice-by", "colour"], "metadata column 'colour'"),
        (["tiny project", "--n-boot", "-1"], "--n-boot must be 0 or more"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    database: str, tmp_path: Path, capsys, args: list[str], message: str
) -> None:
    out = tmp_path / "bad.html"
    status, err = _run(capsys, *args, "--out", str(out), "--database-url", database)
    assert status == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err
    assert not out.exists()


def test_bad_places_exit_2(database: str, tmp_path: Path, capsys) -> None:
    status, err = _run(
        capsys, "tiny project", "--out", str(tmp_path / "no" / "r.html"), "--database-url", database
    )
    assert status == 2
    assert "does not exist" in err
    status, err = _run(capsys, "tiny project", "--out", str(tmp_path), "--database-url", database)
    assert status == 2
    assert "is a folder" in err
    missing = tmp_path / "missing.sqlite"
    status, err = _run(
        capsys, "x", "--out", str(tmp_path / "r.html"), "--database-url", f"sqlite:///{missing}"
    )
    assert status == 2
    assert "there is no database at" in err
    assert not missing.exists()  # a typo never creates an empty database
    status, err = _run(capsys, "x", "--out", str(tmp_path / "r.html"), "--database-url", "nonsense")
    assert status == 2
    assert "not a database URL" in err


def test_out_is_required(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["report", "tiny project"])
    assert exit_info.value.code == 2
    assert "--out" in capsys.readouterr().err


def test_the_parser_spells_the_stores_database_variable() -> None:
    from evalcore.cli import _database
    from evalcore.store import DATABASE_URL_ENV

    assert _database.DATABASE_URL_ENV == DATABASE_URL_ENV
