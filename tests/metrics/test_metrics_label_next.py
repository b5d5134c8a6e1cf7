"""What to label next: the ranking, the test part left alone, slices, and what a batch buys."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from evalcore.errors import MetricError
from evalcore.metrics import bootstrap_ci, label_next


def _world(n: int = 600, labelled: int = 150, seed: int = 0):
    """A 1-3 scale; the judge is right with probability equal to its confidence; the first
    ``labelled`` items have a human label."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 4, n)
    conf = rng.uniform(0.34, 1.0, n)
    right = rng.random(n) < conf
    judge = np.where(right, truth, truth % 3 + 1)
    human = truth.astype(float)
    human[labelled:] = np.nan
    return human, judge, conf


def test_the_most_uncertain_items_come_first_with_their_reason() -> None:
    human = [1, 2, 1, 2, None, None, None, None]
    judge = [1, 2, 2, 2, 1, 2, 1, 2]
    conf = [0.9, 0.9, 0.6, 0.8, 0.5, 0.95, 0.7, None]
    got = label_next(human, judge, n=3, metric="accuracy", y_conf=conf, n_sim=5, n_boot=50)
    # scores 4q(1-q): item 4 (q 0.5) -> 1.0; item 6 (q 0.7) -> 0.84; item 7 has no confidence:
    # q from the table so far, P(human 2 | judge 2) = (2 + 0.5) / (3 + 1) = 0.625 -> 0.9375;
    # item 5 (q 0.95) -> 0.19
    assert got.item_ids == ("4", "7", "6")
    assert [c.score for c in got.items] == pytest.approx([1.0, 0.9375, 0.84])
    assert [c.rank for c in got.items] == [1, 2, 3]
    assert "confidence in 1 is 0.50" in got.items[0].reason
    assert "people agree 62% of the time so far" in got.items[1].reason
    assert got.n_eligible == 4
    assert got.n_labelled == 4


def test_items_of_the_test_part_are_never_proposed() -> None:
    human, judge, conf = _world()
    rng = np.random.default_rng(1)
    test_part = rng.random(len(human)) < 0.5
    unlabelled_test = test_part & np.isnan(human)
    got = label_next(
        human, judge, n=200, y_conf=conf, exclude=test_part, n_sim=3, n_boot=50, seed=2
    )
    proposed = np.array([c.position for c in got.items])
    assert len(proposed) == 200
    assert not test_part[proposed].any()
    assert unlabelled_test.sum() > 100  # there were test items the ranking would have liked
    everything = label_next(human, judge, n=len(human), y_conf=conf, n_sim=1, n_boot=20)
    assert {c.position for c in everything.items} & set(np.flatnonzero(unlabelled_test))
    # labelled items are never proposed either
    assert np.isnan(human[proposed]).all()


@pytest.mark.parametrize("metric", ["cohen_kappa", "accuracy", "cohen_kappa_quadratic"])
def test_the_expected_interval_narrows_as_the_batch_grows(metric: str) -> None:
    human, judge, conf = _world(seed=3)
    found = [
        label_next(human, judge, n=n, metric=metric, y_conf=conf, n_sim=20, n_boot=300, seed=4)
        for n in (60, 150, 300)
    ]
    now = found[0].half_width_now
    assert {f.half_width_now for f in found} == {now}  # one table, one seed
    widths = [f.half_width_after for f in found]
    assert now > widths[0] > widths[1] > widths[2]
    # 150 labelled items now, 450 after the largest batch: a random batch would shrink the width
    # by about sqrt(150 / 450) = 0.58; uncertain items are worth a little less each
    assert 0.5 < widths[2] / now < 0.75


def test_the_interval_now_is_the_reports_bootstrap() -> None:
    human, judge, conf = _world(seed=5)
    got = label_next(human, judge, n=5, metric="cohen_kappa", y_conf=conf, n_boot=2000, seed=9)
    low, high = bootstrap_ci(human, judge, metric="cohen_kappa", n_boot=2000, seed=9)
    assert got.half_width_now == pytest.approx((high - low) / 2, abs=1e-12)
    assert "Cohen's kappa's interval goes from ±" in got.summary()


