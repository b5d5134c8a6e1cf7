"""How the command line finds a project by name: ``demo`` is the demo project's short name (also
in a database seeded under its full name only), and an unknown name lists the projects there are."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evalcore.cli import main
from evalcore.cli._database import find_project
from evalcore.demo import PROJECT_NAME, SHORT_NAME
from evalcore.errors import NotFoundError
from evalcore.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(f"sqlite:///{tmp_path / 'names.sqlite'}") as opened:
        opened.create_project(PROJECT_NAME)
        opened.create_project("support")
        yield opened


def test_demo_finds_the_demo_project_and_every_name_finds_its_own(store: Store) -> None:
    assert SHORT_NAME == "demo"
    assert find_project(store, "demo").name == PROJECT_NAME
    assert find_project(store, PROJECT_NAME).name == PROJECT_NAME
    assert find_project(store, " support ").name == "support"


def test_a_project_really_named_demo_wins_over_the_short_name(store: Store) -> None:
    store.create_project("demo")
    assert find_project(store, "demo").name == "demo"


def test_an_unknown_name_lists_the_projects(store: Store) -> None:
    with pytest.raises(NotFoundError) as caught:
        find_project(store, "nope")
    assert str(caught.value) == (
        "There is no project named 'nope'. The projects are: 'Northwind support demo', "
        "'support' ('demo' for short)."
    )


def test_the_command_line_takes_the_short_name(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = str(store.engine.url)
    out = tmp_path / "demo.zip"
    assert main(["project", "export", "demo", "--out", str(out), "--database-url", url]) == 0
    assert out.stat().st_size > 0
    assert main(["users", "add", "bob", "--role", "viewer", "--project", "demo",
                 "--database-url", url]) == 0  # fmt: skip
    assert [m.project_name for m in store.get_user("bob").memberships] == [PROJECT_NAME]
    assert main(["project", "export", "nope", "--out", str(out), "--database-url", url]) == 2
    assert "The projects are: 'Northwind support demo', 'support'" in capsys.readouterr().err
