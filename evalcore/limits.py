"""Bounds on outside input that several layers share: JSON nesting and token counts.

A leaf module (it imports nothing of evalcore), so the loaders (``evalcore.data``), the judge's
batch and reply readers (``evalcore.judge``) and project archives (``evalcore.store``) apply the
same bounds.

**Nesting.** Python's JSON decoder recurses once per level, so a few kilobytes of ``[`` raise
``RecursionError``; a value just under the interpreter's limit parses, and then breaks whatever
walks it later (``json.dumps`` when it is saved, ``repr`` in a message) far from the file it came
from. :func:`check_json_depth` finds, before anything is decoded and in linear time, the first line
where text opens more than :data:`MAX_JSON_DEPTH` arrays and objects, and :func:`load_json` is
``json.loads`` behind that check. Both raise :class:`JsonTooDeepError`, a ``ValueError``: callers
that already turn bad JSON into a typed error naming the file and line do the same with it.

**Token counts** (:func:`token_count`) are whole numbers from 0 to :data:`MAX_TOKEN_COUNT`: a
negative count or ``1e308`` would make every cost and total built on it wrong.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any, Final

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_TOKEN_COUNT",
    "JsonTooDeepError",
    "TokenCountError",
    "check_json_depth",
    "load_json",
    "token_count",
    "value_depth",
]

#: The deepest nesting of arrays and objects a JSON value from outside may have. Real data needs a
#: handful of levels (a batch output line with log-probabilities needs 11); Python's decoder and
#: everything that walks a decoded value recursively stay far from the interpreter's limit.
MAX_JSON_DEPTH: Final = 64

#: The largest token count one request may report (prompt or completion). The longest context
#: windows hold about ten million tokens; a count above this ceiling is a broken or hostile reply.
MAX_TOKEN_COUNT: Final = 100_000_000

#: Every byte but quotes, brackets and newlines: what the depth scan deletes first.
_NOISE = bytes(b for b in range(256) if b not in b'"[]{}\n')
#: With escaped quotes gone, a string is a quote, anything but a quote on the same line, a quote.
_STRING = re.compile(rb'"[^"\n]*"')
_STEP = [0] * 256
for _byte, _step in ((b"[", 1), (b"{", 1), (b"]", -1), (b"}", -1)):
    _STEP[_byte[0]] = _step


class JsonTooDeepError(ValueError):
    """JSON text nests arrays and objects deeper than the limit; ``line`` is 1-based."""

    def __init__(self, line: int, limit: int) -> None:
        self.line = line
        self.limit = limit
        super().__init__(f"nested deeper than {limit} levels at line {line}")


class TokenCountError(ValueError):
    """A token count that is not a whole number from 0 to :data:`MAX_TOKEN_COUNT`."""


def _openers(text: str | bytes) -> int:
    if isinstance(text, bytes):
        return text.count(b"[") + text.count(b"{")
    return text.count("[") + text.count("{")


def _skeleton(data: bytes) -> bytes:
    """The brackets of JSON text outside strings, and its newlines (so line numbers survive).

    Byte operations only, each a C loop: escaped backslashes and quotes go first (left to right,
    as a decoder pairs them), then every other byte but quotes, brackets and newlines; the quotes
    left delimit strings, whose brackets go with them.
    """
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    data = data.translate(None, _NOISE)
    # two adjacent quotes open and close a string, or close one and open the next: dropping them
    # leaves every other byte inside or outside a string as it was
    data = data.replace(b'""', b"")
    if b'"' in data:
        data = _STRING.sub(b"", data).replace(b'"', b"")
    return data


def _passes(skeleton: bytes, limit: int) -> int | None:
    """The 1-based line of ``skeleton`` where the running depth first passes ``limit``."""
    depths = accumulate(map(_STEP.__getitem__, skeleton))
    if max(depths, default=0) <= limit:
        return None
    at = next(i for i, d in enumerate(accumulate(map(_STEP.__getitem__, skeleton))) if d > limit)
    return skeleton.count(b"\n", 0, at) + 1


def check_json_depth(
    text: str | bytes, *, limit: int = MAX_JSON_DEPTH, lines: bool = False, first_line: int = 1
) -> None:
    r"""Raise :class:`JsonTooDeepError` when ``text`` opens more than ``limit`` arrays and objects
    at once outside strings; ``lines=True`` reads it as JSON Lines (each line on its own).

    Linear in the text (a few byte-level passes in C), and free for text with at most ``limit``
    brackets. The error names the line, counted from ``first_line``. Text that is not valid JSON
    may be refused here first; it would be refused anyway.

    >>> check_json_depth('{"a": [[1], {"b": "[[[[[\\\\"}]}', limit=3)
    >>> check_json_depth('{"a": [[[1]]]}', limit=3)
    Traceback (most recent call last):
    evalcore.limits.JsonTooDeepError: nested deeper than 3 levels at line 1
    >>> check_json_depth('[1]\n[[[[1]]]]', limit=3, lines=True)
    Traceback (most recent call last):
    evalcore.limits.JsonTooDeepError: nested deeper than 3 levels at line 2
    """
    if _openers(text) <= limit:
        return
    skeleton = _skeleton(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    if not lines:
        found = _passes(skeleton, limit)
        if found is not None:
            raise JsonTooDeepError(first_line + found - 1, limit)
        return
    for number, line in enumerate(skeleton.split(b"\n"), start=first_line):
        if len(line) > limit and _passes(line, limit) is not None:
            raise JsonTooDeepError(number, limit)


def value_depth(value: Any) -> int:
    """How deeply lists, tuples and dicts nest in a decoded ``value`` (without recursing, so any
    depth is measured); a scalar is 0.

    >>> value_depth({"a": [1, {"b": []}]}), value_depth("text")
    (4, 0)
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        current, level = stack.pop()
        if isinstance(current, dict):
            children: Any = current.values()
        elif isinstance(current, list | tuple):
            children = current
        else:
            continue
        level += 1
        deepest = max(deepest, level)
        stack.extend((child, level) for child in children)
    return deepest


