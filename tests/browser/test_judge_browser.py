"""In a real browser, on the demo data: edit a judge template, save it as a new version, run it on the
demo dataset against the fake OpenAI-compatible server, watch the progress bar move, read the results.

The fake server runs in this test process with some latency per request; the app server process
(`evalcore serve`) gets the API key variable in its environment and calls the fake over HTTP from
its background worker thread.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from evalcore.store import Store
from evalcore.testing import FakeOpenAI
from tests.browser.conftest import AppServer, add_accounts, sign_in, wait_idle
from tests.runs.metric_replies import metric_reply

KEY_ENV = "BROWSER_JUDGE_API_KEY"
MISSING_ENV = "BROWSER_MISSING_API_KEY"
ADDED = "Judge the reply only on what the passage says."


@pytest.fixture(scope="module")
def fake_judge() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(metric_reply, latency=0.05).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def judge_server(
    tmp_path_factory: pytest.TempPathFactory, chromium_path: str, fake_judge: FakeOpenAI
) -> Iterator[AppServer]:
    """The app on its own SQLite file, with the key variable set and an endpoint on the fake."""
    server = AppServer(
        tmp_path_factory.mktemp("judge") / "evalcore.sqlite",
        extra_env={KEY_ENV: "browser-test-secret"},
    )
    # an admin (the page says whether the key is set) and an engineer
    add_accounts(server.db_url, {"eve": "admin", "ed": "engineer"})
    store = Store.open(server.db_url)
    store.upsert_endpoint(
        "fake judge", base_url=fake_judge.base_url, api_key_env=KEY_ENV, default_model="fake-judge"
    )
    # an endpoint whose key variable the app server does not have
    store.upsert_endpoint("keyless judge", base_url=fake_judge.base_url, api_key_env=MISSING_ENV)
    store.close()
    yield server
    server.stop()


def _select(page, label: str, option: str) -> None:
    box = page.locator("[data-testid='stSelectbox']").filter(has_text=label).first
    box.click()
    page.get_by_role("option", name=option).first.click()
    wait_idle(page)


def _text_now(locator: Any) -> str | None:
    """The element's text, or ``None`` when it is not on the page at this moment. The section is
    redrawn every poll, so an element counted a moment ago may be gone when its text is read."""
    if locator.count() == 0:
        return None
    try:
        return locator.inner_text(timeout=1_000)
    except PlaywrightTimeoutError:
        return None


def _progress_done(page) -> int | None:
    """The number of results the progress bar shows (``None`` while it is being redrawn)."""
    text = _text_now(page.locator("[data-testid='stProgress']").first)
    match = re.search(r"(\d+) of (\d+) results", text or "")
    return int(match.group(1)) if match else None


def _results_so_far(page) -> int | None:
    """The number of results the results table holds while the run goes on (``None``: not shown)."""
    text = _text_now(page.get_by_text(re.compile(r"\d+ results? so far")).first)
    match = re.match(r"(\d+) result", text or "")
    return int(match.group(1)) if match else None


def _start_run(page: Any, store: Store, project_id: int, runs_before: int) -> None:
    """Click "Start run" until the run exists. On a loaded machine Streamlit sometimes drops a click
    that lands while the previous rerun (the concurrency box's Enter) is still being applied; the
    store says whether the click started a run, so a second click never starts a second one."""
    for _ in range(3):
        page.get_by_role("button", name="Start run").click()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if len(store.list_runs(project_id=project_id)) > runs_before:
                return
            page.wait_for_timeout(250)
        wait_idle(page)
    raise AssertionError("three clicks on Start run started no run")


def test_edit_a_template_run_it_and_see_progress_and_results(
    judge_server: AppServer, fake_judge: FakeOpenAI, page, tmp_path: Path
) -> None:
    sign_in(page, f"{judge_server.url}/judge", "eve")
    page.get_by_text("Variables").first.wait_for(timeout=90_000)
    wait_idle(page)
    _select(page, "Endpoint", "fake judge")
    page.get_by_text(f"{KEY_ENV} is set").first.wait_for(timeout=30_000)
    _select(page, "Template", "helpfulness-judge · helpfulness")

    # edit the user message and save it as a new version
    user = page.get_by_role("textbox", name="User message", exact=True)
    user.click()
    user.press("Control+End")
    user.type("\n" + ADDED)
    note = page.get_by_role("textbox", name="Note for this version (optional)")
    note.click()  # leaving the message box commits it
    wait_idle(page)
    page.get_by_text("Unsaved changes.").first.wait_for()
    note.fill("browser edit")
    note.press("Enter")
    wait_idle(page)
    page.get_by_role("button", name="Save as new version").click()
    page.get_by_text("Saved version 3.").first.wait_for()
    wait_idle(page)

    store = Store.open(judge_server.db_url)
    try:
        project = store.list_projects()[0]
        template = next(
            t for t in store.list_templates(project.id) if t.name == "helpfulness-judge"
        )
        versions = store.list_template_versions(template.id)
        assert [v.number for v in versions] == [1, 2, 3]
        assert versions[-1].content["user"].rstrip().endswith(ADDED)
        assert (versions[-1].author, versions[-1].note) == ("eve", "browser edit")

        # the estimate, then a run with two requests at a time, so that it takes a few seconds
        page.get_by_text("Estimate").first.wait_for()
        concurrency = page.get_by_role("spinbutton", name="Concurrent requests")
        concurrency.fill("2")
        concurrency.press("Enter")
        wait_idle(page)
        before = fake_judge.count
        runs_before = len(store.list_runs(project_id=project.id))
        _start_run(page, store, project.id, runs_before)
        page.locator("[data-testid='stProgress']").first.wait_for(timeout=60_000)

        # the progress bar moves: it is polled from the store while the worker runs
        # and so do the runs list and the results table, without a click (the section is redrawn)
        seen: set[int] = set()
        rows: set[int] = set()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            done = _progress_done(page)
            if done is not None:
                seen.add(done)
            shown = _results_so_far(page)
            if shown is not None:
                rows.add(shown)
            if 266 in seen:
                break
            page.wait_for_timeout(200)
        assert 266 in seen
        assert any(0 < n < 266 for n in seen), seen
        assert len({n for n in rows if 0 < n < 266}) >= 2, rows  # grew at least once mid-run

        run = store.list_runs(project_id=project.id)[0]
        assert run.status == "done"
        assert run.template_version_id == versions[-1].id
        assert fake_judge.count - before == 266
        sent = [r.prompt for r in fake_judge.requests[before:]]
        assert all(ADDED in prompt for prompt in sent)
    finally:
        store.close()

    # the finished run's results
    page.get_by_text("Results").first.wait_for()
    wait_idle(page)
    page.get_by_text("266 of 266 results · done").first.wait_for(timeout=30_000)
    page.locator("[data-testid='stDataFrame']").nth(1).wait_for(timeout=30_000)
    page.get_by_text("Download results (CSV)").first.wait_for()
    page.screenshot(path=str(tmp_path / "judge-run.png"))


def test_a_run_that_cannot_authenticate_is_refused_before_it_starts(
    judge_server: AppServer, fake_judge: FakeOpenAI, page, tmp_path: Path
) -> None:
    """Issue 20: the run is refused with the reason "Try" gave (the key is not available on the
    server), and the engineer learns whom to ask; no run is created and nothing is sent."""
    sign_in(page, f"{judge_server.url}/judge", "ed")
    page.get_by_text("Variables").first.wait_for(timeout=90_000)
    wait_idle(page)
    _select(page, "Endpoint", "keyless judge")
    _select(page, "Template", "groundedness-judge · groundedness")
    sent = fake_judge.count
    page.get_by_role("button", name="Try on 5 items").click()
    wait_idle(page)
    tried = page.locator("[data-testid='stAlertContentError']").filter(
        has_text="not available on the server"
    )
    tried.first.wait_for(timeout=30_000)
    assert "this server's admins: eve" in tried.first.inner_text()
    store = Store.open(judge_server.db_url)
    try:
        project = store.list_projects()[0]
        before = len(store.list_runs(project_id=project.id))
        page.get_by_role("button", name="Start run").click()
        wait_idle(page)
        refused = page.locator("[data-testid='stAlertContentError']").filter(
            has_text="The run was not started"
        )
        refused.first.wait_for(timeout=30_000)
        text = refused.first.inner_text()
        assert "not available on the server" in text
        assert "this server's admins: eve" in text
        assert MISSING_ENV not in text
        assert len(store.list_runs(project_id=project.id)) == before
    finally:
        store.close()
    assert fake_judge.count == sent
    page.screenshot(path=str(tmp_path / "judge-refused-run.png"))
