"""Benchmark evalcore.metrics against a straightforward scikit-learn path.

For each row count, with 5 classes and string labels (object arrays, as a DataFrame column gives):

(a) evalcore: ``calibrate(human, judge, n_boot=0)`` - confusion matrix, balanced accuracy, weighted F1,
    accuracy, kappa and per-class metrics in one report;
(b) scikit-learn: ``confusion_matrix``, ``balanced_accuracy_score`` and ``f1_score(average="weighted")``
    on the same string arrays;
(c) 1,000 bootstrap resamples of balanced accuracy and weighted F1 from the count table
    (``resample_table`` + ``table_metric``), and the whole ``calibrate(..., n_boot=1000)``;
(d) peak memory of ``calibrate`` at the largest row count (tracemalloc, inputs excluded) and the
    process's maximum resident set size.

Times are the best of ``--repeats`` runs. Usage::

    python bench/metrics.py                      # 10^4, 10^5 and 10^6 rows
    python bench/metrics.py --quick              # 10^4 and 10^5 rows, one repeat
    python bench/metrics.py --rows 10000 1000000
"""

from __future__ import annotations

import argparse
import platform
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import sklearn
from sklearn import metrics as skm

import evalcore.metrics as em

LABELS = np.array(["excellent", "good", "fair", "poor", "bad"], dtype=object)


def make_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    human = LABELS[rng.integers(0, len(LABELS), n)]
    judge = np.where(rng.random(n) < 0.7, human, LABELS[rng.integers(0, len(LABELS), n)])
    return human, judge


def best_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def sklearn_path(human: np.ndarray, judge: np.ndarray) -> tuple[np.ndarray, float, float]:
    cm = skm.confusion_matrix(human, judge)
    ba = skm.balanced_accuracy_score(human, judge)
    f1 = skm.f1_score(human, judge, average="weighted")
    return cm, float(ba), float(f1)


def bootstrap_from_table(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    draws = em.resample_table(table, n_boot=1000, seed=0)
    return em.table_metric(draws, "accuracy_balanced"), em.table_metric(draws, "f1_score_balanced")


def peak_memory_mb(fn: Callable[[], Any]) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    parser.add_argument("--quick", action="store_true", help="10^4 and 10^5 rows, one repeat")
    args = parser.parse_args(argv)
    rows = [10_000, 100_000] if args.quick else args.rows
    repeats = 1 if args.quick else max(1, args.repeats)

    print(
        f"evalcore.metrics benchmark - Python {platform.python_version()}, numpy {np.__version__}, "
        f"scikit-learn {sklearn.__version__}, {platform.machine()}, best of {repeats}"
    )
    print("5 classes, string labels (object arrays), 70% agreement\n")
    header = (
        "| rows | evalcore calibrate(n_boot=0) | sklearn cm + BA + F1 | speed-up | "
        "1,000 resamples BA + F1 | calibrate(n_boot=1000) |"
    )
    print(header)
    print("|" + "---:|" * 6)
    for n in rows:
        human, judge = make_data(n)
        t_ours, report = best_time(lambda h=human, j=judge: em.calibrate(h, j, n_boot=0), repeats)
        t_sk, (cm, ba, f1) = best_time(lambda h=human, j=judge: sklearn_path(h, j), repeats)
        same = (
            np.array_equal(report.confusion_matrix, cm)
            and abs(report.accuracy_balanced - ba) < 1e-12
            and abs(report.f1_score_balanced - f1) < 1e-12
        )
        if not same:
            print(f"results differ at {n} rows", file=sys.stderr)
            return 1
        table = np.asarray(report.confusion_matrix)
        t_boot, _ = best_time(lambda t=table: bootstrap_from_table(t), repeats)
        t_full, _ = best_time(lambda h=human, j=judge: em.calibrate(h, j, n_boot=1000), repeats)
        print(
            f"| {n:,} | {t_ours:.3f} s | {t_sk:.3f} s | {t_sk / t_ours:.0f}x | "
            f"{t_boot * 1000:.1f} ms | {t_full:.3f} s |"
        )

    largest = max(rows)
    human, judge = make_data(largest)
    peak0 = peak_memory_mb(lambda: em.calibrate(human, judge, n_boot=0))
    peak1 = peak_memory_mb(lambda: em.calibrate(human, judge, n_boot=1000))
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(
        f"\npeak memory at {largest:,} rows (tracemalloc, inputs excluded): calibrate(n_boot=0) "
        f"{peak0:.0f} MiB, calibrate(n_boot=1000) {peak1:.0f} MiB; "
        f"process max RSS {max_rss:.0f} MiB (includes the scikit-learn runs and the data)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
