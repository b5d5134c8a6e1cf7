"""The Judge page's editor: a template's versions, the editor with its preview, "try on 5 items",
a full run with its estimate, and the version history (diff and restore)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Final

import pandas as pd
import streamlit as st

from evalcore.words import plural
from evalcore.workflows import judge as flow
from evalcore.workflows.judge import (
    EditorFields,
    RunRequest,
    Templates,
    TemplateVersionRecord,
    VersionView,
)
from ui.judge_view import Ctx
from ui.render import code_span, md_escape, show_error
from ui.state import Judge
from ui.widgets import attempt, flash, goto, money, picker, show_trial

NEW: Final = 0  # the "new template" entry of the template picker (database ids start at 1)
#: The editor's widgets, by the field of EditorFields each one holds.
_FIELDS: Final = {
    "system": Judge.SYSTEM, "user": Judge.USER, "rubric": Judge.RUBRIC,
    "description": Judge.DESCRIPTION, "parser": Judge.PARSER, "label_field": Judge.LABEL_FIELD,
    "reason_field": Judge.REASON_FIELD, "structured": Judge.STRUCTURED,
    "aggregate": Judge.AGGREGATE, "temperature": Judge.TEMPERATURE,
    "max_tokens": Judge.MAX_TOKENS, "seed": Judge.SEED, "n": Judge.N, "logprobs": Judge.LOGPROBS,
    "threshold": Judge.THRESHOLD,
}  # fmt: skip
_SESSION: Final[dict[str, Any]] = {"persist_state": "session"}


def _load(view: VersionView) -> None:
    """Fill the editor's widgets with a version's fields."""
    assert view.fields is not None
    for name, key in _FIELDS.items():
        st.session_state[key] = getattr(view.fields, name)
    st.session_state[Judge.LOADED] = view.id
    st.session_state.pop(Judge.TRIAL, None)


def _fields() -> EditorFields:
    """The editor's widgets as fields (a widget not drawn yet keeps the field's default)."""
    defaults = EditorFields()
    values = {f.name: st.session_state.get(_FIELDS[f.name]) for f in fields(EditorFields)}
    return EditorFields(**{k: getattr(defaults, k) if v is None else v for k, v in values.items()})


def _version_label(v: TemplateVersionRecord) -> str:
    note = f" · {v.note}" if v.note else ""
    return f"v{v.number} · {v.author} · {v.created_at:%Y-%m-%d %H:%M}{note}"


def editor_section(ctx: Ctx) -> None:
    found = flow.templates(ctx.session, ctx.project_id)
    options = [*(t.id for t in found.templates), NEW]
    c1, c2 = st.columns([3, 2])
    template_id = picker(
        c1, "Template", options, key=Judge.TEMPLATE, default=options[0],
        format_func=lambda i: "New template…" if i == NEW else found.label(i),
    )  # fmt: skip
    if template_id == NEW:
        _new_template_form(ctx, found)
        return
    versions = flow.versions(ctx.session, template_id)
    if not versions:
        st.info("This template has no version yet.")
        return
    by_id = {v.id: v for v in versions}
    newest_first = [v.id for v in reversed(versions)]
    version_id = picker(
        c2, "Version", newest_first, key=Judge.VERSION, default=newest_first[0],
        format_func=lambda i: _version_label(by_id[i]),
    )  # fmt: skip
    view = attempt(
        lambda: flow.open_version(ctx.session, version_id), title="This version cannot be read"
    )
    if view is None:
        return
    if not view.editable:
        st.markdown(md_escape(view.summary))
        st.json(dict(view.settings))
        _trial_panel(ctx, view, view.record.content)
        _run_panel(ctx, view, dirty=False)
    else:
        if st.session_state.get(Judge.LOADED) != view.id:
            _load(view)
            _match_dataset(ctx, view.template_kind)
        _template_editor(ctx, view)
    _history(ctx, versions)


def _new_template_form(ctx: Ctx, found: Templates) -> None:
    if not found.criteria:
        st.info("The project has no criteria yet: add one on the Datasets page.")
        return
    c1, c2 = st.columns(2)
    name = c1.text_input("Template name", key=Judge.NEW_NAME, **_SESSION)
    ids = [c.id for c in found.criteria]
    criterion_id = picker(
        c2, "Criterion it judges", ids, key=Judge.NEW_CRITERION, default=ids[0],
        format_func=found.criterion_label,
    )  # fmt: skip
    st.caption(
        "Or copy a built-in metric into the project from the Metrics section, to edit it and "
        "compare it with the original."
    )
    if st.button("Create template", key=Judge.CREATE, type="primary"):
        version = attempt(
            lambda: flow.create_template(ctx.session, ctx.project_id, name, criterion_id),
            title="The template was not created",
        )
        if version is not None:
            flash(f"Created template {name.strip()!r}.", key=Judge.FLASH)
            goto(Judge, template=version.template_id, version=version.id, new_name="")


def _match_dataset(ctx: Ctx, kind: str) -> None:
    """Switch to a dataset of the template's kind (pairwise or pointwise) when there is one."""
    if ctx.dataset is None or ctx.dataset.kind == kind:
        return
    for dataset in ctx.context.datasets:
        if dataset.kind == kind:
            goto(Judge, dataset=dataset.id)


