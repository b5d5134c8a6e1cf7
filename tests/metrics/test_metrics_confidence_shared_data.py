"""The confidence statistics on real data: SummEval's three LLM judges as a jury (skipped when
../shared/datasets is absent).

The jury's label is the majority of GPT-4, GPT-3.5 and Llama-2-70b (ties: the median) and its
confidence the share of the three that gave it, the way a panel of judges votes (Verga et al.
2024); the humans' label is the experts' majority (ties: the median).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalcore.metrics as m

pytestmark = pytest.mark.shared_data

JUDGES = ("gpt4", "gpt35", "llama2_70b")


def _vote(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Majority (ties: median, rounded half up) of the rows of a whole-number matrix (NaN = none),
    and the share of non-missing raters giving it."""
    values = frame.to_numpy(dtype=float)
    label = np.full(len(values), np.nan)
    share = np.full(len(values), np.nan)
    for i, row in enumerate(values):
        row = row[~np.isnan(row)]
        if row.size == 0:
            continue
        found, counts = np.unique(row, return_counts=True)
        top = found[counts == counts.max()]
        label[i] = top[0] if top.size == 1 else math.floor(float(np.median(row)) + 0.5)
        share[i] = float(np.mean(row == label[i]))
    return label, share


@pytest.fixture(scope="module")
def jury(shared_datasets: Path) -> pd.DataFrame:
    raw = pd.read_csv(shared_datasets / "summeval_llm_judges" / "summeval_llm_judges.csv")
    members = pd.DataFrame({j: np.floor(raw[f"judge_{j}_relevance"] + 0.5) for j in JUDGES})
    complete = members.notna().all(axis=1)  # three votes: confidences 1/3, 2/3 or 1
    members, raw = members[complete].reset_index(drop=True), raw[complete].reset_index(drop=True)
    human, _ = _vote(raw[[f"human_relevance_{k}" for k in (1, 2, 3)]])
    label, share = _vote(members)
    return pd.DataFrame({"human": human, "jury": label, "conf": share, **members})


def test_the_jury_confidence_on_summeval(jury: pd.DataFrame) -> None:
    h, j, c = jury["human"], jury["jury"], jury["conf"]
    bins = m.reliability_bins(h, j, c, n_bins=3)
    # a jury of three has confidences 1/3, 2/3 and 1: with B = 3 they fall in bins
    # floor(1/3 * 3) = 1, floor(2/3 * 3) = 2 and min(3, 2) = 2
    assert set(c.round(6)) <= {round(1 / 3, 6), round(2 / 3, 6), 1.0}
    assert bins.counts[0] == 0
    keep = h.notna() & j.notna()
    for b, members in ((1, [1 / 3]), (2, [2 / 3, 1.0])):
        rows = keep & c.isin(members)
        assert bins.counts[b] == int(rows.sum())
        assert bins.agreement[b] == pytest.approx(float((h[rows] == j[rows]).mean()))
    assert m.expected_calibration_error(h, j, c, n_bins=3) == pytest.approx(bins.ece)
    # an LLM jury on SummEval relevance agrees with experts far less often than it says
    assert bins.gaps[2] > 0.2


def test_trust_or_escalate_and_label_next_on_summeval(jury: pd.DataFrame) -> None:
    h, j, c = jury["human"].to_numpy(), jury["jury"].to_numpy(), jury["conf"].to_numpy()
    dev = np.arange(len(h)) % 2 == 0
    chosen = m.selective_threshold(h[dev], j[dev], c[dev], target=0.5, risk=0.05)
    for candidate in chosen.candidates:
        if candidate.outcome == "passed":
            assert candidate.lower_bound is not None
            assert candidate.lower_bound >= 0.5
    # labelling next: where the jury is split, with its members as the reason
    hidden = h.copy()
    hidden[~dev] = np.nan
    members = jury[list(JUDGES)]
    proposal = m.label_next(hidden, j, n=20, y_members=members, n_sim=5, n_boot=100)
    assert len(proposal.items) == 20
    assert all(not dev[c.position] for c in proposal.items)
    assert all("the jury is split" in c.reason for c in proposal.items)
    assert all(jury["conf"].iloc[c.position] < 1 for c in proposal.items)
