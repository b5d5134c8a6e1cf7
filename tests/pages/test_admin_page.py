"""The Admin page through AppTest: users, memberships, server settings and the audit log."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from evalcore.errors import SignInError
from evalcore.store import Store
from evalcore.workflows.identity import REFUSED
from tests.pages.conftest import PASSWORD
from ui.state import Admin as K
from ui.state import key

Open = Callable[..., AppTest]


@pytest.fixture
def admin(open_app: Open) -> AppTest:
    return open_app(role="admin", user="ada", page="admin")


@pytest.fixture
def store(app_db: str) -> Store:
    opened = Store.open(app_db)
    yield opened  # type: ignore[misc]
    opened.close()


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, at.exception
    return at


def _users(at: AppTest) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if "source" in d.value.columns)


def _add(at: AppTest, name: str, role: str, password: str, again: str) -> AppTest:
    at.text_input(key=K.ADD_NAME).input(name)
    at.selectbox(key=K.ADD_ROLE).set_value(role)
    at.text_input(key=K.ADD_PASSWORD).input(password)
    at.text_input(key=K.ADD_PASSWORD2).input(again)
    next(b for b in at.button if b.label == "Add user").click().run()
    return _ok(at)


def test_only_an_admin_opens_it(open_app: Open) -> None:
    for role in ("engineer", "viewer", "annotator"):
        at = open_app(role=role, user=f"{role}-1", page="admin")
        assert [e.value for e in at.error] == [REFUSED]
        assert not at.dataframe


def test_add_a_user_with_the_password_typed_twice(admin: AppTest, store: Store) -> None:
    at = _add(admin, "lena", "annotator", PASSWORD, "another password")
    assert "passwords differ" in at.error[0].value
    assert "lena" not in _users(at)["name"].tolist()
    at = _add(at, "lena", "annotator", PASSWORD, PASSWORD)
    assert "Added 'lena' as annotator." in [s.value for s in at.success]
    row = _users(at).set_index("name").loc["lena"]
    assert row["role"] == "Annotator"
    assert row["state"] == "active"
    assert store.sign_in("lena", PASSWORD).role == "annotator"


def test_a_short_password_is_refused_with_the_stores_message(admin: AppTest) -> None:
    at = _add(admin, "tim", "viewer", "short", "short")
    assert at.error
    assert "tim" not in _users(at)["name"].tolist()


def test_role_membership_disable_and_reset(admin: AppTest, store: Store) -> None:
    at = _add(admin, "lena", "annotator", PASSWORD, PASSWORD)
    user = store.get_user("lena")
    project = store.list_projects()[0]
    at.selectbox(key=K.USER).set_value("lena").run()
    # the role everywhere
    at.selectbox(key=key(K.ROLE, user.id)).set_value("viewer")
    at.button(key=key(K.ROLE_SAVE, user.id)).click().run()
    assert store.get_user("lena").role == "viewer"
    # out of the demo project, then back in as an engineer
    at.selectbox(key=key(K.MEMBERSHIP, user.id, project.id)).set_value("(not a member)")
    at.button(key=key(K.MEMBERSHIP_SAVE, user.id)).click().run()
    assert store.actor_for("lena").role_in(project.id) is None
    _ok(at).selectbox(key=key(K.MEMBERSHIP, user.id, project.id)).set_value("engineer")
    at.button(key=key(K.MEMBERSHIP_SAVE, user.id)).click().run()
    assert store.actor_for("lena").role_in(project.id) == "engineer"
    # disabled, then enabled
    _ok(at).button(key=key(K.DISABLE, user.id)).click().run()
    assert store.get_user("lena").disabled
    with pytest.raises(SignInError):
        store.actor_for("lena")
    _ok(at).button(key=key(K.DISABLE, user.id)).click().run()
    assert not store.get_user("lena").disabled
    # a new password
    _ok(at).text_input(key=key(K.RESET_PASSWORD, user.id)).input("a brand new password")
    at.text_input(key=key(K.RESET_PASSWORD2, user.id)).input("a brand new password")
    next(b for b in at.button if b.label == "Reset password").click().run()
    assert store.sign_in("lena", "a brand new password").name == "lena"
    log = store.audit_log()
    assert {
        "user_added",
        "role_changed",
        "membership_changed",
        "user_disabled",
        "password_reset",
    } <= set(log["action"])


def test_an_admin_cannot_disable_themselves(admin: AppTest, store: Store) -> None:
    me = store.get_user("ada")
    admin.selectbox(key=K.USER).set_value("ada").run()
    assert not [b for b in admin.button if b.key == key(K.DISABLE, me.id)]


def test_server_settings_are_saved(admin: AppTest, store: Store) -> None:
    admin.text_area(key=K.KEY_NAMES).input("TEAM_GATEWAY_TOKEN\n")
    admin.text_area(key=K.HOSTS).input("api.openai.com\n.example.com")
    admin.button(key=K.SETTINGS_SAVE).click().run()
    _ok(admin)
    assert "Server settings saved." in [s.value for s in admin.success]
    assert store.get_server_setting("allowed_key_names") == ["TEAM_GATEWAY_TOKEN"]
    assert store.get_server_setting("endpoint_hosts") == ["api.openai.com", ".example.com"]
    assert store.get_server_setting("oidc_rules") == []


def test_oidc_rules_are_checked_and_saved(store: Store) -> None:
    from evalcore.workflows.admin import oidc_rules_frame, oidc_rules_from

    table = pd.DataFrame(
        [
            {"match": "domain", "value": "@Example.org", "role": "viewer", "project": ""},
            {"match": None, "value": None, "role": None, "project": None},  # an empty new row
        ]
    )
    rules = oidc_rules_from(table)
    assert rules == [
        {"match": "domain", "value": "@Example.org", "role": "viewer", "project": None}
    ]
    stored = store.set_oidc_rules(rules)
    assert oidc_rules_frame(stored).to_dict("records") == [
        {"match": "domain", "value": "example.org", "role": "viewer", "project": ""}
    ]


def test_the_audit_log_is_text_and_filters_by_action(admin: AppTest, store: Store) -> None:
    at = _add(admin, "<b>mallory</b>", "viewer", PASSWORD, PASSWORD)
    at.selectbox(key=K.AUDIT_ACTION).set_value("user_added").run()
    _ok(at)
    (log,) = [c.value for c in at.code]
    assert "user_added" in log
    assert "<b>mallory</b>" in log
    assert "sign_in" not in log.replace("user_added", "")
