"""ARCHITECTURE.md stays true: every path it names exists, every ``evalcore.…`` name it gives can
be found, and its table of import rules is the one tests/test_architecture.py enforces."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from tests.test_architecture import LAYER_MAY_IMPORT

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "ARCHITECTURE.md"
#: A path in backticks: has a slash or a file suffix, no spaces; ``*`` is a glob.
PATH = re.compile(r"^[\w.*/-]+(/|\.(py|md|toml|txt))$|^[\w.*-]+/[\w.*/-]*$")
DOTTED = re.compile(r"^evalcore(\.\w+)+$")


def _spans(text: str) -> list[str]:
    """The backticked spans of ``text``, outside fenced code blocks."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.findall(r"`([^`\n]+)`", prose)


def _missing_paths(text: str, root: Path) -> list[str]:
    missing = []
    for span in _spans(text):
        if not PATH.match(span):
            continue
        if not (any(root.glob(span)) if "*" in span else (root / span).exists()):
            missing.append(span)
    return missing


def _unknown_names(text: str) -> list[str]:
    """``evalcore.a.b`` names that are neither a module nor an attribute of one; ``evalcore.X._name``
    as a pattern is left alone."""
    unknown = []
    for span in _spans(text):
        if not DOTTED.match(span) or span.endswith("._name"):
            continue
        parts = span.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                found: object = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for attribute in parts[cut:]:
                    found = getattr(found, attribute)
            except AttributeError:
                unknown.append(span)
            break
        else:
            unknown.append(span)
    return unknown


def _layer_table(text: str) -> dict[str, tuple[str, ...]]:
    """The "layer | may import" table: each layer and the names in backticks beside it."""
    lines = text.splitlines()
    start = next(
        i for i, line in enumerate(lines) if re.match(r"^\|\s*layer\s*\|\s*may import", line)
    )
    table: dict[str, tuple[str, ...]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        layer, allowed = (cell.strip() for cell in line.strip("|").split("|"))
        table[layer.strip("`")] = tuple(re.findall(r"`(\w+)`", allowed))
    return table


def test_every_path_the_document_names_exists() -> None:
    assert _missing_paths(DOC.read_text(encoding="utf-8"), ROOT) == []


def test_every_evalcore_name_the_document_gives_can_be_found() -> None:
    assert _unknown_names(DOC.read_text(encoding="utf-8")) == []


def test_the_layer_table_is_the_one_the_architecture_test_enforces() -> None:
    table = _layer_table(DOC.read_text(encoding="utf-8"))
    assert {k: set(v) for k, v in table.items()} == {k: set(v) for k, v in LAYER_MAY_IMPORT.items()}


def test_the_checks_can_fail(tmp_path: Path) -> None:
    (tmp_path / "ui").mkdir()
    (tmp_path / "ui" / "here.py").write_text("", encoding="utf-8")
    text = (
        "`ui/here.py`, `ui/*.py`, `ui/gone.py`, `pages/`, `evalcore serve`\n"
        "`evalcore.workflows.caller`, `evalcore.workflows.nothing`, `evalcore.nowhere`\n"
        "```\n`inside/a/fence.py`\n```\n"
        "| layer | may import |\n|---|---|\n| `data` | `errors`, `labels` |\n\nafter\n"
    )
    assert _missing_paths(text, tmp_path) == ["ui/gone.py", "pages/"]
    assert _unknown_names(text) == ["evalcore.workflows.nothing", "evalcore.nowhere"]
    assert _layer_table(text) == {"data": ("errors", "labels")}
