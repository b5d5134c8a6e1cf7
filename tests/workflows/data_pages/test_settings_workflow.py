"""evalcore.workflows.settings: project settings, endpoints (a key is never stored, a new one has no
key variable, an existing name asks first) and prices, checked at the moment of each call."""

from __future__ import annotations

import pandas as pd
import pytest

from evalcore.errors import ConfigError, PermissionDeniedError, SessionEndedError
from evalcore.workflows import settings
from evalcore.workflows.settings import EndpointForm
from tests.workflows.data_pages.conftest import People, refused

PASTED = "sk-proj-Abc123def456GHI789jkl012MNO345pqr"
VLLM = EndpointForm("vllm", "openai", "http://127.0.0.1:8000/v1", "VLLM_API_KEY", "", "qwen")


def _names(people: People) -> list[str]:
    return sorted(e.name for e in people.store.list_endpoints())


def test_the_project_settings_with_their_defaults(people: People) -> None:
    found = settings.settings(people["admin"], people.project_id)
    assert dict(found.values) == {
        "balanced_accuracy": 0.7,
        "cohen_kappa": 0.5,
        "annotators_per_item": 3.0,
    }
    assert [f.name for f in settings.PROJECT_FIELDS] == list(found.values)
    assert "key" in found.endpoints_table.columns
    assert {"model", "input_per_mtok"} <= set(found.prices.columns)
    # a project admin sees the settings, but not whether the server's variables are set
    mine = settings.settings(people["project_admin"], people.project_id)
    assert "key" not in mine.endpoints_table.columns
    assert settings.key_state(people["project_admin"], "OPENAI_API_KEY") is None
    refused(
        lambda s: settings.settings(s, people.project_id), people, ("outsider", "disabled", "ended")
    )


def test_save_project_settings_keeps_other_thresholds(people: People) -> None:
    people.store.update_project_settings(
        people.project_id, {"thresholds": {"balanced_accuracy": 0.7, "cohen_kappa": 0.5, "f1": 0.4}}
    )
    values = {"balanced_accuracy": 0.8, "cohen_kappa": 0.6, "annotators_per_item": 4}
    for who in ("admin", "project_admin"):
        assert settings.save_project_settings(people[who], people.project_id, values) == (
            "Project settings saved."
        )
    saved = people.store.get_project(people.project_id)
    assert saved.thresholds == {"balanced_accuracy": 0.8, "cohen_kappa": 0.6, "f1": 0.4}
    assert saved.annotators_per_item == 4
    refused(
        lambda s: settings.save_project_settings(s, people.project_id, {"cohen_kappa": 0.1}),
        people,
        ("engineer", "viewer", "annotator", "outsider", "disabled", "ended"),
    )
    assert people.store.get_project(people.project_id).thresholds["cohen_kappa"] == 0.6


def test_a_new_endpoint_form_has_no_key_variable() -> None:
    assert EndpointForm.of(None).api_key_env == ""
    assert EndpointForm.of(None) == EndpointForm()


def test_key_state_for_a_server_admin(people: People, monkeypatch: pytest.MonkeyPatch) -> None:
    s = people["admin"]
    assert settings.key_state(s, "  ") is None
    assert settings.key_state(s, "VLLM_API_KEY") == settings.KeyState(
        "bad", "`VLLM_API_KEY` is not set on this server"
    )
    monkeypatch.setenv("VLLM_API_KEY", "value-never-shown")
    found = settings.key_state(s, "VLLM_API_KEY")
    assert found is not None
    assert found.level == "ok"
    assert "value-never-shown" not in found.text
    bad = settings.key_state(s, "EVALCORE_DATABASE_URL")
    assert bad is not None
    assert "not an allowed key variable" in bad.text


def test_save_an_endpoint_then_edit_it(people: People) -> None:
    s = people["admin"]
    saved = settings.save_endpoint_form(s, VLLM)
    assert (saved.name, saved.api_key_env, saved.default_model) == ("vllm", "VLLM_API_KEY", "qwen")
    # editing keeps the name of the endpoint the form was opened for, whatever the name field says
    edited = settings.save_endpoint_form(
        s, EndpointForm("renamed", "openai", VLLM.base_url, "", "", "qwen-14b"), editing=saved.id
    )
    assert (edited.id, edited.name, edited.api_key_env, edited.default_model) == (
        saved.id,
        "vllm",
        None,
        "qwen-14b",
    )


def test_a_new_endpoint_under_an_existing_name_asks_first(people: People) -> None:
    s = people["admin"]
    settings.save_endpoint_form(s, VLLM)
    other = EndpointForm("vllm", "openai", "http://127.0.0.1:9000/v1", "", "", "llama")
    with pytest.raises(settings.EndpointExistsError) as asked:
        settings.save_endpoint_form(s, other)
    assert asked.value.name == "vllm"
    assert "exists already" in str(asked.value)
    assert people.store.get_endpoint_by_name("vllm").base_url == VLLM.base_url
    replaced = settings.save_endpoint_form(s, other, replace=True)
    assert (replaced.base_url, replaced.api_key_env) == ("http://127.0.0.1:9000/v1", None)


def test_a_pasted_key_is_refused_without_being_repeated(people: People) -> None:
    before = _names(people)
    with pytest.raises(settings.KeyVariableError) as caught:
        settings.save_endpoint_form(
            people["admin"], EndpointForm("oops", "openai", "https://api.openai.com/v1", PASTED)
        )
    assert PASTED not in str(caught.value)
    assert "NAME" in str(caught.value)
    assert _names(people) == before
    with pytest.raises(ConfigError, match="api_version"):
        settings.save_endpoint_form(
            people["admin"],
            EndpointForm("az", "azure", "https://r.openai.azure.com", "AZURE_OPENAI_API_KEY"),
        )
    assert _names(people) == before


def test_saving_an_endpoint_is_an_admins_and_checked_at_the_click(people: People) -> None:
    before = _names(people)
    refused(
        lambda s: settings.save_endpoint_form(s, VLLM),
        people,
        ("engineer", "project_admin", "viewer", "annotator", "outsider", "disabled", "ended"),
    )
    assert _names(people) == before
    # an admin demoted meanwhile: refused, nothing written
    s = people["admin"]
    people.store.set_role("ada", "engineer")
    with pytest.raises(PermissionDeniedError):
        settings.save_endpoint_form(s, VLLM)
    # disabled meanwhile: the session is over
    people.store.set_role("ada", "admin")
    people.store.disable_user("ada")
    with pytest.raises(SessionEndedError):
        settings.save_endpoint_form(s, VLLM)
    assert _names(people) == before


def test_prices_are_saved_in_full_or_not_at_all(people: People) -> None:
    s = people["admin"]
    table = settings.settings(s, people.project_id).prices
    table = pd.concat(
        [
            table,
            pd.DataFrame([{"model": "demo-mini", "input_per_mtok": 0.1, "output_per_mtok": 0.2}]),
        ],
        ignore_index=True,
    )
    assert settings.save_price_table(s, table).startswith("Prices saved: 1 set")
    assert people.store.get_model_prices()["demo-mini"].output_per_mtok == 0.2
    bad = table.assign(input_per_mtok=-1.0)
    with pytest.raises(ConfigError, match="at least 0"):
        settings.save_price_table(s, bad)
    assert people.store.get_model_prices()["demo-mini"].input_per_mtok == 0.1
    refused(
        lambda x: settings.save_price_table(x, table.iloc[:1]),
        people,
        ("engineer", "project_admin", "viewer", "annotator", "outsider", "disabled", "ended"),
    )
    assert "demo-mini" in people.store.get_model_prices()
