"""The Settings page's parts: endpoints, the model price table, and the project's settings.

An endpoint stores the NAME of the environment variable or Streamlit secret that holds its API key;
the page shows that name and whether it is set, never a key, and refuses a pasted key. The page's
session-state keys are the constants of :class:`K`.
"""

from __future__ import annotations

from typing import Any, Final

import pandas as pd
import streamlit as st

from evalcore import runs
from evalcore.errors import EvalcoreError
from evalcore.store import DEFAULT_THRESHOLDS, EndpointRecord, ProjectRecord, Store
from ui.render import show_error
from ui.resources import get_store, get_worker


class K:
    """Session-state keys of the Settings page."""

    FLASH: Final = "st_flash"
    ENDPOINT: Final = "st_endpoint"
    LOADED_ENDPOINT: Final = "st_loaded_endpoint"
    EP_NAME: Final = "st_ep_name"
    EP_KIND: Final = "st_ep_kind"
    EP_URL: Final = "st_ep_url"
    EP_KEY_ENV: Final = "st_ep_key_env"
    EP_VERSION: Final = "st_ep_version"
    EP_MODEL: Final = "st_ep_model"
    EP_SAVE: Final = "st_ep_save"
    EP_ERROR: Final = "st_ep_error"
    PRICES: Final = "st_prices"
    PRICES_SAVE: Final = "st_prices_save"
    LOADED_PROJECT: Final = "st_loaded_project"
    BALANCED_ACCURACY: Final = "st_balanced_accuracy"
    KAPPA: Final = "st_kappa"
    ANNOTATORS: Final = "st_annotators"
    PROJECT_SAVE: Final = "st_project_save"


NEW: Final = 0  # the "new endpoint" entry of the endpoint picker


def _flash(message: str) -> None:
    st.session_state[K.FLASH] = message


def show_flash() -> None:
    message = st.session_state.pop(K.FLASH, None)
    if message:
        st.success(message, icon=":material/check:")


# --- endpoints ------------------------------------------------------------------------------------


def _load_endpoint(record: EndpointRecord | None) -> None:
    ss = st.session_state
    ss[K.EP_NAME] = record.name if record else ""
    ss[K.EP_KIND] = record.kind if record else "openai"
    ss[K.EP_URL] = (record.base_url or "") if record else ""
    ss[K.EP_KEY_ENV] = (record.api_key_env or "") if record else "OPENAI_API_KEY"
    ss[K.EP_VERSION] = (record.api_version or "") if record else ""
    ss[K.EP_MODEL] = (record.default_model or "") if record else ""
    ss[K.LOADED_ENDPOINT] = record.id if record else NEW


def endpoints_section(store: Store) -> None:
    st.subheader("Endpoints")
    st.caption(
        "Any OpenAI-compatible server (OpenAI, Azure OpenAI, vLLM, Ollama, LM Studio, a gateway). "
        "An endpoint keeps the **name** of the environment variable or Streamlit secret that holds "
        "its API key, never the key: set the variable where the server runs, or add it to "
        "`.streamlit/secrets.toml`."
    )
    secrets = get_worker().secrets
    table = runs.endpoints_table(store, secrets)
    if not table.empty:
        st.dataframe(table, hide_index=True, key="st_endpoints_table")
    endpoints = {e.id: e for e in store.list_endpoints()}
    options = [*endpoints, NEW]
    if st.session_state.get(K.ENDPOINT) not in options:
        st.session_state[K.ENDPOINT] = options[0]
    chosen = st.selectbox(
        "Edit",
        options,
        key=K.ENDPOINT,
        persist_state="session",
        format_func=lambda i: endpoints[i].name if i in endpoints else "➕ New endpoint",
    )
    if st.session_state.get(K.LOADED_ENDPOINT) != chosen:
        _load_endpoint(endpoints.get(chosen))
    existing = chosen in endpoints
    c1, c2 = st.columns([2, 1])
    c1.text_input("Name", key=K.EP_NAME, persist_state="session", disabled=existing)
    c2.selectbox("Kind", ("openai", "azure"), key=K.EP_KIND, persist_state="session")
    st.text_input(
        "Base URL",
        key=K.EP_URL,
        persist_state="session",
        placeholder="https://api.openai.com/v1 or http://127.0.0.1:8000/v1",
    )
    c1, c2, c3 = st.columns(3)
    c1.text_input(
        "API key variable (its NAME)",
        key=K.EP_KEY_ENV,
        persist_state="session",
        help="The name of an environment variable or Streamlit secret, such as OPENAI_API_KEY. "
        "Leave empty for a local server that needs no key. Never paste the key itself.",
    )
    c2.text_input("API version (Azure)", key=K.EP_VERSION, persist_state="session")
    c3.text_input("Default model", key=K.EP_MODEL, persist_state="session")
    env = str(st.session_state.get(K.EP_KEY_ENV) or "").strip()
    if env:
        status = runs.api_key_is_set(env, secrets)
        st.caption(
            f":green[`{env}` is set]" if status else f":red[`{env}` is not set] on this server"
        )
    st.button(
        "Save endpoint", key=K.EP_SAVE, type="primary", on_click=_save_endpoint, args=(store,)
    )
    error = st.session_state.pop(K.EP_ERROR, None)
    if error:
        st.error(f"**The endpoint was not saved**\n\n{error}", icon=":material/error:")


