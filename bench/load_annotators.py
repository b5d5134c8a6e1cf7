"""Load test: many annotators labelling one PostgreSQL dataset through two app server processes.

    python bench/load_annotators.py                         # 2 minutes, 4 browsers + 16 services
    python bench/load_annotators.py --minutes 0.5 --browsers 0
    python bench/load_annotators.py --url postgresql+psycopg://user@host:5432/any_db

``--url`` names a PostgreSQL server (any database on it); a fresh database is created there for the
run and dropped afterwards (``--keep`` keeps it). It is seeded with one project (one annotator per
item, claims of 20), a dataset big enough for the run, and one annotator account per client. Two
app servers (``evalcore serve``) serve it. ``--browsers`` annotators are real Chromium pages,
contexts of one browser, split over the two servers: each signs in through the form and labels by
key presses. The others are separate processes that make the same calls the Annotate page makes,
through the guarded store (``store.acting_as(store.actor_for(name))``): ensure_queue,
next_open_position, queue_item, submit_annotation, with a think time.

At the end it checks that every submit a client saw acknowledged is stored exactly once and nothing
else is, that no item has two annotators, and that no client and no server log had an error; then
prints labels per minute and submit latency (p50/p95) per kind of client. The exit status is 1 when
a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import time
import traceback
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evalcore.errors import EvalcoreError  # noqa: E402
from evalcore.store import Store  # noqa: E402

DEV_SERVER = "postgresql+psycopg://evalcore@127.0.0.1:55433/evalcore_h4"
PASSWORD = "a long load-test password"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
LABEL_KEYS = "12345"


@dataclass(frozen=True)
class Submit:
    """One submit a client saw acknowledged (the browser knows no item id: 0 and revision 0)."""

    annotator: str
    item_id: int
    revision: int
    latency_s: float


@dataclass
class ClientLog:
    """What one client process (or the browser driver) did."""

    kind: str
    submits: list[Submit] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


# --- service clients --------------------------------------------------------------------------------


def service_client(
    url: str,
    dataset_id: int,
    criterion_id: int,
    names: list[str],
    *,
    seconds: float,
    think_s: float = 0.0,
    seed: int = 0,
    release_every: int = 0,
    accounts: bool = False,
) -> ClientLog:
    """Label as each of ``names`` in turn, as the Annotate page would, until ``seconds`` pass or no
    annotator has anything left.

    With ``accounts`` each annotator goes through ``store.acting_as(store.actor_for(name))``; else
    the plain store. With ``release_every`` an annotator gives their open claims back after that
    many submits (a sign-out) and claims again. Errors are logged, not raised, so that the caller
    counts them.
    """
    rng = random.Random(seed)
    log = ClientLog("service")
    store = Store.open(url, migrate=False)
    try:
        views: dict[str, Any] = {
            n: store.acting_as(store.actor_for(n)) if accounts else store for n in names
        }
        active = list(names)
        given: Counter[str] = Counter()
        deadline = time.monotonic() + seconds
        while active and time.monotonic() < deadline:
            for name in list(active):
                try:
                    if not _one_label(views[name], dataset_id, criterion_id, name, rng, log):
                        active.remove(name)
                        continue
                    given[name] += 1
                    if release_every and given[name] % release_every == 0:
                        views[name].release_claims(dataset_id, criterion_id, name)
                except EvalcoreError as exc:
                    log.errors.append(f"{name}: {type(exc).__name__}: {exc}")
                except Exception:  # counted, never hidden: the check at the end fails on it
                    log.errors.append(f"{name}: {traceback.format_exc(limit=3)}")
                if think_s:
                    time.sleep(rng.uniform(0.5, 1.5) * think_s)  # an annotator reading the item
    finally:
        store.close()
    return log


def _one_label(
    view: Any, dataset_id: int, criterion_id: int, name: str, rng: random.Random, log: ClientLog
) -> bool:
    """Label the first open item, claiming the next batch first when none is left (as the page
    does); False when there is nothing left."""
    position = view.next_open_position(dataset_id, criterion_id, name)
    if position is None:
        view.ensure_queue(dataset_id, criterion_id, name)
        position = view.next_open_position(dataset_id, criterion_id, name)
    if position is None:
        return False
    task = view.queue_item(dataset_id, criterion_id, name, position)
    if task is None:
        raise RuntimeError(f"position {position} of {name}'s queue has no item")
    start = time.perf_counter()
    record = view.submit_annotation(
        task.item_id,
        criterion_id,
        name,
        label=rng.randint(1, 5),
        base_revision=task.revision,
        time_spent_s=1.0,
    )
    latency = time.perf_counter() - start
    log.submits.append(Submit(name, int(task.item_id), int(record.revision), latency))
    return True


# --- browser clients --------------------------------------------------------------------------------


_PROGRESS = re.compile(r"·\s*(\d+) labelled")


async def _labelled(page: Any) -> int | None:
    bar = page.locator('[data-testid="stProgress"]').first
    if not await bar.count():
        return None
    found = _PROGRESS.search(await bar.inner_text())
    return int(found.group(1)) if found else None


async def _wait_labelled(page: Any, at_least: int, timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        seen = await _labelled(page)
        if seen is not None and seen >= at_least:
            return seen
        if await page.locator('[data-testid="stException"]').count():
            raise RuntimeError("the page shows an exception")
        await page.wait_for_timeout(25)
    raise TimeoutError(f"the page did not count {at_least} labels within {timeout_s:.0f} s")


async def _browser_annotator(
    browser: Any, base: str, queue: str, name: str, seconds: float, think_s: float, seed: int
) -> ClientLog:
    rng = random.Random(seed)
    log = ClientLog("browser")
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    page = await context.new_page()
    page.set_default_timeout(90_000)
    try:
        await page.goto(f"{base}/annotate?{queue}")
        await page.get_by_role("textbox", name="Name").fill(name)
        await page.get_by_role("textbox", name="Password").fill(PASSWORD)
        await page.get_by_role("button", name="Sign in").click()
        await page.get_by_text(f"Signed in as {name}").first.wait_for()
        done = await _wait_labelled(page, 0, 90)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            await page.wait_for_timeout(int(rng.uniform(0.5, 1.5) * think_s * 1000))
            start = time.perf_counter()
            await page.keyboard.press(rng.choice(LABEL_KEYS))
            try:
                done = await _wait_labelled(page, done + 1, 30)
            except (TimeoutError, RuntimeError) as exc:
                log.errors.append(f"{name}: {exc}")
                break
            log.submits.append(Submit(name, 0, 0, time.perf_counter() - start))
    except Exception as exc:  # counted: the check at the end fails on it
        log.errors.append(f"{name}: {type(exc).__name__}: {exc}")
    finally:
        await context.close()
    return log


async def _browsers(
    servers: list[str], queue: str, names: list[str], seconds: float, think_s: float
) -> list[ClientLog]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            return list(
                await asyncio.gather(
                    *(
                        _browser_annotator(
                            browser, servers[n % len(servers)], queue, name, seconds, think_s, n
                        )
                        for n, name in enumerate(names)
                    )
                )
            )
        finally:
            await browser.close()


# --- the run ----------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _admin(server_url: str) -> Any:
    import sqlalchemy as sa

    return sa.create_engine(server_url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)


def create_database(server_url: str) -> tuple[str, str]:
    """A new, empty database on the server of ``server_url``: (its name, its URL)."""
    from sqlalchemy.engine import make_url

    name = f"evalcore_load_{uuid.uuid4().hex[:10]}"
    engine = _admin(server_url)
    with engine.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    engine.dispose()
    return name, make_url(server_url).set(database=name).render_as_string(hide_password=False)


def drop_database(server_url: str, name: str) -> None:
    engine = _admin(server_url)
    with engine.connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    engine.dispose()


def seed(url: str, items: int, names: list[str], *, accounts: bool = True) -> tuple[int, int]:
    """One project (one annotator per item), one criterion, ``items`` items, and the accounts."""
    import pandas as pd

    from evalcore.labels import LIKERT_5

    with Store.open(url) as store:
        project = store.create_project(
            "load", settings={"annotators_per_item": 1, "claim_batch": 20}
        )
        criterion = store.create_criterion(project.id, "quality", kind="pointwise", scale=LIKERT_5)
        frame = pd.DataFrame(
            {
                "item_id": [f"it-{n:06d}" for n in range(items)],
                "prompt": [f"Question number {n}?" for n in range(items)],
                "response": [f"An answer to question {n}." for n in range(items)],
            }
        )
        dataset = store.save_dataset(project.id, "load", frame)
        if accounts:
            for name in names:
                store.add_user(name, role="annotator", password=PASSWORD)
        return dataset.id, criterion.id


class AppServer:
    """``evalcore serve`` on a free port of 127.0.0.1, against ``db_url``."""

    def __init__(self, db_url: str, log_path: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self._log = log_path.open("w")
        env = {**os.environ, "EVALCORE_DATABASE_URL": db_url, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "evalcore", "serve", "--port", str(self.port)],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def wait(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the app server exited early; see {self.log_path}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"the app server did not answer within {timeout:.0f} s")

    def stop(self) -> list[str]:
        """Stop the server; the lines of its log that report an error."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._log.close()
        text = self.log_path.read_text(errors="replace")
        return [line for line in text.splitlines() if "Traceback" in line or "Error" in line]