def _editor_widgets(view: VersionView) -> None:
    st.text_area("System message", key=Judge.SYSTEM, height=120, **_SESSION)
    st.text_area(
        "User message", key=Judge.USER, height=260, **_SESSION,
        help="Jinja2 with {{ variables }}: the item's fields and metadata columns, plus criterion, "
        "rubric and labels. A variable an item lacks is an error, shown in the preview.",
    )  # fmt: skip
    with st.expander("Rubric and description"):
        st.text_area("Rubric ({{ rubric }})", key=Judge.RUBRIC, height=120, **_SESSION)
        st.text_input("Description", key=Judge.DESCRIPTION, **_SESSION)
    scale = md_escape(", ".join(view.scale))
    st.caption(f"Criterion **{md_escape(view.criterion)}** · {view.template_kind} · scale {scale}")
    c1, c2, c3, c4 = st.columns(4)
    c1.selectbox("Parser", flow.PARSERS, key=Judge.PARSER, **_SESSION)
    c2.text_input("Label field", key=Judge.LABEL_FIELD, placeholder=view.label_field, **_SESSION)
    c3.text_input("Reason field", key=Judge.REASON_FIELD, **_SESSION)
    c4.selectbox("n > 1 samples", flow.AGGREGATES, key=Judge.AGGREGATE, **_SESSION)
    st.checkbox(
        "Structured output (JSON schema through response_format)", key=Judge.STRUCTURED, **_SESSION
    )
    c1, c2, c3, c4 = st.columns(4)
    c1.number_input("Temperature", min_value=0.0, max_value=2.0, step=0.1, key=Judge.TEMPERATURE,
                    **_SESSION)  # fmt: skip
    c2.number_input("Max tokens", min_value=0, step=64, key=Judge.MAX_TOKENS, help="0: no limit",
                    **_SESSION)  # fmt: skip
    c3.text_input("Seed", key=Judge.SEED, help="Empty: none", **_SESSION)
    c4.number_input("Samples (n)", min_value=1, max_value=20, step=1, key=Judge.N, **_SESSION)
    st.checkbox("Ask for logprobs (a probability-weighted score)", key=Judge.LOGPROBS, **_SESSION)
    if view.threshold_label is not None:
        st.text_input(md_escape(view.threshold_label), key=Judge.THRESHOLD, **_SESSION)


def _template_editor(ctx: Ctx, view: VersionView) -> None:
    left, right = st.columns([3, 2], gap="large")
    with left:
        _editor_widgets(view)
    draft = flow.draft(view, _fields())
    if draft.error is not None:
        with left:
            show_error(draft.error, title="The template has an error")
    with right:
        _variables_and_preview(ctx, draft.content or view.record.content, draft.content is not None)
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    c1.text_input("Note for this version (optional)", key=Judge.NOTE, **_SESSION)
    if c2.button(
        "Save as new version", key=Judge.SAVE, type="primary", disabled=draft.content is None
    ):
        assert draft.content is not None
        content, note = draft.content, str(st.session_state.get(Judge.NOTE) or "")
        outcome = attempt(
            lambda: flow.save_version(ctx.session, view.id, content, note=note),
            title="The version was not saved",
        )
        if outcome is not None and outcome.created:
            flash(f"Saved version {outcome.version.number}.", key=Judge.FLASH)
            goto(Judge, version=outcome.version.id, note="")
        elif outcome is not None:
            st.info(
                f"Nothing to save: this is the same as version {outcome.version.number}.",
                icon=":material/info:",
            )
    if draft.dirty:
        st.caption(
            ":orange[Unsaved changes.] A run uses a saved version; try them on a few items first."
        )
    _trial_panel(ctx, view, draft.content)
    _run_panel(ctx, view, dirty=draft.dirty)


