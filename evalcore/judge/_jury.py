"""Juries: one verdict per item combined from the verdicts of several judges (models or templates).

A jury's members are runs over the same items. Each member gives at most one vote per item: its
label when it has one (status ``ok``); an item it lacks, or did not answer, is *missing* for it and
never counts as a vote. :func:`combine_verdicts` turns the votes on one item into the jury's label,
:func:`jury_results` does so for every item and returns ordinary :class:`JudgeResult` objects, so a
jury is written, read and calibrated like any run.

Methods (:data:`JURY_METHODS`):

- ``"majority"``: the label most members gave; a tie goes to the label first in the scale's order,
  except on a pairwise scale, where a tie between different choices is ``TIE`` (the rule of
  :func:`~evalcore.judge.vote`, which samples share).
- ``"weighted"``: the label with the largest sum of its voters' weights (one positive weight per
  member), ties as above.
- ``"mean"`` (numeric scales): the mean of the votes (weighted by the members' weights when given),
  rounded half up to the nearest label of the scale (:func:`~evalcore.judge.nearest_label`).

The jury's ``probabilities`` are the (weighted) shares of the votes given, label by label over the
whole scale, and its ``confidence`` is the share of the chosen label: the members' agreement. Its
``score`` is the (weighted) mean vote on a numeric scale and the share of the first label on a binary
one (as a logprob score would be).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from evalcore.errors import ConfigError
from evalcore.judge._parse import nearest_label, vote
from evalcore.judge._result import JudgeResult
from evalcore.labels import Label, Scale, format_label

__all__ = [
    "JURY_METHODS",
    "JuryMethod",
    "JuryVerdict",
    "check_jury",
    "combine_verdicts",
    "jury_results",
    "member_verdicts",
]

JuryMethod: TypeAlias = Literal["majority", "mean", "weighted"]
#: The ways a jury combines its members' votes.
JURY_METHODS: tuple[JuryMethod, ...] = ("majority", "mean", "weighted")


@dataclass(frozen=True)
class JuryVerdict:
    """The jury's verdict on one item.

    ``label`` is None when no member voted. ``probabilities`` (every label of the scale) are the
    (weighted) vote shares and ``confidence`` the share of ``label``; ``voters`` is how many members
    voted, ``missing`` how many did not.
    """

    label: Label | None
    probabilities: Mapping[Label, float] | None
    confidence: float | None
    score: float | None
    voters: int
    missing: int


def check_jury(
    n_members: int,
    scale: Scale,
    *,
    method: str,
    weights: Sequence[float] | None,
) -> tuple[float, ...]:
    """The members' weights (all 1 when none are given), after checking the method, the number of
    members and the weights; raises :class:`~evalcore.errors.ConfigError` naming what is wrong."""
    if method not in JURY_METHODS:
        raise ConfigError(f"a jury combines by {', '.join(JURY_METHODS)}, not {method!r}")
    if n_members < 2:
        raise ConfigError(f"a jury needs at least two members, not {n_members}")
    if method == "mean" and not scale.is_numeric:
        raise ConfigError(
            f"a jury can take the mean only on a numeric scale, not {', '.join(scale.display_labels)}"
        )
    if method == "majority" and weights is not None:
        raise ConfigError("a majority jury counts every member once: use method 'weighted'")
    if method == "weighted" and weights is None:
        raise ConfigError("a weighted jury needs one weight per member")
    if weights is None:
        return (1.0,) * n_members
    values = tuple(float(w) for w in weights)
    if len(values) != n_members:
        raise ConfigError(
            f"a jury of {n_members} members needs {n_members} weights, not {len(values)}"
        )
    for position, weight in enumerate(values, start=1):
        if not (math.isfinite(weight) and weight > 0):
            raise ConfigError(
                f"the weight of jury member {position} must be positive, not {weight}"
            )
    return values


def combine_verdicts(
    votes: Sequence[Label | None],
    scale: Scale,
    *,
    method: JuryMethod = "majority",
    weights: Sequence[float] | None = None,
) -> JuryVerdict:
    """Combine the members' votes on one item (``None``: the member gave none).

    >>> from evalcore.labels import PASS_FAIL, LIKERT_5
    >>> v = combine_verdicts(["pass", "fail", "pass", None], PASS_FAIL)
    >>> v.label, round(v.confidence, 4), v.voters, v.missing  # 2 of the 3 votes are pass
    ('pass', 0.6667, 3, 1)
    >>> combine_verdicts([4.0, 5.0, 5.0], LIKERT_5, method="mean").label  # 14/3 = 4.67 → 5
    5.0
    >>> w = combine_verdicts(["pass", "fail"], PASS_FAIL, method="weighted", weights=[1, 3])
    >>> w.label, w.confidence  # fail carries 3 of the 4 units of weight
    ('fail', 0.75)
    """
    weight_of = check_jury(len(votes), scale, method=method, weights=weights)
    given = [(x, w) for x, w in zip(votes, weight_of, strict=True) if x is not None]
    missing = len(votes) - len(given)
    if not given:
        return JuryVerdict(None, None, None, None, 0, missing)
    total = sum(w for _, w in given)
    mass: dict[Label, float] = dict.fromkeys(scale.labels, 0.0)
    for given_label, weight in given:
        mass[given_label] = mass.get(given_label, 0.0) + weight
    probabilities = {x: mass[x] / total for x in scale.labels}
    score: float | None = None
    if scale.is_numeric:
        score = sum(float(x) * w for x, w in given) / total
    elif scale.kind == "binary":
        score = probabilities[scale.labels[0]]
    if method == "mean":
        assert score is not None
        label: Label | None = nearest_label(score, scale)
    else:
        label = vote(mass, scale)
    assert label is not None
    return JuryVerdict(
        label, probabilities, probabilities.get(label, 0.0), score, len(given), missing
    )


def jury_results(
    members: Sequence[Mapping[str, JudgeResult]],
    item_ids: Sequence[str],
    scale: Scale,
    *,
    names: Sequence[str],
    method: JuryMethod = "majority",
    weights: Sequence[float] | None = None,
) -> list[JudgeResult]:
    """The jury's result on every item of ``item_ids`` (one result each, order ``AB``).

    ``members[i]`` maps an item id to member ``i``'s verdict on it (its first-order result: see
    :func:`member_verdicts`); ``names[i]`` names the member in the results' details. An item no
    member voted on is ``failed`` with the reason (a jury has nothing to send again: rerun the
    members).
    """
    weight_of = check_jury(len(members), scale, method=method, weights=weights)
    if len(names) != len(members):
        raise ConfigError("a jury needs one name per member")
    given_weights = None if weights is None else list(weight_of)
    out: list[JudgeResult] = []
    for item_id in item_ids:
        found = [member.get(item_id) for member in members]
        votes = [r.label if r is not None and r.status == "ok" else None for r in found]
        verdict = combine_verdicts(votes, scale, method=method, weights=given_weights)
        shown = {
            name: format_label(v) if v is not None else (r.status if r is not None else "missing")
            for name, v, r in zip(names, votes, found, strict=True)
        }
        details = {
            "jury": {"method": method, "votes": shown},
            "confidence": {"from": "jury", "voters": verdict.voters, "missing": verdict.missing},
        }
        if verdict.label is None:
            out.append(
                JudgeResult(
                    item_id=item_id,
                    order="AB",
                    status="failed",
                    error=f"no member of the jury gave a label ({_states(shown)})",
                    details=details,
                )
            )
            continue
        agree = sum(1 for v in votes if v == verdict.label)
        out.append(
            JudgeResult(
                item_id=item_id,
                order="AB",
                status="ok",
                label=verdict.label,
                score=verdict.score,
                reason=f"{agree} of {verdict.voters} members gave {format_label(verdict.label)}"
                + (f"; {verdict.missing} gave none" if verdict.missing else ""),
                details=details,
                probabilities=verdict.probabilities,
                confidence=verdict.confidence,
            )
        )
    return out


def member_verdicts(results: Sequence[JudgeResult]) -> dict[str, JudgeResult]:
    """One member's verdict per item: its ``AB`` result, else its only result (a ``flip`` run
    judges each item once, in either order). Labels are already in the item's frame."""
    out: dict[str, JudgeResult] = {}
    for result in results:
        if result.order == "AB" or result.item_id not in out:
            out[result.item_id] = result
    return out


def _states(shown: Mapping[str, str]) -> str:
    counts: dict[str, int] = {}
    for state in shown.values():
        counts[state] = counts.get(state, 0) + 1
    return ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
