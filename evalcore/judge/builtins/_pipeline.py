"""Multi-step metrics: several judge requests per item, every intermediate kept.

A :class:`PipelineMetric` asks the model in steps (:class:`StepPrompt`: a system and a user prompt
rendered in the same sandbox as judge templates) and computes a score from the parsed replies. Steps
go through a :class:`~evalcore.judge.RunnerSession`, so they share a judge run's client, rate
limits, retries, reply cache (a re-run costs no request), worker loop and accounting.
:func:`run_pipeline` runs one over many items with ``concurrency`` items in flight, handing each
finished item to a sink (a re-run skips what the sink has finished).

Per item the :class:`~evalcore.judge.JudgeResult` holds the score in ``score``, pass/fail against the
threshold in ``label`` (so it can be calibrated against human pass/fail labels), a one-line account in
``reason``, every step's reply in ``raw`` and every intermediate in ``details``. A step whose reply
cannot be read makes the item ``unparsed`` with the step and the reason in ``error``; a step that
gets no reply makes it ``failed``; both keep the intermediates found so far. Nothing raises.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints

import jinja2
import openai
from jinja2.sandbox import SandboxedEnvironment

from evalcore.errors import ConfigError, EvalcoreError, TemplateError
from evalcore.judge._cache import ReplyCache
from evalcore.judge._client import DEFAULT_PRICES
from evalcore.judge._parse import find_json_objects
from evalcore.judge._requests import (
    CallReply,
    Requester,
    RunnerSession,
    RunSettings,
    RunState,
)
from evalcore.judge._result import JudgeResult, Progress, RunSummary
from evalcore.judge._sink import MemorySink, ResultSink
from evalcore.judge._template import JudgeItem, ModelSettings, check_item_ids

__all__ = [
    "PipelineMetric",
    "ReplyError",
    "StepPrompt",
    "Steps",
    "json_list",
    "run_pipeline",
]

T = TypeVar("T")

_ENV = SandboxedEnvironment(
    undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True
)


#: Default request settings of pipeline steps: deterministic, room for a list of claims.
PIPELINE_MODEL = ModelSettings(max_tokens=2048)


class ReplyError(ValueError):
    """A step's reply has the wrong shape (raised by parsers, recorded as ``unparsed``)."""


@dataclass(frozen=True)
class StepPrompt:
    """One step's prompt: ``system`` and ``user`` with ``{{ variables }}`` filled by the pipeline.

    >>> StepPrompt("echo", "", "Say {{ word }}.").render({"word": "hi"})
    [{'role': 'user', 'content': 'Say hi.'}]
    """

    name: str
    system: str
    user: str
    _compiled: tuple[jinja2.Template | None, jinja2.Template] = field(
        init=False, repr=False, compare=False, hash=False
    )

    def __post_init__(self) -> None:
        try:
            system = _ENV.from_string(self.system) if self.system.strip() else None
            user = _ENV.from_string(self.user)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateError(
                f"step {self.name!r}, line {exc.lineno}: {exc.message}", source=self.name
            ) from None
        object.__setattr__(self, "_compiled", (system, user))

    def render(self, variables: Mapping[str, Any]) -> list[dict[str, str]]:
        """The chat messages of this step."""
        messages: list[dict[str, str]] = []
        for role, program in zip(("system", "user"), self._compiled, strict=True):
            if program is None:
                continue
            try:
                content = program.render(variables)
            except jinja2.UndefinedError as exc:
                raise TemplateError(
                    f"step {self.name!r}: {exc.message}", source=self.name
                ) from None
            messages.append({"role": role, "content": content.strip()})
        return messages

    def content_dict(self) -> dict[str, str]:
        return {"name": self.name, "system": self.system, "user": self.user}


def json_list(obj: Mapping[str, Any], key: str, *, strings: bool = True) -> list[Any]:
    """``obj[key]`` as a list (of non-empty stripped strings when ``strings``), else
    :class:`ReplyError`."""
    found = next((k for k in obj if str(k).lower() == key), None)
    if found is None:
        raise ReplyError(f"the reply has no {key!r} list")
    value = obj[found]
    if not isinstance(value, list):
        raise ReplyError(f"{key!r} is {type(value).__name__}, not a list")
    if not strings:
        return value
    out: list[str] = []
    for entry in value:
        if not isinstance(entry, str | int | float) or isinstance(entry, bool):
            raise ReplyError(f"{key!r} holds {type(entry).__name__}, not text")
        text = str(entry).strip()
        if text:
            out.append(text)
    return out


@dataclass
class _Stop(Exception):
    status: str
    error: str


class _Cancelled(Exception):
    pass


