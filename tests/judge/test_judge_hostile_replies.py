"""Hostile judge replies: every pattern reads in linear time and ``parse_reply`` never raises.

The time bounds are generous ``pytest-timeout`` markers (a hang fails the test), never wall-clock
assertions: before the fix, the first case alone took over ten seconds and the nested-JSON case
raised ``RecursionError``.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.judge import MAX_REPLY_CHARS, parse_reply
from evalcore.labels import LIKERT_5, PAIRWISE, PASS_FAIL, Scale

SCALES = (LIKERT_5, PAIRWISE, PASS_FAIL)
#: What the generated replies are made of: JSON punctuation, fences, keywords, values, white space.
PIECES = [*' \t\n{}[]":,`*_=/.-+0123456789abAB', "Score", "```json", '"score"', "out of", "[[A]]"]


@pytest.mark.timeout(5)
def test_a_keyword_then_a_long_run_of_spaces_parses_fast() -> None:
    parsed = parse_reply("Score:" + " " * 2_000 + "x", LIKERT_5)
    assert parsed.status == "unparsed"
    # the same run of white space before a real value still finds it
    assert parse_reply("Score:" + " " * 2_000 + "4", LIKERT_5).label == 4.0


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "text",
    [
        "Score: " + "\t \n" * 30_000 + "=",
        "score4." * 20_000,  # every keyword match used to scan the rest of the reply
        "```" * 30_000,  # many fences, none closed by a JSON object
        "```json {" * 20_000,
        '{"a":' * 30_000,  # every "{" used to start a full decode of the rest
        "final " * 30_000 + "x",
        "1" * 100_000 + " / x",
        "Rating is : = [[[((( " * 10_000,
    ],
    ids=[
        "spaces",
        "keyword-run",
        "fences",
        "open-fences",
        "open-objects",
        "final",
        "digits",
        "mix",
    ],
)
def test_pathological_replies_parse_in_linear_time(text: str) -> None:
    for scale in SCALES:
        assert parse_reply(text, scale).status in ("ok", "unparsed")


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "text",
    ["[" * 100_000, '{"score": ' + "[" * 100_000, '{"a": ' * 5_000 + "1" + "}" * 5_000],
    ids=["brackets", "label-field", "objects"],
)
def test_deeply_nested_json_is_unparsed_with_the_reason(text: str) -> None:
    parsed = parse_reply(text, LIKERT_5)
    assert parsed.status == "unparsed"
    assert parsed.error  # a reason, never a RecursionError


def test_a_long_reply_is_read_at_its_start_and_its_end() -> None:
    """Text patterns read the first and the last ``MAX_REPLY_CHARS // 2`` characters."""
    filler = "blah " * (MAX_REPLY_CHARS // 5)
    late = parse_reply(filler + "Score: 3", LIKERT_5)
    assert (late.label, late.span is not None) == (3.0, True)
    assert late.span is not None
    text = filler + "Score: 3"
    assert text[late.span[0] : late.span[1]] == "3"  # the span points into the full reply
    early = parse_reply("Score: 2. " + filler, LIKERT_5)
    assert early.label == 2.0
    middle = parse_reply(filler + "Score: 5 " + filler, LIKERT_5)
    assert middle.status == "unparsed"  # past the documented cap on both sides


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), max_size=120).map("".join),
    st.sampled_from((*SCALES, Scale.likert(0, 10))),
    st.sampled_from(["auto", "json", "text"]),
)
def test_parse_reply_never_raises(text: str, scale: Scale, parser: str) -> None:
    parsed = parse_reply(text, scale, parser=parser)  # type: ignore[arg-type]
    assert parsed.status in ("ok", "unparsed")
    assert (parsed.label is not None) == (parsed.status == "ok")
    if parsed.status == "unparsed":
        assert parsed.error
