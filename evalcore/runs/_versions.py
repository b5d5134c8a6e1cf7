"""Stored template versions of every kind: project templates, copies of built-in metrics, pipelines.

A version's ``content`` is what the store hashes and keeps. Three shapes share the table:

- a **judge template**: :meth:`evalcore.judge.JudgeTemplate.content_dict` (the editor's kind);
- a **built-in template metric** (``groundedness``, ``violence`` …) or an edited copy of one: the same
  template content plus ``"builtin": NAME`` and ``"threshold"``. Runs of it go through
  :class:`~evalcore.judge.builtins.MetricRunner`, so its inputs are prepared and checked
  (:func:`~evalcore.judge.builtins.prepare_items`: aliases, conversation transcripts) and each result
  carries the pass/fail verdict;
- a **pipeline or function metric** (``factual_correctness``, ``summarization_score``, ``f1_score``),
  which is not a judge template: ``{"builtin": NAME, **pipeline.content_dict()}`` (parameters, step
  prompts, model settings, threshold) or ``{"builtin": NAME, "kind": "function", "threshold": t}``.

:func:`metric_of` turns a stored content back into the :class:`~evalcore.judge.builtins.MetricSpec` it
records (``None`` for a plain template); :func:`metric_content` is its inverse. A built-in stored in a
project needs a criterion on the metric's scale (:func:`metric_criteria`,
:func:`ensure_metric_criterion`), since results are stored on their criterion's scale.

:func:`save_version` saves an edit as a new immutable version unless it changes nothing;
:func:`diff_versions` diffs any two versions.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evalcore.errors import ConfigError, TemplateError
from evalcore.judge import (
    BUILTIN_VARIABLES,
    JudgeItem,
    JudgeTemplate,
    ModelSettings,
    diff_templates,
    render,
    template_variables,
)
from evalcore.judge.builtins import (
    MetricSpec,
    StepPrompt,
    configure_metric,
    derive_fields,
    get_metric,
    prepare_items,
)
from evalcore.labels import format_label
from evalcore.store import (
    CriterionRecord,
    Store,
    TemplateRecord,
    TemplateVersionRecord,
    content_hash,
)

__all__ = [
    "BUILTIN_KEY",
    "SaveOutcome",
    "VersionKind",
    "builtin_template_name",
    "copy_metric",
    "diff_versions",
    "ensure_metric_criterion",
    "first_items",
    "metric_content",
    "metric_criteria",
    "metric_of",
    "metric_version",
    "new_template_content",
    "preview_messages",
    "restore_version",
    "same_content",
    "save_version",
    "template_content",
    "template_of_content",
    "template_uses",
    "version_kind",
    "version_variables",
]

#: The content key naming the built-in metric a stored version records.
BUILTIN_KEY = "builtin"

VersionKind = Literal["template", "pipeline", "function"]


def version_kind(content: Mapping[str, Any]) -> VersionKind:
    """``"template"`` (a judge template, a built-in template metric included), ``"pipeline"`` or
    ``"function"``."""
    name = content.get(BUILTIN_KEY)
    if name is None:
        return "template"
    kind = get_metric(str(name)).kind
    return "template" if kind == "template" else kind


def template_of_content(content: Mapping[str, Any]) -> JudgeTemplate:
    """The judge template a version's content holds (refused for pipeline and function metrics)."""
    kind = version_kind(content)
    if kind != "template":
        raise ConfigError(
            f"{content.get(BUILTIN_KEY)!r} is a {kind} metric, not a judge template; run it as a "
            "metric"
        )
    return JudgeTemplate.from_dict(content)


