"""Benchmark of the Calibrate page in headless Chromium: 100 000 items, 3 judge runs.

    python bench/calibrate_page.py                 # a fresh SQLite file, filled through the store
    python bench/calibrate_page.py --items 20000   # smaller
    python bench/calibrate_page.py --keep /tmp/big.sqlite   # reuse (or keep) the filled file

Starts the real app (``evalcore serve`` on a free port, as the browser tests do) on a SQLite file
filled through the store's bulk APIs (bench/report.py's ``fill``: one dataset, human labels from three
annotators, three runs), warms the server up on the Home page, then prints, measured in Chromium until
Streamlit is idle and the side-by-side table shows the new numbers:

(a) the Calibrate page's first render, opened from the Home page of a server already in use (its
    modules imported and the browser's chart code loaded, on the Reports page), with the Calibrate
    page's caches cold: until the table shows its numbers and the confusion matrices are drawn
    (target < 3 s);
(b) re-renders after a change of human-label policy and of run selection (target < 1 s each).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evalcore.store import Store  # noqa: E402
from tests.browser.conftest import CHROMIUM_ARGS, AppServer  # noqa: E402

# the side-by-side table's cells (st.dataframe renders a grid; its cells are also in the DOM)
TABLE = ".st-key-calibrate-table_box [role='gridcell']"
IDLE = "!document.querySelector('[data-testid=\"stStatusWidget\"]')"


def _fill_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "bench_report", Path(__file__).with_name("report.py")
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def table_text(page: Any) -> str:
    return str(
        page.evaluate(
            f"() => [...document.querySelectorAll(\"{TABLE}\")].map(c => c.textContent).join('|')"
        )
    )


def wait_for_new_table(page: Any, before: str, timeout_ms: int = 120_000) -> None:
    """Wait until Streamlit is idle and the table's text differs from ``before``."""
    page.wait_for_function(
        f"""(before) => {{
            const cells = [...document.querySelectorAll("{TABLE}")].map(c => c.textContent).join('|');
            return {IDLE} && cells.includes('balanced accuracy') && cells !== before;
        }}""",
        arg=before,
        timeout=timeout_ms,
        polling=20,
    )


def open_options(page: Any, key: str, option: str) -> Any:
    """Open a selectbox or multiselect by its key; the option to click (not clicked yet)."""
    page.locator(f".st-key-{key} input").click()
    choice = page.get_by_role("option", name=option, exact=True)
    choice.wait_for(state="visible")
    return choice


def measure(page: Any, action: Any) -> float:
    """Seconds from ``action`` (one click) until Streamlit is idle and the table shows new text."""
    before = table_text(page)
    start = time.perf_counter()
    action()
    wait_for_new_table(page, before)
    seconds = time.perf_counter() - start
    page.wait_for_timeout(500)  # let the widgets settle before the next click (not timed)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--keep", help="the SQLite file to fill (reused when it exists)")
    parser.add_argument("--repeat", type=int, default=3, help="how many times to change each input")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        path = Path(args.keep) if args.keep else Path(folder) / "bench.sqlite"
        if not path.exists():
            print(f"(setup) filling {path} with {args.items:,} items, labels and 3 runs")
            store = Store.open(f"sqlite:///{path}")
            _fill_module().fill(store, args.items, log=False)
            with store.engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            store.close()
        store = Store.open(f"sqlite:///{path}")
        n = store.count_items(store.list_datasets(store.list_projects()[0].id)[0].id)
        store.close()
        print(f"Calibrate page benchmark: {n:,} items, 3 runs, headless Chromium")
        server = AppServer(path, extra_env={"EVALCORE_NO_DEMO": "1"})
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.set_default_timeout(120_000)
                # warm-up, as a server that is already in use: the Reports page loads the modules
                # and the browser's chart and table code (its caches are not the Calibrate page's)
                page.goto(f"{server.url}/reports")  # no account: single-user mode
                page.locator(".st-key-reports-dl_html").wait_for(state="attached")
                page.wait_for_function(f"() => {IDLE}")
                # ...then the Home page, where a user starts from
                page.locator("[data-testid='stSidebarNavLink']", has_text="Home").click()
                page.wait_for_timeout(1000)
                page.wait_for_function(f"() => {IDLE}")

                start = time.perf_counter()
                page.locator("[data-testid='stSidebarNavLink']", has_text="Calibrate").click()
                wait_for_new_table(page, "")
                page.locator(".st-key-calibrate-heat .heatmaplayer").first.wait_for(
                    state="attached"
                )
                first = time.perf_counter() - start
                print(f"(a) first render (cold data caches):       {first:6.2f} s   (target < 3 s)")
                page.wait_for_function(f"() => {IDLE}", polling=20)
                whole = time.perf_counter() - start
                print(f"    the whole page drawn (script idle):    {whole:6.2f} s")

                policy = []
                for _ in range(args.repeat):
                    for option in ("mean rounded half up", "median", "majority vote"):
                        choice = open_options(page, "calibrate-policy", option)
                        policy.append(measure(page, choice.click))
                print(
                    f"(b) change of human policy ({len(policy)}x):        median {statistics.median(policy):5.2f} s"
                    f"   max {max(policy):5.2f} s   (target < 1 s)"
                )
                print("    each: " + ", ".join(f"{t:.2f}" for t in policy))

                runs = []
                for _ in range(args.repeat):
                    # drop the last run from the selection, then add it back
                    remove = page.locator(
                        ".st-key-calibrate-runs button[aria-label^='Remove ']"
                    ).last
                    name = str(remove.get_attribute("aria-label")).removeprefix("Remove ")
                    runs.append(measure(page, remove.click))
                    choice = open_options(page, "calibrate-runs", name)
                    runs.append(measure(page, choice.click))
                    page.locator("h1").first.click()  # close the list (outside any widget)
                    page.wait_for_timeout(300)
                print(
                    f"    change of run selection ({len(runs)}x):       median {statistics.median(runs):5.2f} s"
                    f"   max {max(runs):5.2f} s   (target < 1 s)"
                )
                print("    each: " + ", ".join(f"{t:.2f}" for t in runs))
                browser.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
