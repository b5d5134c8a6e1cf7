"""Getting items ready for a metric: conversations made readable, aliases resolved, inputs checked.

A conversation (Azure's ``messages``: a list of ``{"role", "content"}`` turns, assistant turns may
carry ``context.citations``) is judged as **one item**: the judge reads the whole exchange as a
transcript (:func:`render_conversation`) and gives one verdict on the assistant's turns. Items that
:mod:`evalcore.data` loaded from a conversation already carry the derived ``prompt`` (last user
turn), ``response`` (last assistant turn) and ``context`` (every citation); :func:`derive_fields`
derives them the same way for items made by hand, and adds ``transcript``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evalcore.errors import DataError, MissingVariableError
from evalcore.judge._template import BUILTIN_VARIABLES, JudgeItem, template_variables
from evalcore.judge.builtins._spec import (
    FIELD_ALIASES,
    MetricInput,
    MetricSpec,
    blank,
    plain_list,
)
from evalcore.limits import load_json

__all__ = [
    "check_inputs",
    "conversation_turns",
    "derive_fields",
    "inject_jailbreak",
    "prepare_items",
    "render_conversation",
]

#: How many item ids a missing-input message lists.
_SHOWN = 5


# --- conversations ---------------------------------------------------------------------------------


def conversation_turns(value: object, *, item_id: str = "") -> list[dict[str, Any]] | None:
    """The turns of a conversation given as a list or as its JSON text; ``None`` when blank.

    Raises :class:`~evalcore.errors.DataError` naming the item when the value is not a list of
    ``{"role", "content"}`` objects.
    """
    if blank(value):
        return None
    turns: Any = value
    if isinstance(value, str):
        try:
            turns = load_json(value)
        except ValueError:  # not JSON, or nested too deeply (evalcore.limits)
            turns = None
    turns = plain_list(turns)
    if not isinstance(turns, list | tuple) or not all(
        isinstance(t, Mapping) and "role" in t for t in turns
    ):
        raise DataError(
            f"item {item_id}: the conversation is not a list of {{role, content}} turns",
            item_id=item_id or None,
        )
    return [dict(t) for t in turns]


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):  # content parts: [{"type": "text", "text": ...}]
        return "\n".join(_text(v) for v in value if not blank(v))
    if isinstance(value, Mapping):
        for key in ("content", "text"):
            if isinstance(value.get(key), str):
                return str(value[key])
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _citations(context: object) -> list[str]:
    """Citations of an assistant turn: ``context.citations`` entries, a context string or list."""
    if blank(context):
        return []
    if isinstance(context, Mapping):
        if "citations" not in context:
            return [_text(context)]
        context = context["citations"]
    if isinstance(context, str):
        return [context]
    if isinstance(context, list | tuple):
        shown: list[str] = []
        for citation in context:
            if isinstance(citation, Mapping):
                name = citation.get("title") or citation.get("id") or citation.get("url")
                body = _text(citation.get("content", citation.get("text", "")))
                text = f"{name}: {body}" if name and body else (body or str(name or ""))
            else:
                text = _text(citation)
            if text.strip():
                shown.append(text)
        return shown
    return [_text(context)]


def render_conversation(turns: Sequence[Mapping[str, Any]]) -> str:
    """A conversation as a transcript a judge (or a person) can read.

    Turns are numbered by user message; each assistant turn is followed by the sources it cited.

    >>> print(render_conversation([
    ...     {"role": "user", "content": "Opening hours?"},
    ...     {"role": "assistant", "content": "9 to 5.",
    ...      "context": {"citations": [{"id": "hours.md", "content": "Open 9-17."}]}}]))
    [Turn 1] User:
    Opening hours?
    <BLANKLINE>
    [Turn 1] Assistant:
    9 to 5.
    Sources cited by the assistant in this turn:
      [1] hours.md: Open 9-17.
    """
    blocks: list[str] = []
    number = 0
    for turn in turns:
        role = str(turn.get("role", "")).strip().lower()
        if role == "user":
            number += 1
        who = {"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool"}.get(
            role, role.capitalize() or "Unknown"
        )
        label = f"[Turn {max(number, 1)}] {who}:" if role != "system" else "System:"
        lines = [label, _text(turn.get("content")).strip()]
        if role == "assistant":
            cited = _citations(turn.get("context"))
            if cited:
                lines.append("Sources cited by the assistant in this turn:")
                lines += [f"  [{i}] {c.strip()}" for i, c in enumerate(cited, start=1)]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def derive_fields(fields: Mapping[str, Any], *, item_id: str = "") -> dict[str, Any]:
    """An item's fields plus what can be derived from them.

    - ``conversation`` (or Azure's ``messages``): ``transcript`` (:func:`render_conversation`), and,
      when absent, ``prompt`` (the last user turn), ``response`` (the last assistant turn) and
      ``context`` (every citation, blank-line separated), as :mod:`evalcore.data` derives them;
    - ``transcript`` is ``""`` for an item without a conversation, so one template can serve both.
    """
    out = dict(fields)
    source = out.get("conversation")
    if blank(source):
        source = out.get("messages")
    turns = conversation_turns(source, item_id=item_id)
    if turns is None:
        out.setdefault("transcript", "")
        return out
    out["transcript"] = render_conversation(turns)
    if blank(out.get("conversation")):
        out["conversation"] = json.dumps(turns, ensure_ascii=False, default=str)
    users = [_text(t.get("content")) for t in turns if str(t.get("role", "")).lower() == "user"]
    replies = [t for t in turns if str(t.get("role", "")).lower() == "assistant"]
    cited = [c for t in replies for c in _citations(t.get("context"))]
    if blank(out.get("prompt")) and users:
        out["prompt"] = users[-1]
    if blank(out.get("response")) and replies:
        out["response"] = _text(replies[-1].get("content"))
    if blank(out.get("context")) and cited:
        out["context"] = "\n\n".join(cited)
    return out


# --- inputs ----------------------------------------------------------------------------------------


def _resolve(fields: dict[str, Any], wanted: MetricInput) -> None:
    """Fill ``wanted.field`` from an alias when the item carries the value under another name."""
    if not blank(fields.get(wanted.field)):
        return
    for alias in (wanted.name, *FIELD_ALIASES.get(wanted.field, ())):
        value = fields.get(alias)
        if alias == wanted.field or blank(value):
            continue
        value = plain_list(value)
        if isinstance(value, list | tuple) and wanted.field != "conversation":
            value = "\n\n".join(_text(v) for v in value if not blank(v))
        fields[wanted.field] = value
        return


def _ids(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:_SHOWN])
    more = len(ids) - _SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def prepare_items(spec: MetricSpec, items: Iterable[JudgeItem]) -> list[JudgeItem]:
    """The items as ``spec`` reads them: derived fields added, aliases resolved, inputs checked.

    Raises :class:`~evalcore.errors.MissingVariableError` before any request when an item lacks a
    required input: the message names the metric, each missing input (in the reference system's
    words and as the canonical field) and the first items lacking it. For a template metric, a
    template variable that is an optional input the item lacks is set to ``None`` (rendered empty).
    """
    needed: set[str] = set()
    if spec.template is not None:
        needed = template_variables(spec.template) - BUILTIN_VARIABLES
    prepared: list[JudgeItem] = []
    missing: dict[str, tuple[MetricInput, list[str]]] = {}
    total = 0
    for item in items:
        total += 1
        fields = derive_fields(item.fields, item_id=item.item_id)
        for wanted in spec.all_inputs:
            _resolve(fields, wanted)
        for wanted in spec.inputs_for(fields):
            if not wanted.optional and blank(fields.get(wanted.field)):
                missing.setdefault(wanted.field, (wanted, []))[1].append(item.item_id)
        for name in needed:
            fields.setdefault(name, None)  # an optional input the item lacks renders empty
        prepared.append(JudgeItem(item.item_id, fields))
    if missing:
        parts = []
        for wanted, ids in missing.values():
            parts.append(f"{wanted.shown} is missing on {len(ids)} of {total} items ({_ids(ids)})")
        first_input, first_ids = next(iter(missing.values()))
        hint = ""
        if spec.conversation_inputs is not None:
            single = ", ".join(i.shown for i in spec.inputs if not i.optional)
            conversation = ", ".join(i.shown for i in spec.conversation_inputs if not i.optional)
            hint = f". A single-turn item needs {single}; a conversation needs {conversation}"
        raise MissingVariableError(
            f"metric {spec.name!r} cannot run: " + "; ".join(parts) + hint,
            variable=first_input.field,
            item_id=first_ids[0],
        )
    return prepared


def check_inputs(spec: MetricSpec, items: Iterable[JudgeItem]) -> None:
    """Raise :class:`~evalcore.errors.MissingVariableError` when an item lacks an input ``spec``
    needs (see :func:`prepare_items`); nothing is sent anywhere.

    >>> from evalcore.judge import JudgeItem
    >>> from evalcore.judge.builtins import get_metric
    >>> check_inputs(get_metric("similarity"), [JudgeItem("q1", {"question": "2+2?", "answer": "4"})])
    Traceback (most recent call last):
    ...
    evalcore.errors.MissingVariableError: metric 'similarity' cannot run: ground_truth (reference) is missing on 1 of 1 items ('q1')
    """
    prepare_items(spec, items)


# --- jailbreak -------------------------------------------------------------------------------------


def inject_jailbreak(
    items: Iterable[JudgeItem], text: str, *, separator: str = "\n\n"
) -> list[JudgeItem]:
    """Copies of ``items`` with ``text`` put in front of the first user turn.

    A conversation (``conversation`` or ``messages``) gets it in its first user message, and its
    derived ``prompt`` (the last user turn) is updated when that is the same turn; a single-turn item
    gets it in its ``prompt`` (or ``question`` / ``query`` / ``user_input``). Item ids stay the same,
    so the attacked run can be compared item by item with the plain one. The responses to judge must
    be the system's answers to the attacked prompts.

    >>> [i.fields["prompt"] for i in inject_jailbreak([JudgeItem("1", {"prompt": "Hi"})], "JB")]
    ['JB\\n\\nHi']
    """
    if not isinstance(text, str) or not text.strip():
        raise DataError("the jailbreak text is empty")
    out: list[JudgeItem] = []
    for item in items:
        fields = dict(item.fields)
        done = False
        for key in ("conversation", "messages"):
            turns = conversation_turns(fields.get(key), item_id=item.item_id)
            if turns is None:
                continue
            users = [i for i, t in enumerate(turns) if str(t.get("role", "")).lower() == "user"]
            if not users:
                raise DataError(
                    f"item {item.item_id}: the conversation has no user turn to attack",
                    item_id=item.item_id,
                )
            first = users[0]
            turns[first] = {
                **turns[first],
                "content": text + separator + _text(turns[first].get("content")),
            }
            raw = fields.get(key)
            fields[key] = (
                json.dumps(turns, ensure_ascii=False, default=str)
                if isinstance(raw, str)
                else turns
            )
            if first == users[-1]:
                fields["prompt"] = turns[first]["content"]
            if "transcript" in fields:
                fields["transcript"] = render_conversation(turns)
            done = True
        if not done:
            for key in ("prompt", "question", "query", "user_input"):
                if not blank(fields.get(key)):
                    fields[key] = text + separator + str(fields[key])
                    done = True
                    break
        if not done:
            raise DataError(
                f"item {item.item_id} has no user turn (prompt or conversation) to put the "
                "jailbreak in",
                item_id=item.item_id,
            )
        out.append(JudgeItem(item.item_id, fields))
    return out
