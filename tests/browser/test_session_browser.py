"""In a real browser: the session lives in an ``HttpOnly``, ``SameSite=Strict`` cookie, so a reload,
a second tab and a restarted browser stay signed in, while the page's scripts and the address never
see the token; sign-out ends it on the server and clears the cookie; a user disabled while their tab
is open is refused at the next click; and a single-user server answers loopback Host names only."""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from evalcore.errors import SessionEndedError
from evalcore.store import Store
from evalcore.workflows import SESSION_COOKIE
from tests.browser.conftest import AppServer, add_accounts, fill_sign_in, wait_idle

ACCOUNTS = {"eve": "engineer", "dan": "annotator", "sue": "engineer"}


@pytest.fixture(scope="module")
def team_server(
    tmp_path_factory: pytest.TempPathFactory, chromium_path: str
) -> Iterator[AppServer]:
    server = AppServer(tmp_path_factory.mktemp("session") / "evalcore.sqlite")
    add_accounts(server.db_url, ACCOUNTS)
    yield server
    server.stop()


def _sign_in(page, url: str, name: str) -> dict:
    """Sign in through the form and wait for the page to hand the session to the cookie; the
    cookie as the browser keeps it."""
    page.goto(url)
    page.get_by_role("button", name="Sign in").wait_for(timeout=90_000)
    with page.expect_response("**/auth/session") as answer:
        fill_sign_in(page, name)
    assert answer.value.status == 204
    page.get_by_text(f"Signed in as {name}").first.wait_for(timeout=90_000)
    return _cookie(page.context)


def _cookie(context) -> dict:
    (found,) = [c for c in context.cookies() if c["name"] == SESSION_COOKIE]
    return found


def _signed_in_as(page, name: str) -> None:
    page.get_by_text(f"Signed in as {name}").first.wait_for(timeout=90_000)
    wait_idle(page)
    assert page.get_by_role("button", name="Sign in").count() == 0


def _actor(server: AppServer, token: str) -> str:
    with Store.open(server.db_url) as store:
        return store.session_actor(token, idle_s=3600).name


def test_reload_second_tab_and_restart_keep_the_session(
    team_server: AppServer, browser, page
) -> None:
    cookie = _sign_in(page, team_server.url, "eve")
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"
    assert cookie["path"] == "/"
    assert cookie["expires"] > 0  # persistent: it outlives the browser, within the idle time
    assert _actor(team_server, cookie["value"]) == "eve"  # the server-side session's token
    token = cookie["value"]
    assert token not in page.evaluate("document.cookie")  # page scripts cannot read it
    assert token not in page.url

    page.reload()
    _signed_in_as(page, "eve")
    assert token not in page.url

    second = page.context.new_page()  # another tab of the same browser
    second.goto(f"{team_server.url}/datasets")
    _signed_in_as(second, "eve")
    second.get_by_role("heading", name="Datasets").first.wait_for()

    # a browser restart keeps the persistent cookies only
    restarted = browser.new_context()
    try:
        kept = [c for c in page.context.cookies() if c["expires"] > 0]
        restarted.add_cookies(kept)
        tab = restarted.new_page()
        tab.goto(team_server.url)
        _signed_in_as(tab, "eve")
    finally:
        restarted.close()


def test_sign_out_ends_the_session_and_clears_the_cookie(team_server: AppServer, page) -> None:
    token = _sign_in(page, team_server.url, "sue")["value"]
    page.reload()  # the session now comes from the cookie alone
    _signed_in_as(page, "sue")
    with page.expect_response("**/auth/sign-out") as answer:
        page.get_by_role("button", name="Sign out").click()
    assert answer.value.status == 204
    page.get_by_text("You signed out.").first.wait_for()
    assert [c for c in page.context.cookies() if c["name"] == SESSION_COOKIE] == []
    page.reload()
    page.get_by_role("button", name="Sign in").wait_for(timeout=90_000)
    wait_idle(page)
    assert page.get_by_text("Signed in as").count() == 0
    with pytest.raises(SessionEndedError):
        _actor(team_server, token)


def test_a_disabled_users_open_tab_is_refused_at_the_next_click(
    team_server: AppServer, page
) -> None:
    with Store.open(team_server.db_url) as store:
        project = store.list_projects()[0]
        dataset = store.get_dataset_by_name(project.id, "support-answers").id
        criterion = store.get_criterion_by_name(project.id, "helpfulness").id
    url = f"{team_server.url}/annotate?dataset={dataset}&criterion={criterion}"
    token = _sign_in(page, url, "dan")["value"]
    page.reload()  # the session now comes from the cookie alone
    page.get_by_text("Item 1 of 20").first.wait_for(timeout=90_000)
    wait_idle(page)
    with Store.open(team_server.db_url) as store:
        store.disable_user("dan")
    try:
        page.keyboard.press("4")  # a rating, the tab's next action
        page.get_by_role("button", name="Sign in").wait_for(timeout=90_000)
        wait_idle(page)
        assert page.get_by_text("Signed in as").count() == 0
        with Store.open(team_server.db_url) as store:
            saved = store.export_annotations(dataset_id=dataset, criterion_id=criterion)
        assert saved["annotator"].eq("dan").sum() == 0  # nothing saved
        with pytest.raises(SessionEndedError):
            _actor(team_server, token)
        page.reload()  # the cookie's session stays over
        page.get_by_role("button", name="Sign in").wait_for(timeout=90_000)
    finally:
        with Store.open(team_server.db_url) as store:
            store.disable_user("dan", False)


def _post(server: AppServer, path: str, body: str, headers: dict[str, str]) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        connection.request("POST", path, body=body, headers=headers)
        return connection.getresponse().status
    finally:
        connection.close()


def test_the_cookie_routes_refuse_forged_and_unknown_posts(team_server: AppServer) -> None:
    assert _post(team_server, "/auth/session", "a-made-up-code", {"X-Evalcore": "1"}) == 403
    assert _post(team_server, "/auth/session", "a-made-up-code", {}) == 403  # a form elsewhere
    other_site = {"X-Evalcore": "1", "Origin": "http://evil.example"}
    assert _post(team_server, "/auth/sign-out", "", other_site) == 403


def _get(server: AppServer, host: str) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        connection.request("GET", "/", headers={"Host": host})
        answer = connection.getresponse()
        return answer.status, answer.read().decode("utf-8", errors="replace")
    finally:
        connection.close()


def _websocket_status(server: AppServer, host: str) -> str:
    """The status line of a websocket handshake with this Host (Streamlit's own stream)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(
            (
                "GET /_stcore/stream HTTP/1.1\r\n"
                f"Host: {host}\r\n"
                "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode("ascii")
        )
        return s.recv(4096).decode("latin-1").splitlines()[0]


def test_a_single_user_server_answers_loopback_host_names_only(app_server: AppServer) -> None:
    port = urlsplit(app_server.url).port
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "localhost"):
        status, _ = _get(app_server, host)
        assert status == 200, host
    for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}"):
        status, text = _get(app_server, host)
        assert status == 403, host
        assert "evil.example" in text
        assert "EVALCORE_ALLOWED_HOSTS" in text
    assert " 101 " in _websocket_status(app_server, f"127.0.0.1:{port}") + " "
    assert " 403 " in _websocket_status(app_server, f"evil.example:{port}")
