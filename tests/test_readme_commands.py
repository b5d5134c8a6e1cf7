"""Every shell command in README.md's code blocks runs as written.

The commands run in a temporary folder on a fresh database (``EVALCORE_DATABASE_URL``) holding the
demo project, as after the first ``make run``; the files they name (``results.csv``,
``labels.csv`` …) are written there first, small but of the layout the README describes. Each code
block runs as one bash script (``set -e``: the first command that fails fails the test, named), so
``read`` and ``export`` carry over to the commands after them. Only the commands listed in ``SKIPPED``
are left out, each with its reason.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.demo.seed import ensure_demo
from evalcore.store import Store

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: What ``read -rs EVALCORE_NEW_PASSWORD`` reads from the terminal.
PASSWORD = "a long readme password"
#: Commands left out (by how they start), and why.
SKIPPED: dict[str, str] = {
    "make ": "a target of the checkout's Makefile (make test runs this suite itself)",
    "evalcore serve": "starts a server on the README's fixed port 8501; tests/test_serve.py and "
    "the browser tests start the same command on a free port",
    "EVALCORE_ALLOWED_HOSTS=": "starts a team server (evalcore serve) on the README's fixed port",
    "export OPENAI_API_KEY=": "needs a real API key",
    "evalcore judge run ": "sends requests to a hosted model: needs a key and the network",
    "evalcore judge estimate ": "names its endpoint as '...', for the reader to fill in",
    "createuser ": "needs a PostgreSQL server's admin tools",
    "export EVALCORE_DATABASE_URL=postgresql": "names a PostgreSQL server of the reader's",
}
#: Commands the README's text gives inline, outside a code block, that are run too.
INLINE = ("evalcore project export demo --out demo.zip",)


def shell_blocks(text: str) -> list[list[str]]:
    """The commands of each ``bash`` code block: continued lines joined, comments and blank
    lines left out."""
    blocks = []
    for match in re.finditer(r"^( *)```bash\n(.*?)^\1```", text, flags=re.S | re.M):
        indent = len(match.group(1))
        lines = [line[indent:] for line in match.group(2).splitlines()]
        commands: list[str] = []
        pending = ""
        for line in lines:
            pending += line.lstrip() if pending else line
            if pending.endswith("\\"):
                pending = pending[:-1].rstrip() + " "
                continue
            command, pending = pending.strip(), ""
            if command and not command.startswith("#"):
                commands.append(command)
        blocks.append(commands)
    return blocks


def skipped(command: str) -> str | None:
    """Why ``command`` is not run, or None."""
    return next((why for start, why in SKIPPED.items() if command.startswith(start)), None)


def _files(folder: Path) -> None:
    """The input files the README's commands name, in the layouts it describes."""
    rng = np.random.default_rng(7)
    n = 120
    truth = rng.integers(1, 6, n)

    def near(p: float) -> np.ndarray:  # the truth, off by one on a share p of the items
        off = rng.random(n) < p
        return np.clip(truth + np.where(off, rng.choice([-1, 1], n), 0), 1, 5)

    texts = {"prompt": [f"question {i}" for i in range(n)],
             "response": [f"answer number {i}" for i in range(n)]}  # fmt: skip
    pd.DataFrame({**texts, "fluency/human_rating": truth, "fluency/score": near(0.05)}).to_csv(
        folder / "results.csv", index=False
    )
    pd.DataFrame(
        {"item_id": [f"i{i}" for i in range(n)], **texts, "ann1": near(0.1), "ann2": near(0.1),
         "ann3": near(0.1), "judge": near(0.1), "notes": ["seen"] * n}
    ).to_csv(folder / "labels.csv", index=False)  # fmt: skip
    m = 600
    human = rng.random(m) < 0.6
    confidence = rng.uniform(0.5, 1.0, m)
    right = rng.random(m) < confidence
    judge = np.where(right, human, ~human)
    words = np.array(["fail", "pass"])
    pd.DataFrame({"human": words[human.astype(int)], "judge": words[judge.astype(int)],
                  "conf": confidence.round(3)}).to_csv(folder / "judged.csv", index=False)  # fmt: skip
    labelled = np.where(rng.random(m) < 0.2, words[human.astype(int)], "")
    pd.DataFrame({"human": labelled, "judge": words[judge.astype(int)]}).to_csv(
        folder / "big.csv", index=False
    )
    scores = [truth[:40].astype(float), near(0.2)[:40].astype(float)]
    scores[1][::7] += 0.5  # a few fractional scores, as SummEval's averaged experts give
    pd.DataFrame(
        {"id": [f"doc{i}" for i in range(40)], "prompt": [f"document {i}" for i in range(40)],
         "response": [f"summary {i}" for i in range(40)],
         "human_coherence_1": scores[0], "human_coherence_2": np.clip(scores[1], 1, 5)}
    ).to_csv(folder / "summeval.csv", index=False)  # fmt: skip


def _environment(folder: Path) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALCORE_")}
    return {
        **env,
        "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        "EVALCORE_DATABASE_URL": f"sqlite:///{folder / 'evalcore.sqlite'}",
        "EVALCORE_CACHE_DIR": str(folder / "cache"),
        "HOME": str(folder),
    }


def _run(commands: list[str], folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    script = "\n".join(
        ["set -eo pipefail", "trap 'echo \"README command failed: $BASH_COMMAND\" >&2' ERR",
         *commands]
    )  # fmt: skip
    return subprocess.run(
        ["bash", "-c", script],
        cwd=folder,
        env=env,
        input=f"{PASSWORD}\n",
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_the_extraction_joins_continued_lines_and_skips_comments() -> None:
    text = (
        "```bash\nmake run    # start\n# a comment\nevalcore a \\\n    --b c\n```\n"
        "   ```bash\n   evalcore d\n   ```\n```toml\nx = 1\n```\n"
    )
    assert shell_blocks(text) == [["make run    # start", "evalcore a --b c"], ["evalcore d"]]
    assert skipped("make run    # start") is not None
    assert skipped("evalcore calibrate x.csv") is None


def test_every_readme_command_runs_as_written(tmp_path: Path) -> None:
    _files(tmp_path)
    env = _environment(tmp_path)
    with Store.open(env["EVALCORE_DATABASE_URL"]) as store:
        ensure_demo(store)  # what the first start of the app does
    blocks = [[c for c in block if skipped(c) is None] for block in shell_blocks(
        README.read_text(encoding="utf-8"))]  # fmt: skip
    ran = [c for block in blocks for c in block]
    assert len(ran) >= 15, ran  # the README's commands were found
    for commands in [*blocks, list(INLINE)]:
        if not commands:
            continue
        done = _run(commands, tmp_path, env)
        assert done.returncode == 0, f"{done.stderr[-3000:]}\n(block: {commands})"
    assert (tmp_path / "report.html").stat().st_size > 10_000
    assert (tmp_path / "demo.zip").stat().st_size > 10_000
    with Store.open(env["EVALCORE_DATABASE_URL"]) as store:
        assert {u.name for u in store.list_users()} >= {"alice", "bob"}
        demo = store.get_project_by_name("Northwind support demo")
        assert {"labels", "summeval"} <= {d.name for d in store.list_datasets(demo.id)}
