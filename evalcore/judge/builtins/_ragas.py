"""RAGAS-style multi-step metrics: factual correctness and the summarization score.

The prompts and few-shot examples are this project's own; the steps and the arithmetic follow the
reference definitions (see ``DESIGN.md`` §2 and :func:`evalcore.metrics.factual_correctness_score`,
:func:`evalcore.metrics.summarization_score`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from evalcore.errors import ConfigError
from evalcore.judge.builtins._pipeline import (
    PipelineMetric,
    ReplyError,
    StepPrompt,
    Steps,
    json_list,
)
from evalcore.judge.builtins._spec import blank, plain_list
from evalcore.limits import load_json

__all__ = ["FactualCorrectness", "SummarizationScore", "item_contexts"]

Level = Literal["low", "high"]

# --- claim decomposition ------------------------------------------------------------------------------

_GUIDANCE: dict[str, dict[str, str]] = {
    "atomicity": {
        "low": "Claims may keep facts that belong together in one sentence; split a sentence only "
        "where it joins unrelated statements.",
        "high": "Make every claim atomic: one fact per claim, so a sentence stating several facts "
        "becomes several claims.",
    },
    "coverage": {
        "low": "Cover the main statements only; leave out minor details, asides and "
        "qualifications.",
        "high": "Cover everything the text states, including numbers, dates, names, places and "
        "qualifications.",
    },
}

_EXAMPLE_TEXTS = (
    "The Rhine rises in the Swiss Alps and flows about 1,230 kilometres to the North Sea, passing "
    "through six countries; Basel, Cologne and Rotterdam lie on its banks.",
    "Mara Olsen, a marine biologist at the University of Bergen, published a study in 2019 showing "
    "that cod in the Barents Sea had moved about 200 kilometres north since 1990.",
)

#: Claims of each example text for every (atomicity, coverage) setting.
_EXAMPLE_CLAIMS: dict[tuple[str, str], tuple[list[str], list[str]]] = {
    ("low", "low"): (
        [
            "The Rhine flows from the Swiss Alps to the North Sea.",
            "Basel, Cologne and Rotterdam lie on the Rhine.",
        ],
        ["Mara Olsen published a 2019 study showing that cod in the Barents Sea had moved north."],
    ),
    ("low", "high"): (
        [
            "The Rhine rises in the Swiss Alps and flows about 1,230 kilometres to the North Sea.",
            "The Rhine passes through six countries.",
            "Basel, Cologne and Rotterdam lie on the banks of the Rhine.",
        ],
        [
            "Mara Olsen is a marine biologist at the University of Bergen.",
            "In 2019 Mara Olsen published a study showing that cod in the Barents Sea had moved "
            "about 200 kilometres north since 1990.",
        ],
    ),
    ("high", "low"): (
        ["The Rhine rises in the Swiss Alps.", "The Rhine flows into the North Sea."],
        [
            "Mara Olsen published a study in 2019.",
            "Mara Olsen's study showed that cod in the Barents Sea had moved north.",
        ],
    ),
    ("high", "high"): (
        [
            "The Rhine rises in the Swiss Alps.",
            "The Rhine flows into the North Sea.",
            "The Rhine is about 1,230 kilometres long.",
            "The Rhine passes through six countries.",
            "Basel lies on the Rhine.",
            "Cologne lies on the Rhine.",
            "Rotterdam lies on the Rhine.",
        ],
        [
            "Mara Olsen is a marine biologist.",
            "Mara Olsen works at the University of Bergen.",
            "Mara Olsen published a study in 2019.",
            "Mara Olsen's study showed that cod in the Barents Sea had moved north.",
            "The cod in the Barents Sea had moved about 200 kilometres.",
            "The movement of the cod was measured from 1990 onwards.",
        ],
    ),
}

DECOMPOSE = StepPrompt(
    "decompose",
    system=(
        "You break texts into claims: short sentences that each state something checkable and make "
        "sense on their own."
    ),
    user="""
Break the text below into claims.