class Steps:
    """The steps of one item: sends each request, keeps replies, intermediates and accounting.

    A pipeline's :meth:`PipelineMetric.evaluate` calls :meth:`ask` for each step and writes what it
    parsed into :attr:`details` as it goes, so a later failure keeps it.
    """

    def __init__(self, session: RunnerSession, params: Mapping[str, Any], item_id: str) -> None:
        self.details: dict[str, Any] = {}
        self.replies: list[tuple[str, str]] = []
        self.calls: list[dict[str, Any]] = []
        self._session = session
        self._params = params
        self._item_id = item_id
        self.tokens_in = self.tokens_out = 0
        self.cost: float | None = None
        self.latency_s = 0.0
        self.attempts = 0
        self.all_cached = True

    def _account(self, step: str, reply: CallReply) -> None:
        fresh = not reply.cached
        self.all_cached = self.all_cached and reply.cached
        self.attempts += reply.attempts
        self.latency_s += reply.latency_s
        self.calls.append(
            {
                "step": step,
                "cached": reply.cached,
                "tokens_in": reply.tokens_in,
                "tokens_out": reply.tokens_out,
                "cost": reply.cost,
            }
        )
        if fresh:
            self.tokens_in += reply.tokens_in
            self.tokens_out += reply.tokens_out
            if reply.cost is not None:
                self.cost = (self.cost or 0.0) + reply.cost

    async def ask(
        self, prompt: StepPrompt, variables: Mapping[str, Any], parse: Callable[[dict[str, Any]], T]
    ) -> T:
        """Send the step, read its reply as a JSON object and return ``parse(obj)``.

        The item stops as ``failed`` when the request gets no reply, and as ``unparsed`` when the
        reply holds no JSON object or ``parse`` raises :class:`ReplyError`.
        """
        messages = prompt.render(variables)
        reply = await self._session.call(messages, params=self._params, item_id=self._item_id)
        if reply.status == "cancelled":
            raise _Cancelled
        self._account(prompt.name, reply)
        if reply.status == "failed":
            raise _Stop("failed", f"step {prompt.name}: {reply.error}")
        self.replies.append((prompt.name, reply.text))
        if reply.error:
            raise _Stop("unparsed", f"step {prompt.name}: {reply.error}")
        found = find_json_objects(reply.text) if reply.text.strip() else []
        if not found:
            cut = reply.finish_reason == "length"
            why = (
                "the reply was cut off at the token limit" if cut else "no JSON object in the reply"
            )
            raise _Stop("unparsed", f"step {prompt.name}: {why}")
        try:
            return parse(found[-1])
        except ReplyError as exc:
            raise _Stop("unparsed", f"step {prompt.name}: {exc}") from None

    @property
    def raw(self) -> str:
        return "\n\n".join(f"[{name}]\n{text}" for name, text in self.replies)


