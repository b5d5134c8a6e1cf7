"""``evalcore users``: the accounts of a team server (add, list, set-role, disable,
reset-password, unlock).

A password is read from the environment variable named by ``--password-env``, never from the
command line, where other users of the machine could read it in the process list and it would stay
in the shell's history. It must pass the password policy (at least 12 characters, not easy to
guess): a refused one is a one-line error that says why, before anything is saved. Every change is
made as ``cli:<login name>`` and lands in the audit log. Only the standard library at module
level, like every module of this package.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from evalcore.cli._database import add_database_option, find_project, open_acting_store
from evalcore.errors import ConfigError, WeakPasswordError

if TYPE_CHECKING:
    from evalcore.store import GuardedStore, UserRecord

#: As :data:`evalcore.store.ROLES` (spelled here so that building the parser imports no store code).
ROLE_CHOICES = ("admin", "engineer", "viewer", "annotator")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
LIST_COLUMNS = ("name", "role", "source", "disabled", "locked", "last sign-in", "projects")


class _RefusePassword(argparse.Action):
    """``--password``: refused with advice, and without repeating what was typed."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        parser.error(
            "a password is never taken from the command line: put it in an environment variable "
            "and name the variable with --password-env VAR"
        )


def register(sub: Any) -> None:
    p = sub.add_parser(
        "users",
        help="add, list and change the accounts that sign in to the app",
        description=(
            "The accounts of the app's database. Passwords are read from an environment variable "
            "(--password-env VAR), never from the command line. Exit status: 0 ok, 2 bad input."
        ),
    )
    actions = p.add_subparsers(dest="users_command", metavar="ACTION", required=True)

    add = actions.add_parser(
        "add", allow_abbrev=False, help="create an account (creates a new SQLite file)"
    )
    add.add_argument("name", help="the name the user signs in with")
    add.add_argument("--role", required=True, choices=ROLE_CHOICES)
    add.add_argument(
        "--password-env",
        metavar="VAR",
        help="the environment variable that holds the password (without it, OIDC sign-in only)",
    )
    add.add_argument("--email", metavar="E", help="the user's e-mail address (for OIDC)")
    add.add_argument(
        "--project",
        action="append",
        metavar="P",
        help="a project the user joins (repeatable; default: every project, none for an admin)",
    )
    add.set_defaults(handler=add_user)

    listing = actions.add_parser("list", allow_abbrev=False, help="list the accounts")
    listing.add_argument("--json", action="store_true", help="one JSON array of accounts")
    listing.set_defaults(handler=list_users)

    role = actions.add_parser(
        "set-role", allow_abbrev=False, help="change a user's role, everywhere or in a project"
    )
    role.add_argument("name")
    role.add_argument("role", choices=ROLE_CHOICES)
    role.add_argument("--project", metavar="P", help="only in this project (joining it)")
    role.set_defaults(handler=set_role)

    disable = actions.add_parser(
        "disable", allow_abbrev=False, help="stop an account from signing in"
    )
    disable.add_argument("name")
    disable.add_argument("--enable", action="store_true", help="let it sign in again")
    disable.set_defaults(handler=disable_user)

    reset = actions.add_parser(
        "reset-password", allow_abbrev=False, help="give a user a new password"
    )
    reset.add_argument("name")
    reset.add_argument("--password-env", metavar="VAR", required=True)
    reset.set_defaults(handler=reset_password)

    unlock = actions.add_parser(
        "unlock",
        allow_abbrev=False,
        help="lift the sign-in locks of a name, or of a client address",
        description=(
            "Failed sign-ins lock a name from one address, a whole address, or guard a name "
            "against new addresses. This lifts the locks of a NAME (from every address) and/or "
            "of a --client address. Without either, it lists the locks in force."
        ),
    )
    unlock.add_argument("name", nargs="?", help="the name to unlock")
    unlock.add_argument("--client", metavar="ADDR", help="the client address to unlock")
    unlock.set_defaults(handler=unlock_sign_in)

    for action in (add, listing, role, disable, reset, unlock):
        add_database_option(action)
    for action in (add, reset):
        action.add_argument("--password", nargs="?", action=_RefusePassword, help=argparse.SUPPRESS)


def password_from(variable: str) -> str:
    """The password held by the environment variable ``variable``; unset or empty is an error."""
    name = variable.strip()
    if not _VARIABLE.fullmatch(name):  # never echo it: it may be a password typed by mistake
        raise ConfigError(
            "--password-env takes the NAME of an environment variable (letters, digits and _), "
            "and the variable holds the password."
        )
    value = os.environ.get(name, "")
    if not value:
        raise ConfigError(
            f"The environment variable {name} is not set or is empty: put the password in it "
            f"(for example: read -rs {name} && export {name}) and run the command again."
        )
    return value