def _variables_and_preview(ctx: Ctx, content: Any, valid: bool) -> None:
    st.markdown("**Variables**")
    if ctx.dataset is None:
        st.caption("Choose a dataset to see its variables and a preview.")
        return
    found = flow.variables(ctx.session, ctx.dataset.id, content)
    st.markdown(" ".join(code_span(v) for v in found.available))
    if found.unknown:
        st.warning(
            f"Not a field of {md_escape(ctx.dataset.name)}: "
            + ", ".join(code_span(v) for v in found.unknown),
            icon=":material/warning:",
        )
    if not found.item_ids or not valid:
        return
    ids = list(found.item_ids)
    item_id = picker(st, "Preview on item", ids, key=Judge.PREVIEW_ITEM, default=ids[0])
    shown = flow.preview(
        ctx.session, ctx.dataset.id, content, item_id, kept=st.session_state.get(Judge.PREVIEW)
    )
    st.session_state[Judge.PREVIEW] = shown
    if shown.error is not None:
        show_error(shown.error, title="The template cannot be rendered")
    for message in shown.messages:
        st.markdown(f"**{md_escape(message['role'])}**")
        st.code(message["content"], language=None, wrap_lines=True)


def _history(ctx: Ctx, versions: tuple[TemplateVersionRecord, ...]) -> None:
    st.subheader("Version history")
    rows = [
        {"version": v.number, "author": v.author, "saved": v.created_at, "note": v.note or "",
         "hash": v.content_hash[:12]}
        for v in reversed(versions)
    ]  # fmt: skip
    st.dataframe(pd.DataFrame(rows), hide_index=True, key=Judge.HISTORY_TABLE)
    if len(versions) < 2:
        return
    by_id = {v.id: v for v in versions}
    ids = [v.id for v in versions]
    c1, c2 = st.columns(2)
    a = picker(c1, "Diff from", ids, key=Judge.DIFF_FROM, default=ids[-2],
               format_func=lambda i: f"v{by_id[i].number}")  # fmt: skip
    b = picker(c2, "to", ids, key=Judge.DIFF_TO, default=ids[-1],
               format_func=lambda i: f"v{by_id[i].number}")  # fmt: skip
    text = flow.diff(ctx.session, a, b)
    st.code(text or "(the two versions are the same)", language="diff")
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    chosen = picker(
        c1, "Restore an older version (saved again as the newest)", ids[:-1],
        key=Judge.RESTORE_VERSION, default=ids[-2], format_func=lambda i: _version_label(by_id[i]),
    )  # fmt: skip
    if c2.button("Restore", key=Judge.RESTORE):
        outcome = attempt(
            lambda: flow.restore_version(ctx.session, chosen), title="The version was not restored"
        )
        if outcome is not None:
            flash(
                f"Restored version {by_id[chosen].number} as version {outcome.version.number}.",
                key=Judge.FLASH,
            )
            goto(Judge, version=outcome.version.id)


# --- trying and running -----------------------------------------------------------------------------


def _trial_panel(ctx: Ctx, view: VersionView, content: Any) -> None:
    items = plural(flow.TRIAL_ITEMS, "item")
    st.subheader(f"Try on {items}")
    st.caption(
        "Runs the editor's content as it is (saved or not) on the first items of the dataset and "
        "shows the raw replies beside the parsed labels. Nothing is saved as a run; the replies "
        "are cached, so a full run does not pay for them again."
    )
    dataset = ctx.dataset
    ready = content is not None and dataset is not None
    if st.button(f"Try on {items}", key=Judge.TRY, disabled=not ready):
        assert dataset is not None
        with st.spinner(f"Judging {items}…"):
            trial = attempt(
                lambda: flow.try_version(
                    ctx.session, dataset.id, content, endpoint_id=ctx.endpoint_id, model=ctx.model
                ),
                title="The try did not run",
            )
        if trial is not None:
            st.session_state[Judge.TRIAL] = (view.id, trial)
    kept = st.session_state.get(Judge.TRIAL)
    if kept and kept[0] == view.id:
        show_trial(kept[1], key=Judge.TRIAL_TABLE)


