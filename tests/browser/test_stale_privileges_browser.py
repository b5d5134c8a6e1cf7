"""In a real browser: a page open in a tab never acts on privileges its user lost meanwhile.

Each case leaves a page open, changes the user in the database behind its back (as another admin or
the clock would), then clicks: the click is refused at once, with a sign-in or "no longer allowed"
notice, and nothing is written. Fragment reruns and widget callbacks go through the same check as a
whole page (evalcore.workflows checks the session at every call).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from evalcore.store import Store
from tests.browser.conftest import (
    AppServer,
    add_accounts,
    click_until,
    css,
    sign_in,
    wait_idle,
)
from tests.pages.improve_demo import OPTIMIZER, demo_ids
from ui.state import Judge
from ui.state import Settings as S

#: One account per case: each case takes something away from its user for good.
ACCOUNTS = {
    "ida": "annotator",
    "root": "admin",
    "ada": "admin",
    "eve": "engineer",
    "rex": "engineer",
    "roy": "engineer",
}
KEY_ENV = "BROWSER_STALE_API_KEY"
ENDPOINT = "stale judge"
#: What a page shows when a click was refused: the session ended (sign in again) or the action is
#: no longer allowed.
REFUSED = re.compile(r"no longer allowed|signed out|Sign in")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, chromium_path: str) -> Iterator[AppServer]:
    app = AppServer(
        tmp_path_factory.mktemp("stale") / "evalcore.sqlite", extra_env={KEY_ENV: "stale-secret"}
    )
    add_accounts(app.db_url, ACCOUNTS)
    with Store.open(app.db_url) as store:
        # nothing is ever sent to it: every click that would is refused first
        store.upsert_endpoint(
            ENDPOINT, base_url="http://127.0.0.1:9/v1", api_key_env=KEY_ENV, default_model="x"
        )
    yield app
    app.stop()


def _labels(server: AppServer, annotator: str) -> int:
    with Store.open(server.db_url) as store:
        saved = store.export_annotations(project_id=store.list_projects()[0].id)
    return int((saved["annotator"] == annotator).sum())


def _backdate_sessions(server: AppServer, name: str, minutes: float) -> None:
    """As if the user's open sessions had seen no activity for ``minutes``."""
    engine = sa.create_engine(server.db_url)
    with engine.begin() as conn:
        user_id = conn.execute(
            sa.text("SELECT id FROM users WHERE name = :n"), {"n": name}
        ).scalar()
        then = (datetime.now(UTC) - timedelta(minutes=minutes)).replace(tzinfo=None)
        conn.execute(
            sa.text("UPDATE user_sessions SET last_active_at = :t WHERE user_id = :u"),
            {"t": then, "u": user_id},
        )
    engine.dispose()


def test_the_idle_timeout_holds_inside_the_rating_fragment(server: AppServer, page) -> None:
    """The labels are keys pressed in a fragment: after the idle limit, the next key is refused."""
    with Store.open(server.db_url) as store:
        project = store.list_projects()[0]
        dataset = store.get_dataset_by_name(project.id, "support-answers").id
        criterion = store.get_criterion_by_name(project.id, "helpfulness").id
    sign_in(page, f"{server.url}/annotate?dataset={dataset}&criterion={criterion}", "ida")
    page.get_by_text("Item 1 of").first.wait_for()
    wait_idle(page)
    page.keyboard.press("4")
    page.get_by_text("Item 2 of").first.wait_for()
    wait_idle(page)
    assert _labels(server, "ida") == 1

    _backdate_sessions(server, "ida", 61)  # the default limit is 60 minutes
    for key in ("5", "3", "2"):
        page.keyboard.press(key)
    page.get_by_text("signed out after a time without activity").first.wait_for()
    page.get_by_role("button", name="Sign in").wait_for()
    assert _labels(server, "ida") == 1  # none of the three keys saved a label


def _select(page, label: str, option: str | re.Pattern[str]) -> None:
    box = page.locator("[data-testid='stSelectbox']").filter(has_text=label).first
    box.click()
    page.get_by_role("option", name=option).first.click()
    wait_idle(page)


def _judge_page(server: AppServer, page, name: str, section: str) -> None:
    """Sign ``name`` in on the Judge page, with the test's endpoint and the demo's dataset, and open
    ``section``."""
    sign_in(page, f"{server.url}/judge", name)
    page.get_by_text("Variables").first.wait_for(timeout=90_000)
    wait_idle(page)
    _select(page, "Endpoint", ENDPOINT)
    _select(page, "Dataset", re.compile(r"^support-answers"))
    page.locator(css(Judge.SECTION)).get_by_text(section, exact=True).click()
    wait_idle(page)


