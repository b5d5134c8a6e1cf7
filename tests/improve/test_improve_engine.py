"""The optimiser ranks and proves with the calibration engine, and its settings are declared once.

Every figure of a report is recomputed here from the same judge replies (the shared cache answers
them) with the engine's own functions, :func:`evalcore.metrics.calibrate` and
:func:`evalcore.metrics.compare`, at the report's confidence; the human ceiling is
:func:`evalcore.report.human_ceiling` on the test items. FakeOpenAI's scripted judge over HTTP,
through the real openai client; nothing of evalcore is mocked.
"""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from evalcore.errors import ConfigError
from evalcore.improve import (
    OPTIMIZE_SETTINGS,
    OptimizeReport,
    OptimizeSettings,
    optimize,
    optimize_setting,
)
from evalcore.judge import JudgeTemplate, MemoryCache, MemorySink
from evalcore.judge.builtins import build_runner
from evalcore.metrics import calibrate, compare
from evalcore.report import human_ceiling
from evalcore.testing import FakeOpenAI, Scripted
from tests.improve.test_improve_optimize import OPTIMIZER, _factory, _items

SMALL = OptimizeSettings(fewshot_candidates=3, rewrites=0, finalists=2, n_boot=400)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    started = FakeOpenAI(reply=Scripted(optimizer_model=OPTIMIZER)).start()
    yield started
    started.stop()


@pytest.fixture
def start() -> JudgeTemplate:
    from evalcore.labels import PASS_FAIL

    return JudgeTemplate(
        "grounded",
        "groundedness",
        PASS_FAIL,
        "You check whether a reply is supported by its source.",
        'Reply to grade:\n{{ response }}\n\nAnswer as JSON: {"reason": "...", "label": "pass or fail"}',
    )


def _optimize(
    server: FakeOpenAI,
    start: JudgeTemplate,
    settings: OptimizeSettings,
    cache: MemoryCache,
    **kw: Any,
) -> OptimizeReport:
    items, human, comments = _items(120)
    return optimize(
        items,
        human,
        start,
        judge_client=_factory(server),
        model="fake-judge",
        optimizer_client=_factory(server),
        optimizer_model=OPTIMIZER,
        settings=settings,
        cache=cache,
        comments=comments,
        **kw,
    )


def _labels_on(
    server: FakeOpenAI, template: JudgeTemplate, item_ids: list[str], cache: MemoryCache
) -> list[Any]:
    """The labels a template gave the items in the optimisation (the cache answers every one)."""
    items = {i.item_id: i for i in _items(120)[0]}
    runner = build_runner(template, client=_factory(server), model="fake-judge")
    sink = MemorySink()
    sent = server.count
    summary = runner.run_sync([items[i] for i in item_ids], sink, cache)
    runner.close()
    assert server.count == sent
    assert summary.cached == len(item_ids)
    found = {r.item_id: r for r in sink}
    return [found[i].label if found[i].status == "ok" else None for i in item_ids]


def test_every_figure_is_the_calibration_engines(server: FakeOpenAI, start: JudgeTemplate) -> None:
    cache = MemoryCache()
    settings = dataclasses.replace(SMALL, confidence=0.9)
    report = _optimize(server, start, settings, cache)
    assert report.stopped is None
    assert report.finalists
    _, human, _ = _items(120)
    test_ids, dev_ids = list(report.split.test), list(report.split.dev)
    test_human = [human[i] for i in test_ids]
    engine = {"n_boot": 400, "confidence": 0.9, "seed": settings.split_seed}

    # a candidate on dev: every metric and the headline's interval from calibrate()
    candidate = report.candidates[0]
    judged = _labels_on(server, candidate.candidate.template, dev_ids, cache)
    kept = [(human[i], j) for i, j in zip(dev_ids, judged, strict=True) if j is not None]
    expected = calibrate(
        [h for h, _ in kept],
        [j for _, j in kept],
        labels=list(start.scale.labels),
        kind="binary",
        **engine,
    )
    assert candidate.dev["accuracy_balanced"] == pytest.approx(expected.accuracy_balanced)
    assert candidate.dev["cohen_kappa"] == pytest.approx(expected.cohen_kappa)
    assert candidate.dev_interval == pytest.approx(expected.ci["accuracy_balanced"])

    # a finalist on test: its figure, and the paired difference from the start with compare()
    start_labels = _labels_on(server, start, test_ids, cache)
    final = report.finalists[0]
    final_labels = _labels_on(server, final.candidate.template, test_ids, cache)
    paired = compare(
        test_human,
        start_labels,
        final_labels,
        labels=list(start.scale.labels),
        metric="accuracy_balanced",
        **engine,
    )
    assert final.difference == pytest.approx(paired.diff_metric)
    assert final.difference_interval == pytest.approx(paired.diff_metric_ci)
    assert final.mcnemar_p == pytest.approx(paired.mcnemar_p)
    assert final.test == pytest.approx(paired.metric_b)
    assert report.start_test.test == pytest.approx(paired.metric_a)
    assert final.beats_start == (paired.diff_metric_ci[0] > 0)  # type: ignore[index]
    assert report.to_dict()["confidence"] == 0.9


