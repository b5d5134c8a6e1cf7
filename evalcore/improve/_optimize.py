"""The optimisation: candidates chosen on dev, proved on test, within a budget.

:func:`optimize` judges the starting template on the dev items, builds candidates from what it sees
there only (a :class:`~evalcore.improve._candidates.DevView`), judges every candidate on dev with
the same :class:`~evalcore.judge.JudgeRunner`, cache and parsing as any run, ranks them by the
headline metric, and only then judges the start and the best few on the test items. A finalist is
offered (``beats_start``) when the paired bootstrap interval of its difference from the start lies
above zero, or its difference reaches a margin the user set.

Every figure comes from the calibration engine: a candidate's metrics and the headline's interval
from :func:`evalcore.metrics.calibrate`, a finalist's difference from the start, its paired
interval and McNemar's test from :func:`evalcore.metrics.compare`, both at the settings'
``confidence`` and ``n_boot``. The human ceiling is the Calibrate page's
(:func:`evalcore.report.human_ceiling`: Krippendorff's alpha and the mean pairwise kappa of the
annotators on the test items).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pandas as pd

from evalcore.errors import ConfigError, EvalcoreError, MetricError
from evalcore.improve._candidates import (
    Candidate,
    DevView,
    add_examples,
    apply_rewrite,
    fewshot_sets,
    parse_rewrite,
    rewrite_prompt,
)
from evalcore.improve._settings import OptimizeSettings
from evalcore.improve._split import Split, make_split
from evalcore.judge import (
    JudgeItem,
    JudgeResult,
    JudgeRunner,
    JudgeTemplate,
    MemorySink,
    ReplyCache,
    cache_key,
    estimate,
    estimate_cost,
)
from evalcore.judge.builtins import build_runner
from evalcore.labels import Label, Scale, normalize_label
from evalcore.metrics import MetricDef, calibrate, compare, metrics_for
from evalcore.report import HumanCeiling, human_ceiling

__all__ = [
    "CandidateResult",
    "DroppedCandidate",
    "FinalistResult",
    "ImproveProgress",
    "OptimizeReport",
    "OptimizeSettings",
    "estimate_optimize",
    "optimize",
]

_T = TypeVar("_T")
#: Reply tokens assumed for one optimiser request in estimates and budget checks.
OPTIMIZER_REPLY_TOKENS = 800
_OPTIMIZER_PARAMS: dict[str, Any] = {"temperature": 0}


@dataclass(frozen=True)
class ImproveProgress:
    """Handed to the progress callback: ``phase`` (``"start"``, ``"fewshot"``, ``"rewrite"``,
    ``"manual"``, ``"test"``), steps ``done`` of ``total``, requests and cost so far."""

    phase: str
    done: int
    total: int
    requests: int
    cost: float


@dataclass(frozen=True)
class CandidateResult:
    """A candidate on dev: every metric of the scale, the headline's interval (at the settings'
    confidence), what it cost, and the share of dev items with a usable label (``coverage``)."""

    candidate: Candidate
    dev: dict[str, float | None]
    dev_interval: tuple[float, float] | None
    requests: int
    cost: float
    coverage: float

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.candidate.to_dict(),
            "dev": dict(self.dev),
            "dev_interval": _pair(self.dev_interval),
            "requests": self.requests,
            "cost": self.cost,
            "coverage": self.coverage,
        }


@dataclass(frozen=True)
class FinalistResult:
    """A candidate on test: its headline metric with its interval, and against the start the
    paired difference (candidate − start) with its paired interval and McNemar's p
    (:func:`evalcore.metrics.compare`); intervals at the settings' confidence."""

    candidate: Candidate
    test: float | None
    test_interval: tuple[float, float] | None
    difference: float | None = None
    difference_interval: tuple[float, float] | None = None
    mcnemar_p: float | None = None
    beats_start: bool = False
    coverage: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.candidate.id,
            "kind": self.candidate.kind,
            "version": self.candidate.template.version,
            "test": self.test,
            "test_interval": _pair(self.test_interval),
            "difference": self.difference,
            "difference_interval": _pair(self.difference_interval),
            "mcnemar_p": self.mcnemar_p,
            "beats_start": self.beats_start,
            "coverage": self.coverage,
        }


