"""A reply rule for the fake server that answers every built-in metric sensibly.

Pipeline steps (claims, verdicts, key phrases, questions, answers) are recognised by their system
message and answered with well-formed JSON built from the request itself; judge templates get the fake
server's default :func:`~evalcore.testing.marker_reply` (``expect=LABEL`` markers, else a label from a
hash of the prompt). The page and browser tests share it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from evalcore.testing import marker_reply


def _user(request: dict[str, Any]) -> str:
    return str(request["messages"][-1]["content"])


def _system(request: dict[str, Any]) -> str:
    messages = request.get("messages") or []
    return str(messages[0]["content"]) if messages and messages[0]["role"] == "system" else ""


def _json_array_after(text: str, marker: str) -> list[Any]:
    tail = text.split(marker, 1)[1]
    match = re.search(r"\[.*?\]", tail, flags=re.S)
    return json.loads(match.group(0)) if match else []


def metric_reply(request: dict[str, Any]) -> Any:
    system, user = _system(request), _user(request)
    if system.startswith("You break texts into claims"):
        text = user.rsplit("Text:\n", 1)[1].split("\n\nReply with JSON", 1)[0]
        sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
        return {"claims": sentences[:3]}
    if system.startswith("You decide whether statements follow"):
        claims = _json_array_after(user, "Statements (a JSON array):")
        return {
            "verdicts": [
                {"statement": c, "reason": "checked", "verdict": int(n % 3 != 2)}
                for n, c in enumerate(claims)
            ]
        }
    if system.startswith("You pick out the key phrases"):
        return {"keyphrases": ["Northwind", "30 days"]}
    if system.startswith("You write yes/no questions"):
        return {"questions": ["Is Northwind named?", "Is the period 30 days?"]}
    if system.startswith("You answer yes/no questions"):
        questions = _json_array_after(user, "Questions (a JSON array):")
        return {"answers": ["1" if n % 2 == 0 else "0" for n in range(len(questions))]}
    return marker_reply(request)
