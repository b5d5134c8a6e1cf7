"""How fast the ``evalcore`` command starts: ``--help`` of the command and of ``calibrate``.

Run: ``.venv/bin/python bench/cli_start.py`` (about half a minute; ``--runs N``, ``--baseline REF``).

Each figure is a whole process, measured several times (median, min, max). Side by side in the same
run: the bare interpreter (the floor no command can beat) and the same commands of the tree at the
git revision ``--baseline`` (default: the commit before issue 9's start-up work, where building
the parser imported every subcommand, the openai client and scipy). The old tree is unpacked with
``git archive`` into a temporary folder and run by the same interpreter with the same packages.
Target (issue 9): both under 0.3 s.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from _common import EVALCORE, ROOT, baseline_tree, describe, timings, via_tree

#: The last commit before issue 9 changed how the command starts.
BASELINE = "39ba631"
COMMANDS = (["--help"], ["calibrate", "--help"], ["judge", "run", "--help"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--baseline", default=BASELINE, help="git revision to compare with")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}; {args.runs} runs each, whole processes")
    floor = timings([sys.executable, "-c", "pass"], args.runs)
    print(f"bare interpreter (python -c pass):          {describe(floor)}")
    with tempfile.TemporaryDirectory(prefix="evalcore-bench-") as folder:
        old = baseline_tree(args.baseline, Path(folder))
        for argv in COMMANDS:
            shown = "evalcore " + " ".join(argv)
            now = timings([EVALCORE, *argv], args.runs)
            now_tree = timings(via_tree(ROOT, argv), args.runs)
            before = timings(via_tree(old, argv), args.runs)
            print(f"{shown}")
            print(f"    now, console script:                    {describe(now)}")
            print(f"    now, python -c main(...):               {describe(now_tree)}")
            print(f"    {args.baseline}, python -c main(...):           {describe(before)}")


if __name__ == "__main__":
    main()
