"""``evalcore users``: each command through a real subprocess, against a real SQLite file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalcore.cli.users import ROLE_CHOICES
from evalcore.errors import SignInError
from evalcore.store import ROLES, Store

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "a long enough password"
#: The console script's body (``evalcore.cli`` has no ``__main__``).
_MAIN = "import sys; from evalcore.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'team.sqlite'}"


@pytest.fixture
def seed(db_url: str) -> Iterator[Store]:
    store = Store.open(db_url)
    try:
        yield store
    finally:
        store.close()


def _evalcore(
    *args: str, env: dict[str, str] | None = None, database: str | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "EVALCORE_DATABASE_URL"}
    environment.update(env or {})
    options = [] if database is None else ["--database-url", database]
    return subprocess.run(
        [sys.executable, "-c", _MAIN, "users", *args, *options],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env=environment,
        timeout=120,
    )


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_role_choices_are_the_store_roles() -> None:
    assert set(ROLE_CHOICES) == set(ROLES)


def test_add_reads_the_password_from_the_environment(db_url: str, seed: Store) -> None:
    seed.create_project("demo")
    out = _ok(
        _evalcore(
            "add",
            "ana",
            "--role",
            "annotator",
            "--password-env",
            "ANA_PASSWORD",
            "--email",
            "ana@example.org",
            env={"ANA_PASSWORD": PASSWORD},
            database=db_url,
        )
    )
    assert "Added ana (annotator; demo)" in out
    assert PASSWORD not in out
    actor = seed.sign_in("ana", PASSWORD)
    assert actor.role == "annotator"
    assert len(actor.memberships) == 1
    log = seed.audit_log(action="user_added")
    assert next(iter(log["actor"])).startswith("cli:")
    assert PASSWORD not in json.dumps(log.astype(str).to_dict("records"))


def test_add_with_an_unset_or_empty_variable_is_a_clear_error(db_url: str) -> None:
    for env in ({}, {"EMPTY_PASSWORD": ""}):
        result = _evalcore(
            "add",
            "ana",
            "--role",
            "viewer",
            "--password-env",
            "EMPTY_PASSWORD",
            env=env,
            database=db_url,
        )
        assert result.returncode == 2
        assert result.stderr.startswith("evalcore: The environment variable EMPTY_PASSWORD")
        assert "Traceback" not in result.stderr


def test_a_password_is_never_taken_from_the_command_line(db_url: str) -> None:
    for command in (["add", "ana", "--role", "viewer"], ["reset-password", "ana"]):
        result = _evalcore(*command, "--password", PASSWORD, database=db_url)
        assert result.returncode == 2
        assert "never taken from the command line" in result.stderr
        assert PASSWORD not in result.stderr
    # nor a value given to --password-env in place of a variable name, and it is not echoed
    swapped = _evalcore(
        "add", "ana", "--role", "viewer", "--password-env", PASSWORD, database=db_url
    )
    assert swapped.returncode == 2
    assert "NAME of an environment variable" in swapped.stderr
    assert PASSWORD not in swapped.stderr


def test_errors_are_one_line_without_a_traceback(db_url: str) -> None:
    _ok(_evalcore("add", "ana", "--role", "viewer", database=db_url))
    again = _evalcore("add", "ana", "--role", "viewer", database=db_url)
    assert again.returncode == 2
    assert again.stderr.strip() == "evalcore: A user named 'ana' already exists."
    short = _evalcore(
        "add",
        "bob",
        "--role",
        "viewer",
        "--password-env",
        "P",
        env={"P": "short"},
        database=db_url,
    )
    assert short.returncode == 2
    assert "at least 12" in short.stderr
    bad_role = _evalcore("add", "bob", "--role", "owner", database=db_url)
    assert bad_role.returncode == 2
    assert "invalid choice" in bad_role.stderr
    missing = _evalcore("list", database=f"sqlite:///{Path(db_url[10:]).parent / 'none.sqlite'}")
    assert missing.returncode == 2
    assert "there is no database" in missing.stderr
    gone = _evalcore("disable", "nobody", database=db_url)
    assert gone.returncode == 2
    assert gone.stderr.strip() == "evalcore: There is no user named 'nobody'."


def test_list_as_a_table_and_as_json(db_url: str, seed: Store) -> None:
    demo = seed.create_project("demo")
    seed.create_project("other")
    seed.add_user("root", role="admin", password=PASSWORD)
    seed.add_user("vic", role="viewer", projects=["demo"])
    seed.sign_in("root", PASSWORD)
    table = _ok(_evalcore("list", database=db_url)).splitlines()
    assert table[0].split() == [
        "name",
        "role",
        "source",
        "disabled",
        "locked",
        "last",
        "sign-in",
        "projects",
    ]
    assert table[1].split()[:6] == ["root", "admin", "local", "no", "no", table[1].split()[5]]
    assert table[1].endswith("every project")
    assert table[2].split() == ["vic", "viewer", "local", "no", "no", "never", "demo", "(viewer)"]
    rows = json.loads(_ok(_evalcore("list", "--json", database=db_url)))
    assert [r["name"] for r in rows] == ["root", "vic"]
    assert rows[0]["last_sign_in_at"] is not None
    assert rows[1]["last_sign_in_at"] is None
    assert rows[1]["projects"] == {"demo": "viewer"}
    assert seed.actor_for("vic").memberships == {demo.id: "viewer"}


def test_list_says_how_to_add_the_first_account(db_url: str, seed: Store) -> None:
    seed.close()
    assert "evalcore users add" in _ok(_evalcore("list", database=db_url))


def test_set_role_everywhere_and_in_one_project(db_url: str, seed: Store) -> None:
    demo, other = seed.create_project("demo"), seed.create_project("other")
    seed.add_user("ana", role="annotator")
    assert "ana is now viewer in every project" in _ok(
        _evalcore("set-role", "ana", "viewer", database=db_url)
    )
    _ok(_evalcore("set-role", "ana", "engineer", "--project", "other", database=db_url))
    actor = seed.actor_for("ana")
    assert actor.role == "viewer"
    assert actor.memberships == {demo.id: "viewer", other.id: "engineer"}
    unknown = _evalcore("set-role", "ana", "viewer", "--project", "nope", database=db_url)
    assert unknown.returncode == 2
    assert "no project named 'nope'" in unknown.stderr
    assert next(iter(seed.audit_log(action="role_changed")["actor"])).startswith("cli:")


def test_disable_and_enable(db_url: str, seed: Store) -> None:
    seed.add_user("ana", role="viewer", password=PASSWORD)
    assert "ana is disabled" in _ok(_evalcore("disable", "ana", database=db_url))
    with pytest.raises(SignInError):
        seed.sign_in("ana", PASSWORD)
    assert "ana is enabled" in _ok(_evalcore("disable", "ana", "--enable", database=db_url))
    assert seed.sign_in("ana", PASSWORD).name == "ana"


def test_reset_password_from_the_environment(db_url: str, seed: Store) -> None:
    seed.add_user("ana", role="viewer", password=PASSWORD)
    fresh = "another long password"
    out = _ok(
        _evalcore(
            "reset-password",
            "ana",
            "--password-env",
            "NEW_PW",
            env={"NEW_PW": fresh},
            database=db_url,
        )
    )
    assert fresh not in out
    assert seed.sign_in("ana", fresh).name == "ana"
    with pytest.raises(SignInError):
        seed.sign_in("ana", PASSWORD)
    unset = _evalcore("reset-password", "ana", "--password-env", "NEW_PW", database=db_url)
    assert unset.returncode == 2
    assert "NEW_PW is not set" in unset.stderr
    required = _evalcore("reset-password", "ana", database=db_url)
    assert required.returncode == 2
    assert "--password-env" in required.stderr


def test_the_database_comes_from_the_environment_by_default(db_url: str) -> None:
    _ok(_evalcore("add", "ana", "--role", "viewer", env={"EVALCORE_DATABASE_URL": db_url}))
    with Store.open(db_url) as store:
        assert [u.name for u in store.list_users()] == ["ana"]


@pytest.mark.parametrize(
    ("password", "why"),
    [
        ("12345678", "It has 8 characters: a password needs at least 12."),
        ("password1234", "This is a very common password."),
        ("qwertyuiop12", "too easy to guess"),
        ("ana ana ana ana", "too easy to guess"),  # the user's own name, repeated
    ],
)
def test_a_weak_password_is_refused_with_the_reason(
    db_url: str, seed: Store, password: str, why: str
) -> None:
    seed.add_user("ana", role="viewer", password=PASSWORD)
    for command in (["add", "ana2", "--role", "viewer"], ["reset-password", "ana"]):
        name = command[1]
        result = _evalcore(
            *command,
            "--password-env",
            "NEW_PW",
            env={"NEW_PW": password.replace("ana", name)},
            database=db_url,
        )
        assert result.returncode == 2, result.stdout
        assert result.stderr.startswith("evalcore: This password is refused:")
        assert why in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert [u.name for u in seed.list_users()] == ["ana"]  # nothing was added
    assert seed.sign_in("ana", PASSWORD).name == "ana"  # the old password still works


def test_unlock_lists_and_lifts_the_locks(db_url: str, seed: Store) -> None:
    seed.add_user("ana", role="viewer", password=PASSWORD)
    assert "No sign-in locks" in _ok(_evalcore("unlock", database=db_url))
    for _ in range(5):
        with pytest.raises(SignInError):
            seed.sign_in("ana", "a wrong guess", client="203.0.113.5")
    listed = _ok(_evalcore("unlock", database=db_url))
    assert "ana from 203.0.113.5: locked until" in listed
    with pytest.raises(SignInError, match="Too many failed sign-ins"):
        seed.sign_in("ana", PASSWORD, client="203.0.113.5")
    out = _ok(_evalcore("unlock", "ana", database=db_url))
    assert "Sign-in locks of ana lifted" in out
    assert seed.sign_in("ana", PASSWORD, client="203.0.113.5").name == "ana"
    assert next(iter(seed.audit_log(action="sign_in_unlocked")["actor"])).startswith("cli:")
