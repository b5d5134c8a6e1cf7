"""Build the demo project: items of two datasets, simulated annotators and recorded judge runs.

Every reply is composed from the hand-written parts of :mod:`evalcore.demo._kb` in one of eight
qualities, each with a latent truth (a 1-5 helpfulness and whether it is grounded). Annotators and
judges see that latent truth through their own noise and biases, so their disagreements look like
real ones: a lenient and a strict rater, a noisy one, a judge that gives 5 to almost everything, a
judge that prefers whichever reply it reads first.

Randomness comes from one seeded generator per named part (``_rng(seed, "annotations")``), so the
same seed gives the same project and changing one part leaves the others as they were.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from evalcore.demo import _texts as tx
from evalcore.demo._kb import FAQS, TOPIC_PAGES, Faq
from evalcore.demo._types import (
    DatasetKind,
    DemoCriterion,
    DemoDataset,
    DemoProject,
    DemoTemplate,
    DemoTemplateVersion,
)
from evalcore.labels import LIKERT_5, PAIRWISE, PASS_FAIL, Scale

__all__ = ["PROJECT_NAME", "SHORT_NAME", "build_demo", "demo_summary"]

PROJECT_NAME = "Northwind support demo"
#: What the command line accepts for the demo project besides its name (``--project demo``).
SHORT_NAME = "demo"
POINTWISE = "support-answers"
PAIRWISE_DATASET = "reply-preference"
SOURCE_MODELS = ("helper-small", "helper-large", "helper-rag")

#: The eight reply qualities: mean and spread of latent helpfulness, whether grounded (None = it
#: depends on the item), weight among the weaker replies of the pointwise set and the source-model
#: mix (small, large, rag).
VARIANTS: dict[str, dict[str, Any]] = {
    "excellent": {"q": (4.85, 0.25), "grounded": True, "weight": 0.0, "models": (0.15, 0.5, 0.35)},
    "solid": {"q": (4.35, 0.4), "grounded": True, "weight": 0.0, "models": (0.35, 0.35, 0.3)},
    "terse": {"q": (3.5, 0.5), "grounded": True, "weight": 2.2, "models": (0.6, 0.2, 0.2)},
    "hedged": {"q": (2.9, 0.45), "grounded": True, "weight": 1.0, "models": (0.4, 0.3, 0.3)},
    "hallucinated": {
        "q": (3.1, 0.55),
        "grounded": False,
        "weight": 2.0,
        "models": (0.55, 0.3, 0.15),
    },
    "partly_wrong": {
        "q": (2.0, 0.5),
        "grounded": False,
        "weight": 1.6,
        "models": (0.55, 0.25, 0.2),
    },
    "unhelpful": {"q": (1.8, 0.4), "grounded": None, "weight": 1.0, "models": (0.5, 0.3, 0.2)},
    "off_topic": {"q": (1.2, 0.3), "grounded": False, "weight": 0.8, "models": (0.3, 0.2, 0.5)},
}
#: Every question gets an excellent and a solid reply, plus this many of the weighted others
#: (delivery questions get all of them: the slice where helpfulness v2 goes wrong needs the items).
OTHER_REPLIES_PER_QUESTION = 4
ALL_REPLIES_TOPICS = frozenset({"shipping"})

#: Ordered (candidate, baseline) quality pairs of the pairwise dataset, with their weights.
PAIRS: tuple[tuple[str, str, float], ...] = (
    ("excellent", "terse", 3.0),
    ("excellent", "partly_wrong", 3.0),
    ("solid", "hallucinated", 2.0),
    ("excellent", "unhelpful", 2.0),
    ("solid", "off_topic", 1.5),
    ("solid", "hedged", 2.0),
    ("terse", "partly_wrong", 1.5),
    ("hedged", "unhelpful", 1.0),
    ("terse", "excellent", 2.0),
    ("hallucinated", "solid", 2.0),
    ("partly_wrong", "solid", 2.0),
    ("unhelpful", "terse", 1.5),
    ("off_topic", "excellent", 1.0),
    ("hedged", "excellent", 1.0),
    ("excellent", "solid", 1.5),
    ("solid", "excellent", 1.0),
    ("solid", "solid", 1.8),
    ("terse", "hedged", 1.0),
    ("terse", "terse", 0.8),
    ("partly_wrong", "unhelpful", 0.5),
)


MORE_PAIRS_TOPICS = frozenset({"gear advice"})


@dataclass(frozen=True)
class Annotator:
    """How one simulated person labels: workload, biases, noise and habits."""

    name: str
    weight: float
    #: Probabilities of moving the latent 1-5 label by -2, -1, 0, +1, +2.
    shift: tuple[float, float, float, float, float]
    #: P(says fail | grounded), P(says pass | not grounded).
    false_fail: float
    false_pass: float
    #: Pairwise: noise on the perceived quality difference and the band inside which it says TIE.
    sigma: float
    tie_band: float
    speed: float
    comment_rate: float


ANNOTATORS = (
    Annotator("ana", 0.29, (0.0, 0.05, 0.90, 0.05, 0.0), 0.03, 0.05, 0.35, 0.55, 1.0, 0.05),
    Annotator("ben", 0.21, (0.0, 0.02, 0.76, 0.20, 0.02), 0.02, 0.15, 0.40, 0.80, 0.8, 0.02),
    Annotator("chloe", 0.20, (0.01, 0.20, 0.76, 0.03, 0.0), 0.10, 0.03, 0.35, 0.40, 1.3, 0.10),
    Annotator("dev", 0.14, (0.04, 0.14, 0.64, 0.14, 0.04), 0.08, 0.10, 0.60, 0.55, 0.6, 0.01),
    Annotator("farah", 0.16, (0.0, 0.06, 0.88, 0.06, 0.0), 0.04, 0.06, 0.40, 0.60, 1.1, 0.08),
)

#: Share of pointwise items nobody labels: the unlabelled set for a bias-corrected pass rate.
UNLABELLED_SHARE = 0.25
#: Share of pairwise items still waiting in the queue.
PAIRWISE_UNLABELLED_SHARE = 0.08
#: Share of labelled items that get a third annotator.
THIRD_ANNOTATOR_SHARE = 0.4

EPOCH = datetime(2025, 5, 5, 9, 0, tzinfo=UTC)
ANNOTATION_DAYS = (7, 8, 9, 10)  # 12-15 May 2025, days after EPOCH


def _rng(seed: int, part: str) -> np.random.Generator:
    """A generator for one named part of the demo, independent of every other part."""
    return np.random.default_rng([seed, zlib.crc32(part.encode())])


def _pick(rng: np.random.Generator, options: tuple[str, ...] | list[str]) -> str:
    return options[int(rng.integers(len(options)))]


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def _round_half_up(x: float) -> int:
    return int(np.floor(x + 0.5))


# --- items -----------------------------------------------------------------------------------------


@dataclass
class Reply:
    """One composed reply and its latent truth."""

    faq: Faq
    variant: str
    text: str
    q: float
    grounded: bool
    other: Faq | None = None
    opener: str = ""

    @property
    def t(self) -> int:
        """The latent helpfulness on the 1-5 scale."""
        return min(5, max(1, _round_half_up(self.q)))


@dataclass
class PointItem:
    item_id: str
    reply: Reply
    source_model: str

    @property
    def faq(self) -> Faq:
        return self.reply.faq


@dataclass
class PairItem:
    item_id: str
    faq: Faq
    a: Reply
    b: Reply
    model_a: str
    model_b: str

    @property
    def d(self) -> float:
        """Latent quality difference, candidate minus baseline."""
        return self.a.q - self.b.q


@dataclass
class Latent:
    """The hidden truth behind the demo, shared by annotators and judges."""

    points: list[PointItem] = field(default_factory=list)
    pairs: list[PairItem] = field(default_factory=list)


def _compose(
    faq: Faq,
    variant: str,
    rng: np.random.Generator,
    *,
    q_spread: float = 1.0,
    avoid_opener: str | None = None,
) -> Reply:
    spec = VARIANTS[variant]
    openers = [o for o in tx.OPENERS if not o or o != avoid_opener]
    opener, closer = _pick(rng, openers), _pick(rng, tx.CLOSERS)
    other: Faq | None = None
    if variant == "excellent":
        text = _join(opener, faq.good, faq.tip, closer)
    elif variant == "solid":
        text = _join(opener, faq.good, closer)
    elif variant == "terse":
        text = faq.terse
    elif variant == "hedged":
        text = _pick(rng, tx.HEDGES).format(terse=faq.terse)
    elif variant == "hallucinated":
        text = _join(opener, faq.good, faq.invented, closer)
    elif variant == "partly_wrong":
        text = _join(opener, faq.wrong, closer)
    elif variant == "unhelpful":
        text = _pick(rng, tx.UNHELPFUL).format(page=TOPIC_PAGES[faq.topic], subject=faq.subject)
    else:  # off_topic: the assistant answers a question from another topic (a retrieval slip)
        others = [f for f in FAQS if f.topic != faq.topic]
        other = others[int(rng.integers(len(others)))]
        text = _join(_pick(rng, tx.OFF_TOPIC_INTROS), other.good, closer)
    mean, sd = spec["q"]
    q = float(np.clip(rng.normal(mean, sd * q_spread), 1.0, 5.0))
    grounded = spec["grounded"]
    if grounded is None:
        grounded = bool(rng.random() < 0.6)
    return Reply(faq, variant, text, q, bool(grounded), other, opener)


def _build_points(seed: int) -> list[PointItem]:
    rng = _rng(seed, "points")
    names = [v for v in VARIANTS if VARIANTS[v]["weight"] > 0]
    weights = np.array([VARIANTS[v]["weight"] for v in names])
    drafts: list[tuple[Reply, str]] = []
    for faq in FAQS:
        size = len(names) if faq.topic in ALL_REPLIES_TOPICS else OTHER_REPLIES_PER_QUESTION
        chosen = rng.choice(len(names), size=size, replace=False, p=weights / weights.sum())
        for variant in ["excellent", "solid", *(names[i] for i in sorted(int(i) for i in chosen))]:
            reply = _compose(faq, variant, rng)
            model = SOURCE_MODELS[int(rng.choice(3, p=VARIANTS[variant]["models"]))]
            drafts.append((reply, model))
    order = rng.permutation(len(drafts))
    return [PointItem(f"sa-{n + 1:03d}", drafts[i][0], drafts[i][1]) for n, i in enumerate(order)]


def _build_pairs(seed: int) -> list[PairItem]:
    rng = _rng(seed, "pairs")
    weights = np.array([w for _, _, w in PAIRS])
    drafts: list[PairItem] = []
    for faq in FAQS:
        count = 3 if rng.random() < 0.55 else 4
        if faq.topic in MORE_PAIRS_TOPICS:  # the slice where preference v2 goes wrong needs items
            count = 5
        chosen = rng.choice(len(PAIRS), size=count, replace=False, p=weights / weights.sum())
        for index in sorted(int(i) for i in chosen):
            va, vb, _ = PAIRS[index]
            a = _compose(faq, va, rng, q_spread=0.5)
            b = _compose(faq, vb, rng, q_spread=0.5, avoid_opener=a.opener)
            if va == vb:  # the same quality: nearly the same latent value, different wording
                b.q = float(np.clip(a.q + rng.normal(0.0, 0.12), 1.0, 5.0))
                if b.text == a.text:
                    b.text = _join(b.text, _pick(rng, [c for c in tx.CLOSERS if c]))
            model_a = "helper-large" if rng.random() < 0.7 else "helper-rag"
            drafts.append(PairItem("", faq, a, b, model_a, "helper-small"))
    order = rng.permutation(len(drafts))
    items = []
    for n, i in enumerate(order):
        item = drafts[i]
        item.item_id = f"rp-{n + 1:03d}"
        items.append(item)
    return items


def _points_frame(points: list[PointItem]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "item_id": [p.item_id for p in points],
            "prompt": [p.faq.question for p in points],
            "response": [p.reply.text for p in points],
            "context": [p.faq.context for p in points],
            "reference": [p.faq.reference for p in points],
            "topic": [p.faq.topic for p in points],
            "source_model": [p.source_model for p in points],
        }
    )


def _pairs_frame(pairs: list[PairItem]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "item_id": [p.item_id for p in pairs],
            "prompt": [p.faq.question for p in pairs],
            "response_a": [p.a.text for p in pairs],
            "response_b": [p.b.text for p in pairs],
            "context": [p.faq.context for p in pairs],
            "topic": [p.faq.topic for p in pairs],
            "model_a": [p.model_a for p in pairs],
            "model_b": [p.model_b for p in pairs],
        }
    )


# --- annotations -----------------------------------------------------------------------------------


def _assign(
    rng: np.random.Generator, item_ids: list[str], unlabelled_share: float
) -> dict[str, list[Annotator]]:
    """Which annotators label which item: 2 each, 3 for some, none for the unlabelled share."""
    n_unlabelled = round(unlabelled_share * len(item_ids))
    unlabelled = set(rng.choice(len(item_ids), size=n_unlabelled, replace=False).tolist())
    weights = np.array([a.weight for a in ANNOTATORS])
    weights = weights / weights.sum()
    assignment: dict[str, list[Annotator]] = {}
    for index, item_id in enumerate(item_ids):
        if index in unlabelled:
            continue
        k = 3 if rng.random() < THIRD_ANNOTATOR_SHARE else 2
        chosen = rng.choice(len(ANNOTATORS), size=k, replace=False, p=weights)
        assignment[item_id] = [ANNOTATORS[int(i)] for i in sorted(chosen)]
    return assignment


def _helpfulness_label(rng: np.random.Generator, who: Annotator, t: int) -> float:
    shift = int(rng.choice(5, p=who.shift)) - 2
    return float(min(5, max(1, t + shift)))


def _grounded_label(rng: np.random.Generator, who: Annotator, reply: Reply) -> str:
    if reply.grounded:
        return "fail" if rng.random() < who.false_fail else "pass"
    miss = who.false_pass + (0.06 if reply.variant == "hallucinated" else 0.0)
    return "pass" if rng.random() < miss else "fail"


def _choice_label(rng: np.random.Generator, who: Annotator, d: float) -> str:
    seen = d + rng.normal(0.0, who.sigma)
    if abs(seen) < who.tie_band:
        return "TIE"
    return "A" if seen > 0 else "B"


def _comment(rng: np.random.Generator, who: Annotator, pool: tuple[str, ...]) -> str | None:
    return _pick(rng, pool) if rng.random() < who.comment_rate else None


def _time_spent(rng: np.random.Generator, who: Annotator, median: float) -> float:
    seconds = median * who.speed * float(np.exp(rng.normal(0.0, 0.55)))
    return round(float(np.clip(seconds, 4.0, 240.0)), 1)


def _build_annotations(seed: int, latent: Latent) -> pd.DataFrame:
    rng = _rng(seed, f"annotations {POINTWISE}")
    rows: list[dict[str, Any]] = []
    point_assign = _assign(rng, [p.item_id for p in latent.points], UNLABELLED_SHARE)
    for point in latent.points:
        for who in point_assign.get(point.item_id, []):
            reply = point.reply
            label = _helpfulness_label(rng, who, reply.t)
            comment = _comment(rng, who, tx.HELPFULNESS_COMMENTS[reply.variant])
            rows.append(
                _row(POINTWISE, "helpfulness", point.item_id, who, label, comment, rng, 22.0)
            )
            word = _grounded_label(rng, who, reply)
            comment = _comment(rng, who, tx.GROUNDEDNESS_COMMENTS[word])
            rows.append(
                _row(POINTWISE, "groundedness", point.item_id, who, word, comment, rng, 14.0)
            )
    rng = _rng(seed, f"annotations {PAIRWISE_DATASET}")
    pair_assign = _assign(rng, [p.item_id for p in latent.pairs], PAIRWISE_UNLABELLED_SHARE)
    for pair in latent.pairs:
        for who in pair_assign.get(pair.item_id, []):
            choice = _choice_label(rng, who, pair.d)
            comment = _comment(rng, who, tx.PREFERENCE_COMMENTS[choice])
            rows.append(
                _row(PAIRWISE_DATASET, "preference", pair.item_id, who, choice, comment, rng, 34.0)
            )
    _stamp(_rng(seed, "annotation times"), rows)
    frame = pd.DataFrame(rows)
    frame["label"] = frame["label"].astype(object)
    frame["comment"] = pd.Series([row["comment"] for row in rows], index=frame.index, dtype=object)
    frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True)
    return frame[
        [
            "dataset",
            "criterion",
            "item_id",
            "annotator",
            "label",
            "comment",
            "time_spent_s",
            "created_at",
        ]
    ]


def _row(
    dataset: str,
    criterion: str,
    item_id: str,
    who: Annotator,
    label: float | str,
    comment: str | None,
    rng: np.random.Generator,
    median_s: float,
) -> dict[str, Any]:
    return {
        "dataset": dataset,
        "criterion": criterion,
        "item_id": item_id,
        "annotator": who.name,
        "label": label,
        "comment": comment,
        "time_spent_s": _time_spent(rng, who, median_s),
    }


def _stamp(rng: np.random.Generator, rows: list[dict[str, Any]]) -> None:
    """Give each row a ``created_at``: every annotator works through a shuffled queue of items in a
    few sessions spread over four days, labelling all criteria of an item one after the other."""
    queues: dict[str, dict[tuple[str, str], list[dict[str, Any]]]] = {}
    for row in rows:
        queue = queues.setdefault(row["annotator"], {})
        queue.setdefault((row["dataset"], row["item_id"]), []).append(row)
    for name in sorted(queues):
        blocks = list(queues[name].values())
        order = rng.permutation(len(blocks))
        sessions = np.array_split(order, 4 + int(rng.integers(3)))
        for number, session in enumerate(sessions):
            day = ANNOTATION_DAYS[number % len(ANNOTATION_DAYS)]
            hour = 9.0 + (number // len(ANNOTATION_DAYS)) * 4.5 + float(rng.uniform(0.0, 3.0))
            clock = EPOCH.replace(hour=0) + timedelta(days=day, hours=hour)
            for block in session:
                for row in blocks[int(block)]:
                    clock += timedelta(seconds=row["time_spent_s"])
                    row["created_at"] = clock.replace(microsecond=0)
                clock += timedelta(seconds=float(rng.exponential(6.0)))


# --- criteria and templates ------------------------------------------------------------------------


def _criteria() -> list[DemoCriterion]:
    scales: dict[str, tuple[Scale, DatasetKind, str]] = {
        "helpfulness": (LIKERT_5, "pointwise", POINTWISE),
        "groundedness": (PASS_FAIL, "pointwise", POINTWISE),
        "preference": (PAIRWISE, "pairwise", PAIRWISE_DATASET),
    }
    return [
        DemoCriterion(
            name=name,
            kind=kind,
            scale=scale,
            rubric=tx.RUBRICS[name],
            dataset=dataset,
            description=tx.CRITERION_DESCRIPTIONS[name],
        )
        for name, (scale, kind, dataset) in scales.items()
    ]


TEMPLATE_OF = {
    "helpfulness": "helpfulness-judge",
    "groundedness": "groundedness-judge",
    "preference": "preference-judge",
}
LABEL_FIELD = {"helpfulness": "score", "groundedness": "label", "preference": "choice"}
TEMPLATE_DAYS = {1: 3.2, 2: 11.1}  # v1 on 8 May, v2 on 16 May


def template_content(criterion: DemoCriterion, version: int, seed: int) -> dict[str, Any]:
    """The full content of one judge template version, in the shape the judge layer stores."""
    name = TEMPLATE_OF[criterion.name]
    text = tx.TEMPLATE_TEXTS[(name, version)]
    return {
        "name": name,
        "criterion": criterion.name,
        "kind": criterion.kind,
        "scale": criterion.scale.to_dict()["labels"],
        "system": text["system"],
        "user": text["user"],
        "output": {
            "parser": "json",
            "label_field": LABEL_FIELD[criterion.name],
            "reason_field": "reason",
            "structured": True,
        },
        "model": {
            "model": "demo-judge-mini",
            "temperature": 0.0,
            "max_tokens": 256 if version == 1 else 320,
            "seed": seed,
            "n": 1,
            "logprobs": criterion.name != "preference",
        },
    }


def _templates(criteria: list[DemoCriterion], seed: int) -> list[DemoTemplate]:
    templates = []
    for offset, criterion in enumerate(criteria):
        name = TEMPLATE_OF[criterion.name]
        versions = []
        for version in (1, 2):
            text = tx.TEMPLATE_TEXTS[(name, version)]
            created = EPOCH + timedelta(days=TEMPLATE_DAYS[version], minutes=37 * offset)
            versions.append(
                DemoTemplateVersion(
                    template_content(criterion, version, seed),
                    text["author"],
                    text["note"],
                    created,
                )
            )
        templates.append(DemoTemplate(name, criterion.name, versions))
    return templates


# --- the project -----------------------------------------------------------------------------------


def build_latent(seed: int) -> Latent:
    """The hidden truth of the demo for ``seed``, shared by the annotators and the judges."""
    return Latent(points=_build_points(seed), pairs=_build_pairs(seed))


def build_demo(seed: int = 7) -> DemoProject:
    """Build the whole demo project for ``seed``; the same seed always gives the same project.

    >>> demo = build_demo()
    >>> demo.project_name, [d.name for d in demo.datasets]
    ('Northwind support demo', ['support-answers', 'reply-preference'])
    """
    from evalcore.demo._judges import build_runs

    latent = build_latent(seed)
    criteria = _criteria()
    datasets = [
        DemoDataset(
            name=POINTWISE,
            kind="pointwise",
            description=(
                "Customer questions to the Northwind Outfitters support assistant, each with the "
                "knowledge-base passage it retrieved, a reference answer and the assistant's reply."
            ),
            items=_points_frame(latent.points),
            fields=("prompt", "response", "context", "reference"),
            metadata=("topic", "source_model"),
            created_at=EPOCH + timedelta(days=1, hours=1, minutes=12),
        ),
        DemoDataset(
            name=PAIRWISE_DATASET,
            kind="pairwise",
            description=(
                "The same questions answered twice: a candidate assistant (A) against the current "
                "baseline (B)."
            ),
            items=_pairs_frame(latent.pairs),
            fields=("prompt", "response_a", "response_b", "context"),
            metadata=("topic", "model_a", "model_b"),
            created_at=EPOCH + timedelta(days=1, hours=1, minutes=40),
        ),
    ]
    return DemoProject(
        project_name=PROJECT_NAME,
        description=(
            "A fictional outdoor-gear shop, Northwind Outfitters, checks the LLM judges of its support "
            "assistant against five of its own reviewers. Two datasets, three criteria, two versions "
            "of each judge template and an imported legacy judge, so every page has something to show. "
            "The pass/fail judges' confidences (their probability of pass, as logprobs would give) "
            "are simulated."
        ),
        settings={
            "annotators_per_item": 3,
            "thresholds": {"balanced_accuracy": 0.7, "cohen_kappa": 0.5},
        },
        annotators=[a.name for a in ANNOTATORS],
        datasets=datasets,
        criteria=criteria,
        annotations=_build_annotations(seed, latent),
        templates=_templates(criteria, seed),
        runs=build_runs(seed, latent, criteria),
    )


def demo_summary(demo: DemoProject) -> dict[str, Any]:
    """Counts that describe a demo project: items, annotations, labelled items, runs and statuses.

    >>> summary = demo_summary(build_demo())
    >>> summary["datasets"]["support-answers"]["items"], summary["datasets"]["reply-preference"]["items"]
    (266, 157)
    """
    notes = demo.annotations
    datasets: dict[str, Any] = {}
    for dataset in demo.datasets:
        own = notes[notes["dataset"] == dataset.name]
        labelled = own["item_id"].nunique()
        datasets[dataset.name] = {
            "kind": dataset.kind,
            "items": len(dataset.items),
            "labelled_items": int(labelled),
            "unlabelled_items": len(dataset.items) - int(labelled),
            "topics": sorted(dataset.items["topic"].unique().tolist()),
        }
    criteria: dict[str, Any] = {}
    for criterion in demo.criteria:
        own = notes[notes["criterion"] == criterion.name]
        per_item = own.groupby("item_id").size()
        criteria[criterion.name] = {
            "annotations": len(own),
            "labelled_items": len(per_item),
            "annotators_per_item": round(float(per_item.mean()), 2) if len(per_item) else 0.0,
            "label_counts": {
                str(k if isinstance(k, str) else int(k)): int(v)
                for k, v in own["label"].value_counts().sort_index().items()
            },
        }
    runs: dict[str, Any] = {}
    for run in demo.runs:
        statuses = run.results["status"].value_counts()
        runs[run.name] = {
            "criterion": run.criterion,
            "rows": len(run.results),
            "items": int(run.results["item_id"].nunique()),
            "ok": int(statuses.get("ok", 0)),
            "unparsed": int(statuses.get("unparsed", 0)),
            "failed": int(statuses.get("failed", 0)),
        }
    return {
        "project": demo.project_name,
        "datasets": datasets,
        "criteria": criteria,
        "annotators": list(demo.annotators),
        "annotations": len(notes),
        "annotations_with_comment": int(notes["comment"].notna().sum()),
        "templates": len(demo.templates),
        "template_versions": sum(len(t.versions) for t in demo.templates),
        "runs": runs,
    }
