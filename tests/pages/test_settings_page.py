"""The Settings page through AppTest: endpoints (a key is never stored), prices, project settings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from evalcore.store import Store
from ui.state import Settings

PASTED = "sk-proj-Abc123def456GHI789jkl012MNO345pqr"


@pytest.fixture
def store(app_db: str) -> Iterator[Store]:
    s = Store.open(app_db)
    yield s
    s.close()


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, at.exception
    return at


def _errors(at: AppTest) -> str:
    return " ".join(e.value for e in at.error)


def _endpoints(at: AppTest):
    """The endpoints table (AppTest keeps no key of a plain table)."""
    [table] = [d.value for d in at.dataframe if "api_key_env" in d.value.columns]
    return table


def _new_endpoint(at: AppTest, **fields: str) -> AppTest:
    at.selectbox(key=Settings.ENDPOINT).set_value(0).run()
    for key, value in fields.items():
        widget = getattr(Settings, f"EP_{key.upper()}")
        (at.text_area(key=widget) if key == "url" else at.text_input(key=widget)).set_value(value)
    at.run()
    at.button(key=Settings.EP_SAVE).click().run()
    return _ok(at)


def test_add_an_endpoint_with_the_name_of_its_key_variable(
    open_app, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = open_app(role="admin", page="settings")
    _new_endpoint(
        at,
        name="vllm",
        url="http://127.0.0.1:8000/v1",
        key_env="VLLM_API_KEY",
        model="qwen2.5-7b",
    )
    saved = store.get_endpoint_by_name("vllm")
    assert (saved.base_url, saved.api_key_env, saved.default_model) == (
        "http://127.0.0.1:8000/v1",
        "VLLM_API_KEY",
        "qwen2.5-7b",
    )
    assert "Saved endpoint 'vllm'." in [s.value for s in at.success]
    assert "`VLLM_API_KEY` is not set" in " ".join(c.value for c in at.caption)
    table = _endpoints(at).set_index("name")
    assert table.loc["vllm", "key"] == "not set"
    monkeypatch.setenv("VLLM_API_KEY", "value-never-shown")
    at.run()
    assert _endpoints(at).set_index("name").loc["vllm", "key"] == "set"
    assert "value-never-shown" not in str(_endpoints(at).to_dict())
    # edit it: the form holds the saved endpoint, its name fixed
    assert at.session_state[Settings.ENDPOINT] == saved.id
    assert at.text_input(key=Settings.EP_NAME).disabled
    at.text_input(key=Settings.EP_MODEL).set_value("qwen2.5-14b").run()
    at.button(key=Settings.EP_SAVE).click().run()
    _ok(at)
    assert store.get_endpoint_by_name("vllm").default_model == "qwen2.5-14b"


def test_a_pasted_key_is_refused_and_not_kept(open_app, store: Store) -> None:
    at = open_app(role="admin", page="settings")
    before = [e.name for e in store.list_endpoints()]
    _new_endpoint(at, name="oops", url="https://api.openai.com/v1", key_env=PASTED)
    errors = _errors(at)
    assert "not saved" in errors
    assert "NAME" in errors
    assert PASTED not in errors
    assert [e.name for e in store.list_endpoints()] == before
    # the pasted value does not stay in the form
    assert at.text_input(key=Settings.EP_KEY_ENV).value == ""
    assert PASTED not in str(at.session_state.to_dict())


def test_an_azure_endpoint_needs_an_api_version(open_app, store: Store) -> None:
    at = open_app(role="admin", page="settings")
    at.selectbox(key=Settings.ENDPOINT).set_value(0).run()
    at.selectbox(key=Settings.EP_KIND).set_value("azure").run()
    _new_endpoint(
        at, name="azure", url="https://res.openai.azure.com", key_env="AZURE_OPENAI_API_KEY"
    )
    assert "api_version" in _errors(at)
    at.text_input(key=Settings.EP_VERSION).set_value("2024-10-21").run()
    at.button(key=Settings.EP_SAVE).click().run()
    _ok(at)
    assert store.get_endpoint_by_name("azure").api_version == "2024-10-21"


def test_edit_the_price_table(open_app, store: Store) -> None:
    at = open_app(role="admin", page="settings")
    editor = at.data_editor(key=Settings.PRICES)
    prices = editor.value
    row = prices.index[prices["model"] == "gpt-4o-mini"][0]
    deleted = int(prices.index[prices["model"] == "o4-mini"][0])
    at.session_state[Settings.PRICES] = {
        "edited_rows": {int(row): {"output_per_mtok": 0.8}},
        "added_rows": [{"model": "demo-judge-mini", "input_per_mtok": 0.1, "output_per_mtok": 0.2}],
        "deleted_rows": [deleted],
    }
    at.run()
    at.button(key=Settings.PRICES_SAVE).click().run()
    _ok(at)
    stored = store.get_model_prices()
    assert stored["gpt-4o-mini"].output_per_mtok == 0.8
    assert (
        stored["demo-judge-mini"].input_per_mtok,
        stored["demo-judge-mini"].output_per_mtok,
    ) == (
        0.1,
        0.2,
    )
    assert "o4-mini" not in stored
    assert any("Prices saved" in s.value for s in at.success)


def test_a_negative_price_is_refused(open_app, store: Store) -> None:
    at = open_app(role="admin", page="settings")
    at.session_state[Settings.PRICES] = {
        "edited_rows": {},
        "added_rows": [{"model": "cheap", "input_per_mtok": -1.0, "output_per_mtok": 0.2}],
        "deleted_rows": [],
    }
    at.run()
    at.button(key=Settings.PRICES_SAVE).click().run()
    _ok(at)
    assert "at least 0" in _errors(at)
    assert "cheap" not in store.get_model_prices()


def test_project_thresholds_and_annotators_per_item_are_saved(open_app, store: Store) -> None:
    at = open_app(role="admin", page="settings")
    project = store.list_projects()[0]
    # the demo's own settings are shown
    assert at.number_input(key=Settings.BALANCED_ACCURACY).value == 0.7
    assert at.number_input(key=Settings.KAPPA).value == 0.5
    assert at.number_input(key=Settings.ANNOTATORS).value == 3
    at.number_input(key=Settings.BALANCED_ACCURACY).set_value(0.8)
    at.number_input(key=Settings.KAPPA).set_value(0.6)
    at.number_input(key=Settings.ANNOTATORS).set_value(4)
    at.run()
    at.button(key=Settings.PROJECT_SAVE).click().run()
    _ok(at)
    saved = store.get_project(project.id)
    assert saved.thresholds == {"balanced_accuracy": 0.8, "cohen_kappa": 0.6}
    assert saved.annotators_per_item == 4
    assert "Project settings saved." in [s.value for s in at.success]


def test_only_an_admin_can_open_settings(open_app) -> None:
    at = open_app(role="admin", user="ada", page="settings")
    assert [t.value for t in at.title] == ["Settings"]
    assert at.button(key=Settings.PROJECT_SAVE)
    for role in ("engineer", "viewer"):
        at = open_app(role=role, user=f"{role}-1", page="settings")
        assert "not available to your role" in at.error[0].value
        assert not [b for b in at.button if b.key == Settings.PROJECT_SAVE]
        assert not [t for t in at.title if t.value == "Settings"]


def test_the_forms_hold_their_values_after_a_visit_to_another_page(open_app, store: Store) -> None:
    at = open_app(role="admin", page="settings")
    url = at.text_area(key=Settings.EP_URL).value
    assert url
    at.switch_page("pages/home.py").run()
    at.switch_page("pages/settings.py").run()
    _ok(at)
    assert at.text_area(key=Settings.EP_URL).value == url
    assert at.number_input(key=Settings.ANNOTATORS).value == 3


def test_a_new_endpoint_has_no_key_variable_and_an_existing_name_asks_first(
    open_app, store: Store
) -> None:
    at = open_app(role="admin", page="settings")
    at.selectbox(key=Settings.ENDPOINT).set_value(0).run()
    assert at.text_input(key=Settings.EP_KEY_ENV).value == ""  # nothing until one is chosen
    assert not [c for c in at.caption if "is set" in c.value or "is not set" in c.value]
    _new_endpoint(at, name="vllm", url="http://127.0.0.1:8000/v1", model="first")
    assert store.get_endpoint_by_name("vllm").api_key_env is None
    # "New endpoint…" again, under the same name: the page asks before anything is written
    _new_endpoint(at, name="vllm", url="http://127.0.0.1:9000/v1", model="second")
    assert "exists already" in at.warning[0].value
    assert store.get_endpoint_by_name("vllm").default_model == "first"
    assert not [b for b in at.button if b.key == Settings.EP_SAVE]
    at.button(key=Settings.EP_CANCEL).click().run()
    _ok(at)
    assert not at.warning
    assert store.get_endpoint_by_name("vllm").default_model == "first"
    at.button(key=Settings.EP_SAVE).click().run()
    at.button(key=Settings.EP_REPLACE).click().run()
    _ok(at)
    replaced = store.get_endpoint_by_name("vllm")
    assert (replaced.default_model, replaced.base_url) == ("second", "http://127.0.0.1:9000/v1")
    assert "Saved endpoint 'vllm'." in [s.value for s in at.success]


def test_an_admin_demoted_before_the_click_saves_nothing(open_app, store: Store) -> None:
    at = open_app(role="admin", user="ada", page="settings")
    at.selectbox(key=Settings.ENDPOINT).set_value(0).run()
    at.text_input(key=Settings.EP_NAME).set_value("late")
    at.text_area(key=Settings.EP_URL).set_value("http://127.0.0.1:8000/v1")
    at.run()
    store.add_user("root", role="admin")
    store.set_role("ada", "engineer")  # demoted in another window
    at.button(key=Settings.EP_SAVE).click().run()
    assert not at.exception
    # the click was refused when it was made; the page is then refused to the engineer
    assert "no longer allowed" in at.session_state["app.note"][1]
    assert "not available to your role" in " ".join(e.value for e in at.error)
    assert "late" not in [e.name for e in store.list_endpoints()]
