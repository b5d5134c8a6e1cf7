"""The Settings page's parts: the project's settings, the endpoints and the model price table.

What is shown and every rule (the fields, their bounds, the endpoint kinds, whether a key variable is
set) comes from :mod:`evalcore.workflows.settings`; each save is one call there, checked at the
moment of the click.
"""

from __future__ import annotations

from typing import Final

import pandas as pd
import streamlit as st

from evalcore.errors import ConfigError
from evalcore.workflows import Session
from evalcore.workflows import settings as flow
from evalcore.workflows.settings import EndpointForm, Settings
from ui.render import md_escape
from ui.state import Settings as K
from ui.widgets import attempt, callback, note, show_note

NEW: Final = 0  # the "new endpoint" entry of the endpoint picker
#: The form's widgets, by the field of :class:`EndpointForm` each holds.
FORM: Final = {
    "name": K.EP_NAME,
    "kind": K.EP_KIND,
    "base_url": K.EP_URL,
    "api_key_env": K.EP_KEY_ENV,
    "api_version": K.EP_VERSION,
    "default_model": K.EP_MODEL,
}
PROJECT_KEYS: Final = {
    "balanced_accuracy": K.BALANCED_ACCURACY,
    "cohen_kappa": K.KAPPA,
    "annotators_per_item": K.ANNOTATORS,
}

# --- the project ---------------------------------------------------------------------------------


@callback
def _save_project(session: Session, project_id: int) -> None:
    values = {name: st.session_state[widget] for name, widget in PROJECT_KEYS.items()}
    note("success", flow.save_project_settings(session, project_id, values))
    st.session_state.pop(K.LOADED_PROJECT, None)


def project_section(session: Session, found: Settings) -> None:
    project = found.project
    st.subheader(f"Project: {md_escape(project.name)}")
    if st.session_state.get(K.LOADED_PROJECT) != project.id:
        for field in flow.PROJECT_FIELDS:
            value = found.values[field.name]
            st.session_state[PROJECT_KEYS[field.name]] = int(value) if field.whole else value
        st.session_state[K.LOADED_PROJECT] = project.id
    st.caption(
        "A judge counts as trustworthy for a criterion when it reaches these values against the "
        "human labels; reports mark the judges that do."
    )
    for column, field in zip(
        st.columns(len(flow.PROJECT_FIELDS)), flow.PROJECT_FIELDS, strict=True
    ):
        cast = int if field.whole else float
        column.number_input(field.label, min_value=cast(field.low), max_value=cast(field.high),
                            step=cast(field.step), key=PROJECT_KEYS[field.name], help=field.help,
                            persist_state="session")  # fmt: skip
    st.button("Save project settings", key=K.PROJECT_SAVE, type="primary",
              on_click=_save_project, args=(session, project.id))  # fmt: skip


# --- endpoints -----------------------------------------------------------------------------------


def _load_form(form: EndpointForm, chosen: int) -> None:
    for field, widget in FORM.items():
        st.session_state[widget] = getattr(form, field)
    st.session_state[K.LOADED_ENDPOINT] = chosen
    st.session_state.pop(K.EP_CONFIRM, None)


@callback
def _save_endpoint(session: Session, replace: bool = False) -> None:
    """Save the form (a callback: it may clear the form's fields before they are drawn again)."""
    ss = st.session_state
    chosen = ss.get(K.ENDPOINT)
    form = EndpointForm(**{f: str(ss.get(w) or "").strip() for f, w in FORM.items()})  # type: ignore[arg-type]
    try:
        saved = flow.save_endpoint_form(
            session, form, editing=None if chosen == NEW else chosen, replace=replace
        )
    except flow.EndpointExistsError as exc:
        ss[K.EP_CONFIRM] = str(exc)
        return
    except flow.KeyVariableError as exc:
        ss[K.EP_KEY_ENV] = ""  # a pasted key does not stay in the form
        ss[K.EP_ERROR] = str(exc)
        return
    except ConfigError as exc:
        ss[K.EP_ERROR] = str(exc)
        return
    note("success", f"Saved endpoint {saved.name!r}.")
    ss.pop(K.LOADED_ENDPOINT, None)
    ss.pop(K.EP_CONFIRM, None)
    ss[K.ENDPOINT] = saved.id


def _key_caption(session: Session) -> None:
    state = flow.key_state(session, str(st.session_state.get(K.EP_KEY_ENV) or ""))
    if state is not None:
        st.caption(f":{'green' if state.level == 'ok' else 'red'}[{state.text}]")


