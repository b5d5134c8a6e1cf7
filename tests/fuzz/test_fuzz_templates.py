"""Fuzzing judge templates: the Jinja prompts, and template files in TOML.

- **Prompts.** A user prompt is built from fragments (variables, filters, loops, conditions,
  macros, sandbox escapes, blow-ups) and from nesting generators: blocks nested around Python's
  own limits (20 loops, 100 levels of indentation), and expressions (parentheses, filters,
  attribute chains, additions, lists) nested up to 5,000 deep. It must build and render, or fail
  as a ``TemplateError`` (a ``MissingVariableError`` for a missing field) naming the template.
- **TOML files.** A template file is built from its known keys with values of every type
  (deep arrays and inline tables included), unknown keys, and damaged bytes. ``load_toml`` must
  give a template (which then renders, round-trips through ``to_toml`` and has a hash) or a typed
  error.
"""

from __future__ import annotations

import tomllib
from typing import Any

import tomli_w
from hypothesis import given
from hypothesis import strategies as st

from evalcore.judge import JudgeTemplate, render
from evalcore.labels import LIKERT_5
from tests.fuzz.harness import DEPTHS, damaged, fuzz_settings, numbers, scalars, tricky_text, typed

FRAGMENTS = [
    "{{ response }}",
    "{{ response * 3 }}",
    "{{ response|upper }}",
    "{{ response|center(5) }}",
    "{{ response|replace('a', 'bb') }}",
    "{% for i in range(3) %}",
    "{% for c in response %}",
    "{% endfor %}",
    "{% if response %}",
    "{% elif x %}",
    "{% else %}",
    "{% endif %}",
    "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(response) }}",
    "{% set n = namespace(v='x') %}{% for i in range(20) %}{% set n.v = n.v ~ n.v %}{% endfor %}",
    "{{ 1/0 }}",
    "{{ x.y }}",
    "{{ missing }}",
    "{{ ''.__class__.__mro__ }}",
    "{{ range(10**9)|length }}",
    "{{ 10 ** (10 ** 10) }}",
    "{{ lipsum(2) }}",
    "{{ 'x' * 10**7 }}",
    "{{ '%s' % response }}",
    "{{ [1, 2]|join(', ') }}",
    "{{ response|tojson }}",
    "{% raw %}{{ raw }}{% endraw %}",
    "{#",
    "#}",
    "{{",
    "}}",
    "{%",
    "%}",
    " text ",
    "\n",
]


def _nested_blocks(kind: str, depth: int) -> str:
    if kind == "for":
        return "{% for a in [1] %}" * depth + "{{ response }}" + "{% endfor %}" * depth
    if kind == "if":
        return "{% if true %}" * depth + "{{ response }}" + "{% endif %}" * depth
    if kind == "with":
        return "{% with a = 1 %}" * depth + "{{ response }}" + "{% endwith %}" * depth
    if kind == "paren":
        return "{{ " + "(" * depth + "response" + ")" * depth + " }}"
    if kind == "filters":
        return "{{ response" + "|string" * depth + " }}"
    if kind == "attrs":
        return "{{ response" + ".upper" * depth + " }}"
    if kind == "sum":
        return "{{ " + " ~ ".join(["response"] * depth) + " }}"
    if kind == "neg":
        return "{{ " + "-" * depth + "1 }}"
    return "{{ " + "[" * depth + "]" * depth + " }}"


nested = st.builds(
    _nested_blocks,
    st.sampled_from(["for", "if", "with", "paren", "filters", "attrs", "sum", "neg", "list"]),
    st.sampled_from([18, 19, 20, 21, 22, 98, 99, 100, 101, 500, 5_000]) | st.integers(1, 60),
)
prompts = st.lists(st.sampled_from(FRAGMENTS) | nested | tricky_text, min_size=1, max_size=8).map(
    "".join
)
item_values = scalars | st.lists(scalars, max_size=3) | st.text(max_size=30)


@fuzz_settings(ci=100)
@given(
    user=prompts,
    system=st.sampled_from(["", "Judge fairly.", "{{ response }}"]) | prompts,
    response=item_values,
    has_x=st.booleans(),
)
def test_fuzz_template_prompts(user: str, system: str, response: Any, has_x: bool) -> None:
    item: dict[str, Any] = {"response": response}
    if has_x:
        item["x"] = {"y": response}

    def build_and_render() -> list[dict[str, str]]:
        template = JudgeTemplate("fuzz", "fluency", LIKERT_5, system, user)
        return render(template, item, item_id="item-1")

    messages = typed("template prompts", build_and_render)
    if messages is not None:
        assert all(isinstance(m["content"], str) for m in messages)


# --- template files -------------------------------------------------------------------------------


@st.composite
def deep_toml_value(draw: st.DrawFn) -> str:
    """An array or inline table nested ``depth`` levels, as TOML text."""
    depth = draw(DEPTHS)
    if draw(st.booleans()):
        return "[" * depth + "1" + "]" * depth
    return "{ a = " * depth + "1" + " }" * depth


toml_scalars = st.one_of(
    tricky_text,
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)
toml_values = st.recursive(
    toml_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(tricky_text, inner, max_size=3),
    max_leaves=8,
)
GOOD = {
    "name": "fluency",
    "criterion": "fluency",
    "scale": [1, 2, 3, 4, 5],
    "system": "You judge fluency.",
    "user": "Response: {{ response }}",
    "rubric": "Is it fluent?",
    "output": {"structured": False},
    "model": {"temperature": 0.0, "max_tokens": 256, "n": 1},
}
KEYS = [*GOOD, "kind", "scale_kind", "scale_name", "description", "extra", "model.n", "output.x"]


@st.composite
def toml_documents(draw: st.DrawFn) -> str:
    """A template file: the good one with some keys changed, dropped or added (deep values
    written as raw TOML), possibly damaged."""
    data: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in GOOD.items()}
    raw: list[str] = []
    for _ in range(draw(st.integers(0, 4))):
        key = draw(st.sampled_from(KEYS))
        action = draw(st.sampled_from(["set", "drop", "deep"]))
        section, _, field = key.partition(".")
        target = data.setdefault(section, {}) if field else data
        if not isinstance(target, dict):
            continue
        name = field or section
        if action == "drop":
            target.pop(name, None)
        elif action == "set":
            target[name] = draw(toml_values | numbers)
        elif not field:
            data.pop(name, None)
            raw.append(f"{name} = {draw(deep_toml_value())}")
    try:
        text = tomli_w.dumps(data)
    except (TypeError, ValueError):  # a value TOML cannot hold (NaN keys and the like)
        text = tomli_w.dumps(GOOD)
    head = "\n".join(raw)
    text = head + "\n" + text if head else text
    if draw(st.integers(0, 4)) == 0:
        text = draw(damaged(text.encode())).decode("utf-8", "replace")
    return text


@fuzz_settings(ci=100)
@given(text=toml_documents(), response=item_values)
def test_fuzz_template_files(text: str, response: Any) -> None:
    def load() -> JudgeTemplate:
        template = JudgeTemplate.load_toml(text)
        render(template, {"response": response}, item_id="item-1")
        assert JudgeTemplate.load_toml(template.to_toml()) == template
        assert len(template.content_hash) == 64
        return template

    typed("template files", load)


def test_the_good_file_loads() -> None:
    # the generators' starting point is a template (so the changes, not the base, are refused)
    template = JudgeTemplate.load_toml(tomli_w.dumps(GOOD))
    assert template.name == "fluency"
    assert tomllib.loads(template.to_toml())["user"] == GOOD["user"]
