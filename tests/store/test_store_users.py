"""Accounts, sign-in, memberships, OIDC rules, the audit log and server settings, on both backends."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from argon2 import PasswordHasher
from argon2.exceptions import VerifyMismatchError
from sqlalchemy import select

from evalcore.errors import (
    ConfigError,
    NotFoundError,
    PermissionDeniedError,
    SignInError,
    StoreError,
    WeakPasswordError,
)
from evalcore.store import Actor, OidcClaims, Store, check_oidc_rules
from evalcore.store._models import User, utcnow
from evalcore.store._passwords import _dummy_hash
from evalcore.store._users import (
    FAILURE_WINDOW,
    LOCK_AFTER_FAILURES,
    LOCK_DURATION,
    WRONG_CREDENTIALS,
)

PASSWORD = "correct horse battery"
WRONG = WRONG_CREDENTIALS.rstrip(".")
LOCKED = "Too many failed sign-ins for this name from your address"
ISSUER = "https://id.example.org"


def _token(
    email: str | None,
    *,
    sub: str | None = None,
    verified: bool = True,
    name: str | None = None,
    groups: tuple[str, ...] = (),
) -> OidcClaims:
    """The claims of an ID token of the test issuer (the subject defaults to the address)."""
    subject = sub if sub is not None else str(email).lower()
    return OidcClaims(ISSUER, subject, email, verified, name, groups)


def _hash_of(store: Store, name: str) -> str | None:
    with store.engine.connect() as conn:
        return conn.execute(select(User.password_hash).where(User.name == name)).scalar_one()


def _all_audit_text(store: Store) -> str:
    log = store.audit_log(limit=10_000)
    return json.dumps(log.astype(str).to_dict("records"))


# --- server settings and the audit log ------------------------------------------------------------


def test_server_settings_round_trip_and_audit_names_the_key_not_the_value(store: Store) -> None:
    assert store.get_server_setting("endpoint_hosts") is None
    assert store.get_server_setting("endpoint_hosts", []) == []
    store.set_server_setting("endpoint_hosts", ["api.example.org"])
    store.acting_as(Actor("root", "admin")).set_server_setting(
        "allowed_key_names", ["TEAM_KEY_VALUE_X"]
    )
    assert store.get_server_setting("endpoint_hosts") == ["api.example.org"]
    assert store.get_server_setting("allowed_key_names") == ["TEAM_KEY_VALUE_X"]
    store.set_server_setting("endpoint_hosts", [])  # an update, not a second row
    assert store.get_server_setting("endpoint_hosts") == []
    log = store.audit_log(action="setting_changed")
    assert list(log["target"]) == ["endpoint_hosts", "allowed_key_names", "endpoint_hosts"]
    assert list(log["actor"]) == ["system", "root", "system"]
    assert "TEAM_KEY_VALUE_X" not in _all_audit_text(store)


def test_a_setting_must_be_plain_json(store: Store) -> None:
    with pytest.raises(ConfigError, match="plain JSON"):
        store.set_server_setting("endpoint_hosts", {1, 2})
    with pytest.raises(ConfigError, match="key"):
        store.set_server_setting("  ", 1)


def test_audit_records_the_acting_user_and_the_log_filters_and_limits(store: Store) -> None:
    project = store.create_project("p")
    store.audit("export", target="report.html", project_id=project.id, detail={"rows": 3})
    store.acting_as(Actor("vic", "viewer", {project.id: "viewer"})).audit(
        "export", target="labels.csv", project_id=project.id
    )
    store.audit("deleted", target="dataset answers")
    log = store.audit_log()
    assert list(log.columns) == ["at", "actor", "action", "target", "project_id", "detail"]
    assert list(log["action"]) == ["deleted", "export", "export"]  # newest first
    exports = store.audit_log(action="export")
    assert list(exports["actor"]) == ["vic", "system"]
    assert list(exports["project_id"]) == [project.id, project.id]
    assert exports["detail"].iloc[1] == {"rows": 3}
    assert len(store.audit_log(limit=1)) == 1
    assert store.audit_log(action="nothing").empty


# --- accounts ---------------------------------------------------------------------------------------


def test_add_list_get_and_count_users(store: Store) -> None:
    first = store.create_project("first")
    second = store.create_project("second")
    assert store.count_users() == 0
    ana = store.add_user("  ana ", role="annotator", password=PASSWORD, email="Ana@Example.org")
    assert ana.name == "ana"
    assert ana.email == "ana@example.org"
    assert ana.source == "local"
    assert ana.has_password
    assert not ana.disabled
    assert not ana.is_locked()
    assert {(m.project_name, m.role) for m in ana.memberships} == {
        ("first", "annotator"),
        ("second", "annotator"),
    }  # projects=None: every existing project
    boss = store.add_user("boss", role="admin", password=PASSWORD)
    assert boss.memberships == ()  # an admin needs none
    eve = store.add_user("eve", role="engineer", projects=["second"])
    assert [m.project_id for m in eve.memberships] == [second.id]
    assert not eve.has_password
    assert store.count_users() == 3
    assert [u.name for u in store.list_users()] == ["ana", "boss", "eve"]
    assert store.get_user("ana") == ana
    assert [m.user_name for m in store.list_memberships(project_id=first.id)] == ["ana"]
    assert [m.project_name for m in store.list_memberships(user_name="eve")] == ["second"]
    with pytest.raises(NotFoundError):
        store.get_user("nobody")


def test_user_names_roles_passwords_and_projects_are_checked(store: Store) -> None:
    store.add_user("ana", role="annotator", password=PASSWORD)
    with pytest.raises(StoreError, match="already exists"):
        store.add_user(" ana", role="viewer")
    with pytest.raises(ConfigError, match="role"):
        store.add_user("bob", role="owner")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="needs a name"):
        store.add_user("   ", role="viewer")
    with pytest.raises(ConfigError, match="at most 200"):
        store.add_user("x" * 201, role="viewer")
    with pytest.raises(WeakPasswordError, match="at least 12"):
        store.add_user("bob", role="viewer", password="short")
    with pytest.raises(WeakPasswordError, match="common password"):
        store.add_user("bob", role="viewer", password="password1234")
    with pytest.raises(NotFoundError, match="no project"):
        store.add_user("bob", role="viewer", projects=["missing"])
    with pytest.raises(ConfigError, match="source"):
        store.add_user("bob", role="viewer", source="ldap")
    assert [u.name for u in store.list_users()] == ["ana"]  # nothing half-made


def test_the_hash_is_argon2id_and_never_the_password(store: Store) -> None:
    store.add_user("ana", role="viewer", password=PASSWORD)
    stored = _hash_of(store, "ana")
    assert stored is not None
    assert stored.startswith("$argon2id$")
    assert PASSWORD not in stored
    assert PasswordHasher().verify(stored, PASSWORD)
    with pytest.raises(VerifyMismatchError):
        PasswordHasher().verify(stored, PASSWORD + "!")
    assert "password_hash" not in set(vars(store.get_user("ana")))


def test_set_role_everywhere_or_in_one_project(store: Store) -> None:
    first, second = store.create_project("first"), store.create_project("second")
    store.add_user("ana", role="annotator", password=PASSWORD)
    store.set_role("ana", "viewer")
    ana = store.get_user("ana")
    assert ana.role == "viewer"
    assert {m.role for m in ana.memberships} == {"viewer"}
    store.set_role("ana", "engineer", project_id=second.id)
    actor = store.actor_for("ana")
    assert actor.memberships == {first.id: "viewer", second.id: "engineer"}
    assert actor.can("manage", second.id)
    assert not actor.can("manage", first.id)
    third = store.create_project("third")
    store.set_role("ana", "annotator", project_id=third.id)  # joins the project
    assert store.actor_for("ana").role_in(third.id) == "annotator"
    with pytest.raises(ConfigError):
        store.set_role("ana", "boss")  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        store.set_role("nobody", "viewer")


def test_memberships_are_added_changed_and_removed(store: Store) -> None:
    project = store.create_project("p")
    store.add_user("ana", role="annotator", projects=[])
    assert store.actor_for("ana").memberships == {}
    store.set_membership("ana", project.id, "annotator")
    assert store.actor_for("ana").memberships == {project.id: "annotator"}
    store.set_membership("ana", project.id, "viewer")
    assert store.actor_for("ana").role_in(project.id) == "viewer"
    store.set_membership("ana", project.id, None)
    assert store.actor_for("ana").memberships == {}
    log = store.audit_log(action="membership_changed")
    assert [(d["from"], d["to"]) for d in log["detail"]][::-1] == [
        (None, "annotator"),
        ("annotator", "viewer"),
        ("viewer", None),
    ]


def test_actor_for_reflects_a_role_change_and_refuses_disabled_or_gone(store: Store) -> None:
    project = store.create_project("p")
    store.add_user("ana", role="annotator", password=PASSWORD)
    before = store.sign_in("ana", PASSWORD)
    assert before.role == "annotator"
    assert before.memberships == {project.id: "annotator"}
    store.set_role("ana", "engineer")
    after = store.actor_for("ana")
    assert after.role == "engineer"
    assert after.can("manage", project.id)
    assert after.user_id == before.user_id
    store.disable_user("ana")
    with pytest.raises(SignInError):
        store.actor_for("ana")
    with pytest.raises(SignInError):
        store.actor_for("nobody")


# --- signing in -------------------------------------------------------------------------------------


def test_sign_in_gives_the_actor_and_records_the_time(store: Store) -> None:
    project = store.create_project("p")
    store.add_user("ana", role="annotator", password=PASSWORD)
    now = utcnow()
    actor = store.sign_in(" ana ", PASSWORD, now=now)
    assert actor == Actor("ana", "annotator", {project.id: "annotator"}, actor.user_id)
    assert store.get_user("ana").last_sign_in_at == now
    row = store.audit_log(action="sign_in").iloc[0]
    assert (row["actor"], row["target"]) == ("ana", "ana")


def test_a_wrong_name_and_a_wrong_password_look_the_same(store: Store) -> None:
    store.add_user("ana", role="viewer", password=PASSWORD)
    with pytest.raises(SignInError) as wrong_password:
        store.sign_in("ana", "not the password")
    with pytest.raises(SignInError) as wrong_name:
        store.sign_in("anna", PASSWORD)
    assert str(wrong_password.value) == str(wrong_name.value) == WRONG_CREDENTIALS
    failed = store.audit_log(action="sign_in_failed")
    assert list(failed["target"]) == ["anna", "ana"]
    assert set(failed["actor"]) == {"anonymous"}


def test_an_unknown_name_is_checked_against_a_hash_of_the_same_cost(store: Store) -> None:
    store.add_user("ana", role="viewer", password=PASSWORD)
    real, dummy = _hash_of(store, "ana"), _dummy_hash()
    assert real is not None
    # $argon2id$v=19$m=...,t=...,p=...$salt$hash: the same algorithm and parameters
    assert dummy.split("$")[1:4] == real.split("$")[1:4]


def test_a_disabled_account_gets_the_generic_message(store: Store) -> None:
    store.add_user("ana", role="viewer", password=PASSWORD)
    store.disable_user("ana")
    assert store.get_user("ana").disabled
    with pytest.raises(SignInError, match=WRONG):
        store.sign_in("ana", PASSWORD)
    store.disable_user("ana", False)
    assert store.sign_in("ana", PASSWORD).name == "ana"
    log = store.audit_log(action="user_disabled")
    assert [d["disabled"] for d in log["detail"]] == [False, True]


def test_an_account_without_a_password_cannot_sign_in_with_one(store: Store) -> None:
    store.add_user("oidc-only", role="viewer")
    with pytest.raises(SignInError, match=WRONG):
        store.sign_in("oidc-only", "")
    with pytest.raises(SignInError, match=WRONG):
        store.sign_in("oidc-only", PASSWORD)


@pytest.mark.parametrize("known", [True, False], ids=["known-name", "unknown-name"])
def test_five_failures_lock_the_name_from_that_address_for_a_minute(
    store: Store, known: bool
) -> None:
    if known:
        store.add_user("ana", role="viewer", password=PASSWORD)
    t0 = utcnow()
    for attempt in range(LOCK_AFTER_FAILURES - 1):
        with pytest.raises(SignInError, match=WRONG):
            store.sign_in(
                "ana", "wrong", client="198.51.100.9", now=t0 + timedelta(seconds=attempt)
            )
    last = t0 + timedelta(seconds=LOCK_AFTER_FAILURES - 1)
    with pytest.raises(SignInError, match=LOCKED):  # the fifth says so at once
        store.sign_in("ana", "wrong", client="198.51.100.9", now=last)
    # while locked even the right password is refused from that address
    with pytest.raises(SignInError, match=LOCKED):
        store.sign_in("ana", PASSWORD, client="198.51.100.9", now=last + timedelta(seconds=30))
    # another name from that address is not affected
    with pytest.raises(SignInError, match=WRONG):
        store.sign_in("bob", "wrong", client="198.51.100.9", now=last + timedelta(seconds=30))
    if known:
        # nor the same name from another address: the owner gets in during the lock
        owner = store.sign_in("ana", PASSWORD, client="192.0.2.1", now=last + timedelta(seconds=31))
        assert owner.name == "ana"
        # attempts during the lock did not extend it
        back = store.sign_in("ana", PASSWORD, client="198.51.100.9", now=last + LOCK_DURATION)
        assert back.name == "ana"
    else:
        with pytest.raises(SignInError, match=WRONG):  # unlocked: back to the generic message
            store.sign_in("ana", "wrong", client="198.51.100.9", now=last + LOCK_DURATION)


def test_a_success_resets_the_count_and_old_failures_expire(store: Store) -> None:
    store.add_user("ana", role="viewer", password=PASSWORD)
    t0 = utcnow()
    for i in range(LOCK_AFTER_FAILURES - 1):
        with pytest.raises(SignInError, match=WRONG):
            store.sign_in("ana", "wrong", now=t0 + timedelta(seconds=i))
    store.sign_in("ana", PASSWORD, now=t0 + timedelta(seconds=10))
    for i in range(LOCK_AFTER_FAILURES - 1):
        with pytest.raises(SignInError, match=WRONG):
            store.sign_in("ana", "wrong", now=t0 + timedelta(seconds=20 + i))
    # four more, but outside the window of the first four: still not locked
    later = t0 + timedelta(seconds=20) + FAILURE_WINDOW + timedelta(seconds=10)
    with pytest.raises(SignInError, match=WRONG):
        store.sign_in("ana", "wrong", now=later)
    assert store.sign_in_locks(now=later) == []


def test_a_password_reset_lifts_a_lock(store: Store) -> None:
    store.add_user("ana", role="viewer", password=PASSWORD)
    t0 = utcnow()
    for i in range(LOCK_AFTER_FAILURES):
        with pytest.raises(SignInError):
            store.sign_in("ana", "wrong", now=t0 + timedelta(seconds=i))
    store.reset_password("ana", "a brand new one")
    stored = _hash_of(store, "ana")
    assert stored is not None
    assert stored.startswith("$argon2id$")
    assert store.sign_in("ana", "a brand new one").name == "ana"
    assert store.sign_in_locks() == []
    with pytest.raises(SignInError, match=WRONG):
        store.sign_in("ana", PASSWORD)
    with pytest.raises(WeakPasswordError, match="at least 12"):
        store.reset_password("ana", "short")
    with pytest.raises(WeakPasswordError, match="easy to guess"):
        store.reset_password("ana", "ana ana ana ana")  # the name, repeated
    assert store.sign_in("ana", "a brand new one").name == "ana"  # still the old one


def test_an_old_hash_is_upgraded_on_sign_in(store: Store) -> None:
    store.add_user("ana", role="viewer", password=PASSWORD)
    weak = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1).hash(PASSWORD)
    with store.engine.begin() as conn:
        conn.execute(User.__table__.update().where(User.name == "ana").values(password_hash=weak))
    store.sign_in("ana", PASSWORD)
    upgraded = _hash_of(store, "ana")
    assert upgraded != weak
    assert upgraded is not None
    assert not PasswordHasher().check_needs_rehash(upgraded)


# --- OIDC -------------------------------------------------------------------------------------------


def test_oidc_rules_are_checked_and_normalised(store: Store) -> None:
    with pytest.raises(ConfigError, match="match"):
        check_oidc_rules([{"match": "claim", "value": "x", "role": "viewer"}])
    with pytest.raises(ConfigError, match="role"):
        store.set_server_setting("oidc_rules", [{"match": "email", "value": "a@b", "role": "boss"}])
    with pytest.raises(ConfigError, match="unknown keys"):
        store.set_oidc_rules([{"match": "email", "value": "a@b", "role": "viewer", "x": 1}])
    with pytest.raises(ConfigError, match="value"):
        store.set_oidc_rules([{"match": "group", "value": " ", "role": "viewer"}])
    with pytest.raises(ConfigError, match="list"):
        store.set_oidc_rules("everyone")  # type: ignore[arg-type]
    stored = store.set_oidc_rules([{"match": "domain", "value": "@Example.ORG", "role": "viewer"}])
    assert stored == [
        {"match": "domain", "value": "example.org", "role": "viewer", "project": None}
    ]
    assert store.get_server_setting("oidc_rules") == stored


def test_oidc_sign_in_by_email_domain_and_group(store: Store) -> None:
    first, second = store.create_project("first"), store.create_project("second")
    store.set_oidc_rules(
        [
            {"match": "domain", "value": "example.org", "role": "annotator"},
            {"match": "email", "value": "Boss@Example.org", "role": "admin"},
            {"match": "group", "value": "graders", "role": "viewer"},
            {"match": "group", "value": "prompts", "role": "engineer", "project": "second"},
        ]
    )
    ann = store.oidc_sign_in(_token("Ann@EXAMPLE.org"))
    assert ann.name == "ann@example.org"  # named by the verified address
    assert ann.role == "annotator"
    assert ann.memberships == {first.id: "annotator", second.id: "annotator"}
    boss = store.oidc_sign_in(_token("boss@example.org", name="The Boss"))
    assert boss.name == "boss@example.org"  # never by the display name
    assert boss.is_admin
    grader = store.oidc_sign_in(_token("gail@elsewhere.net", groups=("graders",)))
    assert grader.role == "viewer"
    assert grader.memberships == {
        first.id: "viewer",
        second.id: "viewer",
    }
    # the most privileged matching rule wins, per project
    pat = store.oidc_sign_in(_token("pat@example.org", groups=("prompts",)))
    assert pat.memberships == {first.id: "annotator", second.id: "engineer"}
    assert pat.role == "annotator"
    user = store.get_user("pat@example.org")
    assert user.source == "oidc"
    assert not user.has_password
    # a project-only rule: a member of that project only, never a server admin
    store.set_oidc_rules(
        [{"match": "group", "value": "leads", "role": "admin", "project": "first"}]
    )
    lead = store.oidc_sign_in(_token("lee@other.net", groups=("leads",)))
    assert lead.memberships == {first.id: "admin"}
    assert not lead.is_admin
    assert lead.can("admin", first.id)
    assert lead.role_in(second.id) is None


def test_oidc_sign_in_without_a_matching_rule_is_refused(store: Store) -> None:
    store.set_oidc_rules([{"match": "domain", "value": "example.org", "role": "viewer"}])
    with pytest.raises(SignInError, match="an admin has to give this address a role"):
        store.oidc_sign_in(_token("someone@example.com", groups=("example.org",)))
    assert store.count_users() == 0
    failed = store.audit_log(action="sign_in_failed").iloc[0]
    assert failed["target"] == "someone@example.com"
    assert failed["detail"]["method"] == "oidc"
    assert failed["detail"]["reason"] == "no_rule"


def test_the_last_admin_cannot_be_demoted_or_disabled(store: Store) -> None:
    store.add_user("root", role="admin", password=PASSWORD)
    with pytest.raises(StoreError, match="last admin"):
        store.set_role("root", "engineer")
    with pytest.raises(StoreError, match="last admin"):
        store.disable_user("root")
    store.add_user("second", role="admin")
    store.set_role("root", "engineer")
    assert not store.actor_for("root").is_admin
    with pytest.raises(StoreError, match="last admin"):
        store.disable_user("second")


def test_oidc_sign_in_updates_the_role_and_respects_disabling(store: Store) -> None:
    project = store.create_project("p")
    store.set_oidc_rules([{"match": "email", "value": "ann@example.org", "role": "annotator"}])
    first = store.oidc_sign_in(_token("ann@example.org"))
    store.set_oidc_rules([{"match": "email", "value": "ann@example.org", "role": "engineer"}])
    again = store.oidc_sign_in(_token("ANN@example.org"))
    assert again.user_id == first.user_id
    assert again.role == "engineer"
    assert again.memberships == {project.id: "engineer"}
    assert store.count_users() == 1
    store.disable_user("ann@example.org")
    with pytest.raises(SignInError, match="disabled"):
        store.oidc_sign_in(_token("ann@example.org"))
    assert store.audit_log(action="sign_in_failed")["detail"].iloc[0]["reason"] == "disabled"
    actions = set(store.audit_log()["action"])
    assert {"user_added", "role_changed", "membership_changed", "sign_in"} <= actions


def test_oidc_does_not_take_over_a_local_account_of_another_address(store: Store) -> None:
    store.add_user("ann@example.org", role="viewer", email="ann@elsewhere.net")
    store.set_oidc_rules([{"match": "domain", "value": "example.org", "role": "engineer"}])
    with pytest.raises(SignInError, match="belongs to someone else"):
        store.oidc_sign_in(_token("ann@example.org"))
    assert store.get_user("ann@example.org").role == "viewer"
    assert store.audit_log(action="sign_in_failed")["detail"].iloc[0]["reason"] == "name_taken"


def test_the_display_name_never_finds_an_account(store: Store) -> None:
    """The takeover of issue 19: "admin" as a display name, with a new or unverified address."""
    store.add_user("admin", role="admin", password=PASSWORD)  # made by `evalcore users add`
    store.set_oidc_rules([{"match": "domain", "value": "example.org", "role": "viewer"}])
    unverified = _token("mallory@example.org", verified=False, name="admin")
    with pytest.raises(SignInError, match=r"has not verified the address mallory@example\.org"):
        store.oidc_sign_in(unverified)
    assert store.count_users() == 1
    # verified and new: an account of its own, named by the address, with the rule's role
    mallory = store.oidc_sign_in(_token("mallory@example.org", name="admin"))
    assert (mallory.name, mallory.role) == ("mallory@example.org", "viewer")
    admin = store.get_user("admin")
    assert (admin.role, admin.disabled, admin.email) == ("admin", False, None)
    refused = store.audit_log(action="sign_in_failed").iloc[0]["detail"]
    assert (refused["reason"], refused["display_name"]) == ("unverified", "admin")


def test_an_unverified_address_never_matches_an_existing_account(store: Store) -> None:
    store.add_user("root", role="admin", password=PASSWORD, email="root@example.org")
    store.set_oidc_rules([{"match": "domain", "value": "example.org", "role": "viewer"}])
    with pytest.raises(SignInError, match="has not verified"):
        store.oidc_sign_in(_token("root@example.org", sub="attacker", verified=False))
    with pytest.raises(SignInError, match="no verified e-mail address"):
        store.oidc_sign_in(_token(None, sub="attacker", groups=("staff",)))
    root = store.get_user("root")
    assert (root.role, root.source) == ("admin", "local")
    with store.engine.connect() as conn:
        bound = conn.execute(select(User.oidc_subject).where(User.name == "root")).scalar_one()
    assert bound is None


def test_a_verified_address_binds_a_local_account_which_keeps_its_role(store: Store) -> None:
    store.add_user("root", role="admin", password=PASSWORD, email="Root@Example.org")
    # the rule would make example.org viewers: it does not touch an account an admin made
    store.set_oidc_rules([{"match": "domain", "value": "example.org", "role": "viewer"}])
    root = store.oidc_sign_in(_token("root@example.org", sub="s-1"))
    assert (root.name, root.role) == ("root", "admin")
    bound = store.audit_log(action="oidc_bound").iloc[0]
    assert bound["detail"] == {"issuer": ISSUER, "subject": "s-1", "by": "email"}
    # later the provider's address changes, even unverified: the subject still finds the account
    again = store.oidc_sign_in(_token("r.oot@example.net", sub="s-1", verified=False))
    assert again.user_id == root.user_id
    assert store.get_user("root").email == "root@example.org"  # unverified: not taken over
    # another subject with the same verified address cannot take the bound account
    with pytest.raises(SignInError, match="linked to another single sign-on identity"):
        store.oidc_sign_in(_token("root@example.org", sub="s-2"))
    # and the same subject of another issuer is another identity
    other_issuer = OidcClaims("https://evil.example.net", "s-1", "x@example.net", True)
    with pytest.raises(SignInError, match="No role is set"):
        store.oidc_sign_in(other_issuer)
    assert store.count_users() == 1


def test_oidc_claims_are_read_from_a_token_mapping(store: Store) -> None:
    store.set_oidc_rules([{"match": "group", "value": "graders", "role": "annotator"}])
    claims = {
        "iss": ISSUER,
        "sub": "77",
        "email": "gus@example.org",
        "email_verified": True,
        "name": "Gus",
        "roles": "graders, other",
        "is_logged_in": True,
    }
    actor = store.oidc_sign_in(claims)
    assert (actor.name, actor.role) == ("gus@example.org", "annotator")
    for broken, message in (
        ({"sub": "77", "email": "gus@example.org"}, "no 'iss' claim"),
        ({"iss": ISSUER, "sub": " "}, "no 'sub' claim"),
        ({"iss": ISSUER, "sub": "77", "email": ["a@b"]}, "'email' claim is not text"),
    ):
        with pytest.raises(SignInError, match=message):
            store.oidc_sign_in(broken)
    with pytest.raises(ConfigError, match="not an e-mail address"):
        store.oidc_sign_in("gus@example.org")  # type: ignore[arg-type]
    assert (
        OidcClaims.from_claims({"iss": "i", "sub": "s", "email_verified": "yes"}).email_verified
        is False
    )


def test_an_oidc_rule_never_demotes_the_last_admin(store: Store) -> None:
    store.set_oidc_rules([{"match": "email", "value": "boss@example.org", "role": "admin"}])
    boss = store.oidc_sign_in(_token("boss@example.org"))
    assert boss.is_admin
    # the rule changes: boss is the only admin, so the rule's role is not applied
    store.set_oidc_rules([{"match": "email", "value": "boss@example.org", "role": "viewer"}])
    again = store.oidc_sign_in(_token("boss@example.org"))
    assert again.is_admin
    kept = store.audit_log(action="role_kept").iloc[0]["detail"]
    assert (kept["rule"], kept["reason"]) == ("viewer", "last_admin")
    # with another admin, the rule applies
    store.add_user("root", role="admin", password=PASSWORD)
    assert store.oidc_sign_in(_token("boss@example.org")).role == "viewer"


def test_memberships_never_take_the_server_admin_role(store: Store) -> None:
    project = store.create_project("p")
    store.add_user("root", role="admin", password=PASSWORD)
    store.set_membership("root", project.id, "viewer")
    store.set_role("root", "annotator", project_id=project.id)
    store.set_membership("root", project.id, None)
    assert store.actor_for("root").is_admin


def test_two_demotions_at_once_leave_an_admin(store: Store) -> None:
    store.add_user("a1", role="admin")
    store.add_user("a2", role="admin")
    barrier = threading.Barrier(2)

    def demote(name: str) -> str:
        barrier.wait()
        try:
            store.set_role(name, "viewer")
        except StoreError as exc:
            return str(exc)
        return "ok"

    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(demote, ["a1", "a2"]))
    assert outcomes.count("ok") == 1
    assert any("last admin" in o for o in outcomes)
    assert sum(u.role == "admin" for u in store.list_users()) == 1


# --- the audit trail of every change ------------------------------------------------------------------


def test_every_change_is_audited_and_no_password_is_in_any_detail(store: Store) -> None:
    project = store.create_project("p")
    admin = store.acting_as(Actor.system("cli:tester"))
    admin.add_user("ana", role="annotator", password=PASSWORD)
    admin.set_role("ana", "viewer")
    admin.set_role("ana", "engineer", project_id=project.id)
    admin.set_membership("ana", project.id, "annotator")
    admin.disable_user("ana")
    admin.disable_user("ana", False)
    admin.reset_password("ana", "another password")
    store.sign_in("ana", "another password")
    with pytest.raises(SignInError):
        store.sign_in("ana", PASSWORD)
    log = store.audit_log()
    by_cli = log[log["actor"] == "cli:tester"]
    assert list(by_cli["action"])[::-1] == [
        "user_added",
        "role_changed",
        "role_changed",
        "membership_changed",
        "user_disabled",
        "user_disabled",
        "password_reset",
    ]
    assert set(by_cli["target"]) == {"ana"}
    text = _all_audit_text(store)
    stored = _hash_of(store, "ana")
    assert stored is not None
    for secret in (PASSWORD, "another password", stored, "$argon2"):
        assert secret not in text


# --- who may call what --------------------------------------------------------------------------------


def test_non_admins_may_not_manage_users_or_read_the_log(store: Store) -> None:
    project = store.create_project("p")
    store.add_user("ana", role="annotator", password=PASSWORD)
    store.add_user("bob", role="engineer", password=PASSWORD)
    for actor in (
        Actor("ana", "annotator", {}),
        Actor("bob", "engineer", {project.id: "engineer"}),
    ):
        guarded = store.acting_as(actor)
        calls = [
            lambda g=guarded: g.add_user("x", role="viewer"),
            lambda g=guarded: g.list_users(),
            lambda g=guarded: g.get_user("ana"),
            lambda g=guarded: g.set_role("ana", "admin"),
            lambda g=guarded: g.set_membership("ana", project.id, "admin"),
            lambda g=guarded: g.list_memberships(project_id=project.id),
            lambda g=guarded: g.disable_user("ana"),
            lambda g=guarded: g.reset_password("ana", "taken over!"),
            lambda g=guarded: g.audit_log(),
            lambda g=guarded: g.set_server_setting("endpoint_hosts", []),
            lambda g=guarded: g.set_oidc_rules([]),
            lambda g=guarded: g.actor_for("someone-else"),
        ]
        for call in calls:
            with pytest.raises(PermissionDeniedError):
                call()
        # what everyone may do
        guarded.audit("export", target="x")
        assert guarded.get_server_setting("endpoint_hosts", ["any"]) == ["any"]
        assert guarded.count_users() == 2
    assert store.acting_as(Actor("ana", "annotator", {})).actor_for("ana").name == "ana"
    assert store.get_user("ana").role == "annotator"  # nothing changed


def test_a_project_admin_manages_only_their_project_members(store: Store) -> None:
    mine, other = store.create_project("mine"), store.create_project("other")
    store.add_user("ana", role="annotator", projects=[])
    lead = store.acting_as(Actor("lee", "engineer", {mine.id: "admin", other.id: "engineer"}))
    lead.set_membership("ana", mine.id, "annotator")
    assert [m.user_name for m in lead.list_memberships(project_id=mine.id)] == ["ana"]
    with pytest.raises(PermissionDeniedError):
        lead.set_membership("ana", other.id, "annotator")
    with pytest.raises(PermissionDeniedError):
        lead.list_memberships(project_id=other.id)
    with pytest.raises(PermissionDeniedError):
        lead.list_memberships()