@dataclass(frozen=True)
class Verdict:
    """What the checks at the end found."""

    problems: list[str]
    stored: int


def verify(url: str, dataset_id: int, criterion_id: int, logs: list[ClientLog]) -> Verdict:
    """Every acknowledged submit stored exactly once (and nothing else), no item with two
    annotators, no item held by two annotators."""
    import sqlalchemy as sa

    problems = [e for log in logs for e in log.errors]
    with Store.open(url, migrate=False) as store, store.engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT a.name, n.item_id, n.revision FROM annotations n "
                "JOIN annotators a ON a.id = n.annotator_id JOIN items i ON i.id = n.item_id "
                "WHERE i.dataset_id = :d AND n.criterion_id = :c"
            ),
            {"d": dataset_id, "c": criterion_id},
        ).all()
        doubly_held = conn.execute(
            sa.text(
                "SELECT count(*) FROM (SELECT item_id FROM assignments WHERE dataset_id = :d "
                "AND criterion_id = :c AND state <> 'released' GROUP BY item_id "
                "HAVING count(*) > 1) AS x"
            ),
            {"d": dataset_id, "c": criterion_id},
        ).scalar_one()
    stored = [(str(a), int(i), int(r)) for a, i, r in rows]
    service = [
        (s.annotator, s.item_id, s.revision) for log in logs for s in log.submits if s.item_id
    ]
    if len(service) != len(set(service)):
        problems.append("a service client logged the same (annotator, item, revision) twice")
    service_names = {a for a, _i, _r in service}
    stored_service = sorted(r for r in stored if r[0] in service_names)
    if stored_service != sorted(service):
        problems.append(
            f"service clients: {len(service)} submits acknowledged, {len(stored_service)} stored"
        )
    browser_counts = Counter(s.annotator for log in logs for s in log.submits if not s.item_id)
    stored_counts = Counter(a for a, _i, _r in stored)
    for name, count in browser_counts.items():
        if stored_counts[name] != count:
            problems.append(
                f"browser {name}: {count} labels acknowledged, {stored_counts[name]} stored"
            )
    annotators_per_item = Counter(i for _a, i in {(a, i) for a, i, _r in stored})
    twice = sum(1 for n in annotators_per_item.values() if n > 1)
    if twice:
        problems.append(f"{twice} items were labelled by two annotators")
    if doubly_held:
        problems.append(f"{doubly_held} items are held by two annotators")
    return Verdict(problems, len(stored))


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def report(logs: list[ClientLog], minutes: float, server_errors: list[str]) -> str:
    """The table of labels per minute, submit latency and errors per kind of client."""
    lines = [
        f"{'clients':<10}{'annotators':>11}{'labels':>8}{'per min':>9}"
        f"{'p50 ms':>9}{'p95 ms':>9}{'errors':>8}"
    ]
    for kind in ("browser", "service"):
        mine = [log for log in logs if log.kind == kind]
        if not mine:
            continue
        latencies = [s.latency_s * 1000 for log in mine for s in log.submits]
        names = {s.annotator for log in mine for s in log.submits}
        errors = sum(len(log.errors) for log in mine)
        lines.append(
            f"{kind:<10}{len(names):>11}{len(latencies):>8}{len(latencies) / minutes:>9.1f}"
            f"{_percentile(latencies, 50):>9.0f}{_percentile(latencies, 95):>9.0f}{errors:>8}"
        )
    total = sum(len(log.submits) for log in logs)
    lines.append(f"{'all':<10}{'':>11}{total:>8}{total / minutes:>9.1f}")
    lines.append(f"server log errors: {len(server_errors)}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=DEV_SERVER, help="a PostgreSQL server (any database)")
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--browsers", type=int, default=4)
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--think", type=float, default=2.0, help="seconds between labels")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    args = parser.parse_args()
    if args.browsers > args.annotators:
        parser.error("--browsers cannot exceed --annotators")

    names = [f"annotator-{n:02d}" for n in range(args.annotators)]
    browser_names, service_names = names[: args.browsers], names[args.browsers :]
    seconds = args.minutes * 60
    db_name, db_url = create_database(args.url)
    print(f"database {db_name}: seeding {args.items:,} items and {len(names)} accounts")
    servers: list[AppServer] = []
    server_errors: list[str] = []
    try:
        dataset_id, criterion_id = seed(db_url, args.items, names)
        logs_dir = Path(os.environ.get("TMPDIR", "/tmp"))
        servers = [AppServer(db_url, logs_dir / f"{db_name}-app{n}.log") for n in range(2)]
        for server in servers:
            server.wait()
        print(f"app servers on {', '.join(s.url for s in servers)}; running {args.minutes} min")
        context = multiprocessing.get_context("spawn")
        with context.Pool(max(1, len(service_names))) as pool:
            pending = [
                pool.apply_async(
                    service_client,
                    (db_url, dataset_id, criterion_id, [name]),
                    {"seconds": seconds, "think_s": args.think, "seed": n, "accounts": True},
                )
                for n, name in enumerate(service_names)
            ]
            queue = f"dataset={dataset_id}&criterion={criterion_id}"
            browser_logs = (
                asyncio.run(
                    _browsers([s.url for s in servers], queue, browser_names, seconds, args.think)
                )
                if browser_names
                else []
            )
            logs = browser_logs + [p.get(timeout=seconds + 300) for p in pending]
        for server in servers:
            server_errors += server.stop()
        servers = []
        verdict = verify(db_url, dataset_id, criterion_id, logs)
        print(report(logs, args.minutes, server_errors))
        print(f"stored labels: {verdict.stored}")
        problems = verdict.problems + server_errors
        for problem in problems[:20]:
            print(f"PROBLEM: {problem}")
        print("OK: every acknowledged label stored exactly once" if not problems else "FAILED")
        return 1 if problems else 0
    finally:
        for server in servers:
            server.stop()
        if not args.keep:
            drop_database(args.url, db_name)


if __name__ == "__main__":
    sys.exit(main())
