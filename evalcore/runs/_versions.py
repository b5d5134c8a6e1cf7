"""Stored template versions of every kind: project templates, copies of built-in metrics, pipelines.

A version's content is a typed record, read once from the stored JSON at the store boundary
(:attr:`evalcore.store.TemplateVersionRecord.parsed`, :func:`evalcore.store.parse_version_content`):

- :class:`~evalcore.store.TemplateVersionContent`, a **judge template**
  (:meth:`evalcore.judge.JudgeTemplate.content_dict`, the editor's kind);
- :class:`~evalcore.store.MetricVersionContent`, a **registered metric** as configured: a built-in
  template metric (``groundedness``, ``violence`` …) or an edited copy of one (its settings are the
  template content and the threshold; runs go through :class:`~evalcore.judge.builtins.MetricRunner`,
  so inputs are prepared and checked by :func:`~evalcore.judge.builtins.prepare_items` and each
  result carries the pass/fail verdict), or a **pipeline or function metric**
  (``factual_correctness``, ``summarization_score``, ``f1_score``), which is not a judge template
  (its settings are the pipeline's parameters, step prompts, model settings and threshold, or just
  the threshold).

Every function here takes such a record, or the stored JSON it is read from (a draft in an editor),
and reads the JSON once with :func:`as_content`. :func:`metric_of` turns a content back into the
:class:`~evalcore.judge.builtins.MetricSpec` it records (``None`` for a plain template);
:func:`metric_content` is its inverse. A built-in stored in a
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
from typing import Any, Literal, TypeAlias

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
    BUILTIN_KEY,
    CriterionRecord,
    MetricVersionContent,
    Store,
    TemplateRecord,
    TemplateVersionContent,
    TemplateVersionRecord,
    VersionContent,
    content_hash,
    parse_version_content,
)

__all__ = [
    "BUILTIN_KEY",
    "ContentLike",
    "SaveOutcome",
    "VersionKind",
    "as_content",
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

VersionKind = Literal["template", "pipeline", "function"]

#: A version's content: the typed record, or the stored JSON it is read from.
ContentLike: TypeAlias = VersionContent | Mapping[str, Any]


def as_content(content: ContentLike) -> VersionContent:
    """The typed record of a version's content (the stored JSON is read once, here).

    >>> as_content({"builtin": "f1_score", "kind": "function", "threshold": 0.5}).name
    'f1_score'
    """
    if isinstance(content, TemplateVersionContent | MetricVersionContent):
        return content
    return parse_version_content(content)


def version_kind(content: ContentLike) -> VersionKind:
    """``"template"`` (a judge template, a built-in template metric included), ``"pipeline"`` or
    ``"function"``."""
    parsed = as_content(content)
    if isinstance(parsed, TemplateVersionContent):
        return "template"
    kind = get_metric(parsed.name).kind
    return "template" if kind == "template" else kind


def _template_fields(parsed: VersionContent) -> Mapping[str, Any]:
    return parsed.template if isinstance(parsed, TemplateVersionContent) else parsed.settings


def template_of_content(content: ContentLike) -> JudgeTemplate:
    """The judge template a version's content holds (refused for pipeline and function metrics)."""
    parsed = as_content(content)
    kind = version_kind(parsed)
    if kind != "template":
        assert isinstance(parsed, MetricVersionContent)
        raise ConfigError(
            f"{parsed.name!r} is a {kind} metric, not a judge template; run it as a metric"
        )
    return JudgeTemplate.from_dict(_template_fields(parsed))


def template_content(template: JudgeTemplate, *, like: ContentLike | None = None) -> dict[str, Any]:
    """The stored JSON of ``template``; ``like`` passes on the link to a registered metric (its name
    and threshold) of the version it was edited from."""
    content = template.content_dict()
    base = None if like is None else as_content(like)
    if isinstance(base, MetricVersionContent):
        return MetricVersionContent(base.name, {**content, "threshold": base.threshold}).to_dict()
    return content


def metric_content(spec: MetricSpec) -> MetricVersionContent:
    """The stored content of a metric (its threshold included); :func:`metric_of` reads it back.

    >>> from evalcore.judge.builtins import get_metric
    >>> metric_content(get_metric("f1_score")).to_dict()
    {'kind': 'function', 'threshold': 0.5, 'builtin': 'f1_score'}
    """
    threshold = spec.threshold
    if spec.template is not None:
        return MetricVersionContent(
            spec.name, {**spec.template.content_dict(), "threshold": threshold}
        )
    if spec.pipeline is not None:
        return MetricVersionContent(spec.name, json.loads(json.dumps(spec.pipeline.content_dict())))
    return MetricVersionContent(spec.name, {"kind": "function", "threshold": threshold})


