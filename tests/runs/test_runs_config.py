"""Settings checked before they are stored: endpoints (never a key) and the price table."""

from __future__ import annotations

import pandas as pd
import pytest

from evalcore.errors import ConfigError
from evalcore.runs import endpoints_table, price_table, save_endpoint, save_prices
from evalcore.store import Store


def test_an_endpoint_keeps_the_name_of_its_key_variable(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = save_endpoint(
        store,
        " vllm ",
        base_url="http://127.0.0.1:8000/v1",
        api_key_env="VLLM_API_KEY",
        default_model="qwen",
    )
    assert (saved.name, saved.api_key_env, saved.default_model) == ("vllm", "VLLM_API_KEY", "qwen")
    table = endpoints_table(store).set_index("name")
    assert table.loc["vllm", "key"] == "not set"
    monkeypatch.setenv("VLLM_API_KEY", "whatever-value")
    assert endpoints_table(store).set_index("name").loc["vllm", "key"] == "set"
    assert endpoints_table(store, {"OTHER": "x"}).set_index("name").loc["vllm", "key"] == "set"
    store.upsert_endpoint("db", base_url="http://127.0.0.1:1/v1")
    with store.engine.begin() as conn:  # a row saved before the key policy
        conn.exec_driver_sql("UPDATE endpoints SET api_key_env = 'DATABASE_URL' WHERE name = 'db'")
    assert endpoints_table(store).set_index("name").loc["db", "key"] == "not allowed"
    local = save_endpoint(store, "local", base_url="http://127.0.0.1:11434/v1", api_key_env=" ")
    assert local.api_key_env is None
    assert endpoints_table(store).set_index("name").loc["local", "key"] == "not needed"


@pytest.mark.parametrize(
    "value",
    ["sk-proj-abcdefghijklmnopqrstuvwxyz0123456789", "Bearer abc", "AbCdEfGh1234567890XyZabcd"],
)
def test_a_pasted_key_is_refused_without_being_repeated(store: Store, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        save_endpoint(store, "oops", base_url="https://api.example.com/v1", api_key_env=value)
    assert "NAME" in str(caught.value)
    assert value not in str(caught.value)
    assert [e.name for e in store.list_endpoints()] == []


def test_bad_urls_and_azure_without_a_version_are_refused(store: Store) -> None:
    with pytest.raises(ConfigError, match="http"):
        save_endpoint(store, "x", base_url="api.example.com", api_key_env="KEY")
    with pytest.raises(ConfigError, match="api_version"):
        save_endpoint(
            store,
            "az",
            kind="azure",
            base_url="https://r.openai.azure.com",
            api_key_env="AZ_API_KEY",
        )
    saved = save_endpoint(
        store,
        "az",
        kind="azure",
        base_url="https://r.openai.azure.com",
        api_key_env="AZ_API_KEY",
        api_version="2024-10-21",
    )
    assert saved.api_version == "2024-10-21"


def test_the_price_table_is_replaced_as_edited(store: Store) -> None:
    store.set_model_price("old", input_per_mtok=1, output_per_mtok=2)
    store.set_model_price("kept", input_per_mtok=1, output_per_mtok=2)
    edited = pd.DataFrame(
        {
            "model": ["kept", "new", None],
            "input_per_mtok": [1.0, 0.5, None],
            "output_per_mtok": [3.0, 1.5, None],
        }
    )
    assert save_prices(store, edited) == {"set": 2, "removed": 1}
    table = price_table(store).set_index("model")
    assert sorted(table.index) == ["kept", "new"]
    assert table.loc["kept", "output_per_mtok"] == 3.0
    assert save_prices(store, price_table(store)) == {"set": 0, "removed": 0}


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ({"model": ["a", "a"], "input_per_mtok": [1, 1], "output_per_mtok": [1, 1]}, "twice"),
        ({"model": ["a"], "input_per_mtok": [-1], "output_per_mtok": [1]}, "at least 0"),
        ({"model": ["a"], "input_per_mtok": [None], "output_per_mtok": [1]}, "input price"),
        ({"model": [""], "input_per_mtok": [1], "output_per_mtok": [1]}, "no model name"),
    ],
)
def test_a_bad_price_row_changes_nothing(store: Store, rows: dict, message: str) -> None:
    store.set_model_price("kept", input_per_mtok=1, output_per_mtok=2)
    with pytest.raises(ConfigError, match=message):
        save_prices(store, pd.DataFrame(rows))
    assert list(store.get_model_prices()) == ["kept"]
