"""Benchmark of the Alternative Annotator Test: 10^4 items x 10 annotators (target < 1 s).

    python bench/alt_test.py                  # 10,000 items, 10 annotators, best of 5
    python bench/alt_test.py --items 100000   # larger
    python bench/alt_test.py --repeats 1

The data: a 1-5 ordinal truth per item; each annotator labels 60 % of the items (so every item has
about 6 labels, some fewer) with noise of one step 40 % of the time; the judge is off by one step
30 % of the time. It prints, best of ``--repeats``:

(a) ``alt_test(humans, judge)`` with ``accuracy`` and with ``neg_rmse`` scoring (raw labels in a
    DataFrame: encoding, the win cube, the t-tests and the BY correction);
(b) ``alt_test_curve`` over the 31 epsilons of the Calibrate page's chart (0 to 0.3 by 0.01).
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from evalcore.metrics import alt_test, alt_test_curve


def make_data(items: int, annotators: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, items)
    noise = rng.integers(-1, 2, (items, annotators)) * (rng.random((items, annotators)) < 0.4)
    labels = np.clip(truth[:, None] + noise, 1, 5).astype(float)
    labels[rng.random((items, annotators)) < 0.4] = np.nan
    judge = np.clip(truth + rng.integers(-1, 2, items) * (rng.random(items) < 0.3), 1, 5)
    frame = pd.DataFrame(labels, columns=[f"annotator_{k}" for k in range(annotators)])
    return frame, judge.astype(float)


def best_of(repeats: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--annotators", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    humans, judge = make_data(args.items, args.annotators)
    print(
        f"python {platform.python_version()}, {args.items:,} items x {args.annotators} annotators"
    )
    for scoring in ("accuracy", "neg_rmse"):
        seconds, result = best_of(
            args.repeats, lambda s=scoring: alt_test(humans, judge, scoring=s)
        )
        print(
            f"alt_test scoring={scoring:8s}: {seconds:.3f} s  (winning rate "
            f"{result.winning_rate:.2f}, advantage {result.advantage_probability:.2f}, "
            f"{len(result.tested)} tested)"
        )
    seconds, curve = best_of(
        args.repeats, lambda: alt_test_curve(humans, judge, scoring="neg_rmse")
    )
    print(f"alt_test_curve, {len(curve)} epsilons, neg_rmse: {seconds:.3f} s")


if __name__ == "__main__":
    main()
