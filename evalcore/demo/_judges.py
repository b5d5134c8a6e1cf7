"""Recorded judge runs of the demo, simulated from the latent truth of each item.

The runs tell a story a prompt engineer will recognise:

- ``helpfulness`` v1 reads only the question and the reply and gives 5 to almost everything: fine
  accuracy on a set full of good replies, poor balanced accuracy. v2 adds score anchors, the passage
  and the expected answer, and is better overall, but its rule "a complete delivery answer states the
  cost, the delivery time and any conditions" makes it mark down short, correct ``shipping`` answers.
  v2 on the larger ``demo-judge-pro`` model reaches the humans' own agreement, at ten times the price.
- ``groundedness`` v1 misses invented details; v2 audits claim by claim and catches them, above all
  on the policy-heavy ``warranty`` and ``returns`` topics, but it wants exact wording, so it fails
  correct paraphrases and does worse on ``helper-small`` replies. Scores are probabilities of pass,
  so a threshold sweep is meaningful.
- ``preference`` v1 is judged once, in the order shown; v2 is judged in both orders and prefers
  whichever reply it reads first often enough that its verdict flips on some items. v2 also likes
  long replies, which costs it on ``gear advice``.
- ``imported: legacy-judge`` is a column of pass/fail labels from an older tool, with a few blanks.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd

from evalcore.demo import _texts as tx
from evalcore.demo._build import (
    EPOCH,
    PAIRWISE_DATASET,
    POINTWISE,
    TEMPLATE_OF,
    Latent,
    PairItem,
    PointItem,
    _pick,
    _rng,
    template_content,
)
from evalcore.demo._types import DemoCriterion, DemoRun, OrderMode

__all__ = ["build_runs"]

RESULT_COLUMNS = (
    "item_id",
    "order",
    "status",
    "label",
    "score",
    "reason",
    "raw",
    "tokens_in",
    "tokens_out",
    "latency_s",
    "cost",
)


@dataclass(frozen=True)
class JudgeModel:
    """A fictional judge endpoint: its latency and its price per million tokens."""

    name: str
    latency_s: float
    price_in: float
    price_out: float


MINI = JudgeModel("demo-judge-mini", 1.1, 0.20, 0.80)
PRO = JudgeModel("demo-judge-pro", 2.6, 2.00, 8.00)


@dataclass(frozen=True)
class Call:
    """How one judge call went before its verdict is known: ok, unparsed or failed."""

    status: str
    failure: str | None = None


def _call(rng: np.random.Generator, p_unparsed: float, p_failed: float) -> Call:
    u = rng.random()
    if u < p_failed:
        return Call("failed", _pick(rng, tx.FAILURES))
    if u < p_failed + p_unparsed:
        return Call("unparsed")
    return Call("ok")


def _usage(
    rng: np.random.Generator,
    model: JudgeModel,
    template: dict[str, Any],
    fields: dict[str, str],
    raw: str | None,
) -> dict[str, Any]:
    """Tokens (about four characters each), latency and cost of one call."""
    prompt_chars = len(template["system"]) + len(template["user"]) + sum(map(len, fields.values()))
    tokens_in = prompt_chars // 4 + 12
    if raw is None:
        latency = 30.0 if rng.random() < 0.5 else round(float(rng.uniform(0.2, 1.5)), 3)
        return {"tokens_in": 0, "tokens_out": 0, "latency_s": latency, "cost": 0.0}
    tokens_out = max(3, len(raw) // 4 + int(rng.integers(0, 6)))
    latency = model.latency_s * float(np.exp(rng.normal(0.0, 0.35))) + tokens_out * 0.012
    cost = (tokens_in * model.price_in + tokens_out * model.price_out) / 1e6
    return {
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "latency_s": round(latency, 3),
        "cost": round(cost, 8),
    }


def _result(
    rng: np.random.Generator,
    item_id: str,
    order: str,
    call: Call,
    model: JudgeModel,
    template: dict[str, Any],
    fields: dict[str, str],
    *,
    label: Any,
    score: float | None,
    reason: str,
    reply: dict[str, Any],
    unparsed_pool: tuple[str, ...],
    subject: str,
) -> dict[str, Any]:
    raw: str | None
    row: dict[str, Any]
    if call.status == "failed":
        raw = None
        row = {
            "status": "failed",
            "label": None,
            "score": None,
            "reason": call.failure,
            "raw": None,
        }
    elif call.status == "unparsed":
        raw = _pick(rng, unparsed_pool).format(subject=subject)
        row = {"status": "unparsed", "label": None, "score": None, "reason": None, "raw": raw}
    else:
        raw = json.dumps(reply, ensure_ascii=False)
        row = {"status": "ok", "label": label, "score": score, "reason": reason, "raw": raw}
    return {"item_id": item_id, "order": order, **row, **_usage(rng, model, template, fields, raw)}


def _point_result(
    rng: np.random.Generator,
    item: PointItem,
    request: tuple[Call, JudgeModel, dict[str, Any], dict[str, str]],
    **verdict: Any,
) -> dict[str, Any]:
    """:func:`_result` of a pointwise item (one order, its FAQ's subject in unparsed replies)."""
    call, model, template, fields = request
    return _result(
        rng, item.item_id, "AB", call, model, template, fields, subject=item.faq.subject, **verdict
    )


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Results with stable dtypes: text and labels as objects (``None`` when missing), tokens as
    nullable integers, score, latency and cost as floats (NaN when missing)."""
    frame = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    for column in ("item_id", "order", "status", "label", "reason", "raw"):
        frame[column] = pd.Series([row[column] for row in rows], index=frame.index, dtype=object)
    for column in ("tokens_in", "tokens_out"):
        frame[column] = frame[column].astype("Int64")
    for column in ("score", "latency_s", "cost"):
        frame[column] = frame[column].astype("float64")
    return frame


# --- helpfulness -----------------------------------------------------------------------------------

#: helpfulness v1 sees neither the passage nor the reference: P(score 1..5) by reply quality.
V1_HELPFULNESS: dict[str, tuple[float, float, float, float, float]] = {
    "excellent": (0.0, 0.0, 0.0, 0.04, 0.96),
    "solid": (0.0, 0.0, 0.02, 0.12, 0.86),
    "terse": (0.0, 0.02, 0.12, 0.36, 0.50),
    "hedged": (0.0, 0.05, 0.30, 0.30, 0.35),
    "hallucinated": (0.0, 0.0, 0.04, 0.16, 0.80),
    "partly_wrong": (0.06, 0.30, 0.14, 0.14, 0.36),
    "unhelpful": (0.40, 0.45, 0.10, 0.03, 0.02),
    "off_topic": (0.75, 0.12, 0.03, 0.03, 0.07),
}


def _helpfulness_v1(rng: np.random.Generator, item: PointItem) -> tuple[int, bool]:
    return int(rng.choice(5, p=V1_HELPFULNESS[item.reply.variant])) + 1, False


#: How many points helpfulness v2 takes off a delivery answer that skips the cost, time or conditions.
SHIPPING_PENALTY = {"excellent": 1, "solid": 2, "terse": 2, "hedged": 1, "hallucinated": 1}


def _helpfulness_v2(
    shift: tuple[float, float, float, float, float], penalty: float
) -> Callable[[np.random.Generator, PointItem], tuple[int, bool]]:
    """v2: close to the latent score, but strict on delivery answers that skip a detail."""

    def judge(rng: np.random.Generator, item: PointItem) -> tuple[int, bool]:
        t = item.reply.t
        label = t + int(rng.choice(5, p=shift)) - 2
        penalised = False
        variant = item.reply.variant
        if item.faq.topic == "shipping" and variant in SHIPPING_PENALTY and rng.random() < penalty:
            label = min(label, t) - SHIPPING_PENALTY[variant] - int(rng.random() < 0.35)
            penalised = True
        return min(5, max(1, label)), penalised

    return judge


def _score_mean(rng: np.random.Generator, label: int) -> float:
    """A probability-weighted mean over 1-5 peaked at ``label``, as logprobs would give."""
    probs = np.zeros(5)
    probs[label - 1] = rng.uniform(0.55, 0.95)
    neighbours = [k for k in (label - 2, label) if 0 <= k < 5]
    rest = 1.0 - probs[label - 1]
    for k in neighbours:
        probs[k] = rest / len(neighbours)
    return round(float(np.dot(probs, np.arange(1, 6))), 2)


def _helpfulness_run(
    seed: int,
    latent: Latent,
    template: dict[str, Any],
    model: JudgeModel,
    judge: Callable[[np.random.Generator, PointItem], tuple[int, bool]],
    tag: str,
    p_unparsed: float,
) -> pd.DataFrame:
    rng = _rng(seed, tag)
    rows = []
    for item in latent.points:
        call = _call(rng, p_unparsed, 0.01)
        label, penalised = judge(rng, item)
        facts = {"subject": item.faq.subject}
        pool = tx.SHIPPING_PENALTY_REASONS if penalised else tx.HELPFULNESS_REASONS[label]
        reason = _pick(rng, pool).format(**facts)
        fields = {"prompt": item.faq.question, "response": item.reply.text}
        if "{{ context }}" in template["user"]:
            fields |= {"context": item.faq.context, "reference": item.faq.reference}
        rows.append(
            _point_result(
                rng,
                item,
                (call, model, template, fields),
                label=float(label),
                score=_score_mean(rng, label),
                reason=reason,
                reply={"reason": reason, "score": label},
                unparsed_pool=tx.UNPARSED_HELPFULNESS,
            )
        )
    return _frame(rows)


# --- groundedness ----------------------------------------------------------------------------------


def _groundedness_v1(rng: np.random.Generator, item: PointItem) -> bool:
    reply = item.reply
    if reply.grounded:
        return bool(rng.random() < 0.9)
    # v1 trusts anything that looks like policy: fees, windows and promises pass too easily.
    policy_topic = item.faq.topic in {"warranty", "returns"}
    p_pass = {
        "hallucinated": 0.85 if policy_topic else 0.55,
        "partly_wrong": 0.6 if policy_topic else 0.3,
        "off_topic": 0.25,
        "unhelpful": 0.6,
    }
    return bool(rng.random() < p_pass[reply.variant])


def _groundedness_v2(rng: np.random.Generator, item: PointItem) -> bool:
    reply = item.reply
    policy_topic = item.faq.topic in {"warranty", "returns"}
    if reply.grounded:
        # v2 wants a paraphrase to mean exactly the same; helper-small's loose wording of the care,
        # sizing and gear guides fails that test (policy replies quote the numbers, so fare better).
        if item.source_model == "helper-small":
            return bool(rng.random() < (0.75 if policy_topic else 0.4))
        return bool(rng.random() < 0.95)
    p_pass = {
        "hallucinated": 0.08 if policy_topic else 0.35,
        "partly_wrong": 0.05 if policy_topic else 0.2,
        "off_topic": 0.10,
        "unhelpful": 0.35,
    }
    return bool(rng.random() < p_pass[reply.variant])


def _pass_probability(rng: np.random.Generator, says_pass: bool, right: bool) -> float:
    """A probability of pass on the side of the verdict: confident when right, hesitant when wrong."""
    confidence = float(rng.beta(5.0, 1.5) if right else rng.beta(1.6, 3.0))
    confidence = max(confidence, 0.02)
    return round(0.5 + 0.5 * confidence if says_pass else 0.5 - 0.5 * confidence, 3)


def _grounded_reason(rng: np.random.Generator, item: PointItem, says_pass: bool) -> str:
    reply, faq = item.reply, item.faq
    if says_pass:
        return _pick(rng, tx.GROUNDED_PASS_REASONS).format(subject=faq.subject)
    if reply.variant == "unhelpful":
        cause = "vague"
    elif reply.grounded:
        cause = "strict"
    else:
        cause = {"hallucinated": "invented", "partly_wrong": "wrong", "off_topic": "other"}[
            reply.variant
        ]
    other = reply.other.subject if reply.other is not None else "another topic"
    return _pick(rng, tx.GROUNDED_FAIL_REASONS[cause]).format(
        subject=faq.subject, invented=faq.invented, wrong=faq.wrong, other=other
    )


def _groundedness_run(
    seed: int,
    latent: Latent,
    template: dict[str, Any],
    model: JudgeModel,
    judge: Callable[[np.random.Generator, PointItem], bool],
    tag: str,
) -> pd.DataFrame:
    rng = _rng(seed, tag)
    rows = []
    for item in latent.points:
        call = _call(rng, 0.03, 0.01)
        says_pass = judge(rng, item)
        word = "pass" if says_pass else "fail"
        reason = _grounded_reason(rng, item, says_pass)
        fields = {"context": item.faq.context, "response": item.reply.text}
        if "{{ prompt }}" in template["user"]:
            fields["prompt"] = item.faq.question
        rows.append(
            _point_result(
                rng,
                item,
                (call, model, template, fields),
                label=word,
                score=_pass_probability(rng, says_pass, says_pass == item.reply.grounded),
                reason=reason,
                reply={"reason": reason, "label": word},
                unparsed_pool=tx.UNPARSED_GROUNDEDNESS,
            )
        )
    return _frame(rows)


def _imported_run(seed: int, latent: Latent) -> pd.DataFrame:
    """Labels of an older pass/fail judge read from a file: words only, a few blank cells."""
    rng = _rng(seed, "imported legacy-judge")
    rows = []
    for item in latent.points:
        p_pass = 0.86 if item.reply.grounded else 0.38
        word = "pass" if rng.random() < p_pass else "fail"
        blank = rng.random() < 0.04
        rows.append(
            {
                "item_id": item.item_id,
                "order": "AB",
                "status": "unparsed" if blank else "ok",
                "label": None if blank else word,
                "score": None,
                "reason": None,
                "raw": ""
                if blank
                else _pick(rng, ("PASS", "Pass", "pass"))
                if word == "pass"
                else _pick(rng, ("FAIL", "Fail", "fail")),
                "tokens_in": None,
                "tokens_out": None,
                "latency_s": None,
                "cost": None,
            }
        )
    return _frame(rows)


# --- preference ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairJudge:
    """How a pairwise judge perceives two replies: noise, first-position bonus, length taste."""

    sigma: float
    first_bonus: float
    tie_band: float
    #: Weight of the length preference, and the topics on which it shows.
    verbosity: float = 0.0
    verbosity_topics: frozenset[str] = frozenset()


V1_PAIR = PairJudge(sigma=1.1, first_bonus=0.6, tie_band=0.06)
V2_PAIR = PairJudge(
    sigma=0.55,
    first_bonus=0.38,
    tie_band=0.06,
    verbosity=3.5,
    verbosity_topics=frozenset({"gear advice"}),
)


def _verdict(rng: np.random.Generator, judge: PairJudge, item: PairItem, order: str) -> str:
    """The judge's choice in the dataset's A/B frame (a BA verdict is already mapped back)."""
    d = item.d + rng.normal(0.0, judge.sigma)
    if item.faq.topic in judge.verbosity_topics:
        d += judge.verbosity * float(np.tanh((len(item.a.text) - len(item.b.text)) / 80.0))
    d += judge.first_bonus if order == "AB" else -judge.first_bonus
    if abs(d) < judge.tie_band:
        return "TIE"
    return "A" if d > 0 else "B"


def _pair_reason(rng: np.random.Generator, item: PairItem, choice: str, order: str) -> str:
    """A reason in the frame the judge saw, where "A" is whichever reply came first."""
    subject = item.faq.subject
    if choice == "TIE":
        return _pick(rng, tx.PREFERENCE_REASONS["tie"]).format(subject=subject)
    loser_reply = item.b if choice == "A" else item.a
    shown = choice if order == "AB" else {"A": "B", "B": "A"}[choice]
    other = "B" if shown == "A" else "A"
    truly_better = (item.d > 0.3 and choice == "A") or (item.d < -0.3 and choice == "B")
    if truly_better:
        template = _pick(rng, tx.PREFERENCE_REASONS["win"])
        return template.format(
            winner=shown, loser=other, subject=subject, issue=tx.ISSUES[loser_reply.variant]
        )
    return _pick(rng, tx.PREFERENCE_REASONS["win_generic"]).format(winner=shown, subject=subject)


def _preference_run(
    seed: int,
    latent: Latent,
    template: dict[str, Any],
    model: JudgeModel,
    judge: PairJudge,
    orders: tuple[str, ...],
    tag: str,
) -> pd.DataFrame:
    rng = _rng(seed, tag)
    rows = []
    for item in latent.pairs:
        for order in orders:
            call = _call(rng, 0.03, 0.01)
            choice = _verdict(rng, judge, item, order)
            reason = _pair_reason(rng, item, choice, order)
            first, second = (item.a, item.b) if order == "AB" else (item.b, item.a)
            shown = choice if order == "AB" or choice == "TIE" else {"A": "B", "B": "A"}[choice]
            fields = {
                "prompt": item.faq.question,
                "response_a": first.text,
                "response_b": second.text,
            }
            if "{{ context }}" in template["user"]:
                fields["context"] = item.faq.context
            rows.append(
                _result(
                    rng,
                    item.item_id,
                    order,
                    call,
                    model,
                    template,
                    fields,
                    label=choice,
                    score=None,
                    reason=reason,
                    reply={"reason": reason, "choice": shown},
                    unparsed_pool=tx.UNPARSED_PREFERENCE,
                    subject=item.faq.subject,
                )
            )
    return _frame(rows)


# --- all runs --------------------------------------------------------------------------------------


def build_runs(seed: int, latent: Latent, criteria: list[DemoCriterion]) -> list[DemoRun]:
    """Every recorded run of the demo, oldest first."""
    by_name = {c.name: c for c in criteria}

    def content(criterion: str, version: int) -> dict[str, Any]:
        return template_content(by_name[criterion], version, seed)

    def run(
        criterion: str,
        version: int | None,
        model: JudgeModel,
        day: float,
        description: str,
        results: pd.DataFrame,
        *,
        name: str | None = None,
        order_mode: OrderMode = "AB",
    ) -> DemoRun:
        dataset = PAIRWISE_DATASET if criterion == "preference" else POINTWISE
        label = name or f"{criterion} v{version} ({model.name})"
        return DemoRun(
            name=label,
            dataset=dataset,
            criterion=criterion,
            template=TEMPLATE_OF[criterion] if version is not None else None,
            template_version=version,
            model=model.name,
            order_mode=order_mode,
            created_at=EPOCH + timedelta(days=day),
            description=description,
            results=results,
        )

    v2_mini = _helpfulness_v2((0.05, 0.22, 0.50, 0.18, 0.05), penalty=0.95)
    v2_pro = _helpfulness_v2((0.03, 0.13, 0.68, 0.13, 0.03), penalty=0.6)
    legacy = JudgeModel("legacy-judge", 0.0, 0.0, 0.0)
    return [
        run(
            "groundedness",
            None,
            legacy,
            2.9,
            "Pass/fail labels exported from the shop's previous evaluation script (legacy_judge.csv).",
            _imported_run(seed, latent),
            name="imported: legacy-judge",
        ),
        run(
            "helpfulness",
            1,
            MINI,
            3.25,
            "First helpfulness judge: question and reply only.",
            _helpfulness_run(
                seed, latent, content("helpfulness", 1), MINI, _helpfulness_v1, "h1", 0.04
            ),
        ),
        run(
            "groundedness",
            1,
            MINI,
            3.3,
            "First groundedness judge.",
            _groundedness_run(
                seed, latent, content("groundedness", 1), MINI, _groundedness_v1, "g1"
            ),
        ),
        run(
            "preference",
            1,
            MINI,
            3.35,
            "First preference judge, replies shown in the dataset's order.",
            _preference_run(seed, latent, content("preference", 1), MINI, V1_PAIR, ("AB",), "p1"),
        ),
        run(
            "helpfulness",
            2,
            MINI,
            11.2,
            "Helpfulness v2: score anchors, passage and expected answer.",
            _helpfulness_run(seed, latent, content("helpfulness", 2), MINI, v2_mini, "h2", 0.03),
        ),
        run(
            "helpfulness",
            2,
            PRO,
            11.3,
            "Helpfulness v2 on the larger judge model.",
            _helpfulness_run(seed, latent, content("helpfulness", 2), PRO, v2_pro, "h2p", 0.015),
        ),
        run(
            "groundedness",
            2,
            MINI,
            11.25,
            "Groundedness v2: claim-by-claim audit.",
            _groundedness_run(
                seed, latent, content("groundedness", 2), MINI, _groundedness_v2, "g2"
            ),
        ),
        run(
            "preference",
            2,
            MINI,
            11.35,
            "Preference v2, judged twice per pair with the replies swapped (AB and BA).",
            _preference_run(
                seed, latent, content("preference", 2), MINI, V2_PAIR, ("AB", "BA"), "p2"
            ),
            name="preference v2 (demo-judge-mini, both orders)",
            order_mode="both",
        ),
    ]
