"""The Calibrate page's "Trust or escalate" section in a real browser, on the demo: the sentence
and the reliability diagram; escalation puts the least confident items first in the annotation
queue; a "label next" batch is queued, and an annotator labels its first item in the browser,
which then counts in the calibration.

Run with ``EVALCORE_SCREENSHOTS=docs/screenshots`` to refresh the README's ``trust_escalate.png``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalcore.store import Store
from evalcore.workflows import Server, Session
from evalcore.workflows import confidence as flow
from tests.browser.conftest import AppServer, add_accounts, css, sign_in, wait_idle
from ui.state import Calibrate as K

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def trust_server(
    tmp_path_factory: pytest.TempPathFactory, chromium_path: str
) -> Iterator[AppServer]:
    app = AppServer(tmp_path_factory.mktemp("trust") / "evalcore.sqlite")
    try:
        add_accounts(app.db_url, {"eve": "engineer", "rowan": "annotator"})
        yield app
    finally:
        app.stop()


def _screenshot_dir(tmp_path: Path) -> Path:
    chosen = os.environ.get("EVALCORE_SCREENSHOTS")
    folder = ROOT / chosen if chosen else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _ids(store: Store) -> tuple[int, int, int, list[int]]:
    project = store.list_projects()[0]
    dataset = store.get_dataset_by_name(project.id, "support-answers")
    criterion = store.get_criterion_by_name(project.id, "groundedness")
    runs = [r.id for r in store.list_runs(project_id=project.id) if r.criterion_id == criterion.id]
    return project.id, dataset.id, criterion.id, runs


def _labelled(db_url: str) -> int:
    """How many items of groundedness the calibration counts as labelled (dev + test of the
    first run's split), read through the workflow as eve."""
    server = Server(store=Store.open(db_url), secrets={})
    try:
        project, dataset, criterion, runs = _ids(server.store)
        session = Session(server, server.store.open_session("eve", method="password"))
        view = flow.confidence(session, project, dataset, criterion, runs)
        chosen = next(r for r in view.runs if r.selective is not None).selective
        assert chosen is not None
        return len(chosen.dev_ids) + len(chosen.test_ids)
    finally:
        server.close()


def test_trust_escalate_and_label_next(trust_server: AppServer, page, tmp_path: Path) -> None:
    app = trust_server
    with Store.open(app.db_url) as store:
        _project, dataset, criterion, _runs = _ids(store)
    before = _labelled(app.db_url)
    sign_in(page, f"{app.url}/calibrate", "eve")
    box = page.locator("[data-testid='stSelectbox']").filter(has_text="Criterion").first
    box.click()
    page.get_by_role("option", name="groundedness").first.click()
    wait_idle(page)
    page.get_by_text("Trust or escalate").first.wait_for(timeout=90_000)
    sentence = page.get_by_text(re.compile(r"decides \d+% of items at ≥ 90% agreement; people get"))
    sentence.first.wait_for()
    # the reliability diagram and the coverage curve: plotly charts with the library's axis titles
    page.wait_for_function(
        """() => [...document.querySelectorAll('.js-plotly-plot .xtitle')].map(t => t.textContent)
            .some(t => t.startsWith("judge's confidence"))""",
        timeout=60_000,
    )
    titles = page.locator(".js-plotly-plot .xtitle").all_text_contents()
    assert any(t.startswith("coverage") for t in titles)
    page.set_viewport_size({"width": 1400, "height": 1500})
    wait_idle(page)
    chart = page.locator(".js-plotly-plot").filter(
        has=page.locator(".xtitle", has_text="judge's confidence")
    )
    chart.first.scroll_into_view_if_needed()
    assert chart.first.is_visible()
    page.get_by_text("Trust or escalate").first.scroll_into_view_if_needed()
    wait_idle(page)
    page.screenshot(path=str(_screenshot_dir(tmp_path) / "trust_escalate.png"))

    escalate = page.get_by_role("button", name=re.compile(r"^Escalate the other \d+ items"))
    wanted = int(re.findall(r"\d+", escalate.inner_text())[0])
    escalate.click()
    page.get_by_text("went to the annotation queue").first.wait_for()
    wait_idle(page)
    with Store.open(app.db_url) as store:
        active = store.active_queue_order(dataset, criterion)
        assert active is not None
        assert active.source == "escalation"
        order = store.get_queue_order(dataset, criterion, active.name).item_ids
        assert len(order) == wanted
        # a new annotator's first claim is the first escalated item
        store.ensure_queue(dataset, criterion, "probe")
        first = store.queue_item(dataset, criterion, "probe", 0)
        assert first is not None
        assert first.item_id == order[0]

    number = page.locator(f"{css(K.NEXT_N)} input")
    number.fill("5")
    number.press("Enter")
    wait_idle(page)
    page.get_by_text(re.compile(r"Label these 5 and ")).first.wait_for()
    page.get_by_role("button", name="Queue these for annotators").click()
    page.get_by_text("are now first in the annotation queue").first.wait_for()
    with Store.open(app.db_url) as store:
        active = store.active_queue_order(dataset, criterion)
        assert active is not None
        assert active.source == "label_next"
        batch = store.get_queue_order(dataset, criterion, active.name).item_ids
        assert len(batch) == 5

    # the annotator labels the batch's first item in the browser, blind to why
    page.context.clear_cookies()
    sign_in(page, f"{app.url}/annotate?dataset={dataset}&criterion={criterion}", "rowan")
    page.get_by_text(re.compile(r"Item 1 of \d+")).first.wait_for(timeout=60_000)
    wait_idle(page)
    assert page.get_by_text("escalat").count() == 0
    page.keyboard.press("1")  # pass
    page.get_by_text(re.compile(r"Item 2 of \d+")).first.wait_for()
    wait_idle(page)
    with Store.open(app.db_url) as store:
        saved = store.export_annotations(dataset_id=dataset, criterion_id=criterion)
        mine = saved[saved["annotator"] == "rowan"]
        assert mine["label"].tolist() == ["pass"]
        ids = store.items_frame(dataset)["item_id"]
        assert mine["item_id"].tolist() == [str(ids.loc[batch[0]])]
    # the label counts in the calibration at once: a proposed item had no majority label yet
    # (no label, or a tie), and one more label gives it one
    assert _labelled(app.db_url) == before + 1
