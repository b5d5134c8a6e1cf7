"""The Home page through AppTest: where each role starts, and icons that render without an emoji font."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from streamlit.testing.v1 import AppTest

from evalcore.store import Store
from ui import state
from ui.state import Annotate, Home

ROOT = Path(__file__).resolve().parents[2]

#: The dashboard files of the Home, Datasets, Annotate, Judge and Settings pages.
FILES = [
    "app.py",
    *(f"pages/{p}.py" for p in ("home", "datasets", "annotate", "judge", "settings")),
    *(f"ui/{m}.py" for m in ("annotate_view", "datasets_view", "judge_view", "settings_view")),
    *(f"ui/{m}.py" for m in ("identity", "resources", "state", "icon", "render")),
]

# pictographs, dingbats and the emoji variation selector: drawn as empty boxes without an emoji font
EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\ufe0f]")


def test_the_start_links_use_material_icons(open_app: Callable[..., AppTest], demo_db: str) -> None:
    at = open_app(role="engineer")
    links = at.get("page_link")
    assert [link.proto.label for link in links] == [
        "Compare judge versions with people",
        "Edit and run judge templates",
        "Upload a dataset",
        "Read the calibration report",
        "Rate items yourself",
    ]
    assert all(link.proto.icon.startswith(":material/") for link in links)


def test_an_annotator_opens_a_queue_from_home(
    open_app: Callable[..., AppTest], demo_db: str
) -> None:
    at = open_app(role="annotator", user="newcomer")
    store = Store.open(demo_db)
    project = store.list_projects()[0]
    dataset = store.list_datasets(project.id, latest_only=True)[0]
    criterion = next(c for c in store.list_criteria(project.id) if c.kind == dataset.kind)
    store.close()
    at.button(key=state.key(Home.RATE, dataset.id, criterion.id)).click().run()
    assert not at.exception, at.exception
    assert at.session_state[Annotate.DATASET] == dataset.id
    assert at.session_state[Annotate.CRITERION] == criterion.id


def test_no_emoji_in_these_pages() -> None:
    found = [
        f"{name}:{n}: {line.strip()}"
        for name in FILES
        for n, line in enumerate((ROOT / name).read_text(encoding="utf-8").splitlines(), start=1)
        if EMOJI.search(line)
    ]
    assert found == []


def test_home_answers_can_i_trust_this_judge(
    open_app: Callable[..., AppTest], demo_db: str
) -> None:
    at = open_app(role="viewer")
    assert not at.exception, at.exception
    assert "Can I trust this judge?" in [h.value for h in at.subheader]
    markdown = " ".join(m.value for m in at.markdown)
    # the demo's three criteria, each with its best run's light and why (intervals straddle 0.7 / 0.5)
    for name in ("groundedness", "helpfulness", "preference"):
        assert f"**{name}** :orange-badge[amber]" in markdown
    assert "straddles 0.70" in markdown
    assert "First steps" not in [h.value for h in at.subheader]  # the demo has data and runs
