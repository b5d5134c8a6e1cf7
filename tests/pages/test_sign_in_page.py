"""Signing in and out through AppTest: the form, lockout, disabled accounts, the idle timeout,
identity in the URL (ignored), single-user mode and the refusal to serve without an account."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from evalcore.errors import SessionEndedError, SignInError
from evalcore.store import Store
from evalcore.workflows import Session, identity
from evalcore.workflows._server import IDLE_ENV
from tests.pages.conftest import APP, PASSWORD, sign_in
from ui.render import WORD_JOINER
from ui.state import App


@pytest.fixture
def accounts(app_db: str) -> Store:
    """The demo, an engineer ``eve`` and an annotator ``ann`` (members of the demo project)."""
    sign_in(AppTest.from_file(APP), "eve", "engineer")
    sign_in(AppTest.from_file(APP), "ann", "annotator")
    store = Store.open(app_db)
    yield store  # type: ignore[misc]
    store.close()


def _fresh() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception, at.exception
    return at


def _submit(at: AppTest, name: str, password: str) -> AppTest:
    at.text_input(key=App.SIGN_IN_NAME).input(name)
    at.text_input(key=App.SIGN_IN_PASSWORD).input(password)
    at.button[0].click().run()  # the form's "Sign in"
    assert not at.exception, at.exception
    return at


def _errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


def _signed_in_as(at: AppTest) -> str:
    return " ".join(c.value for c in at.sidebar.caption)


def _idle_for(store: Store, name: str, minutes: float) -> None:
    """As if the user's sessions had seen no activity for ``minutes``."""
    then = (datetime.now(UTC) - timedelta(minutes=minutes)).replace(tzinfo=None)
    with store.engine.begin() as conn:
        conn.execute(
            sa.text(
                "UPDATE user_sessions SET last_active_at = :t "
                "WHERE user_id = (SELECT id FROM users WHERE name = :n)"
            ),
            {"t": then, "n": name},
        )


def _methods(store: Store, name: str) -> list[str]:
    with store.engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT method FROM user_sessions WHERE ended_at IS NULL AND "
                "user_id = (SELECT id FROM users WHERE name = :n)"
            ),
            {"n": name},
        )
        return [r[0] for r in rows]


def _wrong_message(store: Store) -> str:
    with pytest.raises(SignInError) as caught:
        store.sign_in("nobody-at-all", "not the password")
    return str(caught.value)


def test_the_form_asks_for_a_name_and_a_password(accounts: Store) -> None:
    at = _fresh()
    assert [t.label for t in at.text_input] == ["Name", "Password"]
    assert at.text_input(key=App.SIGN_IN_PASSWORD).proto.type == 1  # PASSWORD
    assert [b.label for b in at.button] == ["Sign in"]
    assert not at.sidebar.button  # no sign-out before a sign-in


def test_a_wrong_password_then_the_right_one(accounts: Store) -> None:
    at = _submit(_fresh(), "eve", "not her password")
    assert _errors(at) == [_wrong_message(accounts)]
    assert App.TOKEN not in at.session_state
    at = _submit(at, "eve", PASSWORD)
    assert _errors(at) == []
    assert "Signed in as **eve** · Prompt engineer" in _signed_in_as(at)
    assert at.session_state[App.TOKEN]  # a session's token; the server keeps only its hash
    assert set(_methods(accounts, "eve")) == {"password"}
    assert "user" not in at.query_params
    assert "role" not in at.query_params
    actions = accounts.audit_log(action="sign_in")["target"].tolist()
    assert "eve" in actions


def test_a_wrong_name_reads_like_a_wrong_password(accounts: Store) -> None:
    at = _submit(_fresh(), "nobody", PASSWORD)
    assert _errors(at) == [_wrong_message(accounts)]


def test_five_failures_lock_the_name_for_a_minute(accounts: Store) -> None:
    at = _fresh()
    for _ in range(5):
        at = _submit(at, "ann", "wrong password")
    at = _submit(at, "ann", PASSWORD)  # the right one, too late
    (message,) = _errors(at)
    assert "locked for a minute" in message
    assert App.TOKEN not in at.session_state
    # the message is the same for a name that does not exist
    for _ in range(6):
        other = _submit(_fresh(), "ghost", "wrong password")
    assert _errors(other) == [message]


def test_a_disabled_account_cannot_sign_in_and_is_signed_out(accounts: Store) -> None:
    at = _submit(_fresh(), "ann", PASSWORD)
    assert "Signed in as **ann**" in _signed_in_as(at)
    accounts.disable_user("ann")
    at.run()  # the next click of any kind
    assert App.TOKEN not in at.session_state
    assert [t.label for t in at.text_input] == ["Name", "Password"]
    assert "Your account was disabled" in " ".join(w.value for w in at.warning)
    again = _submit(_fresh(), "ann", PASSWORD)
    assert _errors(again) == [_wrong_message(accounts)]


def test_the_role_in_the_url_is_ignored_and_removed(accounts: Store) -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params = {"user": "eve", "role": "engineer"}
    at.run()
    assert [b.label for b in at.button] == ["Sign in"]  # nobody is signed in by an address
    assert "user" not in at.query_params
    assert "role" not in at.query_params
    # signed in as an annotator, ?role=engineer changes nothing
    at = _submit(at, "ann", PASSWORD)
    at.query_params = {"role": "engineer", "user": "eve"}
    at.switch_page("pages/judge.py").run()
    assert _errors(at) == [identity.REFUSED]
    assert "Signed in as **ann** · Annotator" in _signed_in_as(at)
    assert "role" not in at.query_params