@dataclass(frozen=True)
class DroppedCandidate:
    """A candidate the search planned and did not judge, or judged and could not rank, and why.

    ``kind`` is the candidate's (``"fewshot"``, ``"rewrite"``, ``"manual"``), or ``"test"`` for a
    judging on test that did not happen; ``name`` says which (``"rewrite 2 of 3"``, or a judged
    candidate's id); ``steps`` is how many planned progress steps it took out of the total."""

    kind: str
    name: str
    reason: str
    steps: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "reason": self.reason, "steps": self.steps}


@dataclass(frozen=True)
class OptimizeReport:
    """Everything an optimisation found. ``best`` is the first finalist (in dev order) that beats
    the start on test, else None; ``stopped`` is ``"budget"`` or ``"cancelled"`` when it ended
    early. ``rewrites_skipped`` counts optimiser replies that failed, did not parse or did not
    make a template. ``dropped`` lists every candidate planned and not judged or not ranked, with
    its reason; ``planned_steps`` is the number of progress steps planned at the start and
    ``steps`` the number that ran: the difference is the sum of the dropped candidates' ``steps``
    (unless the search was cancelled). ``ceiling`` is the annotators' agreement on the test items,
    as the Calibrate page computes it (:func:`evalcore.report.human_ceiling`); ``None`` with fewer
    than two annotators. ``confidence`` is that of every interval."""

    split: Split
    start: CandidateResult
    candidates: list[CandidateResult]
    start_test: FinalistResult
    finalists: list[FinalistResult]
    ceiling: HumanCeiling | None
    best: Candidate | None
    stopped: str | None
    requests: int
    cost: float
    metric: str = "accuracy_balanced"
    rewrites_skipped: int = 0
    confidence: float = 0.95
    dropped: tuple[DroppedCandidate, ...] = ()
    planned_steps: int = 0
    steps: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The ``report.json`` of an optimisation. ``ceiling`` is the annotators' Krippendorff's
        alpha on the test items (``None`` without two annotators); ``human_ceiling`` the whole
        ceiling (:meth:`evalcore.report.HumanCeiling.to_dict`)."""
        ceiling = None if self.ceiling is None else self.ceiling.to_dict()
        return {
            "split": self.split.to_dict(),
            "metric": self.metric,
            "start": self.start.to_dict(),
            "candidates": [c.to_dict() for c in self.candidates],
            "start_test": self.start_test.to_dict(),
            "finalists": [f.to_dict() for f in self.finalists],
            "ceiling": None if ceiling is None else ceiling["krippendorff_alpha"],
            "human_ceiling": ceiling,
            "confidence": self.confidence,
            "best": None if self.best is None else self.best.id,
            "stopped": self.stopped,
            "requests": self.requests,
            "cost": self.cost,
            "rewrites_skipped": self.rewrites_skipped,
            "dropped": [d.to_dict() for d in self.dropped],
            "steps": {"planned": self.planned_steps, "done": self.steps},
        }


def _pair(value: tuple[float, float] | None) -> list[float] | None:
    return None if value is None else [value[0], value[1]]


def _num(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


# --- scoring -------------------------------------------------------------------------------------


def _interval(value: tuple[float, float] | None) -> tuple[float, float] | None:
    """An interval, or ``None`` when it is undefined (NaN ends: no resample could compute it)."""
    if value is None or any(math.isnan(v) for v in value):
        return None
    return (float(value[0]), float(value[1]))


def _scores(
    human: Sequence[Label],
    judged: Sequence[Label | None],
    scale: Scale,
    headline: MetricDef,
    settings: OptimizeSettings,
) -> tuple[dict[str, float | None], tuple[float, float] | None]:
    """Every metric of the scale kind on one (human, judge) pairing, and the headline's interval:
    the calibration engine's report (:func:`evalcore.metrics.calibrate`) of the items judged."""
    kind = scale.kind
    pairs = [(h, j) for h, j in zip(human, judged, strict=True) if j is not None]
    if not pairs:
        return {m.key: None for m in metrics_for(kind)}, None
    report = calibrate(
        [h for h, _ in pairs],
        [j for _, j in pairs],
        labels=list(scale.labels),
        kind=kind,
        n_boot=settings.n_boot,
        confidence=settings.confidence,
        seed=settings.split_seed,
    )
    values = {m.key: _num(getattr(report, m.key)) for m in metrics_for(kind)}
    return values, _interval(report.ci.get(headline.key))


