"""The Judge page's "Improve" section in a real browser: optimise the demo's groundedness judge
against the scripted fake judge and optimiser, read the comparison, save the new version.

Run with ``EVALCORE_SCREENSHOTS=docs/screenshots`` to refresh the README's ``improve.png``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalcore.store import Store
from evalcore.testing import FakeOpenAI
from tests.browser.conftest import AppServer, add_accounts, css, sign_in, wait_idle
from tests.pages.improve_demo import OPTIMIZER, demo_ids, scripted_demo_judge
from ui.state import Judge

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "BROWSER_IMPROVE_API_KEY"


@pytest.fixture(scope="module")
def improve_server(
    tmp_path_factory: pytest.TempPathFactory, chromium_path: str
) -> Iterator[tuple[AppServer, FakeOpenAI]]:
    """The app on its own SQLite file with the demo and an engineer, and the scripted fake that
    an endpoint of the app points at."""
    with FakeOpenAI() as fake:
        app = AppServer(
            tmp_path_factory.mktemp("improve") / "evalcore.sqlite",
            extra_env={KEY_ENV: "browser-improve-secret"},
        )
        try:
            add_accounts(app.db_url, {"eve": "engineer"})
            with Store.open(app.db_url) as store:
                fake.reply = scripted_demo_judge(store)
                store.upsert_endpoint(
                    "fake judge", base_url=fake.base_url, api_key_env=KEY_ENV, default_model="x"
                )
            yield app, fake
        finally:
            app.stop()


def _screenshot_dir(tmp_path: Path) -> Path:
    """``$EVALCORE_SCREENSHOTS`` (relative to the repository) when set, else a temporary folder."""
    chosen = os.environ.get("EVALCORE_SCREENSHOTS")
    folder = ROOT / chosen if chosen else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _select(page, label: str, option: str | re.Pattern[str]) -> None:
    box = page.locator("[data-testid='stSelectbox']").filter(has_text=label).first
    box.click()
    page.get_by_role("option", name=option).first.click()
    wait_idle(page)


def _type(page, role: str, label: str, value: str) -> None:
    box = page.get_by_role(role, name=label, exact=True)
    box.fill(value)
    box.press("Enter")
    wait_idle(page)


def test_improve_the_demo_judge_and_save_the_new_version(
    improve_server: tuple[AppServer, FakeOpenAI], page, tmp_path: Path
) -> None:
    app, fake_judge = improve_server
    sign_in(page, f"{app.url}/judge", "eve")
    page.get_by_text("Variables").first.wait_for(timeout=90_000)
    wait_idle(page)
    _select(page, "Endpoint", "fake judge")
    _select(page, "Dataset", re.compile(r"^support-answers"))
    _type(page, "textbox", "Model", "fake-judge")
    page.locator(css(Judge.SECTION)).get_by_text("Improve", exact=True).click()
    wait_idle(page)
    _select(page, "Criterion", "groundedness")
    _select(page, "Starting version", "groundedness-judge v2")
    _type(page, "textbox", "Optimiser model", OPTIMIZER)
    _type(page, "spinbutton", "Few-shot candidates", "2")
    _type(page, "spinbutton", "Rewrites", "1")
    _type(page, "spinbutton", "Finalists", "2")

    page.get_by_role("button", name="Estimate", exact=True).click()
    page.get_by_text(re.compile(r"Estimate \(at most\), on \d+ labelled items")).first.wait_for()
    wait_idle(page)
    before = fake_judge.count
    page.get_by_role("button", name="Start", exact=True).click()
    save = page.get_by_role("button", name=re.compile(r"^Save \S+ as a new version$")).first
    save.wait_for(timeout=180_000)  # the section is redrawn from the store until the job ends
    wait_idle(page)
    assert fake_judge.count > before
    page.get_by_text("Candidates on dev").first.wait_for()
    page.get_by_text(
        re.compile(r"On test, against the start · human ceiling: 0\.\d+")
    ).first.wait_for()
    page.set_viewport_size({"width": 1400, "height": 1900})  # the whole section at once
    wait_idle(page)
    page.locator("[data-testid='stDataFrame']").nth(1).wait_for()
    page.screenshot(path=str(_screenshot_dir(tmp_path) / "improve.png"))

    with Store.open(app.db_url) as store:
        dataset_id, _criterion_id, version_id = demo_ids(store)
        template_id = store.get_template_version(version_id).template_id
        assert len(store.list_template_versions(template_id)) == 2
        job = store.list_improve_jobs(dataset_id)[0]
        assert job.status == "done"
        save.click()
        page.get_by_text(re.compile(r"Saved \S+ as version 3\.")).first.wait_for(timeout=60_000)
        versions = store.list_template_versions(template_id)
        assert [v.number for v in versions] == [1, 2, 3]
        assert versions[-1].author == "eve"
        assert job.report is not None
        assert job.report["split"]["name"] in (versions[-1].note or "")
