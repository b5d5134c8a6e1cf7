"""Benchmark of the Annotate page in real headless Chromium against the real server.

    python bench/annotate.py                   # 100 key presses on the demo, a 100 000-item queue
    python bench/annotate.py --presses 30 --items 20000

Prints a markdown table with:

(a) key press -> next item fully rendered, on the demo data, over consecutive label keys (target:
    median < 300 ms, p95 < 600 ms). "Fully rendered" = the progress line names the next item, the
    script has finished (no running indicator) and no element is stale;
(b) loading a 100 000-item dataset into the store (target < 20 s on SQLite);
(c) opening the Annotate page on a 100 000-item dataset until the first item is rendered (target
    < 2 s): for a new annotator (the queue is created on that first open) and for a returning one,
    in a new browser context (nothing cached: Streamlit's own scripts are fetched and parsed) and
    on a reload (cached), plus the server-side time of one run of the page (AppTest) and key
    presses on that queue.

The "floor" rows measure the same on a one-button Streamlit page: what Streamlit itself costs on
this machine, for comparison. Each part runs its own server on a temporary SQLite file; nothing
touches a user's database. Chromium is Debian's (``/usr/bin/chromium``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _common import free_port, text_items

from evalcore.cli.serve import DEFAULT_OPTIONS
from evalcore.labels import LIKERT_5
from evalcore.store import Store
from tests.browser.conftest import CHROMIUM_ARGS, PASSWORD, add_accounts, css

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"

#: True once the page shows item ``n`` and Streamlit has finished rendering it.
RENDERED = """(n) => {
  const bar = document.querySelector('[data-testid="stProgress"]');
  if (!bar || !bar.innerText.includes(`Item ${n} of `)) return false;
  if (document.querySelector('[data-testid="stStatusWidget"]')) return false;
  return !document.querySelector('[data-stale="true"]');
}"""


@contextmanager
def server(db_path: Path, *, demo: bool, script: Path | None = None) -> Iterator[str]:
    """``evalcore serve`` (or ``streamlit run script`` with the same options) on a free port over
    ``db_path``; yields its base URL."""
    port = free_port()
    env = {**os.environ, "EVALCORE_DATABASE_URL": f"sqlite:///{db_path}"}
    if not demo:
        env["EVALCORE_NO_DEMO"] = "1"
    log = db_path.with_suffix(".log").open("w")
    if script is None:
        command = ["evalcore", "serve", "--port", str(port)]
    else:
        command = ["streamlit", "run", str(script), *DEFAULT_OPTIONS, "--server.headless", "true",
                   "--server.address", "127.0.0.1", "--server.port", str(port)]  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", *command],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited; see {log.name}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def wait_item(page: Any, number: int, timeout_ms: int = 60_000) -> None:
    page.wait_for_function(RENDERED, arg=number, polling="raf", timeout=timeout_ms)


def press_keys(page: Any, presses: int, first_item: int, keys: str = "4253142531") -> list[float]:
    """Press a label key ``presses`` times; the milliseconds from each press to the next item."""
    page.wait_for_timeout(500)  # let the page settle (not timed)
    times = []
    for n in range(presses):
        start = time.perf_counter()
        page.keyboard.press(keys[n % len(keys)])
        wait_item(page, first_item + n + 1)
        times.append((time.perf_counter() - start) * 1000)
    return times


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


#: True once some item of the queue is on screen and the script has finished.
SHOWN = """() => {
  const bar = document.querySelector('[data-testid="stProgress"]');
  return bar && /Item \\d+ of /.test(bar.innerText)
    && !document.querySelector('[data-testid="stStatusWidget"]');
}"""


def _signed_in(page: Any, user: str | None, start: float) -> float:
    """Sign in as ``user`` on the form ``page`` shows (when ``user`` is given); seconds from
    ``start`` to the item rendered, without the time the form itself took to be typed into."""
    if user is None:
        page.wait_for_function(SHOWN, polling="raf", timeout=120_000)
        return time.perf_counter() - start
    from ui.state import App

    page.get_by_role("button", name="Sign in").wait_for(timeout=120_000)
    form_shown = time.perf_counter() - start
    page.locator(f"{css(App.SIGN_IN_NAME)} input").fill(user)
    page.locator(f"{css(App.SIGN_IN_PASSWORD)} input").fill(PASSWORD)
    clicked = time.perf_counter()
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_function(SHOWN, polling="raf", timeout=120_000)
    return form_shown + (time.perf_counter() - clicked)


def open_page(browser: Any, url: str, user: str | None = None) -> tuple[Any, Any, float]:
    """A new browser context (empty cache) opening ``url`` (signing in as ``user``); seconds until
    the item renders: the sign-in form shown, then from the click on "Sign in" to the item."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    start = time.perf_counter()
    page.goto(url)
    return context, page, _signed_in(page, user, start)


