"""How requests are sent: pacing, retries, the reply cache, and the worker loop both runners share.

:class:`Requester` sends chat requests to one OpenAI-compatible endpoint for one model with a fixed
number of workers (``concurrency``), optional request and token rate limits, and retries:

- 429, 408, 409, 5xx, time-outs, connection errors and malformed response bodies are retried with
  exponential backoff and "equal" jitter (after attempt ``k``, a wait drawn from ``[c/2, c]`` with
  ``c = min(backoff_max, backoff_base·2^(k-1))``), or after exactly the server's ``Retry-After`` /
  ``retry-after-ms`` when it sends one (a value above ``max_retry_after`` fails the item instead of
  stalling the run). The jitter keeps a floor so that the waits of one item add up to at least
  :meth:`RunSettings.retry_window`'s lower bound: with the defaults, 30.75 s, so an endpoint that is
  gone for 30 s (a restart, a network blip) fails no item; the items that were not started yet wait
  in the queue meanwhile;
- other 4xx fail the item at once with the server's message; 401, 403 and 404 concern the endpoint,
  not the item, so they also stop the run with a :class:`~evalcore.errors.JudgeError`;
- no request is ever sent more than ``max_attempts`` times.

Replies are cached by :func:`~evalcore.judge.cache_key` (endpoint, model, parameters, messages), and
the same request asked twice in one run is sent once: duplicates share its reply or its failure. :func:`run_units` is the loop of every run: a
few workers take units from a queue, a watcher turns the sink's cancel signal into a stop (requests
in flight may finish for ``cancel_grace`` seconds) and cancels the workers after the grace period.
:class:`RunState` counts what a run did and tells its sink and progress callback.

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
import logging
import random
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypeAlias, TypeVar

import openai
from aiolimiter import AsyncLimiter

from evalcore.errors import ConfigError, JudgeError
from evalcore.judge._cache import ReplyCache, cache_key, messages_body, normalise_base_url
from evalcore.judge._client import NO_KEY, estimate_cost
from evalcore.judge._pool import endpoint_identity
from evalcore.judge._result import JudgeResult, Order, Progress, RunSummary
from evalcore.judge._sink import ResultSink, record_all
from evalcore.limits import TokenCountError, token_count

__all__ = [
    "MAX_ERROR_CHARS",
    "BatchReplies",
    "CallReply",
    "ClientSource",
    "Fetched",
    "OrderMode",
    "Requester",
    "RunSettings",
    "RunState",
    "RunnerSession",
    "SamplesBy",
    "SyncBridge",
    "Unit",
    "client_base_url",
    "payload_from_response",
    "request_body",
    "run_units",
    "summarise_status_error",
]

log = logging.getLogger("evalcore.judge")

OrderMode: TypeAlias = Literal["single", "both", "flip"]
#: How a run asks for a template's ``n`` samples: in one request, or by one request each.
SamplesBy: TypeAlias = Literal["n", "requests"]
ProgressCallback: TypeAlias = Callable[[Progress], None]
#: A client, or a zero-argument factory of one (called once per run).
ClientSource: TypeAlias = openai.AsyncOpenAI | Callable[[], openai.AsyncOpenAI]
T = TypeVar("T")

_RETRY_STATUSES = frozenset({408, 409, 429})
_FATAL_STATUSES = frozenset({401, 403, 404})
_CHAT_PATH = "/chat/completions"
_WATCH_INTERVAL = 0.05
#: The longest error message from an endpoint kept in a result (longer ones are cut).
MAX_ERROR_CHARS = 200


@dataclass(frozen=True)
class RunSettings:
    """How a run is paced and retried.

    ``order_mode`` applies to pairwise templates: ``"single"`` judges each item as given (``AB``),
    ``"both"`` judges ``AB`` and ``BA``, ``"flip"`` judges about half of the items (chosen by a hash
    of ``seed`` and the item id, so the choice is stable across runs) in ``BA`` only, which cancels
    position bias on average. Pointwise templates always run ``AB``.

    ``samples_by`` says how a template's ``n > 1`` samples are asked for: ``"n"`` in one request
    (the ``n`` parameter), ``"requests"`` by ``n`` requests of one sample each, for endpoints that
    do not support ``n`` (use a temperature above 0, else the samples agree by construction).
    ``replicate`` numbers repeated runs of one version: a run with another replicate number sends
    its requests again (0 cache hits), while resuming the same run costs nothing.
    """

    concurrency: int = 8
    rpm: float | None = None
    tpm: float | None = None
    max_attempts: int = 8
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    max_retry_after: float = 120.0
    timeout: float = 60.0
    order_mode: OrderMode = "single"
    seed: int = 0
    cancel_grace: float = 5.0
    samples_by: SamplesBy = "n"
    replicate: int = 0

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
        if self.samples_by not in ("n", "requests"):
            raise ConfigError(f"samples_by must be n or requests, not {self.samples_by!r}")
        if self.replicate < 0:
            raise ConfigError(f"replicate must be 0 or more, not {self.replicate}")

    def retry_window(self) -> tuple[float, float]:
        """The least and the most time one item's backoff waits add up to, in seconds, when every
        attempt fails without a ``Retry-After``: an outage shorter than the least fails no item.

        >>> RunSettings().retry_window()  # waits after attempts 1..7: 0.5, 1, 2, 4, 8, 16, 30 at most
        (30.75, 61.5)
        """
        ceilings = [
            min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
            for attempt in range(1, self.max_attempts)
        ]
        return (sum(ceilings) / 2, sum(ceilings))


@dataclass
class Unit:
    """One request to make: an (item, order) of a run, or one step of a multi-step metric."""

    item_id: str
    order: Order
    messages: list[dict[str, str]]
    key: str
    chars: int
    #: the request's body fields besides model and messages
    params: Mapping[str, Any]
    #: the sample this request asks for when samples are asked for by separate requests
    sample: int = 0


def expected_tokens_in(unit: Unit) -> int:
    """A prompt-size guess from the characters sent (about four per token)."""
    return unit.chars // 4 + 4 * len(unit.messages) + 3


def request_body(model: str, unit: Unit) -> dict[str, Any]:
    """The chat-completions body a unit posts (a batch file carries the same body)."""
    return {"model": model, "messages": unit.messages, **unit.params}


class BatchReplies:
    """A client source for a run whose replies came back another way (a batch's output file).

    A request whose cache key is in :attr:`replies` (reply-cache payloads by key) is answered
    from there without sending anything; it counts as this run's reply, so it is parsed,
    recorded and cached exactly as a live reply. Any other request is sent live through
    ``source`` when :attr:`live` is true, else it fails at once with the reason in
    :attr:`errors` (the provider's error) or :attr:`missing`. ``source`` (a client or a factory
    of one) is also what the batch API calls go through; ``base_url`` names the endpoint when
    there is no source.
    """

    def __init__(
        self,
        source: openai.AsyncOpenAI | Callable[[], openai.AsyncOpenAI] | None,
        *,
        base_url: str | None = None,
    ) -> None:
        if source is None and base_url is None:
            raise ConfigError("batch replies need a client or a base URL")
        self.source = source
        self.base_url = base_url if base_url is not None else client_base_url(source)  # type: ignore[arg-type]
        self.replies: dict[str, dict[str, Any]] = {}
        self.errors: dict[str, str] = {}
        self.live = False
        self.missing = "no reply for this request in the batch output"

    def __call__(self) -> openai.AsyncOpenAI:
        """A client of ``source`` (for the batch API calls)."""
        if self.source is None:
            raise ConfigError("this run sends no request: its replies come from batch files")
        return self.source if isinstance(self.source, openai.AsyncOpenAI) else self.source()

    def error(self, key: str) -> str:
        """Why the request ``key`` has no reply."""
        return self.errors.get(key) or self.missing


def client_base_url(client: openai.AsyncOpenAI | Callable[[], openai.AsyncOpenAI]) -> str:
    """The normalised base URL a client (or a factory of clients) sends to.

    A factory from :func:`~evalcore.judge.client_factory` names its URL; another factory is called
    once to read it (making a client opens no connection). A pool's client names the pool
    (:func:`~evalcore.judge.endpoint_identity`), not the replica it happens to start with.
    """
    if isinstance(client, openai.AsyncOpenAI):
        pool = getattr(client, "endpoint_identity", None)
        return normalise_base_url(pool if isinstance(pool, str) else str(client.base_url))
    named = getattr(client, "base_url", None)
    if isinstance(named, str):
        return endpoint_identity(named)  # a URL, or the URLs of a pool
    return normalise_base_url(str(client().base_url))


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


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
                _text_or_none(entry.get("token")) or "",
                [
                    [_text_or_none(alt.get("token")) or "", float(alt.get("logprob", -1e9))]
                    for alt in alternatives
                ],
            ]
        )
    return compact


def payload_from_response(
    data: Mapping[str, Any], model: str, latency: float, prices: Mapping[str, tuple[float, float]]
) -> dict[str, Any]:
    """The reply-cache payload of a chat-completions response body (texts, finish reasons,
    logprobs, token counts and the cost at ``prices``).

    Raises ``ValueError`` when the body has no ``choices`` list, or when a token count of its
    ``usage`` is not a whole number from 0 to :data:`~evalcore.limits.MAX_TOKEN_COUNT` (a missing
    count is 0); ``TypeError`` or ``AttributeError`` for other malformed parts.
    """
    choices = []
    raw_choices = data.get("choices")
    if not isinstance(raw_choices, list):
        raise ValueError("the response has no 'choices' list")
    for choice in sorted(raw_choices, key=lambda c: c.get("index", 0)):
        message = choice.get("message") or {}
        choices.append(
            {
                "text": _text_or_none(message.get("content")) or "",
                "finish_reason": _text_or_none(choice.get("finish_reason")),
                "refusal": _text_or_none(message.get("refusal")),
                "logprobs": _compact_logprobs(choice.get("logprobs")),
            }
        )
    usage = data.get("usage")
    if usage is not None and not isinstance(usage, Mapping):
        raise ValueError("the response's 'usage' is not an object")
    usage = usage or {}
    tokens_in = token_count(usage.get("prompt_tokens"), "usage.prompt_tokens")
    tokens_out = token_count(usage.get("completion_tokens"), "usage.completion_tokens")
    return {
        "choices": choices,
        "model": _text_or_none(data.get("model")) or model,
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


def _short(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters (an ellipsis marks the cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _error_kind(value: object) -> str:
    """An error ``type`` / ``code`` from a JSON error body, if it looks like an identifier."""
    text = str(value) if isinstance(value, str | int) and not isinstance(value, bool) else ""
    return text if text and len(text) <= 60 and text.replace("_", "").isalnum() else ""


def summarise_status_error(
    status: int, body: object, content_type: str | None, secret: str = ""
) -> str:
    """A one-line summary of an endpoint's error reply: ``HTTP <status> (<type>): <message>``.

    From a JSON error body (OpenAI's ``{"error": {"message", "type"}}``, or a top-level
    ``message`` / ``detail``) the message is kept, cut to :data:`MAX_ERROR_CHARS` characters, with
    ``secret`` redacted. A reply that is not JSON (an HTML page from a wrong base URL, a proxy's
    notice) is named by its content type and size only: none of its body is copied.

    >>> summarise_status_error(400, {"error": {"message": "too long", "type": "invalid_request_error"}}, "application/json")
    'HTTP 400 (invalid_request_error): too long'
    >>> summarise_status_error(502, "<html>internal dashboard</html>", "text/html")
    'HTTP 502: the reply is not JSON (text/html, 31 characters, not shown)'
    """
    kind = ""
    detail: str | None = None
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, str):
            detail = inner
        elif isinstance(inner, Mapping):
            kind = _error_kind(inner.get("type")) or _error_kind(inner.get("code"))
            for field_name in ("message", "detail", "error_description"):
                if isinstance(inner.get(field_name), str):
                    detail = inner[field_name]
                    break
        if detail is None:
            detail = "no message in the error reply"
    else:
        size = len(body) if isinstance(body, str | bytes) else 0
        shown = (content_type or "no content type").split(";")[0].strip()
        detail = f"the reply is not JSON ({shown}, {size} characters, not shown)"
        return f"HTTP {status}: {detail}"
    head = f"HTTP {status} ({kind})" if kind else f"HTTP {status}"
    return f"{head}: {_short(_redact(secret, detail))}"


def _status_failure(exc: openai.APIStatusError, secret: str) -> _Attempt:
    status = exc.status_code
    message = summarise_status_error(
        status, exc.body, exc.response.headers.get("content-type"), secret
    )
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


@dataclass(frozen=True)
class Fetched:
    """What :meth:`Requester.fetch` came back with: a reply ``payload``, or none (``error`` says
    why; ``cancelled``: the run stopped before the request could be made)."""

    payload: dict[str, Any] | None
    attempts: int = 0
    cached: bool = False
    error: str = ""
    raw: str = ""
    latency_s: float = 0.0
    cancelled: bool = False


@dataclass
class RunState:
    """What one run (or session) did so far, and the resources it holds while it goes.

    :meth:`record` hands a result to the sink, counts it and tells the progress callback;
    :meth:`summary` is the run's :class:`~evalcore.judge.RunSummary`.
    """

    total: int = 0
    skipped: int = 0
    started: float = field(default_factory=time.perf_counter)
    sink: ResultSink | None = None
    cache: ReplyCache | None = None
    progress: ProgressCallback | None = None
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
    #: requests that failed after their attempts in this run, by cache key (shared by duplicates)
    failures: dict[str, Fetched] = field(default_factory=dict)
    inflight: dict[str, asyncio.Future[Fetched]] = field(default_factory=dict)
    # the run's resources, dropped when the run ends (the client holds the key)
    client: Any = None
    secret: str = ""
    rpm: AsyncLimiter | None = None
    tpm: AsyncLimiter | None = None
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    options: dict[str, Any] = field(default_factory=dict)
    #: the replies of a batch, when the run's client source is :class:`BatchReplies`
    offline: BatchReplies | None = None

    def record(self, result: JudgeResult) -> None:
        """Hand one result to the sink now, count it and report progress."""
        assert self.sink is not None
        self.sink.record(result)
        self._count(result)
        self.report()

    def record_many(self, results: list[JudgeResult]) -> None:
        """Record results that exist all at once (cache hits) in one go when the sink can."""
        if not results:
            return
        assert self.sink is not None
        record_all(self.sink, results)
        for result in results:
            self._count(result)
        self.report()

    def _count(self, result: JudgeResult) -> None:
        if result.status == "ok":
            self.ok += 1
        elif result.status == "unparsed":
            self.unparsed += 1
        else:
            self.failed += 1
        if result.cached:
            self.cached += 1
        else:
            self.tokens_in += result.tokens_in
            self.tokens_out += result.tokens_out
            self.cost += result.cost_this_run

    def report(self) -> None:
        """Tell the progress callback (if any) where the run is."""
        if self.progress is None:
            return
        elapsed = time.perf_counter() - self.started
        done_now = self.ok + self.unparsed + self.failed
        self.progress(
            Progress(
                done=self.skipped + done_now,
                total=self.total,
                ok=self.ok,
                unparsed=self.unparsed,
                failed=self.failed,
                cost=self.cost,
                rate=done_now / elapsed if elapsed > 0 else 0.0,
                cached=self.cached,
                skipped=self.skipped,
                requests=self.requests,
            )
        )

    def summary(self) -> RunSummary:
        """What the run did, as :class:`~evalcore.judge.RunSummary` (its counts are this state's)."""
        counts = {
            f.name: getattr(self, f.name) for f in fields(RunSummary) if f.name != "elapsed_s"
        }
        return RunSummary(**counts, elapsed_s=time.perf_counter() - self.started)


async def run_units(
    pending: deque[T],
    handle: Callable[[T], Awaitable[None]],
    state: RunState,
    *,
    concurrency: int,
    cancel_grace: float,
) -> None:
    """The loop of every run: ``concurrency`` workers take units from ``pending`` and ``handle``
    them until the queue is empty or ``state.stop`` is set.

    A watcher sets ``state.stop`` (and ``state.cancelled``) when the sink says the run is
    cancelled; once stopped, requests in flight may finish for ``cancel_grace`` seconds, then the
    workers are cancelled. A worker fails only when ``handle`` raises (a sink, cache or progress
    callback that cannot go on): then every worker stops and the error is raised here.
    """
    stop = state.stop
    sink = state.sink

    async def worker() -> None:
        while pending and not stop.is_set():
            await handle(pending.popleft())

    async def watch(workers: list[asyncio.Task[None]]) -> None:
        while not stop.is_set():
            if sink is not None and sink.is_cancelled():
                state.cancelled = True
                stop.set()
                break
            await asyncio.sleep(_WATCH_INTERVAL)
        await asyncio.sleep(cancel_grace)
        for task in workers:
            task.cancel()

    workers = [asyncio.create_task(worker()) for _ in range(min(concurrency, len(pending)))]
    if not workers:
        return
    watcher = asyncio.create_task(watch(workers))
    try:
        await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        watcher.cancel()
        for task in workers:
            task.cancel()
        await asyncio.gather(watcher, *workers, return_exceptions=True)
    for task in workers:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]


class Requester:
    """Sends one model's chat requests to one endpoint, paced, retried and cached.

    ``client`` is an ``openai.AsyncOpenAI`` (or Azure) client, or a zero-argument factory of one
    (:func:`~evalcore.judge.client_factory`); a factory is called once per run and the client closed
    after it. ``max_tokens`` sizes the token rate limit's reservation per request. ``endpoint`` is
    the base URL that enters every cache key (default: the client's own).
    """

    def __init__(
        self,
        client: openai.AsyncOpenAI | Callable[[], openai.AsyncOpenAI],
        *,
        model: str,
        settings: RunSettings,
        prices: Mapping[str, tuple[float, float]],
        max_tokens: int | None = None,
        endpoint: str | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.settings = settings
        self.prices = prices
        self.max_tokens = max_tokens
        self._endpoint = None if endpoint is None else normalise_base_url(endpoint)
        self._rng = random.Random(settings.seed)

    @property
    def endpoint(self) -> str:
        """The normalised base URL of the endpoint (part of every cache key)."""
        if self._endpoint is None:
            self._endpoint = client_base_url(self.client)
        return self._endpoint

    def key(self, messages: Sequence[Mapping[str, str]], params: Mapping[str, Any]) -> str:
        """The cache key of a request of this requester (the run's replicate number included)."""
        replicate = self.settings.replicate
        return cache_key(messages, self.model, params, endpoint=self.endpoint, replicate=replicate)

    @contextlib.asynccontextmanager
    async def opened(self, state: RunState) -> AsyncIterator[RunState]:
        """Give ``state`` a client and rate limiters for the block; close the client (when it came
        from a factory) and flush the cache after it. An endpoint that refused the requests
        (401/403/404) raises :class:`~evalcore.errors.JudgeError` then."""
        source: openai.AsyncOpenAI | Callable[[], openai.AsyncOpenAI] | None = self.client
        if isinstance(source, BatchReplies):
            state.offline = source
            source = source.source if source.live else None
        owned = not isinstance(source, openai.AsyncOpenAI)
        client = source if isinstance(source, openai.AsyncOpenAI) or source is None else source()
        if self._endpoint is None:
            self._endpoint = client_base_url(self.client if client is None else client)
        key = getattr(client, "api_key", "") or ""
        settings = self.settings
        state.client = client
        state.secret = key if len(key) >= 6 and key != NO_KEY else ""
        state.rpm = AsyncLimiter(settings.rpm, 60) if settings.rpm else None
        state.tpm = AsyncLimiter(settings.tpm, 60) if settings.tpm else None
        state.options = {"max_retries": 0, "timeout": settings.timeout}
        try:
            yield state
        finally:
            if owned and client is not None:
                await client.close()
            state.client = None
            state.secret = ""
            flush = getattr(state.cache, "flush", None)
            if flush is not None:
                flush()
        if state.fatal:
            raise JudgeError(state.fatal)

    async def drive(
        self, pending: deque[T], handle: Callable[[T], Awaitable[None]], state: RunState
    ) -> None:
        """Open the client for ``state`` and :func:`run_units` with this requester's concurrency
        and cancel grace (the body of every run)."""
        async with self.opened(state):
            await run_units(
                pending,
                handle,
                state,
                concurrency=self.settings.concurrency,
                cancel_grace=self.settings.cancel_grace,
            )

    @contextlib.asynccontextmanager
    async def session(
        self, cache: ReplyCache | None, params: Mapping[str, Any]
    ) -> AsyncIterator[RunnerSession]:
        """Single requests with ``params`` (see :class:`RunnerSession`) for the block."""
        state = RunState(cache=cache)
        async with self.opened(state):
            yield RunnerSession(self, state, params)

    async def fetch(self, unit: Unit, state: RunState) -> Fetched:
        """The reply to ``unit``: answered earlier in this run, or requested (with retries).

        The same request asked twice in one run is sent once, however many items share it: while
        it is in flight the others wait for it (shielded, so a waiter cancelled does not cancel the
        request), and afterwards they share its reply, or its failure (with ``attempts`` 0: they
        sent nothing). A fresh reply goes to the cache.
        """
        key = unit.key
        shared = self._shared(key, state)
        if shared is None and key in state.inflight:
            shared = await asyncio.shield(state.inflight[key])
            shared = self._shared(key, state) or shared
        if shared is not None:
            return shared
        future: asyncio.Future[Fetched] = asyncio.get_running_loop().create_future()
        state.inflight[key] = future
        fetched = Fetched(None, cancelled=True)
        try:
            fetched = await self._request(unit, state)
        finally:
            state.inflight.pop(key, None)
            if fetched.payload is not None:
                state.fresh[key] = fetched.payload
            elif not fetched.cancelled:
                state.failures[key] = fetched
            if not future.done():
                future.set_result(fetched)
        if fetched.payload is not None and state.cache is not None:
            state.cache.put(key, self.model, fetched.payload)
        return fetched

    @staticmethod
    def _shared(key: str, state: RunState) -> Fetched | None:
        """What this run already knows of a request: its reply, or the failure after its attempts."""
        payload = state.fresh.get(key)
        if payload is not None:
            return Fetched(payload, cached=True)
        failure = state.failures.get(key)
        if failure is not None:
            return Fetched(None, error=failure.error, raw=failure.raw)
        return None

    async def _request(self, unit: Unit, state: RunState) -> Fetched:
        offline = state.offline
        if offline is not None:
            payload = offline.replies.get(unit.key)
            if payload is not None:
                state.requests += 1
                return Fetched(payload, attempts=1)
            if state.client is None:
                return Fetched(None, error=offline.error(unit.key))
        settings = self.settings
        body = request_body(self.model, unit)
        client = state.client
        stop = state.stop
        started = time.perf_counter()
        last: _Attempt | None = None
        attempt = 0
        for attempt in range(1, settings.max_attempts + 1):
            if stop.is_set():
                return Fetched(None, cancelled=True)
            if state.rpm is not None:
                await state.rpm.acquire()
            if state.tpm is not None:
                need = expected_tokens_in(unit) + (self.max_tokens or 0)
                await state.tpm.acquire(min(float(need), state.tpm.max_rate))
            if stop.is_set():
                return Fetched(None, cancelled=True)
            sent = time.perf_counter()
            state.requests += 1
            try:
                data = await client.post(
                    _CHAT_PATH, body=body, cast_to=object, options=state.options
                )
                if not isinstance(data, Mapping):  # its body is not copied: it may be any page
                    shape = f"{len(data)} characters" if isinstance(data, str) else "no object"
                    raise ValueError(f"the response is not a JSON object ({shape})")
                payload = payload_from_response(
                    data, self.model, time.perf_counter() - sent, self.prices
                )
            except openai.APIStatusError as exc:
                last = _status_failure(exc, state.secret)
            except openai.APITimeoutError:
                last = _Attempt(f"no reply within {settings.timeout:g} s (time-out)", retry=True)
            except openai.APIConnectionError as exc:
                last = _Attempt(
                    f"connection error: {_short(_redact(state.secret, str(exc)))}", retry=True
                )
            except openai.APIResponseValidationError as exc:
                last = _Attempt(
                    f"malformed response: {_short(_redact(state.secret, str(exc)))}", retry=True
                )
            except RecursionError:  # the SDK decodes the body: a reply nested beyond reason
                last = _Attempt("malformed response body: nested too deeply to read", retry=True)
            except TokenCountError as exc:  # the server's own count: asking again changes nothing
                last = _Attempt(f"malformed response body: {exc}", retry=False)
            except (ValueError, TypeError, AttributeError, OverflowError) as exc:
                # a JSON body cut short is kept (capped) for a reviewer; nothing else is
                doc = getattr(exc, "doc", "")
                last = _Attempt(
                    f"malformed response body: {_short(_redact(state.secret, str(exc)))}",
                    retry=True,
                    raw=_redact(state.secret, doc[:2000]) if isinstance(doc, str) else "",
                )
            else:
                return Fetched(payload, attempts=attempt)
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
                return Fetched(None, cancelled=True)
        assert last is not None
        log.info("item %s (%s) failed: %s", unit.item_id, unit.order, last.message)
        return Fetched(
            None,
            attempts=attempt,
            error=last.message,
            raw=last.raw,
            latency_s=time.perf_counter() - started,
        )

    def _backoff(self, attempt: int) -> float:
        ceiling = min(self.settings.backoff_max, self.settings.backoff_base * 2 ** (attempt - 1))
        return self._rng.uniform(ceiling / 2, ceiling)


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
    """Single requests through a :class:`Requester` (see :meth:`JudgeRunner.session`)."""

    def __init__(self, requester: Requester, state: RunState, params: Mapping[str, Any]) -> None:
        self._requester = requester
        self._state = state
        self._params = params

    @property
    def requests(self) -> int:
        """HTTP requests sent so far in this session (retries included, cache hits not)."""
        return self._state.requests

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called or the endpoint refused the calls."""
        return self._state.stop.is_set()

    def stop(self) -> None:
        """Start no new request and interrupt retry waits (requests in flight may finish)."""
        self._state.stop.set()

    async def call(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        params: Mapping[str, Any] | None = None,
        item_id: str = "",
    ) -> CallReply:
        """Send one chat request (``params``: the body fields besides model and messages; default
        those the session was opened with) and return its reply, from the cache when it has it.

        ``item_id`` only names the request in log messages. Never raises for an API error: the
        reply is ``"failed"`` with the reason.
        """
        requester, state = self._requester, self._state
        request = self._params if params is None else dict(params)
        chat = [dict(m) for m in messages]
        key = requester.key(chat, request)
        if state.cache is not None:
            payload = state.cache.get(key)
            if payload is not None:
                return _call_reply(payload, key, cached=True, attempts=0)
        if self.stopped:
            return CallReply("cancelled", error="the session was stopped", cache_key=key)
        unit = Unit(item_id, "AB", chat, key, len(messages_body(chat)), request)
        fetched = await requester.fetch(unit, state)
        if fetched.cancelled:
            return CallReply("cancelled", error="the session was stopped", cache_key=key)
        if fetched.payload is None:
            return CallReply(
                "failed",
                error=fetched.error,
                latency_s=fetched.latency_s,
                attempts=fetched.attempts,
                cache_key=key,
            )
        return _call_reply(fetched.payload, key, cached=fetched.cached, attempts=fetched.attempts)
