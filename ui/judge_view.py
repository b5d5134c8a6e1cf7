"""The Judge page's parts: the template editor, "try on 5 items", full runs, run results, the metric
catalogue.

Everything here reads widgets, calls :mod:`evalcore.runs` and renders; runs execute in the server's
background worker (:func:`ui.resources.get_worker`) and their progress is read from the store, so a run
goes on when the user leaves the page. The page's session-state keys are the constants of :class:`K`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pandas as pd
import streamlit as st

from evalcore import runs
from evalcore.errors import ConfigError, EvalcoreError, TemplateError
from evalcore.judge import JudgeItem, JudgeTemplate, ModelSettings, OutputSpec, RunSettings
from evalcore.judge.builtins import (
    GROUP_TITLES,
    MetricSpec,
    catalogue,
    configure_metric,
    get_metric,
)
from evalcore.labels import format_label
from evalcore.store import (
    DatasetRecord,
    EndpointRecord,
    JudgeRunRecord,
    ProjectRecord,
    Store,
    TemplateVersionRecord,
)
from ui.render import show_error
from ui.resources import database_url, get_store, get_worker
from ui.state import Identity


class K:
    """Session-state keys of the Judge page (widget keys and the page's own values)."""

    SECTION: Final = "jd_section"
    GOTO: Final = "jd_goto"  # widget values to set before the next run draws the widgets
    FLASH: Final = "jd_flash"  # a message shown once after a rerun
    DATASET: Final = "jd_dataset"
    ENDPOINT: Final = "jd_endpoint"
    MODEL: Final = "jd_model"
    # editor
    TEMPLATE: Final = "jd_template"
    VERSION: Final = "jd_version"
    LOADED: Final = "jd_loaded"  # the version id whose content the editor widgets hold
    NEW_NAME: Final = "jd_new_name"
    NEW_CRITERION: Final = "jd_new_criterion"
    CREATE: Final = "jd_create"
    SYSTEM: Final = "jd_system"
    USER: Final = "jd_user"
    RUBRIC: Final = "jd_rubric"
    DESCRIPTION: Final = "jd_description"
    PARSER: Final = "jd_parser"
    LABEL_FIELD: Final = "jd_label_field"
    REASON_FIELD: Final = "jd_reason_field"
    STRUCTURED: Final = "jd_structured"
    AGGREGATE: Final = "jd_aggregate"
    M_MODEL: Final = "jd_m_model"
    TEMPERATURE: Final = "jd_temperature"
    MAX_TOKENS: Final = "jd_max_tokens"
    SEED: Final = "jd_seed"
    N: Final = "jd_n"
    LOGPROBS: Final = "jd_logprobs"
    THRESHOLD: Final = "jd_threshold"
    NOTE: Final = "jd_note"
    SAVE: Final = "jd_save"
    PREVIEW_ITEM: Final = "jd_preview_item"
    TRY: Final = "jd_try"
    TRIAL: Final = "jd_trial"  # the last "try on 5 items" results
    DIFF_FROM: Final = "jd_diff_from"
    DIFF_TO: Final = "jd_diff_to"
    RESTORE_VERSION: Final = "jd_restore_version"
    RESTORE: Final = "jd_restore"
    # full runs
    LIMIT: Final = "jd_limit"
    CONCURRENCY: Final = "jd_concurrency"
    ORDER: Final = "jd_order"
    START: Final = "jd_start"
    RUN: Final = "jd_run"
    CANCEL: Final = "jd_cancel"
    RESUME: Final = "jd_resume"
    FILTER: Final = "jd_filter"
    INSPECT: Final = "jd_inspect"
    RERUN: Final = "jd_rerun_failed"
    DOWNLOAD: Final = "jd_download"
    # metric catalogue
    METRIC: Final = "jd_metric"
    COPY: Final = "jd_copy"
    METRIC_RUN: Final = "jd_metric_run"
    METRIC_TRY: Final = "jd_metric_try"

    @staticmethod
    def metric(name: str, part: str) -> str:
        """Keys of one metric's settings in the catalogue (threshold, parameters, criterion…)."""
        return f"jd_m_{part}_{name}"


SECTIONS: Final = ("Editor", "Runs", "Metrics")
NEW: Final = 0  # the "new template" entry of the template picker (database ids start at 1)
NO_ENDPOINT: Final = 0
FILTERS: Final = {
    "All": None,
    "Unparsed": ("unparsed",),
    "Failed": ("failed",),
    "Unparsed or failed": ("unparsed", "failed"),
}
RESULT_COLUMNS: Final = (
    "item_id",
    "order",
    "status",
    "label",
    "score",
    "reason",
    "raw",
    "error",
    "tokens",
    "latency_s",
    "cost",
    "cached",
)
_PARAM_CHOICES: Final = {
    "mode": ("precision", "recall", "f1"),
    "atomicity": ("low", "high"),
    "coverage": ("low", "high"),
}


@dataclass(frozen=True)
class Context:
    """What every section works with: who, where, on which data, sent where."""

    store: Store
    who: Identity
    project: ProjectRecord
    dataset: DatasetRecord | None
    endpoint: EndpointRecord | None
    model: str
    secrets: Mapping[str, Any] | None


# --- small helpers ----------------------------------------------------------------------------------


def _choose(key: str, options: Sequence[Any], default: Any) -> None:
    """Put ``default`` in a picker's state when its value is not one of ``options``."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = default


def _goto(**values: Any) -> None:
    """Set widget values on the next run (before the widgets are drawn) and rerun now."""
    st.session_state[K.GOTO] = {getattr(K, k.upper(), k): v for k, v in values.items()}
    st.rerun()


def _flash(message: str) -> None:
    st.session_state[K.FLASH] = message


def apply_goto() -> None:
    """Apply values a previous run asked for; call before any widget of the page is drawn."""
    for key, value in (st.session_state.pop(K.GOTO, None) or {}).items():
        st.session_state[key] = value


def _money(value: float | None) -> str:
    if value is None:
        return "unknown"
    return f"${value:,.4f}" if value < 100 else f"${value:,.2f}"


def _duration(seconds: float | None) -> str:
    if seconds is None or math.isnan(seconds):
        return "–"
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {rest} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


@st.cache_data(max_entries=8, show_spinner=False)
def _cached_items(url: str, dataset_id: int) -> list[JudgeItem]:
    # datasets are immutable: their items can be cached by (database, dataset id)
    return runs.judge_items(get_store(), dataset_id)[0]


def _items(dataset: DatasetRecord) -> list[JudgeItem]:
    return _cached_items(database_url(), dataset.id)


def _try(action: Callable[[], Any], *, title: str) -> Any:
    """Run ``action``; show an evalcore error as the user should read it and return ``None``."""
    try:
        return action()
    except EvalcoreError as exc:
        show_error(exc, title=title)
        return None


# --- the context bar ------------------------------------------------------------------------------


def context_bar(project: ProjectRecord, who: Identity) -> Context:
    """Dataset, endpoint and model pickers, and whether the endpoint's API key is set."""
    store = get_store()
    datasets = {d.id: d for d in store.list_datasets(project.id, latest_only=True)}
    endpoints = {e.id: e for e in store.list_endpoints()}
    secrets = get_worker().secrets
    c1, c2, c3 = st.columns([3, 2, 2])
    dataset = None
    if datasets:
        _choose(K.DATASET, list(datasets), next(iter(datasets)))
        chosen = c1.selectbox(
            "Dataset",
            list(datasets),
            key=K.DATASET,
            persist_state="session",
            format_func=lambda i: (
                f"{datasets[i].name} (v{datasets[i].version} · "
                f"{datasets[i].kind} · {datasets[i].n_items} items)"
            ),
        )
        dataset = datasets[chosen]
    else:
        c1.info("This project has no dataset yet. Upload one on the Datasets page.")
    endpoint = None
    options = [*endpoints, NO_ENDPOINT]
    _choose(K.ENDPOINT, options, options[0])
    picked = c2.selectbox(
        "Endpoint",
        options,
        key=K.ENDPOINT,
        persist_state="session",
        format_func=lambda i: endpoints[i].name if i in endpoints else "(none)",
        help="Endpoints and their key variables are set on the Settings page.",
    )
    if picked in endpoints:
        endpoint = endpoints[picked]
        status = runs.api_key_is_set(endpoint.api_key_env, secrets)
        if status is None:
            c2.caption("No API key needed.")
        elif status:
            c2.caption(f":green[`{endpoint.api_key_env}` is set]")
        else:
            c2.caption(
                f":red[`{endpoint.api_key_env}` is not set]: export it before starting the server, "
                "or add it to `.streamlit/secrets.toml`."
            )
    model = c3.text_input(
        "Model",
        key=K.MODEL,
        placeholder=(endpoint.default_model if endpoint and endpoint.default_model else ""),
        help="Empty: the template's own model setting, else the endpoint's default model.",
        persist_state="session",
    )
    return Context(store, who, project, dataset, endpoint, (model or "").strip(), secrets)


def section_picker() -> str:
    _choose(K.SECTION, SECTIONS, SECTIONS[0])
    flash = st.session_state.pop(K.FLASH, None)
    section = st.segmented_control(
        "Section",
        SECTIONS,
        key=K.SECTION,
        persist_state="session",
        required=True,
        label_visibility="collapsed",
    )
    if flash:
        st.success(flash, icon=":material/check:")
    return str(section or SECTIONS[0])


# --- the editor -----------------------------------------------------------------------------------


def _load_editor(version: TemplateVersionRecord) -> None:
    """Fill the editor widgets with a version's content."""
    ss = st.session_state
    template = JudgeTemplate.from_dict(version.content)
    ss[K.SYSTEM] = template.system
    ss[K.USER] = template.user
    ss[K.RUBRIC] = template.rubric
    ss[K.DESCRIPTION] = template.description
    ss[K.PARSER] = template.output.parser
    ss[K.LABEL_FIELD] = template.output.label_field
    ss[K.REASON_FIELD] = template.output.reason_field
    ss[K.STRUCTURED] = template.output.structured
    ss[K.AGGREGATE] = template.output.aggregate
    ss[K.M_MODEL] = template.model.model
    ss[K.TEMPERATURE] = float(template.model.temperature)
    ss[K.MAX_TOKENS] = int(template.model.max_tokens or 0)
    ss[K.SEED] = "" if template.model.seed is None else str(template.model.seed)
    ss[K.N] = int(template.model.n)
    ss[K.LOGPROBS] = bool(template.model.logprobs)
    ss[K.THRESHOLD] = format_label(version.content.get("threshold"))
    ss[K.LOADED] = version.id
    ss.pop(K.TRIAL, None)


def _draft(base: TemplateVersionRecord) -> dict[str, Any]:
    """The editor's content as a version's content (raises TemplateError/ConfigError when invalid)."""
    ss = st.session_state
    original = JudgeTemplate.from_dict(base.content)
    seed_text = str(ss.get(K.SEED) or "").strip()
    try:
        seed = int(seed_text) if seed_text else None
    except ValueError:
        raise TemplateError(f"the seed must be a whole number, not {seed_text!r}") from None
    template = JudgeTemplate(
        name=original.name,
        criterion=original.criterion,
        scale=original.scale,
        system=str(ss.get(K.SYSTEM) or ""),
        user=str(ss.get(K.USER) or ""),
        kind=original.kind,
        output=OutputSpec(
            parser=ss.get(K.PARSER, "auto"),
            label_field=str(ss.get(K.LABEL_FIELD) or "").strip(),
            reason_field=str(ss.get(K.REASON_FIELD) or "reason").strip() or "reason",
            structured=bool(ss.get(K.STRUCTURED)),
            aggregate=ss.get(K.AGGREGATE, "majority"),
        ),
        model=ModelSettings(
            model=str(ss.get(K.M_MODEL) or "").strip(),
            temperature=float(ss.get(K.TEMPERATURE) or 0.0),
            max_tokens=int(ss.get(K.MAX_TOKENS) or 0) or None,
            seed=seed,
            n=int(ss.get(K.N) or 1),
            logprobs=bool(ss.get(K.LOGPROBS)),
            top_logprobs=original.model.top_logprobs,
        ),
        description=str(ss.get(K.DESCRIPTION) or ""),
        rubric=str(ss.get(K.RUBRIC) or ""),
    )
    content = runs.template_content(template, like=base.content)
    if content.get(runs.BUILTIN_KEY) is not None and base.content.get("threshold") is not None:
        content["threshold"] = str(ss.get(K.THRESHOLD) or "").strip() or None
        spec = runs.metric_of(content)  # checks the threshold against the metric's scale
        content["threshold"] = spec.threshold if spec is not None else None
    return content


def _editor_widgets(base: TemplateVersionRecord) -> None:
    persist = {"persist_state": "session"}
    st.text_area("System message", key=K.SYSTEM, height=120, **persist)
    st.text_area(
        "User message",
        key=K.USER,
        height=260,
        help="Jinja2 with {{ variables }}: the item's fields and metadata columns, plus criterion, "
        "rubric and labels. A variable an item lacks is an error, shown in the preview.",
        **persist,
    )
    with st.expander("Rubric and description"):
        st.text_area("Rubric ({{ rubric }})", key=K.RUBRIC, height=120, **persist)
        st.text_input("Description", key=K.DESCRIPTION, **persist)
    template = JudgeTemplate.from_dict(base.content)
    st.caption(
        f"Criterion **{template.criterion}** · {template.kind} · scale "
        f"{', '.join(template.scale.display_labels)}"
    )
    c1, c2, c3, c4 = st.columns(4)
    c1.selectbox("Parser", ("auto", "json", "text"), key=K.PARSER, **persist)
    c2.text_input("Label field", key=K.LABEL_FIELD, placeholder=template.label_field, **persist)
    c3.text_input("Reason field", key=K.REASON_FIELD, **persist)
    c4.selectbox("n > 1 samples", ("majority", "mean"), key=K.AGGREGATE, **persist)
    st.checkbox(
        "Structured output (JSON schema through response_format)", key=K.STRUCTURED, **persist
    )
    c1, c2, c3, c4, c5 = st.columns(5)
    c1.text_input("Model setting", key=K.M_MODEL, help="Empty: the run's model", **persist)
    c2.number_input(
        "Temperature", min_value=0.0, max_value=2.0, step=0.1, key=K.TEMPERATURE, **persist
    )
    c3.number_input(
        "Max tokens", min_value=0, step=64, key=K.MAX_TOKENS, help="0: no limit", **persist
    )
    c4.text_input("Seed", key=K.SEED, help="Empty: none", **persist)
    c5.number_input("Samples (n)", min_value=1, max_value=20, step=1, key=K.N, **persist)
    st.checkbox("Ask for logprobs (a probability-weighted score)", key=K.LOGPROBS, **persist)
    if base.content.get(runs.BUILTIN_KEY) is not None and base.content.get("threshold") is not None:
        st.text_input(
            f"Pass threshold of the built-in metric {base.content[runs.BUILTIN_KEY]!r}",
            key=K.THRESHOLD,
            **persist,
        )


def _version_label(v: TemplateVersionRecord) -> str:
    note = f" · {v.note}" if v.note else ""
    return f"v{v.number} · {v.author} · {v.created_at:%Y-%m-%d %H:%M}{note}"


def _new_template_form(ctx: Context) -> None:
    criteria = {c.id: c for c in ctx.store.list_criteria(ctx.project.id)}
    if not criteria:
        st.info("The project has no criteria yet: add one on the Datasets page.")
        return
    c1, c2 = st.columns(2)
    name = c1.text_input("Template name", key=K.NEW_NAME, persist_state="session")
    _choose(K.NEW_CRITERION, list(criteria), next(iter(criteria)))
    criterion_id = c2.selectbox(
        "Criterion it judges",
        list(criteria),
        key=K.NEW_CRITERION,
        persist_state="session",
        format_func=lambda i: f"{criteria[i].name} ({', '.join(criteria[i].scale.display_labels)})",
    )
    st.caption(
        "Or copy a built-in metric into the project from the Metrics section, to edit it and "
        "compare it with the original."
    )
    if st.button("Create template", key=K.CREATE, type="primary"):
        if not (name or "").strip():
            st.error("Give the template a name.")
            return

        def create() -> TemplateVersionRecord:
            record = ctx.store.create_template(ctx.project.id, name.strip(), criterion_id)
            content = runs.new_template_content(name.strip(), criteria[criterion_id])
            return ctx.store.save_template_version(
                record.id, content, author=ctx.who.name, note="created"
            )

        version = _try(create, title="The template was not created")
        if version is not None:
            _flash(f"Created template {name.strip()!r}.")
            _goto(template=version.template_id, version=version.id, new_name="")


def editor_section(ctx: Context) -> None:
    store = ctx.store
    templates = {t.id: t for t in store.list_templates(ctx.project.id)}
    criteria = {c.id: c for c in store.list_criteria(ctx.project.id)}
    options = [*templates, NEW]
    _choose(K.TEMPLATE, options, options[0])
    c1, c2 = st.columns([3, 2])
    template_id = c1.selectbox(
        "Template",
        options,
        key=K.TEMPLATE,
        persist_state="session",
        format_func=lambda i: (
            f"{templates[i].name} · {criteria[templates[i].criterion_id].name}"
            if i in templates
            else "➕ New template"
        ),
    )
    if template_id == NEW:
        _new_template_form(ctx)
        return
    versions = store.list_template_versions(template_id)
    if not versions:
        st.info("This template has no version yet.")
        return
    by_id = {v.id: v for v in versions}
    newest_first = [v.id for v in reversed(versions)]
    _choose(K.VERSION, newest_first, newest_first[0])
    version_id = c2.selectbox(
        "Version",
        newest_first,
        key=K.VERSION,
        persist_state="session",
        format_func=lambda i: _version_label(by_id[i]),
    )
    base = by_id[version_id]
    kind = _try(lambda: runs.version_kind(base.content), title="This version cannot be read")
    if kind is None:
        return
    if kind != "template":
        _metric_version_view(ctx, base)
    else:
        if st.session_state.get(K.LOADED) != base.id:
            _load_editor(base)
            _match_dataset(ctx, JudgeTemplate.from_dict(base.content).kind)
        _template_editor(ctx, base)
    _history(ctx, templates[template_id].name, versions)


def _match_dataset(ctx: Context, kind: str) -> None:
    """Switch to a dataset of the template's kind (pairwise or pointwise) when there is one."""
    if ctx.dataset is None or ctx.dataset.kind == kind:
        return
    for dataset in ctx.store.list_datasets(ctx.project.id, latest_only=True):
        if dataset.kind == kind:
            _goto(dataset=dataset.id)


def _template_editor(ctx: Context, base: TemplateVersionRecord) -> None:
    left, right = st.columns([3, 2], gap="large")
    with left:
        _editor_widgets(base)
    draft: dict[str, Any] | None = None
    try:
        draft = _draft(base)
    except (TemplateError, ConfigError) as exc:
        with left:
            show_error(exc, title="The template has an error")
    with right:
        _variables_and_preview(ctx, draft or base.content, draft is not None)
    dirty = draft is not None and not runs.same_content(draft, base.content)
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    c1.text_input("Note for this version (optional)", key=K.NOTE, persist_state="session")
    if c2.button("Save as new version", key=K.SAVE, type="primary", disabled=draft is None):
        assert draft is not None
        outcome = _try(
            lambda: runs.save_version(
                ctx.store,
                base.template_id,
                draft,
                author=ctx.who.name,
                note=str(st.session_state.get(K.NOTE) or "").strip() or None,
                base_version_id=base.id,
            ),
            title="The version was not saved",
        )
        if outcome is not None and outcome.created:
            _flash(f"Saved version {outcome.version.number}.")
            _goto(version=outcome.version.id, note="")
        elif outcome is not None:
            st.info(
                f"Nothing to save: this is the same as version {outcome.version.number}.",
                icon=":material/info:",
            )
    if dirty:
        st.caption(
            ":orange[Unsaved changes.] A run uses a saved version; try them on 5 items first."
        )
    _trial_panel(ctx, draft, base)
    _run_panel(ctx, base, dirty)


def _variables_and_preview(ctx: Context, content: Mapping[str, Any], valid: bool) -> None:
    st.markdown("**Variables**")
    if ctx.dataset is None:
        st.caption("Choose a dataset to see its variables and a preview.")
        return
    items = _items(ctx.dataset)
    available = runs.version_variables(content, items)
    st.markdown(" ".join(f"`{v}`" for v in available))
    used = _try(lambda: runs.template_uses(content), title="The template cannot be read") or []
    unknown = sorted(set(used) - set(available))
    if unknown:
        st.warning(
            f"Not a field of {ctx.dataset.name}: " + ", ".join(f"`{v}`" for v in unknown),
            icon=":material/warning:",
        )
    if not items or not valid:
        return
    ids = [i.item_id for i in items]
    _choose(K.PREVIEW_ITEM, ids, ids[0])
    picked = st.selectbox("Preview on item", ids, key=K.PREVIEW_ITEM, persist_state="session")
    item = items[ids.index(picked)]
    messages = _try(
        lambda: runs.preview_messages(content, item), title="The template cannot be rendered"
    )
    for message in messages or []:
        st.markdown(f"**{message['role']}**")
        st.code(message["content"], language=None, wrap_lines=True)


def _metric_version_view(ctx: Context, base: TemplateVersionRecord) -> None:
    spec = _try(lambda: runs.metric_of(base.content), title="This version cannot be read")
    if spec is None:
        return
    st.markdown(
        f"**{spec.title}** (`{spec.name}`): a {spec.kind} metric, not a judge template, so there "
        "is no prompt to edit here. Its parameters and threshold are set in the Metrics section "
        "(a changed setting is a new version of this template)."
    )
    if spec.pipeline is not None:
        st.json({"parameters": spec.pipeline.parameters(), "threshold": spec.threshold})
    else:
        st.json({"threshold": spec.threshold})
    _trial_panel(ctx, base.content, base)
    _run_panel(ctx, base, False)


def _history(ctx: Context, name: str, versions: list[TemplateVersionRecord]) -> None:
    st.subheader("Version history")
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "version": v.number,
                    "author": v.author,
                    "saved": v.created_at,
                    "note": v.note or "",
                    "hash": v.content_hash[:12],
                }
                for v in reversed(versions)
            ]
        ),
        hide_index=True,
        key="jd_history_table",
    )
    if len(versions) < 2:
        return
    by_id = {v.id: v for v in versions}
    ids = [v.id for v in versions]
    c1, c2 = st.columns(2)
    _choose(K.DIFF_FROM, ids, ids[-2])
    _choose(K.DIFF_TO, ids, ids[-1])
    a = c1.selectbox(
        "Diff from",
        ids,
        key=K.DIFF_FROM,
        persist_state="session",
        format_func=lambda i: f"v{by_id[i].number}",
    )
    b = c2.selectbox(
        "to",
        ids,
        key=K.DIFF_TO,
        persist_state="session",
        format_func=lambda i: f"v{by_id[i].number}",
    )
    diff = runs.diff_versions(by_id[a], by_id[b], name=f"{name} ")
    st.code(diff or "(the two versions are the same)", language="diff")
    older = ids[:-1]
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    _choose(K.RESTORE_VERSION, older, older[-1])
    chosen = c1.selectbox(
        "Restore an older version (saved again as the newest)",
        older,
        key=K.RESTORE_VERSION,
        persist_state="session",
        format_func=lambda i: _version_label(by_id[i]),
    )
    if c2.button("Restore", key=K.RESTORE):
        outcome = _try(
            lambda: runs.restore_version(ctx.store, chosen, author=ctx.who.name),
            title="The version was not restored",
        )
        if outcome is not None:
            _flash(f"Restored version {by_id[chosen].number} as version {outcome.version.number}.")
            _goto(version=outcome.version.id)


