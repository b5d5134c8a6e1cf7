"""The Calibrate and Reports pages with hostile names, labels and item text: nothing it shows can load an image or
become a link (every Markdown body escapes it), and its figures carry no raw HTML."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from evalcore.labels import Scale
from evalcore.store import JudgeResultInput, Store
from ui.state import Calibrate as K

IMAGE = "![x](http://attacker.example/p.png)"
LINK = "[click](http://attacker.example)"
TAG = "<img src=http://attacker.example>"


def hostile(tag: str) -> str:
    return f"{tag} {IMAGE} {LINK} {TAG}"


BAD = f"bad {IMAGE}"  # a label word


def seed(store: Store) -> None:
    """One project where every name, label, text and note carries the three payloads."""
    project = store.create_project(hostile("project"))
    items = pd.DataFrame(
        {
            "item_id": [f"i{k} {LINK}" for k in range(4)],
            "prompt": [hostile("prompt")] * 4,
            "response": [hostile("response")] * 4,
            "topic": [hostile("meta")] * 4,
        }
    )
    dataset = store.save_dataset(project.id, hostile("dataset"), items)
    criterion = store.create_criterion(
        project.id, hostile("criterion"), kind="pointwise", scale=Scale((BAD, "ok"), "nominal")
    )
    ids = items["item_id"].tolist()
    store.import_labels(
        dataset.id,
        criterion.id,
        pd.DataFrame(
            {
                "item_id": ids * 2,
                "annotator": [hostile("ann")] * 4 + ["bob"] * 4,
                "label": [BAD, "ok", BAD, "ok", BAD, "ok", "ok", "ok"],
                "comment": [hostile("comment")] * 8,
            }
        ),
    )
    template = store.create_template(project.id, hostile("template"), criterion.id)
    version = store.save_template_version(template.id, {"user": "rate"}, author="eve")
    run = store.create_run(
        dataset.id, criterion.id, name=hostile("run"), model="m", template_version_id=version.id
    )
    pks = {str(e): int(pk) for pk, e in store.items_frame(dataset.id)["item_id"].items()}
    results = [
        JudgeResultInput(
            item_id=pks[i], status="ok", label=lab, reason=hostile("reason"), raw=hostile("raw")
        )
        for i, lab in zip(ids[:3], [BAD, BAD, "ok"], strict=True)
    ]
    results.append(JudgeResultInput(item_id=pks[ids[3]], status="failed", error=hostile("error")))
    store.record_results(run.id, results)
    store.set_run_status(run.id, "running")
    store.set_run_status(run.id, "done")


@pytest.fixture
def seeded(app_db: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    monkeypatch.setenv("EVALCORE_NO_DEMO", "1")
    store = Store.open(app_db)
    seed(store)
    yield store
    store.close()


# Unescaped Markdown that fetches or links: "](" of an image or link, an HTML tag, a bare address.
_LIVE = re.compile(r"(?<!\\)\]\(|(?<!\\)<img|http://attacker")
_CODE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)")


def assert_inert(at: AppTest) -> int:
    """Every Markdown body on the page is inert; the plotly figures hold no raw tag. Returns how
    many bodies quoted a payload (so a test knows the hostile text was shown at all)."""
    kinds = ("markdown", "caption", "warning", "info", "error", "success", "subheader", "title")
    bodies = [str(e.value) for kind in kinds for e in at.get(kind)]
    # a code span shows its content literally (no link, no image): leave it out of the search
    live = [b for b in bodies if _LIVE.search(_CODE.sub("", b))]
    assert live == []
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        text = json.dumps(spec, ensure_ascii=False)
        assert "<a" not in text
        assert "<img" not in text
    return sum("attacker" in b for b in bodies)


def test_calibrate_shows_hostile_names_labels_and_items_as_text(
    open_app: Callable[..., AppTest], seeded: Store
) -> None:
    at = open_app(page="calibrate")
    assert not at.exception, at.exception
    assert assert_inert(at) > 0
    # the cell view and its item detail: labels, run title, item id, metadata, comments, errors
    at.selectbox(key=K.CELL_HUMAN).set_value(BAD).run()
    at.selectbox(key=K.CELL_JUDGE).set_value(BAD).run()
    assert not at.exception, at.exception
    shown = " ".join(m.value for m in at.markdown)
    assert " items** where people said" in shown or " item** where people said" in shown
    assert "Item `" in shown or "Item ``" in shown  # the item id as a code span
    assert assert_inert(at) > 3


def test_reports_shows_hostile_names_as_text(
    open_app: Callable[..., AppTest], seeded: Store
) -> None:
    at = open_app(role="viewer", page="reports")
    assert not at.exception, at.exception
    # the project's, the criterion's and the best run's names are all on the summary
    assert assert_inert(at) >= 3