def _save_endpoint(store: Store) -> None:
    """Save the form (a callback: it may clear the form's fields before they are drawn again)."""
    ss = st.session_state
    chosen = ss.get(K.ENDPOINT)
    env = str(ss.get(K.EP_KEY_ENV) or "").strip()
    try:
        saved = runs.save_endpoint(
            store,
            str(ss.get(K.EP_NAME) or ""),
            kind=ss.get(K.EP_KIND, "openai"),
            base_url=str(ss.get(K.EP_URL) or ""),
            api_key_env=env or None,
            api_version=str(ss.get(K.EP_VERSION) or ""),
            default_model=str(ss.get(K.EP_MODEL) or ""),
        )
    except EvalcoreError as exc:
        ss[K.EP_ERROR] = str(exc)
        if "api_key_env" in str(exc):
            ss[K.EP_KEY_ENV] = ""  # a pasted key does not stay in the form
        return
    _flash(f"Saved endpoint {saved.name!r}.")
    ss.pop(K.LOADED_ENDPOINT, None)
    ss[K.ENDPOINT] = saved.id if chosen == NEW else chosen


# --- prices ---------------------------------------------------------------------------------------


def prices_section(store: Store) -> None:
    st.subheader("Model prices")
    st.caption(
        "US dollars per million tokens, used for estimates and for the cost of every judge call. "
        "A model without a price has an unknown cost, never a made-up one. Add, edit or delete rows, "
        "then save."
    )
    table = runs.price_table(store)
    edited = st.data_editor(
        table,
        key=K.PRICES,
        num_rows="dynamic",
        hide_index=True,
        column_config={
            "model": st.column_config.TextColumn("model", required=True),
            "input_per_mtok": st.column_config.NumberColumn(
                "input $ / M tokens", min_value=0.0, format="%.4f"
            ),
            "output_per_mtok": st.column_config.NumberColumn(
                "output $ / M tokens", min_value=0.0, format="%.4f"
            ),
        },
    )
    if st.button("Save prices", key=K.PRICES_SAVE, type="primary"):
        try:
            changes = runs.save_prices(store, pd.DataFrame(edited))
        except EvalcoreError as exc:
            show_error(exc, title="The prices were not saved")
            return
        _flash(f"Prices saved: {changes['set']} set, {changes['removed']} removed.")
        st.session_state.pop(K.PRICES, None)
        st.rerun()


# --- the project -----------------------------------------------------------------------------------


def _load_project(project: ProjectRecord) -> None:
    thresholds = {**DEFAULT_THRESHOLDS, **project.thresholds}
    st.session_state[K.BALANCED_ACCURACY] = float(thresholds["balanced_accuracy"])
    st.session_state[K.KAPPA] = float(thresholds["cohen_kappa"])
    st.session_state[K.ANNOTATORS] = int(project.annotators_per_item)
    st.session_state[K.LOADED_PROJECT] = project.id


def project_section(store: Store, project: ProjectRecord) -> None:
    st.subheader(f"Project: {project.name}")
    if st.session_state.get(K.LOADED_PROJECT) != project.id:
        _load_project(project)
    st.caption(
        "A judge counts as trustworthy for a criterion when it reaches these values against the "
        "human labels; reports mark the judges that do."
    )
    c1, c2, c3 = st.columns(3)
    c1.number_input(
        "Balanced accuracy ≥",
        min_value=0.0,
        max_value=1.0,
        step=0.05,
        key=K.BALANCED_ACCURACY,
        persist_state="session",
    )
    c2.number_input(
        "Cohen's kappa ≥",
        min_value=-1.0,
        max_value=1.0,
        step=0.05,
        key=K.KAPPA,
        persist_state="session",
    )
    c3.number_input(
        "Annotators per item",
        min_value=1,
        max_value=50,
        step=1,
        key=K.ANNOTATORS,
        persist_state="session",
        help="How many people should label each item; queues stop assigning an item beyond it.",
    )
    if st.button("Save project settings", key=K.PROJECT_SAVE, type="primary"):
        ss = st.session_state
        changes: dict[str, Any] = {
            "thresholds": {
                **project.thresholds,
                "balanced_accuracy": float(ss[K.BALANCED_ACCURACY]),
                "cohen_kappa": float(ss[K.KAPPA]),
            },
            "annotators_per_item": int(ss[K.ANNOTATORS]),
        }
        try:
            store.update_project_settings(project.id, changes)
        except EvalcoreError as exc:
            show_error(exc, title="The project settings were not saved")
            return
        _flash("Project settings saved.")
        st.session_state.pop(K.LOADED_PROJECT, None)
        st.rerun()


def settings_page(project: ProjectRecord) -> None:
    store = get_store()
    show_flash()
    project_section(store, project)
    endpoints_section(store)
    prices_section(store)
