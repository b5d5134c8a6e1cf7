"""The Judge page's parts: the template editor, "try on 5 items", full runs, run results, the metric
catalogue.

Everything here reads widgets, calls :mod:`evalcore.runs` and renders; runs execute in the server's
background worker (:func:`ui.resources.get_worker`) and their progress is read from the store, so a run
goes on when the user leaves the page. The page's session-state keys are the constants of
:class:`ui.state.Judge`.
"""

from __future__ import annotations

import hashlib
import json
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
    entry_facts,
    get_metric,
)
from evalcore.labels import format_label
from evalcore.report import table_bytes
from evalcore.store import (
    Actor,
    DatasetRecord,
    EndpointRecord,
    JudgeRunRecord,
    MetricVersionContent,
    ProjectRecord,
    Store,
    TemplateVersionRecord,
)
from evalcore.words import plural
from ui import cache, state
from ui.render import code_span, md_escape, show_error, show_text
from ui.resources import get_store, get_worker
from ui.state import Judge

SECTIONS: Final = ("Editor", "Runs", "Metrics", "Improve")
NEW: Final = 0  # the "new template" entry of the template picker (database ids start at 1)
NO_ENDPOINT: Final = 0
POLL_S: Final = 1.0  # how often the Runs section is redrawn while a run is going
FILTERS: Final = {
    "All": None,
    "Unparsed": ("unparsed",),
    "Failed": ("failed",),
    "Unparsed or failed": ("unparsed", "failed"),
}
RESULT_COLUMNS: Final = runs.TRIAL_COLUMNS
_PARAM_CHOICES: Final = {
    "mode": ("precision", "recall", "f1"),
    "atomicity": ("low", "high"),
    "coverage": ("low", "high"),
}


@dataclass(frozen=True)
class Context:
    """What every section works with: who, where, on which data, sent where."""

    store: Store
    who: Actor
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


def _picker(
    where: Any, label: str, options: Sequence[Any], *, key: str, default: Any, **kwargs: Any
) -> Any:
    """A selectbox kept for the session, on ``default`` while its value is not one of ``options``."""
    _choose(key, options, default)
    return where.selectbox(label, options, key=key, persist_state="session", **kwargs)


def _goto(**values: Any) -> None:
    """Set widget values on the next run (before the widgets are drawn) and rerun now."""
    st.session_state[Judge.GOTO] = {getattr(Judge, k.upper(), k): v for k, v in values.items()}
    st.rerun()


def _flash(message: str) -> None:
    st.session_state[Judge.FLASH] = message


def apply_goto() -> None:
    """Apply values a previous run asked for; call before any widget of the page is drawn."""
    for key, value in (st.session_state.pop(Judge.GOTO, None) or {}).items():
        st.session_state[key] = value


def _money(value: float | None) -> str:
    if value is None:
        return "unknown"
    return f"${value:,.4f}" if value < 100 else f"${value:,.2f}"


