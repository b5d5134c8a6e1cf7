"""The Calibrate page's upload mode, through AppTest."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from tests.pages.conftest import sign_in
from ui.state import Calibrate as K
from ui.state import key

ROOT = Path(__file__).resolve().parents[2]

VERTEX = pd.DataFrame(
    {
        "prompt": [f"q{i}" for i in range(8)],
        "response": [f"a{i}" for i in range(8)],
        "fluency/human_rating": [1, 2, 10, None, 5, 5, 3, 3],
        "fluency/score": [1, 2, 9, 3, "error", 5, 3, 4],
    }
)


def _upload(at, *files):
    at.segmented_control(key=K.MODE).set_value("Upload a file").run()
    at.file_uploader(key=K.FILES).set_value(list(files)).run()
    assert not at.exception, at.exception
    return at


def test_upload_shows_metrics_and_heatmap(open_app) -> None:
    at = _upload(
        open_app(page="calibrate"), ("v.csv", VERTEX.to_csv(index=False).encode(), "text/csv")
    )
    assert [s.value for s in at.subheader] == ["fluency"]
    table = at.dataframe[0].value
    # recalls 1, 1, 1/2, 1, 0 over the human classes 1, 2, 3, 5, 10 -> 0.7
    assert table.loc["balanced accuracy", "judge"].startswith("0.700 [")
    # 7 items have a human rating; the judge's "error" is no result, so 6 are compared
    assert table.loc["items with a human label", "judge"] == "7"
    assert table.loc["compared", "judge"] == "6"
    assert table.loc["no result", "judge"] == "1"
    assert len(at.get("plotly_chart")) == 1


def test_a_file_gets_the_answer_first_against_the_default_thresholds(open_app) -> None:
    at = _upload(
        open_app(page="calibrate"), ("v.csv", VERTEX.to_csv(index=False).encode(), "text/csv")
    )
    markdown = [m.value for m in at.markdown]
    badges = [m for m in markdown if "-badge[" in m]
    assert len(badges) == 1  # one judge column, one light
    # balanced accuracy 0.70 (see above), its interval, against 0.8 by default: never green
    assert any(m.startswith("0.70 [") for m in markdown)
    assert not badges[0].startswith(":green-badge")
    captions = " ".join(c.value for c in at.caption)
    assert "Thresholds by default (a file has no project): balanced accuracy ≥ 0.8" in captions
    assert "constant judge" in captions


def test_two_files_side_by_side_mark_the_best(open_app) -> None:
    better = VERTEX.assign(**{"fluency/score": [1, 2, 10, 3, 5, 5, 3, 3]})
    at = _upload(
        open_app(page="calibrate"),
        ("v1.csv", VERTEX.to_csv(index=False).encode(), "text/csv"),
        ("v2.csv", better.to_csv(index=False).encode(), "text/csv"),
    )
    table = at.dataframe[0].value
    judges = [c for c in table.columns if not c.endswith(("constant judge", "chance"))]
    assert judges == ["v1.csv · judge", "v2.csv · judge"]
    assert table.loc["balanced accuracy", "v2.csv · judge"].endswith("★")
    assert not table.loc["balanced accuracy", "v1.csv · judge"].endswith("★")


def test_bad_file_shows_a_clear_error_and_no_trace(open_app) -> None:
    at = _upload(
        open_app(page="calibrate"), ("broken.jsonl", b'{"a": 1}\n{oops\n', "application/json")
    )
    messages = " ".join(e.value for e in at.error)
    assert "broken.jsonl" in messages
    assert "line 2" in messages
    assert not at.exception


def test_plain_table_asks_for_columns(open_app) -> None:
    plain = pd.DataFrame({"a1": [1, 2, 3, 4], "a2": [1, 2, 2, 4], "j": [1, 3, 3, 4]})
    at = _upload(
        open_app(page="calibrate"), ("plain.csv", plain.to_csv(index=False).encode(), "text/csv")
    )
    assert "plain table" in at.info[0].value
    at.multiselect(key=key(K.MAP_HUMAN, "plain.csv")).set_value(["a1", "a2"]).run()
    at.multiselect(key=key(K.MAP_JUDGE, "plain.csv")).set_value(["j"]).run()
    assert not at.exception
    assert [s.value for s in at.subheader] == ["label"]
    # two annotator columns: their agreement is the ceiling under the judge's answer
    assert "humans among themselves" in " ".join(c.value for c in at.caption)


def test_a_file_with_telling_column_names_is_answered_without_a_form(open_app) -> None:
    """Issue 20's multi-aspect shape: the label columns are guessed from their names, one
    criterion per aspect, and the form to choose others waits, folded, in an expander."""
    aspects = pd.DataFrame(
        {
            "doc": [f"d{i}" for i in range(10)],
            **{f"human_{a}_{k}": [1 + i % 3 for i in range(10)] for a in ("tone", "wit") for k in (1, 2)},
            **{f"judge_gpt_{a}": [1 + i % 3 for i in range(10)] for a in ("tone", "wit")},
        }
    )  # fmt: skip
    at = _upload(
        open_app(page="calibrate"),
        ("aspects.csv", aspects.to_csv(index=False).encode(), "text/csv"),
    )
    assert [s.value for s in at.subheader] == ["tone", "wit"]
    (guess,) = at.expander
    assert "guessed from their names: tone: 2 human columns, 1 judge column" in guess.label
    assert len([m for m in at.markdown if "-badge[" in m.value]) == 2  # a light per aspect
    # naming the columns by hand replaces the guess: one label set
    at.multiselect(key=key(K.MAP_HUMAN, "aspects.csv")).set_value(["human_tone_1"]).run()
    at.multiselect(key=key(K.MAP_JUDGE, "aspects.csv")).set_value(["judge_gpt_wit"]).run()
    assert not at.exception
    assert [s.value for s in at.subheader] == ["label"]


def test_annotators_cannot_open_calibrate(open_app) -> None:
    at = open_app(role="annotator")
    # the page is hidden from an annotator's navigation, and its address is refused ...
    at.switch_page("pages/calibrate.py").run()
    assert "not available to your role" in at.error[0].value
    assert not at.file_uploader
    assert not at.dataframe


def test_the_page_itself_refuses_an_annotator(app_db) -> None:
    # ... and the page script re-checks the role on the server if it is run anyway
    at = AppTest.from_file(str(ROOT / "pages" / "calibrate.py"), default_timeout=60)
    sign_in(at, "ann", "annotator")
    at.run()
    assert "not available to your role" in at.error[0].value
    assert not at.dataframe
