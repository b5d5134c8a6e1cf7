"""Reading a judge's reply: structured-output schemas, reply parsing, label probabilities from
logprobs, sample voting.

The parser never guesses. A reply yields a label only when it names a value on the template's scale;
anything else (an empty reply, a refusal, a value off the scale such as ``7`` on 1–5 or ``3.5``) is
``"unparsed"`` with the reason, and the raw text is kept by the runner for a reviewer. Parsing never
raises.

Order of attempts in :func:`parse_reply` (parser ``"auto"``):

1. the whole reply as a JSON object;
2. a JSON object inside ```` ```json ```` fences or inside prose (the last object that has a label
   field wins);
3. text patterns: ``Score: 4``, ``score of 4``, ``Rating: 4``, ``4/5``, ``4 out of 5``, ``[[A]]`` /
   ``[[B]]`` / ``[[C]]`` (C is a tie), ``Verdict: tie``, ``Final answer: pass``, or a reply that is
   nothing but a label. When several match, the one that ends last in the reply wins (judges tend to
   reason first and conclude last).

The value found is read through :meth:`evalcore.labels.Scale.coerce`, so the common pairwise and
pass/fail vocabularies map onto the scale.

**Hostile replies.** A reply is text we do not control, so every step runs in time linear in what it
reads, and what it reads is capped: a reply longer than :data:`MAX_REPLY_CHARS` is read as its first
and its last ``MAX_REPLY_CHARS // 2`` characters (the middle is skipped). The patterns have no nested
or adjacent unbounded repeats that could backtrack; fenced blocks are found by a plain scan for
```` ``` ````; at most :data:`MAX_JSON_STARTS` ``{`` positions in prose are tried as the start of an
object; and JSON nested too deeply for the decoder gives an ``"unparsed"`` result with that reason.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias

from evalcore.judge._template import JudgeTemplate
from evalcore.labels import Label, Scale, format_label
from evalcore.limits import MAX_JSON_DEPTH, JsonTooDeepError, load_json, value_depth

__all__ = [
    "MAX_JSON_STARTS",
    "MAX_REPLY_CHARS",
    "LabelProbabilities",
    "ParsedReply",
    "TokenLogprobs",
    "aggregate_samples",
    "find_json_objects",
    "label_probabilities",
    "logprob_score",
    "mean_probabilities",
    "nearest_label",
    "parse_reply",
    "response_format_for",
    "sample_shares",
    "scale_description",
    "schema_response_format",
    "vote",
]

#: Per generated token: the token text and its top alternatives as ``(token, logprob)`` pairs.
TokenLogprobs: TypeAlias = Sequence[tuple[str, Sequence[tuple[str, float]]]]

_LABEL_KEYS = ("score", "rating", "label", "choice", "verdict", "answer", "result", "grade")
_REASON_KEYS = ("reason", "reasoning", "explanation", "rationale", "justification")
_FENCE = "```"
#: The most characters of a reply the parser reads: the first and the last half of this many.
MAX_REPLY_CHARS = 65_536
#: The most ``{`` positions in prose tried (and failed) as the start of a JSON object.
MAX_JSON_STARTS = 64
#: Joins the start and the end of a long reply; no pattern matches across it.
_SEAM = "\x00"
_NUMBER = r"[-+]?\d+(?:\.\d+)?"
_KEYWORDS = r"(?:final\s+)?(?:score|rating|grade|label|verdict|choice|answer|decision|judg(?:e)?ment|result|severity|level|category)"
_REFUSAL = re.compile(
    r"^\s*(?:i'?m sorry|i am sorry|sorry,|i can(?:no|')t|i cannot|i won'?t|as an ai)", re.IGNORECASE
)


@dataclass(frozen=True)
class ParsedReply:
    """What one reply said: ``status`` ``"ok"`` with a label, or ``"unparsed"`` with the reason.

    ``span`` is the character range of the label in the reply, used to find the label's token for
    :func:`logprob_score`.
    """

    status: Literal["ok", "unparsed"]
    label: Label | None = None
    reason: str = ""
    error: str = ""
    span: tuple[int, int] | None = None


def scale_description(scale: Scale) -> str:
    """``"1–5"`` for a run of whole numbers, else the labels joined by ``", "``.

    >>> scale_description(Scale.likert(1, 5)), scale_description(Scale(("pass", "fail"), "binary"))
    ('1–5', 'pass, fail')
    """
    labels = scale.labels
    if scale.is_numeric and len(labels) > 2:
        nums = [float(x) for x in labels]
        if all(x.is_integer() for x in nums) and nums == [nums[0] + i for i in range(len(nums))]:
            return f"{format_label(nums[0])}–{format_label(nums[-1])}"
    return ", ".join(scale.display_labels)


# --- structured output -----------------------------------------------------------------------------


def response_format_for(template: JudgeTemplate) -> dict[str, Any]:
    """A strict JSON-schema ``response_format`` asking for ``{reason, <label_field>}``.

    Numeric scales ask for a number from the scale's enum; words (pairwise A/B/TIE included) for a
    string from it. The reason comes first so that the model explains before it decides.

    >>> t = JudgeTemplate("t", "c", Scale.likert(1, 3), "", "{{ response }}")
    >>> response_format_for(t)["json_schema"]["schema"]["properties"]
    {'reason': {'type': 'string'}, 'score': {'type': 'integer', 'enum': [1, 2, 3]}}
    """
    return schema_response_format(
        template.scale,
        label_field=template.label_field,
        reason_field=template.output.reason_field,
        name=template.criterion or template.name,
    )


def schema_response_format(
    scale: Scale, *, label_field: str, reason_field: str = "reason", name: str = "verdict"
) -> dict[str, Any]:
    """:func:`response_format_for` from its parts."""
    labels = scale.to_dict()["labels"]
    if scale.is_numeric:
        kind = "integer" if all(isinstance(x, int) for x in labels) else "number"
        label_schema: dict[str, Any] = {"type": kind, "enum": labels}
    else:
        label_schema = {"type": "string", "enum": [str(x) for x in labels]}
    safe_name = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "verdict"
    return {
        "type": "json_schema",
        "json_schema": {
            "name": safe_name,
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {reason_field: {"type": "string"}, label_field: label_schema},
                "required": [reason_field, label_field],
                "additionalProperties": False,
            },
        },
    }


# --- parsing ---------------------------------------------------------------------------------------


def _value_pattern(scale: Scale) -> str:
    """The regex for one label value: any number for numeric scales, else the scale's vocabulary."""
    if scale.is_numeric:
        return _NUMBER
    words: set[str] = {format_label(x) for x in scale.labels}
    if scale.kind == "pairwise":
        words |= {
            "tie",
            "equal",
            "draw",
            "model_a",
            "model_b",
            "model a",
            "model b",
            "both",
            "neither",
        }
    if {"pass", "fail"} == set(scale.labels):
        words |= {"passed", "failed", "yes", "no", "true", "false", "correct", "incorrect"}
    singles = sorted(w for w in words if len(w) == 1)
    longer = sorted((w for w in words if len(w) > 1), key=lambda w: (-len(w), w))
    parts = [re.escape(w) for w in longer]
    if singles:  # one-letter labels only in capitals, so "a bit" is not the label "A"
        parts.append("(?-i:" + "|".join(re.escape(w.upper()) for w in singles) + ")")
    return "(?:" + "|".join(parts) + ")"


