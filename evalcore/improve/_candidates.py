"""Candidate prompts: few-shot examples from dev items, rewrites proposed by an optimiser model.

Everything here reads a :class:`DevView`: the dev items, their human labels and comments, and the
starting judge's results on them. Test items are never handed to this module.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evalcore.judge import (
    BUILTIN_VARIABLES,
    JudgeItem,
    JudgeResult,
    JudgeTemplate,
    template_variables,
)
from evalcore.labels import Label, format_label

__all__ = [
    "Candidate",
    "CandidateKind",
    "DevView",
    "add_examples",
    "apply_rewrite",
    "fewshot_sets",
    "parse_rewrite",
    "rewrite_prompt",
]

CandidateKind = Literal["start", "fewshot", "rewrite", "manual"]

_EXAMPLES_OPEN = "=== Labelled examples (decided by people; follow their judgement) ==="
_EXAMPLES_CLOSE = "=== End of labelled examples ==="
#: Characters of one item field shown in an example or to the optimiser.
FIELD_CHARS = 1200


@dataclass(frozen=True)
class Candidate:
    """One prompt to compare: its kind, the template, the dev example ids it shows, and how made."""

    id: str
    kind: CandidateKind
    template: JudgeTemplate
    examples: tuple[str, ...] = ()
    optimizer_model: str | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (the template by its version and content)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "version": self.template.version,
            "examples": list(self.examples),
            "optimizer_model": self.optimizer_model,
            "note": self.note,
            "template": self.template.content_dict(),
        }


@dataclass(frozen=True)
class DevView:
    """What candidate generation may see: dev items only."""

    items: tuple[JudgeItem, ...]
    human: Mapping[str, Label]
    comments: Mapping[str, str]
    results: Mapping[str, JudgeResult]

    def __post_init__(self) -> None:
        ids = {i.item_id for i in self.items}
        stray = (set(self.human) | set(self.comments) | set(self.results)) - ids
        if stray:
            raise ValueError(f"the dev view holds data of {len(stray)} item(s) outside dev")

    def wrong(self) -> list[str]:
        """Dev items the starting judge did not get right (wrong label or no label), in order."""
        return [i.item_id for i in self.items if not self.right(i.item_id)]

    def right(self, item_id: str) -> bool:
        result = self.results.get(item_id)
        return result is not None and result.status == "ok" and result.label == self.human[item_id]


def _literal(text: str) -> str:
    """``text`` as Jinja source that renders to exactly ``text``."""
    return text.replace("{", "{{ '{' }}") if "{" in text else text


def item_text(template: JudgeTemplate, item: JudgeItem) -> str:
    """The fields of ``item`` the template shows, one ``name: value`` block each."""
    names = sorted(template_variables(template) - BUILTIN_VARIABLES) or sorted(item.fields)
    parts: list[str] = []
    for name in names:
        value = item.fields.get(name)
        text = "" if value is None else str(value)
        if len(text) > FIELD_CHARS:
            text = text[:FIELD_CHARS] + " …"
        parts.append(f"{name}: {text}")
    return "\n".join(parts)


def examples_section(template: JudgeTemplate, view: DevView, ids: Sequence[str]) -> str:
    """The plain text of the examples section for dev items ``ids``."""
    by_id = {i.item_id: i for i in view.items}
    blocks = [_EXAMPLES_OPEN]
    for n, item_id in enumerate(ids, 1):
        lines = [f"Example {n}:", item_text(template, by_id[item_id])]
        lines.append(f"Correct label: {format_label(view.human[item_id])}")
        comment = (view.comments.get(item_id) or "").strip()
        if comment:
            lines.append(f"Why: {comment}")
        blocks.append("\n".join(lines))
    blocks.append(_EXAMPLES_CLOSE)
    return "\n\n".join(blocks)


def add_examples(template: JudgeTemplate, section: str) -> JudgeTemplate:
    """``template`` with the examples section appended to its system prompt (as literal text)."""
    system = template.system.rstrip()
    joined = f"{system}\n\n{_literal(section)}" if system else _literal(section)
    return dataclasses.replace(template, system=joined)


def _tokens(text: str) -> int:
    return (len(text) + 3) // 4


def fewshot_sets(
    template: JudgeTemplate,
    view: DevView,
    *,
    count: int,
    max_examples: int,
    token_budget: int,
    seed: int,
) -> list[tuple[tuple[str, ...], str]]:
    """Up to ``count`` distinct (example ids, section text) pairs, seeded.

    Items the starting judge got wrong come first in the pool (shuffled by the seed), then the
    rest. Each set takes a seeded number of examples (1 to ``max_examples``), mostly from the
    wrong ones, in a seeded order, and drops examples from the end until the section fits
    ``token_budget`` (tokens as characters / 4).
    """
    rng = random.Random(seed)
    wrong = view.wrong()
    rng.shuffle(wrong)
    rest = [i.item_id for i in view.items if i.item_id not in set(wrong)]
    rng.shuffle(rest)
    out: list[tuple[tuple[str, ...], str]] = []
    seen: set[tuple[str, ...]] = set()
    attempts = 0
    while len(out) < count and attempts < count * 10 and (wrong or rest):
        attempts += 1
        size = rng.randint(1, max(1, max_examples))
        pool_wrong = rng.sample(wrong, min(len(wrong), size))
        fill = size - len(pool_wrong)
        if fill > 0 or rng.random() < 0.3:
            extra = rng.sample(rest, min(len(rest), max(fill, 1)))
            chosen = (pool_wrong + extra)[:size] if fill <= 0 else pool_wrong + extra
        else:
            chosen = pool_wrong
        rng.shuffle(chosen)
        section = examples_section(template, view, chosen)
        while len(chosen) > 1 and _tokens(section) > token_budget:
            chosen = chosen[:-1]
            section = examples_section(template, view, chosen)
        if _tokens(section) > token_budget or not chosen:
            continue
        key = tuple(chosen)
        if key in seen:
            continue
        seen.add(key)
        out.append((key, section))
    return out


# --- rewrites -----------------------------------------------------------------------------------

_REWRITE_INTRO = """\
You improve the instructions of an automatic grader (an "LLM judge"). The judge reads an item and \
answers with a label on the scale: {labels}. People have labelled the same items, and below are \
cases where the judge and the people disagree, with the judge's stated reason and, where one was \
written, the person's comment.

