"""The fuzz tests print what they tried at the end of the run: cases and outcomes per path.

When ``EVALCORE_FUZZ_TALLY`` names a folder, the tally is also written there as JSON, one file per
pytest process (the figures of docs/reliability.md come from there).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.fuzz.harness import TALLY, full_run


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not TALLY:
        return
    mode = "full run" if full_run() else "CI share"
    terminalreporter.section(f"fuzz cases ({mode})")
    for target in sorted(TALLY):
        outcomes = TALLY[target]
        total = sum(outcomes.values())
        shown = ", ".join(f"{name} {count:,}" for name, count in outcomes.most_common())
        terminalreporter.write_line(f"{target:<24} {total:>7,}  {shown}")
    folder = os.environ.get("EVALCORE_FUZZ_TALLY", "").strip()
    if folder:
        data = {target: dict(outcomes) for target, outcomes in sorted(TALLY.items())}
        out = Path(folder) / f"fuzz-tally-{os.getpid()}.json"
        out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