@dataclass(frozen=True)
class _Patterns:
    keyword: re.Pattern[str]
    fraction: re.Pattern[str] | None
    out_of: re.Pattern[str] | None
    brackets: re.Pattern[str] | None
    whole: re.Pattern[str]


_PATTERN_CACHE: dict[Scale, _Patterns] = {}


def _patterns(scale: Scale) -> _Patterns:
    cached = _PATTERN_CACHE.get(scale)
    if cached is not None:
        return cached
    value = _value_pattern(scale)
    # Every optional part owns the white space after it, so no two repeats compete for the same
    # run of spaces (the old form, three adjacent ``\s*``, backtracked in cubic time); the look-ahead
    # for trailing digits reads at most 32 characters.
    keyword = re.compile(
        rf"\b{_KEYWORDS}\s*(?:(?:is|was|of|would\s+be|=|:|-)\s*)?(?:[:=]\s*)?"
        rf"(?:[*_\"'`\[(]\s*)*(?P<v>{value})(?![\w.]{{0,32}}\d)\b",
        re.IGNORECASE,
    )
    numeric = scale.is_numeric
    patterns = _Patterns(
        keyword=keyword,
        fraction=re.compile(rf"(?<![\w.])(?P<v>{_NUMBER})\s*/\s*(?P<max>\d+)\b")
        if numeric
        else None,
        out_of=re.compile(rf"(?<![\w.])(?P<v>{_NUMBER})\s+out\s+of\s+(?P<max>\d+)\b", re.IGNORECASE)
        if numeric
        else None,
        brackets=re.compile(r"\[\[\s*(?P<v>[ABCabc]|tie)\s*\]\]", re.IGNORECASE)
        if scale.kind == "pairwise"
        else None,
        whole=re.compile(
            rf"^\s*[*_\"'`\[(]*\s*(?P<v>{value})\s*[*_\"'`\])]*\s*[.!]?\s*$", re.IGNORECASE
        ),
    )
    if len(_PATTERN_CACHE) < 256:
        _PATTERN_CACHE[scale] = patterns
    return patterns