Write better instructions: say what the people evidently mean by each label, in general terms that \
would help on new items. Do not mention the example items or their ids. Keep the judge's output \
format as it is.

Current system instructions:
<<<
{system}
>>>

Current rubric:
<<<
{rubric}
>>>

Disagreements ({shown} of {total}):
"""

_REWRITE_OUTRO = """\
Answer with one JSON object and nothing else:
{"system": "<the revised system instructions>", "rubric": "<the revised rubric>"}
"""


def rewrite_prompt(
    template: JudgeTemplate, view: DevView, *, shown: int, seed: int
) -> tuple[list[dict[str, str]], tuple[str, ...]]:
    """The optimiser's messages for one rewrite, and the dev ids of the disagreements it shows
    (a seeded sample of at most ``shown``)."""
    rng = random.Random(seed)
    wrong = view.wrong()
    sample = rng.sample(wrong, min(shown, len(wrong)))
    by_id = {i.item_id: i for i in view.items}
    labels = ", ".join(format_label(x) for x in template.scale.labels)
    text = _REWRITE_INTRO.format(
        labels=labels,
        system=template.system.strip() or "(none)",
        rubric=template.rubric.strip() or "(none)",
        shown=len(sample),
        total=len(wrong),
    )
    cases: list[str] = []
    for n, item_id in enumerate(sample, 1):
        result = view.results.get(item_id)
        if result is not None and result.status == "ok":
            judge = f"Judge said: {format_label(result.label)} (reason: {result.reason.strip()})"
        else:
            judge = "Judge gave no usable label."
        lines = [f"Case {n}:", item_text(template, by_id[item_id]), judge]
        lines.append(f"People said: {format_label(view.human[item_id])}")
        comment = (view.comments.get(item_id) or "").strip()
        if comment:
            lines.append(f"Their comment: {comment}")
        cases.append("\n".join(lines))
    body = text + "\n\n".join(cases) + "\n\n" + _REWRITE_OUTRO
    return [{"role": "user", "content": body}], tuple(sample)


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def parse_rewrite(text: str) -> tuple[str, str] | None:
    """``(system, rubric)`` from the optimiser's reply, or None when it holds no such JSON object
    (the first object with a text ``system`` or ``rubric``; a fenced block is read first)."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for chunk in candidates:
        start = chunk.find("{")
        while start != -1:
            try:
                value, _ = decoder.raw_decode(chunk, start)
            except ValueError:
                start = chunk.find("{", start + 1)
                continue
            if isinstance(value, dict):
                system, rubric = value.get("system"), value.get("rubric")
                if isinstance(system, str) or isinstance(rubric, str):
                    s = system.strip() if isinstance(system, str) else ""
                    r = rubric.strip() if isinstance(rubric, str) else ""
                    if s or r:
                        return s, r
            start = chunk.find("{", start + 1)
    return None


def apply_rewrite(template: JudgeTemplate, system: str, rubric: str) -> JudgeTemplate:
    """``template`` with the proposed system text and rubric (both literal text).

    An empty proposal keeps the old part. When the template's prompts do not show ``{{ rubric }}``,
    the rubric is written into the system prompt so that the judge sees it.
    """
    new_system = _literal(system) if system else template.system
    new_rubric = rubric or template.rubric
    if rubric and "rubric" not in template_variables(template):
        new_system = f"{new_system.rstrip()}\n\nRubric:\n{_literal(rubric)}".lstrip()
    return dataclasses.replace(template, system=new_system, rubric=new_rubric)
