"""What importing the judge engine and its command costs: no metric stack, no data frames."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("scipy", "sklearn", "pandas", "numpy", "evalcore.metrics", "evalcore.store")


def _loaded_after(statement: str) -> set[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


@pytest.mark.parametrize("statement", ["import evalcore.judge", "import evalcore.judge.builtins"])
def test_the_judge_engine_loads_no_metric_or_data_stack(statement: str) -> None:
    loaded = _loaded_after(statement)
    assert not {m for m in HEAVY if m in loaded}


def test_the_judge_command_module_imports_only_the_standard_library() -> None:
    loaded = _loaded_after("import evalcore.cli.judge")
    assert not {
        m for m in ("openai", "rich", "evalcore.judge", "evalcore.data", *HEAVY) if m in loaded
    }
