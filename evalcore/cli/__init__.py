"""The ``evalcore`` command.

Each subcommand lives in its own module with a ``register(subparsers)`` function that adds its parser
and sets ``handler`` (a callable taking the parsed namespace and returning an exit status). Every command
opens what it needs and calls library functions; no logic lives here.

The command starts at once because building the parser imports nothing heavy: at module level the
modules of this package import only the standard library and :mod:`evalcore.errors`, so ``evalcore
--help`` and ``evalcore calibrate --help`` never load pandas, numpy, scipy or the openai client. A
handler imports what it uses when it runs (``tests/cli/test_cli_startup.py`` holds every module to
this).

Exit status: 0 on success, 1 when a ``--min-…`` quality gate fails, 2 on bad input (the error goes to
stderr as one readable message, never a traceback), 130 when interrupted, 141 when the reader of the
output went away (``evalcore … | head``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from importlib import import_module

from evalcore import __version__
from evalcore.errors import EvalcoreError

__all__ = [
    "COMMAND_MODULES",
    "EXIT_BAD_INPUT",
    "EXIT_BROKEN_PIPE",
    "EXIT_GATE_FAILED",
    "EXIT_OK",
    "build_parser",
    "main",
]

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_BAD_INPUT = 2
#: What a shell reports for a command whose reader closed the pipe (128 + SIGPIPE).
EXIT_BROKEN_PIPE = 141

#: Modules that contribute subcommands, in the order they appear in ``--help``.
COMMAND_MODULES = (
    "serve",
    "calibrate",
    "judge",
    "report",
    "estimate_rate",
    "db",
    "users",
    "project",
    "dataset",
    "worker",
)


class _Parser(argparse.ArgumentParser):
    """argparse exits with status 2 on a usage error already; keep the message to one line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"evalcore: error: {_without_values(message)}\n")


_UNRECOGNIZED = "unrecognized arguments: "


def _without_values(message: str) -> str:
    """argparse's message, with the values of unrecognised arguments left out.

    A misspelled option (``--password-e SECRET``) would otherwise echo the value after it, which may
    be a password, into the terminal and its logs; the option names are enough to see the typo.
    """
    if not message.startswith(_UNRECOGNIZED):
        return message
    words = message[len(_UNRECOGNIZED) :].split()
    options = [w.split("=", 1)[0] for w in words if w.startswith("-")]
    hidden = len(words) - len(options)
    shown = " ".join(options)
    if hidden:
        shown += (
            f"{' ' if shown else ''}(and {hidden} value{'s' if hidden != 1 else ''}, not shown)"
        )
    return _UNRECOGNIZED + shown


def build_parser() -> argparse.ArgumentParser:
    """The whole command line's parser (cheap: the subcommand modules import nothing heavy)."""
    parser = _Parser(
        prog="evalcore",
        description="Calibrate LLM judges against human raters.",
    )
    parser.add_argument("--version", action="version", version=f"evalcore {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        import_module(f"{__name__}.{name}").register(sub)
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
        status = handler(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler's try
        return status
    except EvalcoreError as exc:
        print(f"evalcore: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("evalcore: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (``evalcore … | head``): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