def _duration(seconds: float | None) -> str:
    if seconds is None or math.isnan(seconds):
        return "–"
    minutes, rest = divmod(max(0, round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return (
        f"{hours} h {minutes} min"
        if hours
        else f"{minutes} min {rest} s"
        if minutes
        else f"{rest} s"
    )


def _items(dataset: DatasetRecord) -> list[JudgeItem]:
    return cache.judge_items(get_store(), dataset.id)


def _try(action: Callable[[], Any], *, title: str) -> Any:
    """Run ``action``; show an evalcore error as the user should read it and return ``None``."""
    try:
        return action()
    except EvalcoreError as exc:
        show_error(exc, title=title)
        return None


# --- the context bar ------------------------------------------------------------------------------


def context_bar(project: ProjectRecord, who: Actor) -> Context:
    """Dataset, endpoint and model pickers, and (for an admin) whether the endpoint's API key is
    set: nobody else learns whether a variable exists."""
    store = get_store()
    datasets = {d.id: d for d in store.list_datasets(project.id, latest_only=True)}
    endpoints = {e.id: e for e in store.list_endpoints()}
    secrets = get_worker().secrets
    c1, c2, c3 = st.columns([3, 2, 2])
    dataset = None
    if datasets:
        chosen = _picker(
            c1,
            "Dataset",
            list(datasets),
            key=Judge.DATASET,
            default=next(iter(datasets)),
            format_func=lambda i: (
                f"{datasets[i].name} (v{datasets[i].version} · "
                f"{datasets[i].kind} · {plural(datasets[i].n_items, 'item')})"
            ),
        )
        dataset = datasets[chosen]
    else:
        c1.info("This project has no dataset yet. Upload one on the Datasets page.")
    endpoint = None
    # by default a hosted API whose key is set, else one that needs a key (with a note that it is
    # not set), and a local server (no key) only when there is nothing else
    rank = {True: 0, False: 1, None: 2}
    options = [
        *sorted(
            endpoints,
            key=lambda i: (
                rank[runs.api_key_is_set(endpoints[i].api_key_env, secrets)]
                if who.is_admin
                else 2 * (not endpoints[i].api_key_env)  # hosted first, without asking about keys
            ),
        ),
        NO_ENDPOINT,
    ]
    picked = _picker(
        c2,
        "Endpoint",
        options,
        key=Judge.ENDPOINT,
        default=options[0],
        format_func=lambda i: endpoints[i].name if i in endpoints else "(none)",
        help="Endpoints and their key variables are set on the Settings page.",
    )
    if picked in endpoints:
        endpoint = endpoints[picked]
        status = runs.api_key_is_set(endpoint.api_key_env, secrets)
        if not who.is_admin:
            pass  # only an admin learns whether a variable exists
        elif status is None:
            c2.caption("No API key needed.")
        elif status:
            c2.caption(f":green[{code_span(endpoint.api_key_env)} is set]")
        else:
            c2.caption(
                f":red[{code_span(endpoint.api_key_env)} is not set]: export it before starting the server "
                "or add it to `.streamlit/secrets.toml`; a local server (vLLM, Ollama) is added "
                "on the Settings page."
            )
    model = c3.text_input(
        "Model",
        key=Judge.MODEL,
        placeholder="the template's default model",
        help="The model every try and run on this page uses. Empty: each template's (or built-in "
        "metric's) default model, else the endpoint's default. The estimate above a run names "
        "the model it will use.",
        persist_state="session",
    )
    return Context(store, who, project, dataset, endpoint, (model or "").strip(), secrets)


def section_picker() -> str:
    _choose(Judge.SECTION, SECTIONS, SECTIONS[0])
    flash = st.session_state.pop(Judge.FLASH, None)
    section = st.segmented_control(
        "Section",
        SECTIONS,
        key=Judge.SECTION,
        persist_state="session",
        required=True,
        label_visibility="collapsed",
    )
    if flash:
        st.success(md_escape(flash), icon=":material/check:")  # it may quote a name
    return str(section or SECTIONS[0])


# --- the editor -----------------------------------------------------------------------------------


def _load_editor(version: TemplateVersionRecord) -> None:
    """Fill the editor widgets with a version's content."""
    ss = st.session_state
    template = JudgeTemplate.from_dict(version.content)
    ss[Judge.SYSTEM] = template.system
    ss[Judge.USER] = template.user
    ss[Judge.RUBRIC] = template.rubric
    ss[Judge.DESCRIPTION] = template.description
    ss[Judge.PARSER] = template.output.parser
    ss[Judge.LABEL_FIELD] = template.output.label_field
    ss[Judge.REASON_FIELD] = template.output.reason_field
    ss[Judge.STRUCTURED] = template.output.structured
    ss[Judge.AGGREGATE] = template.output.aggregate
    ss[Judge.TEMPERATURE] = float(template.model.temperature)
    ss[Judge.MAX_TOKENS] = int(template.model.max_tokens or 0)
    ss[Judge.SEED] = "" if template.model.seed is None else str(template.model.seed)
    ss[Judge.N] = int(template.model.n)
    ss[Judge.LOGPROBS] = bool(template.model.logprobs)
    ss[Judge.THRESHOLD] = format_label(version.content.get("threshold"))
    ss[Judge.LOADED] = version.id
    ss.pop(Judge.TRIAL, None)


def _draft(base: TemplateVersionRecord) -> dict[str, Any]:
    """The editor's content as a version's content (raises TemplateError/ConfigError when invalid)."""
    ss = st.session_state
    original = JudgeTemplate.from_dict(base.content)
    seed_text = str(ss.get(Judge.SEED) or "").strip()
    try:
        seed = int(seed_text) if seed_text else None
    except ValueError:
        raise TemplateError(f"the seed must be a whole number, not {seed_text!r}") from None
    template = JudgeTemplate(
        name=original.name,
        criterion=original.criterion,
        scale=original.scale,
        system=str(ss.get(Judge.SYSTEM) or ""),
        user=str(ss.get(Judge.USER) or ""),
        kind=original.kind,
        output=OutputSpec(
            parser=ss.get(Judge.PARSER, "auto"),
            label_field=str(ss.get(Judge.LABEL_FIELD) or "").strip(),
            reason_field=str(ss.get(Judge.REASON_FIELD) or "reason").strip() or "reason",
            structured=bool(ss.get(Judge.STRUCTURED)),
            aggregate=ss.get(Judge.AGGREGATE, "majority"),
        ),
        model=ModelSettings(
            model=original.model.model,  # the run's model is chosen once, in the context bar
            temperature=float(ss.get(Judge.TEMPERATURE) or 0.0),
            max_tokens=int(ss.get(Judge.MAX_TOKENS) or 0) or None,
            seed=seed,
            n=int(ss.get(Judge.N) or 1),
            logprobs=bool(ss.get(Judge.LOGPROBS)),
            top_logprobs=original.model.top_logprobs,
        ),
        description=str(ss.get(Judge.DESCRIPTION) or ""),
        rubric=str(ss.get(Judge.RUBRIC) or ""),
    )
    content = runs.template_content(template, like=base.content)
    if content.get(runs.BUILTIN_KEY) is not None and base.content.get("threshold") is not None:
        content["threshold"] = str(ss.get(Judge.THRESHOLD) or "").strip() or None
        spec = runs.metric_of(content)  # checks the threshold against the metric's scale
        content["threshold"] = spec.threshold if spec is not None else None
    return content


def _editor_widgets(base: TemplateVersionRecord) -> None:
    persist = {"persist_state": "session"}
    st.text_area("System message", key=Judge.SYSTEM, height=120, **persist)
    st.text_area(
        "User message",
        key=Judge.USER,
        height=260,
        help="Jinja2 with {{ variables }}: the item's fields and metadata columns, plus criterion, "
        "rubric and labels. A variable an item lacks is an error, shown in the preview.",
        **persist,
    )
    with st.expander("Rubric and description"):
        st.text_area("Rubric ({{ rubric }})", key=Judge.RUBRIC, height=120, **persist)
        st.text_input("Description", key=Judge.DESCRIPTION, **persist)
    template = JudgeTemplate.from_dict(base.content)
    st.caption(
        f"Criterion **{md_escape(template.criterion)}** · {template.kind} · scale "
        f"{md_escape(', '.join(template.scale.display_labels))}"
    )
    c1, c2, c3, c4 = st.columns(4)
    c1.selectbox("Parser", ("auto", "json", "text"), key=Judge.PARSER, **persist)
    c2.text_input("Label field", key=Judge.LABEL_FIELD, placeholder=template.label_field, **persist)
    c3.text_input("Reason field", key=Judge.REASON_FIELD, **persist)
    c4.selectbox("n > 1 samples", ("majority", "mean"), key=Judge.AGGREGATE, **persist)
    st.checkbox(
        "Structured output (JSON schema through response_format)", key=Judge.STRUCTURED, **persist
    )
    c1, c2, c3, c4 = st.columns(4)
    c1.number_input(
        "Temperature", min_value=0.0, max_value=2.0, step=0.1, key=Judge.TEMPERATURE, **persist
    )
    c2.number_input(
        "Max tokens", min_value=0, step=64, key=Judge.MAX_TOKENS, help="0: no limit", **persist
    )
    c3.text_input("Seed", key=Judge.SEED, help="Empty: none", **persist)
    c4.number_input("Samples (n)", min_value=1, max_value=20, step=1, key=Judge.N, **persist)
    st.checkbox("Ask for logprobs (a probability-weighted score)", key=Judge.LOGPROBS, **persist)
    metric = base.parsed
    if isinstance(metric, MetricVersionContent) and metric.threshold is not None:
        st.text_input(
            f"Pass threshold of the built-in metric {md_escape(repr(metric.name))}",
            key=Judge.THRESHOLD,
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
    name = c1.text_input("Template name", key=Judge.NEW_NAME, persist_state="session")
    criterion_id = _picker(
        c2,
        "Criterion it judges",
        list(criteria),
        key=Judge.NEW_CRITERION,
        default=next(iter(criteria)),
        format_func=lambda i: f"{criteria[i].name} ({', '.join(criteria[i].scale.display_labels)})",
    )
    st.caption(
        "Or copy a built-in metric into the project from the Metrics section, to edit it and "
        "compare it with the original."
    )
    if st.button("Create template", key=Judge.CREATE, type="primary"):
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
    c1, c2 = st.columns([3, 2])
    template_id = _picker(
        c1,
        "Template",
        options,
        key=Judge.TEMPLATE,
        default=options[0],
        format_func=lambda i: (
            f"{templates[i].name} · {criteria[templates[i].criterion_id].name}"
            if i in templates
            else "New template…"
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
    version_id = _picker(
        c2,
        "Version",
        newest_first,
        key=Judge.VERSION,
        default=newest_first[0],
        format_func=lambda i: _version_label(by_id[i]),
    )
    base = by_id[version_id]
    kind = _try(lambda: runs.version_kind(base.content), title="This version cannot be read")
    if kind is None:
        return
    if kind != "template":
        _metric_version_view(ctx, base)
    else:
        if st.session_state.get(Judge.LOADED) != base.id:
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
    c1.text_input("Note for this version (optional)", key=Judge.NOTE, persist_state="session")
    if c2.button("Save as new version", key=Judge.SAVE, type="primary", disabled=draft is None):
        assert draft is not None
        outcome = _try(
            lambda: runs.save_version(
                ctx.store,
                base.template_id,
                draft,
                author=ctx.who.name,
                note=str(st.session_state.get(Judge.NOTE) or "").strip() or None,
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
            ":orange[Unsaved changes.] A run uses a saved version; try them on a few items first."
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
    st.markdown(" ".join(code_span(v) for v in available))
    used = _try(lambda: runs.template_uses(content), title="The template cannot be read") or []
    unknown = sorted(set(used) - set(available))
    if unknown:
        st.warning(
            f"Not a field of {md_escape(ctx.dataset.name)}: "
            + ", ".join(code_span(v) for v in unknown),
            icon=":material/warning:",
        )
    if not items or not valid:
        return
    ids = [i.item_id for i in items]
    picked = _picker(st, "Preview on item", ids, key=Judge.PREVIEW_ITEM, default=ids[0])
    item = items[ids.index(picked)]
    messages, error = preview(content, ctx.dataset.id, item)
    if error is not None:
        show_error(error, title="The template cannot be rendered")
    for message in messages or []:
        st.markdown(f"**{md_escape(message['role'])}**")
        st.code(message["content"], language=None, wrap_lines=True)


def preview(
    content: Mapping[str, Any], dataset_id: int, item: JudgeItem
) -> tuple[list[dict[str, str]] | None, EvalcoreError | None]:
    """The messages the draft sends for ``item``, or the error that stops it: rendered only when
    the draft, the dataset or the item changed since the last rerun (a failure is kept as well,
    so a template that is slow to fail is not rendered again on every keystroke elsewhere)."""
    digest = hashlib.sha256(
        json.dumps([content, dataset_id, item.item_id], sort_keys=True, default=str).encode()
    ).hexdigest()
    kept = st.session_state.get(Judge.PREVIEW_RENDERED)
    if kept is None or kept[0] != digest:
        try:
            kept = (digest, runs.preview_messages(content, item), None)
        except EvalcoreError as exc:
            kept = (digest, None, exc)
        st.session_state[Judge.PREVIEW_RENDERED] = kept
    return kept[1], kept[2]


def _metric_version_view(ctx: Context, base: TemplateVersionRecord) -> None:
    spec = _try(lambda: runs.metric_of(base.content), title="This version cannot be read")
    if spec is None:
        return
    st.markdown(
        f"**{md_escape(spec.title)}** ({code_span(spec.name)}): a {spec.kind} metric, not a judge template, so there "
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
        key=Judge.HISTORY_TABLE,
    )
    if len(versions) < 2:
        return
    by_id = {v.id: v for v in versions}
    ids = [v.id for v in versions]
    c1, c2 = st.columns(2)
    number: Callable[[int], str] = lambda i: f"v{by_id[i].number}"  # noqa: E731
    a = _picker(c1, "Diff from", ids, key=Judge.DIFF_FROM, default=ids[-2], format_func=number)
    b = _picker(c2, "to", ids, key=Judge.DIFF_TO, default=ids[-1], format_func=number)
    diff = runs.diff_versions(by_id[a], by_id[b], name=f"{name} ")
    st.code(diff or "(the two versions are the same)", language="diff")
    older = ids[:-1]
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    chosen = _picker(
        c1,
        "Restore an older version (saved again as the newest)",
        older,
        key=Judge.RESTORE_VERSION,
        default=older[-1],
        format_func=lambda i: _version_label(by_id[i]),
    )
    if c2.button("Restore", key=Judge.RESTORE):
        outcome = _try(
            lambda: runs.restore_version(ctx.store, chosen, author=ctx.who.name),
            title="The version was not restored",
        )
        if outcome is not None:
            _flash(f"Restored version {by_id[chosen].number} as version {outcome.version.number}.")
            _goto(version=outcome.version.id)


# --- trying and running -------------------------------------------------------------------------


def _results_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A results table as shown: the columns people read, the label as text, tokens in + out."""
    if "label_text" in frame.columns:  # a stored run's results (a trial's table is shown as is)
        tokens = frame["tokens_in"].fillna(0) + frame["tokens_out"].fillna(0)
        frame = frame.assign(label=frame["label_text"], tokens=tokens)
    return frame.reindex(columns=list(RESULT_COLUMNS))


def _trial_panel(
    ctx: Context, content: Mapping[str, Any] | None, base: TemplateVersionRecord
) -> None:
    st.subheader(f"Try on {plural(runs.TRIAL_ITEMS, 'item')}")
    st.caption(
        "Runs the editor's content as it is (saved or not) on the first items of the dataset and "
        "shows the raw replies beside the parsed labels. Nothing is saved as a run; the replies "
        "are cached, so a full run does not pay for them again."
    )
    ready = content is not None and ctx.dataset is not None
    if st.button(f"Try on {plural(runs.TRIAL_ITEMS, 'item')}", key=Judge.TRY, disabled=not ready):
        assert content is not None
        assert ctx.dataset is not None
        with st.spinner(f"Judging {plural(runs.TRIAL_ITEMS, 'item')}…"):
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
            st.session_state[Judge.TRIAL] = {
                "version": base.id,
                "model": trial.model,
                "table": trial.table(),
                "details": {r.item_id: dict(r.details) for r in trial.results if r.details},
                "requests": trial.summary.requests,
            }
    shown = st.session_state.get(Judge.TRIAL)
    if shown and shown.get("version") == base.id:
        st.caption(
            f"Model {md_escape(shown['model'] or '(none)')} · {plural(shown['requests'], 'request')} sent "
            "(cached replies cost none)"
        )
        st.dataframe(_results_frame(shown["table"]), hide_index=True, key=Judge.TRIAL_TABLE)
        for item_id, details in shown["details"].items():
            with st.expander(f"Details of item {md_escape(item_id)}"):
                st.json(details)


def _subset(ctx: Context) -> list[str] | None:
    if ctx.dataset is None:
        return None
    if int(st.session_state.get(Judge.LIMIT) or 0) > ctx.dataset.n_items:
        st.session_state[Judge.LIMIT] = 0
    st.number_input(
        "Only the first N items (0: all)",
        min_value=0,
        max_value=ctx.dataset.n_items,
        step=10,
        key=Judge.LIMIT,
        persist_state="session",
    )
    limit = int(st.session_state.get(Judge.LIMIT) or 0)
    if not limit or limit >= ctx.dataset.n_items:
        return None
    return [i.item_id for i in _items(ctx.dataset)[:limit]]


def _run_panel(ctx: Context, base: TemplateVersionRecord, dirty: bool) -> None:
    st.subheader("Run on the dataset")
    if ctx.dataset is None:
        st.info("Choose a dataset first.")
        return
    spec = runs.metric_of(base.parsed)
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
        key=Judge.CONCURRENCY,
        persist_state="session",
    )
    order = "single"
    if pairwise:
        default_order = spec.order_mode if spec is not None else "single"
        order = _picker(
            c3,
            "Pairwise order",
            ("single", "flip", "both"),
            key=Judge.ORDER,
            default=default_order,
            format_func={
                "single": "as given (A, B)",
                "flip": "flip half of the items",
                "both": "both orders",
            }.get,
        )
    s1, s2 = st.columns(2)
    replicate = int(
        s1.number_input(
            "Replicate",
            min_value=0,
            max_value=999,
            value=0,
            key=Judge.REPLICATE,
            help="0 answers requests already made from the reply cache. 1, 2, … send every "
            "request again, so a repeated run of the same version really samples again and "
            "Calibrate's self-agreement compares two real draws.",
        )
    )
    samples_by = _picker(
        s2,
        "Several samples per item",
        ("n", "requests"),
        key=Judge.SAMPLES_BY,
        default="n",
        format_func={
            "n": "in one request (n)",
            "requests": "one request per sample",
        }.get,
    )
    mode = "live"
    if not is_function and (spec is None or spec.kind != "pipeline"):
        mode = _picker(
            st,
            "Send the requests",
            ("live", "batch"),
            key=Judge.MODE,
            default="live",
            format_func={
                "live": "Live: now, at the endpoint's rate limits",
                "batch": "Batch: through the endpoint's Batch API (within 24 h, batch price)",
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
            endpoint_id=ctx.endpoint.id if ctx.endpoint else None,
            samples_by=samples_by,  # type: ignore[arg-type]
            replicate=replicate,
            batch=mode == "batch",
        )
    except EvalcoreError as exc:
        show_error(exc, title=f"Estimate of {version_note}")
        return
    source = "typed in Model above" if ctx.model else "the default; type another in Model above"
    shown_model = (
        f"model **{md_escape(model)}** ({source})" if model else "no model (a function metric)"
    )
    st.markdown(f"**Estimate** of {version_note} on {md_escape(ctx.dataset.name)}, {shown_model}:")
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
    if estimate.expected_cost is None and model and mode == "batch":
        st.caption(f"Batch price not set for {md_escape(model)}: add one on the Settings page.")
    elif estimate.expected_cost is None and model:
        st.caption(f"No price for {md_escape(model)}: add one on the Settings page.")
    if spec is not None and spec.kind == "pipeline":
        st.caption(
            "A multi-step metric: the requests are an upper bound (every step of every item)."
        )
    blocked = dirty or (ctx.endpoint is None and not is_function)
    if ctx.endpoint is None and not is_function:
        st.caption("Choose an endpoint to start a run.")
    if st.button("Start run", key=Judge.START, type="primary", disabled=blocked):
        settings = RunSettings(
            concurrency=int(st.session_state.get(Judge.CONCURRENCY) or 8),
            order_mode=order,  # type: ignore[arg-type]
            samples_by=samples_by,  # type: ignore[arg-type]
            replicate=replicate,
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
                batch=runs.BatchSettings() if mode == "batch" else None,
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
    all_runs = ctx.store.list_runs(project_id=ctx.project.id)
    if not all_runs:
        st.info("No runs yet. Start one from the Editor or the Metrics section.")
        return
    live = not all(r.is_terminal for r in all_runs)
    # while a run is going the whole section (list, progress, results) is redrawn every POLL_S
    st.fragment(_runs_body, run_every=POLL_S if live else None)(ctx, live)


def _runs_body(ctx: Context, live: bool) -> None:
    store = ctx.store
    all_runs = store.list_runs(project_id=ctx.project.id)
    if live and all(r.is_terminal for r in all_runs):
        st.rerun(scope="app")  # the last run has finished: draw once more, without the timer
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
        key=Judge.RUNS_TABLE,
        column_config={"cost": st.column_config.NumberColumn(format="$%.4f")},
    )
    if get_worker().external:
        _workers_panel(store)
    by_id = {r.id: r for r in all_runs}
    run_id = _picker(
        st,
        "Run",
        list(by_id),
        key=Judge.RUN,
        default=all_runs[0].id,
        format_func=lambda i: _run_label(by_id[i]),
    )
    snap = _progress_body(run_id)
    _run_actions(ctx, snap.run)
    _results(ctx, snap.run)


def _workers_panel(store: Store) -> None:
    """The ``evalcore worker`` processes alive now and what each is doing."""
    table = runs.workers_table(store)
    st.caption(f"{plural(len(table), 'worker')} alive: they carry out the runs")
    if table.empty:
        st.warning("No worker is alive: queued runs wait. Start one with `evalcore worker`.")
    else:
        st.dataframe(table, hide_index=True)


def _progress_body(run_id: int) -> runs.RunSnapshot:
    snap = runs.run_snapshot(get_store(), run_id)
    p = snap.progress
    done = f"{p.finished} of {plural(p.planned, 'result')}"
    st.progress(snap.fraction, text=f"{done} · {snap.run.status}")
    c1, c2, c3, c4, c5 = st.columns(5)
    c1.metric("Done", f"{p.finished} / {p.planned}")
    c2.metric("Rate", "–" if snap.rate is None else f"{snap.rate:.1f}/s")
    c3.metric("Time left", _duration(snap.eta_s) if snap.is_active else "–")
    c4.metric("Failed · unparsed", f"{p.failed} · {p.unparsed}")
    c5.metric("Cost so far", _money(p.cost))
    if runs.is_batch_run(snap.run):
        st.caption(f"Batch mode: {runs.batch_progress(get_store(), run_id).summary}")
    if snap.run.error:
        st.error(md_escape(snap.run.error), icon=":material/error:")
    return snap


def _run_actions(ctx: Context, run: JudgeRunRecord) -> None:
    """Cancel a run that is going on; resume one that stopped before its end."""
    if run.status == "cancelling":
        st.info("Stopping: requests in flight may still finish.")
    elif not run.is_terminal:
        if st.button("Cancel run", key=Judge.CANCEL):
            get_worker().cancel(run.id)
            st.info("Cancel requested.")
    elif (
        run.status in ("cancelled", "interrupted", "failed")
        and run.source == "run"
        and run.template_version_id is not None
        and st.button("Resume", key=Judge.RESUME, help="Go on with the items not judged yet")
    ):
        ctx.store.set_run_status(run.id, "pending")
        get_worker().submit(run.id)
        st.rerun()


def _results(ctx: Context, run: JudgeRunRecord) -> None:
    st.subheader("Results")
    choice = st.segmented_control(
        "Show",
        list(FILTERS),
        key=Judge.FILTER,
        persist_state="session",
        default="All",
        required=True,
    )
    statuses = FILTERS.get(str(choice or "All"))
    frame = runs.results_table(ctx.store, run.id, statuses)
    going = "" if run.is_terminal else " so far (the table grows while the run goes on)"
    st.caption(f"{plural(len(frame), 'result')}{going}.")
    st.dataframe(
        _results_frame(frame),
        hide_index=True,
        key=Judge.RESULTS_TABLE,
        column_config={
            "raw": st.column_config.TextColumn(width="large"),
            "reason": st.column_config.TextColumn(width="medium"),
        },
    )
    progress = ctx.store.run_progress(run.id)
    c1, c2 = st.columns([1, 3])
    rerunnable = progress.failed and run.is_terminal and run.template_version_id is not None
    if rerunnable and c1.button(f"Re-run {progress.failed} failed", key=Judge.RERUN):
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
            _flash(f"Started run #{new.id} over {plural(new.n_planned, 'failed item')}.")
            _goto(run=new.id)
    if not frame.empty:
        c2.download_button(
            "Download results (CSV)",
            table_bytes(frame.drop(columns=["item_pk"], errors="ignore"), "csv"),
            file_name=f"run-{run.id}.csv",
            mime="text/csv",
            key=Judge.DOWNLOAD,
        )
        _inspect(frame)


def _endpoint_id(ctx: Context) -> int | None:
    return ctx.endpoint.id if ctx.endpoint else None


def _inspect(frame: pd.DataFrame) -> None:
    keys = [
        f"{row.item_id}" + ("" if row.order == "AB" else " (B, A)") for row in frame.itertuples()
    ]
    picked = _picker(
        st,
        "Inspect an item: raw reply, reason and intermediates",
        keys,
        key=Judge.INSPECT,
        default=keys[0],
    )
    row = frame.iloc[keys.index(picked)]
    label = code_span(format_label(row["label"]))
    st.markdown(f"**{md_escape(row['status'])}** · label {label}")
    if isinstance(row["reason"], str) and row["reason"]:
        st.markdown("Reason:")
        show_text(row["reason"])
    if isinstance(row["error"], str) and row["error"]:
        st.error(md_escape(row["error"]), icon=":material/error:")
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
            key = state.key(Judge.METRIC_SETTING, spec.name, f"p_{name}")
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
            key=state.key(Judge.METRIC_SETTING, spec.name, "threshold"),
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
        key=Judge.CATALOGUE,
    )
    by_name = {e.name: e for e in entries}
    names = list(by_name)
    name = _picker(
        st,
        "Metric",
        names,
        key=Judge.METRIC,
        default=names[0],
        format_func=lambda n: f"{by_name[n].title} ({n})",
    )
    entry = by_name[name]
    st.subheader(entry.title)
    version = f" · version `{entry.version}`" if entry.version else ""
    st.caption(f"{entry.origin} · {entry.kind}{version}")
    st.markdown(entry.description)
    st.markdown("\n".join(entry_facts(entry)))
    if entry.example_inputs:
        with st.expander("Example", expanded=True):
            for key, value in entry.example_inputs:
                st.markdown(f"**{md_escape(key)}**: {md_escape(value)}")
            st.code(entry.example_output, language=None, wrap_lines=True)
    st.markdown("**Use it**")
    spec = _try(lambda: _configured(get_metric(name)), title="These settings are not valid")
    if spec is None:
        return
    compatible = {c.id: c for c in runs.metric_criteria(ctx.store, ctx.project.id, spec)}
    options = [*compatible, NEW]
    crit_key = state.key(Judge.METRIC_SETTING, name, "criterion")
    criterion_id = _picker(
        st,
        "Criterion its results are stored under (and calibrated against)",
        options,
        key=crit_key,
        default=options[0],
        format_func=lambda i: (
            compatible[i].name if i in compatible else "A new criterion named after the metric"
        ),
    )
    chosen_criterion = None if criterion_id == NEW else int(criterion_id)
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    copy_name = c1.text_input(
        "Name of the copy",
        value=f"{name} copy",
        key=state.key(Judge.METRIC_SETTING, name, "copy_name"),
        persist_state="session",
    )
    if c2.button(
        "Copy into project", key=Judge.COPY, help="A project template to edit and compare"
    ):
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
        c1.button(
            f"Try on {plural(runs.TRIAL_ITEMS, 'item')} of {md_escape(dataset_name)}",
            key=Judge.METRIC_TRY,
        )
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
            st.dataframe(_results_frame(trial.table()), hide_index=True, key=Judge.METRIC_TRIAL)
            for result in trial.results:
                if result.details:
                    with st.expander(f"Details of item {md_escape(result.item_id)}"):
                        st.json(dict(result.details))
    if c2.button(f"Run on {md_escape(dataset_name)}", key=Judge.METRIC_RUN, type="primary"):
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
