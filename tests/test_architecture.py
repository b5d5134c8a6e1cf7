"""The layering rules of ARCHITECTURE.md, checked."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "evalcore"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.add("." * node.level + (node.module or ""))
    return found


def test_library_never_imports_streamlit() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in LIBRARY.rglob("*.py")
        if any(name == "streamlit" or name.startswith("streamlit.") for name in _imports(path))
    ]
    assert offenders == []


def test_importing_the_whole_library_does_not_load_streamlit() -> None:
    code = (
        "import importlib, pkgutil, sys, evalcore\n"
        "for m in pkgutil.walk_packages(evalcore.__path__, 'evalcore.'):\n"
        "    if '.migrations' in m.name or m.name.endswith('__main__'): continue\n"
        "    importlib.import_module(m.name)\n"
        "print('streamlit' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("package", ["data", "metrics"])
def test_data_and_metrics_depend_on_no_other_evalcore_layer(package: str) -> None:
    allowed = {"evalcore.errors", "evalcore.labels", "evalcore.limits", f"evalcore.{package}"}
    bad: list[str] = []
    for path in (LIBRARY / package).rglob("*.py"):
        for name in _imports(path):
            if name.startswith("evalcore") and not any(
                name == a or name.startswith(a + ".") for a in allowed
            ):
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
            if name.startswith("..") and not name.startswith("..."):
                target = "evalcore." + name[2:]
                if name != ".." and not any(target.startswith(a) for a in allowed):
                    bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert bad == []


def test_leaf_modules_import_nothing_of_evalcore() -> None:
    """``errors``, ``labels`` and ``limits`` sit under every layer: they import no evalcore module
    (``labels`` only the errors)."""
    bad = [
        f"{name} imports {imported}"
        for name, allowed in (("errors", ()), ("limits", ()), ("labels", ("evalcore.errors",)))
        for imported in _imports(LIBRARY / f"{name}.py")
        if (imported.startswith("evalcore") or imported.startswith(".")) and imported not in allowed
    ]
    assert bad == []


def test_library_ships_py_typed() -> None:
    assert (LIBRARY / "py.typed").exists()


def test_no_layer_imports_another_layers_private_modules() -> None:
    """``evalcore.X._private`` is imported only inside ``evalcore.X``; other layers use its public API."""
    bad: list[str] = []
    for path in LIBRARY.rglob("*.py"):
        package = path.relative_to(LIBRARY).parts[0]
        for name in _imports(path):
            parts = name.split(".")
            private = len(parts) >= 3 and parts[0] == "evalcore" and parts[2].startswith("_")
            if private and parts[1] != package:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert bad == []


def test_no_package_of_the_library_loads_scipy_on_import() -> None:
    """scipy.stats costs half a second of every command's start; the few functions that need it
    (Kendall's tau past the table size, McNemar's binomial, the alt-test's t-test) import it
    themselves."""
    code = (
        "import importlib, pkgutil, sys, evalcore\n"
        "for m in pkgutil.iter_modules(evalcore.__path__, 'evalcore.'):\n"
        "    if m.name.endswith('__main__'): continue\n"
        "    importlib.import_module(m.name)\n"
        "print(sorted({n.split('.')[0] for n in sys.modules} & {'scipy', 'sklearn'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_improve_uses_only_the_layers_below_it() -> None:
    """``evalcore.improve`` builds on judge, metrics, labels, errors and the store (for saving);
    nothing below it imports it back."""
    allowed = {
        "evalcore.errors",
        "evalcore.labels",
        "evalcore.words",
        "evalcore.judge",
        "evalcore.metrics",
        "evalcore.store",
        "evalcore.improve",
    }
    bad = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in (LIBRARY / "improve").rglob("*.py")
        for name in _imports(path)
        if name.startswith("evalcore")
        and not any(name == a or name.startswith(a + ".") for a in allowed)
    ]
    for package in ("errors.py", "labels.py", "judge", "metrics", "store", "data"):
        target = LIBRARY / package
        paths = [target] if target.is_file() else list(target.rglob("*.py"))
        for path in paths:
            if any(n.startswith("evalcore.improve") for n in _imports(path)):
                bad.append(f"{path.relative_to(ROOT)} imports evalcore.improve")
    assert bad == []
