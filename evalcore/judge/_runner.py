"""The judge runner: many items through one template, concurrently, resumably, paying once.

:class:`JudgeRunner` renders every item first (so a template typo fails before any request), skips what
the sink already has, answers what it can from the cache, and sends the rest through an
OpenAI-compatible client with a fixed number of workers (``concurrency``), optional request and token
rate limits, and retries:

- 429, 408, 409, 5xx, time-outs, connection errors and malformed response bodies are retried with
  exponential backoff and full jitter (``uniform(0, min(backoff_max, backoff_base·2^(attempt-1)))``),
  or after exactly the server's ``Retry-After`` / ``retry-after-ms`` when it sends one (a value above
  ``max_retry_after`` fails the item instead of stalling the run);
- other 4xx fail the item at once with the server's message; 401, 403 and 404 concern the endpoint,
  not the item, so they also stop the run with a :class:`~evalcore.errors.JudgeError`;
- no item is ever requested more than ``max_attempts`` times; after the last attempt it is recorded as
  ``failed`` with the last error and the run goes on.

Every result is handed to the sink the moment it exists. Cancelling (``sink.is_cancelled()``) stops
new requests at once and interrupts retry waits; requests already in flight may finish (and are
recorded) for ``cancel_grace`` seconds, after which they are abandoned unrecorded. A later run with
the same sink skips everything finished.

Requests go through ``client.post("/chat/completions", ...)`` of the official ``openai`` client: the
same request ``chat.completions.create`` sends, with the same authentication, Azure deployment
routing, errors and time-outs, but without the SDK's per-call parameter transformation and response
model building, which cost several milliseconds of CPU per call and would cap throughput.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import email.utils
import hashlib
import json
import logging
import random
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import openai
from aiolimiter import AsyncLimiter

from evalcore.errors import ConfigError, JudgeError
from evalcore.judge._cache import ReplyCache, get_many
from evalcore.judge._client import DEFAULT_PRICES, NO_KEY, estimate_cost
from evalcore.judge._parse import (
    ParsedReply,
    aggregate_samples,
    logprob_score,
    parse_reply,
    response_format_for,
)
from evalcore.judge._result import Estimate, JudgeResult, Order, Progress, RunSummary
from evalcore.judge._sink import MemorySink, ResultSink
from evalcore.judge._template import JudgeItem, JudgeTemplate, check_variables, render
from evalcore.labels import Label

__all__ = [
    "SWAPPED_FIELDS",
    "TYPICAL_REPLY_TOKENS",
    "CallReply",
    "JudgeRunner",
    "OrderMode",
    "RunSettings",
    "RunnerSession",
    "cache_key",
    "estimate",
    "orders_for",
    "request_params",
]

log = logging.getLogger("evalcore.judge")

OrderMode: TypeAlias = Literal["single", "both", "flip"]
ProgressCallback: TypeAlias = Callable[[Progress], None]

#: Field pairs exchanged when a pairwise item is shown in the ``"BA"`` order.
SWAPPED_FIELDS: tuple[tuple[str, str], ...] = (
    ("response_a", "response_b"),
    ("response", "baseline_model_response"),
)
#: Reply length assumed by :func:`estimate` (a short JSON verdict with a one-paragraph reason).
TYPICAL_REPLY_TOKENS = 150

_RETRY_STATUSES = frozenset({408, 409, 429})
_FATAL_STATUSES = frozenset({401, 403, 404})
_CHAT_PATH = "/chat/completions"


@dataclass(frozen=True)
class RunSettings:
    """How a run is paced and retried.

    ``order_mode`` applies to pairwise templates: ``"single"`` judges each item as given (``AB``),
    ``"both"`` judges ``AB`` and ``BA``, ``"flip"`` judges about half of the items (chosen by a hash
    of ``seed`` and the item id, so the choice is stable across runs) in ``BA`` only, which cancels
    position bias on average. Pointwise templates always run ``AB``.
    """

    concurrency: int = 8
    rpm: float | None = None
    tpm: float | None = None
    max_attempts: int = 6
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    max_retry_after: float = 120.0
    timeout: float = 60.0
    order_mode: OrderMode = "single"
    seed: int = 0
    cancel_grace: float = 5.0

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, not {self.concurrency}")
        if self.max_attempts < 1:
            raise ConfigError(f"max_attempts must be at least 1, not {self.max_attempts}")
        if self.order_mode not in ("single", "both", "flip"):
            raise ConfigError(f"order must be single, both or flip, not {self.order_mode!r}")
        for name in ("rpm", "tpm"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ConfigError(f"{name} must be positive, not {value}")
        if self.timeout <= 0:
            raise ConfigError(f"timeout must be positive, not {self.timeout}")


# --- planning --------------------------------------------------------------------------------------


def orders_for(
    template: JudgeTemplate, item_id: str, order_mode: OrderMode, seed: int
) -> tuple[Order, ...]:
    """The orders in which an item is judged."""
    if template.kind != "pairwise" or order_mode == "single":
        return ("AB",)
    if order_mode == "both":
        return ("AB", "BA")
    digest = hashlib.sha256(f"{seed}\x00{item_id}".encode()).digest()
    return ("BA",) if digest[0] & 1 else ("AB",)


def _swap(fields: Mapping[str, Any]) -> dict[str, Any]:
    swapped = dict(fields)
    for left, right in SWAPPED_FIELDS:
        if left in fields and right in fields:
            swapped[left], swapped[right] = fields[right], fields[left]
    return swapped


_FLIP = {"A": "B", "B": "A"}


def _to_item_frame(label: Label | None, order: str) -> Label | None:
    if order == "BA" and isinstance(label, str):
        return _FLIP.get(label, label)
    return label


def request_params(template: JudgeTemplate) -> dict[str, Any]:
    """The request body fields a template sends besides ``model`` and ``messages``."""
    settings = template.model
    params: dict[str, Any] = {"temperature": settings.temperature}
    if settings.max_tokens is not None:
        params["max_tokens"] = settings.max_tokens
    if settings.seed is not None:
        params["seed"] = settings.seed
    if settings.n != 1:
        params["n"] = settings.n
    if settings.logprobs:
        params["logprobs"] = True
        if settings.top_logprobs:
            params["top_logprobs"] = settings.top_logprobs
    if template.output.structured:
        params["response_format"] = response_format_for(template)
    return params


def _key_prefix(model: str, params: Mapping[str, Any]) -> bytes:
    head = json.dumps({"model": model, "params": params}, sort_keys=True, separators=(",", ":"))
    return head.encode("utf-8") + b"\x00"


def cache_key(messages: Sequence[Mapping[str, str]], model: str, params: Mapping[str, Any]) -> str:
    """sha256 of exactly what is sent: the messages, the model and every request parameter."""
    body = json.dumps(messages, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(_key_prefix(model, params) + body).hexdigest()


@dataclass
class _Unit:
    item_id: str
    order: Order
    messages: list[dict[str, str]]
    key: str
    chars: int
    #: request parameters of a single call (:meth:`RunnerSession.call`); None: the template's
    params: Mapping[str, Any] | None = None


def _plan(
    template: JudgeTemplate,
    items: Sequence[JudgeItem],
    model: str,
    params: Mapping[str, Any],
    order_mode: OrderMode,
    seed: int,
    finished: set[tuple[str, str]],
) -> tuple[list[_Unit], int, int]:
    """Render every (item, order) not finished; returns (units, total, skipped)."""
    prefix = _key_prefix(model, params)
    units: list[_Unit] = []
    total = skipped = 0
    sha256 = hashlib.sha256
    dumps = json.dumps
    for item in items:
        for order in orders_for(template, item.item_id, order_mode, seed):
            total += 1
            if (item.item_id, order) in finished:
                skipped += 1
                continue
            fields = _swap(item.fields) if order == "BA" else item.fields
            messages = render(template, fields, item_id=item.item_id)
            body = dumps(messages, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            key = sha256(prefix + body).hexdigest()
            units.append(_Unit(item.item_id, order, messages, key, len(body)))
    return units, total, skipped


def _check_ids(items: Sequence[JudgeItem]) -> None:
    seen: set[str] = set()
    for item in items:
        if item.item_id in seen:
            raise ConfigError(f"item id {item.item_id!r} appears twice; item ids must be unique")
        seen.add(item.item_id)


def _expected_tokens_in(unit: _Unit) -> int:
    return unit.chars // 4 + 4 * len(unit.messages) + 3


def estimate(
    items: Iterable[JudgeItem],
    template: JudgeTemplate,
    cache: ReplyCache | None = None,
    prices: Mapping[str, tuple[float, float]] | None = None,
    *,
    model: str | None = None,
    order_mode: OrderMode = "single",
    seed: int = 0,
    finished: Iterable[tuple[str, str]] = (),
) -> Estimate:
    """What running ``template`` over ``items`` would request and cost (see :class:`Estimate`).

    Raises :class:`~evalcore.errors.MissingVariableError` as a run would.
    """
    items = list(items)
    model_name = _resolve_model(template, model)
    check_variables(template, items)
    params = request_params(template)
    units, total, skipped = _plan(
        template, items, model_name, params, order_mode, seed, set(finished)
    )
    hits = get_many(cache, [u.key for u in units]) if cache is not None else {}
    pending = [u for u in units if u.key not in hits]
    unique: dict[str, _Unit] = {}
    for unit in pending:
        unique.setdefault(unit.key, unit)
    n = template.model.n
    max_tokens = template.model.max_tokens
    typical = min(max_tokens, TYPICAL_REPLY_TOKENS) if max_tokens else TYPICAL_REPLY_TOKENS
    tokens_in = sum(_expected_tokens_in(u) for u in unique.values())
    tokens_out = len(unique) * n * typical
    cost = estimate_cost(model_name, tokens_in, tokens_out, prices)
    return Estimate(
        n_units=total,
        n_skipped=skipped,
        n_cached=len(units) - len(pending),
        n_requests=len(unique),
        expected_tokens_in=tokens_in,
        expected_tokens_out=tokens_out,
        max_tokens_out=len(unique) * n * max_tokens if max_tokens else None,
        expected_cost=cost,
        model=model_name,
    )


def _resolve_model(template: JudgeTemplate, model: str | None) -> str:
    name = model or template.model.model
    if not name:
        raise ConfigError(
            f"no model for template {template.name!r}: set model in its [model] table or pass one "
            "to the run"
        )
    return name


# --- replies ---------------------------------------------------------------------------------------


def _compact_logprobs(logprobs: Any) -> list[list[Any]] | None:
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if not content:
        return None
    compact: list[list[Any]] = []
    for entry in content:
        alternatives = entry.get("top_logprobs") or [
            {"token": entry.get("token", ""), "logprob": entry.get("logprob", 0.0)}
        ]
        compact.append(
            [
                entry.get("token", ""),
                [[alt.get("token", ""), float(alt.get("logprob", -1e9))] for alt in alternatives],
            ]
        )
    return compact


def _payload_from_response(
    data: Mapping[str, Any], model: str, latency: float, prices: Mapping[str, tuple[float, float]]
) -> dict[str, Any]:
    choices = []
    raw_choices = data.get("choices")
    if not isinstance(raw_choices, list):
        raise ValueError("the response has no 'choices' list")
    for choice in sorted(raw_choices, key=lambda c: c.get("index", 0)):
        message = choice.get("message") or {}
        content = message.get("content")
        choices.append(
            {
                "text": content if isinstance(content, str) else "",
                "finish_reason": choice.get("finish_reason"),
                "refusal": message.get("refusal"),
                "logprobs": _compact_logprobs(choice.get("logprobs")),
            }
        )
    usage = data.get("usage") or {}
    tokens_in = int(usage.get("prompt_tokens") or 0)
    tokens_out = int(usage.get("completion_tokens") or 0)
    return {
        "choices": choices,
        "model": str(data.get("model") or model),
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "cost": estimate_cost(model, tokens_in, tokens_out, prices),
        "latency_s": round(latency, 6),
    }


def _retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms``, or ``Retry-After`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _redact(secret: str, text: str) -> str:
    return text.replace(secret, "***") if secret and secret in text else text


def _status_failure(exc: openai.APIStatusError, secret: str) -> _Attempt:
    status = exc.status_code
    detail = exc.message
    body = exc.body
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
            detail = inner["message"]
    message = f"HTTP {status}: {_redact(secret, str(detail))}"
    if status in _RETRY_STATUSES or status >= 500:
        return _Attempt(message, retry=True, wait=_retry_after(exc.response.headers))
    return _Attempt(message, retry=False, fatal=status in _FATAL_STATUSES)


@dataclass
class _Attempt:
    """The outcome of one failed attempt."""

    message: str
    retry: bool
    wait: float | None = None
    fatal: bool = False
    raw: str = ""


@dataclass
class _State:
    total: int
    skipped: int
    started: float
    ok: int = 0
    unparsed: int = 0
    failed: int = 0
    cached: int = 0
    requests: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    fatal: str = ""
    cancelled: bool = False
    fresh: dict[str, dict[str, Any]] = field(default_factory=dict)
    inflight: dict[str, asyncio.Future[dict[str, Any] | None]] = field(default_factory=dict)
    # the run's resources, dropped with the state when the run ends (the client holds the key)
    sink: Any = None
    cache: ReplyCache | None = None
    progress: ProgressCallback | None = None
    client: Any = None
    secret: str = ""
    rpm: AsyncLimiter | None = None
    tpm: AsyncLimiter | None = None
    stop: asyncio.Event | None = None
    options: dict[str, Any] = field(default_factory=dict)


class SyncBridge:
    """Runs a runner's ``run`` coroutine from synchronous code (``run_sync`` of both runners).

    With a client factory each call runs in a new event loop (``asyncio.run``). A client *instance*
    belongs to the loop it first ran in, so for one the bridge keeps a private loop for every call,
    released by :meth:`close`. Called while an event loop is running (a notebook), the work runs in
    a helper thread.
    """

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None

    def run(self, coroutine: Coroutine[Any, Any, RunSummary], client: object) -> RunSummary:
        runner: Callable[[Any], RunSummary]
        if isinstance(client, openai.AsyncOpenAI):
            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
            runner = self._loop.run_until_complete
        else:
            runner = asyncio.run
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return runner(coroutine)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            future: concurrent.futures.Future[RunSummary] = pool.submit(runner, coroutine)
            return future.result()

    def close(self) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.close()
        self._loop = None


class JudgeRunner:
    """Runs one template over many items.

    ``client`` is an ``openai.AsyncOpenAI`` (or Azure) client, or a zero-argument factory of one
    (:func:`~evalcore.judge.client_factory`); a factory is called once per run and the client closed
    after it, which is what :meth:`run_sync` needs to be called more than once. ``model`` overrides
    the template's model setting. ``prices`` overrides :data:`~evalcore.judge.DEFAULT_PRICES`.
    """

    def __init__(
        self,
        client: openai.AsyncOpenAI | Callable[[], openai.AsyncOpenAI],
        template: JudgeTemplate,
        *,
        settings: RunSettings | None = None,
        model: str | None = None,
        prices: Mapping[str, tuple[float, float]] | None = None,
    ) -> None:
        self.template = template
        self.settings = settings or RunSettings()
        self.model = _resolve_model(template, model)
        self.prices = DEFAULT_PRICES if prices is None else prices
        self._client = client
        self._params = request_params(template)
        self._label_field = template.label_field
        self._rng = random.Random(self.settings.seed)
        self._loops = SyncBridge()

    # --- public ------------------------------------------------------------------------------------

    def estimate(
        self,
        items: Iterable[JudgeItem],
        cache: ReplyCache | None = None,
        sink: ResultSink | None = None,
    ) -> Estimate:
        """:func:`estimate` with this runner's model, order mode and prices."""
        return estimate(
            items,
            self.template,
            cache,
            self.prices,
            model=self.model,
            order_mode=self.settings.order_mode,
            seed=self.settings.seed,
            finished=sink.finished() if sink is not None else (),
        )

    def run_sync(
        self,
        items: Iterable[JudgeItem],
        sink: ResultSink | None = None,
        cache: ReplyCache | None = None,
        *,
        progress: ProgressCallback | None = None,
    ) -> RunSummary:
        """:meth:`run` from synchronous code (in a helper thread when an event loop is running).

        With a client factory every call runs in a new event loop. A client *instance* belongs to
        the loop it first ran in, so the runner then keeps one private loop for all its
        ``run_sync`` calls (released by :meth:`close`).
        """
        return self._loops.run(self.run(items, sink, cache, progress=progress), self._client)

    def close(self) -> None:
        """Close the private event loop :meth:`run_sync` keeps for a client instance, if any."""
        self._loops.close()

    @contextlib.asynccontextmanager
    async def session(self, cache: ReplyCache | None = None) -> AsyncIterator[RunnerSession]:
        """Open the run's client and rate limiters for single requests (multi-step metrics).

        Inside ``async with runner.session(cache) as session``, :meth:`RunnerSession.call` sends one
        chat request through exactly the path :meth:`run` uses (rate limits, retries, the reply
        cache, duplicate requests answered once, token and cost accounting). The client is closed and
        the cache flushed on exit; an endpoint that refused the calls (401/403/404) raises
        :class:`~evalcore.errors.JudgeError` then.
        """
        state = _State(total=0, skipped=0, started=time.perf_counter(), cache=cache)
        owned = self._open(state)
        try:
            yield RunnerSession(self, state)
        finally:
            await self._close(state, owned)
            flush = getattr(cache, "flush", None)
            if flush is not None:
                flush()
        if state.fatal:
            raise JudgeError(state.fatal)

    async def run(
        self,
        items: Iterable[JudgeItem],
        sink: ResultSink | None = None,
        cache: ReplyCache | None = None,
        *,
        progress: ProgressCallback | None = None,
    ) -> RunSummary:
        """Judge every item (in every order the settings ask) not finished in ``sink``.

        Raises :class:`~evalcore.errors.MissingVariableError` (or another
        :class:`~evalcore.errors.TemplateError`) before any request when an item cannot be rendered,
        and :class:`~evalcore.errors.JudgeError` when the endpoint refuses the run (401/403/404).
        """
        items = list(items)
        _check_ids(items)
        check_variables(self.template, items)
        sink = sink if sink is not None else MemorySink()
        units, total, skipped = _plan(
            self.template,
            items,
            self.model,
            self._params,
            self.settings.order_mode,
            self.settings.seed,
            sink.finished(),
        )
        state = _State(
            total=total,
            skipped=skipped,
            started=time.perf_counter(),
            sink=sink,
            cache=cache,
            progress=progress,
        )

        hits = get_many(cache, [u.key for u in units]) if cache is not None and units else {}
        pending: deque[_Unit] = deque()
        answered: list[JudgeResult] = []
        for unit in units:
            payload = hits.get(unit.key)
            if payload is None:
                pending.append(unit)
            else:
                answered.append(self._result(unit, payload, cached=True, attempts=0))
        if answered:
            self._record_many(state, answered)
        if pending and not sink.is_cancelled():
            try:
                await self._run_pending(pending, state)
            finally:
                flush = getattr(cache, "flush", None)
                if flush is not None:
                    flush()
        elif pending:
            state.cancelled = True
        if state.fatal:
            raise JudgeError(state.fatal)
        return RunSummary(
            total=state.total,
            skipped=state.skipped,
            ok=state.ok,
            unparsed=state.unparsed,
            failed=state.failed,
            cached=state.cached,
            requests=state.requests,
            tokens_in=state.tokens_in,
            tokens_out=state.tokens_out,
            cost=state.cost,
            elapsed_s=time.perf_counter() - state.started,
            cancelled=state.cancelled,
        )

    # --- the loop ----------------------------------------------------------------------------------

    def _open(self, state: _State) -> bool:
        """Give ``state`` a client, rate limiters and a stop event; True when the client is ours."""
        owned = not isinstance(self._client, openai.AsyncOpenAI)
        client: openai.AsyncOpenAI = (
            self._client if isinstance(self._client, openai.AsyncOpenAI) else self._client()
        )
        key = getattr(client, "api_key", "") or ""
        settings = self.settings
        state.client = client
        state.secret = key if len(key) >= 6 and key != NO_KEY else ""
        state.rpm = AsyncLimiter(settings.rpm, 60) if settings.rpm else None
        state.tpm = AsyncLimiter(settings.tpm, 60) if settings.tpm else None
        state.stop = asyncio.Event()
        state.options = {"max_retries": 0, "timeout": settings.timeout}
        return owned

    @staticmethod
    async def _close(state: _State, owned: bool) -> None:
        if owned and state.client is not None:
            await state.client.close()
        state.client = None
        state.secret = ""

    async def _run_pending(self, pending: deque[_Unit], state: _State) -> None:
        owned = self._open(state)
        settings = self.settings
        workers = [
            asyncio.create_task(self._worker(pending, state))
            for _ in range(min(settings.concurrency, len(pending)))
        ]
        watcher = asyncio.create_task(self._watch(state, workers))
        try:
            # A worker fails only when the sink, the cache or a progress callback raises: stop all.
            await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
        finally:
            watcher.cancel()
            for task in workers:
                task.cancel()
            await asyncio.gather(watcher, *workers, return_exceptions=True)
            await self._close(state, owned)
        for task in workers:
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]

    async def _watch(self, state: _State, workers: list[asyncio.Task[None]]) -> None:
        assert state.stop is not None
        while not state.stop.is_set():
            if state.sink.is_cancelled():
                state.cancelled = True
                state.stop.set()
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(self.settings.cancel_grace)
        for task in workers:
            task.cancel()

    async def _worker(self, pending: deque[_Unit], state: _State) -> None:
        assert state.stop is not None
        while pending and not state.stop.is_set():
            unit = pending.popleft()
            result = await self._process(unit, state)
            if result is not None:
                self._record(state, result)

    async def _process(self, unit: _Unit, state: _State) -> JudgeResult | None:
        payload = state.fresh.get(unit.key)
        if payload is None and unit.key in state.inflight:
            payload = await state.inflight[unit.key]
        if payload is not None:  # the same request was answered earlier in this run
            return self._result(unit, payload, cached=True, attempts=0)
        future: asyncio.Future[dict[str, Any] | None] = asyncio.get_running_loop().create_future()
        state.inflight[unit.key] = future
        result: JudgeResult | None = None
        try:
            result, payload = await self._request(unit, state)
        finally:
            del state.inflight[unit.key]
            if not future.done():
                future.set_result(payload)
        if payload is not None:
            state.fresh[unit.key] = payload
        return result

    async def _request(
        self, unit: _Unit, state: _State
    ) -> tuple[JudgeResult | None, dict[str, Any] | None]:
        settings = self.settings
        params = self._params if unit.params is None else unit.params
        body = {"model": self.model, "messages": unit.messages, **params}
        client = state.client
        stop = state.stop
        assert stop is not None
        started = time.perf_counter()
        last: _Attempt | None = None
        for attempt in range(1, settings.max_attempts + 1):
            if stop.is_set():
                return None, None
            if state.rpm is not None:
                await state.rpm.acquire()
            if state.tpm is not None:
                need = _expected_tokens_in(unit) + (self.template.model.max_tokens or 0)
                await state.tpm.acquire(min(float(need), state.tpm.max_rate))
            if stop.is_set():
                return None, None
            sent = time.perf_counter()
            state.requests += 1
            try:
                data = await client.post(
                    _CHAT_PATH, body=body, cast_to=object, options=state.options
                )  # type: ignore[arg-type]
                if not isinstance(data, Mapping):
                    raise ValueError(f"the response is not a JSON object: {str(data)[:200]!r}")
                payload = _payload_from_response(
                    data, self.model, time.perf_counter() - sent, self.prices
                )
            except openai.APIStatusError as exc:
                last = _status_failure(exc, state.secret)
            except openai.APITimeoutError:
                last = _Attempt(f"no reply within {settings.timeout:g} s (time-out)", retry=True)
            except openai.APIConnectionError as exc:
                last = _Attempt(f"connection error: {_redact(state.secret, str(exc))}", retry=True)
            except openai.APIResponseValidationError as exc:
                last = _Attempt(
                    f"malformed response: {_redact(state.secret, str(exc))}", retry=True
                )
            except (ValueError, TypeError, AttributeError) as exc:
                doc = getattr(exc, "doc", "")
                last = _Attempt(
                    f"malformed response body: {_redact(state.secret, str(exc))}",
                    retry=True,
                    raw=_redact(state.secret, doc[:2000]) if isinstance(doc, str) else "",
                )
            else:
                if state.cache is not None:
                    state.cache.put(unit.key, self.model, payload)
                result = self._result(unit, payload, cached=False, attempts=attempt)
                return result, payload
            if last.fatal:
                state.fatal = f"the endpoint refused the run: {last.message}"
                stop.set()
            if not last.retry or attempt == settings.max_attempts:
                break
            wait = self._backoff(attempt) if last.wait is None else last.wait
            if wait > settings.max_retry_after:
                last = _Attempt(
                    f"{last.message}; the server asked to wait {wait:g} s, more than "
                    f"max_retry_after ({settings.max_retry_after:g} s)",
                    retry=False,
                )
                break
            log.debug(
                "item %s (%s): attempt %d failed (%s); retrying in %.2f s",
                unit.item_id,
                unit.order,
                attempt,
                last.message,
                wait,
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=wait)
            if stop.is_set():
                return None, None
        assert last is not None
        log.info("item %s (%s) failed: %s", unit.item_id, unit.order, last.message)
        return (
            JudgeResult(
                item_id=unit.item_id,
                order=unit.order,
                status="failed",
                raw=last.raw,
                error=last.message,
                latency_s=time.perf_counter() - started,
                attempts=attempt,
                cache_key=unit.key,
            ),
            None,
        )

    def _backoff(self, attempt: int) -> float:
        ceiling = min(self.settings.backoff_max, self.settings.backoff_base * 2 ** (attempt - 1))
        return self._rng.uniform(0.0, ceiling)

    # --- results -----------------------------------------------------------------------------------

    def _parse_choice(self, choice: Mapping[str, Any]) -> ParsedReply:
        output = self.template.output
        text = choice.get("text") or ""
        if not text.strip() and choice.get("refusal"):
            return ParsedReply("unparsed", error=f"the model refused: {choice['refusal']}")
        parsed = parse_reply(
            text,
            self.template.scale,
            label_field=self._label_field,
            reason_field=output.reason_field,
            parser=output.parser,
        )
        if parsed.status != "ok" and choice.get("finish_reason") == "length":
            limit = self.template.model.max_tokens
            return ParsedReply(
                "unparsed",
                error=f"the reply was cut off at the token limit ({limit}): {parsed.error}",
                reason=parsed.reason,
            )
        return parsed

    def _result(
        self, unit: _Unit, payload: Mapping[str, Any], *, cached: bool, attempts: int
    ) -> JudgeResult:
        template = self.template
        scale = template.scale
        choices = payload.get("choices") or []
        parsed = [self._parse_choice(c) for c in choices] or [
            ParsedReply("unparsed", error="the reply has no choices")
        ]
        order = unit.order
        if order == "BA":
            parsed = [
                ParsedReply(p.status, _to_item_frame(p.label, order), p.reason, p.error, p.span)
                for p in parsed
            ]
        details: dict[str, Any] = {}
        finish = [c.get("finish_reason") for c in choices]
        if any(f not in (None, "stop") for f in finish):
            details["finish_reasons"] = finish
        scores = []
        for choice, reply in zip(choices, parsed, strict=False):
            logprobs = choice.get("logprobs")
            if logprobs:
                at = reply.span[0] if reply.span is not None else None
                value = logprob_score(logprobs, scale, at=at)
                if value is not None:
                    scores.append(value)
        score = sum(scores) / len(scores) if scores else None
        if len(parsed) == 1:
            first = parsed[0]
            label, status, reason, error = first.label, first.status, first.reason, first.error
            samples: tuple[Label | None, ...] = ()
        else:
            label, spread = aggregate_samples(parsed, scale, method=template.output.aggregate)
            details["spread"] = spread
            samples = tuple(p.label for p in parsed)
            status = "ok" if label is not None else "unparsed"
            reason = next((p.reason for p in parsed if p.label == label), "")
            error = "" if label is not None else f"no sample could be read: {parsed[0].error}"
        texts = [c.get("text") or "" for c in choices]
        raw = (
            texts[0]
            if len(texts) == 1
            else "\n\n".join(f"[sample {i}]\n{t}" for i, t in enumerate(texts, start=1))
        )
        return JudgeResult(
            item_id=unit.item_id,
            order=order,
            status=status,
            label=label,
            score=score,
            reason=reason,
            raw=raw,
            error=error,
            tokens_in=int(payload.get("tokens_in") or 0),
            tokens_out=int(payload.get("tokens_out") or 0),
            cost=payload.get("cost"),
            latency_s=float(payload.get("latency_s") or 0.0),
            attempts=attempts,
            cache_key=unit.key,
            cached=cached,
            samples=samples,
            details=details,
        )

    def _record_many(self, state: _State, results: list[JudgeResult]) -> None:
        """Record results that exist all at once (cache hits) in one go when the sink can."""
        many = getattr(state.sink, "record_many", None)
        if many is None:
            for result in results:
                self._record(state, result)
            return
        many(results)
        for result in results[:-1]:
            self._count(state, result)
        self._record(state, results[-1], recorded=True)

    def _record(self, state: _State, result: JudgeResult, *, recorded: bool = False) -> None:
        if not recorded:
            state.sink.record(result)
        self._count(state, result)
        if state.progress is not None:
            elapsed = time.perf_counter() - state.started
            done_now = state.ok + state.unparsed + state.failed
            state.progress(
                Progress(
                    done=state.skipped + done_now,
                    total=state.total,
                    ok=state.ok,
                    unparsed=state.unparsed,
                    failed=state.failed,
                    cost=state.cost,
                    rate=done_now / elapsed if elapsed > 0 else 0.0,
                    cached=state.cached,
                    skipped=state.skipped,
                    requests=state.requests,
                )
            )

    @staticmethod
    def _count(state: _State, result: JudgeResult) -> None:
        if result.status == "ok":
            state.ok += 1
        elif result.status == "unparsed":
            state.unparsed += 1
        else:
            state.failed += 1
        if result.cached:
            state.cached += 1
        else:
            state.tokens_in += result.tokens_in
            state.tokens_out += result.tokens_out
            state.cost += result.cost_this_run


