"""Judge templates and their runs: the Judge page's workflow.

- The context every section works in (:func:`context`): the project's datasets, the endpoints in
  the order a newcomer expects (and, for an admin only, whether each one's key is set);
- the editor: :func:`templates`, :func:`versions`, :func:`open_version` (a version as the editor
  shows it, with :class:`EditorFields` and the :class:`RunOptions` of a run of it), :func:`draft`
  (the editor's fields as a version's content), :func:`variables`, :func:`preview`, and the commands
  :func:`create_template`, :func:`save_version`, :func:`restore_version`; :func:`diff`;
- trying: :func:`try_version` and :func:`try_metric` judge a few items and save nothing;
- runs: :func:`estimate_run`, and the commands :func:`start_run`, :func:`cancel_run`,
  :func:`resume_run` and :func:`rerun_failed` (each one call: planning and handing the run to the
  server's worker happen here); :func:`runs_overview`, :func:`run_view` and :func:`results` read
  them back from the store, so a run goes on when the page is left;
- the built-in metrics: :func:`catalogue`, :func:`metric`, :func:`configure`,
  :func:`metric_criteria`, and the commands :func:`copy_metric` and :func:`start_metric_run`.

Every function checks the caller first (:func:`~evalcore.workflows.caller`) and works through the
store acting for them, which refuses what their role in the project does not allow.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, get_args, get_type_hints

import pandas as pd

from evalcore import runs
from evalcore.errors import ConfigError, EvalcoreError, TemplateError
from evalcore.judge import (
    Estimate,
    JudgeItem,
    JudgeTemplate,
    ModelSettings,
    OutputSpec,
    RunSettings,
)
from evalcore.judge.builtins import (
    GROUP_TITLES,
    CatalogueEntry,
    MetricSpec,
    configure_metric,
    entry_facts,
    get_metric,
)
from evalcore.judge.builtins import catalogue as _catalogue
from evalcore.labels import format_label
from evalcore.secrets import host_needs_key, key_status
from evalcore.store import (
    CriterionRecord,
    DatasetRecord,
    EndpointRecord,
    JudgeRunRecord,
    MetricVersionContent,
    ProjectAdmins,
    TemplateRecord,
    TemplateVersionRecord,
)
from evalcore.words import either, plural
from evalcore.workflows._session import Caller, Session, caller

__all__ = [
    "AGGREGATES",
    "MODES",
    "ORDERS",
    "PARSERS",
    "RESULT_COLUMNS",
    "RESULT_FILTERS",
    "SAMPLES",
    "TRIAL_ITEMS",
    "Catalogue",
    "CatalogueEntry",
    "Copied",
    "CriterionRecord",
    "DatasetRecord",
    "Draft",
    "EditorFields",
    "EndpointChoice",
    "EndpointRecord",
    "JudgeContext",
    "JudgeRunRecord",
    "KeyNote",
    "MetricSpec",
    "MetricView",
    "Parameter",
    "Preview",
    "ProjectAdmins",
    "ResultRow",
    "Results",
    "RunEstimate",
    "RunOptions",
    "RunRequest",
    "RunView",
    "RunsOverview",
    "SaveOutcome",
    "TemplateRecord",
    "TemplateVersionRecord",
    "Templates",
    "Trial",
    "Variables",
    "VersionView",
    "admins",
    "ask_admin",
    "cancel_run",
    "catalogue",
    "check_endpoint",
    "configure",
    "context",
    "copy_metric",
    "create_template",
    "diff",
    "draft",
    "estimate_run",
    "metric",
    "metric_criteria",
    "open_version",
    "preview",
    "rerun_failed",
    "restore_version",
    "results",
    "resume_run",
    "run_view",
    "runs_overview",
    "save_version",
    "start_metric_run",
    "start_run",
    "templates",
    "try_metric",
    "try_version",
    "variables",
    "versions",
]

SaveOutcome = runs.SaveOutcome

#: How many items a try judges.
TRIAL_ITEMS: Final = runs.TRIAL_ITEMS
#: The columns of a results table as the page shows it (a try's and a stored run's alike).
RESULT_COLUMNS: Final = runs.TRIAL_COLUMNS
#: The results a filter keeps: its name, and the statuses (``None``: all).
RESULT_FILTERS: Final[dict[str, tuple[str, ...] | None]] = {
    "All": None,
    "Unparsed": ("unparsed",),
    "Failed": ("failed",),
    "Unparsed or failed": ("unparsed", "failed"),
}
_OUTPUT_HINTS = get_type_hints(OutputSpec)
#: How a reply is read (the template's output parser), "auto" first.
PARSERS: Final = tuple(sorted(get_args(_OUTPUT_HINTS["parser"]), key=lambda p: p != "auto"))
#: How several samples of one item are combined.
AGGREGATES: Final = tuple(get_args(_OUTPUT_HINTS["aggregate"]))
#: The order of the two responses of a pairwise item, in words.
ORDERS: Final[dict[str, str]] = {
    "single": "as given (A, B)",
    "flip": "flip half of the items",
    "both": "both orders",
}
#: Several samples per item: in one request (``n``) or one request per sample.
SAMPLES: Final[dict[str, str]] = {
    "n": "in one request (n)",
    "requests": "one request per sample",
}
#: How a run sends its requests.
MODES: Final[dict[str, str]] = {
    "live": "Live: now, at the endpoint's rate limits",
    "batch": "Batch: through the endpoint's Batch API (within 24 h, batch price)",
}


def _manage(who: Caller, dataset_id: int) -> None:
    """Refuse unless the caller manages the dataset's project."""
    who.store.authorize("manage", dataset_id=dataset_id)