def _unparsed(error: str, reason: str = "") -> ParsedReply:
    return ParsedReply("unparsed", None, reason, error)


def _coerce(
    value: object, scale: Scale, *, span: tuple[int, int] | None, reason: str, shown: str
) -> ParsedReply:
    try:
        label = scale.coerce(value)
    except ValueError:
        return _unparsed(f"{shown} is not on the scale {scale_description(scale)}", reason)
    if label is None:
        return _unparsed(f"the reply gives an empty {shown!r} label", reason)
    return ParsedReply("ok", label, reason, "", span)


def _find_key(data: Mapping[str, Any], preferred: str, fallbacks: Sequence[str]) -> str | None:
    if preferred in data:
        return preferred
    lowered = {str(k).lower(): str(k) for k in data}
    for key in (preferred.lower(), *fallbacks):
        if key in lowered:
            return lowered[key]
    return None


_TOO_DEEP = "a JSON value in the reply is nested too deeply to read"


def _window(text: str) -> str:
    """The part of a reply the parser reads: all of it, or its start and end joined by a seam."""
    if len(text) <= MAX_REPLY_CHARS:
        return text
    half = MAX_REPLY_CHARS // 2
    return text[:half] + _SEAM + text[-half:]


def _full_span(span: tuple[int, int] | None, text: str, view: str) -> tuple[int, int] | None:
    """A span in the window read, as a span in the whole reply."""
    if span is None or view is text or span[0] <= MAX_REPLY_CHARS // 2:
        return span
    shift = len(text) - len(view)
    return (span[0] + shift, span[1] + shift)


def _fenced(text: str) -> list[tuple[str, int]]:
    """The bodies of ```` ```json {...} ``` ```` blocks with their offsets, by one scan for fences.

    A pair of fences whose body (after an optional ``json`` tag) is not brace-delimited is not a
    block; its closing fence may open the next one.
    """
    fences: list[int] = []
    position = text.find(_FENCE)
    while position != -1:
        fences.append(position)
        position = text.find(_FENCE, position + len(_FENCE))
    blocks: list[tuple[str, int]] = []
    index = 0
    while index + 1 < len(fences):
        start, end = fences[index] + len(_FENCE), fences[index + 1]
        body = text[start:end]
        if body[:4] in ("json", "JSON"):
            body, start = body[4:], start + 4
        stripped = body.strip()
        if stripped.startswith("{") and stripped.endswith("}"):
            blocks.append((stripped, start + body.index("{")))
            index += 2
        else:
            index += 1
    return blocks


def _json_objects(text: str) -> tuple[list[tuple[dict[str, Any], int]], str]:
    """JSON objects in ``text`` with their start offsets (the whole text, fenced blocks, then any
    ``{``, at most :data:`MAX_JSON_STARTS` failed starts), and why one could not be read (or "")."""
    problem = ""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            whole = load_json(stripped)
        except (RecursionError, JsonTooDeepError):
            problem = _TOO_DEEP
        except ValueError:
            pass
        else:
            if isinstance(whole, dict):
                return [(whole, text.index("{"))], ""
    found: list[tuple[dict[str, Any], int]] = []
    for body, start in _fenced(text):
        try:
            obj = load_json(body)
        except (RecursionError, JsonTooDeepError):
            problem = _TOO_DEEP
            continue
        except ValueError:
            continue
        if isinstance(obj, dict):
            found.append((obj, start))
    if found:
        return found, problem
    decoder = json.JSONDecoder()
    position = text.find("{")
    failures = 0
    while position != -1 and failures < MAX_JSON_STARTS:
        try:
            obj, end = decoder.raw_decode(text, position)
            if value_depth(obj) > MAX_JSON_DEPTH:  # decoded, but deeper than anything may be
                raise JsonTooDeepError(1, MAX_JSON_DEPTH)
        except (ValueError, RecursionError) as exc:
            if isinstance(exc, RecursionError | JsonTooDeepError):
                problem = _TOO_DEEP
            failures += 1
            position = text.find("{", position + 1)
            continue
        if isinstance(obj, dict):
            found.append((obj, position))
        position = text.find("{", end)
    return found, problem


