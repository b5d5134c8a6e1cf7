"""evalcore.limits: the nesting scan agrees with the decoder, and token counts are checked.

The scan never decodes; the property test compares its verdict with the true depth of generated
JSON values (strings full of brackets, quotes and backslashes included) written in several ways.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.limits import (
    MAX_JSON_DEPTH,
    MAX_TOKEN_COUNT,
    JsonTooDeepError,
    check_json_depth,
    load_json,
    token_count,
)

#: Text that looks like JSON structure from inside a string.
tricky_text = st.text(
    st.sampled_from(['"', "\\", "[", "]", "{", "}", "a", " ", "é", "\u2028", ",", ":", "\t"]),
    max_size=12,
)


def depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    return 0


def values(max_leaves: int = 30) -> st.SearchStrategy[Any]:
    leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | tricky_text
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(tricky_text, inner, max_size=3),
        max_leaves=max_leaves,
    )


def nested(levels: int, inner: Any) -> Any:
    for n in range(levels):
        inner = [inner] if n % 2 else {"k[": inner}
    return inner


@settings(max_examples=300, deadline=None)
@given(
    value=values(),
    extra=st.integers(0, 8),
    limit=st.integers(1, 12),
    indent=st.sampled_from([None, 1]),
    ascii_only=st.booleans(),
)
def test_the_scan_agrees_with_the_true_depth(
    value: Any, extra: int, limit: int, indent: int | None, ascii_only: bool
) -> None:
    value = nested(extra, value)
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    true_depth = depth(value)
    if true_depth > limit:
        with pytest.raises(JsonTooDeepError):
            check_json_depth(text, limit=limit)
        with pytest.raises(JsonTooDeepError):
            check_json_depth(text.encode(), limit=limit)
    else:
        check_json_depth(text, limit=limit)
        assert load_json(text, limit=limit) == json.loads(text)


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(values(10), min_size=1, max_size=6), limit=st.integers(1, 6))
def test_json_lines_are_each_their_own_document(rows: list[Any], limit: int) -> None:
    text = "\n".join(json.dumps(r) for r in rows)
    deep = [n for n, row in enumerate(rows, start=1) if depth(row) > limit]
    if deep:
        with pytest.raises(JsonTooDeepError) as caught:
            check_json_depth(text, limit=limit, lines=True)
        assert caught.value.line == deep[0]
    else:
        check_json_depth(text, limit=limit, lines=True)


def test_the_error_names_the_line_of_a_document() -> None:
    text = '{\n  "a": 1,\n  "b": ' + "[" * 70 + "\n" + "]" * 70 + "\n}"
    with pytest.raises(JsonTooDeepError, match="at line 3") as caught:
        load_json(text)
    assert caught.value.line == 3
    assert caught.value.limit == MAX_JSON_DEPTH
    assert isinstance(caught.value, ValueError)  # callers that catch bad JSON catch it too


@pytest.mark.parametrize(
    "text",
    [
        "[" * 1_000_000,  # far past the interpreter's recursion limit
        '{"a":' * 200_000,
        "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1),  # one over: valid JSON, refused
    ],
    ids=["1M-brackets", "200k-objects", "one-over"],
)
def test_deep_input_is_refused_before_decoding(text: str) -> None:
    with pytest.raises(JsonTooDeepError):
        load_json(text)


def test_brackets_inside_strings_and_escapes_do_not_count() -> None:
    inside = json.dumps({"text": "[" * 1000 + '\\"' + "{" * 1000, "n": [[1]]})
    assert load_json(inside)["n"] == [[1]]
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert depth(load_json(at_limit)) == MAX_JSON_DEPTH


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, 0), (None, 0), (12, 12), (3.0, 3), (MAX_TOKEN_COUNT, MAX_TOKEN_COUNT)],
)
def test_token_counts_in_reason(value: Any, expected: int) -> None:
    assert token_count(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        -1,
        MAX_TOKEN_COUNT + 1,
        1e308,
        float("inf"),
        float("nan"),
        2.5,
        "7",
        True,
        [1],
        {"n": 1},
        10**50,
    ],
)
def test_token_counts_out_of_reason(value: Any) -> None:
    with pytest.raises(ValueError, match="whole number from 0 to 100,000,000"):
        token_count(value, "usage.prompt_tokens")