- {{ atomicity_guidance }}
- {{ coverage_guidance }}
- Each claim must stand alone: replace pronouns and vague references ("it", "the firm", "that
  year") with what they refer to.
- Keep only what the text asserts. Do not add, judge or correct anything.

Examples:
{{ examples }}

Text:
{{ text }}

Reply with JSON only: {"claims": ["...", "..."]}
""",
)

VERIFY = StepPrompt(
    "verify",
    system=(
        "You decide whether statements follow from a passage. A statement is supported only when "
        "the passage says it or it follows directly from what the passage says; what you know from "
        "elsewhere does not count."
    ),
    user="""
Passage:
{{ premise }}

Statements (a JSON array):
{{ claims }}

Give a verdict for every statement, in the same order: 1 when the passage supports it, 0 when the
passage contradicts it or does not say.

Example:
Passage: "The museum opens at 9:00 on weekdays and at 10:00 on Saturdays; it is closed on Sundays."
Statements: ["The museum opens at 10:00 on Saturdays.", "The museum is open every day.", "Entry is free."]
Reply: {"verdicts": [{"statement": "The museum opens at 10:00 on Saturdays.", "reason": "stated directly", "verdict": 1}, {"statement": "The museum is open every day.", "reason": "it is closed on Sundays", "verdict": 0}, {"statement": "Entry is free.", "reason": "prices are not mentioned", "verdict": 0}]}

Reply with JSON only: {"verdicts": [{"statement": "...", "reason": "...", "verdict": 1 or 0}]}, one
entry per statement.
""",
)


def _examples(atomicity: str, coverage: str) -> str:
    claims = _EXAMPLE_CLAIMS[(atomicity, coverage)]
    blocks = []
    for text, found in zip(_EXAMPLE_TEXTS, claims, strict=True):
        blocks.append(f"Text: {text}\nReply: {json.dumps({'claims': found}, ensure_ascii=False)}")
    return "\n\n".join(blocks)


def _claims(obj: dict[str, Any]) -> list[str]:
    return [str(c) for c in json_list(obj, "claims")]


def _verdicts(count: int) -> Any:
    def parse(obj: dict[str, Any]) -> list[dict[str, Any]]:
        entries = json_list(obj, "verdicts", strings=False)
        if len(entries) != count:
            raise ReplyError(f"expected {count} verdicts, one per statement, got {len(entries)}")
        out: list[dict[str, Any]] = []
        for number, entry in enumerate(entries, start=1):
            if not isinstance(entry, Mapping):
                raise ReplyError(f"verdict {number} is not an object")
            raw = entry.get("verdict")
            value = _binary(raw)
            if value is None:
                raise ReplyError(f"verdict {number} is {raw!r}, not 1 or 0")
            out.append(
                {
                    "statement": str(entry.get("statement", "")),
                    "reason": str(entry.get("reason", "")),
                    "verdict": value,
                }
            )
        return out

    return parse


def _binary(value: object) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float) and value in (0, 1):
        return int(value)
    if isinstance(value, str) and value.strip().lower() in ("0", "1", "yes", "no"):
        return 1 if value.strip().lower() in ("1", "yes") else 0
    return None


@dataclass(frozen=True)
class FactualCorrectness(PipelineMetric):
    """RAGAS factual correctness of a response against a reference.

    Steps: decompose the response into claims; verify them against the reference (supported → TP,
    not → FP); unless ``mode="precision"``, decompose the reference and verify its claims against the
    response (not supported → FN). The score is
    :func:`~evalcore.metrics.factual_correctness_score` (precision, recall or F-beta with ``beta``).
    ``atomicity`` and ``coverage`` (``"low"``/``"high"``) choose the decomposition's guidance and
    few-shot examples. An empty claim list needs no verification request.

    ``details``: ``response_claims``, ``response_verdicts`` (``statement``, ``reason``,
    ``verdict``), ``reference_claims``, ``reference_verdicts``, ``tp``, ``fp``, ``fn``, ``mode``,
    ``beta``, ``score``, ``threshold``, ``result`` and ``requests`` (one entry per request).
    """

    mode: Literal["precision", "recall", "f1"] = "f1"
    beta: float = 1.0
    atomicity: Level = "low"
    coverage: Level = "low"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.mode not in ("precision", "recall", "f1"):
            raise ConfigError(f"mode must be precision, recall or f1, not {self.mode!r}")
        if not isinstance(self.beta, int | float) or self.beta <= 0:
            raise ConfigError(f"beta must be a positive number, not {self.beta!r}")
        for name in ("atomicity", "coverage"):
            if getattr(self, name) not in ("low", "high"):
                raise ConfigError(f"{name} must be low or high, not {getattr(self, name)!r}")
        object.__setattr__(self, "beta", float(self.beta))

    def default_prompts(self) -> dict[str, StepPrompt]:
        return {"decompose": DECOMPOSE, "verify": VERIFY}

    def max_requests(self) -> int:
        return 2 if self.mode == "precision" else 4

    async def _decompose(self, steps: Steps, text: str, key: str) -> list[str]:
        variables = {
            "atomicity_guidance": _GUIDANCE["atomicity"][self.atomicity],
            "coverage_guidance": _GUIDANCE["coverage"][self.coverage],
            "examples": _examples(self.atomicity, self.coverage),
            "text": text,
        }
        claims = await steps.ask(self.prompt("decompose"), variables, _claims)
        steps.details[key] = claims
        return claims

    async def _verify(
        self, steps: Steps, premise: str, claims: list[str], key: str
    ) -> list[dict[str, Any]]:
        if not claims:
            steps.details[key] = []
            return []
        variables = {"premise": premise, "claims": json.dumps(claims, ensure_ascii=False)}
        verdicts: list[dict[str, Any]] = await steps.ask(
            self.prompt("verify"), variables, _verdicts(len(claims))
        )
        steps.details[key] = verdicts
        return verdicts

    async def evaluate(self, fields: Mapping[str, Any], steps: Steps) -> tuple[float, str]:
        response = str(fields.get("response") or "")
        reference = str(fields.get("reference") or "")
        steps.details.update({"mode": self.mode, "beta": self.beta})
        claims = await self._decompose(steps, response, "response_claims")
        verdicts = await self._verify(steps, reference, claims, "response_verdicts")
        tp = sum(v["verdict"] for v in verdicts)
        fp = len(verdicts) - tp
        fn = 0
        if self.mode != "precision":
            ref_claims = await self._decompose(steps, reference, "reference_claims")
            ref_verdicts = await self._verify(steps, response, ref_claims, "reference_verdicts")
            fn = len(ref_verdicts) - sum(v["verdict"] for v in ref_verdicts)
        steps.details.update({"tp": tp, "fp": fp, "fn": fn})
        from evalcore.metrics import factual_correctness_score  # scipy loads only when needed

        score = factual_correctness_score(tp, fp, fn, mode=self.mode, beta=self.beta)
        what = {"precision": "precision", "recall": "recall", "f1": f"F-beta (β={self.beta:g})"}
        reason = (
            f"{tp} of {tp + fp} response claims are supported by the reference"
            + ("" if self.mode == "precision" else f"; {fn} reference claims are missing")
            + f": TP {tp}, FP {fp}, FN {fn}, {what[self.mode]} {score:.2f}"
        )
        return score, reason


# --- summarization ---------------------------------------------------------------------------------

KEYPHRASES = StepPrompt(
    "keyphrases",
    system="You pick out the key phrases of a text: the specific facts its content rests on.",
    user="""
List the key phrases of the text below: names of people, organisations and places, dates, amounts of
money, percentages and other figures that matter to what it says. Copy each phrase as it appears.

Example:
Text: "In March 2021 Lindqvist Foods bought the Danish bakery chain Korn for 40 million euros, raising its
market share in Denmark to 18%."
Reply: {"keyphrases": ["March 2021", "Lindqvist Foods", "Korn", "Danish bakery chain", "40 million euros", "Denmark", "18%"]}

Text:
{{ text }}

Reply with JSON only: {"keyphrases": ["...", "..."]}
""",
)

QUESTIONS = StepPrompt(
    "questions",
    system="You write yes/no questions that check whether a text's key facts are kept.",
    user="""
Write closed questions about the text below, each built around one or more of the key phrases. Every
question must be answered "yes" by the text itself; never ask something the text denies or does not
say.

Example:
Text: "In March 2021 Lindqvist Foods bought the Danish bakery chain Korn for 40 million euros, raising its
market share in Denmark to 18%."
Key phrases: ["March 2021", "Lindqvist Foods", "Korn", "40 million euros", "18%"]
Reply: {"questions": ["Did Lindqvist Foods buy Korn?", "Did the purchase happen in March 2021?", "Was the price 40 million euros?", "Did the market share in Denmark reach 18%?"]}

Text:
{{ text }}

Key phrases:
{{ keyphrases }}

Reply with JSON only: {"questions": ["...", "..."]}
""",
)

ANSWERS = StepPrompt(
    "answers",
    system="You answer yes/no questions using only the summary you are given.",
    user="""
Answer each question from the summary below alone, in the same order: "1" when the summary says or
plainly implies yes, "0" when it says no or does not tell.

Example:
Summary: "Lindqvist Foods bought Korn in 2021."
Questions: ["Did Lindqvist Foods buy Korn?", "Was the price 40 million euros?"]
Reply: {"answers": ["1", "0"]}

Summary:
{{ summary }}

Questions (a JSON array):
{{ questions }}

Reply with JSON only: {"answers": ["1" or "0", ...]}, one per question.
""",
)


def item_contexts(fields: Mapping[str, Any]) -> list[str]:
    """The source texts of an item: a list in ``retrieved_contexts`` / ``reference_contexts`` /
    ``contexts`` when present (RAGAS), else ``[context]``."""
    for key in ("reference_contexts", "retrieved_contexts", "contexts"):
        value = fields.get(key)
        value = plain_list(value)
        if isinstance(value, str) and value.strip().startswith("["):
            with contextlib.suppress(ValueError):
                value = load_json(value)
        if isinstance(value, list | tuple) and not blank(value):
            return [str(v) for v in value if not blank(v)]
    context = fields.get("context")
    return [] if blank(context) else [str(context)]


def _keyphrases(obj: dict[str, Any]) -> list[str]:
    return [str(k) for k in json_list(obj, "keyphrases")]


def _questions(obj: dict[str, Any]) -> list[str]:
    questions = [str(q) for q in json_list(obj, "questions")]
    if not questions:
        raise ReplyError("no questions were written")
    return questions


def _answers(count: int) -> Any:
    def parse(obj: dict[str, Any]) -> list[str]:
        entries = json_list(obj, "answers", strings=False)
        if len(entries) != count:
            raise ReplyError(f"expected {count} answers, one per question, got {len(entries)}")
        # Answers are kept as written: the QA score counts only "1" (lower-cased, never stripped),
        # so " 1" or "yes" is an answer that does not count, not a reply to ask again.
        out: list[str] = []
        for number, entry in enumerate(entries, start=1):
            if isinstance(entry, Mapping | list):
                raise ReplyError(f"answer {number} is {entry!r}, not a string")
            out.append(entry if isinstance(entry, str) else json.dumps(entry))
        return out

    return parse


@dataclass(frozen=True)
class SummarizationScore(PipelineMetric):
    """RAGAS summarization score of a summary (``response``) of its source texts (``context``).

    Steps: key phrases of the source; closed questions the source answers "yes"; the answers the
    summary gives ("1"/"0"). The score is :func:`~evalcore.metrics.summarization_score`: QA score ·
    (1 − ``coeff``) + conciseness · ``coeff``, conciseness over the source texts joined with "\\n"
    (a RAGAS ``reference_contexts`` / ``retrieved_contexts`` list when the item has one, else its
    ``context``).

    ``details``: ``keyphrases``, ``questions``, ``answers``, ``qa_score``, ``conciseness``,
    ``coeff``, ``score``, ``threshold``, ``result`` and ``requests``.
    """

    coeff: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.coeff, int | float) or not 0.0 <= float(self.coeff) <= 1.0:
            raise ConfigError(f"coeff must be between 0 and 1, not {self.coeff!r}")
        object.__setattr__(self, "coeff", float(self.coeff))

    def default_prompts(self) -> dict[str, StepPrompt]:
        return {"keyphrases": KEYPHRASES, "questions": QUESTIONS, "answers": ANSWERS}

    async def evaluate(self, fields: Mapping[str, Any], steps: Steps) -> tuple[float, str]:
        summary = str(fields.get("response") or "")
        contexts = item_contexts(fields)
        text = "\n".join(contexts)
        steps.details["coeff"] = self.coeff
        keyphrases = await steps.ask(self.prompt("keyphrases"), {"text": text}, _keyphrases)
        steps.details["keyphrases"] = keyphrases
        questions = await steps.ask(
            self.prompt("questions"),
            {"text": text, "keyphrases": json.dumps(keyphrases, ensure_ascii=False)},
            _questions,
        )
        steps.details["questions"] = questions
        answers = await steps.ask(
            self.prompt("answers"),
            {"summary": summary, "questions": json.dumps(questions, ensure_ascii=False)},
            _answers(len(questions)),
        )
        steps.details["answers"] = answers
        from evalcore.metrics import (  # scipy loads only when needed
            conciseness_score,
            summarization_qa_score,
            summarization_score,
        )

        qa = summarization_qa_score(answers)
        concise = conciseness_score(summary, contexts)
        steps.details.update({"qa_score": qa, "conciseness": concise})
        score = summarization_score(answers, summary, contexts, coeff=self.coeff)
        reason = (
            f"the summary answers {round(qa * len(answers))} of {len(answers)} questions from the source "
            f"(QA {qa:.2f}); conciseness {concise:.2f}; "
            f"{1 - self.coeff:g}·{qa:.2f} + {self.coeff:g}·{concise:.2f} = {score:.2f}"
        )
        return score, reason
