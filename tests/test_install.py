"""Reproducible installs: constraints.txt pins what the suite runs with, and every install uses it."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "constraints.txt"
#: Tools of the virtual environment itself, pinned for the build but not what the suite imports.
ENVIRONMENT_TOOLS = {"pip", "setuptools", "wheel"}


def _pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for number, line in enumerate(LOCK.read_text(encoding="utf-8").splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9._-]+)==([^\s;]+)", line)
        assert match, f"constraints.txt line {number} is not NAME==VERSION: {line!r}"
        name = canonicalize_name(match.group(1))
        assert name not in pins, f"constraints.txt pins {name} twice"
        pins[name] = Version(match.group(2))
    return pins


def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = [r for group in project["optional-dependencies"].values() for r in group]
    build = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]
    return [Requirement(r) for r in [*project["dependencies"], *extras, *build["requires"]]]


def test_every_declared_requirement_is_pinned_within_its_range() -> None:
    pins = _pins()
    problems = []
    for requirement in _declared():
        name = canonicalize_name(requirement.name)
        if name not in pins:
            problems.append(f"{requirement} has no pin (run `make lock`)")
        elif not requirement.specifier.contains(pins[name], prereleases=True):
            problems.append(f"{requirement} excludes the pinned {name}=={pins[name]}")
    assert problems == []


def test_the_suite_runs_with_the_pinned_versions() -> None:
    wrong = []
    for name, version in _pins().items():
        if name in ENVIRONMENT_TOOLS:
            continue
        try:
            installed = Version(metadata.version(name))
        except metadata.PackageNotFoundError:
            wrong.append(f"{name}=={version} is not installed")
            continue
        if installed != version:
            wrong.append(f"{name}: installed {installed}, pinned {version}")
    assert wrong == [], "reinstall with `make test` (or refresh the pins with `make lock`)"


def _rules(makefile: str) -> dict[str, tuple[str, list[str]]]:
    """``target -> (prerequisites, recipe lines)`` of a plain Makefile."""
    rules: dict[str, tuple[str, list[str]]] = {}
    current: str | None = None
    for line in makefile.splitlines():
        if line.startswith("\t") and current is not None:
            rules[current][1].append(line.strip())
        elif re.match(r"^[^\s#=][^=]*:(?!=)", line):
            target, _, prerequisites = line.partition(":")
            current = target.strip()
            rules[current] = (prerequisites, [])
        elif not line.startswith("\t"):
            current = None
    return rules


def test_makefile_installs_every_environment_through_the_lock() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^LOCK := constraints\.txt$", makefile, re.M)
    install = re.search(r"^PIP_INSTALL := (.*)$", makefile, re.M)
    assert install
    assert "--constraint $(LOCK)" in install.group(1)
    assert "--build-constraint $(LOCK)" in install.group(1)
    rules = _rules(makefile)
    for stamp in ("$(VENV)/.installed", "$(VENV)/.installed-test"):
        prerequisites, recipe = rules[stamp]
        assert "$(LOCK)" in prerequisites, stamp
        assert "pyproject.toml" in prerequisites, stamp
        assert any(line.startswith("@$(PIP_INSTALL)") for line in recipe), stamp
    for target in ("run", "test"):
        assert "$(VENV)/.installed" in rules[target][0], target
    for target, (_, recipe) in rules.items():
        for line in recipe:
            if target != "lock" and " install " in line and "pip" in line:
                assert "--constraint" in line or "$(PIP_INSTALL)" in line, f"{target}: {line}"


def test_ci_runs_the_readme_test_command() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^make test$", script, re.M)


@pytest.mark.parametrize("target", ["lock", "run", "test"])
def test_make_targets_are_documented(target: str) -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(rf"^## {target}: ", makefile, re.M)
