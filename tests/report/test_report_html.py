"""The HTML report: self-contained (plotly inlined once, nothing fetched) and everything escaped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from plotly.offline import get_plotlyjs

from evalcore.errors import EvalcoreError
from evalcore.report import build_report, write_report
from tests.report.conftest import build_binary, build_pairwise, build_tiny

PAYLOAD = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def plotlyjs() -> str:
    return get_plotlyjs()


def _outside_plotly(html: str, plotlyjs: str) -> str:
    assert html.count(plotlyjs) == 1, "plotly.js is inlined exactly once"
    return html.replace(plotlyjs, "")


def test_report_is_self_contained(sqlite_store, plotlyjs: str) -> None:
    t = build_tiny(sqlite_store)
    html = build_report(sqlite_store, "tiny project", n_boot=50)
    rest = _outside_plotly(html, plotlyjs)
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script[^>]*\bsrc\s*=", html, re.IGNORECASE)
    assert "<link" not in rest.lower()
    assert "http://" not in rest
    assert "https://" not in rest
    assert "fetch(" not in rest
    assert "@import" not in rest
    # every script is plotly.js itself or one figure's Plotly.newPlot call
    scripts = re.findall(r"<script>(.{0,40})", rest, re.DOTALL)
    assert scripts[0].startswith("</script>")  # the emptied plotly.js
    assert all(s.startswith("(function(){var f=") for s in scripts[1:])
    assert rest.count("Plotly.newPlot(") == len(scripts) - 1 >= 3
    assert "fluency" in rest
    assert "v2" in rest
    assert t.project_id


def test_everything_from_the_data_is_escaped(sqlite_store, plotlyjs: str) -> None:
    build_tiny(sqlite_store, xss=True)
    html = build_report(sqlite_store, "tiny project", slice_by="topic", n_boot=50)
    rest = _outside_plotly(html, plotlyjs)
    # the response of q4 (the worst disagreement), a reason, a comment, a run name, the rubric and
    # a metadata value all carry HTML; none of it reaches the page as markup
    assert PAYLOAD not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rest
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in rest
    assert "<i>v2</i>" not in rest
    assert "&lt;i&gt;v2&lt;/i&gt;" in rest
    assert "<b>bold</b>" not in rest
    # no data can close a script: the only "</script" are the ends of the page's own scripts
    assert rest.count("</script") == rest.count("<script>")


def test_binary_and_pairwise_sections(sqlite_store) -> None:
    build_binary(sqlite_store)
    html = build_report(sqlite_store, "binary project", n_boot=50)
    assert "Scores and thresholds" in html
    assert "bias-corrected pass rate" in html
    world = build_pairwise(sqlite_store)
    assert world.both
    html = build_report(sqlite_store, "pairwise project", n_boot=50)
    assert "position consistency" in html
    assert "40.0%" in html  # the both-order run's consistency


def test_report_choices_and_clear_errors(sqlite_store) -> None:
    t = build_tiny(sqlite_store)
    html = build_report(
        sqlite_store, t.project_id, criteria=["fluency"], runs=["v2"], policy="mean", n_boot=0
    )
    assert "mean rounded half up" in html
    assert "<th>v2</th>" in html
    assert "<th>v1</th>" not in html
    with pytest.raises(EvalcoreError, match="no project named 'nope'"):
        build_report(sqlite_store, "nope")
    with pytest.raises(EvalcoreError, match="no criterion 'colour'"):
        build_report(sqlite_store, "tiny project", criteria=["colour"])
    with pytest.raises(EvalcoreError, match="no dataset 'other'"):
        build_report(sqlite_store, "tiny project", dataset="other")
    with pytest.raises(EvalcoreError, match="no run 'v9'"):
        build_report(sqlite_store, "tiny project", runs=["v9"])
    with pytest.raises(EvalcoreError, match="baseline 'v9' is not one of the runs"):
        build_report(sqlite_store, "tiny project", baseline="v9")
    with pytest.raises(EvalcoreError, match="no annotator named 'zoe'"):
        build_report(sqlite_store, "tiny project", policy="annotator:zoe")
    with pytest.raises(EvalcoreError, match="has a metadata column 'colour'"):
        build_report(sqlite_store, "tiny project", slice_by="colour")


def test_write_report(tmp_path: Path) -> None:
    path = write_report(tmp_path / "r.html", "<!DOCTYPE html><p>é</p>")
    assert path.read_text(encoding="utf-8").endswith("é</p>")
    with pytest.raises(EvalcoreError, match="cannot write the report"):
        write_report(tmp_path, "x")
