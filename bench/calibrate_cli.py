"""``evalcore calibrate`` on a 10⁶-row, 5-class Parquet file, as a whole process, against Vertex AI's
``evaluate_autorater`` computing the same table in a warm process.

Run: ``.venv/bin/python bench/calibrate_cli.py`` (a few minutes the first time: it builds a throw-away
virtual environment with ``google-cloud-aiplatform[evaluation]``; ``--vertex-venv DIR`` keeps and
reuses one, ``--rows N`` and ``--runs N`` change the size and the repeats).

The file is Vertex's own pointwise layout (``item_id``, ``quality/human_rating``, ``quality/score``,
integers 1–5, 70 % of the judge's scores copied from the human's, the rest uniform; seed 0).

- evalcore: ``evalcore calibrate FILE --json`` as a new process each time (interpreter start,
  imports, reading the file, the duplicate-id check, every metric), with its default 1,000 bootstrap
  resamples and with ``--n-boot 0``; and the same command of the tree at ``--baseline`` (the commit
  before issue 9) for the before/after;
- Vertex: ``vertexai.preview.evaluation.autorater_utils.evaluate_autorater`` with one
  ``PointwiseMetric("quality")`` over the same DataFrame, in a process that has already imported the
  SDK and scikit-learn and read the file; only the call is timed (a new such process per round).

The measurements alternate, round by round (Vertex, evalcore, evalcore --n-boot 0, the baseline
tree), after one untimed warm-up of each, so that a shared machine's drift hits every side alike. It computes balanced accuracy,
  weighted F1 and the confusion matrix (scikit-learn over ``str(float(x))`` labels).

Both sides' balanced accuracy and weighted F1 are printed, and must agree. Target (issues 9 and 21):
evalcore's whole process at least 3× faster than Vertex's warm call.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from _common import EVALCORE, baseline_tree, describe, run_seconds, via_tree

BASELINE = "39ba631"
VERTEX_PACKAGES = ["google-cloud-aiplatform[evaluation]", "pyarrow"]

#: Runs inside the throw-away environment: read the file, import everything, then time the calls.
VERTEX_SCRIPT = """
import json, sys, time
import pandas as pd
import sklearn.metrics  # imported on the first call otherwise; a warm process has it
from vertexai.preview.evaluation import autorater_utils
from vertexai.preview.evaluation.metrics import PointwiseMetric

frame = pd.read_parquet(sys.argv[1])
metric = PointwiseMetric(metric="quality", metric_prompt_template="Rate the response: {response}")
times, result = [], None
for _ in range(int(sys.argv[2])):
    started = time.perf_counter()
    result = autorater_utils.evaluate_autorater(evaluate_autorater_input=frame, eval_metrics=[metric])
    times.append(time.perf_counter() - started)
row = result.eval_result[0]
print(json.dumps({
    "times": times,
    "accuracy_balanced": float(row["accuracy_balanced"]),
    "f1_score_balanced": float(row["f1_score_balanced"]),
    "labels": list(row["confusion_matrix_labels"]),
    "version": __import__("google.cloud.aiplatform", fromlist=["__version__"]).__version__,
}))
"""


def write_file(path: Path, rows: int) -> None:
    rng = np.random.default_rng(0)
    human = rng.integers(1, 6, rows)
    judge = np.where(rng.random(rows) < 0.7, human, rng.integers(1, 6, rows))
    frame = pd.DataFrame(
        {
            "item_id": [f"item-{i:07d}" for i in range(rows)],
            "quality/human_rating": human,
            "quality/score": judge,
        }
    )
    frame.to_parquet(path, index=False)


def vertex_python(folder: Path) -> Path:
    """A virtual environment with the Vertex SDK (created once per folder, never a dependency)."""
    python = folder / "bin" / "python"
    if not (folder / ".complete").exists():
        print(f"installing {' '.join(VERTEX_PACKAGES)} into {folder} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(folder)], check=True)
        pip = [str(python), "-m", "pip", "--disable-pip-version-check", "install", "-qq"]
        subprocess.run([*pip, *VERTEX_PACKAGES], check=True)
        (folder / ".complete").touch()
    return python


def vertex(python: Path, data: Path, runs: int) -> dict[str, object]:
    done = subprocess.run(
        [str(python), "-c", VERTEX_SCRIPT, str(data), str(runs)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the Vertex script failed:\n{done.stderr[-3000:]}")
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def evalcore_numbers(data: Path) -> dict[str, float]:
    out = subprocess.run(
        [EVALCORE, "calibrate", str(data), "--json", "--n-boot", "0"],
        capture_output=True,
        text=True,
        check=True,
    )
    record = json.loads(out.stdout.splitlines()[0])
    return {k: float(record[k]) for k in ("accuracy_balanced", "f1_score_balanced")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--vertex-venv", type=Path, help="keep the Vertex environment here")
    parser.add_argument("--baseline", default=BASELINE, help="git revision to compare with")
    parser.add_argument(
        "--no-baseline", action="store_true", help="leave out the run of the --baseline tree"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evalcore-bench-") as folder:
        tmp = Path(folder)
        data = tmp / "calibrate.parquet"
        write_file(data, args.rows)
        print(
            f"python {sys.version.split()[0]}; {args.rows:,} rows, 5 classes, Parquet "
            f"{data.stat().st_size / 1e6:.1f} MB; {args.runs} runs each"
        )
        old = baseline_tree(args.baseline, tmp / "baseline")
        venv = args.vertex_venv or tmp / "vertex-venv"
        command = ["calibrate", str(data), "--json"]
        try:
            python = vertex_python(venv)
            # one warm-up of each, untimed (disk cache, .pyc files)
            vertex(python, data, 1)
            run_seconds([EVALCORE, *command])
            # alternating rounds: a busy machine's drift hits every side alike
            vertex_times: list[float] = []
            with_ci: list[float] = []
            no_ci: list[float] = []
            before: list[float] = []
            for _ in range(args.runs):
                theirs = vertex(python, data, 2)  # the second call of a warm process is timed
                vertex_times.append(float(theirs["times"][-1]))  # type: ignore[index]
                with_ci.append(run_seconds([EVALCORE, *command]))
                no_ci.append(run_seconds([EVALCORE, *command, "--n-boot", "0"]))
                if not args.no_baseline:
                    before.append(run_seconds(via_tree(old, [*command, "--n-boot", "0"])))
        finally:
            if args.vertex_venv is None:
                shutil.rmtree(venv, ignore_errors=True)
        ours = evalcore_numbers(data)
    v = statistics.median(vertex_times)
    print(f"Vertex evaluate_autorater, warm process (aiplatform {theirs['version']}):")
    print(f"    {describe(vertex_times)}")
    print("evalcore calibrate --json, whole process:")
    print(
        f"    1,000 resamples (default): {describe(with_ci)} -> {v / statistics.median(with_ci):.1f}x"
    )
    print(
        f"    --n-boot 0:                {describe(no_ci)} -> {v / statistics.median(no_ci):.1f}x"
    )
    if before:
        print(f"    --n-boot 0 at {args.baseline}:     {describe(before)}")
    print("same numbers:")
    for key in ("accuracy_balanced", "f1_score_balanced"):
        mine, vert = ours[key], float(theirs[key])  # type: ignore[arg-type]
        print(f"    {key}: evalcore {mine:.12f}, Vertex {vert:.12f}, |diff| {abs(mine - vert):.1e}")
    print(f"    Vertex's confusion_matrix_labels: {theirs['labels']}")


if __name__ == "__main__":
    main()