def test_two_versions_propose_the_items_they_disagree_on() -> None:
    human, judge, conf = _world(seed=6)
    rng = np.random.default_rng(7)
    other = np.where(rng.random(len(judge)) < 0.2, judge % 3 + 1, judge)
    got = label_next(human, judge, n=40, y_conf=conf, y_other=other, n_sim=10, n_boot=200, seed=1)
    positions = [c.position for c in got.items]
    assert all(judge[p] != other[p] for p in positions)
    assert "the versions disagree" in got.items[0].reason
    assert got.compare
    # the discordant items are what McNemar's test reads: labelling 40 of them separates the
    # versions (the judge is right on the items where it is confident, the other version not)
    assert got.mcnemar_p_after < got.mcnemar_p_now
    assert "McNemar's p between the versions goes from" in got.summary()


def test_a_jury_split_makes_an_item_uncertain() -> None:
    human = [1, 2, 1, 2, None, None]
    judge = [1, 2, 1, 2, 1, 1]
    members = [[1, 1, 1], [2, 2, 2], [1, 1, 1], [2, 2, 2], [1, 2, 1], [1, 1, 1]]
    got = label_next(human, judge, n=2, y_members=members, n_sim=3, n_boot=30)
    # item 4: 2 of 3 members -> q 2/3, 4q(1-q) = 8/9; item 5: 3 of 3 -> q 1, score 0
    assert got.item_ids == ("4", "5")
    assert got.items[0].score == pytest.approx(8 / 9)
    assert "2 of 3 members gave 1" in got.items[0].reason


def test_the_batch_is_spread_over_slices_round_robin() -> None:
    human, judge, conf = _world(seed=8)
    slices = np.where(np.arange(len(human)) % 4 == 0, "rare", "common")
    got = label_next(human, judge, n=20, y_conf=conf, slices=slices, n_sim=2, n_boot=20)
    names = [c.slice for c in got.items]
    assert names.count("rare") == 10
    assert names.count("common") == 10
    assert all(a != b for a, b in itertools.pairwise(names))  # they take turns
    alone = label_next(human, judge, n=20, y_conf=conf, n_sim=2, n_boot=20)
    assert [c.slice for c in alone.items] == [None] * 20


def test_ids_and_fewer_eligible_items_than_asked() -> None:
    got = label_next([1, None, None], [1, 2, 1], n=10, item_ids=["a", "b", "c"], n_sim=2, n_boot=20)
    assert set(got.item_ids) == {"b", "c"}
    assert got.n_requested == 10
    assert got.to_dict()["items"][0]["item_id"] in {"b", "c"}
    nothing = label_next([1, 2], [1, 2], n=3, n_sim=2, n_boot=20)
    assert nothing.items == ()
    assert "no unlabelled item" in nothing.summary()


def test_the_proposal_is_seeded() -> None:
    human, judge, conf = _world(seed=10)
    a = label_next(human, judge, n=30, y_conf=conf, n_sim=5, n_boot=100, seed=3)
    b = label_next(human, judge, n=30, y_conf=conf, n_sim=5, n_boot=100, seed=3)
    assert a.to_dict() == b.to_dict()


def test_bad_options_are_refused() -> None:
    with pytest.raises(MetricError, match="n must be"):
        label_next([1], [1], n=0)
    with pytest.raises(MetricError, match="unknown calibration metric"):
        label_next([1], [1], n=1, metric="f2")
    with pytest.raises(MetricError, match="exclude"):
        label_next([1, None], [1, 1], n=1, exclude=[True])
    with pytest.raises(MetricError, match="position 0"):
        label_next([1, None], [1, 1], n=1, y_conf=[2.0, 0.5])