def test_an_idle_session_is_signed_out(accounts: Store) -> None:
    at = _submit(_fresh(), "eve", PASSWORD)
    _idle_for(accounts, "eve", 61)
    at.run()
    assert App.TOKEN not in at.session_state
    assert "signed out after a time without activity" in " ".join(w.value for w in at.warning)
    assert [b.label for b in at.button] == ["Sign in"]


def test_the_idle_time_is_configurable(accounts: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(IDLE_ENV, "5")
    at = _submit(_fresh(), "eve", PASSWORD)
    _idle_for(accounts, "eve", 4)
    at.run()
    assert "Signed in as **eve**" in _signed_in_as(at)  # four minutes: still in
    _idle_for(accounts, "eve", 6)
    at.run()
    assert App.TOKEN not in at.session_state


def test_a_bad_idle_time_is_a_clear_message(
    accounts: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(IDLE_ENV, "soon")
    at = sign_in(AppTest.from_file(APP, default_timeout=120), "eve").run()
    assert not at.exception
    assert any(IDLE_ENV in e.value and "positive number" in e.value for e in at.error)


def test_sign_out_ends_the_session(accounts: Store) -> None:
    before = len(_methods(accounts, "eve"))
    at = _submit(_fresh(), "eve", PASSWORD)
    assert len(_methods(accounts, "eve")) == before + 1
    at.switch_page("pages/reports.py").run()
    at.sidebar.button(key=App.SIGN_OUT).click().run()
    assert not at.exception, at.exception
    assert App.TOKEN not in at.session_state
    assert [b.label for b in at.button] == ["Sign in"]
    assert "You signed out." in [i.value for i in at.info]
    assert len(_methods(accounts, "eve")) == before  # ended on the server too


def test_single_user_mode_opens_the_demo_as_admin(single_user_app) -> None:
    at = single_user_app()
    assert "single-user mode: no sign-in" in _signed_in_as(at)
    assert not at.text_input  # no sign-in form
    assert not at.sidebar.button  # and nothing to sign out of
    assert at.title[0].value  # the demo project's Home
    admin = single_user_app(page="admin")
    assert [t.value for t in admin.title] == ["Admin"]


def test_single_user_mode_ends_with_the_first_account(single_user_app, app_db: str) -> None:
    at = single_user_app()
    with Store.open(app_db) as store:
        store.add_user("root", role="admin", password=PASSWORD)
    at.run()
    assert [b.label for b in at.button] == ["Sign in"]


def test_no_account_and_not_on_loopback_is_refused(app_db: str) -> None:
    at = _fresh()  # AppTest's server address is unset: every interface
    (message,) = _errors(at)
    assert "evalcore users add NAME --role admin --password-env VAR" in message
    assert not at.text_input


AUTH = {
    "redirect_uri": "http://localhost:8501/oauth2callback",
    "cookie_secret": "a cookie secret for the test",
    "client_id": "evalcore",
    "client_secret": "not a real secret",
    "server_metadata_url": "https://id.example.org/.well-known/openid-configuration",
}


def test_oidc_maps_the_address_to_a_role_and_signs_out(accounts: Store) -> None:
    accounts.set_oidc_rules([{"match": "domain", "value": "example.org", "role": "annotator"}])
    at = AppTest.from_file(APP, default_timeout=120)
    at.secrets = {"auth": AUTH}
    at.user = {"is_logged_in": False}
    at.run()
    assert "Sign in with your organisation's account" in [b.label for b in at.button]
    # back from the identity provider
    at.user = {
        "is_logged_in": True,
        "iss": "https://id.example.org",
        "sub": "rita-0001",
        "email": "Rita@Example.org",
        "email_verified": True,
        "name": "rita",
    }
    at.run()
    assert not at.exception, at.exception
    # a new account is named by the verified address, never by the display name
    assert "Signed in as **rita@example.org** · Annotator" in _signed_in_as(at).replace(
        WORD_JOINER, ""
    )
    assert _methods(accounts, "rita@example.org") == ["oidc"]
    assert accounts.get_user("rita@example.org").source == "oidc"
    at.sidebar.button(key=App.SIGN_OUT).click().run()
    assert App.TOKEN not in at.session_state
    assert [t.label for t in at.text_input] == ["Name", "Password"]


def test_oidc_without_a_matching_rule_is_refused_with_the_reason(accounts: Store) -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    at.secrets = {"auth": AUTH}
    at.user = {
        "is_logged_in": True,
        "iss": "https://id.example.org",
        "sub": "stranger-1",
        "email": "stranger@elsewhere.net",
        "email_verified": True,
    }
    at.run()
    assert not at.exception, at.exception
    assert App.TOKEN not in at.session_state
    shown = " ".join(e.value for e in at.error).replace(WORD_JOINER, "")  # no mailto: link
    assert "No role is set for stranger@elsewhere.net" in shown


def _posted(at: AppTest) -> list[str]:
    """What the page's scripts post (st.html with JavaScript): ``[(path, body)]`` as text."""
    return [h.proto.body for h in at.get("html")]


def test_the_page_hands_the_session_to_the_cookie_once(accounts: Store) -> None:
    from ui import resources

    at = _submit(_fresh(), "eve", PASSWORD)
    token = at.session_state[App.TOKEN]
    (script,) = _posted(at)
    assert 'fetch("/auth/session"' in script
    assert "'X-Evalcore': '1'" in script
    assert token not in script  # the token never reaches the page, only a one-time code
    found = re.search(r'body: "([A-Za-z0-9_-]+)"', script)
    assert found is not None
    assert identity.redeem(resources.server(), found.group(1)).token == token
    at.run()
    assert _posted(at) == []  # posted once
    at.sidebar.button(key=App.SIGN_OUT).click().run()
    (script,) = _posted(at)
    assert 'fetch("/auth/sign-out"' in script
    with pytest.raises(SessionEndedError):
        identity.visit(Session(resources.server(), token))
