"""Small renderers the pages share: errors, metric tables, heatmaps."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence

import pandas as pd
import streamlit as st

from evalcore.errors import EvalcoreError, format_rows
from evalcore.workflows.calibrate import (
    HUMANS_COLUMN,
    CalibrationReport,
    SideBySide,
    confusion_heatmaps,
)
from ui import state


def show_error(exc: EvalcoreError, *, title: str | None = None) -> None:
    """Show an evalcore error as the user should read it: the message, and the rows it names."""
    message = str(exc)
    shown = md_escape(message)  # a message may quote an item, a name or an endpoint's reply
    st.error(f"**{md_escape(title)}**\n\n{shown}" if title else shown, icon=":material/error:")
    if exc.rows and format_rows(exc.rows) not in message:
        st.caption(f"Offending {md_escape(format_rows(exc.rows))}")


#: Each traffic light as a badge colour and a word (the word carries it where colour does not).
#: Each light's colour in Streamlit's markdown and its word.
LIGHTS: dict[str, tuple[str, str]] = {"green": ("green", "green"), "amber": ("orange", "amber"),
                                      "red": ("red", "red"), "none": ("gray", "no data")}  # fmt: skip


def badge(light: str, words: str = "") -> str:
    """Markdown of a traffic light: a coloured badge with its word, then ``words`` (escaped)."""
    colour, word = LIGHTS.get(light, LIGHTS["none"])
    return f":{colour}-badge[{word}]" + (f" {md_escape(words)}" if words else "")


def metric_table(table: SideBySide, *, key: str) -> None:
    """The side-by-side table; the best value of each metric row carries a star. It is as tall as
    its rows (the Δ and McNemar rows at the bottom are never scrolled out of sight), and the metric
    names and the humans' ceiling stay pinned while the run columns scroll sideways."""
    st.dataframe(
        table.text,
        key=key,
        width="stretch",
        height="content",
        column_config={
            "_index": st.column_config.TextColumn("metric", pinned=True),
            # the reference column stays in sight beside the names, however many runs there are
            HUMANS_COLUMN: st.column_config.TextColumn(HUMANS_COLUMN, pinned=True, width="medium"),
        },
    )


def heatmaps(
    panels: Sequence[tuple[str, CalibrationReport]],
    *,
    key: str,
    selectable: bool = False,
    on_select: Callable[[], None] | None = None,
) -> object:
    """Confusion matrices side by side with a counts / row-normalised switch.

    With ``selectable`` a click on a cell selects it (a point selection whose ``customdata`` is
    [panel index, human label, judge label]); ``on_select`` is then called on every change of the
    selection (before the rerun), and the selection is returned.
    """
    normalize = st.toggle(
        "Row-normalised", key=state.key(key, "norm"), help="Share of each human label"
    )
    fig = confusion_heatmaps(
        panels, normalize=normalize, height=380 + 20 * len(panels[0][1].labels)
    )
    if selectable:
        return st.plotly_chart(
            fig,
            key=key,
            on_select=on_select or "rerun",
            selection_mode="points",
            config={"displaylogo": False},
        )
    st.plotly_chart(fig, key=key, config={"displaylogo": False})
    return None


def fmt(value: float | None, digits: int = 3) -> str:
    if value is None or pd.isna(value):
        return "–"
    return f"{value:.{digits}f}"


# --- text from outside (datasets, judge replies, names) --------------------------------------------
#
# Everything a dataset, a judge or a person typed is shown so that it cannot fetch anything or become
# a link. Streamlit's Markdown has no switch for images or links, so the text is transformed before
# it is rendered:
# - backslash escapes undo Markdown syntax (links, images, directives like :red[...], maths, HTML);
# - GitHub-style autolinks ("http://", "www.", "a@b.org") are found in the text *after* escapes are
#   resolved, so a word joiner (U+2060, invisible) is put inside each trigger to break it.

