"""Endpoints under the server's policy, on SQLite and PostgreSQL: which key variables, hosts and
headers an endpoint may be saved with, what the audit log keeps, and what a run does with a row that
was saved before the policy existed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from evalcore.errors import ConfigError, PermissionDeniedError
from evalcore.labels import LIKERT_5
from evalcore.runs import api_key_is_set, execute_run, plan_run, try_version
from evalcore.store import Actor, JudgeRunRecord, Store
from evalcore.store._models import Endpoint, utcnow
from evalcore.testing import FakeOpenAI
from tests.runs.test_runs_service import FAST, TEMPLATE

DATABASE_SECRET = "postgresql://evalcore:db-password-canary-5d1f@db.internal/evalcore"
GENERIC = "the endpoint's API key is not available on the server; ask an admin to check endpoint"


def _endpoints(store: Store) -> list[str]:
    return [e.name for e in store.list_endpoints()]


# --- key variable names -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["EVALCORE_DATABASE_URL", "DATABASE_URL", "PGPASSWORD", "AWS_SECRET_ACCESS_KEY"]
)
def test_a_denied_key_variable_is_refused_even_when_an_admin_allows_it(
    store: Store, name: str
) -> None:
    store.set_server_setting("allowed_key_names", [name])
    with pytest.raises(ConfigError, match="never allowed"):
        store.upsert_endpoint("leak", base_url="https://evil.test/v1", api_key_env=name)
    assert _endpoints(store) == []
    assert store.audit_log(action="endpoint_changed").empty


def test_other_names_need_an_admin_to_allow_them(store: Store) -> None:
    with pytest.raises(ConfigError, match="An admin can allow another name"):
        store.upsert_endpoint("hf", base_url="https://hf.test/v1", api_key_env="HF_TOKEN")
    assert _endpoints(store) == []
    store.set_server_setting("allowed_key_names", ["HF_TOKEN"])
    saved = store.upsert_endpoint("hf", base_url="https://hf.test/v1", api_key_env="HF_TOKEN")
    assert saved.api_key_env == "HF_TOKEN"
    assert store.upsert_endpoint("o", api_key_env="openai.api_key").api_key_env == "openai.api_key"
    assert store.upsert_endpoint("local", api_key_env="  ").api_key_env is None


def test_only_admins_save_endpoints(store: Store) -> None:
    project = store.create_project("p")
    engineer = store.acting_as(
        Actor(name="eve", role="engineer", memberships={project.id: "engineer"})
    )
    with pytest.raises(PermissionDeniedError):
        engineer.upsert_endpoint("e", base_url="https://api.test/v1", api_key_env="OPENAI_API_KEY")
    admin = store.acting_as(Actor(name="ada", role="admin"))
    admin.upsert_endpoint("e", base_url="https://api.test/v1", api_key_env="OPENAI_API_KEY")
    assert _endpoints(store) == ["e"]
    assert store.audit_log(action="endpoint_changed")["actor"].tolist() == ["ada"]


# --- hosts and URLs -----------------------------------------------------------------------------


def test_base_urls_must_name_an_allowed_host_when_hosts_are_listed(store: Store) -> None:
    store.upsert_endpoint("any", base_url="https://anywhere.test/v1")  # no list: any host
    store.set_server_setting("endpoint_hosts", ["api.openai.com", ".corp.example"])
    with pytest.raises(ConfigError, match=r"'anywhere\.test' is not one"):
        store.upsert_endpoint("any", base_url="https://anywhere.test/v2")
    assert store.get_endpoint_by_name("any").base_url == "https://anywhere.test/v1"  # unchanged
    assert store.upsert_endpoint("oa", base_url="https://api.openai.com/v1").base_url
    assert store.upsert_endpoint("gw", base_url="https://llm.corp.example/v1").base_url
    with pytest.raises(ConfigError):
        store.upsert_endpoint("bare", base_url="https://corp.example/v1")


def test_a_base_url_never_carries_a_password(store: Store) -> None:
    with pytest.raises(ConfigError, match="user name or password") as caught:
        store.upsert_endpoint("u", base_url="https://admin:hunter2@api.test/v1")
    assert "hunter2" not in str(caught.value)
    with pytest.raises(ConfigError, match="query parameter"):
        store.upsert_endpoint("q", base_url="https://api.test/v1?api_key=abc")
    assert _endpoints(store) == []


# --- headers and extra settings -----------------------------------------------------------------


@pytest.mark.parametrize(
    "extra",
    [
        {"headers": {"Authorization": "Bearer abc"}},
        {"headers": {"X-Team": "Bearer abc"}},
        {"headers": {"X-Api-Key": "abc"}},
        {"proxy": {"chain": [{"headers": {"cookie": "session=1"}}]}},
        {"options": [["x", "sk-live-0123456789abcdef"]]},
        {"api_key": "x"},
    ],
)
def test_headers_are_checked_at_any_depth_and_nothing_is_saved(store: Store, extra: dict) -> None:
    with pytest.raises(ConfigError, match="name a key variable") as caught:
        store.upsert_endpoint("h", base_url="https://api.test/v1", extra=extra)
    assert "abc" not in str(caught.value)
    assert "0123456789" not in str(caught.value)
    assert _endpoints(store) == []


def test_ordinary_headers_are_kept(store: Store) -> None:
    extra = {"headers": {"X-Team": "evals", "OpenAI-Organization": "org-AbCd0123"}, "timeout": 30}
    assert store.upsert_endpoint("h", base_url="https://api.test/v1", extra=extra).extra == extra
    with pytest.raises(ConfigError, match="header names to text"):
        store.upsert_endpoint("h", base_url="https://api.test/v1", extra={"headers": ["a"]})


# --- the audit log ------------------------------------------------------------------------------


def test_every_saved_change_is_audited_without_header_values(store: Store) -> None:
    store.upsert_endpoint(
        "judge",
        base_url="https://api.test/v1",
        api_key_env="JUDGE_API_KEY",
        extra={"headers": {"X-Team": "team-value-not-logged"}},
    )
    store.upsert_endpoint("judge", base_url="https://api.test/v2", api_key_env="JUDGE_API_KEY")
    log = store.audit_log(action="endpoint_changed")
    assert log["target"].tolist() == ["judge", "judge"]
    assert log["actor"].tolist() == ["system", "system"]
    newest, first = log["detail"].tolist()
    assert (first["change"], newest["change"]) == ("created", "updated")
    assert first["api_key_env"] == "JUDGE_API_KEY"
    assert first["header_names"] == ["X-Team"]
    assert newest["base_url"] == "https://api.test/v2"
    assert "team-value-not-logged" not in repr(log.to_dict("records"))


# --- rows saved before the policy -----------------------------------------------------------------


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


def _insert_endpoint(store: Store, name: str, base_url: str, api_key_env: str, **extra) -> int:
    """An endpoint row written straight into the database, as an older evalcore allowed."""
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(Endpoint).values(
                name=name,
                kind="openai",
                base_url=base_url,
                api_key_env=api_key_env,
                extra=extra,
                created_at=utcnow(),
            )
        )
        return int(conn.execute(sa.select(Endpoint.id).where(Endpoint.name == name)).scalar_one())


def _world(store: Store) -> dict:
    project = store.create_project("legacy")
    criterion = store.create_criterion(project.id, "fluency", kind="pointwise", scale=LIKERT_5)
    items = pd.DataFrame(
        {
            "item_id": ["a", "b"],
            "prompt": ["q1", "q2"],
            "response": ["one", "two"],
            "hint": ["expect=3", "expect=4"],
        }
    )
    dataset = store.save_dataset(project.id, "answers", items, kind="pointwise")
    template = store.create_template(project.id, "fluency", criterion.id)
    version = store.save_template_version(template.id, TEMPLATE, author="eve")
    return {"dataset": dataset, "version": version}


def _run(store: Store, world: dict, endpoint_id: int, **kwargs: Any) -> JudgeRunRecord:
    """Plan a run of the world's template on the endpoint, carry it out, and return it."""
    run = plan_run(
        store,
        dataset_id=world["dataset"].id,
        template_version_id=world["version"].id,
        endpoint_id=endpoint_id,
        settings=FAST,
    )
    execute_run(store, run.id, **kwargs)
    return store.get_run(run.id)