def _paired(
    human: Sequence[Label],
    a: Sequence[Label | None],
    b: Sequence[Label | None],
    scale: Scale,
    headline: MetricDef,
    settings: OptimizeSettings,
) -> tuple[float | None, tuple[float, float] | None, float | None]:
    """Difference b − a of the headline metric on the items both labelled, its paired bootstrap
    interval and McNemar's exact p: :func:`evalcore.metrics.compare`."""
    try:
        comparison = compare(
            list(human),
            list(a),
            list(b),
            labels=list(scale.labels),
            n_boot=settings.n_boot,
            confidence=settings.confidence,
            seed=settings.split_seed,
            metric=headline.key,
        )
    except MetricError:  # no item that both labelled
        return None, None, None
    return (
        _num(comparison.diff_metric),
        _interval(comparison.diff_metric_ci),
        comparison.mcnemar_p,
    )


# --- the run --------------------------------------------------------------------------------------


class _Stop(Exception):
    """Raised inside the search when the budget or a cancel ends it (``why``: in words)."""

    def __init__(self, reason: str, why: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.why = why


@dataclass
class _Planned:
    """A planned candidate (or judging on test) and the progress steps it takes."""

    kind: str
    name: str
    steps: int
    done: int = 0
    over: bool = False


class _CancelSink(MemorySink):
    def __init__(self, should_stop: Callable[[], bool] | None) -> None:
        super().__init__()
        self._should_stop = should_stop

    def is_cancelled(self) -> bool:
        return super().is_cancelled() or bool(self._should_stop and self._should_stop())


@dataclass
class _Context:
    judge_client: Any
    model: str
    optimizer_client: Any
    optimizer_model: str
    settings: OptimizeSettings
    cache: ReplyCache | None
    prices: Mapping[str, tuple[float, float]] | None
    progress: Callable[[ImproveProgress], None] | None
    should_stop: Callable[[], bool] | None
    requests: int = 0
    cost: float = 0.0
    done: int = 0
    total: int = 0
    phase: str = "start"
    skipped: int = 0
    plan: list[_Planned] = field(default_factory=list)
    dropped: list[DroppedCandidate] = field(default_factory=list)
    _ids: dict[str, int] = field(default_factory=dict)

    def planned(self, kind: str, name: str, steps: int = 1) -> _Planned:
        entry = _Planned(kind, name, steps)
        self.plan.append(entry)
        self.total += steps
        return entry

    def drop(self, entry: _Planned, reason: str) -> None:
        """The rest of ``entry`` will not run: its steps leave the total, with the reason."""
        left = entry.steps - entry.done
        entry.over = True
        self.total -= left
        self.dropped.append(DroppedCandidate(entry.kind, entry.name, reason, left))
        self.tell()

    def drop_rest(self, why: str) -> None:
        """Everything planned that has not run is dropped (a budget stop)."""
        for entry in self.plan:
            if not entry.over:
                self.drop(entry, why)

    def next_id(self, kind: str) -> str:
        self._ids[kind] = self._ids.get(kind, 0) + 1
        return f"{kind}-{self._ids[kind]}"

    def check_stop(self) -> None:
        if self.should_stop is not None and self.should_stop():
            raise _Stop("cancelled")

    def afford(self, requests: int, cost: float | None) -> None:
        s = self.settings
        if s.max_requests is not None and self.requests + requests > s.max_requests:
            raise _Stop(
                "budget",
                f"over budget: the search stopped before a step that would pass the cap of "
                f"{s.max_requests} requests",
            )
        if s.budget_usd is not None and cost is not None and self.cost + cost > s.budget_usd:
            raise _Stop(
                "budget",
                f"over budget: the search stopped before a step that would pass the budget of "
                f"${s.budget_usd:g}",
            )

    def step(self, entry: _Planned) -> None:
        self.done += 1
        entry.done += 1
        if entry.done == entry.steps:
            entry.over = True
        self.tell()

    def tell(self) -> None:
        if self.progress is not None:
            self.progress(
                ImproveProgress(self.phase, self.done, self.total, self.requests, self.cost)
            )

    async def judge(
        self, template: JudgeTemplate, items: Sequence[JudgeItem]
    ) -> tuple[dict[str, JudgeResult], int, float]:
        """Judge ``items`` with ``template`` as a normal run does; stops on budget or cancel."""
        self.check_stop()
        runner = build_runner(
            template, client=self.judge_client, model=self.model, prices=self.prices
        )
        guess = runner.estimate(items, self.cache)
        self.afford(guess.n_requests, guess.expected_cost)
        sink = _CancelSink(self.should_stop)
        summary = await runner.run(items, sink, self.cache)
        self.requests += summary.requests
        self.cost += summary.cost
        if summary.cancelled or sink.is_cancelled():
            raise _Stop("cancelled")
        return {r.item_id: r for r in sink}, summary.requests, summary.cost

    async def ask_optimizer(
        self, template: JudgeTemplate, messages: list[dict[str, str]]
    ) -> tuple[str | None, str]:
        """One optimiser request through the same requester and cache: its reply, or ``None``
        and why it failed."""
        self.check_stop()
        runner = build_runner(
            template, client=self.optimizer_client, model=self.optimizer_model, prices=self.prices
        )
        key_guess = sum(len(m["content"]) for m in messages) // 4
        async with runner.session(self.cache) as session:
            cost_guess = estimate_cost(
                self.optimizer_model, key_guess, OPTIMIZER_REPLY_TOKENS, self.prices
            )
            # a cached reply costs nothing: only an uncached one is checked against the budget
            cached = self.cache.get(runner_key(runner, messages)) if self.cache else None
            if cached is None:
                self.afford(1, cost_guess)
            reply = await session.call(messages, params=_OPTIMIZER_PARAMS)
            self.requests += session.requests
        if not reply.cached and reply.cost:
            self.cost += reply.cost
        if reply.status == "ok":
            return reply.text, ""
        return None, reply.error or reply.status


def runner_key(runner: JudgeRunner, messages: list[dict[str, str]]) -> str:
    """The cache key of one optimiser request (as :meth:`RunnerSession.call` computes it)."""
    return cache_key(messages, runner.model, _OPTIMIZER_PARAMS, endpoint=runner.endpoint)


def _run(coro: Awaitable[_T]) -> _T:
    async def main() -> _T:
        return await coro

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, main()).result()


