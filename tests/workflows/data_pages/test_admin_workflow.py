"""evalcore.workflows.admin: accounts, memberships, server settings and the audit log, for server
admins only, checked at every call."""

from __future__ import annotations

import pandas as pd
import pytest

from evalcore.errors import ConfigError, PermissionDeniedError, SessionEndedError, SignInError
from evalcore.workflows import admin
from tests.workflows.data_pages.conftest import PASSWORD, People, refused

NOT_ADMINS = ("engineer", "project_admin", "viewer", "annotator", "outsider", "disabled", "ended")


def test_users_lists_every_account_with_its_state(people: People) -> None:
    found = admin.users(people["admin"])
    table = found.table.set_index("name")
    assert table.loc["dan", "state"] == "disabled"
    assert table.loc["ada", "role"] == "Admin"
    assert "Northwind" in table.loc["eve", "projects"]
    assert found.me == "ada"
    assert not found.may_disable(found.user("ada"))  # type: ignore[arg-type]
    assert found.membership(found.user("eve"), people.project_id) == "engineer"  # type: ignore[arg-type]
    assert found.membership(found.user("eve"), people.other_project_id) == admin.NO_ROLE  # type: ignore[arg-type]
    refused(admin.users, people, NOT_ADMINS)


def test_add_user_needs_the_password_twice_and_an_admin(people: People) -> None:
    with pytest.raises(ConfigError, match="passwords differ"):
        admin.add_user(people["admin"], "lena", role="annotator", password=PASSWORD, again="x")
    assert "lena" not in [u.name for u in people.store.list_users()]
    done = admin.add_user(
        people["admin"], "lena", role="annotator", password=PASSWORD, again=PASSWORD
    )
    assert done == "Added 'lena' as annotator."
    assert people.store.sign_in("lena", PASSWORD).role == "annotator"
    refused(
        lambda s: admin.add_user(s, "mo", role="viewer", password=PASSWORD, again=PASSWORD),
        people,
        NOT_ADMINS,
    )
    assert "mo" not in [u.name for u in people.store.list_users()]


def test_role_memberships_disable_and_reset(people: People) -> None:
    s = people["admin"]
    assert admin.set_role(s, "eve", "viewer") == "eve is now viewer."
    assert people.store.actor_for("eve").role_in(people.project_id) == "viewer"
    done = admin.save_memberships(
        s, "eve", {people.project_id: admin.NO_ROLE, people.other_project_id: "engineer"}
    )
    assert "2 changes" in done
    actor = people.store.actor_for("eve")
    assert (actor.role_in(people.project_id), actor.role_in(people.other_project_id)) == (
        None,
        "engineer",
    )
    assert "0 changes" in admin.save_memberships(s, "eve", {people.other_project_id: "engineer"})
    with pytest.raises(ConfigError):
        admin.save_memberships(s, "eve", {people.project_id: "admin"})  # admin is server-wide
    assert admin.set_disabled(s, "vic", True) == "vic can no longer sign in."
    with pytest.raises(SessionEndedError):  # vic's open session ends at its next call
        admin.audit(people["viewer"])
    with pytest.raises(ConfigError, match="your own account"):
        admin.set_disabled(s, "ada", True)
    admin.set_disabled(s, "vic", False)
    with pytest.raises(ConfigError, match="passwords differ"):
        admin.reset_password(s, "vic", "a brand new password", "another one")
    admin.reset_password(s, "vic", "a brand new password", "a brand new password")
    assert people.store.sign_in("vic", "a brand new password").name == "vic"
    for command in (
        lambda x: admin.set_role(x, "ann", "admin"),
        lambda x: admin.save_memberships(x, "ann", {people.project_id: admin.NO_ROLE}),
        lambda x: admin.set_disabled(x, "ann", True),
        lambda x: admin.reset_password(x, "ann", "x" * 20, "x" * 20),
    ):
        refused(command, people, NOT_ADMINS)
    ann = people.store.get_user("ann")
    assert (ann.role, ann.disabled) == ("annotator", False)
    with pytest.raises(SignInError):
        people.store.sign_in("ann", "x" * 20)


def test_server_settings_round_trip_and_bad_rules_write_nothing(people: People) -> None:
    s = people["admin"]
    rules = pd.DataFrame(
        [
            {"match": "domain", "value": "@Example.org", "role": "viewer", "project": ""},
            {"match": None, "value": None, "role": None, "project": None},  # an empty new row
        ]
    )
    assert admin.save_server_settings(s, rules, "TEAM_GATEWAY_TOKEN\n", "api.openai.com\n") == (
        "Server settings saved."
    )
    found = admin.server_settings(s)
    assert found.oidc_rules.to_dict("records") == [
        {"match": "domain", "value": "example.org", "role": "viewer", "project": ""}
    ]
    assert (found.key_names, found.hosts) == ("TEAM_GATEWAY_TOKEN", "api.openai.com")
    bad = pd.DataFrame([{"match": "phone", "value": "1", "role": "viewer", "project": ""}])
    with pytest.raises(ConfigError, match="match is one of"):
        admin.save_server_settings(s, bad, "OTHER_NAME", "")
    assert people.store.get_server_setting("allowed_key_names") == ["TEAM_GATEWAY_TOKEN"]
    refused(lambda x: admin.server_settings(x), people, NOT_ADMINS)
    refused(lambda x: admin.save_server_settings(x, rules, "X_TOKEN", ""), people, NOT_ADMINS)
    assert people.store.get_server_setting("allowed_key_names") == ["TEAM_GATEWAY_TOKEN"]


def test_the_audit_log_as_text_filtered_by_action(people: People) -> None:
    s = people["admin"]
    admin.add_user(s, "<b>mallory</b>", role="viewer", password=PASSWORD, again=PASSWORD)
    found = admin.audit(s, "user_added")
    assert found.entries >= 1
    assert "<b>mallory</b>" in found.text
    assert all("user_added" in line for line in found.text.splitlines())
    refused(lambda x: admin.audit(x), people, NOT_ADMINS)


def test_an_admin_demoted_meanwhile_is_refused_at_the_next_click(people: People) -> None:
    s = people["admin"]
    people.store.set_role("ada", "engineer")
    with pytest.raises(PermissionDeniedError):
        admin.add_user(s, "zoe", role="viewer", password=PASSWORD, again=PASSWORD)
    assert "zoe" not in [u.name for u in people.store.list_users()]
