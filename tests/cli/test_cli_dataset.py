"""``evalcore dataset import FILE --project P``: the Datasets page's plan, printed and applied from a
script, through a real subprocess on a real SQLite file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from evalcore.cli import build_parser
from evalcore.cli.dataset import FRACTIONAL_CHOICES, ROLE_CHOICES
from evalcore.data import FRACTIONAL, ROLES
from evalcore.store import Store
from tests.store.test_store_import import _aspects_file

ROOT = Path(__file__).resolve().parents[2]
_MAIN = "import sys; from evalcore.cli import main; sys.exit(main(sys.argv[1:]))"


def _evalcore(*args: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "EVALCORE_DATABASE_URL"}
    return subprocess.run(
        [sys.executable, "-c", _MAIN, "dataset", "import", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env=environment,
        timeout=300,
    )


@pytest.fixture
def database(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'cli.sqlite'}"
    with Store.open(url) as store:
        store.create_project("P")
    return url


def test_the_cli_choices_are_the_librarys() -> None:
    assert tuple(FRACTIONAL) == FRACTIONAL_CHOICES
    assert ROLE_CHOICES == ROLES
    args = build_parser().parse_args(["dataset", "import", "f.csv", "--project", "P", "--dry-run"])
    assert (args.fractional, args.dry_run) == ("refuse", True)


def test_dry_run_prints_the_plan_and_saves_nothing(database: str, tmp_path: Path) -> None:
    path = tmp_path / "aspects.csv"
    path.write_bytes(_aspects_file())
    out = _evalcore(str(path), "--project", "P", "--dry-run", "--database-url", database)
    # the plan is printed, then the check refuses the x.5 scores and says how to choose
    assert out.returncode == 2, out.stderr
    assert (
        "criterion clarity (new criterion, 1–5): annotators human_1, human_2, human_3" in out.stdout
    )
    assert "choose what to do with them: --fractional finer, half-up or half-even" in out.stdout
    assert "judge_m1_clarity: 2 labels are not on the scale 1–5" in out.stderr
    out = _evalcore(
        str(path),
        "--project",
        "P",
        "--dry-run",
        "--fractional",
        "half-up",
        "--database-url",
        database,
    )
    assert out.returncode == 0, out.stderr
    assert "note: judge_m1_clarity: 2 fractional scores rounded half up" in out.stdout
    assert (
        "nothing saved (--dry-run); it would write 6 items, 18 human labels for clarity"
        in out.stdout
    )
    with Store.open(database) as store:
        project = store.get_project_by_name("P")
        assert store.list_datasets(project.id) == []
        assert store.list_criteria(project.id) == []


def test_import_applies_the_plan_with_corrections(database: str, tmp_path: Path) -> None:
    path = tmp_path / "aspects.csv"
    path.write_bytes(_aspects_file())
    out = _evalcore(
        str(path),
        "--project", "P",
        "--name", "summaries",
        "--fractional", "finer",
        "--role", "system_id=item_field",
        "--role", "judge_big_7b_accuracy=ignore",
        "--database-url", database,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "Saved 'summaries' version 1 with 6 items" in out.stderr
    assert "new criteria: clarity, accuracy" in out.stderr
    with Store.open(database) as store:
        project = store.get_project_by_name("P")
        dataset = store.get_dataset_by_name(project.id, "summaries")
        assert dataset.item_fields == ("system_id",)
        clarity = store.get_criterion_by_name(project.id, "clarity")
        assert clarity.scale.display_labels[:3] == ["1", "1.5", "2"]
        runs = {(r.name, r.criterion_id) for r in store.list_runs(project_id=project.id)}
        accuracy = store.get_criterion_by_name(project.id, "accuracy")
        assert ("imported: judge_big_7b", accuracy.id) not in runs
        assert ("imported: judge_big_7b", clarity.id) in runs


def test_a_label_column_without_a_criterion_and_bad_input(database: str, tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    pd.DataFrame({"id": ["a", "b"], "answer": ["x", "y"], "rater_1": [1, 2]}).to_csv(
        path, index=False
    )
    out = _evalcore(str(path), "--project", "P", "--database-url", database)
    assert out.returncode == 2
    assert "'rater_1' name no criterion" in out.stderr
    out = _evalcore(
        str(path), "--project", "P", "--criterion", "quality", "--database-url", database
    )
    assert out.returncode == 0, out.stderr
    assert "new criteria: quality" in out.stderr
    bad = _evalcore(str(path), "--project", "P", "--role", "nope=human", "--database-url", database)
    assert bad.returncode == 2
    assert "which labels.csv does not have" in bad.stderr
    bad = _evalcore(
        str(path), "--project", "P", "--role", "rater_1=boss", "--database-url", database
    )
    assert bad.returncode == 2
    assert "the role is one of" in bad.stderr
    missing = _evalcore(str(tmp_path / "none.csv"), "--project", "P", "--database-url", database)
    assert missing.returncode == 2
    assert "there is no file" in missing.stderr
    project = _evalcore(str(path), "--project", "Q", "--database-url", database)
    assert project.returncode == 2
    assert "Q" in project.stderr
