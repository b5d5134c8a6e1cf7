"""Browser tests: the real app served by `evalcore serve` on a free port, driven in Debian's Chromium.

One server per test module (it is slow to start); each test gets a fresh browser context. The server
runs on its own SQLite file, so tests never touch a user's database. It listens on 127.0.0.1, so
without an account it opens in single-user mode (as an admin); ``add_accounts`` creates accounts
and ``sign_in`` signs a page in through the form, after clearing the context's cookies (who is
signed in lives in an ``HttpOnly`` cookie, so a reload or another tab stays signed in; each
``sign_in`` starts afresh as another person).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from evalcore.demo.seed import ensure_demo
from evalcore.errors import NotFoundError
from evalcore.store import Store

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
]

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of this folder is marked ``browser`` (a conftest's ``pytestmark`` marks nothing),
    so that ``pytest -m "not browser"`` leaves them out."""
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.browser)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class AppServer:
    def __init__(self, db_path: Path, extra_env: dict[str, str] | None = None) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.db_url = f"sqlite:///{db_path}"
        env = {
            **os.environ,
            "EVALCORE_DATABASE_URL": self.db_url,
            "PYTHONUNBUFFERED": "1",
            **(extra_env or {}),
        }
        self.log = db_path.with_suffix(".log").open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "evalcore", "serve", "--port", str(self.port)],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self._wait()

    def _wait(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"streamlit exited early; see {self.log.name}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"streamlit did not answer within {timeout:.0f} s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture(scope="module")
def app_server(tmp_path_factory: pytest.TempPathFactory, chromium_path: str) -> Iterator[AppServer]:
    server = AppServer(tmp_path_factory.mktemp("app") / "evalcore.sqlite")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser(chromium_path: str) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    yield pg
    context.close()


#: The password of every account the browser tests create.
PASSWORD = "a long browser password"


def add_accounts(db_url: str, accounts: dict[str, str], *, demo: bool = True) -> None:
    """Create the accounts ``{name: role}`` that do not exist yet, members of every project; with
    ``demo`` the demo project is seeded first, as the app does on its first open."""
    with Store.open(db_url) as store:
        if demo:
            ensure_demo(store)
        for name, role in accounts.items():
            try:
                store.get_user(name)
            except NotFoundError:
                store.add_user(name, role=role, password=PASSWORD)  # type: ignore[arg-type]


def css(key: str) -> str:
    """The CSS selector of an element with this session-state key (Streamlit's class for it)."""
    return ".st-key-" + re.sub(r"[^A-Za-z0-9_-]", "-", key)


def fill_sign_in(page: object, name: str, password: str = PASSWORD) -> None:
    """Type a name and a password into the sign-in form and press "Sign in"."""
    from ui.state import App

    page.locator(f"{css(App.SIGN_IN_NAME)} input").fill(name)  # type: ignore[attr-defined]
    page.locator(f"{css(App.SIGN_IN_PASSWORD)} input").fill(password)  # type: ignore[attr-defined]
    page.get_by_role("button", name="Sign in").click()  # type: ignore[attr-defined]
    wait_idle(page)


def sign_in(page: object, url: str, name: str, password: str = PASSWORD) -> None:
    """Open ``url`` without the cookies of an earlier sign-in (its page asks for a sign-in first),
    sign in as ``name``, wait for the page."""
    page.context.clear_cookies()  # type: ignore[attr-defined]
    page.goto(url)  # type: ignore[attr-defined]
    page.get_by_role("button", name="Sign in").wait_for(timeout=90_000)  # type: ignore[attr-defined]
    fill_sign_in(page, name, password)
    page.get_by_text(f"Signed in as {name}").first.wait_for(timeout=90_000)  # type: ignore[attr-defined]
    wait_idle(page)


def wait_idle(page: object) -> None:
    """Wait until Streamlit has finished running the script (no 'running' status widget)."""
    page.wait_for_function(  # type: ignore[attr-defined]
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=60_000
    )


def click_until(button: Any, shown: Any, *, tries: int = 3) -> None:
    """Click ``button`` until ``shown`` (a locator) is on the page. On a loaded machine a click can
    land while Streamlit redraws the button (it is detached and found again until the click times
    out) or be dropped by a rerun still being applied; each retry is a click the app must answer
    the same way, so the test's checks of what was stored stay the proof."""
    for attempt in range(tries):
        if shown.count():
            return
        try:
            button.click(timeout=10_000)
        except PlaywrightTimeoutError:
            if attempt == tries - 1:
                raise
            continue
        try:
            shown.wait_for(timeout=30_000)
            return
        except PlaywrightTimeoutError:
            if attempt == tries - 1:
                raise
