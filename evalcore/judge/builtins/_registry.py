"""The metric registry: a plain dict of :class:`MetricSpec` by name, built-ins and yours alike."""

from __future__ import annotations

from importlib import resources

from evalcore.errors import ConfigError
from evalcore.judge._template import JudgeTemplate
from evalcore.judge.builtins._spec import MetricSpec

__all__ = [
    "builtin_names",
    "builtin_template",
    "get_metric",
    "list_metrics",
    "load_template_file",
    "register_metric",
    "unregister_metric",
]

_METRICS: dict[str, MetricSpec] = {}
_BUILTINS: dict[str, MetricSpec] = {}


def load_template_file(stem: str) -> JudgeTemplate:
    """The judge template shipped as ``evalcore/judge/builtins/{stem}.toml``."""
    path = resources.files("evalcore.judge.builtins").joinpath(f"{stem}.toml")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"no built-in template file {stem}.toml") from None
    return JudgeTemplate.load_toml(text)


def register_metric(spec: MetricSpec, *, replace: bool = False) -> MetricSpec:
    """Add ``spec`` to the registry, as every built-in is added; returns it.

    A name already registered is refused unless ``replace=True`` (a changed threshold or an edited
    template of a built-in is best registered under a new name, so both can be compared).
    """
    if not isinstance(spec, MetricSpec):
        raise ConfigError(f"register_metric takes a MetricSpec, not {type(spec).__name__}")
    if spec.name in _METRICS and not replace:
        raise ConfigError(
            f"a metric named {spec.name!r} is already registered; pick another name or pass "
            "replace=True"
        )
    _METRICS[spec.name] = spec
    return spec


def _register_builtin(spec: MetricSpec) -> MetricSpec:
    _BUILTINS[spec.name] = spec
    return register_metric(spec, replace=True)


def unregister_metric(name: str) -> None:
    """Remove a metric from the registry (a built-in stays available to :func:`builtin_template`)."""
    if name not in _METRICS:
        raise ConfigError(f"no metric named {name!r} is registered")
    del _METRICS[name]


def get_metric(name: str) -> MetricSpec:
    """The registered metric ``name``; :class:`~evalcore.errors.ConfigError` listing the names
    otherwise.

    >>> get_metric("groundedness").threshold
    3.0
    """
    try:
        return _METRICS[name]
    except KeyError:
        known = ", ".join(sorted(_METRICS)) or "none"
        raise ConfigError(
            f"no metric named {name!r}; the registered metrics are: {known}"
        ) from None


def list_metrics(*, group: str | None = None) -> list[MetricSpec]:
    """The registered metrics in registration order (built-ins first), optionally of one group."""
    return [s for s in _METRICS.values() if group is None or s.group == group]


def builtin_names() -> tuple[str, ...]:
    """The names of the metrics evalcore ships, in catalogue order."""
    return tuple(_BUILTINS)


def builtin_template(name: str) -> JudgeTemplate:
    """The shipped judge template of the built-in template metric ``name``.

    It is an ordinary :class:`~evalcore.judge.JudgeTemplate`: copy it with
    :func:`dataclasses.replace` (or edit its :meth:`~evalcore.judge.JudgeTemplate.to_toml`), and the
    edit is a new version with its own content hash, to compare with the original.

    >>> t = builtin_template("fluency")
    >>> t.scale.display_labels, t.output.structured
    (['1', '2', '3', '4', '5'], True)
    """
    spec = _BUILTINS.get(name)
    if spec is None:
        known = ", ".join(n for n, s in _BUILTINS.items() if s.template is not None)
        raise ConfigError(f"no built-in template metric named {name!r}; they are: {known}")
    if spec.template is None:
        raise ConfigError(f"built-in metric {name!r} is a {spec.kind} metric, not a template")
    return spec.template
