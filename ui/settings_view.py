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
from evalcore.secrets import key_status
from evalcore.store import DEFAULT_THRESHOLDS, EndpointRecord, ProjectRecord, Store
from ui.render import code_span, md_escape, show_error
from ui.resources import get_store, get_worker
from ui.state import Settings

NEW: Final = 0  # the "new endpoint" entry of the endpoint picker

#: The project settings' inputs: label, lowest, highest, step, session-state key, help.
PROJECT_FIELDS: Final[tuple[tuple[str, float, float, float, str, str | None], ...]] = (
    ("Balanced accuracy ≥", 0.0, 1.0, 0.05, Settings.BALANCED_ACCURACY, None),
    ("Cohen's kappa ≥", -1.0, 1.0, 0.05, Settings.KAPPA, None),
    (
        "Annotators per item",
        1,
        50,
        1,
        Settings.ANNOTATORS,
        "How many people should label each item; queues stop assigning an item beyond it.",
    ),
)


def _flash(message: str) -> None:
    st.session_state[Settings.FLASH] = message


def show_flash() -> None:
    message = st.session_state.pop(Settings.FLASH, None)
    if message:
        st.success(md_escape(message), icon=":material/check:")  # it may quote a name


# --- endpoints ------------------------------------------------------------------------------------


def _load_endpoint(record: EndpointRecord | None) -> None:
    ss = st.session_state
    ss[Settings.EP_NAME] = record.name if record else ""
    ss[Settings.EP_KIND] = record.kind if record else "openai"
    ss[Settings.EP_URL] = (record.base_url or "") if record else ""
    ss[Settings.EP_KEY_ENV] = (record.api_key_env or "") if record else "OPENAI_API_KEY"
    ss[Settings.EP_VERSION] = (record.api_version or "") if record else ""
    ss[Settings.EP_MODEL] = (record.default_model or "") if record else ""
    ss[Settings.LOADED_ENDPOINT] = record.id if record else NEW


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
        st.dataframe(table, hide_index=True, key=Settings.ENDPOINTS_TABLE)
    endpoints = {e.id: e for e in store.list_endpoints()}
    options = [*endpoints, NEW]
    if st.session_state.get(Settings.ENDPOINT) not in options:
        st.session_state[Settings.ENDPOINT] = options[0]
    chosen = st.selectbox(
        "Edit",
        options,
        key=Settings.ENDPOINT,
        persist_state="session",
        format_func=lambda i: endpoints[i].name if i in endpoints else "New endpoint…",
    )
    if st.session_state.get(Settings.LOADED_ENDPOINT) != chosen:
        _load_endpoint(endpoints.get(chosen))
    existing = chosen in endpoints
    c1, c2 = st.columns([2, 1])
    c1.text_input("Name", key=Settings.EP_NAME, persist_state="session", disabled=existing)
    c2.selectbox("Kind", ("openai", "azure"), key=Settings.EP_KIND, persist_state="session")
    st.text_area(
        "Base URL (one per line for a pool of replicas)",
        key=Settings.EP_URL,
        persist_state="session",
        height=68,
        placeholder="https://api.openai.com/v1 or http://127.0.0.1:8000/v1",
        help="Several URLs (replicas of one self-hosted model) make a pool: each request goes "
        "to the replica with the fewest requests outstanding, and one that fails is rested.",
    )
    c1, c2, c3 = st.columns(3)
    c1.text_input(
        "API key variable (its NAME)",
        key=Settings.EP_KEY_ENV,
        persist_state="session",
        help="The name of an environment variable or Streamlit secret, such as OPENAI_API_KEY. "
        "Leave empty for a local server that needs no key. Never paste the key itself.",
    )
    c2.text_input("API version (Azure)", key=Settings.EP_VERSION, persist_state="session")
    c3.text_input("Default model", key=Settings.EP_MODEL, persist_state="session")
    env = str(st.session_state.get(Settings.EP_KEY_ENV) or "").strip()
    if env:  # only admins open this page, and only they may learn whether a variable exists
        allowed = store.get_server_setting("allowed_key_names", None) or []
        status = key_status(env, secrets, allowed)
        st.caption(
            f":green[{code_span(env)} is set]"
            if status == "set"
            else f":red[{code_span(env)} is not set] on this server"
            if status == "missing"
            else f":red[{code_span(env)} is not an allowed key variable]: the Admin page lists "
            "the names allowed besides those ending in `_API_KEY`"
        )
    st.button(
        "Save endpoint",
        key=Settings.EP_SAVE,
        type="primary",
        on_click=_save_endpoint,
        args=(store,),
    )
    error = st.session_state.pop(Settings.EP_ERROR, None)
    if error:
        st.error(f"**The endpoint was not saved**\n\n{md_escape(error)}", icon=":material/error:")


