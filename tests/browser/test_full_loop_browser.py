"""The whole loop in a real browser, on the demo project.

Annotate five items by keyboard, run a judge against the fake OpenAI-compatible server, upload a Vertex
table whose response carries a ``<script>`` payload, open Calibrate, compare two template versions, click
a confusion-matrix cell and read its items, export the HTML report from the Reports page, then open the
report with the network switched off: it renders, and the payload shows as text and never runs.

The screenshots of the Annotate, Calibrate and Reports pages in the README are taken here: run with
``EVALCORE_SCREENSHOTS=docs/screenshots`` to refresh them (by default they go to a temporary folder).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest

from evalcore.store import Store
from evalcore.testing import FakeOpenAI
from tests.browser.conftest import ROOT, AppServer, add_accounts, sign_in, wait_idle
from ui.state import Calibrate, Datasets, Reports

KEY_ENV = "E2E_JUDGE_API_KEY"
PAYLOAD = "<script>window.__pwned = 1</script>Returns are free within 30 days."
RATINGS = ["4", "2", "5", "3", "5"]


def css(key: str) -> str:
    """The CSS selector of an element with this session-state key (Streamlit's class for it)."""
    return ".st-key-" + re.sub(r"[^A-Za-z0-9_-]", "-", key)


@pytest.fixture(scope="module")
def fake_judge() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(latency=0.02).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def loop_server(
    tmp_path_factory: pytest.TempPathFactory, chromium_path: str, fake_judge: FakeOpenAI
) -> Iterator[AppServer]:
    server = AppServer(
        tmp_path_factory.mktemp("loop") / "evalcore.sqlite",
        extra_env={KEY_ENV: "e2e-test-secret"},
    )
    add_accounts(server.db_url, {"eve": "engineer", "lena": "annotator", "mo": "viewer"})
    with Store.open(server.db_url) as store:
        store.upsert_endpoint(
            "fake judge",
            base_url=fake_judge.base_url,
            api_key_env=KEY_ENV,
            default_model="fake-judge",
        )
    yield server
    server.stop()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    folder = os.environ.get("EVALCORE_SCREENSHOTS")
    target = (ROOT / folder) if folder else tmp_path
    target.mkdir(parents=True, exist_ok=True)
    return target


def settle(page) -> None:
    """Streamlit is idle and every widget has been drawn."""
    wait_idle(page)
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=stSkeleton]').length === 0",
        timeout=60_000,
    )


def texts_when(locator, ready: Callable[[list[str]], bool], timeout_s: float = 30) -> list[str]:
    """The locator's texts once ``ready`` holds for them (data grids fill their cells late)."""
    deadline = time.monotonic() + timeout_s
    texts = locator.all_inner_texts()
    while not ready(texts) and time.monotonic() < deadline:
        time.sleep(0.2)
        texts = locator.all_inner_texts()
    return texts


def select(page, key: str, option: str) -> None:
    page.locator(f".st-key-{key}").click()
    page.get_by_role("option", name=option).first.click()
    settle(page)


