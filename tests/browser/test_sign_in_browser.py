"""In a real browser: sign in with a wrong password, then the right one; as an annotator, the old
``?role=engineer`` address and the Judge page's address are refused; as an engineer every page
opens from the menu; sign out."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evalcore.store import Store
from tests.browser.conftest import AppServer, add_accounts, fill_sign_in, sign_in, wait_idle

REFUSED = "This page is not available to your role."
ACCOUNTS = {"eve": "engineer", "ann": "annotator"}
ENGINEER_PAGES = ["Home", "Annotate", "Datasets", "Judge", "Calibrate", "Reports"]


@pytest.fixture(scope="module")
def team_server(
    tmp_path_factory: pytest.TempPathFactory, chromium_path: str
) -> Iterator[AppServer]:
    server = AppServer(tmp_path_factory.mktemp("team") / "evalcore.sqlite")
    add_accounts(server.db_url, ACCOUNTS)
    yield server
    server.stop()


def _menu(page) -> list[str]:
    nav = page.locator("[data-testid='stSidebarNav']")
    nav.first.wait_for()
    return [t.strip().splitlines()[-1] for t in nav.locator("a").all_inner_texts()]  # no icon


def test_a_wrong_password_then_the_right_one(team_server: AppServer, page) -> None:
    page.goto(team_server.url)
    page.get_by_role("button", name="Sign in").wait_for(timeout=90_000)
    fill_sign_in(page, "eve", "not the password")
    page.get_by_text("The name or password is not right.").first.wait_for()
    assert page.get_by_text("Signed in as").count() == 0
    fill_sign_in(page, "eve")
    page.get_by_text("Signed in as eve").first.wait_for()
    with Store.open(team_server.db_url) as store:
        log = store.audit_log()
    assert {"sign_in", "sign_in_failed"} <= set(log["action"])


def test_an_annotator_is_refused_by_address(team_server: AppServer, page) -> None:
    # the address that once made anyone an engineer: it names nobody now
    sign_in(page, f"{team_server.url}/judge?user=eve&role=engineer", "ann")
    page.get_by_text(REFUSED).first.wait_for()
    assert "role=" not in page.url
    assert "user=" not in page.url
    assert _menu(page) == ["Home", "Annotate"]
    assert page.get_by_role("textbox", name="User message").count() == 0
    # another page's address, typed in
    sign_in(page, f"{team_server.url}/datasets", "ann")
    page.get_by_text(REFUSED).first.wait_for()
    assert page.locator("[data-testid='stFileUploader']").count() == 0


def test_an_engineer_opens_every_page_and_signs_out(team_server: AppServer, page) -> None:
    sign_in(page, team_server.url, "eve")
    assert _menu(page) == ENGINEER_PAGES
    for title in ENGINEER_PAGES[1:]:
        page.locator("[data-testid='stSidebarNav'] a").filter(has_text=title).first.click()
        page.get_by_role("heading", name=title).first.wait_for(timeout=90_000)
        wait_idle(page)
        assert page.get_by_text(REFUSED).count() == 0, title
        assert page.locator("[data-testid='stException']").count() == 0, title
        page.get_by_text("Signed in as eve").first.wait_for()  # the same session throughout
    page.get_by_role("button", name="Sign out").click()
    page.get_by_role("button", name="Sign in").wait_for()
    page.get_by_text("You signed out.").first.wait_for()
    assert page.get_by_text("Signed in as").count() == 0
