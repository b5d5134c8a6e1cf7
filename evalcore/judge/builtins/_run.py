"""Running any registered metric the same way: :class:`MetricRunner`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any, get_type_hints

import openai

from evalcore.errors import ConfigError
from evalcore.judge._cache import ReplyCache
from evalcore.judge._client import DEFAULT_PRICES, estimate_cost
from evalcore.judge._result import Estimate, JudgeResult, Progress, RunSummary
from evalcore.judge._runner import TYPICAL_REPLY_TOKENS, JudgeRunner, RunSettings, SyncBridge
from evalcore.judge._sink import MemorySink, ResultSink
from evalcore.judge._template import JudgeItem
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
        marked = [self._mark(r) for r in results]
        many = getattr(self._sink, "record_many", None)
        if many is not None:
            many(marked)
        else:
            for result in marked:
                self._sink.record(result)

    def is_cancelled(self) -> bool:
        return self._sink.is_cancelled()


class MetricRunner:
    """Runs one registered metric over items, whatever its kind, into a sink.

    ``metric`` is a :class:`MetricSpec` or a registered name; ``threshold`` overrides its default
    pass threshold for this runner. ``client`` (an ``openai.AsyncOpenAI`` or a factory of one, see
    :func:`~evalcore.judge.client_factory`) and ``model`` are needed by template and pipeline
    metrics, not by function metrics. ``settings`` default to :class:`~evalcore.judge.RunSettings`
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
    ) -> None:
        spec = get_metric(metric) if isinstance(metric, str) else metric
        if threshold is not None:
            spec = spec.with_threshold(threshold)
        self.spec = spec
        self.settings = settings or RunSettings(order_mode=spec.order_mode)
        self.prices = DEFAULT_PRICES if prices is None else prices
        self._client = client
        self._loops = SyncBridge()
        self._runner: JudgeRunner | None = None
        self.model = ""
        if spec.kind == "function":
            return
        if client is None:
            raise ConfigError(f"metric {spec.name!r} asks a model: give the runner a client")
        if spec.template is not None:
            self._runner = JudgeRunner(
                client, spec.template, settings=self.settings, model=model, prices=prices
            )
            self.model = self._runner.model
        else:
            if not (model or (spec.pipeline is not None and spec.pipeline.model.model)):
                raise ConfigError(f"no model for metric {spec.name!r}: pass one to the run")
            assert spec.pipeline is not None
            self.model = model or spec.pipeline.model.model

    def prepare(self, items: Iterable[JudgeItem]) -> list[JudgeItem]:
        """:func:`prepare_items` for this metric (raises on a missing input)."""
        return prepare_items(self.spec, items)

    def estimate(
        self,
        items: Iterable[JudgeItem],
        cache: ReplyCache | None = None,
        sink: ResultSink | None = None,
    ) -> Estimate:
        """What a run would request and cost. Exact for template metrics; for pipeline metrics an
        upper bound (every step of every unfinished item, no cache hits), since later steps depend
        on earlier replies."""
        prepared = self.prepare(items)
        if self._runner is not None:
            return self._runner.estimate(prepared, cache, sink)
        finished = sink.finished() if sink is not None else set()
        pending = [i for i in prepared if (i.item_id, "AB") not in finished]
        skipped = len(prepared) - len(pending)
        pipeline = self.spec.pipeline
        if pipeline is None:
            return Estimate(len(prepared), skipped, 0, 0, 0, 0, 0, 0.0, "(no model)")
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
            n_units=len(prepared),
            n_skipped=skipped,
            n_cached=0,
            n_requests=len(pending) * steps,
            expected_tokens_in=tokens_in,
            expected_tokens_out=tokens_out,
            max_tokens_out=len(pending) * steps * max_tokens if max_tokens else None,
            expected_cost=estimate_cost(self.model, tokens_in, tokens_out, self.prices),
            model=self.model,
        )

    async def run(
        self,
        items: Iterable[JudgeItem],
        sink: ResultSink | None = None,
        cache: ReplyCache | None = None,
        *,
        progress: ProgressCallback | None = None,
    ) -> RunSummary:
        """Judge every item not finished in ``sink`` (a :class:`~evalcore.judge.MemorySink` when
        none is given)."""
        prepared = self.prepare(items)
        sink = sink if sink is not None else MemorySink()
        spec = self.spec
        if self._runner is not None:
            return await self._runner.run(
                prepared, _VerdictSink(sink, spec), cache, progress=progress
            )
        if spec.pipeline is not None:
            assert self._client is not None
            return await run_pipeline(
                spec.pipeline,
                self._client,
                prepared,
                sink,
                cache,
                settings=self.settings,
                model=self.model,
                prices=self.prices,
                progress=progress,
            )
        return self._run_function(prepared, sink, progress)

    def _run_function(
        self, items: list[JudgeItem], sink: ResultSink, progress: ProgressCallback | None
    ) -> RunSummary:
        assert self.spec.function is not None
        finished = sink.finished()
        pending = [i for i in items if (i.item_id, "AB") not in finished]
        results = self.spec.function(pending, threshold=self.spec.threshold) if pending else []
        many = getattr(sink, "record_many", None)
        if many is not None and results:
            many(results)
        else:
            for result in results:
                sink.record(result)
        ok = sum(r.status == "ok" for r in results)
        unparsed = sum(r.status == "unparsed" for r in results)
        failed = len(results) - ok - unparsed
        skipped = len(items) - len(pending)
        if progress is not None:
            progress(
                Progress(len(items), len(items), ok, unparsed, failed, 0.0, 0.0, skipped=skipped)
            )
        return RunSummary(
            total=len(items),
            skipped=skipped,
            ok=ok,
            unparsed=unparsed,
            failed=failed,
            cached=0,
            requests=0,
            tokens_in=0,
            tokens_out=0,
            cost=0.0,
            elapsed_s=0.0,
        )

    def run_sync(
        self,
        items: Iterable[JudgeItem],
        sink: ResultSink | None = None,
        cache: ReplyCache | None = None,
        *,
        progress: ProgressCallback | None = None,
    ) -> RunSummary:
        """:meth:`run` from synchronous code (in a helper thread when an event loop is running)."""
        return self._loops.run(self.run(items, sink, cache, progress=progress), self._client)

    def close(self) -> None:
        """Close the private event loop kept for a client instance, if any."""
        self._loops.close()


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