#: The invisible character that breaks an autolink trigger.
WORD_JOINER = "\u2060"
# inline marks (an underscore inside a word is never emphasis, so names like item_id stay as they are)
_INLINE_MARKS = re.compile(r"([\\`*\[\]<>$~|&]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")
# marks that only count at the start of a line: headings, quotes, list items, setext underlines
_LINE_MARKS = re.compile(r"(?m)^([ \t]*(?:\d+(?=[.)]))?)([#>+=.)-])")
_INDENT = re.compile(r"(?m)^[ \t]+")
# emoji and icon shortcodes (":smile:", ":material/home:")
_SHORTCODE = re.compile(r"(?<=:)(?=[\w/+-]+:)")
_LINK_PUNCT = re.compile(r"([\\\[\]<>$&])")
_AUTOLINK_TRIGGERS = re.compile(r"(?i)(?<=[:@])|(?<=www)(?=\\?\.)")
_URL_TRIGGERS = re.compile(r"(?i)(?<=:)(?=\\?/)|(?<=@)|(?<=www)(?=\\?\.)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_BACKTICKS = re.compile(r"`+")
_IMAGE = re.compile(r"!\[([^\[\]\n]*)\]\(([^()\s]*)(?:\s+\"[^\"]*\")?\)")
_LINK = re.compile(r"\[([^\[\]\n]*)\]\(([^()\s]*)(?:\s+\"[^\"]*\")?\)")
_ANGLE_LINK = re.compile(r"<((?:[a-zA-Z][a-zA-Z0-9+.-]{1,31}:|www\.)[^<>\s]*|[^<>\s@]+@[^<>\s]+)>")


def _break_autolinks(text: str, triggers: re.Pattern[str] = _AUTOLINK_TRIGGERS) -> str:
    return triggers.sub(WORD_JOINER, text)


def md_escape(text: object) -> str:
    """``text`` as literal Markdown: shown exactly as written (bar line breaks kept as breaks), with
    no link, image, directive, maths or HTML. Use it for every outside string put in a Markdown
    label, caption, title or message.

    >>> md_escape("![x](http://e.org) for item_id") == "!\\\\[x\\\\](http:\u2060//e.org) for item_id"
    True
    >>> md_escape("# 1. *a* <b>")
    '\\\\# 1. \\\\*a\\\\* \\\\<b\\\\>'
    """
    escaped = _LINE_MARKS.sub(r"\1\\\2", _INLINE_MARKS.sub(r"\\\1", str(text)))
    escaped = _SHORTCODE.sub(WORD_JOINER, _break_autolinks(escaped, _URL_TRIGGERS))
    # leading blanks as no-break spaces: the indent shows, and never starts a code block
    escaped = _INDENT.sub(lambda m: "\u00a0" * len(m.group(0).expandtabs(4)), escaped)
    return escaped.replace("\r\n", "\n").replace("\n", "  \n")


def _inert_prose(text: str) -> str:
    """Prose outside code, for :func:`inert_markdown`: images become their alt text in brackets,
    links their text and address as plain text; what remains of link, HTML, directive and maths
    syntax is escaped, and autolinks are broken. Emphasis, lists, headings and tables stay."""
    text = _IMAGE.sub(lambda m: f"[image: {m.group(1)}]" if m.group(1) else "[image]", text)
    text = _LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})" if m.group(2) else m.group(1), text)
    text = _ANGLE_LINK.sub(lambda m: m.group(1), text)
    return _break_autolinks(_LINK_PUNCT.sub(r"\\\1", text), _URL_TRIGGERS)


def _code_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each code span: a run of backticks up to the next run of the same length.

    One pass over the runs with a sorted list of positions per run length, so the time stays
    near-linear whatever the backticks (a regex with a lazy body is quadratic on unmatched runs).
    """
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
    by_length: dict[int, list[int]] = {}
    for index, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(index)
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(runs):
        start, end = runs[i]
        same = by_length[end - start]
        at = bisect.bisect_right(same, i)
        if at < len(same):
            closing = same[at]
            spans.append((start, runs[closing][1]))
            i = closing + 1
        else:
            i += 1
    return spans


def _inert_inline(text: str) -> str:
    parts: list[str] = []
    last = 0
    for start, end in _code_spans(text):
        parts.append(_inert_prose(text[last:start]))
        parts.append(text[start:end])  # a code span shows its content literally: nothing to do
        last = end
    parts.append(_inert_prose(text[last:]))
    return "".join(parts)


def inert_markdown(text: object) -> str:
    """``text`` as Markdown whose structure renders (lists, code, emphasis, headings, tables) but
    that can load nothing and link nowhere: ``![alt](url)`` shows as ``[image: alt]``,
    ``[text](url)`` as ``text (url)``, and addresses are plain text. Code keeps its content as is.

    >>> inert_markdown("**hi** ![cat](http://e.org/c.png)")
    '**hi** \\\\[image: cat\\\\]'
    >>> inert_markdown("`[x](y)`")
    '`[x](y)`'
    """
    lines = str(text).replace("\r\n", "\n").split("\n")
    out: list[str] = []
    prose: list[str] = []
    fence: str | None = None

    def flush() -> None:
        if prose:
            out.append(_inert_inline("\n".join(prose)).replace("\n", "  \n"))
            prose.clear()

    for line in lines:
        opened = _FENCE.match(line)
        if fence is None and opened:
            flush()
            fence = opened.group(1)
            out.append(line)
        elif fence is not None:
            out.append(line)
            closing = _FENCE.match(line)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                fence = None
        else:
            prose.append(line)
    flush()
    if fence is not None:
        out.append(fence)  # close a fence the text left open, so nothing after it is code
    return "\n".join(out)


def code_span(text: object) -> str:
    """``text`` as inline code (shown as written, whatever backticks it holds) for a Markdown label.

    >>> code_span("topic"), code_span("a`b")
    ('`topic`', '``a`b``')
    """
    text = str(text).replace("\n", " ")
    fence = "`" * (max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def show_text(text: object, *, formatted: bool = False, empty: str = "(empty)") -> None:
    """Outside text on the page: exactly as written (the default), or with its Markdown structure
    rendered through :func:`inert_markdown` (``formatted``). Neither can fetch or link."""
    if text is None or not str(text).strip():
        st.caption(empty)
    elif formatted:
        st.markdown(inert_markdown(text))
    else:
        st.markdown(md_escape(text))
