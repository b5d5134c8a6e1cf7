"""The command line's Alt-Test scoring is one of the scorings evalcore.metrics declares."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcore.cli import main
from evalcore.metrics import ALT_TEST_SCORING_DEFS
from tests.cli.test_cli_calibrate import _alt_file


def _argv(path: Path) -> list[str]:
    argv = ["calibrate", str(path), "--id", "id", "--scale", "pass,fail", "--judge", "judge"]
    for name in ("ann", "bob", "cy", "dee"):
        argv += ["--human", name]
    return [*argv, "--alt-test", "--json", "--n-boot", "0"]


@pytest.mark.parametrize("scoring", [s.name for s in ALT_TEST_SCORING_DEFS])
def test_every_declared_scoring_is_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scoring: str
) -> None:
    path = _alt_file(tmp_path)
    found = main([*_argv(path), "--alt-test-scoring", scoring])
    out = capsys.readouterr()
    assert found == 0, out.err  # words sit at their positions on the scale for neg_rmse
    record = json.loads(out.out.strip().splitlines()[-1])
    assert record["alt_test"]["scoring"] == scoring


def test_an_unknown_scoring_is_refused_with_the_declared_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _alt_file(tmp_path)
    assert main([*_argv(path), "--alt-test-scoring", "kappa"]) == 2
    err = capsys.readouterr().err
    assert "unknown Alt-Test scoring 'kappa'" in err
    for scoring in ALT_TEST_SCORING_DEFS:
        assert f"{scoring.name} ({scoring.title})" in err
    assert "Traceback" not in err


def test_without_a_scoring_the_scales_declared_default_is_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _alt_file(tmp_path)
    assert main(_argv(path)) == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    (binary_default,) = [s.name for s in ALT_TEST_SCORING_DEFS if "binary" in s.default_for]
    assert record["alt_test"]["scoring"] == binary_default