def reload_page(page: Any) -> float:
    """Seconds from a reload (the browser has the app's files cached) to the item rendered; the
    session cookie keeps a signed-in user signed in, so no form is shown."""
    start = time.perf_counter()
    page.reload()
    return _signed_in(page, None, start)


#: The least a Streamlit page can do per key press: one button in a fragment and a progress line.
FLOOR_APP = """
import streamlit as st

@st.fragment
def rate():
    n = st.session_state.setdefault("n", 0)
    st.progress(0.5, text=f"Item {n + 1} of 1000")
    st.button("3", key="b", shortcut="3", on_click=lambda: st.session_state.update(n=n + 1))

rate()
"""


def server_render_ms(db: Path, dataset_id: int, criterion_id: int, runs: int = 5) -> float:
    """Median milliseconds of one server-side run of app.py + the Annotate page (AppTest)."""
    os.environ["EVALCORE_DATABASE_URL"] = f"sqlite:///{db}"
    os.environ["EVALCORE_NO_DEMO"] = "1"
    from streamlit.testing.v1 import AppTest

    sys.path.insert(0, str(ROOT))  # the dashboard's ui package is not installed
    from ui.state import Annotate, App

    times = []
    for _ in range(runs + 1):  # the first run opens the store and imports the pages
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        with Store.open(f"sqlite:///{db}") as store:  # "reader": an account made by main()
            at.session_state[App.TOKEN] = store.open_session("reader", method="password")
        at.session_state[Annotate.DATASET] = dataset_id
        at.session_state[Annotate.CRITERION] = criterion_id
        at.run()
        at.switch_page("pages/annotate.py")
        start = time.perf_counter()
        at.run()
        times.append((time.perf_counter() - start) * 1000)
        if at.exception:
            raise RuntimeError(str(at.exception))
        if not any("Item " in str(getattr(p, "text", "")) for p in at.get("progress")):
            raise RuntimeError("the Annotate page showed no item, so its time means nothing")
    return statistics.median(times[1:])