def _split_items(
    items: Sequence[JudgeItem],
    human: Mapping[str, Label],
    settings: OptimizeSettings,
    split: Split | None,
) -> tuple[Split, dict[str, JudgeItem], dict[str, Label]]:
    """The split (made from the labelled items when not given, else checked against them), the
    labelled items by id and their human labels."""
    labels: dict[str, Label] = {}
    by_id: dict[str, JudgeItem] = {}
    for item in items:
        label = normalize_label(human.get(item.item_id))
        if label is not None:
            labels[item.item_id] = label
            by_id[item.item_id] = item
    if split is None:
        ids = list(by_id)
        split = make_split(
            ids,
            [labels[i] for i in ids],
            test_share=settings.test_share,
            seed=settings.split_seed,
        )
    missing = [i for i in (*split.dev, *split.test) if i not in by_id]
    if missing:
        raise ConfigError(
            f"split {split.name!r} names {len(missing)} item(s) without a human label or not given "
            f"(for example {missing[0]!r})"
        )
    return split, by_id, labels


def optimize(
    items: Sequence[JudgeItem],
    human: Mapping[str, Label],
    start: JudgeTemplate,
    *,
    judge_client: Any,
    model: str,
    optimizer_client: Any,
    optimizer_model: str,
    settings: OptimizeSettings,
    cache: ReplyCache | None = None,
    split: Split | None = None,
    manual: Sequence[JudgeTemplate] = (),
    progress: Callable[[ImproveProgress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    comments: Mapping[str, str] | None = None,
    prices: Mapping[str, tuple[float, float]] | None = None,
    annotations: pd.DataFrame | None = None,
    ceiling: HumanCeiling | None = None,
) -> OptimizeReport:
    """Search for a better version of ``start``: choose on dev, prove on test.

    ``human`` maps item ids to the people's label (items without one are left out); ``split``
    defaults to :func:`make_split` of the labelled items with the settings' share and seed
    (raising :class:`SplitTooSmallError`). ``judge_client`` / ``optimizer_client`` are
    ``openai.AsyncOpenAI`` clients or factories of one; ``cache`` is shared by every request, so
    the same optimisation asked again sends nothing new. ``prices`` maps a model to dollars per
    million (input, output) tokens for the budget. ``annotations`` is the people's labels, items
    (by id) x annotators: the human ceiling of the report is their agreement on the test items, as
    the Calibrate page computes it (:func:`evalcore.report.human_ceiling`); ``ceiling`` gives one
    computed already. Stops early, keeping what is done,
    when ``should_stop()`` turns true (``stopped="cancelled"``) or the next step would pass
    ``max_requests`` or ``budget_usd`` (``stopped="budget"``); a model without a price
    counts nothing against ``budget_usd``.
    """
    return _run(
        _optimize(
            items,
            human,
            start,
            _Context(
                judge_client,
                model,
                optimizer_client,
                optimizer_model,
                settings,
                cache,
                prices,
                progress,
                should_stop,
            ),
            split,
            manual,
            dict(comments or {}),
            ceiling,
            annotations,
        )
    )


#: Why a planned candidate was not judged or not ranked (see :class:`DroppedCandidate`).
_FEW_SETS = (
    "only {made} distinct set(s) of dev examples could be made from the {dev} dev items within the "
    "token budget of {budget} tokens"
)
_NO_DISAGREEMENT = (
    "the starting version agrees with people on every dev item: there is no disagreement to show "
    "the optimiser"
)
_FAILED = "the optimiser's request failed: {error}"
_UNPARSED = "the optimiser's reply held no JSON object with a system or rubric text"
_NOT_A_TEMPLATE = "the proposed instructions do not make a usable template: {error}"
_UNSCORED = "no dev item got a usable label from it, so it has no dev score to rank"
_FEW_RANKED = "only {ranked} candidate(s) had a dev score to rank"


async def _optimize(
    items: Sequence[JudgeItem],
    human: Mapping[str, Label],
    start: JudgeTemplate,
    ctx: _Context,
    split: Split | None,
    manual: Sequence[JudgeTemplate],
    comments: dict[str, str],
    ceiling: HumanCeiling | None,
    annotations: pd.DataFrame | None,
) -> OptimizeReport:
    settings = ctx.settings
    scale = start.scale
    headline = settings.headline(scale.kind)
    split, by_id, labels_by_id = _split_items(items, human, settings, split)
    if ceiling is None and annotations is not None:
        ceiling = _test_ceiling(annotations, split, scale, settings)
    dev_items = [by_id[i] for i in split.dev]
    test_items = [by_id[i] for i in split.test]
    dev_human = [labels_by_id[i] for i in split.dev]
    test_human = [labels_by_id[i] for i in split.test]
    # every step planned, each dropped with its reason when it cannot run: done == total at the end
    n_few, n_rewrites = settings.fewshot_candidates, settings.rewrites
    start_dev_step = ctx.planned("start", "the start on dev")
    few_steps = [ctx.planned("fewshot", f"few-shot {k} of {n_few}") for k in range(1, n_few + 1)]
    rewrite_steps = [
        ctx.planned("rewrite", f"rewrite {k} of {n_rewrites}", steps=2)
        for k in range(1, n_rewrites + 1)
    ]
    manual_steps = [ctx.planned("manual", f"hand-edited {k}") for k in range(1, len(manual) + 1)]
    start_test_step = ctx.planned("test", "the start on test")
    finalist_steps = [
        ctx.planned("test", f"finalist {k} of {settings.finalists} on test")
        for k in range(1, settings.finalists + 1)
    ]
    planned_steps = ctx.total

    def score(
        candidate: Candidate, results: dict[str, JudgeResult], req: int, cost: float
    ) -> CandidateResult:
        judged = [_ok(results.get(i)) for i in split.dev]
        values, interval = _scores(dev_human, judged, scale, headline, settings)
        coverage = sum(j is not None for j in judged) / len(judged) if judged else 0.0
        return CandidateResult(candidate, values, interval, req, cost, coverage)

    start_candidate = Candidate("start", "start", start, note="the starting version")
    stopped: str | None = None
    results: list[CandidateResult] = []
    start_result = CandidateResult(start_candidate, {}, None, 0, 0.0, 0.0)
    try:
        ctx.phase = "start"
        start_dev, req, cost = await ctx.judge(start, dev_items)
        start_result = score(start_candidate, start_dev, req, cost)
        ctx.step(start_dev_step)
        view = DevView(
            tuple(dev_items),
            {i: labels_by_id[i] for i in split.dev},
            {i: comments[i] for i in split.dev if i in comments},
            start_dev,
        )
        ctx.phase = "fewshot"
        sets = fewshot_sets(
            start,
            view,
            count=n_few,
            max_examples=settings.fewshot_max,
            token_budget=settings.token_budget,
            seed=settings.split_seed,
        )
        few = _FEW_SETS.format(made=len(sets), dev=len(dev_items), budget=settings.token_budget)
        for entry in few_steps[len(sets) :]:
            ctx.drop(entry, few)
        for entry, (example_ids, section) in zip(few_steps, sets, strict=False):
            candidate = Candidate(
                ctx.next_id("fewshot"),
                "fewshot",
                add_examples(start, section),
                examples=example_ids,
                note=f"{len(example_ids)} labelled dev example(s) in the system prompt",
            )
            found, req, cost = await ctx.judge(candidate.template, dev_items)
            results.append(score(candidate, found, req, cost))
            ctx.step(entry)
        ctx.phase = "rewrite"
        for r, entry in enumerate(rewrite_steps):
            messages, shown = rewrite_prompt(
                start, view, shown=settings.disagreements_shown, seed=settings.split_seed + r
            )
            if not shown:
                for rest in rewrite_steps[r:]:
                    ctx.drop(rest, _NO_DISAGREEMENT)
                break
            text, error = await ctx.ask_optimizer(start, messages)
            ctx.step(entry)
            parsed = parse_rewrite(text) if text is not None else None
            try:
                if text is None:
                    raise _Dropped(_FAILED.format(error=error))
                if parsed is None:
                    raise _Dropped(_UNPARSED)
                template = apply_rewrite(start, *parsed)
            except _Dropped as dropped:
                ctx.skipped += 1
                ctx.drop(entry, dropped.reason)
                continue
            except EvalcoreError as exc:
                ctx.skipped += 1
                ctx.drop(entry, _NOT_A_TEMPLATE.format(error=exc))
                continue
            candidate = Candidate(
                ctx.next_id("rewrite"),
                "rewrite",
                template,
                optimizer_model=ctx.optimizer_model,
                note=f"rubric and instructions rewritten from {len(shown)} dev disagreement(s)",
            )
            found, req, cost = await ctx.judge(candidate.template, dev_items)
            results.append(score(candidate, found, req, cost))
            ctx.step(entry)
        ctx.phase = "manual"
        for entry, template in zip(manual_steps, manual, strict=True):
            candidate = Candidate(ctx.next_id("manual"), "manual", template, note="hand-edited")
            found, req, cost = await ctx.judge(template, dev_items)
            results.append(score(candidate, found, req, cost))
            ctx.step(entry)
    except _Stop as stop:
        stopped = stop.reason
        if stop.reason == "budget":
            ctx.drop_rest(stop.why)

    ranked = sorted(
        (r for r in results if r.dev.get(headline.key) is not None),
        key=lambda r: -float(r.dev[headline.key] or 0.0),
    )
    for unscored in results:
        if unscored.dev.get(headline.key) is None:
            c = unscored.candidate
            ctx.dropped.append(DroppedCandidate(c.kind, c.id, _UNSCORED, 0))
    start_test = FinalistResult(start_candidate, None, None)
    finalists: list[FinalistResult] = []
    if stopped is None:
        for entry in finalist_steps[len(ranked) :]:
            ctx.drop(entry, _FEW_RANKED.format(ranked=len(ranked)))
        try:
            ctx.phase = "test"
            start_found, _, _ = await ctx.judge(start, test_items)
            start_labels = [_ok(start_found.get(i)) for i in split.test]
            value, interval = _test_score(test_human, start_labels, scale, headline, settings)
            start_test = FinalistResult(
                start_candidate, value, interval, coverage=_coverage(start_labels)
            )
            ctx.step(start_test_step)
            for entry, result in zip(finalist_steps, ranked, strict=False):
                found, _, _ = await ctx.judge(result.candidate.template, test_items)
                cand_labels = [_ok(found.get(i)) for i in split.test]
                value, interval = _test_score(test_human, cand_labels, scale, headline, settings)
                diff, diff_interval, p = _paired(
                    test_human, start_labels, cand_labels, scale, headline, settings
                )
                beats = diff is not None and (
                    (diff_interval is not None and diff_interval[0] > 0)
                    or (settings.margin > 0 and diff >= settings.margin)
                )
                finalists.append(
                    FinalistResult(
                        result.candidate,
                        value,
                        interval,
                        diff,
                        diff_interval,
                        p,
                        bool(beats),
                        _coverage(cand_labels),
                    )
                )
                ctx.step(entry)
        except _Stop as stop:
            stopped = stop.reason
            if stop.reason == "budget":
                ctx.drop_rest(stop.why)
    best = next((f.candidate for f in finalists if f.beats_start), None)
    return OptimizeReport(
        split=split,
        start=start_result,
        candidates=results,
        start_test=start_test,
        finalists=finalists,
        ceiling=ceiling,
        best=best,
        stopped=stopped,
        requests=ctx.requests,
        cost=ctx.cost,
        metric=headline.key,
        rewrites_skipped=ctx.skipped,
        confidence=settings.confidence,
        dropped=tuple(ctx.dropped),
        planned_steps=planned_steps,
        steps=ctx.done,
    )


class _Dropped(Exception):
    """A planned candidate that cannot be made (``reason``: why)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _ok(result: JudgeResult | None) -> Label | None:
    return result.label if result is not None and result.status == "ok" else None


def _coverage(judged: Sequence[Label | None]) -> float:
    return sum(j is not None for j in judged) / len(judged) if judged else 0.0


def _test_score(
    human: Sequence[Label],
    judged: Sequence[Label | None],
    scale: Scale,
    headline: MetricDef,
    settings: OptimizeSettings,
) -> tuple[float | None, tuple[float, float] | None]:
    values, interval = _scores(human, judged, scale, headline, settings)
    return values.get(headline.key), interval


def _test_ceiling(
    annotations: pd.DataFrame, split: Split, scale: Scale, settings: OptimizeSettings
) -> HumanCeiling | None:
    """The annotators' agreement on the test items: :func:`evalcore.report.human_ceiling`, the
    Calibrate page's human ceiling, on the items x annotators labels of the test part."""
    test = {str(i) for i in split.test}
    rows = annotations[[str(i) in test for i in annotations.index]]
    if rows.shape[1] < 2 or rows.empty:
        return None
    return human_ceiling(rows, scale, n_boot=settings.n_boot, seed=settings.split_seed)


def estimate_optimize(
    items: Sequence[JudgeItem],
    human: Mapping[str, Label],
    start: JudgeTemplate,
    *,
    model: str,
    optimizer_model: str,
    settings: OptimizeSettings,
    prices: Mapping[str, tuple[float, float]] | None = None,
    cache: ReplyCache | None = None,
    endpoint: str = "",
    manual: Sequence[JudgeTemplate] = (),
    split: Split | None = None,
) -> tuple[int, int, int, float | None]:
    """An upper estimate of an optimisation: (requests, tokens in, tokens out, cost).

    Every candidate is assumed to be made and every finalist judged; few-shot candidates are priced
    at the full token budget per request. Requests ``cache`` already answers for the start are not
    counted. ``cost`` is None when a model has no price. ``split`` is a saved split to reuse;
    without one it is made as :func:`optimize` makes it (raising :class:`SplitTooSmallError`).
    """
    split, by_id, _ = _split_items(items, human, settings, split)
    dev = [by_id[i] for i in split.dev]
    test = [by_id[i] for i in split.test]
    base_dev = estimate(dev, start, cache, prices, model=model, endpoint=endpoint)
    base_test = estimate(test, start, None, prices, model=model, endpoint=endpoint)
    per_in = base_test.expected_tokens_in / max(1, base_test.n_requests)
    per_out = base_test.expected_tokens_out / max(1, base_test.n_requests)
    n_cand = settings.fewshot_candidates + settings.rewrites + len(manual)
    extra = settings.fewshot_candidates * settings.token_budget
    requests = base_dev.n_requests + n_cand * len(dev) + (1 + settings.finalists) * len(test)
    judge_in = (
        base_dev.expected_tokens_in
        + int(per_in * (n_cand * len(dev) + (1 + settings.finalists) * len(test)))
        + extra * len(dev)
    )
    judge_out = int(per_out * requests)
    item_tokens = per_in
    opt_in = int(settings.rewrites * (500 + settings.disagreements_shown * (item_tokens + 60)))
    opt_out = settings.rewrites * OPTIMIZER_REPLY_TOKENS
    judge_cost = estimate_cost(model, judge_in, judge_out, prices)
    opt_cost = estimate_cost(optimizer_model, opt_in, opt_out, prices) if settings.rewrites else 0.0
    cost = None if judge_cost is None or opt_cost is None else judge_cost + opt_cost
    return requests + settings.rewrites, judge_in + opt_in, judge_out + opt_out, cost