def template_content(
    template: JudgeTemplate, *, like: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The stored content of ``template``; ``like`` passes on a built-in link (``builtin`` and
    ``threshold``) of the version it was edited from."""
    content = template.content_dict()
    if like is not None and like.get(BUILTIN_KEY) is not None:
        content[BUILTIN_KEY] = like[BUILTIN_KEY]
        content["threshold"] = like.get("threshold")
    return content


def metric_content(spec: MetricSpec) -> dict[str, Any]:
    """The stored content of a metric (its threshold included); :func:`metric_of` reads it back.

    >>> from evalcore.judge.builtins import get_metric
    >>> metric_content(get_metric("f1_score"))
    {'builtin': 'f1_score', 'kind': 'function', 'threshold': 0.5}
    """
    threshold = spec.threshold
    if spec.template is not None:
        content = spec.template.content_dict()
        content[BUILTIN_KEY] = spec.name
        content["threshold"] = threshold
        return content
    if spec.pipeline is not None:
        return {BUILTIN_KEY: spec.name, **json.loads(json.dumps(spec.pipeline.content_dict()))}
    return {BUILTIN_KEY: spec.name, "kind": "function", "threshold": threshold}


def metric_of(content: Mapping[str, Any]) -> MetricSpec | None:
    """The metric a stored content records, configured as stored (threshold, parameters, edited
    template or step prompts); ``None`` for a plain judge template.

    Raises :class:`~evalcore.errors.ConfigError` when the metric is not registered in this process.
    """
    name = content.get(BUILTIN_KEY)
    if name is None:
        return None
    spec = get_metric(str(name))
    if spec.kind == "template":
        spec = spec.with_template(JudgeTemplate.from_dict(content))
    elif spec.kind == "pipeline":
        spec = configure_metric(spec, dict(content.get("parameters") or {}))
        pipeline = spec.pipeline
        assert pipeline is not None
        changes: dict[str, Any] = {}
        if isinstance(content.get("model"), Mapping):
            model = dict(content["model"])
            try:
                changes["model"] = ModelSettings(**model)
            except TypeError as exc:
                raise ConfigError(f"metric {name!r}: bad model settings: {exc}") from None
        if "json_mode" in content:
            changes["json_mode"] = bool(content["json_mode"])
        if changes:
            pipeline = dataclasses.replace(pipeline, **changes)
        defaults = pipeline.default_prompts()
        for step, prompt in dict(content.get("prompts") or {}).items():
            if step not in defaults:
                raise ConfigError(f"metric {name!r} has no step {step!r}")
            stored = StepPrompt(str(prompt["name"]), str(prompt["system"]), str(prompt["user"]))
            if stored.content_dict() != defaults[step].content_dict():
                pipeline = pipeline.with_prompt(step, stored)
        spec = dataclasses.replace(spec, pipeline=pipeline)
    threshold = content.get("threshold")
    if threshold is not None and spec.threshold is not None:
        spec = spec.with_threshold(threshold)
    return spec


def preview_messages(content: Mapping[str, Any], item: JudgeItem) -> list[dict[str, str]]:
    """The messages a template version sends for ``item`` (built-in inputs prepared first).

    Raises :class:`~evalcore.errors.MissingVariableError` naming the variable and the item, or
    another :class:`~evalcore.errors.TemplateError`, exactly as a run would before any request.
    """
    template = template_of_content(content)
    spec = metric_of(content)
    if spec is not None:
        item = prepare_items(spec, [item])[0]
    return render(template, item.fields, item_id=item.item_id)


def version_variables(content: Mapping[str, Any], items: Sequence[JudgeItem]) -> list[str]:
    """The variables a template may use on these items: their fields (metadata columns included),
    what a built-in metric derives from them (``transcript``), and ``criterion``, ``rubric`` and
    ``labels``."""
    names: set[str] = set(BUILTIN_VARIABLES)
    builtin = content.get(BUILTIN_KEY) is not None
    for item in items[:1]:
        fields = derive_fields(item.fields, item_id=item.item_id) if builtin else item.fields
        names.update(str(k) for k in fields)
    return sorted(names)


def template_uses(content: Mapping[str, Any]) -> list[str]:
    """The variables a template version reads (empty for pipeline and function metrics)."""
    if version_kind(content) != "template":
        return []
    return sorted(template_variables(JudgeTemplate.from_dict(content)))


# --- saving -------------------------------------------------------------------------------------


def same_content(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two contents are the same version: equal JSON, or the same judge template written
    two ways (a scale as a list or a dict, defaults left out or spelled out) with the same link to
    a built-in metric."""
    if content_hash(a) == content_hash(b):
        return True
    if a.get(BUILTIN_KEY) != b.get(BUILTIN_KEY) or a.get("threshold") != b.get("threshold"):
        return False
    try:
        if version_kind(a) == "template" and version_kind(b) == "template":
            return (
                JudgeTemplate.from_dict(a).content_hash == JudgeTemplate.from_dict(b).content_hash
            )
    except (TemplateError, ConfigError):
        return False
    return False


@dataclass(frozen=True)
class SaveOutcome:
    """What :func:`save_version` did: the version now current, and whether it is new."""

    version: TemplateVersionRecord
    created: bool
    #: ``"saved"``, ``"same as latest"`` or ``"same as base"`` (no change to the version edited)
    reason: str


def save_version(
    store: Store,
    template_id: int,
    content: Mapping[str, Any],
    *,
    author: str,
    note: str | None = None,
    base_version_id: int | None = None,
) -> SaveOutcome:
    """Save ``content`` as the template's next immutable version, unless nothing changed.

    Nothing is saved when the content equals the latest version, or the version it was edited from
    (``base_version_id``; restoring an older version on purpose is :func:`restore_version`). Contents
    are compared as templates, so the same template written with its scale as a list or as a dict is
    the same version.
    """
    if version_kind(content) == "template":
        template_of_content(content)  # refuse a template that does not compile, before saving
    versions = store.list_template_versions(template_id)
    if base_version_id is not None:
        base = next((v for v in versions if v.id == base_version_id), None)
        if base is not None and same_content(base.content, content):
            return SaveOutcome(base, False, "same as base")
    if versions and same_content(versions[-1].content, content):
        return SaveOutcome(versions[-1], False, "same as latest")
    saved = store.save_template_version(template_id, content, author=author, note=note or None)
    created = not versions or saved.id != versions[-1].id
    return SaveOutcome(saved, created, "saved" if created else "same as latest")


def restore_version(
    store: Store, version_id: int, *, author: str, note: str | None = None
) -> SaveOutcome:
    """Make an older version the latest again, as a new version with its content."""
    old = store.get_template_version(version_id)
    versions = store.list_template_versions(old.template_id)
    if versions and versions[-1].id == old.id:
        return SaveOutcome(old, False, "same as latest")
    saved = store.save_template_version(
        old.template_id,
        old.content,
        author=author,
        note=note or f"restored version {old.number}",
    )
    return SaveOutcome(saved, True, "saved")


def _content_lines(content: Mapping[str, Any]) -> list[str]:
    text = json.dumps(content, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    return [line + "\n" for line in text.splitlines()]


def diff_versions(a: TemplateVersionRecord, b: TemplateVersionRecord, *, name: str = "") -> str:
    """A unified diff from version ``a`` to version ``b`` (empty when they are the same).

    Judge templates are diffed field by field (:func:`evalcore.judge.diff_templates`), with a
    built-in's threshold; pipeline and function metrics as their JSON content.
    """
    left, right = a.content, b.content
    label_a, label_b = f"{name}v{a.number}", f"{name}v{b.number}"
    try:
        if version_kind(left) == "template" and version_kind(right) == "template":
            body = diff_templates(JudgeTemplate.from_dict(left), JudgeTemplate.from_dict(right))
            head: list[str] = []
            extra = [
                f"{key}: {format_label(left.get(key))} → {format_label(right.get(key))}\n"
                for key in (BUILTIN_KEY, "threshold")
                if left.get(key) != right.get(key)
            ]
            if body:
                lines = body.splitlines(keepends=True)
                head = [f"--- {label_a}\n", f"+++ {label_b}\n"]
                return "".join(head + lines[2:] + (["# " + e for e in extra] if extra else []))
            return "".join(f"# {e}" for e in extra)
    except (TemplateError, ConfigError):
        pass
    return "".join(
        difflib.unified_diff(
            _content_lines(left), _content_lines(right), fromfile=label_a, tofile=label_b
        )
    )


# --- built-in metrics in a project ----------------------------------------------------------------


def _criterion_kind(spec: MetricSpec) -> Literal["pointwise", "pairwise"]:
    return "pairwise" if spec.is_pairwise else "pointwise"


def metric_criteria(store: Store, project_id: int, spec: MetricSpec) -> list[CriterionRecord]:
    """The project's criteria a metric's results can be stored under: same kind, same labels."""
    return [
        c
        for c in store.list_criteria(project_id)
        if c.kind == _criterion_kind(spec)
        and c.scale.labels == spec.scale.labels
        and c.scale.kind == spec.scale.kind
    ]


def ensure_metric_criterion(store: Store, project_id: int, spec: MetricSpec) -> CriterionRecord:
    """The project's criterion named after the metric on its scale, created when there is none.

    When the name is taken by a criterion on another scale, the new one is called
    ``"{metric} ({scale})"``.
    """
    compatible = {c.name: c for c in metric_criteria(store, project_id, spec)}
    taken = {c.name for c in store.list_criteria(project_id)}
    scale_name = spec.scale.name or "/".join(spec.scale.display_labels)
    candidates = [spec.name, f"{spec.name} ({scale_name})"]
    candidates += [f"{spec.name} ({scale_name}) {n}" for n in range(2, 100)]
    for name in candidates:
        if name in compatible:
            return compatible[name]
        if name not in taken:
            rubric = spec.template.rubric if spec.template is not None else ""
            return store.create_criterion(
                project_id,
                name,
                kind=_criterion_kind(spec),
                scale=spec.scale,
                rubric=rubric or spec.description,
            )
    raise ConfigError(f"no free criterion name for metric {spec.name!r}")  # pragma: no cover


def _criterion_for(
    store: Store, project_id: int, spec: MetricSpec, criterion_id: int | None
) -> CriterionRecord:
    if criterion_id is None:
        return ensure_metric_criterion(store, project_id, spec)
    criterion = store.get_criterion(criterion_id)
    if criterion.id not in {c.id for c in metric_criteria(store, project_id, spec)}:
        raise ConfigError(
            f"criterion {criterion.name!r} ({', '.join(criterion.scale.display_labels)}) cannot "
            f"hold the results of {spec.name!r} ({', '.join(spec.scale.display_labels)}): choose "
            "a criterion on the same scale"
        )
    return criterion


def _free_name(store: Store, project_id: int, wanted: str) -> str:
    taken = {t.name for t in store.list_templates(project_id)}
    if wanted not in taken:
        return wanted
    n = 2
    while f"{wanted} {n}" in taken:
        n += 1
    return f"{wanted} {n}"


def builtin_template_name(spec: MetricSpec, criterion: CriterionRecord) -> str:
    """The project template that holds a built-in metric as shipped, for one criterion."""
    base = f"{spec.name} (built-in)"
    return base if criterion.name == spec.name else f"{base} · {criterion.name}"


def metric_version(
    store: Store,
    project_id: int,
    spec: MetricSpec,
    *,
    author: str,
    criterion_id: int | None = None,
) -> TemplateVersionRecord:
    """The stored version of a built-in metric as configured (to run it on a dataset).

    It lives in the project template :func:`builtin_template_name` (created on first use); the
    same configuration is the same version, a changed threshold or parameter a new one.
    """
    criterion = _criterion_for(store, project_id, spec, criterion_id)
    name = builtin_template_name(spec, criterion)
    record: TemplateRecord | None = next(
        (t for t in store.list_templates(project_id) if t.name == name), None
    )
    if record is None:
        record = store.create_template(project_id, name, criterion.id)
    outcome = save_version(
        store,
        record.id,
        metric_content(spec),
        author=author,
        note=f"built-in metric {spec.name} (version {spec.version})",
    )
    return outcome.version


def copy_metric(
    store: Store,
    project_id: int,
    spec: MetricSpec,
    *,
    author: str,
    name: str | None = None,
    criterion_id: int | None = None,
) -> TemplateVersionRecord:
    """Copy a built-in metric into the project as a new template, to edit and compare.

    The copy's first version is the metric as shipped (threshold and parameters as given); edits are
    new versions, and runs of any version can be compared with runs of the original.
    """
    criterion = _criterion_for(store, project_id, spec, criterion_id)
    template_name = _free_name(store, project_id, (name or "").strip() or f"{spec.name} copy")
    record = store.create_template(project_id, template_name, criterion.id)
    return store.save_template_version(
        record.id,
        metric_content(spec),
        author=author,
        note=f"copied from the built-in metric {spec.name} (version {spec.version})",
    )


def new_template_content(name: str, criterion: CriterionRecord) -> dict[str, Any]:
    """A first version for a new template of ``criterion``: a short prompt to edit."""
    if criterion.kind == "pairwise":
        user = (
            "Question:\n{{ prompt }}\n\nResponse A:\n{{ response_a }}\n\nResponse B:\n"
            "{{ response_b }}\n\nWhich response is better for {{ criterion }}?\n{{ rubric }}\n\n"
            'Reply as JSON: {"reason": "<one sentence>", "choice": "A" | "B" | "TIE"}'
        )
    else:
        user = (
            "Question:\n{{ prompt }}\n\nResponse:\n{{ response }}\n\nRate the response for "
            "{{ criterion }} on the scale {{ labels }}.\n{{ rubric }}\n\n"
            'Reply as JSON: {"reason": "<one sentence>", "'
            + ("score" if criterion.scale.is_numeric else "label")
            + '": <label>}'
        )
    template = JudgeTemplate(
        name=name,
        criterion=criterion.name,
        scale=criterion.scale,
        system=f"You are a careful evaluator of {criterion.name}.",
        user=user,
        kind=criterion.kind,
        rubric=criterion.rubric,
    )
    return template.content_dict()


def first_items(items: Iterable[JudgeItem], n: int) -> list[JudgeItem]:
    """The first ``n`` items (a small sample to try a template on)."""
    out: list[JudgeItem] = []
    for item in items:
        if len(out) >= n:
            break
        out.append(item)
    return out