@dataclass(frozen=True)
class CallReply:
    """What one :meth:`RunnerSession.call` came back with.

    ``status`` is ``"ok"`` (``text`` is the first choice's reply), ``"failed"`` (no usable reply
    after the allowed attempts; ``error`` says why) or ``"cancelled"`` (the session was stopped
    before the request could be made). ``cost`` is the price of the original call; a ``cached``
    reply cost nothing now.
    """

    status: Literal["ok", "failed", "cancelled"]
    text: str = ""
    finish_reason: str | None = None
    error: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float | None = None
    latency_s: float = 0.0
    attempts: int = 0
    cached: bool = False
    cache_key: str = ""


def _call_reply(payload: Mapping[str, Any], key: str, *, cached: bool, attempts: int) -> CallReply:
    first = (payload.get("choices") or [{}])[0]
    text = first.get("text") or ""
    refusal = first.get("refusal")
    return CallReply(
        status="ok",
        text=text,
        finish_reason=first.get("finish_reason"),
        error=f"the model refused: {refusal}" if refusal and not text.strip() else "",
        tokens_in=int(payload.get("tokens_in") or 0),
        tokens_out=int(payload.get("tokens_out") or 0),
        cost=payload.get("cost"),
        latency_s=float(payload.get("latency_s") or 0.0),
        attempts=attempts,
        cached=cached,
        cache_key=key,
    )


