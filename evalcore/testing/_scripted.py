"""A scripted judge and a scripted optimiser model for :class:`~evalcore.testing.FakeOpenAI`.

The prompt optimiser (``evalcore.improve``) needs a judge whose answers depend on the prompt, so that
there is something real to find, and an optimiser model that proposes the kind of change that helps.
Both are reply rules: :class:`Scripted` is a callable ``rule(request_json)`` that answers requests for
its ``optimizer_model`` as the optimiser and every other request as the judge.

**Items.** The judge knows each item's true class in one of two ways:

- a marker in the item's text, ``<<item ID truth=LABEL>>`` (see :func:`truth_marker`), or
- a list of :class:`ScriptedItem` (an id, a piece of the item's text that identifies it, the true
  label), for data that cannot carry a marker, such as the demo project.

In a prompt, every known item found is an occurrence; the one that starts last is the item being
judged (a template shows the item after its instructions and examples), the others are examples.

**The judge.** For the judged item of true class ``c`` it answers ``c`` when the item's draw (a hash
of the seed and the item id, uniform in [0, 1)) is below the accuracy, else a wrong label (the other
one on pass/fail, a neighbour on a numeric scale, the next word otherwise). The accuracy is:

- ``recall`` (0.99) when the prompt names the judged item elsewhere: it appears again as an example,
  or ``item ID`` is written in the instructions. This is the trap of a candidate that fits only dev:
  it helps exactly the items it lists.
- ``improved`` (0.95) when the prompt states a rule about ``c`` (``RULE c: ...``, see
  :func:`rule_line`) or shows an example of class ``c``;
- else the class's base accuracy (``base``: one number, or a number per class; 0.6 by default).

The draw depends on the item only, not on the prompt, so a rewrite that adds no rule gives exactly
the same answers (a useless candidate ties the start), and a rule only ever turns wrong answers of
its class right. The same request always gets the same reply, so a reply cache is meaningful.

The reply follows the template's output: the JSON schema of ``response_format`` when there is one;
else JSON ``{"reason": ..., FIELD: label}`` where ``FIELD`` is the label key the prompt asks for
(``"score"``, ``"label"``, ``"choice"`` ... in a ``{"reason": ..., "KEY": ...}`` example), by default
``"score"`` for numbers and ``"label"`` for words.

**The optimiser.** It finds the known items in its prompt (the disagreements it was shown) and, per
request, behaves in one of these modes:

- ``"rules"``: a ``RULE c: ...`` line for every class among the items shown, plus the rules already in
  the prompt (so rewrites accumulate);
- ``"useless"``: a reworded instruction with no rule;
- ``"overfit"``: instructions that list the shown items by id with their labels.

It answers JSON ``{"system": ..., "rubric": ...}``. With several modes the first distinct optimiser
prompt gets the first mode, the second the second, and so on (remembered per prompt, so a repeated
request gets the same reply).

Run as a process: ``python -m evalcore.testing.fake_openai --reply-rule scripted:CONFIG.json``,
where the JSON file holds the keyword arguments of :meth:`Scripted.from_config`.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from evalcore.testing.fake_openai import _schema_props as _schema
from evalcore.testing.fake_openai import prompt_text as _prompt

__all__ = [
    "OptimizerMode",
    "Scripted",
    "ScriptedItem",
    "rule_line",
    "truth_marker",
]

OptimizerMode = Literal["rules", "useless", "overfit"]

_MARKER = re.compile(r"<<item ([A-Za-z0-9_.\-]+) truth=([A-Za-z0-9_.\-]+)>>")
_RULE = re.compile(r"\bRULE\s+([A-Za-z0-9_.\-]+)\s*:")
_FIELD_HINT = re.compile(r"\{\s*\"reason\"\s*:[^{}]{0,200}?,\s*\"([A-Za-z_][A-Za-z0-9_]*)\"\s*:")
_RULE_TEXT = {
    "pass": "a reply whose every claim is stated in the source earns this label",
    "fail": "a reply with any claim the source does not state earns this label",
}


def truth_marker(item_id: str, label: Any) -> str:
    """The marker that tells the scripted judge an item's id and true label.

    >>> truth_marker("c7", "fail")
    '<<item c7 truth=fail>>'
    """
    return f"<<item {item_id} truth={_text(label)}>>"


def rule_line(label: Any) -> str:
    """The sentence that states a rule about ``label`` (what raises the judge's accuracy on it).

    >>> rule_line("fail")
    'RULE fail: a reply with any claim the source does not state earns this label.'
    """
    text = _text(label)
    return f"RULE {text}: {_RULE_TEXT.get(text, f'a reply that fully matches level {text}')}."


@dataclass(frozen=True)
class ScriptedItem:
    """One item the scripted judge knows: its id, text that identifies it, its true label."""

    item_id: str
    key: str
    label: str

    def __post_init__(self) -> None:
        if not self.key:
            raise ValueError(f"scripted item {self.item_id!r} needs a non-empty key text")


@dataclass(frozen=True)
class _Seen:
    start: int
    end: int
    item_id: str
    label: str


@dataclass
class Scripted:
    """The reply rule: the scripted judge, and the scripted optimiser for ``optimizer_model``.

    ``labels`` is the scale (needed for wrong answers when the request has no JSON schema; by
    default the schema's enum, else the true labels seen, in order). ``items`` adds known items
    besides the markers.
    """

    base: float | Mapping[str, float] = 0.6
    improved: float = 0.95
    recall: float = 0.99
    seed: int = 0
    labels: Sequence[str] | None = None
    items: Sequence[ScriptedItem] = ()
    optimizer_model: str = "fake-optimizer"
    optimizer_modes: Sequence[OptimizerMode] = ("rules",)
    _modes_seen: dict[str, OptimizerMode] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        for mode in self.optimizer_modes:
            if mode not in ("rules", "useless", "overfit"):
                raise ValueError(f"unknown optimiser mode {mode!r}")
        if not self.optimizer_modes:
            raise ValueError("the scripted optimiser needs at least one mode")
        self.labels = [_text(x) for x in self.labels] if self.labels is not None else None
        self.items = tuple(self.items)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Scripted:
        """Build from plain JSON data: the keyword arguments, ``items`` as ``[id, key, label]``
        lists or ``{"item_id", "key", "label"}`` objects."""
        options = dict(config)
        raw_items = options.pop("items", ())
        items = [
            ScriptedItem(*map(str, entry))
            if isinstance(entry, list | tuple)
            else ScriptedItem(str(entry["item_id"]), str(entry["key"]), str(entry["label"]))
            for entry in raw_items
        ]
        modes = options.pop("optimizer_modes", ("rules",))
        return cls(items=items, optimizer_modes=tuple(modes), **options)

    @classmethod
    def from_file(cls, path: str | Path) -> Scripted:
        """:meth:`from_config` of a JSON file."""
        return cls.from_config(json.loads(Path(path).read_text(encoding="utf-8")))

    # --- the reply rule ----------------------------------------------------------------------------

    def __call__(self, request: dict[str, Any]) -> str | dict[str, Any]:
        if str(request.get("model") or "") == self.optimizer_model:
            return self.optimize(request)
        return self.judge(request)

    def judge(self, request: Mapping[str, Any]) -> str | dict[str, Any]:
        """The judge's reply to one request (see the module docstring)."""
        text = _prompt(request)
        seen = self._find(text)
        field_name, enum = _schema(request)
        scale = self._scale(enum, seen)
        if not seen:
            label = scale[int(_draw(self.seed, text) * len(scale)) % len(scale)] if scale else "1"
            return self._render(label, "No item to grade was found.", request, field_name, enum)
        judged = max(seen, key=lambda s: s.start)
        accuracy = self.accuracy(text, judged, seen)
        draw = _draw(self.seed, judged.item_id)
        if draw < accuracy:
            label, reason = judged.label, "The reply matches what the rubric asks for this label."
        else:
            label = _wrong(judged.label, scale, _draw(self.seed + 1, judged.item_id))
            reason = "The reply seemed to fit this label at first reading."
        return self._render(label, reason, request, field_name, enum)

    def accuracy(self, text: str, judged: _Seen, seen: Sequence[_Seen]) -> float:
        """How likely the judged item is answered right under this prompt."""
        others = [s for s in seen if s is not judged]
        rest = text[: judged.start] + text[judged.end :]
        named = re.search(rf"\bitem\s+{re.escape(judged.item_id)}\b", rest, re.IGNORECASE)
        if named or any(s.item_id == judged.item_id for s in others):
            return self.recall
        ruled = {m.lower() for m in _RULE.findall(text)}
        if judged.label.lower() in ruled or any(s.label == judged.label for s in others):
            return self.improved
        if isinstance(self.base, Mapping):
            return float(self.base.get(judged.label, 0.6))
        return float(self.base)

    def optimize(self, request: Mapping[str, Any]) -> str:
        """The optimiser's reply: JSON ``{"system": ..., "rubric": ...}`` in the request's mode."""
        text = _prompt(request)
        key = hashlib.sha256(text.encode()).hexdigest()
        with self._lock:
            mode = self._modes_seen.get(key)
            if mode is None:
                mode = self.optimizer_modes[len(self._modes_seen) % len(self.optimizer_modes)]
                self._modes_seen[key] = mode
        seen = self._find(text)
        intro = "You grade replies carefully and consistently against the rubric below."
        if mode == "useless":
            rubric = "Read the whole reply before deciding, and judge it on its own merits."
        elif mode == "overfit":
            shown = {s.item_id: s.label for s in seen}
            rubric = "Remember these cases: " + "; ".join(
                f"item {item_id} is {label}" for item_id, label in sorted(shown.items())
            )
        else:
            classes = {s.label for s in seen} | set(_RULE.findall(text))
            rubric = "\n".join(rule_line(c) for c in sorted(classes, key=_order))
        return json.dumps({"system": f"{intro}\n{rubric}", "rubric": rubric})

    # --- helpers -----------------------------------------------------------------------------------

    def _find(self, text: str) -> list[_Seen]:
        found = [_Seen(m.start(), m.end(), m.group(1), m.group(2)) for m in _MARKER.finditer(text)]
        for item in self.items:
            start = text.find(item.key)
            while start >= 0:
                found.append(_Seen(start, start + len(item.key), item.item_id, item.label))
                start = text.find(item.key, start + 1)
        return found

    def _scale(self, enum: Sequence[Any] | None, seen: Iterable[_Seen]) -> list[str]:
        if enum:
            return [_text(x) for x in enum]
        if self.labels is not None:
            return list(self.labels)
        pool = {s.label for s in seen} | {i.label for i in self.items}
        if pool == {"pass"} or pool == {"fail"}:
            pool |= {"pass", "fail"}
        return sorted(pool, key=_order)

    def _render(
        self,
        label: str,
        reason: str,
        request: Mapping[str, Any],
        field_name: str | None,
        enum: Sequence[Any] | None,
    ) -> dict[str, Any]:
        if field_name is None:
            hint = _FIELD_HINT.search(_prompt(request))
            field_name = hint.group(1) if hint else ("score" if _is_number(label) else "label")
        value: Any = label
        if _is_number(label) and (enum is None or all(isinstance(x, int | float) for x in enum)):
            number = float(label)
            value = int(number) if number.is_integer() else number
        return {"reason": reason, field_name: value}


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _order(label: str) -> tuple[int, float, str]:
    return (0, float(label), "") if _is_number(label) else (1, 0.0, label)


def _draw(seed: int, key: str) -> float:
    digest = hashlib.sha256(f"scripted|{seed}|{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _wrong(label: str, scale: Sequence[str], draw: float) -> str:
    """A wrong answer for ``label``: the other of two, a numeric neighbour, or the next word."""
    others = [x for x in scale if x != label]
    if not others:
        return label
    if label in scale and all(_is_number(x) for x in scale) and len(scale) > 2:
        position = scale.index(label)
        neighbours = [scale[i] for i in (position - 1, position + 1) if 0 <= i < len(scale)]
        return neighbours[int(draw * len(neighbours)) % len(neighbours)]
    if label in scale:
        return scale[(scale.index(label) + 1) % len(scale)]
    return others[0]