def endpoints_section(session: Session, found: Settings) -> None:
    st.subheader("Endpoints")
    st.caption(
        "Any OpenAI-compatible server (OpenAI, Azure OpenAI, vLLM, Ollama, LM Studio, a gateway). "
        "An endpoint keeps the **name** of the environment variable or Streamlit secret that holds "
        "its API key, never the key: set the variable where the server runs, or add it to "
        "`.streamlit/secrets.toml`."
    )
    if not found.endpoints_table.empty:
        st.dataframe(found.endpoints_table, hide_index=True, key=K.ENDPOINTS_TABLE)
    options = [*(e.id for e in found.endpoints), NEW]
    if st.session_state.get(K.ENDPOINT) not in options:
        st.session_state[K.ENDPOINT] = options[0]
    chosen = st.selectbox("Edit", options, key=K.ENDPOINT, persist_state="session",
                          format_func=lambda i: getattr(found.endpoint(i), "name", "New endpoint…"))  # fmt: skip
    if st.session_state.get(K.LOADED_ENDPOINT) != chosen:
        _load_form(EndpointForm.of(found.endpoint(chosen)), chosen)
    c1, c2 = st.columns([2, 1])
    c1.text_input("Name", key=K.EP_NAME, persist_state="session", disabled=chosen != NEW)
    c2.selectbox("Kind", flow.ENDPOINT_KINDS, key=K.EP_KIND, persist_state="session")
    st.text_area(
        "Base URL (one per line for a pool of replicas)",
        key=K.EP_URL,
        persist_state="session",
        height=68,
        placeholder="https://api.openai.com/v1 or http://127.0.0.1:8000/v1",
        help="Several URLs (replicas of one self-hosted model) make a pool: each request goes "
        "to the replica with the fewest requests outstanding, and one that fails is rested.",
    )
    c1, c2, c3 = st.columns(3)
    c1.text_input(
        "API key variable (its NAME)",
        key=K.EP_KEY_ENV,
        persist_state="session",
        placeholder="none: a local server that needs no key",
        help="The name of an environment variable or Streamlit secret, such as OPENAI_API_KEY. "
        "Leave empty for a local server that needs no key. Never paste the key itself.",
    )
    c2.text_input("API version (Azure)", key=K.EP_VERSION, persist_state="session")
    c3.text_input("Default model", key=K.EP_MODEL, persist_state="session")
    _key_caption(session)
    confirm = st.session_state.get(K.EP_CONFIRM)
    if confirm:
        st.warning(md_escape(confirm), icon=":material/warning:")
        c1, c2 = st.columns(2)
        c1.button("Replace it", key=K.EP_REPLACE, type="primary", on_click=_save_endpoint,
                  args=(session, True))  # fmt: skip
        c2.button("Keep the existing one", key=K.EP_CANCEL,
                  on_click=lambda: st.session_state.pop(K.EP_CONFIRM, None))  # fmt: skip
    else:
        st.button("Save endpoint", key=K.EP_SAVE, type="primary", on_click=_save_endpoint,
                  args=(session,))  # fmt: skip
    error = st.session_state.pop(K.EP_ERROR, None)
    if error:
        st.error(f"**The endpoint was not saved**\n\n{md_escape(error)}", icon=":material/error:")


# --- prices ---------------------------------------------------------------------------------------


def prices_section(session: Session, found: Settings) -> None:
    st.subheader("Model prices")
    st.caption(
        "US dollars per million tokens, used for estimates and for the cost of every judge call. "
        "A model without a price has an unknown cost, never a made-up one. Add, edit or delete rows, "
        "then save."
    )
    money = {"min_value": 0.0, "format": "%.4f"}
    edited = st.data_editor(
        found.prices,
        key=K.PRICES,
        num_rows="dynamic",
        hide_index=True,
        column_config={
            "model": st.column_config.TextColumn("model", required=True),
            "input_per_mtok": st.column_config.NumberColumn("input $ / M tokens", **money),
            "output_per_mtok": st.column_config.NumberColumn("output $ / M tokens", **money),
            "batch_input_per_mtok": st.column_config.NumberColumn(
                "batch input $ / M", help="blank: not set", **money
            ),
            "batch_output_per_mtok": st.column_config.NumberColumn(
                "batch output $ / M", help="blank: not set", **money
            ),
        },
    )
    if st.button("Save prices", key=K.PRICES_SAVE, type="primary"):
        done = attempt(
            lambda: flow.save_price_table(session, pd.DataFrame(edited)),
            title="The prices were not saved",
        )
        if done:
            note("success", done)
            st.session_state.pop(K.PRICES, None)
            st.rerun()


def settings_page(session: Session, project_id: int) -> None:
    show_note()
    found = flow.settings(session, project_id)
    project_section(session, found)
    endpoints_section(session, found)
    prices_section(session, found)