class RunnerSession:
    """Single requests through a :class:`JudgeRunner`'s machinery (see :meth:`JudgeRunner.session`)."""

    def __init__(self, runner: JudgeRunner, state: _State) -> None:
        self._runner = runner
        self._state = state

    @property
    def requests(self) -> int:
        """HTTP requests sent so far in this session (retries included, cache hits not)."""
        return self._state.requests

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called or the endpoint refused the calls."""
        return self._state.stop is not None and self._state.stop.is_set()

    def stop(self) -> None:
        """Start no new request and interrupt retry waits (requests in flight may finish)."""
        if self._state.stop is not None:
            self._state.stop.set()

    async def call(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        params: Mapping[str, Any] | None = None,
        item_id: str = "",
    ) -> CallReply:
        """Send one chat request (``params``: the body fields besides model and messages; default
        those of the runner's template) and return its reply, from the cache when it has it.

        ``item_id`` only names the request in log messages. Never raises for an API error: the
        reply is ``"failed"`` with the reason.
        """
        runner, state = self._runner, self._state
        request = runner._params if params is None else dict(params)
        chat = [dict(m) for m in messages]
        key = cache_key(chat, runner.model, request)
        if state.cache is not None:
            payload = state.cache.get(key)
            if payload is not None:
                return _call_reply(payload, key, cached=True, attempts=0)
        if self.stopped:
            return CallReply("cancelled", error="the session was stopped", cache_key=key)
        chars = len(json.dumps(chat, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        unit = _Unit(item_id, "AB", chat, key, chars, request)
        result = await runner._process(unit, state)
        if result is None:
            return CallReply("cancelled", error="the session was stopped", cache_key=key)
        payload = state.fresh.get(key)
        if payload is None:
            return CallReply(
                "failed",
                error=result.error,
                latency_s=result.latency_s,
                attempts=result.attempts,
                cache_key=key,
            )
        return _call_reply(payload, key, cached=result.cached, attempts=result.attempts)
