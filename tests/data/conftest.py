"""Fixtures for the evalcore.data tests: small files written into the test's own folder."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def write_file(tmp_path: Path) -> Callable[[str, str | bytes], Path]:
    """Write text (UTF-8) or bytes to ``tmp_path/name`` and return the path."""

    def write(name: str, content: str | bytes) -> Path:
        path = tmp_path / name
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        return path

    return write


@pytest.fixture
def write_jsonl(tmp_path: Path) -> Callable[[str, Iterable[dict[str, Any]]], Path]:
    """Write records as JSONL, one object per line."""

    def write(name: str, records: Iterable[dict[str, Any]]) -> Path:
        path = tmp_path / name
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        path.write_text(text, encoding="utf-8")
        return path

    return write
