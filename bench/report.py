"""Benchmark of evalcore.report: the self-contained HTML report of a 100 000-item dataset with 3 runs.

    python bench/report.py                  # a fresh SQLite file in a temporary folder
    python bench/report.py --items 20000    # smaller
    python bench/report.py --url postgresql+psycopg://user@host/empty_db
    python bench/report.py --confidence     # every verdict with a confidence and probabilities

Fills the database through the store's bulk APIs (save_dataset, import_labels, record_results), then
prints the time to load the calibration data, to compute the report, and to write the HTML file, and
its size (targets: written in under 5 s, under 10 MB). With ``--confidence`` every verdict also
carries its confidence and the probability of each label (as a run with logprobs stores them), and
the load is timed again, its read of the runs' results with and without the confidences (one
pass over each run's rows), and the load with every label's probability.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evalcore.labels import LIKERT_5
from evalcore.report import (
    build_report,
    calibrate_runs,
    disagreements,
    load_calibration_data,
    write_report,
)
from evalcore.report._load import _result_rows  # the runs' read, with and without confidences
from evalcore.store import JudgeResultInput, Store

TOPICS = np.array(["shipping", "returns", "warranty", "sizing", "gear advice", "product care"])
MODELS = np.array(["helper-small", "helper-large", "helper-xl"])


@dataclass(frozen=True)
class BigProject:
    project: str
    project_id: int
    dataset_id: int
    criterion_id: int
    run_ids: tuple[int, ...]


def _shares(guess: int, confidence: float) -> dict[str, float]:
    """A verdict's probabilities: ``confidence`` on its label, the rest spread over the others."""
    rest = (1.0 - confidence) / 4
    return {str(label): (confidence if label == guess else rest) for label in range(1, 6)}


