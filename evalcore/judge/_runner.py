"""The judge runner: many items through one template, concurrently, resumably, paying once.

:class:`JudgeRunner` renders every item first (so a template typo fails before any request), skips what
the sink already has, answers what it can from the cache, and sends the rest through a
:class:`~evalcore.judge._requests.Requester` (concurrency, rate limits, retries: see that module); no
item is requested more than ``max_attempts`` times, and after the last attempt it is recorded as
``failed`` with the last error while the run goes on.

Every result is handed to the sink the moment it exists. Cancelling (``sink.is_cancelled()``) stops
new requests at once and interrupts retry waits; requests already in flight may finish (and are
recorded) for ``cancel_grace`` seconds, after which they are abandoned unrecorded. A later run with
the same sink skips everything finished.

:class:`Runner` is what every runner offers (this one and
:class:`~evalcore.judge.builtins.MetricRunner`): the run service, the command line and the worker
type against it.
"""

from __future__ import annotations

import abc
import contextlib
import hashlib
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import openai

from evalcore.errors import ConfigError
from evalcore.judge._batch import BatchRequest
from evalcore.judge._cache import ReplyCache, get_many, key_prefix, messages_body
from evalcore.judge._client import DEFAULT_PRICES, estimate_cost
from evalcore.judge._parse import (
    LabelProbabilities,
    ParsedReply,
    aggregate_samples,
    label_probabilities,
    mean_probabilities,
    parse_reply,
    response_format_for,
    sample_shares,
)
from evalcore.judge._requests import (
    ClientSource,
    OrderMode,
    Requester,
    RunnerSession,
    RunSettings,
    RunState,
    SamplesBy,
    SyncBridge,
    Unit,
    expected_tokens_in,
    request_body,
)
from evalcore.judge._result import Estimate, JudgeResult, Order, Progress, RunSummary
from evalcore.judge._sink import MemorySink, ResultSink
from evalcore.judge._template import (
    JudgeItem,
    JudgeTemplate,
    check_item_ids,
    check_variables,
    render,
)
from evalcore.labels import Label, Scale

__all__ = [
    "SWAPPED_FIELDS",
    "TYPICAL_REPLY_TOKENS",
    "JudgeRunner",
    "RunJob",
    "Runner",
    "estimate",
    "orders_for",
    "request_params",
]

ProgressCallback: TypeAlias = Callable[[Progress], None]

#: Field pairs exchanged when a pairwise item is shown in the ``"BA"`` order.
SWAPPED_FIELDS: tuple[tuple[str, str], ...] = (
    ("response_a", "response_b"),
    ("response", "baseline_model_response"),
)
#: Reply length assumed by :func:`estimate` (a short JSON verdict with a one-paragraph reason).
TYPICAL_REPLY_TOKENS = 150


@dataclass(frozen=True)
class RunJob:
    """One call of :meth:`Runner.run`: prepared items, the sink (never None), the cache and the
    progress callback."""

    items: list[JudgeItem]
    sink: ResultSink
    cache: ReplyCache | None
    progress: ProgressCallback | None