@dataclass(frozen=True)
class PipelineMetric:
    """Base of multi-step metrics; subclasses add their parameters and :meth:`evaluate`.

    ``threshold`` is the pass threshold on the score (pass = score ≥ threshold); ``model`` the
    request settings of every step (``n`` must be 1); ``json_mode`` asks the endpoint for a JSON
    object (``response_format={"type": "json_object"}``); ``prompts`` overrides step prompts by
    name (a copy with an edited prompt is a new version, see :attr:`content_hash`).
    """

    name: str
    threshold: float = 0.5
    model: ModelSettings = PIPELINE_MODEL
    json_mode: bool = True
    prompts: tuple[tuple[str, StepPrompt], ...] = ()

    def __post_init__(self) -> None:
        if self.model.n != 1:
            raise ConfigError(f"pipeline {self.name!r}: each step is sampled once (n = 1)")
        if not (isinstance(self.threshold, int | float) and math.isfinite(self.threshold)):
            raise ConfigError(f"pipeline {self.name!r}: threshold must be a number")
        known = set(self.default_prompts())
        for step, _ in self.prompts:
            if step not in known:
                raise ConfigError(
                    f"pipeline {self.name!r} has no step {step!r} (its steps: "
                    f"{', '.join(sorted(known))})"
                )

    # --- what subclasses provide -------------------------------------------------------------------

    def default_prompts(self) -> dict[str, StepPrompt]:
        """The built-in prompt of every step, by step name."""
        return {}

    def parameters(self) -> dict[str, Any]:
        """The metric's own parameters (mode, beta, coeff …), JSON-ready."""
        skip = {f.name for f in fields(PipelineMetric)}
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}

    def parameter_choices(self) -> dict[str, tuple[str, ...]]:
        """The words each parameter that takes one of a few may be (its ``Literal`` type), by
        name; parameters that take a number or free text are not listed.

        >>> from evalcore.judge.builtins import get_metric
        >>> get_metric("factual_correctness").pipeline.parameter_choices()["mode"]
        ('precision', 'recall', 'f1')
        """
        hints = get_type_hints(type(self))
        return {
            name: tuple(str(a) for a in get_args(hints[name]))
            for name in self.parameters()
            if get_origin(hints.get(name)) is Literal
        }

    def max_requests(self) -> int:
        """The most requests one item can take."""
        return len(self.default_prompts())

    async def evaluate(self, fields: Mapping[str, Any], steps: Steps) -> tuple[float, str]:
        """Run the steps for one item; return ``(score, reason)``."""
        raise NotImplementedError

    # --- derived ---------------------------------------------------------------------------------

    def prompt(self, step: str) -> StepPrompt:
        """The prompt of ``step``: the override when given, else the built-in one."""
        for name, prompt in self.prompts:
            if name == step:
                return prompt
        return self.default_prompts()[step]

    def with_prompt(self, step: str, prompt: StepPrompt) -> PipelineMetric:
        """A copy whose ``step`` uses ``prompt`` (a new version)."""
        others = tuple((n, p) for n, p in self.prompts if n != step)
        return replace(self, prompts=(*others, (step, prompt)))

    def request_params(self) -> dict[str, Any]:
        """The request body fields of every step besides model and messages."""
        params = self.model.request_params()
        if self.json_mode:
            params["response_format"] = {"type": "json_object"}
        return params

    def content_dict(self) -> dict[str, Any]:
        """Everything that decides the results: the version identity."""
        return {
            "name": self.name,
            "kind": type(self).__name__,
            "parameters": self.parameters(),
            "threshold": self.threshold,
            "json_mode": self.json_mode,
            "model": {f.name: getattr(self.model, f.name) for f in fields(self.model)},
            "prompts": {
                step: self.prompt(step).content_dict() for step in sorted(self.default_prompts())
            },
        }

    @property
    def content_hash(self) -> str:
        canonical = json.dumps(
            self.content_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    @property
    def version(self) -> str:
        return self.content_hash[:12]


# --- running ----------------------------------------------------------------------------------------


async def _evaluate(
    pipeline: PipelineMetric,
    item: JudgeItem,
    session: RunnerSession,
    params: Mapping[str, Any],
    started: float,
) -> JudgeResult | None:
    steps = Steps(session, params, item.item_id)
    status, label, score, reason, error = "ok", None, None, "", ""
    try:
        score, reason = await pipeline.evaluate(item.fields, steps)
    except _Cancelled:
        return None
    except _Stop as stop:
        status, error = stop.status, stop.error
    except (EvalcoreError, ReplyError) as exc:  # a formula refusing what the steps produced
        status, error = "unparsed", str(exc)
    details: dict[str, Any] = dict(steps.details)
    if status == "ok" and score is not None:
        passed = score >= pipeline.threshold
        label = "pass" if passed else "fail"
        details["score"] = score
        details["threshold"] = pipeline.threshold
        details["result"] = label
    details["requests"] = steps.calls
    return JudgeResult(
        item_id=item.item_id,
        order="AB",
        status=status,  # type: ignore[arg-type]
        label=label,
        score=score,
        reason=reason,
        raw=steps.raw,
        error=error,
        tokens_in=steps.tokens_in,
        tokens_out=steps.tokens_out,
        cost=steps.cost,
        latency_s=steps.latency_s if steps.calls else time.perf_counter() - started,
        attempts=steps.attempts,
        cache_key="",
        cached=bool(steps.calls) and steps.all_cached,
        details=details,
    )


async def run_pipeline(
    pipeline: PipelineMetric,
    client: openai.AsyncOpenAI | Callable[[], openai.AsyncOpenAI],
    items: Sequence[JudgeItem],
    sink: ResultSink | None = None,
    cache: ReplyCache | None = None,
    *,
    settings: RunSettings | None = None,
    model: str | None = None,
    prices: Mapping[str, tuple[float, float]] | None = None,
    progress: Callable[[Progress], None] | None = None,
    endpoint: str | None = None,
) -> RunSummary:
    """Run ``pipeline`` over ``items`` (already prepared), ``settings.concurrency`` items at a time.

    ``model`` defaults to the pipeline's own model setting; ``endpoint`` is the base URL that
    enters the cache keys (default: the client's own). Items finished in ``sink`` are skipped.
    Cancelling the sink stops new requests; an item cut short is not recorded (a later run
    finishes it, its earlier steps from the cache). Token counts and cost of a result are those of
    the requests it sent in this run; ``cached`` is true when every step came from the cache.
    Raises :class:`~evalcore.errors.JudgeError` when the endpoint refuses the calls (401/403/404).
    """
    items = list(items)
    check_item_ids(items)
    settings = settings or RunSettings()
    sink = sink if sink is not None else MemorySink()
    chosen = model or pipeline.model.model
    if not chosen:
        raise ConfigError(f"no model for metric {pipeline.name!r}: pass one to the run")
    requester = Requester(
        client,
        model=chosen,
        settings=settings,
        prices=DEFAULT_PRICES if prices is None else prices,
        max_tokens=pipeline.model.max_tokens,
        endpoint=endpoint,
    )
    params = pipeline.request_params()
    finished = sink.finished()
    pending = deque(i for i in items if (i.item_id, "AB") not in finished)
    state = RunState(
        total=len(items),
        skipped=len(items) - len(pending),
        sink=sink,
        cache=cache,
        progress=progress,
    )
    if pending and sink.is_cancelled():
        state.cancelled = True
    elif pending:
        session = RunnerSession(requester, state, params)

        async def handle(item: JudgeItem) -> None:
            result = await _evaluate(pipeline, item, session, params, time.perf_counter())
            if result is not None:
                state.record(result)

        await requester.drive(pending, handle, state)
    return state.summary()