def test_the_confidence_is_a_setting_not_a_fixed_95_percent(
    server: FakeOpenAI, start: JudgeTemplate
) -> None:
    cache = MemoryCache()
    wide = _optimize(server, start, dataclasses.replace(SMALL, confidence=0.99), cache)
    sent = server.count
    narrow = _optimize(server, start, dataclasses.replace(SMALL, confidence=0.8), cache)
    assert server.count == sent  # the second one is answered from the cache: the same labels
    for a, b in [
        (wide.start.dev_interval, narrow.start.dev_interval),
        (wide.finalists[0].difference_interval, narrow.finalists[0].difference_interval),
    ]:
        assert a is not None
        assert b is not None
        # the same resamples: the 80% interval lies within the 99% one
        assert a[0] <= b[0] <= b[1] <= a[1]
        assert (b[1] - b[0]) < (a[1] - a[0])
    assert wide.to_dict()["confidence"] == 0.99


def test_the_human_ceiling_is_the_calibrate_pages_on_the_test_items(
    server: FakeOpenAI, start: JudgeTemplate
) -> None:
    _, human, _ = _items(120)
    # three annotators: the first agrees with the label everywhere, the others on most items
    flip = {"pass": "fail", "fail": "pass"}
    rows = {
        i: [h, h if n % 4 else flip[h], h if n % 5 else flip[h]]
        for n, (i, h) in enumerate(human.items())
    }
    annotations = pd.DataFrame.from_dict(rows, orient="index", columns=["ann", "bob", "cy"])
    report = _optimize(server, start, SMALL, MemoryCache(), annotations=annotations)
    expected = human_ceiling(
        annotations.loc[list(report.split.test)],
        start.scale,
        n_boot=SMALL.n_boot,
        seed=SMALL.split_seed,
    )
    assert report.ceiling is not None
    assert expected is not None
    assert report.ceiling.to_dict() == expected.to_dict()
    assert report.ceiling.pairwise_kappa.equals(expected.pairwise_kappa)
    shown = report.to_dict()
    assert shown["ceiling"] == pytest.approx(expected.krippendorff_alpha)
    assert shown["human_ceiling"] == expected.to_dict()
    assert 0 < shown["ceiling"] < 1

    alone = _optimize(server, start, SMALL, MemoryCache(), annotations=annotations[["ann"]])
    assert alone.ceiling is None
    assert alone.to_dict()["ceiling"] is None


def test_the_settings_are_declared_once_with_their_bounds() -> None:
    defaults = OptimizeSettings()
    for setting in OPTIMIZE_SETTINGS:
        assert getattr(defaults, setting.name) == setting.default
        assert setting.label
        assert setting.help
    assert [f.name for f in dataclasses.fields(OptimizeSettings)] == [
        s.name for s in OPTIMIZE_SETTINGS
    ]
    with pytest.raises(ConfigError, match=r"Test share must be between 0\.1 and 0\.9") as refused:
        OptimizeSettings(test_share=1.5)
    assert refused.value.column == "test_share"
    with pytest.raises(ConfigError, match="Finalists is a whole number"):
        OptimizeSettings(finalists=2.5)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="Confidence must be"):
        OptimizeSettings(confidence=1.0)
    assert OptimizeSettings(max_requests=None).max_requests is None  # no cap
    assert optimize_setting("budget_usd").optional


def test_the_headline_is_a_higher_is_better_metric_of_every_class() -> None:
    assert OptimizeSettings(metric="cohen_kappa").headline("binary").key == "cohen_kappa"
    with pytest.raises(ConfigError, match="one class only"):
        OptimizeSettings(metric="tpr").headline("binary")
    with pytest.raises(ConfigError, match="not computed for binary"):
        OptimizeSettings(metric="spearman").headline("binary")
    with pytest.raises(ConfigError, match="unknown calibration metric"):
        OptimizeSettings(metric="nonsense").headline("binary")


def test_the_settings_table_imports_nothing_heavy() -> None:
    """The command line builds its options from the table while it builds its parser."""
    code = (
        "import sys, evalcore.improve as i\n"
        "assert i.OPTIMIZE_SETTINGS and i.OptimizeSettings().finalists == 3\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'numpy', 'pandas', 'openai', 'jinja2', 'sqlalchemy'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert not math.isnan(float(OptimizeSettings().test_share))