class Runner(abc.ABC):
    """The one interface of every runner: :class:`JudgeRunner` and
    :class:`~evalcore.judge.builtins.MetricRunner` (template, pipeline and function metrics). The run
    service, the command line and the worker type against it.

    ``model`` is the model the requests name (``""`` when none is asked). :meth:`prepare` checks
    the items before anything is sent (a missing variable or input, an id given twice) and returns
    them as the run sees them; :meth:`estimate` prices a run; :meth:`run` judges every item not
    finished in the sink (a :class:`~evalcore.judge.MemorySink` when none is given), and
    :meth:`run_sync` does so from synchronous code; :meth:`close` releases the private event loop
    ``run_sync`` keeps for a client instance. A runner provides :meth:`prepare`, :meth:`_estimate`
    and :meth:`_run`; the rest is written here once.
    """

    model: str

    def __init__(self, client: ClientSource | None) -> None:
        self._client = client
        self._loops = SyncBridge()

    @abc.abstractmethod
    def prepare(self, items: Iterable[JudgeItem]) -> list[JudgeItem]:
        """The items as a run sees them; raises before any request when one cannot be judged."""

    @abc.abstractmethod
    def _estimate(
        self, items: list[JudgeItem], cache: ReplyCache | None, finished: set[tuple[str, str]]
    ) -> Estimate:
        """The estimate of prepared items, ``finished`` ones skipped."""

    @abc.abstractmethod
    async def _run(self, job: RunJob) -> RunSummary:
        """Judge a job's prepared items into its sink."""

    def estimate(
        self,
        items: Iterable[JudgeItem],
        cache: ReplyCache | None = None,
        sink: ResultSink | None = None,
    ) -> Estimate:
        """What a run would request and cost (see each runner for how exact it is)."""
        finished = sink.finished() if sink is not None else set()
        return self._estimate(self.prepare(items), cache, finished)

    async def run(
        self,
        items: Iterable[JudgeItem],
        sink: ResultSink | None = None,
        cache: ReplyCache | None = None,
        *,
        progress: ProgressCallback | None = None,
    ) -> RunSummary:
        """Judge every item not finished in ``sink``, each result handed to it as it arrives.

        Raises before any request when an item cannot be judged (:meth:`prepare`), and
        :class:`~evalcore.errors.JudgeError` when the endpoint refuses the run (401/403/404).
        """
        sink = sink if sink is not None else MemorySink()
        return await self._run(RunJob(self.prepare(items), sink, cache, progress))

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

    def batch_requests(
        self,
        items: Iterable[JudgeItem],
        cache: ReplyCache | None = None,
        sink: ResultSink | None = None,
    ) -> Iterator[BatchRequest]:
        """The requests a run of ``items`` would send, for a batch file: one per request not
        answered by ``cache`` nor finished in ``sink``, each identical request once, its
        ``custom_id`` the request's cache key and its body exactly what a live run posts.

        Raises :class:`~evalcore.errors.ConfigError` for a runner whose requests depend on
        earlier replies (a multi-step metric), which a batch cannot carry.
        """
        raise ConfigError(f"{type(self).__name__} cannot send its requests in a batch")


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
    params = template.model.request_params()
    if template.output.structured:
        params["response_format"] = response_format_for(template)
    return params


def sample_prefixes(
    endpoint: str,
    model: str,
    params: Mapping[str, Any],
    *,
    samples_by: SamplesBy = "n",
    replicate: int = 0,
) -> tuple[list[bytes], dict[str, Any]]:
    """The key prefixes of one (item, order)'s requests, one per request, and their parameters.

    With ``samples_by="n"`` (or a single sample) that is one request asking for all ``n``
    samples. With ``"requests"`` it is ``n`` requests of one sample each: the parameters lose
    ``n`` and request ``i`` carries the sample index ``i`` in its key, so every sample is really
    sent (sample 0 has the key of a plain one-sample request).
    """
    n = int(params.get("n", 1))
    if samples_by == "n" or n <= 1:
        return [key_prefix(endpoint, model, params, replicate=replicate)], dict(params)
    single = {k: v for k, v in params.items() if k != "n"}
    prefixes = [
        key_prefix(endpoint, model, single, sample=i, replicate=replicate) for i in range(n)
    ]
    return prefixes, single


def _plan(
    template: JudgeTemplate,
    items: Sequence[JudgeItem],
    prefixes: Sequence[bytes],
    params: Mapping[str, Any],
    order_mode: OrderMode,
    seed: int,
    finished: set[tuple[str, str]],
) -> tuple[list[Unit], int, int]:
    """Render every (item, order) not finished; returns (units, total, skipped).

    ``prefixes`` are :func:`sample_prefixes` of the run's endpoint, model and parameters (one per
    request of an (item, order)), so each key costs one hash of the messages.
    """
    units: list[Unit] = []
    total = skipped = 0
    sha256 = hashlib.sha256
    for item in items:
        for order in orders_for(template, item.item_id, order_mode, seed):
            total += 1
            if (item.item_id, order) in finished:
                skipped += 1
                continue
            fields = _swap(item.fields) if order == "BA" else item.fields
            messages = render(template, fields, item_id=item.item_id)
            body = messages_body(messages)
            for sample, prefix in enumerate(prefixes):
                key = sha256(prefix + body).hexdigest()
                units.append(
                    Unit(item.item_id, order, messages, key, len(body), params, sample=sample)
                )
    return units, total, skipped


