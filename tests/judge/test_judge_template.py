"""Judge templates: rendering, strict variables, the sandbox, content hashes, TOML and diffs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from evalcore.errors import MissingVariableError, TemplateError
from evalcore.judge import (
    JudgeItem,
    JudgeTemplate,
    ModelSettings,
    OutputSpec,
    check_variables,
    diff_templates,
    render,
    template_variables,
)
from evalcore.labels import LIKERT_5, PAIRWISE, PASS_FAIL, Scale

TOML = '''
name = "fluency"
criterion = "fluency"
scale = [1, 2, 3, 4, 5]
system = "You are a careful reader."
user = """
Rate the fluency of this response on {{ labels }}.
{{ response }}
"""

[model]
temperature = 0.0
'''


def _template(**changes: object) -> JudgeTemplate:
    base = JudgeTemplate(
        name="fluency",
        criterion="fluency",
        scale=LIKERT_5,
        system="Judge {{ criterion }}.",
        user="Q: {{ prompt }}\nA: {{ response }}",
        rubric="5 = effortless",
    )
    return replace(base, **changes)  # type: ignore[arg-type]


# --- rendering ---------------------------------------------------------------------------------------


def test_render_fills_item_fields_and_builtin_variables() -> None:
    messages = render(_template(), {"prompt": "2+2?", "response": "4"}, item_id="7")
    assert messages == [
        {"role": "system", "content": "Judge fluency."},
        {"role": "user", "content": "Q: 2+2?\nA: 4"},
    ]
    assert template_variables(_template()) == {"criterion", "prompt", "response"}


def test_labels_and_rubric_are_available_and_item_fields_win() -> None:
    template = _template(user="{{ labels }} | {{ rubric }} | {{ response }}")
    assert (
        render(template, {"response": "x"}, item_id="1")[1]["content"]
        == "1, 2, 3, 4, 5 | 5 = effortless | x"
    )
    overridden = render(template, {"response": "x", "rubric": "mine"}, item_id="1")
    assert overridden[1]["content"].endswith("| mine | x")


def test_none_and_nan_values_render_as_empty_text() -> None:
    messages = render(_template(), {"prompt": None, "response": float("nan")}, item_id="1")
    assert messages[1]["content"] == "Q: \nA: "


def test_template_without_system_prompt_sends_only_the_user_message() -> None:
    messages = render(_template(system=""), {"prompt": "p", "response": "r"}, item_id="1")
    assert [m["role"] for m in messages] == ["user"]


def test_missing_variable_names_the_variable_and_the_item() -> None:
    template = _template(user="{{ respnose }}")  # the typo this feature exists for
    with pytest.raises(MissingVariableError) as info:
        render(template, {"response": "x"}, item_id="item-42")
    assert info.value.variable == "respnose"
    assert info.value.item_id == "item-42"
    assert "respnose" in str(info.value)
    assert "item-42" in str(info.value)


def test_check_variables_finds_the_first_item_lacking_a_field() -> None:
    items = [JudgeItem("a", {"prompt": "p", "response": "r"}), JudgeItem("b", {"prompt": "p"})]
    with pytest.raises(MissingVariableError) as info:
        check_variables(_template(), items)
    assert (info.value.variable, info.value.item_id) == ("response", "b")
    check_variables(_template(), items[:1])  # no error


def test_nested_missing_attribute_is_a_missing_variable() -> None:
    template = _template(user="{{ meta.lang }}")
    with pytest.raises(MissingVariableError) as info:
        render(template, {"meta": {}}, item_id="9")
    assert info.value.variable == "lang"


@pytest.mark.parametrize(
    "source",
    [
        "{{ ''.__class__.__mro__ }}",
        "{{ response.__class__ }}",
        "{{ response['__class__'] }}",
        "{% for c in ''.__class__.__mro__ %}{{ c }}{% endfor %}",
    ],
)
def test_private_attribute_access_is_refused_when_the_template_is_built(source: str) -> None:
    with pytest.raises(TemplateError, match="private attribute"):
        _template(user=source)


def test_sandbox_refuses_escapes_at_render_time_as_a_template_error() -> None:
    template = _template(user="{{ response | attr('__class__') }}")
    with pytest.raises(TemplateError, match="unsafe"):
        render(template, {"response": "x"}, item_id="3")


def test_static_sandbox_escape_fails_when_built() -> None:
    with pytest.raises(TemplateError):
        _template(user="{{ '' | attr('__class__') }}")


def test_syntax_error_names_the_line() -> None:
    with pytest.raises(TemplateError, match="line 2"):
        _template(user="fine\n{{ response }\n")


def test_pairwise_kind_is_inferred_from_the_scale() -> None:
    template = _template(scale=PAIRWISE)
    assert template.kind == "pairwise"
    assert template.label_field == "choice"
    assert _template(scale=PASS_FAIL).label_field == "label"
    with pytest.raises(TemplateError, match="pairwise"):
        _template(kind="pairwise")


# --- identity ----------------------------------------------------------------------------------------


def test_content_hash_is_stable_and_changes_with_any_content() -> None:
    first, second = _template(), _template()
    assert first.content_hash == second.content_hash
    assert len(first.content_hash) == 64
    assert first.version == first.content_hash[:12]
    variants = [
        _template(user="Q: {{ prompt }}\nAnswer: {{ response }}"),
        _template(system="Judge strictly."),
        _template(model=ModelSettings(temperature=0.7)),
        _template(model=ModelSettings(n=3)),
        _template(output=OutputSpec(structured=True)),
        _template(scale=Scale.likert(1, 10)),
        _template(rubric="other"),
    ]
    hashes = {t.content_hash for t in variants}
    assert first.content_hash not in hashes
    assert len(hashes) == len(variants)


def test_content_dict_round_trips_through_from_dict() -> None:
    template = _template(model=ModelSettings(model="m", seed=3, n=2, logprobs=True))
    again = JudgeTemplate.from_dict(template.content_dict())
    assert again == template
    assert again.content_hash == template.content_hash


# --- TOML --------------------------------------------------------------------------------------------


def test_toml_text_loads_with_defaults() -> None:
    template = JudgeTemplate.load_toml(TOML)
    assert template.name == "fluency"
    assert template.scale.labels == (1.0, 2.0, 3.0, 4.0, 5.0)
    assert template.scale.kind == "ordinal"
    assert template.kind == "pointwise"
    assert template.model == ModelSettings(temperature=0.0)
    assert template_variables(template) == {"labels", "response"}


@pytest.mark.parametrize(
    "template",
    [
        _template(),
        _template(scale=PAIRWISE, user="{{ response_a }} vs {{ response_b }}"),
        _template(scale=PASS_FAIL, output=OutputSpec(parser="json", structured=True)),
        _template(scale=Scale(("very low", "low", "medium", "high"), "ordinal", "severity")),
        _template(
            model=ModelSettings(model="gpt-4o-mini", max_tokens=None, seed=7, n=3, logprobs=True)
        ),
        _template(description="a description", output=OutputSpec(aggregate="mean")),
    ],
    ids=["likert", "pairwise", "passfail", "severity", "settings", "description"],
)
def test_toml_round_trip_gives_an_equal_template(template: JudgeTemplate, tmp_path: Path) -> None:
    text = template.to_toml()
    assert JudgeTemplate.load_toml(text) == template
    path = tmp_path / "t.toml"
    path.write_text(text, encoding="utf-8")
    loaded = JudgeTemplate.load_toml(path)
    assert loaded.content_hash == template.content_hash
    assert JudgeTemplate.load_toml(str(path)) == template


def test_toml_pairwise_scale_infers_kind() -> None:
    text = 'name = "p"\nscale = ["A", "B", "TIE"]\nuser = "{{ response_a }} {{ response_b }}"\n'
    template = JudgeTemplate.load_toml(text)
    assert template.kind == "pairwise"
    assert template.scale == PAIRWISE


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('name = "x"\nscale = [1, 2]\nuser = "u"\ntemprature = 1\n', "temprature"),
        ('name = "x"\nscale = [1, 2]\nuser = "u"\n[model]\ntemprature = 1\n', "temprature"),
        ('name = "x"\nuser = "u"\n', "scale"),
        ('name = "x"\nscale = [1, 2\n', "not valid TOML"),
        ('name = "x"\nscale = [1, 2]\nuser = "{{ a }"\n', "line 1"),
        ('name = "x"\nscale = [1, 2]\nuser = "u"\n[output]\nparser = "xml"\n', "parser"),
    ],
)
def test_bad_toml_is_a_template_error(text: str, message: str) -> None:
    with pytest.raises(TemplateError, match=message):
        JudgeTemplate.load_toml(text)


def test_missing_toml_file_is_a_template_error(tmp_path: Path) -> None:
    with pytest.raises(TemplateError, match="does not exist"):
        JudgeTemplate.load_toml(tmp_path / "nope.toml")


# --- diff --------------------------------------------------------------------------------------------


def test_diff_shows_changed_prompt_and_settings() -> None:
    old = _template()
    new = _template(
        user="Q: {{ prompt }}\nAnswer: {{ response }}", model=ModelSettings(temperature=0.5)
    )
    diff = diff_templates(old, new)
    assert f"--- fluency@{old.version}" in diff
    assert f"+++ fluency@{new.version}" in diff
    assert "-A: {{ response }}" in diff
    assert "+Answer: {{ response }}" in diff
    assert "-temperature = 0.0" in diff
    assert "+temperature = 0.5" in diff
    assert "Q: {{ prompt }}" not in [line[1:] for line in diff.splitlines() if line[:1] in "+-"]


def test_diff_of_equal_templates_is_empty() -> None:
    assert diff_templates(_template(), _template()) == ""
