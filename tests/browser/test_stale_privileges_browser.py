"""In a real browser: a page open in a tab never acts on privileges its user lost meanwhile.

Each case leaves a page open, changes the user in the database behind its back (as another admin or
the clock would), then clicks: the click is refused at once, with a sign-in or "no longer allowed"
notice, and nothing is written. Fragment reruns and widget callbacks go through the same check as a
whole page (evalcore.workflows checks the session at every call).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from evalcore.store import Store
from tests.browser.conftest import AppServer, add_accounts, sign_in, wait_idle

ACCOUNTS = {"ida": "annotator", "root": "admin"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, chromium_path: str) -> Iterator[AppServer]:
    app = AppServer(tmp_path_factory.mktemp("stale") / "evalcore.sqlite")
    add_accounts(app.db_url, ACCOUNTS)
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
