"""The one runner factory: every :class:`~evalcore.judge.Runner` is built by :func:`build_runner`.

What runs is a judge template (:class:`~evalcore.judge.JudgeTemplate`, a
:class:`~evalcore.judge.JudgeRunner`) or a registered metric (:class:`MetricSpec`, a
:class:`MetricRunner`: template, pipeline and function metrics). The command line (``evalcore judge
run``, ``estimate``, the batch commands), the stored runs of :mod:`evalcore.runs` (the background
worker, ``evalcore worker``, batch runs, "try it", estimates) and the optimiser of
:mod:`evalcore.improve` all build their runners here, so the model a run names, the client its
requests go through and its settings are chosen by one set of rules.

It lives beside :class:`MetricRunner` because it builds both kinds: :mod:`evalcore.judge` itself
does not import the built-in library.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias, overload

from evalcore.errors import ConfigError
from evalcore.judge._client import Endpoint, client_factory
from evalcore.judge._requests import ClientSource, RunSettings
from evalcore.judge._runner import JudgeRunner, Runner
from evalcore.judge._template import JudgeTemplate
from evalcore.judge.builtins._run import MetricRunner
from evalcore.judge.builtins._spec import MetricSpec

__all__ = ["Runnable", "build_runner", "runner_model"]

#: What a runner runs: a judge template or a registered metric (as configured).
Runnable: TypeAlias = JudgeTemplate | MetricSpec


def _own_model(what: Runnable) -> str:
    """The model ``what`` names itself (its template's or pipeline's ``[model]``), or ``""``."""
    if isinstance(what, JudgeTemplate):
        return what.model.model
    if what.pipeline is not None:
        return what.pipeline.model.model
    if what.template is not None:
        return what.template.model.model
    return ""


def runner_model(what: Runnable, model: str | None = None, *, default: str = "") -> str | None:
    """The model a run of ``what`` names: ``model`` when given, else its own model setting, else
    ``default`` (the endpoint's default model); ``None`` for a function metric, which asks no
    model.

    Raises :class:`~evalcore.errors.ConfigError` when none is named.

    >>> from evalcore.labels import PASS_FAIL
    >>> t = JudgeTemplate("t", "t", PASS_FAIL, "", "{{ response }}")
    >>> runner_model(t, default="m"), runner_model(t, "other", default="m")
    ('m', 'other')
    """
    if isinstance(what, MetricSpec) and what.kind == "function":
        return None
    chosen = model or _own_model(what) or default
    if not chosen:
        raise ConfigError(
            f"no model for {what.name!r}: name one for the run, in its [model] table, or as the "
            "endpoint's default model"
        )
    return chosen


@overload
def build_runner(
    what: JudgeTemplate,
    *,
    endpoint: Endpoint | None = ...,
    client: ClientSource | None = ...,
    model: str | None = ...,
    settings: RunSettings | None = ...,
    prices: Mapping[str, tuple[float, float]] | None = ...,
    secrets: Mapping[str, Any] | None = ...,
    timeout: float = ...,
) -> JudgeRunner: ...


@overload
def build_runner(
    what: MetricSpec,
    *,
    endpoint: Endpoint | None = ...,
    client: ClientSource | None = ...,
    model: str | None = ...,
    settings: RunSettings | None = ...,
    prices: Mapping[str, tuple[float, float]] | None = ...,
    secrets: Mapping[str, Any] | None = ...,
    timeout: float = ...,
) -> MetricRunner: ...


def build_runner(
    what: Runnable,
    *,
    endpoint: Endpoint | None = None,
    client: ClientSource | None = None,
    model: str | None = None,
    settings: RunSettings | None = None,
    prices: Mapping[str, tuple[float, float]] | None = None,
    secrets: Mapping[str, Any] | None = None,
    timeout: float = 60.0,
) -> Runner:
    """The runner of a judge template or of a registered metric.

    Requests go through ``client`` (an ``openai.AsyncOpenAI``, a factory of one, or a batch's
    :class:`~evalcore.judge.BatchReplies`) when given, else through a client of ``endpoint``
    (:func:`~evalcore.judge.client_factory`: its API key is resolved now, with ``secrets``, so a
    missing key fails before any item is read). The model is :func:`runner_model`'s. ``settings``
    default to :class:`~evalcore.judge.RunSettings` with the metric's own order mode (Vertex-style
    pairwise metrics flip half of the items). ``prices`` replace the default price table (dollars
    per million input and output tokens). A function metric needs neither client nor endpoint.

    Raises :class:`~evalcore.errors.ConfigError` for a run that needs an endpoint and has none, or
    no model.

    >>> from evalcore.judge.builtins import get_metric
    >>> build_runner(get_metric("f1_score")).model  # a function metric: no model, no client
    ''
    """
    chosen = runner_model(what, model, default=endpoint.default_model if endpoint else "")
    if chosen is not None and client is None:
        if endpoint is None:
            raise ConfigError("choose an endpoint to send the judge requests to")
        client = client_factory(endpoint, timeout=timeout, secrets=secrets)
    if isinstance(what, JudgeTemplate):
        assert client is not None
        return JudgeRunner(client, what, settings=settings, model=chosen, prices=prices)
    if settings is None:
        settings = RunSettings(order_mode=what.order_mode)
    if chosen is None:
        return MetricRunner(what, settings=settings)
    return MetricRunner(what, client, settings=settings, model=chosen, prices=prices)