def _manage_version(who: Caller, version_id: int) -> TemplateVersionRecord:
    """The version, once the caller is known to manage its project."""
    version = who.store.get_template_version(version_id)
    project_id = who.store.get_template(version.template_id).project_id
    who.store.authorize("manage", project_id=project_id)
    return version


def _items(who: Caller, dataset_id: int) -> tuple[JudgeItem, ...]:
    """A saved dataset's items as the judge sees them (immutable: kept in the server's memo by id,
    after the caller's check)."""
    who.store.authorize("read", dataset_id=dataset_id)
    return who.server.memo.get(
        ("judge.items", dataset_id), lambda: tuple(runs.judge_items(who.store, dataset_id)[0])
    )


def _endpoint(who: Caller, endpoint_id: int | None) -> EndpointRecord | None:
    return None if endpoint_id is None else who.store.get_endpoint(endpoint_id)


# --- whom to ask, and endpoints that cannot authenticate -------------------------------------------


def admins(session: Session, project_id: int) -> ProjectAdmins:
    """Whom a member of the project asks for what only an admin may do: the server's admins
    (prices, endpoints, key variables) and the project's own (members, settings)."""
    return caller(session).store.project_admins(project_id)


def ask_admin(who: Caller, project_id: int, what: str) -> str:
    """What to ask and whom, for a caller who may not do it: ``ask an admin of this server (ada
    or root) to {what}``. Never a page the caller cannot open."""
    names = who.store.project_admins(project_id).server
    whom = f" ({either(names)})" if names else ""
    return f"ask an admin of this server{whom} to {what}"


def check_endpoint(
    who: Caller, project_id: int, record: EndpointRecord, *, key_here: bool = True
) -> None:
    """Refuse, before anything is saved or sent, an endpoint whose requests could not
    authenticate (:func:`evalcore.runs.check_endpoint`: a key variable the policy refuses or this
    server does not have, or none where the host needs one). Tries, runs and optimisations all
    ask here, so each refusal gives the same reason; a caller who is not an admin learns whom to
    ask. ``key_here=False``: the requests are sent by ``evalcore worker`` processes, which have
    keys of their own (only the policy and the host are checked)."""
    try:
        runs.check_endpoint(who.store, record, secrets=who.server.secrets, key_here=key_here)
    except EvalcoreError as exc:
        if who.actor.is_admin:
            raise
        names = who.store.project_admins(project_id).server
        if names:
            exc.message = f"{exc.message} (this server's admins: {either(names, 'and')})"
            exc.args = (exc.message,)
        raise


def _sends_here(who: Caller, batch: bool) -> bool:
    """Whether a run's requests are sent by this server (its worker), with this server's keys:
    always, but for a live run handed to ``evalcore worker`` processes."""
    return batch or not who.server.worker.external


# --- the context ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyNote:
    """Whether an endpoint's key is available (``level`` ``"ok"``, ``"info"`` or ``"error"``)."""

    level: str
    text: str


@dataclass(frozen=True)
class EndpointChoice:
    """An endpoint to send judge requests to; ``key`` says whether its key is set (admins only:
    nobody else learns which variables exist)."""

    record: EndpointRecord
    key: KeyNote | None = None

    @property
    def id(self) -> int:
        return self.record.id

    @property
    def name(self) -> str:
        return self.record.name


@dataclass(frozen=True)
class JudgeContext:
    """The project's datasets (newest versions) and the endpoints, the default one first."""

    datasets: tuple[DatasetRecord, ...]
    endpoints: tuple[EndpointChoice, ...]
    is_admin: bool
    endpoint_help: str

    def dataset(self, dataset_id: int | None) -> DatasetRecord | None:
        return next((d for d in self.datasets if d.id == dataset_id), None)

    def endpoint(self, endpoint_id: int | None) -> EndpointChoice | None:
        return next((e for e in self.endpoints if e.id == endpoint_id), None)


_KEY_NOTES: Final = {
    "set": ("ok", "`{name}` is set"),
    "missing": (
        "error",
        "`{name}` is not set: export it before starting the server or add it to "
        "`.streamlit/secrets.toml`; a local server (vLLM, Ollama) is added on the Settings page.",
    ),
    "not allowed": (
        "error",
        "`{name}` is not allowed by this server's key policy: allow it in the server settings, "
        "or name another variable on the Settings page.",
    ),
}