def metric_of(content: ContentLike) -> MetricSpec | None:
    """The metric a version's content records, configured as stored (threshold, parameters,
    edited template or step prompts); ``None`` for a plain judge template.

    Raises :class:`~evalcore.errors.ConfigError` when the metric is not registered in this process.
    """
    parsed = as_content(content)
    if isinstance(parsed, TemplateVersionContent):
        return None
    name, stored = parsed.name, parsed.settings
    spec = get_metric(name)
    if spec.kind == "template":
        spec = spec.with_template(JudgeTemplate.from_dict(stored))
    elif spec.kind == "pipeline":
        spec = configure_metric(spec, dict(stored.get("parameters") or {}))
        pipeline = spec.pipeline
        assert pipeline is not None
        changes: dict[str, Any] = {}
        if isinstance(stored.get("model"), Mapping):
            try:
                changes["model"] = ModelSettings(**dict(stored["model"]))
            except TypeError as exc:
                raise ConfigError(f"metric {name!r}: bad model settings: {exc}") from None
        if "json_mode" in stored:
            changes["json_mode"] = bool(stored["json_mode"])
        if changes:
            pipeline = dataclasses.replace(pipeline, **changes)
        defaults = pipeline.default_prompts()
        for step, prompt in dict(stored.get("prompts") or {}).items():
            if step not in defaults:
                raise ConfigError(f"metric {name!r} has no step {step!r}")
            saved = StepPrompt(str(prompt["name"]), str(prompt["system"]), str(prompt["user"]))
            if saved.content_dict() != defaults[step].content_dict():
                pipeline = pipeline.with_prompt(step, saved)
        spec = dataclasses.replace(spec, pipeline=pipeline)
    threshold = parsed.threshold
    if threshold is not None and spec.threshold is not None:
        spec = spec.with_threshold(threshold)
    return spec


def preview_messages(content: ContentLike, item: JudgeItem) -> list[dict[str, str]]:
    """The messages a template version sends for ``item`` (built-in inputs prepared first).

    Raises :class:`~evalcore.errors.MissingVariableError` naming the variable and the item, or
    another :class:`~evalcore.errors.TemplateError`, exactly as a run would before any request.
    """
    parsed = as_content(content)
    template = template_of_content(parsed)
    spec = metric_of(parsed)
    if spec is not None:
        item = prepare_items(spec, [item])[0]
    return render(template, item.fields, item_id=item.item_id)


def version_variables(content: ContentLike, items: Sequence[JudgeItem]) -> list[str]:
    """The variables a template may use on these items: their fields (metadata columns included),
    what a built-in metric derives from them (``transcript``), and ``criterion``, ``rubric`` and
    ``labels``."""
    names: set[str] = set(BUILTIN_VARIABLES)
    builtin = isinstance(as_content(content), MetricVersionContent)
    for item in items[:1]:
        fields = derive_fields(item.fields, item_id=item.item_id) if builtin else item.fields
        names.update(str(k) for k in fields)
    return sorted(names)


def template_uses(content: ContentLike) -> list[str]:
    """The variables a template version reads (empty for pipeline and function metrics)."""
    parsed = as_content(content)
    if version_kind(parsed) != "template":
        return []
    return sorted(template_variables(template_of_content(parsed)))


# --- saving -------------------------------------------------------------------------------------


def _metric_link(parsed: VersionContent) -> tuple[str | None, Any]:
    if isinstance(parsed, MetricVersionContent):
        return parsed.name, parsed.threshold
    return None, None


def same_content(a: ContentLike, b: ContentLike) -> bool:
    """Whether two contents are the same version: equal JSON, or the same judge template written
    two ways (a scale as a list or a dict, defaults left out or spelled out) with the same link to
    a registered metric."""
    left, right = as_content(a), as_content(b)
    if content_hash(left.to_dict()) == content_hash(right.to_dict()):
        return True
    if _metric_link(left) != _metric_link(right):
        return False
    try:
        if version_kind(left) == "template" and version_kind(right) == "template":
            return template_of_content(left).content_hash == template_of_content(right).content_hash
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
    content: ContentLike,
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
    parsed = as_content(content)
    if version_kind(parsed) == "template":
        template_of_content(parsed)  # refuse a template that does not compile, before saving
    versions = store.list_template_versions(template_id)
    if base_version_id is not None:
        base = next((v for v in versions if v.id == base_version_id), None)
        if base is not None and same_content(base.parsed, parsed):
            return SaveOutcome(base, False, "same as base")
    if versions and same_content(versions[-1].parsed, parsed):
        return SaveOutcome(versions[-1], False, "same as latest")
    saved = store.save_template_version(
        template_id, parsed.to_dict(), author=author, note=note or None
    )
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
    registered metric's name and threshold; pipeline and function metrics as their JSON content.
    """
    left, right = a.parsed, b.parsed
    label_a, label_b = f"{name}v{a.number}", f"{name}v{b.number}"
    try:
        if version_kind(left) == "template" and version_kind(right) == "template":
            body = diff_templates(template_of_content(left), template_of_content(right))
            extra = [
                f"{key}: {format_label(was)} → {format_label(now)}\n"
                for key, was, now in zip(
                    (BUILTIN_KEY, "threshold"), _metric_link(left), _metric_link(right), strict=True
                )
                if was != now
            ]
            if body:
                lines = body.splitlines(keepends=True)
                head = [f"--- {label_a}\n", f"+++ {label_b}\n"]
                return "".join(head + lines[2:] + ["# " + e for e in extra])
            return "".join(f"# {e}" for e in extra)
    except (TemplateError, ConfigError):
        pass
    return "".join(
        difflib.unified_diff(
            _content_lines(left.to_dict()),
            _content_lines(right.to_dict()),
            fromfile=label_a,
            tofile=label_b,
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
        metric_content(spec).to_dict(),
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
