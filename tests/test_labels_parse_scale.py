"""One scale parser: :func:`evalcore.labels.parse_scale` reads every typed scale.

The command line's ``--scale`` (:func:`evalcore.report.parse_scale`), a judge template's ``scale =
[...]`` and the Datasets page's custom labels (``evalcore.workflows.datasets.custom_scale``, which
reads them with the parser: same labels and error class, the same kind but for pass/fail labels,
which stay binary) all read a scale the same way.
"""

from __future__ import annotations

import pytest

from evalcore.errors import DataError, EvalcoreError, TemplateError
from evalcore.judge import JudgeTemplate
from evalcore.labels import LIKERT_5, PASS_FAIL, Scale, parse_scale
from evalcore.report import parse_scale as report_parse_scale


@pytest.mark.parametrize(
    ("typed", "labels", "kind", "name"),
    [
        ("1,2,3,4,5", (1.0, 2.0, 3.0, 4.0, 5.0), "ordinal", "1-5"),
        (" 1, 3 ,5 ", (1.0, 3.0, 5.0), "ordinal", ""),  # not a run of whole numbers: no name
        ("0.5, 1.5", (0.5, 1.5), "ordinal", ""),
        ("pass, fail", ("pass", "fail"), "binary", ""),
        ("yes,no", ("yes", "no"), "binary", ""),
        ("fail, pass", ("fail", "pass"), "binary", ""),  # the order given: fail is positive
        ("model_A, model_B, tie", ("A", "B", "TIE"), "pairwise", "A/B/tie"),
        ("A,B", ("A", "B"), "pairwise", "A/B/tie"),
        ("bad, ok, good", ("bad", "ok", "good"), "nominal", ""),
        ("pass, fail, unsure", ("pass", "fail", "unsure"), "nominal", ""),
    ],
)
def test_a_typed_scale_keeps_its_order_and_infers_its_kind(
    typed: str, labels: tuple[object, ...], kind: str, name: str
) -> None:
    scale = parse_scale(typed)
    assert (scale.labels, scale.kind, scale.name) == (labels, kind, name)
    assert parse_scale([part.strip() for part in typed.split(",")]) == scale  # a list reads alike
    assert report_parse_scale(typed) == scale  # the command line's --scale is the same parser


def test_the_ordered_option_is_the_custom_labels_of_a_criterion() -> None:
    assert parse_scale("bad, ok, good", ordered=True).kind == "ordinal"
    assert parse_scale("bad, ok, good", ordered=False).kind == "nominal"
    assert parse_scale("pass, fail", ordered=True).kind == "ordinal"  # the box decides, not words
    assert parse_scale("low, high", kind="ordinal", name="risk") == Scale(
        ("low", "high"), "ordinal", "risk"
    )


def test_it_is_a_drop_in_for_the_datasets_pages_custom_labels() -> None:
    from evalcore.workflows.datasets import custom_scale  # what the Datasets page calls

    for text in ("bad, ok, good", "1, 2, 3", "pass,fail", " x ,y,z "):
        for ordered in (True, False):
            ours, theirs = parse_scale(text, ordered=ordered), custom_scale(text, ordered=ordered)
            assert ours.labels == theirs.labels
            # pass/fail typed as custom labels stays a binary criterion (its own metrics)
            assert theirs.kind == ("binary" if text == "pass,fail" else ours.kind)
    for bad in ("", "one", "a, a"):
        with pytest.raises(DataError):
            custom_scale(bad, ordered=True)
        with pytest.raises(DataError):
            parse_scale(bad, ordered=True)


@pytest.mark.parametrize(
    ("typed", "reason"),
    [
        ("", "no labels"),
        (" , ,", "no labels"),
        ("only", "at least two labels"),
        ("1, 2, 1", "repeat"),
        ("A, B, maybe", "not a pairwise choice"),
    ],
)
def test_a_bad_scale_is_a_data_error_that_quotes_it(typed: str, reason: str) -> None:
    kind = "pairwise" if "maybe" in typed else None
    with pytest.raises(DataError, match=reason) as refused:
        parse_scale(typed, kind=kind)  # type: ignore[arg-type]
    assert str(refused.value).startswith(f"scale {typed!r}")


def test_kind_and_ordered_are_not_both_given_and_the_kind_is_known() -> None:
    with pytest.raises(DataError, match="not both"):
        parse_scale("1,2", kind="ordinal", ordered=True)
    with pytest.raises(DataError, match="the kind is one of"):
        parse_scale("1,2", kind="interval")  # type: ignore[arg-type]
    with pytest.raises(DataError, match="exactly two labels"):
        parse_scale("a, b, c", kind="binary")


def test_the_command_line_reads_no_scale_from_an_empty_text() -> None:
    assert report_parse_scale("") is None
    assert report_parse_scale(None) is None
    with pytest.raises(EvalcoreError, match="scale 'x'"):
        report_parse_scale("x")


def test_a_templates_scale_is_read_by_the_same_parser() -> None:
    body = 'name = "t"\nuser = "{{ response }}"\n'
    assert JudgeTemplate.load_toml(body + "scale = [1, 2, 3, 4, 5]\n").scale == LIKERT_5
    assert JudgeTemplate.load_toml(body + 'scale = ["pass", "fail"]\n').scale.kind == "binary"
    assert JudgeTemplate.load_toml(body + 'scale = ["A", "B", "TIE"]\n').scale.name == "A/B/tie"
    severity = JudgeTemplate.load_toml(
        body + 'scale = ["low", "high"]\nscale_kind = "ordinal"\nscale_name = "risk"\n'
    ).scale
    assert severity == parse_scale("low, high", kind="ordinal", name="risk")
    with pytest.raises(TemplateError, match="repeat"):
        JudgeTemplate.load_toml(body + "scale = [1, 1]\n")
    with pytest.raises(TemplateError, match="a list of labels"):
        JudgeTemplate.load_toml(body + 'scale = "1,2,3"\n')
    # a template written out reads back the same (the round trip decides what it must spell out)
    template = JudgeTemplate("t", "t", PASS_FAIL, "", "{{ response }}")
    assert JudgeTemplate.load_toml(template.to_toml()).scale == PASS_FAIL
