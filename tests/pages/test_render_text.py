"""ui.render's text helpers, checked by rendering their output with a CommonMark parser.

markdown-it (CommonMark, the grammar Streamlit's Markdown follows, plus tables and strikethrough)
turns the helpers' output into HTML: it must hold no image and no link whatever the input, and
``md_escape`` must show the input's text exactly. GitHub's bare-address autolinks are not part of
CommonMark, so those are checked on the text: no "http://", "www." or "@" stays as one run.
"""

from __future__ import annotations

import html
import re

import pytest
from hypothesis import given, settings
from hypothesis.strategies import text as st_text
from markdown_it import MarkdownIt

from ui.render import WORD_JOINER, code_span, inert_markdown, md_escape

MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])
HOST = "attacker.example"

HOSTILE = [
    f"![a](http://{HOST}/a.png)",
    f"[b](http://{HOST}/b)",
    f"<http://{HOST}/c> <me@{HOST}>",
    f'<img src="http://{HOST}/d.png"> <a href="http://{HOST}/e">e</a>',
    f"![f][ref]\n\n[ref]: http://{HOST}/f.png",
    f"[g]\n\n[g]: http://{HOST}/g",
    f"![nested [h]](http://{HOST}/h.png) [![i](http://{HOST}/i.png)](http://{HOST}/j)",
    f'text ![k](<http://{HOST}/k 1.png> "t")',
    "`code` and ``co`de`` and ```\nfenced ![l](http://x/l.png)\n```",
    f"```\nopen fence\n\n![m](http://{HOST}/m.png)",
    f"    indented ![n](http://{HOST}/n.png)",
    "| a | b |\n|---|---|\n| ![o](http://attacker.example/o.png) | x |",
    ":red[colour] :smile: $x^2$ &lt;img&gt;",
    "# heading\n\n1. one\n2) two\n- three\n> quote\n***",
    "\\![escaped](http://attacker.example/p.png) \\\\![q](http://attacker.example/q.png)",
]


def _html(markdown: str) -> str:
    return MD.render(markdown)


def _text(rendered: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", rendered))


@pytest.mark.parametrize("text", HOSTILE)
@pytest.mark.parametrize("helper", [md_escape, inert_markdown])
def test_no_image_and_no_link_survive(helper, text: str) -> None:
    rendered = _html(helper(text))
    assert "<img" not in rendered
    assert "<a " not in rendered
    outside_code = re.sub(r"<code>.*?</code>", "", rendered, flags=re.DOTALL)
    for trigger in ("http://", "https://", f"www.{HOST}", f"@{HOST}"):
        assert trigger not in _text(outside_code)


@pytest.mark.parametrize("text", HOSTILE)
def test_escaped_text_reads_exactly_as_written(text: str) -> None:
    shown = _text(_html(md_escape(text))).replace(WORD_JOINER, "")
    # a paragraph's line breaks become <br />, blank lines separate nothing: compare the words
    assert shown.split() == text.split()


def test_formatted_text_keeps_its_structure() -> None:
    rendered = _html(inert_markdown("# Title\n\n- **one**\n- `two`\n\n```\nthree\n```"))
    assert "<h1>Title</h1>" in rendered
    assert "<li><strong>one</strong></li>" in rendered
    assert "<code>two</code>" in rendered
    assert "<pre><code>three\n</code></pre>" in rendered


def test_formatted_images_and_links_become_plain_words() -> None:
    shown = _text(_html(inert_markdown(f"see ![a cat](http://{HOST}/c.png) and [docs](http://d)")))
    assert shown.replace(WORD_JOINER, "").strip() == ("see [image: a cat] and docs (http://d)")


def test_a_code_span_holds_any_backticks() -> None:
    for text in ("plain", "a`b", "``", "`edge`"):
        rendered = _html(code_span(text))
        assert html.unescape(re.search(r"<code>(.*)</code>", rendered).group(1)) == text


# the regex the code spans were found with before: correct, but quadratic on unmatched backtick runs
_REFERENCE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)


@given(st_text(alphabet="`ab\n", max_size=40))
@settings(max_examples=500, deadline=None)
def test_code_spans_are_found_as_the_reference_regex_finds_them(text: str) -> None:
    from ui.render import _code_spans

    assert _code_spans(text) == [m.span() for m in _REFERENCE_SPAN.finditer(text)]


@pytest.mark.timeout(20)
def test_many_unmatched_backtick_runs_render_without_a_quadratic_scan() -> None:
    # runs of 1, 2, …, 2399 backticks: no two alike, so no run closes; 2.9 MB of text. The old
    # regex scanned to the end from every run (about 45 s here); the pairing scan is one pass.
    text = "x".join("`" * n for n in range(1, 2400))
    assert inert_markdown(text).count("`") == text.count("`")