def test_the_whole_loop(loop_server: AppServer, fake_judge: FakeOpenAI, browser, shots, tmp_path):
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(60_000)
    base = loop_server.url
    sign_in(page, base, "eve")
    page.get_by_text("Northwind support demo").first.wait_for(timeout=90_000)
    with Store.open(loop_server.db_url) as store:
        project = store.list_projects()[0]
        dataset = store.get_dataset_by_name(project.id, "support-answers")
        helpfulness = store.get_criterion_by_name(project.id, "helpfulness")

    # 1. annotate five items by keyboard, as a new annotator
    sign_in(page, f"{base}/annotate?dataset={dataset.id}&criterion={helpfulness.id}", "lena")
    page.get_by_text("Item 1 of 20").first.wait_for()
    settle(page)
    for n, key in enumerate(RATINGS, start=1):
        page.keyboard.press(key)
        page.get_by_text(f"Item {n + 1} of 20").first.wait_for()
        settle(page)
    page.screenshot(path=str(shots / "annotate.png"))
    with Store.open(loop_server.db_url) as store:
        mine = store.export_annotations(dataset_id=dataset.id, criterion_id=helpfulness.id)
    assert mine[mine["annotator"] == "lena"]["label"].tolist() == RATINGS

    # 2. run the helpfulness judge against the fake server from the Judge page
    sign_in(page, f"{base}/judge", "eve")
    page.get_by_text("Variables").first.wait_for(timeout=90_000)
    settle(page)
    box = page.locator("[data-testid='stSelectbox']").filter(has_text="Endpoint").first
    box.click()
    page.get_by_role("option", name="fake judge").first.click()
    settle(page)
    box = page.locator("[data-testid='stSelectbox']").filter(has_text="Template").first
    box.click()
    page.get_by_role("option", name="helpfulness-judge · helpfulness").first.click()
    settle(page)
    before = fake_judge.count
    page.get_by_role("button", name="Start run").click()
    page.get_by_text("266 of 266 results · done").first.wait_for(timeout=180_000)
    assert fake_judge.count - before == 266

    # 3. upload a Vertex metrics table whose response carries a script payload
    table = pd.DataFrame(
        {
            "prompt": ["How long do I have to return boots?", "Do you ship abroad?"],
            "response": [PAYLOAD, "Yes, to most countries."],
            "helpfulness/human_rating": [1, 4],
            "helpfulness/score": [5, 4],
        }
    )
    upload = tmp_path / "vertex-markup.csv"
    table.to_csv(upload, index=False)
    sign_in(page, f"{base}/datasets", "eve")
    page.get_by_role("tab", name="Upload").click()
    settle(page)
    page.locator("[data-testid='stFileUploaderDropzoneInput']").first.set_input_files(str(upload))
    page.locator(css(Datasets.SAVE)).wait_for()
    settle(page)
    page.locator(css(Datasets.SAVE) + " button").click()
    page.get_by_text("Saved 'vertex-markup' version 1 with 2 items").first.wait_for()
    settle(page)
    with Store.open(loop_server.db_url) as store:
        uploaded = store.get_dataset_by_name(project.id, "vertex-markup")
        assert uploaded.n_items == 2
        assert any(r.dataset_id == uploaded.id for r in store.list_runs(project_id=project.id))

    # 4. Calibrate: helpfulness v1 against v2 of the same judge model
    sign_in(page, f"{base}/calibrate", "eve")
    page.locator(css(Calibrate.TABLE_BOX)).wait_for(timeout=90_000)
    settle(page)
    keep = ("helpfulness v1 (demo-judge-mini)", "helpfulness v2 (demo-judge-mini)")
    for _ in range(5):  # remove every other run's chip, one rerun at a time
        chips = page.locator(css(Calibrate.RUNS) + " [data-tag]")
        others = [
            label
            for label in (
                chips.nth(i).get_attribute("aria-label") or "" for i in range(chips.count())
            )
            if not label.startswith(keep)
        ]
        if not others:
            break
        page.get_by_role("button", name="Remove " + others[0], exact=True).click()
        settle(page)
    # the grid draws only the columns in view, and the full table (below the headline) scrolls
    # sideways on narrower screens: a wider window shows all six
    page.set_viewport_size({"width": 1800, "height": 1000})
    settle(page)
    box = page.locator(css(Calibrate.TABLE_BOX))
    # the table redraws after the last chip is gone
    headers = texts_when(box.locator("[role=columnheader]"), lambda h: len(h) == 6)
    # the metric names and the human ceiling are pinned on the left, then the two versions in
    # order, then the honest baselines (issue 13)
    assert headers == ["metric", "humans (ceiling)", *keep, "constant judge", "chance"], headers
    cells = texts_when(box.locator("[role=gridcell]"), lambda c: "balanced accuracy" in c)
    assert "balanced accuracy" in cells
    page.screenshot(path=str(shots / "calibrate.png"), full_page=True)

    # click the cell (human 5, judge 5) of the first matrix and read its items
    heat = page.locator(css(Calibrate.HEAT))
    heat.scroll_into_view_if_needed()
    k = 5
    cell = heat.locator(".scatterlayer .trace .points path").nth(0 * k * k + 4 * k + 4)
    bounds = cell.bounding_box()
    assert bounds is not None
    page.mouse.click(bounds["x"] + bounds["width"] / 2, bounds["y"] + bounds["height"] / 2)
    page.locator(css(Calibrate.CELL_ITEMS)).wait_for()
    settle(page)
    listed = texts_when(
        page.locator(css(Calibrate.CELL_ITEMS) + " [role=gridcell]"), lambda c: len(c) >= 3
    )
    assert listed[0].startswith("sa-")
    assert listed[1:3] == ["5", "5"]  # item id, human label, judge label
    assert "items** where" not in page.content()
    page.get_by_text(re.compile(r"\d+ items where people said 5")).first.wait_for()
    detail = page.locator(f"[class*='{css(Calibrate.ITEM_BOX)[1:]}-']").first
    detail.wait_for()
    assert "Humans (majority vote)" in detail.inner_text()
    assert "Raw reply" in detail.inner_text()
    # every human label, by name
    names = {"ana", "ben", "chloe", "dev", "farah"}
    humans = texts_when(detail.locator("[role=gridcell]"), lambda c: bool(names & set(c)))
    assert names & set(humans)

    # 5. Reports: the summary, and the HTML report as a download
    sign_in(page, f"{base}/reports", "mo")
    page.locator(css(Reports.DL_HTML) + " button").wait_for(timeout=90_000)
    page.get_by_text("Thresholds of this project").wait_for()
    settle(page)
    page.screenshot(path=str(shots / "reports.png"), full_page=True)
    with page.expect_download(timeout=120_000) as download:
        page.locator(css(Reports.DL_HTML) + " button").click()
    report = tmp_path / "report.html"
    download.value.save_as(report)
    text = report.read_text(encoding="utf-8")
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in text
    assert "<script>window.__pwned" not in text
    context.close()

    # 6. the report opens with the network off: charts render, the payload is text, nothing runs
    offline = browser.new_context(offline=True)
    requested: list[str] = []
    offline.route(
        "**/*",
        lambda route: (
            route.continue_()
            if route.request.url.startswith(("file://", "data:", "blob:"))
            else (requested.append(route.request.url), route.abort())
        ),
    )
    viewer = offline.new_page()
    viewer.goto(report.as_uri())
    viewer.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=30_000)
    time.sleep(0.5)
    assert viewer.evaluate("() => window.__pwned") is None
    assert viewer.get_by_text(re.compile(r"<script>window\.__pwned = 1</script>")).count() >= 1
    assert requested == []
    offline.close()