def fill(
    store: Store, n: int, *, seed: int = 0, log: bool = True, confidence: bool = False
) -> BigProject:
    """A project with one n-item dataset, a 1-5 criterion, 3 annotators and 3 judge runs.

    Two annotators label every labelled item (90 % of them; a third annotator every tenth); each run
    labels every item (about 1 % unparsed, 0.5 % failed) with a reason and a raw reply.
    """
    rng = np.random.default_rng(seed)

    def say(message: str, start: float) -> None:
        if log:
            print(f"    {message}: {time.perf_counter() - start:6.2f} s")

    project = store.create_project(f"bench-{time.time_ns()}")
    criterion = store.create_criterion(project.id, "helpfulness", kind="pointwise", scale=LIKERT_5)
    ids = np.array([f"item-{i:06d}" for i in range(n)], dtype=object)
    topic = rng.choice(TOPICS, size=n)
    items = pd.DataFrame(
        {
            "item_id": ids,
            "prompt": [f"Question {i} about {topic[i]}?" for i in range(n)],
            "response": [f"Answer {i}: please see our {topic[i]} policy." for i in range(n)],
            "topic": topic,
            "source_model": rng.choice(MODELS, size=n),
        }
    )
    start = time.perf_counter()
    dataset = store.save_dataset(project.id, "big", items)
    say(f"save_dataset ({n:,} items)", start)

    truth = rng.integers(1, 6, size=n)
    labelled = rng.random(n) < 0.9
    rows = []
    for who, share in (("ana", 1.0), ("ben", 1.0), ("chloe", 0.1)):
        pick = labelled & (rng.random(n) < share)
        noise = rng.choice([-1, 0, 0, 0, 1], size=n)
        rows.append(
            pd.DataFrame(
                {
                    "item_id": ids[pick],
                    "annotator": who,
                    "label": np.clip(truth + noise, 1, 5)[pick],
                }
            )
        )
    labels = pd.concat(rows, ignore_index=True)
    start = time.perf_counter()
    store.import_labels(dataset.id, criterion.id, labels)
    say(f"import_labels ({len(labels):,} labels)", start)

    pks = store.items_frame(dataset.id).index.to_numpy()
    template = store.create_template(project.id, "helpfulness-judge", criterion.id)
    run_ids = []
    for k, spread in enumerate((1.2, 0.8, 0.6)):
        version = store.save_template_version(
            template.id, {"user": f"Rate the helpfulness (version {k + 1})."}, author="bench"
        )
        run = store.create_run(
            dataset.id,
            criterion.id,
            name=f"helpfulness v{k + 1}",
            model="bench-model",
            template_version_id=version.id,
        )
        guess = np.clip(np.rint(truth + rng.normal(0, spread, size=n)), 1, 5).astype(int)
        status = rng.choice(["ok", "unparsed", "failed"], p=[0.985, 0.01, 0.005], size=n)
        sure = rng.uniform(0.4, 1.0, size=n) if confidence else np.full(n, np.nan)
        start = time.perf_counter()
        store.record_results(
            run.id,
            (
                JudgeResultInput(
                    item_id=int(pks[i]),
                    status=str(status[i]),  # type: ignore[arg-type]
                    label=str(guess[i]) if status[i] == "ok" else None,
                    score=float(guess[i]) if status[i] == "ok" else None,
                    reason=f"The answer covers {guess[i]} of 5 points."
                    if status[i] == "ok"
                    else None,
                    raw=f'{{"score": {guess[i]}, "reason": "..."}}'
                    if status[i] != "failed"
                    else None,
                    error="timeout" if status[i] == "failed" else None,
                    confidence=float(sure[i]) if confidence and status[i] == "ok" else None,
                    probabilities=_shares(int(guess[i]), float(sure[i]))
                    if confidence and status[i] == "ok"
                    else None,
                )
                for i in range(n)
            ),
        )
        store.set_run_status(run.id, "done")
        say(f"record_results run {k + 1} ({n:,} results)", start)
        run_ids.append(run.id)
    return BigProject(project.name, project.id, dataset.id, criterion.id, tuple(run_ids))


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--url", help="an EMPTY database (default: a new SQLite file)")
    parser.add_argument("--keep", help="write the SQLite file here (and reuse it if it exists)")
    parser.add_argument(
        "--confidence",
        action="store_true",
        help="give every verdict a confidence and probabilities, and time reading them",
    )
    parser.add_argument("--repeats", type=int, default=3, help="timings of the confidence reads")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(args.keep) if args.keep else Path(folder) / "bench.sqlite"
        reuse = args.keep is not None and path.exists()
        url = args.url or f"sqlite:///{path}"
        store = Store.open(url)
        n = args.items
        print(f"evalcore.report benchmark on {store.dialect}, {n:,} items, 3 runs")
        if reuse:
            project = store.list_projects()[0]
            print(f"    reusing {path}")
        else:
            print("(setup) filling the database through the store's bulk APIs")
            big = fill(store, n, confidence=args.confidence)
            project = store.get_project(big.project_id)
        dataset = store.list_datasets(project.id)[0]
        criterion = store.list_criteria(project.id)[0]
        runs = [r.id for r in store.list_runs(dataset_id=dataset.id, criterion_id=criterion.id)]

        seconds, data = timed(
            lambda: load_calibration_data(store, dataset.id, criterion.id, sorted(runs))
        )
        print(f"(a) load_calibration_data (items, labels, 3 runs): {seconds:6.2f} s")
        if args.confidence:  # the fastest of --repeats, as the machine may be busy
            chosen = sorted(runs)
            steps = {
                "load_calibration_data again": lambda: load_calibration_data(
                    store, dataset.id, criterion.id, chosen
                ),
                "its read of the 3 runs' results": lambda: [
                    _result_rows(store, run, criterion.scale, confidence=True) for run in chosen
                ],
                "the same without the confidences": lambda: [
                    _result_rows(store, run, criterion.scale, confidence=False) for run in chosen
                ],
                "with every label's probability": lambda: load_calibration_data(
                    store, dataset.id, criterion.id, chosen, probabilities=True
                ),
            }
            for what, step in steps.items():
                best = min(timed(step)[0] for _ in range(max(1, args.repeats)))
                print(f"    {what + ':':<46} {best:6.2f} s (best of {args.repeats})")
        seconds, calibration = timed(lambda: calibrate_runs(data, policy="majority"))
        print(f"    calibrate_runs (3 reports, 2 comparisons, ceiling): {seconds:6.2f} s")
        seconds, _ = timed(lambda: calibrate_runs(data, policy="mean", ceiling=False))
        print(f"    calibrate_runs again, another policy:         {seconds:6.2f} s")
        seconds, table = timed(lambda: disagreements(calibration))
        print(f"    disagreements ({len(table):,} items):             {seconds:6.2f} s")

        out = Path(folder) / "report.html"
        seconds, _ = timed(
            lambda: write_report(out, build_report(store, project.id, criteria=[criterion.name]))
        )
        size = out.stat().st_size / 1e6
        print(
            f"(b) HTML report written: {seconds:6.2f} s   {size:5.2f} MB   (targets < 5 s, < 10 MB)"
        )
        seconds, _ = timed(
            lambda: write_report(
                out, build_report(store, project.id, criteria=[criterion.name], slice_by="topic")
            )
        )
        size = out.stat().st_size / 1e6
        print(f"    with slices by topic:  {seconds:6.2f} s   {size:5.2f} MB")
        store.close()


if __name__ == "__main__":
    main()
