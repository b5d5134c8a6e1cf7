"""``evalcore judge run --batch`` over 100,000 items against the fake endpoint's Batch API (batches
complete at once), as a whole process: wall time and peak memory, beside a live run.

Run: ``.venv/bin/python bench/batch_run.py`` (a few minutes; ``--items N``, ``--live-items N``).

- The fake OpenAI-compatible server (``python -m evalcore.testing.fake_openai --no-record``) runs in
  its own process; a batch completes on its first retrieve, so the time measured is evalcore's own:
  rendering and writing the batch files (two of 50,000 requests), uploading them, creating and
  polling the batches, downloading the output files and importing every reply through the normal
  runner into ``--out`` and the reply cache (a fresh one per run).
- Command: ``evalcore judge run DATA.jsonl --template T.toml --model fake-judge --base-url URL
  --out OUT.jsonl --batch --batch-poll 0``, timed from process start to exit; its peak resident
  memory is ``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` read by a small wrapper process
  around the one command, so nothing else is counted.
- Baseline: the same command without ``--batch`` (live requests, concurrency 32, no latency) over
  the first ``--live-items`` items (10,000 by default: 100,000 live requests take minutes on this
  machine), scaled to ``--items`` linearly.

Targets (issue 12): the whole batch run under 60 s and under 1 GB of memory.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import EVALCORE, FLUENCY, ROOT, FakeServer

MEASURE = """
import resource, subprocess, sys, time
started = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
elapsed = time.perf_counter() - started
if done.returncode != 0:
    sys.stderr.write(done.stderr[-3000:])
    sys.exit(done.returncode)
print(elapsed, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def items(n: int) -> list[dict[str, object]]:
    return [
        {
            "item_id": f"item-{i:06d}",
            "prompt": f"Question number {i} about topic {i % 17}?",
            "response": f"An answer of moderate length for item {i}. " * 3,
            "gold": 1 + i % 5,
        }
        for i in range(n)
    ]


def measure(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds and peak resident MiB of one whole process."""
    import os

    done = subprocess.run(
        [sys.executable, "-c", MEASURE, *command],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr}")
    seconds, kib = done.stdout.split()
    return float(seconds), int(kib) / 1024


def lines(path: Path) -> tuple[int, int]:
    """Result lines and how many of them are ``ok``."""
    total = ok = 0
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            total += 1
            ok += json.loads(line)["status"] == "ok"
    return total, ok


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--live-items", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}; {args.items:,} items in batch mode")
    with tempfile.TemporaryDirectory(prefix="evalcore-bench-") as folder:
        tmp = Path(folder)
        data = tmp / "items.jsonl"
        with data.open("w", encoding="utf-8") as handle:
            for row in items(args.items):
                handle.write(json.dumps(row) + "\n")
        template = tmp / "fluency.toml"
        template.write_text(FLUENCY.to_toml(), encoding="utf-8")
        server = FakeServer("--no-record")
        try:
            judge = [EVALCORE, "judge", "run", str(data), "--template", str(template),
                     "--model", "fake-judge", "--base-url", server.base_url]  # fmt: skip
            started = time.perf_counter()
            batch_s, batch_mib = measure(
                [*judge, "--out", str(tmp / "batch.jsonl"), "--batch", "--batch-poll", "0"],
                {"EVALCORE_CACHE_DIR": str(tmp / "cache-batch")},
            )
            print(f"(batch run measured in {time.perf_counter() - started:.1f} s)")
            total, ok = lines(tmp / "batch.jsonl")
            live = ["--limit", str(args.live_items), "--concurrency", str(args.concurrency)]
            live_s, live_mib = measure(
                [*judge, "--out", str(tmp / "live.jsonl"), *live],
                {"EVALCORE_CACHE_DIR": str(tmp / "cache-live")},
            )
            live_total, live_ok = lines(tmp / "live.jsonl")
        finally:
            server.close()
    scale = args.items / args.live_items
    print(
        f"batch mode, {args.items:,} items: {batch_s:6.1f} s, peak RSS {batch_mib:6.0f} MiB, "
        f"{args.items / batch_s:7.0f} items/s; {total:,} result lines, {ok:,} ok"
    )
    print(
        f"live run, first {args.live_items:,} items (concurrency {args.concurrency}, no latency): "
        f"{live_s:6.1f} s, peak RSS {live_mib:6.0f} MiB, {args.live_items / live_s:7.0f} items/s; "
        f"{live_total:,} lines, {live_ok:,} ok; scaled to {args.items:,} items: "
        f"{live_s * scale:6.1f} s"
    )
    print(
        f"targets: under 60 s: {'met' if batch_s < 60 else 'MISSED'}; under 1 GB: "
        f"{'met' if batch_mib < 1024 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
