"""The ``evalcore`` command.

Each subcommand lives in its own module with a ``register(subparsers)`` function that adds its parser
and sets ``handler`` (a callable taking the parsed namespace and returning an exit status). Every command
opens what it needs and calls library functions; no logic lives here.

Exit status: 0 on success, 1 when a ``--min-…`` quality gate fails, 2 on bad input (the error goes to
stderr as one readable message, never a traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib import import_module

from evalcore import __version__
from evalcore.errors import EvalcoreError

__all__ = ["EXIT_BAD_INPUT", "EXIT_GATE_FAILED", "EXIT_OK", "build_parser", "main"]

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_BAD_INPUT = 2

#: Modules that contribute subcommands, in the order they appear in ``--help``.
_COMMAND_MODULES = ("calibrate", "judge", "report")


class _Parser(argparse.ArgumentParser):
    """argparse exits with status 2 on a usage error already; keep the message to one line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"evalcore: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="evalcore",
        description="Calibrate LLM judges against human raters.",
    )
    parser.add_argument("--version", action="version", version=f"evalcore {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in _COMMAND_MODULES:
        try:
            module = import_module(f"evalcore.cli.{name}")
        except ModuleNotFoundError as exc:  # a command not built yet
            if exc.name == f"evalcore.cli.{name}":
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (also used by the console script)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return handler(args)
    except EvalcoreError as exc:
        print(f"evalcore: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("evalcore: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