def test_start_again_is_refused_to_an_engineer_disabled_and_removed_meanwhile(
    server: AppServer, page
) -> None:
    """The Improve panel shows a stopped optimisation with "Start again"; meanwhile an admin
    disables its engineer and removes them from the project: the click starts nothing."""
    with Store.open(server.db_url) as store:
        dataset_id, criterion_id, version_id = demo_ids(store)
        endpoint_id = store.get_endpoint_by_name(ENDPOINT).id
        job = store.create_improve_job(
            dataset_id,
            criterion_id,
            version_id,
            settings={
                "endpoint_id": endpoint_id,
                "model": "x",
                "optimizer_endpoint_id": endpoint_id,
                "optimizer_model": OPTIMIZER,
                "optimize": {},
            },
            author="eve",
        )
        store.update_improve_job(dataset_id, job.id, status="cancelled")
    _judge_page(server, page, "eve", "Improve")
    restart = page.get_by_role("button", name="Start again", exact=True)
    restart.wait_for()

    with Store.open(server.db_url) as store:
        store.disable_user("eve")
        store.set_membership("eve", store.get_dataset(dataset_id).project_id, None)
    restart.click()
    page.get_by_text(REFUSED).first.wait_for()
    wait_idle(page)
    with Store.open(server.db_url) as store:
        jobs = store.list_improve_jobs(dataset_id)
    assert [j.id for j in jobs] == [job.id]  # no new optimisation, as eve or anyone
    assert jobs[0].status == "cancelled"


def test_saving_an_endpoint_is_refused_to_an_admin_disabled_and_demoted_meanwhile(
    server: AppServer, page
) -> None:
    """An admin fills the endpoint form (the key variable OPENAI_API_KEY, a new host); meanwhile
    another admin disables them and makes them a viewer: Save stores nothing."""
    with Store.open(server.db_url) as store:
        before = {(e.name, e.base_url) for e in store.list_endpoints()}
    sign_in(page, f"{server.url}/settings", "ada")
    page.get_by_text("Endpoints").first.wait_for()
    wait_idle(page)
    _select(page, "Edit", "New endpoint…")
    for key, value in (
        (S.EP_NAME, "exfiltrate"),
        (S.EP_KEY_ENV, "OPENAI_API_KEY"),
        (S.EP_MODEL, "gpt-4o-mini"),
    ):
        page.locator(f"{css(key)} input").fill(value)
        page.locator(f"{css(key)} input").press("Enter")
        wait_idle(page)
    page.locator(f"{css(S.EP_URL)} textarea").fill("https://collector.example.net/v1")
    page.locator(f"{css(S.EP_URL)} textarea").press("Control+Enter")
    wait_idle(page)

    with Store.open(server.db_url) as store:
        store.set_role("ada", "viewer")
        store.disable_user("ada")
    save = page.get_by_role("button", name="Save endpoint", exact=True)
    click_until(save, page.get_by_text(REFUSED).first)
    wait_idle(page)
    with Store.open(server.db_url) as store:
        after = {(e.name, e.base_url) for e in store.list_endpoints()}
        audit = store.audit_log()
    assert after == before
    assert "exfiltrate" not in " ".join(map(str, audit.to_numpy().ravel()))


def _stopped_run(server: AppServer, author: str) -> tuple[int, int]:
    """A cancelled run of the demo's helpfulness judge with one failed item: it offers both
    "Resume" and "Re-run 1 failed". Its id and the number of runs of the project."""
    with Store.open(server.db_url) as store:
        project = store.list_projects()[0]
        dataset = store.get_dataset_by_name(project.id, "support-answers")
        criterion = store.get_criterion_by_name(project.id, "helpfulness")
        template = next(
            t for t in store.list_templates(project.id) if t.name == "helpfulness-judge"
        )
        version = store.list_template_versions(template.id)[-1]
        run = store.create_run(
            dataset.id,
            criterion.id,
            name=f"stopped run of {author}",
            model="x",
            template_version_id=version.id,
            endpoint_id=store.get_endpoint_by_name(ENDPOINT).id,
        )
        item_id = int(store.items_frame(dataset.id).index[0])
        store.record_result(run.id, item_id, status="failed", error="HTTP 500")
        store.set_run_status(run.id, "cancelled")
        return run.id, len(store.list_runs(project_id=project.id))


def _demoted_on_the_runs_panel(server: AppServer, page, name: str, button: re.Pattern[str]):
    run_id, runs_before = _stopped_run(server, name)
    _judge_page(server, page, name, "Runs")
    _select(page, "Run", re.compile(rf"stopped run of {name}"))
    target = page.get_by_role("button", name=button)
    target.wait_for()
    with Store.open(server.db_url) as store:
        store.set_role(name, "viewer")
    click_until(target, page.get_by_text(REFUSED).first)
    wait_idle(page)
    with Store.open(server.db_url) as store:
        run = store.get_run(run_id)
        project = store.list_projects()[0]
        assert len(store.list_runs(project_id=project.id)) == runs_before
        assert store.run_progress(run_id).finished == 1
    assert run.status == "cancelled"


def test_resume_is_refused_to_an_engineer_demoted_to_viewer_meanwhile(
    server: AppServer, page
) -> None:
    _demoted_on_the_runs_panel(server, page, "rex", re.compile(r"^Resume$"))


def test_rerun_failed_is_refused_to_an_engineer_demoted_to_viewer_meanwhile(
    server: AppServer, page
) -> None:
    _demoted_on_the_runs_panel(server, page, "roy", re.compile(r"^Re-run 1 failed$"))