# --- trying and running -------------------------------------------------------------------------


def _results_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A results table as shown: the columns people read, tokens in + out."""
    if frame.empty:
        return pd.DataFrame(columns=list(RESULT_COLUMNS))
    shown = frame.copy()
    if "tokens" not in shown.columns:
        shown["tokens"] = shown["tokens_in"].fillna(0) + shown["tokens_out"].fillna(0)
    if "label_text" in shown.columns:
        shown["label"] = shown["label_text"]
    for column in RESULT_COLUMNS:
        if column not in shown.columns:
            shown[column] = None
    return shown[list(RESULT_COLUMNS)]


def _trial_panel(
    ctx: Context, content: Mapping[str, Any] | None, base: TemplateVersionRecord
) -> None:
    st.subheader(f"Try on {runs.TRIAL_ITEMS} items")
    st.caption(
        "Runs the editor's content as it is (saved or not) on the first items of the dataset and "
        "shows the raw replies beside the parsed labels. Nothing is saved as a run; the replies "
        "are cached, so a full run does not pay for them again."
    )
    ready = content is not None and ctx.dataset is not None
    if st.button(f"Try on {runs.TRIAL_ITEMS} items", key=K.TRY, disabled=not ready):
        assert content is not None
        assert ctx.dataset is not None
        with st.spinner(f"Judging {runs.TRIAL_ITEMS} items…"):
            trial = _try(
                lambda: runs.try_version(
                    ctx.store,
                    content,
                    dataset_id=ctx.dataset.id,  # type: ignore[union-attr]
                    endpoint_id=ctx.endpoint.id if ctx.endpoint else None,
                    model=ctx.model or None,
                    secrets=ctx.secrets,
                ),
                title="The try did not run",
            )
        if trial is not None:
            st.session_state[K.TRIAL] = {
                "version": base.id,
                "model": trial.model,
                "table": trial.table(),
                "details": {r.item_id: dict(r.details) for r in trial.results if r.details},
                "requests": trial.summary.requests,
            }
    shown = st.session_state.get(K.TRIAL)
    if shown and shown.get("version") == base.id:
        st.caption(
            f"Model {shown['model'] or '(none)'} · {shown['requests']} requests sent "
            "(cached replies cost none)"
        )
        st.dataframe(_results_frame(shown["table"]), hide_index=True, key="jd_trial_table")
        for item_id, details in shown["details"].items():
            with st.expander(f"Details of item {item_id}"):
                st.json(details)


def _subset(ctx: Context) -> list[str] | None:
    if ctx.dataset is None:
        return None
    if int(st.session_state.get(K.LIMIT) or 0) > ctx.dataset.n_items:
        st.session_state[K.LIMIT] = 0
    st.number_input(
        "Only the first N items (0: all)",
        min_value=0,
        max_value=ctx.dataset.n_items,
        step=10,
        key=K.LIMIT,
        persist_state="session",
    )
    limit = int(st.session_state.get(K.LIMIT) or 0)
    if not limit or limit >= ctx.dataset.n_items:
        return None
    return [i.item_id for i in _items(ctx.dataset)[:limit]]


def _run_panel(ctx: Context, base: TemplateVersionRecord, dirty: bool) -> None:
    st.subheader("Run on the dataset")
    if ctx.dataset is None:
        st.info("Choose a dataset first.")
        return
    spec = runs.metric_of(base.content) if base.content.get(runs.BUILTIN_KEY) else None
    is_function = spec is not None and spec.kind == "function"
    pairwise = (
        spec.is_pairwise
        if spec is not None
        else JudgeTemplate.from_dict(base.content).kind == "pairwise"
    )
    c1, c2, c3 = st.columns(3)
    with c1:
        item_ids = _subset(ctx)
    c2.number_input(
        "Concurrent requests",
        min_value=1,
        max_value=64,
        value=8,
        key=K.CONCURRENCY,
        persist_state="session",
    )
    order = "single"
    if pairwise:
        default_order = spec.order_mode if spec is not None else "single"
        _choose(K.ORDER, ("single", "flip", "both"), default_order)
        order = c3.selectbox(
            "Pairwise order",
            ("single", "flip", "both"),
            key=K.ORDER,
            persist_state="session",
            format_func={
                "single": "as given (A, B)",
                "flip": "flip half of the items",
                "both": "both orders",
            }.get,
        )
    version_note = f"version {base.number}" + (" (your changes are not saved)" if dirty else "")
    try:
        model = runs.resolve_model(base.content, ctx.model or None, ctx.endpoint)
        estimate = runs.estimate_run(
            ctx.store,
            dataset_id=ctx.dataset.id,
            template_version_id=base.id,
            model=model or "",
            order_mode=order,
            item_ids=item_ids,
        )
    except EvalcoreError as exc:
        show_error(exc, title=f"Estimate of {version_note}")
        return
    st.markdown(f"**Estimate** of {version_note} on {ctx.dataset.name}, model {model or '(none)'}:")
    e1, e2, e3, e4, e5 = st.columns(5)
    e1.metric("Results", estimate.n_units)
    e2.metric("Requests", estimate.n_requests)
    e3.metric("Already cached", estimate.n_cached)
    e4.metric(
        "Tokens (in + out)",
        f"{estimate.expected_tokens_in + estimate.expected_tokens_out:,}",
        help=f"in ≈ {estimate.expected_tokens_in:,}, out ≈ {estimate.expected_tokens_out:,}"
        + (f" (at most {estimate.max_tokens_out:,})" if estimate.max_tokens_out else ""),
    )
    e5.metric("Expected cost", _money(estimate.expected_cost))
    if estimate.expected_cost is None and model:
        st.caption(f"No price for {model}: add one on the Settings page.")
    if spec is not None and spec.kind == "pipeline":
        st.caption(
            "A multi-step metric: the requests are an upper bound (every step of every item)."
        )
    blocked = dirty or (ctx.endpoint is None and not is_function)
    if ctx.endpoint is None and not is_function:
        st.caption("Choose an endpoint to start a run.")
    if st.button("Start run", key=K.START, type="primary", disabled=blocked):
        settings = RunSettings(
            concurrency=int(st.session_state.get(K.CONCURRENCY) or 8),
            order_mode=order,  # type: ignore[arg-type]
        )
        run = _try(
            lambda: runs.plan_run(
                ctx.store,
                dataset_id=ctx.dataset.id,  # type: ignore[union-attr]
                template_version_id=base.id,
                endpoint_id=ctx.endpoint.id if ctx.endpoint else None,
                model=model,
                settings=settings,
                item_ids=item_ids,
            ),
            title="The run was not started",
        )
        if run is not None:
            get_worker().submit(run.id)
            _flash(f"Started run #{run.id}: {run.name}. It goes on if you leave the page.")
            _goto(section="Runs", run=run.id)


# --- runs ------------------------------------------------------------------------------------------


def _run_label(run: JudgeRunRecord) -> str:
    # no status here: the picker's labels are not redrawn while a run's progress is polled
    return f"#{run.id} {run.name}"


def runs_section(ctx: Context) -> None:
    store = ctx.store
    all_runs = store.list_runs(project_id=ctx.project.id)
    if not all_runs:
        st.info("No runs yet. Start one from the Editor or the Metrics section.")
        return
    datasets = {d.id: d.name for d in store.list_datasets(ctx.project.id)}
    rows = []
    for run in all_runs:
        progress = store.run_progress(run.id)
        rows.append(
            {
                "run": run.id,
                "name": run.name,
                "status": run.status,
                "dataset": datasets.get(run.dataset_id, run.dataset_id),
                "model": run.model or "",
                "done": f"{progress.finished} / {progress.planned}",
                "unparsed": progress.unparsed,
                "failed": progress.failed,
                "cost": progress.cost,
                "created": run.created_at,
            }
        )
    st.dataframe(
        pd.DataFrame(rows),
        hide_index=True,
        key="jd_runs_table",
        column_config={"cost": st.column_config.NumberColumn(format="$%.4f")},
    )
    by_id = {r.id: r for r in all_runs}
    _choose(K.RUN, list(by_id), all_runs[0].id)
    run_id = st.selectbox(
        "Run",
        list(by_id),
        key=K.RUN,
        persist_state="session",
        format_func=lambda i: _run_label(by_id[i]),
    )
    run = by_id[run_id]
    if not run.is_terminal:
        _live_progress(run.id)
    else:
        _run_summary(ctx, run.id)
    _results(ctx, store.get_run(run.id))


def _progress_body(run_id: int) -> runs.RunSnapshot:
    snap = runs.run_snapshot(get_store(), run_id)
    p = snap.progress
    st.progress(snap.fraction, text=f"{p.finished} of {p.planned} results · {snap.run.status}")
    c1, c2, c3, c4, c5 = st.columns(5)
    c1.metric("Done", f"{p.finished} / {p.planned}")
    c2.metric("Rate", "–" if snap.rate is None else f"{snap.rate:.1f}/s")
    c3.metric("Time left", _duration(snap.eta_s) if snap.is_active else "–")
    c4.metric("Failed · unparsed", f"{p.failed} · {p.unparsed}")
    c5.metric("Cost so far", _money(p.cost))
    if snap.run.error:
        st.error(snap.run.error, icon=":material/error:")
    return snap


@st.fragment(run_every=1.0)
def _live_progress(run_id: int) -> None:
    """The progress of a run that is going on, read from the store every second."""
    snap = _progress_body(run_id)
    if not snap.is_active:
        st.rerun(scope="app")  # show the finished run's results
    if snap.run.status == "cancelling":
        st.info("Stopping: requests in flight may still finish.")
    elif st.button("Cancel run", key=K.CANCEL):
        get_worker().cancel(run_id)
        st.info("Cancel requested.")


def _run_summary(ctx: Context, run_id: int) -> None:
    snap = _progress_body(run_id)
    run = snap.run
    resumable = run.status in ("cancelled", "interrupted", "failed") and run.source == "run"
    if (
        resumable
        and run.template_version_id is not None
        and st.button("Resume", key=K.RESUME, help="Go on with the items not judged yet")
    ):
        ctx.store.set_run_status(run.id, "pending")
        get_worker().submit(run.id)
        st.rerun()


def _results(ctx: Context, run: JudgeRunRecord) -> None:
    st.subheader("Results")
    choice = st.segmented_control(
        "Show", list(FILTERS), key=K.FILTER, persist_state="session", default="All", required=True
    )
    statuses = FILTERS.get(str(choice or "All"))
    frame = runs.results_table(ctx.store, run.id, statuses)
    st.dataframe(
        _results_frame(frame),
        hide_index=True,
        key="jd_results_table",
        column_config={
            "raw": st.column_config.TextColumn(width="large"),
            "reason": st.column_config.TextColumn(width="medium"),
        },
    )
    progress = ctx.store.run_progress(run.id)
    c1, c2 = st.columns([1, 3])
    rerunnable = progress.failed and run.is_terminal and run.template_version_id is not None
    if rerunnable and c1.button(f"Re-run {progress.failed} failed", key=K.RERUN):
        new = _try(
            lambda: runs.rerun_failed(
                ctx.store,
                run.id,
                endpoint_id=None if run.endpoint_id else _endpoint_id(ctx),
            ),
            title="The failed items were not re-run",
        )
        if new is not None:
            get_worker().submit(new.id)
            _flash(f"Started run #{new.id} over the {new.n_planned} failed items.")
            _goto(run=new.id)
    if not frame.empty:
        c2.download_button(
            "Download results (CSV)",
            frame.drop(columns=["item_pk"], errors="ignore").to_csv(index=False),
            file_name=f"run-{run.id}.csv",
            mime="text/csv",
            key=K.DOWNLOAD,
        )
        _inspect(frame)


def _endpoint_id(ctx: Context) -> int | None:
    return ctx.endpoint.id if ctx.endpoint else None


def _inspect(frame: pd.DataFrame) -> None:
    keys = [
        f"{row.item_id}" + ("" if row.order == "AB" else " (B, A)") for row in frame.itertuples()
    ]
    _choose(K.INSPECT, keys, keys[0])
    picked = st.selectbox(
        "Inspect an item: raw reply, reason and intermediates",
        keys,
        key=K.INSPECT,
        persist_state="session",
    )
    row = frame.iloc[keys.index(picked)]
    st.markdown(f"**{row['status']}** · label `{format_label(row['label'])}`")
    if isinstance(row["reason"], str) and row["reason"]:
        st.markdown(f"Reason: {row['reason']}")
    if isinstance(row["error"], str) and row["error"]:
        st.error(row["error"], icon=":material/error:")
    st.code(row["raw"] if isinstance(row["raw"], str) else "", language=None, wrap_lines=True)
    details = row["details"]
    if isinstance(details, dict) and details:
        st.json(details)


# --- the metric catalogue ------------------------------------------------------------------------


def _configured(spec: MetricSpec) -> MetricSpec:
    """The metric with the threshold and parameters chosen in the catalogue."""
    parameters = spec.pipeline.parameters() if spec.pipeline is not None else {}
    columns = iter(st.columns(max(1, len(parameters) + (spec.threshold is not None))))
    persist = {"persist_state": "session"}
    if spec.pipeline is not None:
        params: dict[str, Any] = {}
        for name, value in parameters.items():
            key = K.metric(spec.name, f"p_{name}")
            column = next(columns)
            if name in _PARAM_CHOICES:
                choices = _PARAM_CHOICES[name]
                index = list(choices).index(value)
                params[name] = column.selectbox(name, choices, key=key, index=index, **persist)
            elif isinstance(value, float):
                params[name] = column.number_input(name, value=value, step=0.1, key=key, **persist)
            else:
                params[name] = column.text_input(name, value=str(value), key=key, **persist)
        spec = configure_metric(spec, params)
    if spec.threshold is not None:
        threshold = next(columns).text_input(
            "Pass threshold",
            value=format_label(spec.threshold),
            key=K.metric(spec.name, "threshold"),
            help=spec.pass_rule,
            **persist,
        )
        spec = spec.with_threshold(threshold)
    return spec


def metrics_section(ctx: Context) -> None:
    entries = catalogue()
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "metric": e.name,
                    "group": GROUP_TITLES.get(e.group, e.group),
                    "measures": e.description,
                    "kind": e.kind,
                    "scale": e.scale,
                    "threshold": e.threshold,
                }
                for e in entries
            ]
        ),
        hide_index=True,
        key="jd_catalogue",
    )
    by_name = {e.name: e for e in entries}
    names = list(by_name)
    _choose(K.METRIC, names, names[0])
    name = st.selectbox(
        "Metric",
        names,
        key=K.METRIC,
        persist_state="session",
        format_func=lambda n: f"{by_name[n].title} ({n})",
    )
    entry = by_name[name]
    st.subheader(entry.title)
    version = f" · version `{entry.version}`" if entry.version else ""
    st.caption(f"{entry.origin} · {entry.kind}{version}")
    st.markdown(entry.description)
    lines = ["- **Inputs**: " + "; ".join(entry.inputs)]
    if entry.conversation_inputs:
        lines.append("- **Or a conversation**: " + "; ".join(entry.conversation_inputs))
    if entry.conversation_note:
        lines.append(f"- **Conversations**: {entry.conversation_note}")
    lines += [
        f"- **Scale**: {entry.scale}",
        f"- **Reply**: {entry.reply}",
        f"- **Threshold**: {entry.threshold}; {entry.pass_rule}",
    ]
    st.markdown("\n".join(lines))
    if entry.example_inputs:
        with st.expander("Example", expanded=True):
            for key, value in entry.example_inputs:
                st.markdown(f"**{key}**: {value}")
            st.code(entry.example_output, language=None, wrap_lines=True)
    st.markdown("**Use it**")
    spec = _try(lambda: _configured(get_metric(name)), title="These settings are not valid")
    if spec is None:
        return
    compatible = {c.id: c for c in runs.metric_criteria(ctx.store, ctx.project.id, spec)}
    options = [*compatible, NEW]
    crit_key = K.metric(name, "criterion")
    _choose(crit_key, options, options[0])
    criterion_id = st.selectbox(
        "Criterion its results are stored under (and calibrated against)",
        options,
        key=crit_key,
        persist_state="session",
        format_func=lambda i: (
            compatible[i].name if i in compatible else "A new criterion named after the metric"
        ),
    )
    chosen_criterion = None if criterion_id == NEW else int(criterion_id)
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    copy_name = c1.text_input(
        "Name of the copy",
        value=f"{name} copy",
        key=K.metric(name, "copy_name"),
        persist_state="session",
    )
    if c2.button("Copy into project", key=K.COPY, help="A project template to edit and compare"):
        version_record = _try(
            lambda: runs.copy_metric(
                ctx.store,
                ctx.project.id,
                spec,
                author=ctx.who.name,
                name=copy_name,
                criterion_id=chosen_criterion,
            ),
            title="The metric was not copied",
        )
        if version_record is not None:
            template = ctx.store.get_template(version_record.template_id)
            _flash(f"Copied {name} into the project as {template.name!r}.")
            _goto(section="Editor", template=template.id, version=version_record.id)
    c1, c2 = st.columns(2)
    dataset_name = ctx.dataset.name if ctx.dataset else "the dataset"
    if (
        c1.button(f"Try on {runs.TRIAL_ITEMS} items of {dataset_name}", key=K.METRIC_TRY)
        and ctx.dataset is not None
    ):
        with st.spinner("Judging…"):
            trial = _try(
                lambda: runs.try_version(
                    ctx.store,
                    runs.metric_content(spec),
                    dataset_id=ctx.dataset.id,  # type: ignore[union-attr]
                    endpoint_id=_endpoint_id(ctx),
                    model=ctx.model or None,
                    secrets=ctx.secrets,
                ),
                title="The try did not run",
            )
        if trial is not None:
            st.dataframe(_results_frame(trial.table()), hide_index=True, key="jd_metric_trial")
            for result in trial.results:
                if result.details:
                    with st.expander(f"Details of item {result.item_id}"):
                        st.json(dict(result.details))
    if c2.button(f"Run on {dataset_name}", key=K.METRIC_RUN, type="primary"):
        run = _try(
            lambda: _start_metric(ctx, spec, chosen_criterion), title="The run was not started"
        )
        if run is not None:
            get_worker().submit(run.id)
            _flash(f"Started run #{run.id}: {run.name}.")
            _goto(section="Runs", run=run.id)


def _start_metric(ctx: Context, spec: MetricSpec, criterion_id: int | None) -> JudgeRunRecord:
    if ctx.dataset is None:
        raise ConfigError("choose a dataset first")
    version = runs.metric_version(
        ctx.store, ctx.project.id, spec, author=ctx.who.name, criterion_id=criterion_id
    )
    return runs.plan_run(
        ctx.store,
        dataset_id=ctx.dataset.id,
        template_version_id=version.id,
        endpoint_id=_endpoint_id(ctx),
        model=ctx.model or None,
    )