def warm_up(browser: Any, url: str) -> None:
    """Load the app once (seeds the demo, loads the page modules) before anything is timed."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("h1", timeout=120_000)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=120_000
    )
    context.close()


def big_dataset(n: int) -> pd.DataFrame:
    words = "the reply explains how to return a tent within thirty days of delivery".split()  # noqa: SIM905
    return text_items(n, words, words_per_text=60)[0]


def _latency(times: list[float]) -> str:
    return (
        f"median {statistics.median(times):.0f} ms · p95 {percentile(times, 95):.0f} ms"
        f" · max {max(times):.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=100, help="label keys on the demo queue")
    parser.add_argument("--items", type=int, default=100_000, help="items of the large dataset")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)

        # (a) key presses on the demo data
        demo_db = Path(folder) / "demo.sqlite"
        with server(demo_db, demo=True) as url:
            warm_up(browser, url)
            add_accounts(f"sqlite:///{demo_db}", {"bench": "annotator"})
            with Store.open(f"sqlite:///{demo_db}") as store:
                project = store.list_projects()[0]
                dataset = store.get_dataset_by_name(project.id, "support-answers")
                criterion = store.get_criterion_by_name(project.id, "helpfulness")
            context, page, _ = open_page(
                browser,
                f"{url}/annotate?dataset={dataset.id}&criterion={criterion.id}",
                "bench",
            )
            wait_item(page, 1)
            presses = min(args.presses, dataset.n_items - 1)
            times = press_keys(page, presses, 1)
            context.close()
        rows.append(
            (
                f"key press → next item rendered, demo ({presses} presses)",
                _latency(times),
                "median < 300 ms, p95 < 600 ms",
            )
        )

        # the same on a one-button Streamlit page: what this machine allows at best
        floor_app = Path(folder) / "floor.py"
        floor_app.write_text(FLOOR_APP)
        with server(Path(folder) / "floor.sqlite", demo=False, script=floor_app) as url:
            context, page, floor_open_s = open_page(browser, url)
            floor = press_keys(page, 30, 1, keys="3")
            floor_reload_s = reload_page(page)
            context.close()
        rows.append(
            (
                "  floor: key press on a one-button Streamlit fragment (30 presses)",
                _latency(floor),
                "",
            )
        )

        # (b) loading a large dataset; (c) opening the page on it
        big_db = Path(folder) / "big.sqlite"
        with Store.open(f"sqlite:///{big_db}") as store:
            project = store.create_project("bench")
            criterion = store.create_criterion(
                project.id, "helpfulness", kind="pointwise", scale=LIKERT_5, rubric="1 to 5."
            )
            frame = big_dataset(args.items)
            start = time.perf_counter()
            dataset = store.save_dataset(project.id, "big", frame)
            load_s = time.perf_counter() - start
        add_accounts(f"sqlite:///{big_db}", {"reader": "annotator"}, demo=False)
        rows.append((f"save a {args.items:,}-item dataset (SQLite)", f"{load_s:.1f} s", "< 20 s"))

        with server(big_db, demo=False) as url:
            warm_up(browser, url)
            queue_url = f"{url}/annotate?dataset={dataset.id}&criterion={criterion.id}"
            context, page, first_s = open_page(browser, queue_url, "reader")
            context.close()
            context, page, again_s = open_page(browser, queue_url, "reader")
            reload_s = reload_page(page)
            wait_item(page, 1)
            big_times = press_keys(page, 20, 1)
            context.close()
        big = f"{args.items:,}-item queue"
        rows += [
            (
                f"open Annotate, {big}, new annotator (queue created), new browser",
                f"{first_s:.2f} s",
                "< 2 s",
            ),
            (
                f"open Annotate, {big}, returning annotator, new browser",
                f"{again_s:.2f} s",
                "< 2 s",
            ),
            (f"open Annotate, {big}, returning annotator, reload", f"{reload_s:.2f} s", "< 2 s"),
            (
                "  floor: a one-button Streamlit page, new browser / reload",
                f"{floor_open_s:.2f} s / {floor_reload_s:.2f} s",
                "",
            ),
            (
                f"server side: app.py + Annotate page, one run, {big} (AppTest)",
                f"{server_render_ms(big_db, dataset.id, criterion.id):.0f} ms",
                "",
            ),
            (f"key press → next item rendered, {big} (20 presses)", _latency(big_times), ""),
        ]
        browser.close()

    load = os.getloadavg()[0]
    print(
        f"Annotate page benchmark · {time.strftime('%Y-%m-%d')} · {os.cpu_count()} CPUs · "
        f"load average {load:.1f} at the end\n"
    )
    print("| what | measured | target |")
    print("|---|---|---|")
    for what, measured, target in rows:
        print(f"| {what} | {measured} | {target} |")


if __name__ == "__main__":
    main()
