"""``evalcore judge run`` over 1,000 items against the fake endpoint (0.5 s latency, concurrency 32),
as a whole process, against a plain ``AsyncOpenAI`` + ``asyncio.Semaphore`` script sending the same
requests; then the same command again with another ``--out``.

Run: ``.venv/bin/python bench/judge_cli.py`` (about a minute; ``--items N``, ``--latency S``).

- The fake OpenAI-compatible server (``python -m evalcore.testing.fake_openai --latency 0.5``) runs
  in its own process and counts the requests it receives.
- evalcore: ``evalcore judge run DATA.jsonl --template T.toml --model fake-judge --base-url URL
  --out first.jsonl --concurrency 32`` with an empty reply cache (``EVALCORE_CACHE_DIR`` points at
  a fresh folder), timed from process start to exit.
- baseline: a script of a dozen lines (below) that reads the same rendered request bodies and sends
  them with one ``AsyncOpenAI`` client behind a 32-slot ``asyncio.Semaphore``, also a whole process.
- ideal: 32 requests in flight every 0.5 s = 64 requests/s; the share of it is ideal time / time.
- second run: the same command with ``--out second.jsonl``: it should send 0 requests (the reply
  cache is shared by every run, whatever ``--out`` is).

Targets (issue 9): evalcore at least as fast as the plain script, at least 85 % of the ideal rate,
and 0 requests on the second run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from _common import EVALCORE, FLUENCY, FakeServer, run_seconds

from evalcore.judge import render

TEMPLATE = FLUENCY

PLAIN_SCRIPT = """
import asyncio, json, sys
from openai import AsyncOpenAI

async def main(base_url, bodies_path, out_path, concurrency):
    with open(bodies_path) as handle:
        bodies = json.load(handle)
    client = AsyncOpenAI(base_url=base_url, api_key="none", max_retries=2, timeout=60.0)
    gate = asyncio.Semaphore(concurrency)

    async def one(item_id, body):
        async with gate:
            reply = await client.chat.completions.create(**body)
        return {"item_id": item_id, "raw": reply.choices[0].message.content}

    rows = await asyncio.gather(*(one(item_id, body) for item_id, body in bodies))
    with open(out_path, "w") as handle:
        handle.writelines(json.dumps(row) + "\\n" for row in rows)
    await client.close()

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
"""


def items(n: int) -> list[dict[str, object]]:
    return [
        {
            "item_id": f"item-{i:05d}",
            "prompt": f"Question number {i} about topic {i % 17}?",
            "response": f"An answer of moderate length for item {i}. " * 3,
            "gold": 1 + i % 5,
        }
        for i in range(n)
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    ideal_rate = args.concurrency / args.latency
    print(
        f"python {sys.version.split()[0]}; {args.items} items, latency {args.latency} s, "
        f"concurrency {args.concurrency}: ideal {ideal_rate:.0f} requests/s "
        f"({args.items / ideal_rate:.2f} s)"
    )
    with tempfile.TemporaryDirectory(prefix="evalcore-bench-") as folder:
        tmp = Path(folder)
        rows = items(args.items)
        data = tmp / "items.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        template = tmp / "fluency.toml"
        template.write_text(TEMPLATE.to_toml(), encoding="utf-8")
        bodies = [
            (
                str(r["item_id"]),
                {
                    "model": "fake-judge",
                    "messages": render(TEMPLATE, r, item_id=str(r["item_id"])),
                    "temperature": 0.0,
                    "max_tokens": 512,
                },
            )
            for r in rows
        ]
        (tmp / "bodies.json").write_text(json.dumps(bodies), encoding="utf-8")
        server = FakeServer("--latency", str(args.latency))
        try:
            plain, first, second = [], [], []
            for repeat in range(args.repeats):
                # each repeat: the plain script, then evalcore with a fresh (empty) shared cache,
                # then evalcore again with another --out
                env = {"EVALCORE_CACHE_DIR": str(tmp / f"cache-{repeat}")}
                plain.append(_counted(server, [sys.executable, "-c", PLAIN_SCRIPT, server.base_url,
                                               str(tmp / "bodies.json"), str(tmp / "plain.jsonl"),
                                               str(args.concurrency)], {}))  # fmt: skip
                judge = [EVALCORE, "judge", "run", str(data), "--template", str(template),
                         "--model", "fake-judge", "--base-url", server.base_url,
                         "--concurrency", str(args.concurrency)]  # fmt: skip
                first.append(
                    _counted(server, [*judge, "--out", str(tmp / f"a{repeat}.jsonl")], env)
                )
                second.append(
                    _counted(server, [*judge, "--out", str(tmp / f"b{repeat}.jsonl")], env)
                )
            lines = sum(1 for _ in (tmp / f"b{args.repeats - 1}.jsonl").open())
        finally:
            server.close()
    print(f"{args.repeats} repeats, alternating; medians (every run's seconds last)")
    for name, runs in (
        ("plain AsyncOpenAI + Semaphore script", plain),
        ("evalcore judge run (empty cache)", first),
    ):
        seconds = statistics.median(t for t, _ in runs)
        rate = args.items / seconds
        print(
            f"{name:38s} {seconds:6.2f} s  {rate:5.1f} items/s = {100 * rate / ideal_rate:5.1f} % "
            f"of ideal  (requests {sorted({n for _, n in runs})}; "
            f"{', '.join(f'{t:.2f}' for t, _ in runs)})"
        )
    ratio = statistics.median(t for t, _ in plain) / statistics.median(t for t, _ in first)
    print(f"evalcore vs the plain script: {ratio:.2f}x as fast")
    print(
        f"second run, another --out: median {statistics.median(t for t, _ in second):.2f} s, "
        f"requests {[n for _, n in second]}, {lines} result lines"
    )


def _counted(server: FakeServer, command: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Seconds of one whole process and the requests the server received meanwhile."""
    before = len(server.requests())
    seconds = run_seconds(command, env=env)
    return seconds, len(server.requests()) - before


if __name__ == "__main__":
    main()