def find_json_objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects in a reply, in order, read as :func:`parse_reply` reads them (within
    :data:`MAX_REPLY_CHARS`, linear time, never raising): for multi-step metrics.

    >>> find_json_objects('first {"a": 1} then ```json {"b": 2}``` and [[[')
    [{'b': 2}]
    """
    return [obj for obj, _ in _json_objects(_window(text))[0]]


def _label_span(text: str, start: int, key: str, value: object) -> tuple[int, int] | None:
    """Where the JSON value of ``key`` sits in ``text`` (for the logprob position)."""
    pattern = re.compile(rf'"{re.escape(key)}"\s*:\s*"?')
    last = None
    for match in pattern.finditer(text, start):
        last = match
    if last is None:
        return None
    shown = json.dumps(value) if not isinstance(value, str) else value
    return (last.end(), last.end() + len(shown))


def _from_json(
    text: str, scale: Scale, label_field: str, reason_field: str
) -> tuple[ParsedReply | None, str]:
    """The label of the last JSON object that has a label field (or None), and why a JSON value
    could not be read (or "")."""
    candidates, problem = _json_objects(text)
    for obj, start in reversed(candidates):
        key = _find_key(obj, label_field, _LABEL_KEYS)
        if key is None:
            continue
        reason_key = _find_key(obj, reason_field, _REASON_KEYS)
        reason = str(obj.get(reason_key, "")) if reason_key else ""
        value = obj[key]
        if isinstance(value, dict | list):
            shape = type(value).__name__
            return _unparsed(f"the {key!r} field holds {shape}, not a label", reason), problem
        shown = (
            format_label(value)
            if isinstance(value, int | float) and not isinstance(value, bool)
            else str(value)
        )
        parsed = _coerce(
            value, scale, span=_label_span(text, start, key, value), reason=reason, shown=shown
        )
        return parsed, problem
    return None, problem


def _from_text(text: str, scale: Scale) -> ParsedReply | None:
    patterns = _patterns(scale)
    best: tuple[int, re.Match[str], str] | None = None  # (end, match, kind)
    for kind, pattern in (
        ("keyword", patterns.keyword),
        ("fraction", patterns.fraction if "/" in text else None),
        ("out_of", patterns.out_of if " of " in text.lower() else None),
        ("brackets", patterns.brackets if "[[" in text else None),
        ("whole", patterns.whole if len(text) <= 80 else None),
    ):
        if pattern is None:
            continue
        for match in pattern.finditer(text):
            end = match.end("v")
            if best is None or end > best[0] or (end == best[0] and kind == "brackets"):
                best = (end, match, kind)
    if best is None:
        return None
    _, match, kind = best
    raw = match.group("v").strip()
    span = (match.start("v"), match.end("v"))
    if kind == "brackets":
        value: object = f"[[{raw}]]" if raw.lower() != "tie" else "tie"
        return _coerce(value, scale, span=span, reason="", shown=f"[[{raw}]]")
    if kind in ("fraction", "out_of"):
        top = float(match.group("max"))
        highest = max(float(x) for x in scale.labels)  # numeric: patterns exist only then
        if top != highest:
            return _unparsed(
                f"{match.group(0).strip()!r} is on a scale up to {format_label(top)}, "
                f"not {scale_description(scale)}"
            )
    return _coerce(raw, scale, span=span, reason="", shown=raw)


def parse_reply(
    text: str | None,
    scale: Scale,
    *,
    label_field: str = "score",
    reason_field: str = "reason",
    parser: Literal["json", "text", "auto"] = "auto",
) -> ParsedReply:
    """Read a label from a judge's reply; never raises.

    A reply longer than :data:`MAX_REPLY_CHARS` is read at its start and its end only (see the
    module's notes on hostile replies); ``span`` is always an offset in the whole reply.

    >>> from evalcore.labels import LIKERT_5, PAIRWISE
    >>> parse_reply('{"reason": "clear", "score": 4}', LIKERT_5).label
    4.0
    >>> parse_reply("Mostly fluent. Score: 7", LIKERT_5).error
    '7 is not on the scale 1–5'
    >>> parse_reply("Assistant B is better. [[B]]", PAIRWISE).label
    'B'
    """
    if text is None or not text.strip():
        return _unparsed("empty reply")
    view = _window(text)
    problem = ""
    if parser in ("json", "auto"):
        parsed, problem = _from_json(view, scale, label_field, reason_field)
        if parsed is not None:
            return replace(parsed, span=_full_span(parsed.span, text, view))
        if parser == "json":
            return _unparsed(problem or f"no JSON object with a {label_field!r} field in the reply")
    parsed = _from_text(view, scale)
    if parsed is not None:
        span = _full_span(parsed.span, text, view)
        if not parsed.reason and parsed.status == "ok":
            return ParsedReply("ok", parsed.label, text.strip(), "", span)
        return replace(parsed, span=span)
    if _REFUSAL.search(view):
        return _unparsed("the model declined to judge")
    if problem:
        return _unparsed(problem)
    return _unparsed(f"no label on the scale {scale_description(scale)} found in the reply")


# --- logprobs --------------------------------------------------------------------------------------


def _token_word(token: str) -> str:
    return token.strip().strip("\"'*`[](){},.;:").strip()


def _token_label(token: str, scale: Scale, *, prefix: bool = False) -> Label | None:
    """The label a token spells, or None.

    A token spells a label when, stripped of white space and of quotes, asterisks, brackets, braces
    and the punctuation ``,.;:`` around it, it is the label's text (numbers by value, words case-insensitively; on a pairwise scale ``tie`` and
    ``C`` are ``TIE``). With ``prefix``, a token that is the start of exactly one word label's text
    (``"T"`` of ``"TIE"``, ``"pa"`` of ``"pass"``) spells that label too: the first token of a label
    written in several tokens. Numbers are never read as prefixes (``"1"`` is the label 1, not the
    start of 10).
    """
    word = _token_word(token)
    if not word:
        return None
    if scale.is_numeric:
        try:
            number = float(word)
        except ValueError:
            return None
        return number if number in scale.labels else None
    lowered = word.lower()
    for label in scale.labels:
        if format_label(label).lower() == lowered:
            return label
    if scale.kind == "pairwise" and lowered in ("tie", "c"):
        return "TIE"
    if prefix:
        starts = [x for x in scale.labels if format_label(x).lower().startswith(lowered)]
        if len(starts) == 1:
            return starts[0]
    return None


def _label_position(tokens: TokenLogprobs, scale: Scale, at: int | None) -> int | None:
    if at is not None:
        offset = 0
        for index, (token, _) in enumerate(tokens):
            end = offset + len(token)
            if end > at and _token_label(token, scale, prefix=True) is not None:
                return index
            if offset > at + 8:  # the label token must be at (or just after) the given offset
                break
            offset = end
    last = None
    for index, (token, _) in enumerate(tokens):
        if _token_label(token, scale) is not None:
            last = index
    return last


@dataclass(frozen=True)
class LabelProbabilities:
    """The probability of every label of a scale where a reply writes its label.

    ``probabilities`` holds every label of the scale, in the scale's order, renormalised to sum to
    1 over the scale. ``off_scale`` is the share of the endpoint's probability at that position
    that went to no label: 1 − Σ exp(logprob) over the alternatives that spell a label, which counts
    both the alternatives off the scale and whatever the top-k list did not show.
    """

    probabilities: Mapping[Label, float]
    off_scale: float

    def expected(self, scale: Scale) -> float | None:
        """The probability-weighted score: Σ p(label)·value on a numeric scale (G-Eval's
        weighting), the probability of the first label (``pass``) on a binary one, else None.

        >>> LabelProbabilities({1.0: 0.25, 2.0: 0.75}, 0.0).expected(Scale.likert(1, 2))
        1.75
        """
        if scale.is_numeric:
            return sum(float(label) * p for label, p in self.probabilities.items())
        if scale.kind == "binary":
            return self.probabilities.get(scale.labels[0], 0.0)
        return None


def label_probabilities(
    top_logprobs: TokenLogprobs | None, scale: Scale, *, at: int | None = None
) -> LabelProbabilities | None:
    """The probability of each label of ``scale`` at the token where the reply writes its label.

    The position is the token at (or just after) character offset ``at`` that spells a label
    (``ParsedReply.span[0]``); without ``at``, the last token that spells a label. Among that
    token's top alternatives, each one that spells a label adds exp(logprob) to that label's mass,
    so variants such as ``"4"`` and ``" 4"`` or ``"pass"`` and ``"Pass"`` add up. A label written
    in several tokens is read at its first token: an alternative that is the start of exactly one
    word label counts for that label (``"T"`` for ``"TIE"``); a start that several labels share
    counts for none. The masses are then renormalised over the scale's labels; what went elsewhere
    is kept as :attr:`LabelProbabilities.off_scale`. ``None`` when there is no label token or no
    alternative spells a label.

    >>> tokens = [("Score", [("Score", 0.0)]), (": ", [(": ", 0.0)]),
    ...           ("4", [("4", math.log(0.5)), (" 4", math.log(0.1)), ("5", math.log(0.2)),
    ...                  ("maybe", math.log(0.2))])]
    >>> found = label_probabilities(tokens, Scale.likert(3, 5))
    >>> {k: round(p, 6) for k, p in found.probabilities.items()}  # 4: (0.5 + 0.1) / 0.8
    {3.0: 0.0, 4.0: 0.75, 5.0: 0.25}
    >>> round(found.off_scale, 6)  # 1 − 0.8
    0.2
    """
    if not top_logprobs:
        return None
    position = _label_position(top_logprobs, scale, at)
    if position is None:
        return None
    mass: dict[Label, float] = {}
    for token, logprob in top_logprobs[position][1]:
        label = _token_label(token, scale, prefix=True)
        if label is not None and math.isfinite(logprob):
            mass[label] = mass.get(label, 0.0) + math.exp(logprob)
    total = sum(mass.values())
    if not total > 0:
        return None
    return LabelProbabilities(
        {label: mass.get(label, 0.0) / total for label in scale.labels},
        max(0.0, 1.0 - total),
    )


def mean_probabilities(
    found: Sequence[LabelProbabilities], scale: Scale
) -> LabelProbabilities | None:
    """The mean of several samples' :class:`LabelProbabilities`, label by label (and their mean
    ``off_scale``); None for none.

    >>> from evalcore.labels import PASS_FAIL
    >>> a = LabelProbabilities({"pass": 1.0, "fail": 0.0}, 0.0)
    >>> b = LabelProbabilities({"pass": 0.5, "fail": 0.5}, 0.2)
    >>> mean_probabilities([a, b], PASS_FAIL)
    LabelProbabilities(probabilities={'pass': 0.75, 'fail': 0.25}, off_scale=0.1)
    """
    if not found:
        return None
    n = len(found)
    return LabelProbabilities(
        {x: sum(f.probabilities.get(x, 0.0) for f in found) / n for x in scale.labels},
        sum(f.off_scale for f in found) / n,
    )


def logprob_score(
    top_logprobs: TokenLogprobs | None, scale: Scale, *, at: int | None = None
) -> float | None:
    """A G-Eval-style probability-weighted score from the top logprobs at the label's token.

    For a numeric scale: Σ p(label)·value / Σ p(label) over the scale's labels found among the
    alternatives of the label token. For a binary scale: the probability of the positive label,
    normalised the same way. Other scales, or no label token among the alternatives: ``None``.
    This is :meth:`LabelProbabilities.expected` of :func:`label_probabilities`.

    ``at`` is the character offset of the label in the reply (``ParsedReply.span[0]``); without it,
    the last token that is a label is used.

    >>> tokens = [("Score", [("Score", 0.0)]), (": ", [(": ", 0.0)]),
    ...           ("4", [("4", math.log(0.6)), ("5", math.log(0.2)), ("3", math.log(0.2))])]
    >>> round(logprob_score(tokens, Scale.likert(1, 5)), 6)  # 0.6·4 + 0.2·5 + 0.2·3 = 4.0
    4.0
    """
    if not (scale.is_numeric or scale.kind == "binary"):
        return None
    found = label_probabilities(top_logprobs, scale, at=at)
    return None if found is None else found.expected(scale)


# --- samples ---------------------------------------------------------------------------------------


def vote(weights: Mapping[Label, float], scale: Scale) -> Label | None:
    """The label with the most votes (or the largest sum of weights); None when nobody voted.

    A tie between labels goes to the one first in the scale's order, except on a pairwise scale,
    where a tie between different choices is ``"TIE"``. This one rule decides between samples
    (:func:`aggregate_samples`) and between the members of a jury.

    >>> from evalcore.labels import PAIRWISE
    >>> vote({4.0: 2, 5.0: 2}, Scale.likert(1, 5)), vote({"A": 1, "B": 1}, PAIRWISE)
    (4.0, 'TIE')
    """
    given = {x: w for x, w in weights.items() if w > 0}
    if not given:
        return None
    top = max(given.values())
    leaders = sorted(
        (x for x, w in given.items() if w == top),
        key=lambda x: scale.index(x) if x in scale.labels else len(scale.labels),
    )
    if len(leaders) > 1 and scale.kind == "pairwise":
        return "TIE"
    return leaders[0]


def nearest_label(value: float, scale: Scale) -> Label:
    """The label of a numeric scale nearest to ``value``; half-way goes up (rounded half up).

    >>> nearest_label(4.5, Scale.likert(1, 5)), nearest_label(4.49, Scale.likert(1, 5))
    (5.0, 4.0)
    """
    return min(scale.labels, key=lambda x: (abs(float(x) - value), -float(x)))


def sample_shares(parsed: Sequence[ParsedReply], scale: Scale) -> dict[Label, float] | None:
    """The share of the parsed samples that gave each label of the scale (every label, in the
    scale's order; unparsed samples are left out); None when no sample was parsed.

    >>> replies = [ParsedReply("ok", "pass"), ParsedReply("ok", "pass"), ParsedReply("ok", "fail"),
    ...            ParsedReply("unparsed")]
    >>> from evalcore.labels import PASS_FAIL
    >>> {k: round(v, 4) for k, v in sample_shares(replies, PASS_FAIL).items()}  # 2/3 and 1/3
    {'pass': 0.6667, 'fail': 0.3333}
    """
    labels = [p.label for p in parsed if p.status == "ok" and p.label is not None]
    if not labels:
        return None
    counts = Counter(labels)
    return {x: counts.get(x, 0) / len(labels) for x in scale.labels}


def aggregate_samples(
    parsed: Sequence[ParsedReply],
    scale: Scale,
    *,
    method: Literal["majority", "mean"] = "majority",
) -> tuple[Label | None, dict[str, Any]]:
    """One label from ``n`` sampled replies, and the spread of the samples.

    ``"majority"``: the most frequent parsed label, ties decided by :func:`vote` (the label first
    in the scale's order; on a pairwise scale a tie between different choices is ``"TIE"``).
    ``"mean"`` (numeric scales only; else majority): the mean of the parsed values rounded half up to
    the nearest label on the scale (:func:`nearest_label`). Unparsed samples are left out; all
    unparsed gives ``None``.

    The spread is ``{"counts": {label: count}, "n": samples, "n_unparsed": k, "std": population
    standard deviation of numeric labels or None}``.

    >>> from evalcore.labels import LIKERT_5
    >>> replies = [ParsedReply("ok", 4.0), ParsedReply("ok", 5.0), ParsedReply("ok", 4.0)]
    >>> aggregate_samples(replies, LIKERT_5)
    (4.0, {'counts': {'4': 2, '5': 1}, 'n': 3, 'n_unparsed': 0, 'std': 0.471405})
    """
    labels = [p.label for p in parsed if p.status == "ok" and p.label is not None]
    counts = Counter(labels)
    ordered = sorted(
        counts, key=lambda x: scale.index(x) if x in scale.labels else len(scale.labels)
    )
    std: float | None = None
    if scale.is_numeric and labels:
        std = round(statistics.pstdev(float(x) for x in labels), 6)
    spread: dict[str, Any] = {
        "counts": {format_label(x): counts[x] for x in ordered},
        "n": len(parsed),
        "n_unparsed": len(parsed) - len(labels),
        "std": std,
    }
    if not labels:
        return None, spread
    if method == "mean" and scale.is_numeric:
        return nearest_label(statistics.fmean(float(x) for x in labels), scale), spread
    return vote(counts, scale), spread