def _run_settings(ctx: Ctx, view: VersionView) -> RunRequest:
    """The run's settings (limit, concurrency, order, replicate, samples, mode) as a request."""
    assert ctx.dataset is not None
    options, n_items = view.options, ctx.dataset.n_items
    c1, c2, c3 = st.columns(3)
    if int(st.session_state.get(Judge.LIMIT) or 0) > n_items:
        st.session_state[Judge.LIMIT] = 0
    limit = c1.number_input("Only the first N items (0: all)", min_value=0, max_value=n_items,
                            step=10, key=Judge.LIMIT, **_SESSION)  # fmt: skip
    concurrency = c2.number_input("Concurrent requests", min_value=1, max_value=64, value=8,
                                  key=Judge.CONCURRENCY, **_SESSION)  # fmt: skip
    order = "single"
    if options.pairwise:
        order = picker(c3, "Pairwise order", list(flow.ORDERS), key=Judge.ORDER,
                       default=options.order, format_func=flow.ORDERS.get)  # fmt: skip
    s1, s2 = st.columns(2)
    replicate = s1.number_input(
        "Replicate", min_value=0, max_value=999, value=0, key=Judge.REPLICATE,
        help="0 answers requests already made from the reply cache. 1, 2, … send every request "
        "again, so a repeated run of the same version really samples again and Calibrate's "
        "self-agreement compares two real draws.",
    )  # fmt: skip
    samples_by = picker(s2, "Several samples per item", list(flow.SAMPLES), key=Judge.SAMPLES_BY,
                        default="n", format_func=flow.SAMPLES.get)  # fmt: skip
    mode = "live"
    if options.batch:
        mode = picker(st, "Send the requests", list(flow.MODES), key=Judge.MODE, default="live",
                      format_func=flow.MODES.get)  # fmt: skip
    return RunRequest(
        ctx.dataset.id, view.id, ctx.endpoint_id, ctx.model, int(limit or 0),
        int(concurrency or 8), order, int(replicate or 0), samples_by, mode,
    )  # fmt: skip


def _run_panel(ctx: Ctx, view: VersionView, *, dirty: bool) -> None:
    st.subheader("Run on the dataset")
    if ctx.dataset is None:
        st.info("Choose a dataset first.")
        return
    request = _run_settings(ctx, view)
    what = f"version {view.record.number}" + (" (your changes are not saved)" if dirty else "")
    found = attempt(lambda: flow.estimate_run(ctx.session, request), title=f"Estimate of {what}")
    if found is None:
        return
    source = "typed in Model above" if found.typed else "the default; type another in Model above"
    model = (
        f"model **{md_escape(found.model)}** ({source})"
        if found.model
        else "no model (a function metric)"
    )
    st.markdown(f"**Estimate** of {what} on {md_escape(ctx.dataset.name)}, {model}:")
    e, cols = found.estimate, st.columns(5)
    cols[0].metric("Results", e.n_units)
    cols[1].metric("Requests", e.n_requests)
    cols[2].metric("Already cached", e.n_cached)
    cols[3].metric(
        "Tokens (in + out)", f"{e.expected_tokens_in + e.expected_tokens_out:,}",
        help=f"in ≈ {e.expected_tokens_in:,}, out ≈ {e.expected_tokens_out:,}"
        + (f" (at most {e.max_tokens_out:,})" if e.max_tokens_out else ""),
    )  # fmt: skip
    cols[4].metric("Expected cost", money(e.expected_cost))
    for text in found.notes:
        st.caption(md_escape(text))
    missing = view.options.needs_endpoint and ctx.endpoint is None
    if missing:
        st.caption("Choose an endpoint to start a run.")
    if st.button("Start run", key=Judge.START, type="primary", disabled=dirty or missing):
        run = attempt(lambda: flow.start_run(ctx.session, request), title="The run was not started")
        if run is not None:
            flash(
                f"Started run #{run.id}: {run.name}. It goes on if you leave the page.",
                key=Judge.FLASH,
            )
            goto(Judge, section="Runs", run=run.id)