def _save_endpoint(store: Store) -> None:
    """Save the form (a callback: it may clear the form's fields before they are drawn again)."""
    ss = st.session_state
    chosen = ss.get(Settings.ENDPOINT)
    env = str(ss.get(Settings.EP_KEY_ENV) or "").strip()
    try:
        saved = runs.save_endpoint(
            store,
            str(ss.get(Settings.EP_NAME) or ""),
            kind=ss.get(Settings.EP_KIND, "openai"),
            base_url=str(ss.get(Settings.EP_URL) or ""),
            api_key_env=env or None,
            api_version=str(ss.get(Settings.EP_VERSION) or ""),
            default_model=str(ss.get(Settings.EP_MODEL) or ""),
        )
    except EvalcoreError as exc:
        ss[Settings.EP_ERROR] = str(exc)
        if "api_key_env" in str(exc):
            ss[Settings.EP_KEY_ENV] = ""  # a pasted key does not stay in the form
        return
    _flash(f"Saved endpoint {saved.name!r}.")
    ss.pop(Settings.LOADED_ENDPOINT, None)
    ss[Settings.ENDPOINT] = saved.id if chosen == NEW else chosen


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
        key=Settings.PRICES,
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
            "batch_input_per_mtok": st.column_config.NumberColumn(
                "batch input $ / M", min_value=0.0, format="%.4f", help="blank: not set"
            ),
            "batch_output_per_mtok": st.column_config.NumberColumn(
                "batch output $ / M", min_value=0.0, format="%.4f", help="blank: not set"
            ),
        },
    )
    if st.button("Save prices", key=Settings.PRICES_SAVE, type="primary"):
        try:
            changes = runs.save_prices(store, pd.DataFrame(edited))
        except EvalcoreError as exc:
            show_error(exc, title="The prices were not saved")
            return
        _flash(f"Prices saved: {changes['set']} set, {changes['removed']} removed.")
        st.session_state.pop(Settings.PRICES, None)
        st.rerun()


# --- the project -----------------------------------------------------------------------------------


def _load_project(project: ProjectRecord) -> None:
    thresholds = {**DEFAULT_THRESHOLDS, **project.thresholds}
    st.session_state[Settings.BALANCED_ACCURACY] = float(thresholds["balanced_accuracy"])
    st.session_state[Settings.KAPPA] = float(thresholds["cohen_kappa"])
    st.session_state[Settings.ANNOTATORS] = int(project.annotators_per_item)
    st.session_state[Settings.LOADED_PROJECT] = project.id


def project_section(store: Store, project: ProjectRecord) -> None:
    st.subheader(f"Project: {md_escape(project.name)}")
    if st.session_state.get(Settings.LOADED_PROJECT) != project.id:
        _load_project(project)
    st.caption(
        "A judge counts as trustworthy for a criterion when it reaches these values against the "
        "human labels; reports mark the judges that do."
    )
    for column, (label, low, high, step, key, help_text) in zip(
        st.columns(3), PROJECT_FIELDS, strict=True
    ):
        column.number_input(
            label,
            min_value=low,
            max_value=high,
            step=step,
            key=key,
            help=help_text,
            persist_state="session",
        )
    if st.button("Save project settings", key=Settings.PROJECT_SAVE, type="primary"):
        ss = st.session_state
        changes: dict[str, Any] = {
            "thresholds": {
                **project.thresholds,
                "balanced_accuracy": float(ss[Settings.BALANCED_ACCURACY]),
                "cohen_kappa": float(ss[Settings.KAPPA]),
            },
            "annotators_per_item": int(ss[Settings.ANNOTATORS]),
        }
        try:
            store.update_project_settings(project.id, changes)
        except EvalcoreError as exc:
            show_error(exc, title="The project settings were not saved")
            return
        _flash("Project settings saved.")
        st.session_state.pop(Settings.LOADED_PROJECT, None)
        st.rerun()


def settings_page(project: ProjectRecord) -> None:
    store = get_store()
    show_flash()
    project_section(store, project)
    endpoints_section(store)
    prices_section(store)