def _key_note(
    record: EndpointRecord, secrets: Mapping[str, Any], allowed: Sequence[str]
) -> KeyNote:
    if not record.api_key_env:
        if host_needs_key(record.base_url or "", record.kind):
            return KeyNote(
                "error",
                "No key variable named, and this host answers only requests that carry a key: "
                "name one on the Settings page.",
            )
        return KeyNote("info", "No API key needed.")
    level, text = _KEY_NOTES[key_status(record.api_key_env, secrets, allowed)]
    return KeyNote(level, text.format(name=record.api_key_env))


def context(session: Session, project_id: int) -> JudgeContext:
    """The datasets and endpoints of the Judge page. The default endpoint is, for an admin, a
    hosted API whose key is set, else one that needs a key, and a local server only when there is
    nothing else; for anyone else a hosted API first (without asking about keys)."""
    who = caller(session)
    datasets = tuple(who.store.list_datasets(project_id, latest_only=True))
    records = who.store.list_endpoints()
    admin = who.actor.is_admin
    choices: list[EndpointChoice] = []
    if admin:
        allowed = runs.key_policy(who.store)
        secrets = who.server.secrets
        choices = [EndpointChoice(r, _key_note(r, secrets, allowed)) for r in records]
        rank = {"ok": 0, "error": 1, "info": 2}
        choices.sort(key=lambda c: rank[c.key.level if c.key else "info"])
    else:
        choices = sorted(
            (EndpointChoice(r) for r in records), key=lambda c: not c.record.api_key_env
        )
    help_text = (
        "Endpoints and their key variables are set on the Settings page."
        if admin
        else f"Endpoints and their keys are kept by the admins of this server: "
        f"{ask_admin(who, project_id, 'add an endpoint or check its key')}."
    )
    return JudgeContext(datasets, tuple(choices), admin, help_text)


# --- templates and versions -------------------------------------------------------------------------


@dataclass(frozen=True)
class Templates:
    """The project's templates and criteria."""

    templates: tuple[TemplateRecord, ...]
    criteria: tuple[CriterionRecord, ...]

    def label(self, template_id: int) -> str:
        """A template as a picker names it: its name and its criterion."""
        template = next(t for t in self.templates if t.id == template_id)
        criterion = next((c for c in self.criteria if c.id == template.criterion_id), None)
        return f"{template.name} · {criterion.name if criterion else '?'}"

    def criterion_label(self, criterion_id: int) -> str:
        c = next(c for c in self.criteria if c.id == criterion_id)
        return f"{c.name} ({', '.join(c.scale.display_labels)})"


def templates(session: Session, project_id: int) -> Templates:
    """The project's templates (built-in metrics kept in the project among them) and criteria."""
    who = caller(session)
    return Templates(
        tuple(who.store.list_templates(project_id)), tuple(who.store.list_criteria(project_id))
    )


def versions(session: Session, template_id: int) -> tuple[TemplateVersionRecord, ...]:
    """A template's versions, oldest first."""
    return tuple(caller(session).store.list_template_versions(template_id))


@dataclass(frozen=True)
class EditorFields:
    """The editor's fields: a judge template's text, output and model settings. ``seed`` and
    ``threshold`` are text as typed (empty: none); ``max_tokens`` 0 means no limit."""

    system: str = ""
    user: str = ""
    rubric: str = ""
    description: str = ""
    parser: str = "auto"
    label_field: str = ""
    reason_field: str = "reason"
    structured: bool = False
    aggregate: str = "majority"
    temperature: float = 0.0
    max_tokens: int = 0
    seed: str = ""
    n: int = 1
    logprobs: bool = False
    threshold: str = ""


@dataclass(frozen=True)
class RunOptions:
    """What a run of a version may choose: an endpoint is needed unless it is a function metric;
    a pairwise version chooses the order (``order``: the version's default); a judge template or
    template metric may go through a Batch API; ``note`` says what the estimate means."""

    needs_endpoint: bool
    pairwise: bool
    order: str
    batch: bool
    note: str | None = None