def estimate(
    items: Iterable[JudgeItem],
    template: JudgeTemplate,
    cache: ReplyCache | None = None,
    prices: Mapping[str, tuple[float, float]] | None = None,
    *,
    model: str | None = None,
    endpoint: str = "",
    order_mode: OrderMode = "single",
    seed: int = 0,
    finished: Iterable[tuple[str, str]] = (),
    samples_by: SamplesBy = "n",
    replicate: int = 0,
) -> Estimate:
    """What running ``template`` over ``items`` would request and cost (see :class:`Estimate`).

    ``endpoint`` is the base URL the run would send to: cache hits are counted for it alone.
    ``samples_by`` and ``replicate`` are the run's (see :class:`~evalcore.judge.RunSettings`);
    ``n_units`` counts (item, order) pairs and ``n_requests`` the requests they need.
    Raises :class:`~evalcore.errors.MissingVariableError` as a run would.
    """
    items = list(items)
    model_name = _resolve_model(template, model)
    check_variables(template, items)
    prefixes, params = sample_prefixes(
        endpoint,
        model_name,
        request_params(template),
        samples_by=samples_by,
        replicate=replicate,
    )
    units, total, skipped = _plan(
        template,
        items,
        prefixes,
        params,
        order_mode,
        seed,
        set(finished),
    )
    hits = get_many(cache, [u.key for u in units]) if cache is not None else {}
    pending = [u for u in units if u.key not in hits]
    unique: dict[str, Unit] = {}
    for unit in pending:
        unique.setdefault(unit.key, unit)
    n = int(params.get("n", 1))
    max_tokens = template.model.max_tokens
    typical = min(max_tokens, TYPICAL_REPLY_TOKENS) if max_tokens else TYPICAL_REPLY_TOKENS
    tokens_in = sum(expected_tokens_in(u) for u in unique.values())
    tokens_out = len(unique) * n * typical
    cost = estimate_cost(model_name, tokens_in, tokens_out, prices)
    return Estimate(
        n_units=total,
        n_skipped=skipped,
        n_cached=len(units) // len(prefixes) - len({(u.item_id, u.order) for u in pending}),
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


class _Samples:
    """Collects the replies of an (item, order)'s separate sample requests into one payload.

    With one request per (item, order) each reply is whole at once. With ``k`` requests,
    :meth:`add` returns nothing until all ``k`` replies are in, then their choices in sample
    order with the summed token counts, cost, latency and attempts, so the samples are aggregated
    exactly as the ``n`` choices of one reply are. :meth:`fail` says whether a failed request is
    the first of its (item, order) (the one to record; the others are dropped).
    """

    def __init__(self, k: int) -> None:
        self.k = k
        self._parts: dict[
            tuple[str, str], dict[int, tuple[Unit, Mapping[str, Any], bool, int]]
        ] = {}
        self._failed: set[tuple[str, str]] = set()

    def add(
        self, unit: Unit, payload: Mapping[str, Any], *, cached: bool, attempts: int
    ) -> tuple[Unit, Mapping[str, Any], bool, int] | None:
        if self.k == 1:
            return unit, payload, cached, attempts
        group = (unit.item_id, unit.order)
        if group in self._failed:
            return None
        parts = self._parts.setdefault(group, {})
        parts[unit.sample] = (unit, payload, cached, attempts)
        if len(parts) < self.k:
            return None
        del self._parts[group]
        ordered = [parts[i] for i in range(self.k)]
        payloads = [p[1] for p in ordered]
        costs = [p.get("cost") for p in payloads]
        merged: dict[str, Any] = {
            "choices": [c for p in payloads for c in (p.get("choices") or [])],
            "tokens_in": sum(int(p.get("tokens_in") or 0) for p in payloads),
            "tokens_out": sum(int(p.get("tokens_out") or 0) for p in payloads),
            "cost": None if all(c is None for c in costs) else sum(float(c or 0) for c in costs),
            "latency_s": sum(float(p.get("latency_s") or 0.0) for p in payloads),
        }
        return (
            ordered[0][0],
            merged,
            all(p[2] for p in ordered),
            sum(p[3] for p in ordered),
        )

    def fail(self, unit: Unit) -> bool:
        if self.k == 1:
            return True
        group = (unit.item_id, unit.order)
        self._parts.pop(group, None)
        if group in self._failed:
            return False
        self._failed.add(group)
        return True


def _label_probabilities(
    choices: Sequence[Mapping[str, Any]],
    parsed: Sequence[ParsedReply],
    scale: Scale,
    order: str,
) -> LabelProbabilities | None:
    """The label probabilities of a reply's choices that carry logprobs and whose label was read,
    averaged label by label over those choices, in the item's frame (``BA`` swaps A and B)."""
    found: list[LabelProbabilities] = []
    for choice, reply in zip(choices, parsed, strict=False):
        logprobs = choice.get("logprobs")
        if not logprobs or reply.status != "ok":
            continue
        at = reply.span[0] if reply.span is not None else None
        one = label_probabilities(logprobs, scale, at=at)
        if one is None:
            continue
        if order == "BA":
            swapped = {_to_item_frame(x, order): p for x, p in one.probabilities.items()}
            one = LabelProbabilities({x: swapped.get(x, 0.0) for x in scale.labels}, one.off_scale)
        found.append(one)
    return mean_probabilities(found, scale)


class JudgeRunner(Runner):
    """Runs one template over many items.

    ``client`` is an ``openai.AsyncOpenAI`` (or Azure) client, or a zero-argument factory of one
    (:func:`~evalcore.judge.client_factory`); a factory is called once per run and the client closed
    after it, which is what :meth:`run_sync` needs to be called more than once. ``model`` overrides
    the template's model setting. ``prices`` overrides :data:`~evalcore.judge.DEFAULT_PRICES`.
    ``endpoint`` is the base URL that enters the cache keys (default: the client's own).
    """

    def __init__(
        self,
        client: openai.AsyncOpenAI | Callable[[], openai.AsyncOpenAI],
        template: JudgeTemplate,
        *,
        settings: RunSettings | None = None,
        model: str | None = None,
        prices: Mapping[str, tuple[float, float]] | None = None,
        endpoint: str | None = None,
    ) -> None:
        super().__init__(client)
        self.template = template
        self.settings = settings or RunSettings()
        self.model = _resolve_model(template, model)
        self.prices = DEFAULT_PRICES if prices is None else prices
        self._params = request_params(template)
        self._label_field = template.label_field
        self._requester = Requester(
            client,
            model=self.model,
            settings=self.settings,
            prices=self.prices,
            max_tokens=template.model.max_tokens,
            endpoint=endpoint,
        )

    # --- public ------------------------------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        """The normalised base URL the requests go to (part of every cache key)."""
        return self._requester.endpoint

    def prepare(self, items: Iterable[JudgeItem]) -> list[JudgeItem]:
        """The items as a run sees them; raises :class:`~evalcore.errors.MissingVariableError`
        (naming the variable and the item) or :class:`~evalcore.errors.ConfigError` (an item id
        given twice) before any request."""
        items = list(items)
        check_item_ids(items)
        check_variables(self.template, items)
        return items

    def _estimate(
        self, items: list[JudgeItem], cache: ReplyCache | None, finished: set[tuple[str, str]]
    ) -> Estimate:
        """:func:`estimate` with this runner's endpoint, model, order mode and prices."""
        return estimate(
            items,
            self.template,
            cache,
            self.prices,
            model=self.model,
            endpoint=self.endpoint,
            order_mode=self.settings.order_mode,
            seed=self.settings.seed,
            finished=finished,
            samples_by=self.settings.samples_by,
            replicate=self.settings.replicate,
        )

    @contextlib.asynccontextmanager
    async def session(self, cache: ReplyCache | None = None) -> AsyncIterator[RunnerSession]:
        """Open the run's client and rate limiters for single requests.

        Inside ``async with runner.session(cache) as session``, :meth:`RunnerSession.call` sends one
        chat request through exactly the path :meth:`run` uses (rate limits, retries, the reply
        cache, duplicate requests answered once, token and cost accounting), with this template's
        request parameters unless the call gives others. The client is closed and the cache flushed
        on exit; an endpoint that refused the calls (401/403/404) raises
        :class:`~evalcore.errors.JudgeError` then.
        """
        async with self._requester.session(cache, self._params) as session:
            yield session

    async def _run(self, job: RunJob) -> RunSummary:
        """Judge every item in every order the settings ask; a template that an item cannot fill
        raised in :meth:`prepare`."""
        items, sink, cache = job.items, job.sink, job.cache
        requester = self._requester
        settings = self.settings
        prefixes, params = sample_prefixes(
            requester.endpoint,
            self.model,
            self._params,
            samples_by=settings.samples_by,
            replicate=settings.replicate,
        )
        units, total, skipped = _plan(
            self.template,
            items,
            prefixes,
            params,
            self.settings.order_mode,
            self.settings.seed,
            sink.finished(),
        )
        state = RunState(
            total=total, skipped=skipped, sink=sink, cache=cache, progress=job.progress
        )
        hits = get_many(cache, [u.key for u in units]) if cache is not None and units else {}
        gather = _Samples(len(prefixes))
        pending: deque[Unit] = deque()
        answered: list[JudgeResult] = []
        for unit in units:
            payload = hits.get(unit.key)
            if payload is None:
                pending.append(unit)
                continue
            whole = gather.add(unit, payload, cached=True, attempts=0)
            if whole is not None:
                answered.append(self._result(whole[0], whole[1], cached=whole[2], attempts=0))
        state.record_many(answered)
        if pending and sink.is_cancelled():
            state.cancelled = True
        elif pending:

            async def handle(unit: Unit) -> None:
                fetched = await requester.fetch(unit, state)
                if fetched.cancelled:
                    return
                if fetched.payload is None:
                    if not gather.fail(unit):
                        return
                    state.record(
                        JudgeResult(
                            item_id=unit.item_id,
                            order=unit.order,
                            status="failed",
                            raw=fetched.raw,
                            error=fetched.error,
                            latency_s=fetched.latency_s,
                            attempts=fetched.attempts,
                            cache_key=unit.key,
                        )
                    )
                else:
                    whole = gather.add(
                        unit, fetched.payload, cached=fetched.cached, attempts=fetched.attempts
                    )
                    if whole is not None:
                        first, payload, cached, attempts = whole
                        state.record(self._result(first, payload, cached=cached, attempts=attempts))

            await requester.drive(pending, handle, state)
        return state.summary()

    def batch_requests(
        self,
        items: Iterable[JudgeItem],
        cache: ReplyCache | None = None,
        sink: ResultSink | None = None,
    ) -> Iterator[BatchRequest]:
        """See :meth:`Runner.batch_requests`: the planning of :meth:`run` (orders, samples,
        parameters, messages), a chunk of items at a time so that a large run streams."""
        prepared = self.prepare(items)
        finished = sink.finished() if sink is not None else set()
        prefixes, params = sample_prefixes(
            self.endpoint,
            self.model,
            self._params,
            samples_by=self.settings.samples_by,
            replicate=self.settings.replicate,
        )
        return self._batch_chunks(prepared, cache, finished, prefixes, params)

    def _batch_chunks(
        self,
        items: list[JudgeItem],
        cache: ReplyCache | None,
        finished: set[tuple[str, str]],
        prefixes: list[bytes],
        params: Mapping[str, Any],
    ) -> Iterator[BatchRequest]:
        seen: set[str] = set()
        step = 2000
        for start in range(0, len(items), step):
            units, _, _ = _plan(
                self.template,
                items[start : start + step],
                prefixes,
                params,
                self.settings.order_mode,
                self.settings.seed,
                finished,
            )
            hits = get_many(cache, [u.key for u in units]) if cache is not None and units else {}
            for unit in units:
                if unit.key in hits or unit.key in seen:
                    continue
                seen.add(unit.key)
                yield BatchRequest(unit.key, request_body(self.model, unit))

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
        self, unit: Unit, payload: Mapping[str, Any], *, cached: bool, attempts: int
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
        found = _label_probabilities(choices, parsed, scale, order)
        probabilities: dict[Label, float] | None = None
        score = None
        if found is not None:
            probabilities = dict(found.probabilities)
            score = found.expected(scale)
            details["confidence"] = {
                "from": "logprobs",
                "off_scale": found.off_scale,
                "samples": sum(1 for c in choices if c.get("logprobs")),
            }
        elif len(parsed) > 1 and label is not None:
            probabilities = sample_shares(parsed, scale)
            details["confidence"] = {"from": "samples"}
        confidence = (
            probabilities.get(label, 0.0)
            if probabilities is not None and label is not None
            else None
        )
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
            probabilities=probabilities,
            confidence=confidence,
        )
