"""``evalcore dataset import FILE --project P``: load a file the way the Datasets page does, from a
script.

The command reads the file, guesses what each column holds (item fields, one criterion per aspect,
one label set per annotator, one imported run per judge and criterion), prints that plan, checks
the whole file against it and applies it; ``--dry-run`` stops after the check. The same plan and
the same checks as the page (``evalcore.store``'s ``propose_import``, ``check_import``,
``apply_import``), acting as the trusted system user ``cli:<login name>``, which the audit log
records.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from evalcore.cli._database import add_database_option, find_project, open_acting_store
from evalcore.errors import EvalcoreError

EXIT_OK = 0
#: The choices of ``--fractional`` (as :data:`evalcore.data.FRACTIONAL`; spelled here so that
#: building the parser imports no data code).
FRACTIONAL_CHOICES = ("refuse", "finer", "half-up", "half-even")
#: The roles ``--role`` may give (as :data:`evalcore.data.ROLES`).
ROLE_CHOICES = (
    "item_id",
    "prompt",
    "response",
    "context",
    "reference",
    "response_a",
    "response_b",
    "conversation",
    "item_field",
    "metadata",
    "human",
    "judge",
    "reason",
    "annotator",
    "label",
    "criterion",
    "ignore",
)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "dataset",
        help="import a dataset file (items and the labels in it) into a project",
        description="Load dataset files into a project's database.",
    )
    commands = p.add_subparsers(dest="dataset_command", metavar="ACTION", required=True)
    imp = commands.add_parser(
        "import",
        help="import a file's items and labels as the Datasets page would",
        description=(
            "Import FILE (CSV, TSV, JSONL, JSON or Parquet) into project P: print the plan (which "
            "column is the prompt, the response, the other item fields; one criterion per aspect, "
            "existing or new; its annotators and judges; metadata and what is left out), check "
            "the whole file against it, then save the dataset and its labels. Exit status: 0 "
            "imported (or checked, with --dry-run), 2 bad input (nothing is saved)."
        ),
    )
    imp.add_argument("file", metavar="FILE", type=Path, help="the file to import")
    imp.add_argument("--project", required=True, metavar="P", help="the project's name")
    imp.add_argument(
        "--name",
        metavar="NAME",
        help="the dataset's name (default: the file name without its extension); an existing "
        "name gets a new version",
    )
    imp.add_argument(
        "--fractional",
        choices=FRACTIONAL_CHOICES,
        default="refuse",
        help="what to do with fractional scores such as 3.5 on a 1-5 scale: keep them on a finer "
        "scale, round half up, round half to even, or refuse the file (default)",
    )
    imp.add_argument(
        "--role",
        action="append",
        default=[],
        metavar="COLUMN=ROLE[:CRITERION[:NAME]]",
        help="correct the guess for one column (repeatable): ROLE is one of "
        f"{', '.join(ROLE_CHOICES)}; a label column may name its criterion and its annotator or "
        "judge, e.g. --role 'score_a=human:fluency:alice'",
    )
    imp.add_argument(
        "--criterion",
        metavar="NAME",
        help="the criterion of label columns whose names give none",
    )
    imp.add_argument(
        "--dry-run", action="store_true", help="print the plan and check the file; save nothing"
    )
    add_database_option(imp)
    imp.set_defaults(handler=run_import)


def _corrections(given: list[str]) -> dict[str, tuple[str, str | None, str | None]]:
    found: dict[str, tuple[str, str | None, str | None]] = {}
    for text in given:
        column, sep, rest = text.rpartition("=")
        if not sep or not column:
            raise EvalcoreError(f"--role {text!r}: write COLUMN=ROLE[:CRITERION[:NAME]]")
        parts = rest.split(":")
        if parts[0] not in ROLE_CHOICES or len(parts) > 3:
            raise EvalcoreError(
                f"--role {text!r}: the role is one of {', '.join(ROLE_CHOICES)}, then optionally "
                ":CRITERION and :NAME"
            )
        found[column] = (
            parts[0],
            parts[1] if len(parts) > 1 else None,
            parts[2] if len(parts) > 2 else None,
        )
    return found


def run_import(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from evalcore.data import read_table
    from evalcore.store import apply_import, check_import, propose_import
    from evalcore.words import plural

    path: Path = args.file
    if not path.is_file():
        raise EvalcoreError(f"there is no file {path}")
    corrections = _corrections(args.role)
    frame = read_table(path)
    store = open_acting_store(args, must_exist=True)
    try:
        project = find_project(store, args.project)
        criteria = store.list_criteria(project.id)
        plan = propose_import(path, name=path.name, criteria=criteria, frame=frame)
        unknown = sorted(set(corrections) - {r.column for r in plan.roles})
        if unknown:
            raise EvalcoreError(
                f"--role names {', '.join(map(repr, unknown))}, which {path.name} does not have; "
                f"its columns are: {', '.join(map(repr, frame.columns))}"
            )
        roles = []
        for role in plan.roles:
            new_role, criterion, name = corrections.get(role.column, (role.role, None, None))
            role = replace(role, role=new_role)  # type: ignore[arg-type]
            if criterion is not None:
                role = replace(role, criterion=criterion)
            if name is not None:
                role = replace(role, name=name)
            if role.is_label and not role.criterion and args.criterion:
                role = replace(role, criterion=args.criterion)
            roles.append(role)
        plan = propose_import(
            path,
            name=path.name,
            criteria=criteria,
            roles=roles,
            fractional=args.fractional,
            frame=frame,
        )
        for line in plan.describe():
            print(line)
        if plan.fractional_found and plan.fractional == "refuse":
            print("choose what to do with them: --fractional finer, half-up or half-even")
        checked = check_import(plan, path)
        for line in checked.loaded.notes:
            print(f"note: {line}")
        if args.dry_run:
            items = [] if plan.dataset else [plural(len(checked.items), "item")]
            parts = ", ".join([*items, *checked.describe()])
            print(f"checked, nothing saved (--dry-run); it would write {parts}")
            return EXIT_OK
        result = apply_import(store, project.id, checked, dataset_name=args.name or path.stem)
    finally:
        store.close()
    print(result.message, file=sys.stderr)
    return EXIT_OK