def test_a_run_on_an_old_endpoint_naming_the_database_url_sends_nothing(
    store: Store, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALCORE_DATABASE_URL", DATABASE_SECRET)
    world = _world(store)
    endpoint_id = _insert_endpoint(store, "old", fake.base_url, "EVALCORE_DATABASE_URL")
    failed = _run(store, world, endpoint_id, secrets={"EVALCORE_DATABASE_URL": DATABASE_SECRET})
    assert failed.status == "failed"
    assert failed.error == f"{GENERIC} 'old'"
    assert fake.count == 0
    assert not [r for r in fake.requests if DATABASE_SECRET in repr(r.headers)]
    # trying the template on the endpoint is refused the same way
    with pytest.raises(Exception, match="not available on the server"):
        try_version(
            store, TEMPLATE, dataset_id=world["dataset"].id, endpoint_id=endpoint_id, n_items=1
        )
    assert fake.count == 0


def test_an_old_endpoint_with_an_authorization_header_is_refused_at_run_time(
    store: Store, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLD_JUDGE_API_KEY", "old-key")
    world = _world(store)
    endpoint_id = _insert_endpoint(
        store, "hdr", fake.base_url, "OLD_JUDGE_API_KEY", headers={"Authorization": "Bearer x"}
    )
    failed = _run(store, world, endpoint_id)
    assert failed.status == "failed"
    assert "Authorization is a credential header" in (failed.error or "")
    assert fake.count == 0


def test_an_admin_allowed_name_works_for_runs_and_the_key_reaches_the_endpoint(
    store: Store, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEAM_JUDGE_TOKEN", "team-token-value")
    world = _world(store)
    endpoint_id = _insert_endpoint(store, "team", fake.base_url, "TEAM_JUDGE_TOKEN")
    assert api_key_is_set("TEAM_JUDGE_TOKEN") is False  # not allowed yet
    assert _run(store, world, endpoint_id).status == "failed"
    assert fake.count == 0
    store.set_server_setting("allowed_key_names", ["TEAM_JUDGE_TOKEN"])
    assert api_key_is_set("TEAM_JUDGE_TOKEN", None, ["TEAM_JUDGE_TOKEN"]) is True
    assert _run(store, world, endpoint_id).status == "done"
    assert fake.count == 2
    assert {dict(r.headers)["authorization"] for r in fake.requests} == {"Bearer team-token-value"}