def load_json(text: str | bytes, *, limit: int = MAX_JSON_DEPTH, **options: Any) -> Any:
    """``json.loads(text, **options)`` once :func:`check_json_depth` passed: raises
    ``ValueError`` (:class:`JsonTooDeepError` for nesting) and never ``RecursionError``.

    >>> load_json('{"a": [1, 2]}')
    {'a': [1, 2]}
    >>> load_json("[" * 100_000)
    Traceback (most recent call last):
    evalcore.limits.JsonTooDeepError: nested deeper than 64 levels at line 1
    """
    check_json_depth(text, limit=limit)
    try:
        return json.loads(text, **options)
    except RecursionError as exc:  # only with a limit raised near the interpreter's own
        raise JsonTooDeepError(1, limit) from exc


def token_count(value: Any, what: str = "token count") -> int:
    """A token count from a reply or a file: a whole number from 0 to :data:`MAX_TOKEN_COUNT`.

    ``None`` (a server that reports no usage) is 0; a float is accepted only when it is whole.
    Anything else raises :class:`TokenCountError` (a ``ValueError``) naming ``what``.

    >>> token_count(12), token_count(None), token_count(7.0)
    (12, 0, 7)
    >>> token_count(-1, "prompt_tokens")
    Traceback (most recent call last):
    evalcore.limits.TokenCountError: prompt_tokens should be a whole number from 0 to 100,000,000, not -1
    """
    if value is None:
        return 0
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    if number is None or not 0 <= number <= MAX_TOKEN_COUNT:
        raise TokenCountError(
            f"{what} should be a whole number from 0 to {MAX_TOKEN_COUNT:,}, not {_shown(value)}"
        )
    return number


def _shown(value: Any) -> str:
    """A JSON value in a message, short whatever it is."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) or (isinstance(value, int) and abs(value) < 10**30):
        return repr(value)
    if isinstance(value, int):
        return "a number of more than 30 digits"
    if isinstance(value, str):
        return f"the text {value[:20]!r}"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__
