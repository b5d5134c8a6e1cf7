"""Token F1 as a registered function metric: the score column and pass/fail at a threshold."""

from __future__ import annotations

import pytest

from evalcore.errors import ConfigError, MissingVariableError
from evalcore.judge import JudgeItem, MemorySink
from evalcore.judge.builtins import MetricRunner, get_metric
from tests.builtins.helpers import by_id

ITEMS = [
    # tokens cat sat / cat sat down: P 1, R 2/3 -> F1 2 * (2/3) / (5/3) = 0.8
    JudgeItem("a", {"answer": "The cat sat.", "ground_truth": "a cat sat down"}),
    # nothing in common -> 0.0
    JudgeItem("b", {"response": "dog", "reference": "cat"}),
    # "don't" -> "dont"; 3.14 -> "314": every token matches -> 1.0
    JudgeItem("c", {"response": "Don't use 3.14", "reference": "dont use 314"}),
]


def test_f1_score_column_and_verdicts_at_the_default_threshold() -> None:
    sink = MemorySink()
    summary = MetricRunner("f1_score").run_sync(ITEMS, sink)
    assert (summary.ok, summary.requests, summary.cost) == (3, 0, 0.0)
    results = by_id(sink)
    assert results["a"].score == pytest.approx(0.8)
    assert results["b"].score == 0.0
    assert results["c"].score == 1.0
    assert {k: r.label for k, r in results.items()} == {"a": "pass", "b": "fail", "c": "pass"}
    assert results["a"].details == {
        "f1_score": pytest.approx(0.8),
        "result": "pass",
        "threshold": 0.5,
    }


def test_f1_threshold_is_inclusive_and_changeable() -> None:
    sink = MemorySink()
    MetricRunner("f1_score", threshold=0.8).run_sync(ITEMS, sink)
    assert by_id(sink)["a"].label == "pass"  # 0.8 >= 0.8
    sink = MemorySink()
    MetricRunner(get_metric("f1_score").with_threshold(0.81)).run_sync(ITEMS, sink)
    assert by_id(sink)["a"].label == "fail"


def test_f1_refuses_missing_texts_and_resumes() -> None:
    with pytest.raises(MissingVariableError, match=r"ground_truth \(reference\) is missing"):
        MetricRunner("f1_score").run_sync([*ITEMS, JudgeItem("d", {"response": "x"})])
    sink = MemorySink()
    MetricRunner("f1_score").run_sync(ITEMS[:2], sink)
    summary = MetricRunner("f1_score").run_sync(ITEMS, sink)
    assert (summary.skipped, summary.ok) == (2, 1)


def test_llm_metrics_need_a_client() -> None:
    with pytest.raises(ConfigError, match="asks a model: give the runner a client"):
        MetricRunner("fluency")
