"""Lint, format and types are part of the suite, so `make test` checks what CI checks."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _ruff() -> list[str]:
    exe = Path(sys.executable).with_name("ruff")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("ruff")
    if found is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    return [found]


def test_ruff_check() -> None:
    out = subprocess.run([*_ruff(), "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_ruff_format() -> None:
    out = subprocess.run(
        [*_ruff(), "format", "--check", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_strict_on_the_library() -> None:
    """The library ships ``py.typed``; its annotations are checked (config in pyproject.toml)."""
    exe = Path(sys.executable).with_name("mypy")
    if not exe.exists():
        pytest.skip("mypy is not installed (pip install -e '.[test]')")
    out = subprocess.run([str(exe)], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
