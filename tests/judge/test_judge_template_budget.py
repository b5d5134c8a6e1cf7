"""Templates render within budgets: loop iterations, characters per message and time.

Before the fix, nested ``range()`` loops and ``lipsum(n=10**6)`` ran for more than ten seconds,
``'x'*10**8`` built a 100 MB prompt, and ``range(10**9)`` or ``{{ 1/0 }}`` in a system message raised
a raw ``OverflowError`` / ``ZeroDivisionError``. Time bounds here are generous ``pytest-timeout``
markers, never wall-clock assertions.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.errors import TemplateError
from evalcore.judge import DEFAULT_BUDGET, JudgeTemplate, RenderBudget, render
from evalcore.labels import LIKERT_5

#: Cases of the template fuzz test; docs/reliability.md records this figure.
TEMPLATE_CASES = 200


def _template(user: str, system: str = "") -> JudgeTemplate:
    return JudgeTemplate("hostile", "fluency", LIKERT_5, system, user)


HOSTILE_USER = {
    "nested-range": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}x{{ response }}",
    "nested-loops-output": "{% for i in range(1000) %}{% for j in range(1000) %}ab{% endfor %}{% endfor %}{{ response }}",
    "lipsum": "{{ lipsum(n=10**6) }}{{ response }}",
    "repeat": "{{ 'x' * 10**8 }}{{ response }}",
    "repeat-field": "{{ response * 10**7 }}",
    "huge-range": "{% for i in range(10**9) %}{% endfor %}{{ response }}",
    "power": "{{ 10 ** (10 ** 10) }}{{ response }}",
    "center": "{{ response|center(10**9) }}",
    "ljust": "{{ response.ljust(10**9) }}",
    "format-width": "{{ '{:>999999999}'.format(response) }}",
    "percent-width": "{{ '%999999999s' % response }}",
    "replace": "{{ (response * 1000)|replace('a', response * 1000) }}",
    "concat-doubling": "{% set ns = namespace(s='xx') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}{{ response }}",
    "join": "{{ (response * 1000)|list|join(response * 1000) }}",
    "field-loop": "{% for a in response * 400 %}{% for b in response * 400 %}{% endfor %}{% endfor %}",
    "append": "{% set l = [1] %}{% for i in range(30) %}{{ l.extend(l) }}{% endfor %}{{ response }}",
    "zero-division": "{{ 1/0 }}{{ response }}",
    "recursion": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}{{ response }}",
}


@pytest.mark.timeout(20)
@pytest.mark.parametrize("user", HOSTILE_USER.values(), ids=HOSTILE_USER.keys())
def test_a_hostile_template_fails_as_a_template_error_naming_template_message_and_item(
    user: str,
) -> None:
    template = _template(user)
    with pytest.raises(TemplateError) as caught:
        render(template, {"response": "abc"}, item_id="item-7")
    message = str(caught.value)
    assert "'hostile'" in message
    assert "user message" in message
    assert "item-7" in message
    assert caught.value.item_id == "item-7"


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "system", ["{{ 1/0 }}", "{% for i in range(10**9) %}{% endfor %}", "{{ 'x' * 10**8 }}"]
)
def test_a_constant_system_message_fails_when_the_template_is_built(system: str) -> None:
    with pytest.raises(TemplateError, match="'hostile', system message"):
        _template("{{ response }}", system=system)


def test_the_budget_is_per_message_and_configurable() -> None:
    template = _template(
        "{% for i in range(50) %}{% for j in range(50) %}.{% endfor %}{% endfor %}{{ x }}",
        system="{% for i in range(50) %}{{ x }}{% endfor %}",
    )
    # user: 50 · 50 = 2,500 inner iterations plus the 50 outer ones, 2,550 in all; the system
    # message's 50 iterations are counted apart
    item = {"x": "!"}
    assert len(render(template, item)[1]["content"]) == 2_501
    with pytest.raises(TemplateError, match=r"user message.*ran more than 2,549 iterations"):
        render(template, item, budget=RenderBudget(max_iterations=2_549))
    render(template, item, budget=RenderBudget(max_iterations=2_550))
    with pytest.raises(TemplateError, match=r"user message.*longer than 2,500 characters"):
        render(template, item, budget=RenderBudget(max_chars=2_500))


def test_the_time_budget_stops_a_render() -> None:
    template = _template("{% for i in range(2000) %}{{ i }}{% endfor %}{{ x }}")
    with pytest.raises(TemplateError, match="took more than 0 s"):
        render(template, {"x": 1}, budget=RenderBudget(max_seconds=0.0))


def test_ordinary_templates_render_as_before() -> None:
    template = _template(
        "{% for x in items %}{{ loop.index }}. {{ x|upper }}\n{% endfor %}"
        "{{ '%s!' % name }} {{ name ~ '?' }} {{ '{}-{}'.format(1, 2) }} {{ [1, 2]|join(', ') }} "
        "{{ 2 ** 10 }} {{ 'ab' * 2 }} {{ name|center(9) }}|{{ lipsum(1, False, 3, 5)|length > 0 }}"
    )
    content = render(template, {"items": ["a", "b"], "name": "Ann"})[0]["content"]
    assert content == "1. A\n2. B\nAnn! Ann? 1-2 1, 2 1024 abab    Ann   |True"
    assert RenderBudget(100_000, 1_000_000, 2.0) == DEFAULT_BUDGET


PIECES = [
    "{{ response }}",
    "{{ response * 3 }}",
    "{% for i in range(3) %}",
    "{% endfor %}",
    "{{ 1/0 }}",
    "{{ response|center(5) }}",
    " text ",
    "{{ x.y }}",
    "{% if response %}",
    "{% endif %}",
    "{{ ''.__class__ }}",
    "{{ range(10**6)|length }}",
    "{{ lipsum(2) }}",
    "{{ response ~ response }}",
    "{% raw %}",
    "{{",
]


@settings(max_examples=TEMPLATE_CASES, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=12).map("".join), st.text(max_size=50))
def test_any_template_either_builds_and_renders_or_fails_as_a_template_error(
    user: str, response: str
) -> None:
    try:
        template = _template(user or "x")
        render(template, {"response": response}, item_id="fuzz")
    except TemplateError:
        pass


def test_loop_iterations_count_every_nested_pass() -> None:
    """The counter is shared by every loop of the message: 3 · 4 · 5 = 60 inner + 3 · 4 + 3 = 75."""
    template = _template(
        "{% for a in range(3) %}{% for b in range(4) %}{% for c in range(5) %}{% endfor %}"
        "{% endfor %}{% endfor %}{{ x }}"
    )
    total = sum(itertools.accumulate([3, 4, 5], lambda x, y: x * y))  # 3 + 12 + 60
    assert total == 75
    render(template, {"x": 1}, budget=RenderBudget(max_iterations=75))
    with pytest.raises(TemplateError):
        render(template, {"x": 1}, budget=RenderBudget(max_iterations=74))
