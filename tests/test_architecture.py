"""The layering rules of ARCHITECTURE.md, checked."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "evalcore"

#: What each checked layer may import of evalcore besides itself (``dashboard``: app.py, pages/
#: and ui/). ARCHITECTURE.md's table says the same; tests/test_architecture_doc.py compares them.
LAYER_MAY_IMPORT: dict[str, tuple[str, ...]] = {
    "errors": (),
    "limits": (),
    "labels": ("errors",),
    "data": ("errors", "labels", "limits"),
    "metrics": ("errors", "labels", "limits"),
    "improve": ("errors", "labels", "words", "judge", "metrics", "report", "store"),
    "dashboard": ("workflows", "errors", "labels", "words"),
}


def _may_import(layer: str) -> set[str]:
    return {f"evalcore.{name}" for name in LAYER_MAY_IMPORT[layer]}


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
    allowed = _may_import(package) | {f"evalcore.{package}"}
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
        for name in ("errors", "limits", "labels")
        for imported in _imports(LIBRARY / f"{name}.py")
        if (imported.startswith("evalcore") or imported.startswith("."))
        and imported not in _may_import(name)
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
    """``evalcore.improve`` builds on judge, metrics, labels, errors, the store (for saving) and
    the report's human ceiling; nothing below it imports it back."""
    allowed = _may_import("improve") | {"evalcore.improve"}
    bad = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in (LIBRARY / "improve").rglob("*.py")
        for name in _imports(path)
        if name.startswith("evalcore")
        and not any(name == a or name.startswith(a + ".") for a in allowed)
    ]
    for package in ("errors.py", "labels.py", "judge", "metrics", "store", "data", "report"):
        target = LIBRARY / package
        paths = [target] if target.is_file() else list(target.rglob("*.py"))
        for path in paths:
            if any(n.startswith("evalcore.improve") for n in _imports(path)):
                bad.append(f"{path.relative_to(ROOT)} imports evalcore.improve")
    assert bad == []


# --- the dashboard: pages and views only render, through the workflow layer -----------------------

DASHBOARD = [
    ROOT / "app.py",
    *sorted((ROOT / "pages").glob("*.py")),
    *sorted((ROOT / "ui").glob("*.py")),
]
#: What the dashboard may import from evalcore: the workflow layer and three leaf modules.
DASHBOARD_MAY_IMPORT = tuple(sorted(_may_import("dashboard")))


def test_pages_and_views_import_only_the_workflow_layer_from_evalcore() -> None:
    bad = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in DASHBOARD
        for name in _imports(path)
        if (name == "evalcore" or name.startswith("evalcore."))
        and not any(name == a or name.startswith(a + ".") for a in DASHBOARD_MAY_IMPORT)
    ]
    assert bad == []


def test_no_access_decision_is_written_in_the_dashboard() -> None:
    """Who may do what is decided in evalcore at each call; ui/ never authorizes anything."""
    bad = [
        str(path.relative_to(ROOT))
        for path in DASHBOARD
        if "authorize(" in path.read_text(encoding="utf-8")
        or "acting_as(" in path.read_text(encoding="utf-8")
    ]
    assert bad == []


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_the_dashboard_stays_small() -> None:
    """Pages are at most 60 lines, no file of ui/ is over 600, and ui/ is at most 4,500 in all."""
    pages = {p.name: _lines(p) for p in (ROOT / "pages").glob("*.py") if _lines(p) > 60}
    views = {p.name: _lines(p) for p in (ROOT / "ui").glob("*.py") if _lines(p) > 600}
    total = sum(_lines(p) for p in (ROOT / "ui").glob("*.py"))
    assert pages == {}
    assert views == {}
    assert total <= 4_500


def _runs_imports(path: Path) -> tuple[set[str], list[tuple[str, str]]]:
    """The ``evalcore.runs`` modules a runs module imports (anywhere in it), and the function-level
    imports of other runs modules as (module, name) pairs."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("evalcore.runs."):
                modules.add(node.module)
        elif isinstance(node, ast.Import):
            modules.update(a.name for a in node.names if a.name.startswith("evalcore.runs."))
    local: list[tuple[str, str]] = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("evalcore.runs"):
                local.extend((str(node.module), a.name) for a in node.names)
    return modules, local


def _runs_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted((LIBRARY / "runs").glob("*.py")):
        if path.name == "__init__.py":
            continue
        name = f"evalcore.runs.{path.stem}"
        graph[name] = {m for m in _runs_imports(path)[0] if m != name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (the modules on it, the first repeated last), or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)) is not None:
                return found
        state[node] = "done"
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def test_the_cycle_finder_can_fail() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_the_modules_of_runs_import_each_other_as_a_tree() -> None:
    """``evalcore.runs`` has no import circle, counting imports inside functions too."""
    graph = _runs_graph()
    assert "evalcore.runs._jobs" in graph  # the one job protocol, imported by the others
    assert {"evalcore.runs._service", "evalcore.runs._improve", "evalcore.runs._queue"} <= {
        module for module, targets in graph.items() if "evalcore.runs._jobs" in targets
    }
    assert _cycle(graph) is None


def test_no_runs_module_imports_another_inside_a_function() -> None:
    """A function-level import of a sibling module is how an import circle hides; and a sibling's
    private helper (``_name``) is never imported, at any level."""
    bad: list[str] = []
    for path in sorted((LIBRARY / "runs").glob("*.py")):
        _modules, local = _runs_imports(path)
        bad += [f"{path.name}: {module}.{name} inside a function" for module, name in local]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("evalcore.runs"):
                bad += [
                    f"{path.name}: private {node.module}.{a.name}"
                    for a in node.names
                    if a.name.startswith("_")
                ]
    assert bad == []


def _constructed(path: Path, names: set[str]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if called in names:
                found.append(f"{shown}:{node.lineno} builds a {called}")
    return found


def test_every_runner_is_built_by_the_one_factory() -> None:
    """``JudgeRunner`` and ``MetricRunner`` are built only by
    ``evalcore.judge.builtins.build_runner`` (and a template metric's runner inside its
    ``MetricRunner``); the command line, the run service, the worker and the optimiser call it."""
    allowed = {
        LIBRARY / "judge" / "builtins" / "_factory.py",
        LIBRARY / "judge" / "builtins" / "_run.py",
    }
    bad = [
        found
        for path in sorted(LIBRARY.rglob("*.py"))
        if path not in allowed
        for found in _constructed(path, {"JudgeRunner", "MetricRunner"})
    ]
    assert bad == []
    users = ["cli/judge.py", "runs/_common.py", "improve/_optimize.py"]
    for user in users:
        assert "build_runner(" in (LIBRARY / user).read_text(encoding="utf-8"), user


def test_the_runner_check_can_fail(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import m\nrunner = m.JudgeRunner(client, template)\n", encoding="utf-8")
    assert _constructed(sample, {"JudgeRunner"}) == ["sample.py:2 builds a JudgeRunner"]