@dataclass(frozen=True)
class VersionView:
    """A version as the editor shows it. A judge template (a built-in template metric's copy
    included) has ``fields``; a pipeline or function metric has a ``summary`` and its
    ``settings`` instead (no prompt to edit)."""

    record: TemplateVersionRecord
    kind: str
    options: RunOptions
    fields: EditorFields | None = None
    template_kind: str = "pointwise"
    criterion: str = ""
    scale: tuple[str, ...] = ()
    label_field: str = ""
    threshold_label: str | None = None
    summary: str = ""
    settings: Mapping[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> int:
        return self.record.id

    @property
    def editable(self) -> bool:
        return self.fields is not None


def _options(spec: MetricSpec | None, template: JudgeTemplate | None) -> RunOptions:
    function = spec is not None and spec.kind == "function"
    pipeline = spec is not None and spec.kind == "pipeline"
    pairwise = (
        spec.is_pairwise if spec is not None else bool(template and template.kind == "pairwise")
    )
    note = (
        "A multi-step metric: the requests are an upper bound (every step of every item)."
        if pipeline
        else None
    )
    return RunOptions(
        needs_endpoint=not function,
        pairwise=pairwise,
        order=spec.order_mode if spec is not None else "single",
        batch=not function and not pipeline,
        note=note,
    )


def open_version(session: Session, version_id: int) -> VersionView:
    """A version as the editor shows it (a :class:`~evalcore.errors.ConfigError` when its
    content cannot be read, such as a metric not registered here)."""
    who = caller(session)
    record = who.store.get_template_version(version_id)
    parsed = record.parsed
    spec = runs.metric_of(parsed)
    kind = runs.version_kind(parsed)
    if kind != "template":
        assert spec is not None
        settings: dict[str, Any] = {"threshold": spec.threshold}
        if spec.pipeline is not None:
            settings = {"parameters": spec.pipeline.parameters(), **settings}
        return VersionView(
            record,
            kind,
            _options(spec, None),
            summary=(
                f"{spec.title} ({spec.name}): a {spec.kind} metric, not a judge template, so "
                "there is no prompt to edit here. Its parameters and threshold are set in the "
                "Metrics section (a changed setting is a new version of this template)."
            ),
            settings=settings,
        )
    template = runs.template_of_content(parsed)
    threshold = parsed.threshold if isinstance(parsed, MetricVersionContent) else None
    fields = EditorFields(
        system=template.system,
        user=template.user,
        rubric=template.rubric,
        description=template.description,
        parser=template.output.parser,
        label_field=template.output.label_field,
        reason_field=template.output.reason_field,
        structured=template.output.structured,
        aggregate=template.output.aggregate,
        temperature=float(template.model.temperature),
        max_tokens=int(template.model.max_tokens or 0),
        seed="" if template.model.seed is None else str(template.model.seed),
        n=int(template.model.n),
        logprobs=bool(template.model.logprobs),
        threshold=format_label(threshold),
    )
    return VersionView(
        record,
        kind,
        _options(spec, template),
        fields=fields,
        template_kind=template.kind,
        criterion=template.criterion,
        scale=tuple(template.scale.display_labels),
        label_field=template.label_field,
        threshold_label=(
            f"Pass threshold of the built-in metric {parsed.name!r}"
            if isinstance(parsed, MetricVersionContent) and threshold is not None
            else None
        ),
    )


@dataclass(frozen=True)
class Draft:
    """The editor's fields as a version's content (``content``), or why they are not one
    (``error``); ``dirty`` when it differs from the version it was edited from."""

    content: Mapping[str, Any] | None
    error: EvalcoreError | None = None
    dirty: bool = False


def _content(view: VersionView, fields: EditorFields) -> dict[str, Any]:
    base = view.record.parsed
    original = runs.template_of_content(base)
    seed_text = fields.seed.strip()
    try:
        seed = int(seed_text) if seed_text else None
    except ValueError:
        raise TemplateError(f"the seed must be a whole number, not {seed_text!r}") from None
    template = JudgeTemplate(
        name=original.name,
        criterion=original.criterion,
        scale=original.scale,
        system=fields.system,
        user=fields.user,
        kind=original.kind,
        output=OutputSpec(
            parser=fields.parser,  # type: ignore[arg-type]
            label_field=fields.label_field.strip(),
            reason_field=fields.reason_field.strip() or "reason",
            structured=fields.structured,
            aggregate=fields.aggregate,  # type: ignore[arg-type]
        ),
        model=ModelSettings(
            model=original.model.model,  # the run's model is chosen once, for the whole page
            temperature=float(fields.temperature or 0.0),
            max_tokens=int(fields.max_tokens or 0) or None,
            seed=seed,
            n=int(fields.n or 1),
            logprobs=fields.logprobs,
            top_logprobs=original.model.top_logprobs,
        ),
        description=fields.description,
        rubric=fields.rubric,
    )
    content = runs.template_content(template, like=base)
    if view.threshold_label is not None:
        content["threshold"] = fields.threshold.strip() or None
        spec = runs.metric_of(content)  # checks the threshold against the metric's scale
        content["threshold"] = spec.threshold if spec is not None else None
    return content


def draft(view: VersionView, fields: EditorFields) -> Draft:
    """The editor's ``fields`` over the version ``view`` shows, as a content to save, try or
    preview; a template error (a bad seed, an unknown parser, a threshold off the metric's scale)
    comes back in ``error``."""
    if not view.editable:
        return Draft(view.record.content)
    try:
        content = _content(view, fields)
    except (TemplateError, ConfigError) as exc:
        return Draft(None, exc)
    return Draft(content, None, not runs.same_content(content, view.record.parsed))


@dataclass(frozen=True)
class Variables:
    """What a template may use on a dataset (its fields, metadata columns included, and the
    built-in variables), those it uses that the dataset lacks, and the dataset's item ids."""

    available: tuple[str, ...]
    unknown: tuple[str, ...]
    item_ids: tuple[str, ...]


def variables(session: Session, dataset_id: int, content: Mapping[str, Any]) -> Variables:
    """The variables of ``content`` against the dataset's items."""
    who = caller(session)
    items = _items(who, dataset_id)
    available = runs.version_variables(content, list(items))
    try:
        used = runs.template_uses(content)
    except EvalcoreError:
        used = []
    return Variables(
        tuple(available),
        tuple(sorted(set(used) - set(available))),
        tuple(i.item_id for i in items),
    )


@dataclass(frozen=True)
class Preview:
    """The messages a content sends for one item, or the error that stops it (``key`` names what
    was rendered)."""

    key: str
    messages: tuple[Mapping[str, str], ...] = ()
    error: EvalcoreError | None = None


def preview(
    session: Session,
    dataset_id: int,
    content: Mapping[str, Any],
    item_id: str,
    *,
    kept: Preview | None = None,
) -> Preview:
    """The messages ``content`` sends for the item, exactly as a run renders them. ``kept`` (the
    preview shown last) is returned as it is when the content and the item are the same, so a
    template that is slow to fail is not rendered again on every unrelated change."""
    who = caller(session)
    items = _items(who, dataset_id)
    key = hashlib.sha256(
        json.dumps([content, dataset_id, item_id], sort_keys=True, default=str).encode()
    ).hexdigest()
    if kept is not None and kept.key == key:
        return kept
    item = next((i for i in items if i.item_id == item_id), None)
    if item is None:
        return Preview(key, (), ConfigError(f"item {item_id!r} is not in the dataset"))
    try:
        return Preview(key, tuple(runs.preview_messages(content, item)))
    except EvalcoreError as exc:
        return Preview(key, (), exc)


def create_template(
    session: Session, project_id: int, name: str, criterion_id: int
) -> TemplateVersionRecord:
    """A new template of the criterion, with a first version to edit."""
    who = caller(session)
    name = (name or "").strip()
    if not name:
        raise ConfigError("Give the template a name.")
    criterion = who.store.get_criterion(criterion_id)
    record = who.store.create_template(project_id, name, criterion_id)
    return who.store.save_template_version(
        record.id, runs.new_template_content(name, criterion), author=who.name, note="created"
    )


def save_version(
    session: Session, base_version_id: int, content: Mapping[str, Any], *, note: str = ""
) -> SaveOutcome:
    """Save ``content`` (edited from the base version) as the template's next version, unless
    it is the same as the base or the latest."""
    who = caller(session)
    base = _manage_version(who, base_version_id)
    return runs.save_version(
        who.store,
        base.template_id,
        content,
        author=who.name,
        note=note.strip() or None,
        base_version_id=base.id,
    )


def restore_version(session: Session, version_id: int) -> SaveOutcome:
    """Save an older version again, as the newest."""
    who = caller(session)
    _manage_version(who, version_id)
    return runs.restore_version(who.store, version_id, author=who.name)


def diff(session: Session, from_id: int, to_id: int) -> str:
    """A unified diff between two versions of a template (empty when they are the same)."""
    who = caller(session)
    a = who.store.get_template_version(from_id)
    b = who.store.get_template_version(to_id)
    name = who.store.get_template(b.template_id).name
    return runs.diff_versions(a, b, name=f"{name} ")


# --- trying -----------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Trial:
    """What a try found: the model used, the requests sent (cached replies cost none), the
    results table (raw replies beside parsed labels) and a pipeline's intermediates by item."""

    model: str
    requests: int
    table: pd.DataFrame
    details: tuple[tuple[str, Mapping[str, Any]], ...] = ()


def _shown(frame: pd.DataFrame) -> pd.DataFrame:
    """A results table as shown: the columns people read, the label as text, tokens in + out."""
    if "label_text" in frame.columns:  # a stored run's results (a trial's table is shown as is)
        tokens = frame["tokens_in"].fillna(0) + frame["tokens_out"].fillna(0)
        frame = frame.assign(label=frame["label_text"], tokens=tokens)
    return frame.reindex(columns=list(RESULT_COLUMNS))


def _try(
    who: Caller,
    dataset_id: int,
    content: Any,
    endpoint_id: int | None,
    model: str,
) -> Trial:
    endpoint = _endpoint(who, endpoint_id)
    if endpoint is not None and _needs_endpoint(content):
        check_endpoint(who, who.store.get_dataset(dataset_id).project_id, endpoint)
    found = runs.try_version(
        who.store,
        content,
        dataset_id=dataset_id,
        endpoint_id=endpoint_id,
        model=model.strip() or None,
        secrets=who.server.secrets,
    )
    details = tuple((r.item_id, dict(r.details)) for r in found.results if r.details)
    return Trial(found.model, found.summary.requests, _shown(found.table()), details)


def _needs_endpoint(content: Any) -> bool:
    spec = runs.metric_of(content)
    return spec is None or spec.kind != "function"


def try_version(
    session: Session,
    dataset_id: int,
    content: Mapping[str, Any],
    *,
    endpoint_id: int | None,
    model: str = "",
) -> Trial:
    """Judge the first :data:`TRIAL_ITEMS` items with ``content`` (saved or not); nothing is
    saved as a run, and the replies go to the reply cache, so a full run does not pay again."""
    return _try(caller(session), dataset_id, content, endpoint_id, model)


def try_metric(
    session: Session,
    dataset_id: int,
    spec: MetricSpec,
    *,
    endpoint_id: int | None,
    model: str = "",
) -> Trial:
    """:func:`try_version` of a built-in metric as configured."""
    return _try(caller(session), dataset_id, runs.metric_content(spec), endpoint_id, model)


# --- runs -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunRequest:
    """A run as the page asks for it: a version over a dataset (its first ``limit`` items, 0: all)
    through an endpoint, with the model typed on the page (empty: the version's own, else the
    endpoint's default) and the run's settings."""

    dataset_id: int
    version_id: int
    endpoint_id: int | None
    model: str = ""
    limit: int = 0
    concurrency: int = 8
    order: str | None = None
    replicate: int = 0
    samples_by: str = "n"
    mode: str = "live"


@dataclass(frozen=True)
class RunEstimate:
    """What a run would cost, the model it would use (``typed`` when it is the one typed on the
    page) and what the page should say about the figures."""

    estimate: Estimate
    model: str | None
    typed: bool
    notes: tuple[str, ...] = ()


def _item_ids(who: Caller, request: RunRequest) -> list[str] | None:
    if request.limit <= 0:
        return None
    items = _items(who, request.dataset_id)
    if request.limit >= len(items):
        return None
    return [i.item_id for i in items[: request.limit]]


def estimate_run(session: Session, request: RunRequest) -> RunEstimate:
    """Requests, tokens and cost of the run ``request`` describes, and how many replies are
    cached already (see :func:`evalcore.runs.estimate_run`)."""
    who = caller(session)
    _manage(who, request.dataset_id)
    version = who.store.get_template_version(request.version_id)
    endpoint = _endpoint(who, request.endpoint_id)
    model = runs.resolve_model(version.parsed, request.model.strip() or None, endpoint)
    batch = request.mode == "batch"
    found = runs.estimate_run(
        who.store,
        dataset_id=request.dataset_id,
        template_version_id=version.id,
        model=model or "",
        order_mode=request.order,
        item_ids=_item_ids(who, request),
        endpoint_id=request.endpoint_id,
        samples_by=request.samples_by,  # type: ignore[arg-type]
        replicate=request.replicate,
        batch=batch,
    )
    notes: list[str] = []
    if found.expected_cost is None and model:
        what = f"Batch price not set for {model}" if batch else f"No price for {model}"
        if who.actor.is_admin:
            notes.append(f"{what}: add one on the Settings page.")
        else:
            price = f"add {'a batch price' if batch else 'a price'} for {model}"
            notes.append(f"{what}: {ask_admin(who, version_project(who, version), price)}.")
    spec = runs.metric_of(version.parsed)
    option = _options(spec, None if spec is not None else runs.template_of_content(version.parsed))
    if option.note:
        notes.append(option.note)
    return RunEstimate(found, model, bool(request.model.strip()), tuple(notes))


def version_project(who: Caller, version: TemplateVersionRecord) -> int:
    """The project a template version belongs to."""
    return who.store.get_template(version.template_id).project_id


def start_run(session: Session, request: RunRequest) -> JudgeRunRecord:
    """Plan the run ``request`` describes and hand it to the server's worker. Refused before
    anything is saved when its endpoint cannot authenticate (:func:`check_endpoint`, the reason a
    try gives) or an item lacks a variable the version reads."""
    who = caller(session)
    _manage(who, request.dataset_id)
    version = who.store.get_template_version(request.version_id)
    endpoint = _endpoint(who, request.endpoint_id)
    if endpoint is not None and _needs_endpoint(version.parsed):
        batch = request.mode == "batch"
        check_endpoint(
            who, version_project(who, version), endpoint, key_here=_sends_here(who, batch)
        )
    settings = RunSettings(
        concurrency=int(request.concurrency or 8),
        order_mode=request.order or "single",  # type: ignore[arg-type]
        samples_by=request.samples_by,  # type: ignore[arg-type]
        replicate=int(request.replicate or 0),
    )
    run = runs.plan_run(
        who.store,
        dataset_id=request.dataset_id,
        template_version_id=request.version_id,
        endpoint_id=request.endpoint_id,
        model=request.model.strip() or None,
        settings=settings,
        item_ids=_item_ids(who, request),
        batch=runs.BatchSettings() if request.mode == "batch" else None,
    )
    who.server.worker.submit(run.id)
    return run


@dataclass(frozen=True, eq=False)
class RunsOverview:
    """The project's runs (newest first) as a table, whether any is still going (``live``), and
    with external workers the ``evalcore worker`` processes alive now."""

    runs: tuple[JudgeRunRecord, ...]
    table: pd.DataFrame
    live: bool
    workers: pd.DataFrame | None = None

    def label(self, run_id: int) -> str:
        # no status here: a picker's labels are not redrawn while a run's progress is polled
        run = next(r for r in self.runs if r.id == run_id)
        return f"#{run.id} {run.name}"


def runs_overview(session: Session, project_id: int) -> RunsOverview:
    """Every run of the project with its progress, from the store."""
    who = caller(session)
    found = tuple(who.store.list_runs(project_id=project_id))
    datasets = {d.id: d.name for d in who.store.list_datasets(project_id)}
    rows = []
    for run in found:
        progress = who.store.run_progress(run.id)
        rows.append(
            {
                "run": run.id,
                "name": run.name,
                "status": run.status,
                "dataset": datasets.get(run.dataset_id, str(run.dataset_id)),
                "model": run.model or "",
                "done": f"{progress.finished} / {progress.planned}",
                "unparsed": progress.unparsed,
                "failed": progress.failed,
                "cost": progress.cost,
                "created": run.created_at,
            }
        )
    workers = runs.workers_table(who.store) if found and who.server.worker.external else None
    return RunsOverview(found, pd.DataFrame(rows), not all(r.is_terminal for r in found), workers)


@dataclass(frozen=True)
class RunView:
    """One run: its progress with rate and time left, what its batches are doing, the error of
    its last attempt, and what may be done with it now."""

    snapshot: runs.RunSnapshot
    batch: str | None
    error: str | None
    can_cancel: bool
    stopping: bool
    can_resume: bool
    failed: int

    @property
    def run(self) -> JudgeRunRecord:
        return self.snapshot.run

    @property
    def progress_text(self) -> str:
        p = self.snapshot.progress
        return f"{p.finished} of {plural(p.planned, 'result')} · {self.run.status}"


def run_view(session: Session, run_id: int) -> RunView:
    """A run as its progress panel shows it, read from the store."""
    who = caller(session)
    snap = runs.run_snapshot(who.store, run_id)
    run = snap.run
    batch = runs.batch_progress(who.store, run_id).summary if runs.is_batch_run(run) else None
    stored = run.source == "run" and run.template_version_id is not None
    return RunView(
        snap,
        batch,
        run.error,
        can_cancel=not run.is_terminal and run.status != "cancelling",
        stopping=run.status == "cancelling",
        can_resume=stored and run.status in ("cancelled", "interrupted", "failed"),
        failed=(
            snap.progress.failed if run.is_terminal and run.template_version_id is not None else 0
        ),
    )


@dataclass(frozen=True)
class ResultRow:
    """One result as the page inspects it."""

    key: str
    status: str
    label: str
    reason: str
    error: str
    raw: str
    details: Mapping[str, Any]


@dataclass(frozen=True, eq=False)
class Results:
    """A run's results through a filter: the table as shown, each row to inspect, and what the
    caption says."""

    run_id: int
    table: pd.DataFrame
    rows: tuple[ResultRow, ...]
    caption: str
    _full: pd.DataFrame = field(repr=False)

    def csv(self) -> bytes:
        """The results as CSV (formula cells neutralised), for a download."""
        from evalcore.report import table_bytes

        return table_bytes(self._full.drop(columns=["item_pk"], errors="ignore"), "csv")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def results(session: Session, run_id: int, shown: str = "All") -> Results:
    """A run's results, those of the statuses of the filter ``shown`` (:data:`RESULT_FILTERS`)."""
    who = caller(session)
    if shown not in RESULT_FILTERS:
        raise ConfigError(f"no filter {shown!r}: one of {', '.join(RESULT_FILTERS)}")
    run = who.store.get_run(run_id)
    frame = runs.results_table(who.store, run_id, RESULT_FILTERS[shown])
    rows = tuple(
        ResultRow(
            key=f"{r['item_id']}" + ("" if r.get("order", "AB") == "AB" else " (B, A)"),
            status=str(r.get("status") or ""),
            label=format_label(r.get("label")),
            reason=_text(r.get("reason")),
            error=_text(r.get("error")),
            raw=_text(r.get("raw")),
            details=r["details"] if isinstance(r.get("details"), dict) else {},
        )
        for r in frame.to_dict("records")
    )
    going = "" if run.is_terminal else " so far (the table grows while the run goes on)"
    return Results(run_id, _shown(frame), rows, f"{plural(len(frame), 'result')}{going}.", frame)


def _check_run_endpoint(who: Caller, run: JudgeRunRecord, endpoint_id: int | None) -> None:
    """Refuse to go on with a run (or its failed items) whose endpoint cannot authenticate."""
    endpoint = _endpoint(who, endpoint_id)
    if endpoint is None or run.template_version_id is None:
        return
    if _needs_endpoint(who.store.get_template_version(run.template_version_id).parsed):
        batch = runs.is_batch_run(run)
        check_endpoint(who, run.project_id, endpoint, key_here=_sends_here(who, batch))


def cancel_run(session: Session, run_id: int) -> None:
    """Ask a run to stop; it ends ``cancelled`` with everything judged so far kept."""
    who = caller(session)
    who.store.request_cancel(run_id)
    who.server.worker.cancel(run_id)


def resume_run(session: Session, run_id: int) -> JudgeRunRecord:
    """Go on with the items a stopped run has not judged yet (its finished ones are kept); the
    run as it now is."""
    who = caller(session)
    who.store.authorize("manage", run_id=run_id)
    run = who.store.get_run(run_id)
    if run.status not in ("cancelled", "interrupted", "failed") or run.template_version_id is None:
        raise ConfigError(f"run #{run.id} is {run.status}: only a stopped run is resumed")
    _check_run_endpoint(who, run, run.endpoint_id)
    resumed = who.store.set_run_status(run_id, "pending")
    who.server.worker.submit(run_id)
    return resumed


def rerun_failed(
    session: Session, run_id: int, *, endpoint_id: int | None = None
) -> JudgeRunRecord | None:
    """A new run of the same version over the items that failed in ``run_id``, handed to the
    worker (``None`` when none failed). A run recorded without an endpoint uses ``endpoint_id``."""
    who = caller(session)
    who.store.authorize("manage", run_id=run_id)
    run = who.store.get_run(run_id)
    if runs.failed_item_ids(who.store, run_id):
        _check_run_endpoint(who, run, run.endpoint_id or endpoint_id)
    new = runs.rerun_failed(who.store, run_id, endpoint_id=None if run.endpoint_id else endpoint_id)
    if new is not None:
        who.server.worker.submit(new.id)
    return new


# --- the built-in metrics -------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Catalogue:
    """Every registered metric, and the catalogue table."""

    entries: tuple[CatalogueEntry, ...]
    table: pd.DataFrame

    def entry(self, name: str) -> CatalogueEntry:
        return next(e for e in self.entries if e.name == name)


def catalogue(session: Session) -> Catalogue:
    """The registered metrics, grouped in section order."""
    caller(session)
    entries = tuple(_catalogue())
    table = pd.DataFrame(
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
    )
    return Catalogue(entries, table)


@dataclass(frozen=True)
class Parameter:
    """A pipeline metric's parameter: its default, and its choices when it takes one of a few
    words (else a number or text)."""

    name: str
    value: Any
    choices: tuple[str, ...] | None = None


@dataclass(frozen=True)
class MetricView:
    """A metric as the catalogue explains it, with its settings."""

    entry: CatalogueEntry
    facts: tuple[str, ...]
    parameters: tuple[Parameter, ...]
    threshold: str | None
    pass_rule: str


def metric(session: Session, name: str) -> MetricView:
    """One registered metric: its entry, facts (inputs, scale, reply, threshold) and settings."""
    caller(session)
    spec = get_metric(name)
    entry = _catalogue([name])[0]
    parameters: tuple[Parameter, ...] = ()
    if spec.pipeline is not None:
        choices = spec.pipeline.parameter_choices()
        parameters = tuple(
            Parameter(n, v, choices.get(n)) for n, v in spec.pipeline.parameters().items()
        )
    threshold = None if spec.threshold is None else format_label(spec.threshold)
    return MetricView(entry, tuple(entry_facts(entry)), parameters, threshold, spec.pass_rule)


def configure(
    session: Session, name: str, parameters: Mapping[str, Any], threshold: str | None = None
) -> MetricSpec:
    """The metric with these parameters and pass threshold (each checked)."""
    caller(session)
    spec = configure_metric(get_metric(name), dict(parameters))
    if threshold is not None and spec.threshold is not None:
        spec = spec.with_threshold(threshold)
    return spec


def metric_criteria(
    session: Session, project_id: int, spec: MetricSpec
) -> tuple[CriterionRecord, ...]:
    """The project's criteria the metric's results can be stored under (same kind and labels)."""
    return tuple(runs.metric_criteria(caller(session).store, project_id, spec))


@dataclass(frozen=True)
class Copied:
    """A metric copied into the project: the new template and its first version."""

    template: TemplateRecord
    version: TemplateVersionRecord


def copy_metric(
    session: Session,
    project_id: int,
    spec: MetricSpec,
    *,
    name: str = "",
    criterion_id: int | None = None,
) -> Copied:
    """Copy a metric into the project as a template to edit and compare (``criterion_id``
    ``None``: a criterion named after the metric, made when there is none)."""
    who = caller(session)
    version = runs.copy_metric(
        who.store, project_id, spec, author=who.name, name=name, criterion_id=criterion_id
    )
    return Copied(who.store.get_template(version.template_id), version)


def start_metric_run(
    session: Session,
    project_id: int,
    dataset_id: int | None,
    spec: MetricSpec,
    *,
    criterion_id: int | None = None,
    endpoint_id: int | None = None,
    model: str = "",
) -> JudgeRunRecord:
    """Run a metric as configured on a dataset (its version is kept in the project) and hand the
    run to the server's worker."""
    who = caller(session)
    if dataset_id is None:
        raise ConfigError("choose a dataset first")
    _manage(who, dataset_id)
    endpoint = _endpoint(who, endpoint_id)
    if endpoint is not None and spec.kind != "function":
        check_endpoint(who, project_id, endpoint, key_here=_sends_here(who, False))
    version = runs.metric_version(
        who.store, project_id, spec, author=who.name, criterion_id=criterion_id
    )
    run = runs.plan_run(
        who.store,
        dataset_id=dataset_id,
        template_version_id=version.id,
        endpoint_id=endpoint_id,
        model=model.strip() or None,
    )
    who.server.worker.submit(run.id)
    return run
