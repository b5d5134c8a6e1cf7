"""Running any registered metric the same way: :class:`MetricRunner`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any, get_type_hints

import openai

from evalcore.errors import ConfigError
from evalcore.judge._batch import BatchRequest
from evalcore.judge._cache import ReplyCache
from evalcore.judge._client import DEFAULT_PRICES, estimate_cost
from evalcore.judge._requests import RunSettings, RunState
from evalcore.judge._result import Estimate, JudgeResult, Progress, RunSummary
from evalcore.judge._runner import TYPICAL_REPLY_TOKENS, JudgeRunner, RunJob, Runner
from evalcore.judge._sink import ResultSink, record_all
from evalcore.judge._template import JudgeItem, check_item_ids
from evalcore.judge.builtins._inputs import prepare_items
from evalcore.judge.builtins._pipeline import run_pipeline
from evalcore.judge.builtins._registry import get_metric
from evalcore.judge.builtins._spec import MetricSpec

__all__ = ["MetricRunner", "configure_metric"]

ProgressCallback = Callable[[Progress], None]


class _VerdictSink:
    """Adds ``threshold`` and ``result`` (pass/fail) to template results on their way to a sink."""

    def __init__(self, sink: ResultSink, spec: MetricSpec) -> None:
        self._sink = sink
        self._spec = spec

    def _mark(self, result: JudgeResult) -> JudgeResult:
        verdict = self._spec.verdict(result)
        if verdict is None:
            return result
        details = {**result.details, "threshold": self._spec.threshold, "result": verdict}
        return replace(result, details=details)

    def finished(self) -> set[tuple[str, str]]:
        return self._sink.finished()

    def record(self, result: JudgeResult) -> None:
        self._sink.record(self._mark(result))

    def record_many(self, results: list[JudgeResult]) -> None:
        record_all(self._sink, [self._mark(r) for r in results])

    def is_cancelled(self) -> bool:
        return self._sink.is_cancelled()


class MetricRunner(Runner):
    """Runs one registered metric over items, whatever its kind, into a sink.

    ``metric`` is a :class:`MetricSpec` or a registered name; ``threshold`` overrides its default
    pass threshold for this runner. ``client`` (an ``openai.AsyncOpenAI`` or a factory of one, see
    :func:`~evalcore.judge.client_factory`) and ``model`` are needed by template and pipeline
    metrics, not by function metrics; ``endpoint`` (default: the client's base URL) enters the cache
    keys. ``settings`` default to :class:`~evalcore.judge.RunSettings`
    with the metric's order mode (Vertex-style pairwise metrics flip half of the items).

    Every run first prepares the items (:func:`prepare_items`): a missing input fails there, before
    any request. Template metrics go through :class:`~evalcore.judge.JudgeRunner` (their results'
    ``details`` gain ``threshold`` and ``result``); pipeline metrics through the same client, cache
    and retry path one step at a time; function metrics are computed at once. Every result reaches
    the sink as it is made, and a later run with the same sink skips what is finished.
    """

    def __init__(
        self,
        metric: MetricSpec | str,
        client: openai.AsyncOpenAI | Callable[[], openai.AsyncOpenAI] | None = None,
        *,
        settings: RunSettings | None = None,
        model: str | None = None,
        prices: Mapping[str, tuple[float, float]] | None = None,
        threshold: object = None,
        endpoint: str | None = None,
    ) -> None:
        super().__init__(client)
        spec = get_metric(metric) if isinstance(metric, str) else metric
        if threshold is not None:
            spec = spec.with_threshold(threshold)
        self.spec = spec
        self.settings = settings or RunSettings(order_mode=spec.order_mode)
        self.prices = DEFAULT_PRICES if prices is None else prices
        self._endpoint = endpoint
        self._runner: JudgeRunner | None = None
        self.model = ""
        if spec.kind == "function":
            return
        if client is None:
            raise ConfigError(f"metric {spec.name!r} asks a model: give the runner a client")
        if spec.template is not None:
            self._runner = JudgeRunner(
                client,
                spec.template,
                settings=self.settings,
                model=model,
                prices=prices,
                endpoint=endpoint,
            )
            self.model = self._runner.model
        else:
            if not (model or (spec.pipeline is not None and spec.pipeline.model.model)):
                raise ConfigError(f"no model for metric {spec.name!r}: pass one to the run")
            assert spec.pipeline is not None
            self.model = model or spec.pipeline.model.model

    def prepare(self, items: Iterable[JudgeItem]) -> list[JudgeItem]:
        """:func:`prepare_items` for this metric (raises on a missing input or an item id given
        twice)."""
        prepared = prepare_items(self.spec, items)
        check_item_ids(prepared)
        return prepared

    def _estimate(
        self, items: list[JudgeItem], cache: ReplyCache | None, finished: set[tuple[str, str]]
    ) -> Estimate:
        """Exact for template metrics; for pipeline metrics an upper bound (every step of every
        unfinished item, no cache hits), since later steps depend on earlier replies."""
        if self._runner is not None:
            return self._runner._estimate(self._runner.prepare(items), cache, finished)
        pending = [i for i in items if (i.item_id, "AB") not in finished]
        skipped = len(items) - len(pending)
        pipeline = self.spec.pipeline
        if pipeline is None:
            return Estimate(len(items), skipped, 0, 0, 0, 0, 0, 0.0, "(no model)")
        steps = pipeline.max_requests()
        prompt_chars = sum(
            len(p.system) + len(p.user) for p in map(pipeline.prompt, pipeline.default_prompts())
        ) / max(1, len(pipeline.default_prompts()))
        tokens_in = 0
        for item in pending:
            text = sum(
                len(str(item.fields.get(k) or "")) for k in ("response", "reference", "context")
            )
            tokens_in += int(steps * (prompt_chars + text) / 4)
        max_tokens = pipeline.model.max_tokens
        typical = (
            min(max_tokens, 2 * TYPICAL_REPLY_TOKENS) if max_tokens else 2 * TYPICAL_REPLY_TOKENS
        )
        tokens_out = len(pending) * steps * typical
        return Estimate(
            n_units=len(items),
            n_skipped=skipped,
            n_cached=0,
            n_requests=len(pending) * steps,
            expected_tokens_in=tokens_in,
            expected_tokens_out=tokens_out,
            max_tokens_out=len(pending) * steps * max_tokens if max_tokens else None,
            expected_cost=estimate_cost(self.model, tokens_in, tokens_out, self.prices),
            model=self.model,
        )

    def batch_requests(
        self,
        items: Iterable[JudgeItem],
        cache: ReplyCache | None = None,
        sink: ResultSink | None = None,
    ) -> Iterator[BatchRequest]:
        """A template metric's requests for a batch file (see
        :meth:`~evalcore.judge.Runner.batch_requests`); a function metric has none, and a
        pipeline metric cannot be batched (its later steps depend on earlier replies)."""
        if self._runner is not None:
            return self._runner.batch_requests(self.prepare(items), cache, sink)
        if self.spec.kind == "function":
            return iter(())
        raise ConfigError(
            f"metric {self.spec.name!r} asks in several steps, each after the last reply: it "
            "cannot be sent as a batch"
        )

    async def _run(self, job: RunJob) -> RunSummary:
        spec = self.spec
        if self._runner is not None:
            verdicts = _VerdictSink(job.sink, spec)
            return await self._runner.run(job.items, verdicts, job.cache, progress=job.progress)
        if spec.pipeline is not None:
            assert self._client is not None  # checked in __init__
            return await run_pipeline(
                spec.pipeline,
                self._client,
                job.items,
                job.sink,
                job.cache,
                settings=self.settings,
                model=self.model,
                prices=self.prices,
                progress=job.progress,
                endpoint=self._endpoint,
            )
        return self._run_function(job.items, job.sink, job.progress)

    def _run_function(
        self, items: list[JudgeItem], sink: ResultSink, progress: ProgressCallback | None
    ) -> RunSummary:
        assert self.spec.function is not None
        finished = sink.finished()
        pending = [i for i in items if (i.item_id, "AB") not in finished]
        state = RunState(
            total=len(items), skipped=len(items) - len(pending), sink=sink, progress=progress
        )
        results = self.spec.function(pending, threshold=self.spec.threshold) if pending else []
        state.record_many(results)
        if not results:
            state.report()
        return state.summary()


def configure_metric(spec: MetricSpec | str, params: Mapping[str, object]) -> MetricSpec:
    """A copy of a pipeline metric with other parameters (``mode``, ``beta``, ``atomicity``,
    ``coverage``, ``coeff`` …); text values (from a command line) are converted to the parameter's
    type. Same version rules as any edit: the copy has its own content hash.

    >>> configure_metric("factual_correctness", {"mode": "precision"}).pipeline.mode
    'precision'
    """
    spec = get_metric(spec) if isinstance(spec, str) else spec
    if not params:
        return spec
    pipeline = spec.pipeline
    if pipeline is None:
        raise ConfigError(f"metric {spec.name!r} has no parameters to set (it is a {spec.kind})")
    known = pipeline.parameters()
    hints = get_type_hints(type(pipeline))
    values: dict[str, Any] = {}
    for key, raw in params.items():
        if key not in known:
            raise ConfigError(
                f"metric {spec.name!r} has no parameter {key!r} (its parameters: "
                f"{', '.join(sorted(known)) or 'none'})"
            )
        value: Any = raw
        if isinstance(raw, str) and "float" in str(hints.get(key, "")):
            try:
                value = float(raw)
            except ValueError:
                raise ConfigError(f"parameter {key} must be a number, not {raw!r}") from None
        values[key] = value
    return replace(spec, pipeline=dataclasses.replace(pipeline, **values))
