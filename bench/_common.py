"""What the benchmark scripts share: the fake endpoint as a process, timing of whole commands, ports,
and the synthetic item tables."""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from evalcore.judge import JudgeTemplate
from evalcore.labels import LIKERT_5

ROOT = Path(__file__).resolve().parent.parent
# A script runs as ``python bench/NAME.py``: make the repository's ``ui`` and ``tests`` importable too.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
#: The ``evalcore`` console script of the interpreter running the benchmark.
EVALCORE = str(Path(sys.executable).with_name("evalcore"))


#: The judge benchmarks' template: the fake endpoint answers the score named by ``expect=``.
FLUENCY = JudgeTemplate(
    name="bench-fluency",
    criterion="fluency",
    scale=LIKERT_5,
    system="You rate how fluent a response reads, from 1 (broken) to 5 (effortless).",
    user=(
        "Question: {{ prompt }}\n\nResponse: {{ response }}\n\n"
        'Reply as JSON: {"reason": "<one sentence>", "score": <1-5>}\n'
        "(bench marker expect={{ gold }})"
    ),
)


def baseline_tree(ref: str, folder: Path) -> Path:
    """The ``evalcore`` package as it was at git revision ``ref``, unpacked below ``folder``."""
    archive = subprocess.run(
        ["git", "archive", ref, "evalcore"], cwd=ROOT, capture_output=True, check=True
    )
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def via_tree(tree: Path, argv: Sequence[str]) -> list[str]:
    """A command that runs ``evalcore ARGV`` from the package in ``tree`` (same interpreter)."""
    code = (
        f"import sys; sys.path.insert(0, {str(tree)!r}); from evalcore.cli import main; "
        f"raise SystemExit(main({list(argv)!r}))"
    )
    return [sys.executable, "-c", code]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class FakeServer:
    """``python -m evalcore.testing.fake_openai`` in its own process (its work never shares the
    measured interpreter); ``args`` are its options, e.g. ``--latency 0.5``."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "evalcore.testing.fake_openai", "--port", "0", *args],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("READY "):
            self.proc.kill()
            raise RuntimeError(f"fake server did not start: {line!r}")
        self.base_url = line.split()[1]

    def requests(self) -> list[dict[str, object]]:
        """Every request the server has recorded so far."""
        root = self.base_url.rsplit("/v1", 1)[0]
        with urllib.request.urlopen(f"{root}/_fake/requests", timeout=30) as response:
            data: list[dict[str, object]] = json.load(response)
            return data

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def run_seconds(
    command: Sequence[str], *, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> float:
    """Wall-clock seconds of one whole process (start-up included); its output is discarded."""
    started = time.perf_counter()
    done = subprocess.run(
        list(command),
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr[-2000:]}")
    return elapsed


def timings(command: Sequence[str], runs: int, **kwargs: object) -> list[float]:
    """``runs`` timings of a whole command, after one untimed run that warms the disk cache."""
    run_seconds(command, **kwargs)  # type: ignore[arg-type]
    return [run_seconds(command, **kwargs) for _ in range(runs)]  # type: ignore[arg-type]


def describe(times: Sequence[float]) -> str:
    """``median 0.123 s (min 0.110, max 0.150, 9 runs)``."""
    return (
        f"median {statistics.median(times):.3f} s (min {min(times):.3f}, max {max(times):.3f}, "
        f"{len(times)} runs)"
    )


def text_items(
    n: int, words: Sequence[str], *, words_per_text: int, reference: bool = False, seed: int = 0
) -> tuple[pd.DataFrame, np.random.Generator]:
    """``n`` items (``item_id``, ``prompt``, ``response``, ``context``, and ``reference`` when asked)
    drawn from 1,000 texts of random ``words``; the generator comes back for columns a benchmark
    adds."""
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(list(words), size=words_per_text)) for _ in range(1000)]
    columns = {
        "item_id": [f"item-{i:06d}" for i in range(n)],
        "prompt": [f"Question {i}: {texts[i % 1000][:80]}?" for i in range(n)],
        "response": [texts[(i * 7) % 1000] for i in range(n)],
        "context": [texts[(i * 13) % 1000] for i in range(n)],
    }
    if reference:
        columns["reference"] = [texts[(i * 17) % 1000] for i in range(n)]
    return pd.DataFrame(columns), rng