def _open(args: argparse.Namespace, *, must_exist: bool = True) -> GuardedStore:
    return open_acting_store(args, must_exist=must_exist)


def _checked(password: str, *inputs: str | None) -> str:
    """``password`` when the policy accepts it: refused before any database is opened or made."""
    from evalcore.store import check_password

    checked = check_password(password, user_inputs=[i for i in inputs if i])
    if not checked.ok:
        raise WeakPasswordError(checked.message, problems=checked.problems)
    return password


def add_user(args: argparse.Namespace) -> int:
    password = None if args.password_env is None else password_from(args.password_env)
    if password is not None:
        _checked(password, args.name, args.email)
    store = _open(args, must_exist=False)
    projects = None if args.project is None else [find_project(store, p).id for p in args.project]
    user = store.add_user(
        args.name, role=args.role, password=password, email=args.email, projects=projects
    )
    joined = ", ".join(m.project_name for m in user.memberships) or (
        "every project" if user.role == "admin" else "no project yet"
    )
    print(f"Added {user.name} ({user.role}; {joined}).")
    return 0


def _when(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="seconds")


def _row(user: UserRecord, now: datetime) -> dict[str, Any]:
    return {
        "name": user.name,
        "role": user.role,
        "email": user.email,
        "source": user.source,
        "disabled": user.disabled,
        "locked": user.is_locked(now),
        "last_sign_in_at": _when(user.last_sign_in_at),
        "oidc": None
        if user.oidc_subject is None
        else {"issuer": user.oidc_issuer, "subject": user.oidc_subject},
        "projects": {m.project_name: m.role for m in user.memberships},
    }


def list_users(args: argparse.Namespace) -> int:
    users = _open(args).list_users()
    now = datetime.now(UTC)
    rows = [_row(u, now) for u in users]
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print(
            "No accounts yet: add one with evalcore users add NAME --role admin --password-env VAR"
        )
        return 0
    table = [
        (
            r["name"],
            r["role"],
            r["source"],
            "yes" if r["disabled"] else "no",
            "yes" if r["locked"] else "no",
            r["last_sign_in_at"] or "never",
            ", ".join(f"{p} ({role})" for p, role in r["projects"].items())
            or ("every project" if r["role"] == "admin" else "none"),
        )
        for r in rows
    ]
    widths = [max(len(str(c)) for c in column) for column in zip(LIST_COLUMNS, *table, strict=True)]
    for line in (LIST_COLUMNS, *table):
        print("  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
    return 0


def set_role(args: argparse.Namespace) -> int:
    store = _open(args)
    project_id = None if args.project is None else find_project(store, args.project).id
    store.set_role(args.name, args.role, project_id=project_id)
    where = "every project" if args.project is None else f"project {args.project}"
    print(f"{args.name.strip()} is now {args.role} in {where}.")
    return 0


def disable_user(args: argparse.Namespace) -> int:
    _open(args).disable_user(args.name, not args.enable)
    print(f"{args.name.strip()} is {'enabled' if args.enable else 'disabled'}.")
    return 0


def reset_password(args: argparse.Namespace) -> int:
    password = _checked(password_from(args.password_env), args.name)
    _open(args).reset_password(args.name, password)
    print(f"The password of {args.name.strip()} is reset.")
    return 0


def unlock_sign_in(args: argparse.Namespace) -> int:
    store = _open(args)
    if args.name is None and args.client is None:
        locks = store.sign_in_locks()
        if not locks:
            print("No sign-in locks are in force.")
        for lock in locks:
            until = _when(lock.locked_until)
            if lock.scope == "pair":
                what = f"{lock.account} from {lock.client}"
            elif lock.scope == "client":
                what = f"every name from {lock.client}"
            else:
                what = f"{lock.account} from new addresses"
            print(f"{what}: locked until {until}, {lock.refused} attempts refused")
        return 0
    cleared = store.clear_sign_in_locks(args.name, client=args.client)
    what = " and ".join(
        w
        for w in (
            None if args.name is None else args.name.strip(),
            None if args.client is None else f"address {args.client.strip()}",
        )
        if w
    )
    print(f"Sign-in locks of {what} lifted ({cleared} counters cleared).")
    return 0
