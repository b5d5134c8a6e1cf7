"""The command starts at once: building its parser loads nothing heavy.

These tests look at what gets imported, never at a clock. Each runs in a fresh interpreter, because
the test session itself has pandas, numpy and the rest loaded long before.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "evalcore" / "cli"

#: Packages whose import costs a noticeable share of a second (or pulls in one that does).
HEAVY = (
    "alembic",
    "httpx",
    "httpx2",
    "jinja2",
    "numpy",
    "openai",
    "pandas",
    "plotly",
    "pyarrow",
    "rich",
    "scipy",
    "sklearn",
    "sqlalchemy",
)

#: What the evalcore modules of the CLI may import at module level.
ALLOWED_EVALCORE = {"evalcore", "evalcore.errors", "evalcore.cli"}

_PROBE = """
import json, sys
from evalcore.cli import main
try:
    main(json.loads(sys.argv[1]))
except SystemExit:
    pass
heavy = json.loads(sys.argv[2])
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy)))
"""


def _heavy_modules_after(argv: list[str]) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(argv), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    loaded: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return sorted({name.split(".")[0] for name in loaded})


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["--version"],
        ["calibrate", "--help"],
        ["judge", "--help"],
        ["judge", "run", "--help"],
        ["judge", "estimate", "--help"],
        ["report", "--help"],
    ],
    ids=" ".join,
)
def test_help_imports_nothing_heavy(argv: list[str]) -> None:
    assert _heavy_modules_after(argv) == [], (
        f"`evalcore {' '.join(argv)}` imported heavy packages; move the import into the handler"
    )


def test_the_probe_sees_a_heavy_import() -> None:
    # the probe itself must be able to fail: a command that runs does load pandas
    assert "pandas" in _heavy_modules_after(["calibrate", str(ROOT / "no-such-file.csv")])


def test_importing_evalcore_is_light() -> None:
    code = (
        "import json, sys, evalcore, evalcore.errors, evalcore.labels\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert json.loads(out.stdout) == []


def _module_level_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """Imports that run when the module is imported (not inside a function or ``TYPE_CHECKING``)."""
    found: list[tuple[int, str]] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                found.extend((node.lineno, alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                module = "." * node.level + (node.module or "")
                found.append((node.lineno, module))
            elif isinstance(node, ast.If):
                test = ast.unparse(node.test)
                if test not in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, (ast.Try, ast.With)):
                visit(node.body)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(tree.body)
    return found


def _allowed(module: str) -> bool:
    if module == "__future__" or module.split(".")[0] in sys.stdlib_module_names:
        return True
    if module.startswith("."):  # relative: evalcore.cli's own modules only
        return module.count(".") == 1
    return module in ALLOWED_EVALCORE or module.startswith("evalcore.cli.")


def test_cli_modules_import_only_the_standard_library_at_module_level() -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sorted(CLI.rglob("*.py"))
        for line, module in _module_level_imports(ast.parse(path.read_text(encoding="utf-8")))
        if not _allowed(module)
    ]
    assert bad == [], "import these inside the handler that uses them:\n" + "\n".join(bad)


def test_the_static_check_can_fail() -> None:
    tree = ast.parse(
        "import os\nimport pandas as pd\nfrom typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import numpy\n"
        "def run():\n    import scipy\n"
    )
    assert [m for _, m in _module_level_imports(tree) if not _allowed(m)] == ["pandas"]


def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    data = tmp_path / "v.csv"
    data.write_text("quality/human_rating,quality/score\n1,1\n2,2\n1,2\n", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalcore", "calibrate", str(data), "--json", "--n-boot", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the command writes (as `| head -c 0`)
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in stderr, stderr
    assert "Exception ignored" not in stderr, stderr


def test_judge_run_reads_a_plain_jsonl_file_without_pandas(tmp_path) -> None:
    """The items of a plain JSONL file are read with the standard library, and are the same items
    the general (pandas) path gives."""
    rows = [
        {"item_id": f"item-{i}", "prompt": f"Q{i}?", "response": "A." * i, "gold": i % 5}
        for i in range(20)
    ]
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from evalcore.cli.judge import _read_items\n"
        f"items = _read_items(Path({str(path)!r}), None)\n"
        "print('pandas' in sys.modules, len(items))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "20"]
    from evalcore.cli.judge import _read_items
    from evalcore.data import items_from_frame, read_table
    from evalcore.judge import JudgeItem, plain_fields

    fast = _read_items(path, None)
    frame = read_table(path)
    general = []
    for raw, row in zip(
        frame.to_dict("records"), items_from_frame(frame).to_dict("records"), strict=True
    ):
        fields = plain_fields(raw)
        for key, value in plain_fields(row).items():
            if key != "item_id":
                fields.setdefault(key, value)
        general.append(JudgeItem(str(row["item_id"]), fields))
    assert fast == general
    assert _read_items(path, 3) == fast[:3]


def test_a_jsonl_file_with_a_layout_takes_the_general_path(tmp_path) -> None:
    from evalcore.data import read_plain_jsonl

    azure = tmp_path / "azure.jsonl"
    azure.write_text('{"question": "2+2?", "answer": "4"}\n', encoding="utf-8")
    assert read_plain_jsonl(azure) is None  # Azure's names are mapped by the general path
    nested = tmp_path / "nested.jsonl"
    nested.write_text('{"item_id": "a", "messages": [{"role": "user"}]}\n', encoding="utf-8")
    assert read_plain_jsonl(nested) is None
    ragged = tmp_path / "ragged.jsonl"
    ragged.write_text('{"item_id": "a", "prompt": "x"}\n{"item_id": "b"}\n', encoding="utf-8")
    assert read_plain_jsonl(ragged) is None
