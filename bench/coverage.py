"""How often the intervals of Cohen's kappa cover the truth at small n: the percentile bootstrap,
irrCAC's analytic t interval and the BCa bootstrap evalcore reports, on seeded multinomial tables.

Run: ``.venv/bin/python bench/coverage.py`` (a minute or two; ``--tables N``, ``--n N``).

Two 3 x 3 populations (a moderate and a strong agreement, the second with one dominant label), n
items drawn from each, 1,000 resamples per interval. A 95 % interval should miss about 2.5 % on
each side; "below" counts the tables whose interval lies above the truth.
"""

from __future__ import annotations

import argparse

import numpy as np

from evalcore.metrics import CalibrationReport
from evalcore.metrics._bootstrap import multinomial_tables, percentile_interval
from evalcore.metrics._table import kappa_table

POPULATIONS = {
    "moderate": np.array([[0.30, 0.06, 0.01], [0.05, 0.25, 0.05], [0.01, 0.07, 0.20]]),
    "strong, one label dominant": np.array(
        [[0.62, 0.04, 0.00], [0.03, 0.17, 0.02], [0.00, 0.02, 0.10]]
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", type=int, default=2000)
    parser.add_argument("--n", type=int, default=40)
    args = parser.parse_args()
    for name, population in POPULATIONS.items():
        truth = float(kappa_table(population))
        rng = np.random.default_rng(0)
        misses = {"percentile bootstrap": [0, 0], "analytic (irrCAC)": [0, 0], "BCa": [0, 0]}
        for i in range(args.tables):
            table = rng.multinomial(args.n, population.ravel()).reshape(3, 3)
            draws = multinomial_tables(table, 1000, np.random.default_rng(i))
            found = {
                "percentile bootstrap": percentile_interval(kappa_table(draws), 0.95),
                "analytic (irrCAC)": CalibrationReport.from_counts(
                    table, labels=[1, 2, 3], n_boot=0
                ).ci["cohen_kappa"],
                "BCa": CalibrationReport.from_counts(table, labels=[1, 2, 3], seed=i).ci[
                    "cohen_kappa"
                ],
            }
            for method, (low, high) in found.items():
                misses[method][0] += truth < low
                misses[method][1] += truth > high
        print(f"{name}: kappa {truth:.4f}, n = {args.n}, {args.tables} tables")
        for method, (below, above) in misses.items():
            share = 100.0 / args.tables
            print(
                f"    {method:22s} coverage {100 - (below + above) * share:5.1f} %  "
                f"(misses {below * share:4.2f} % below, {above * share:4.2f} % above)"
            )


if __name__ == "__main__":
    main()
