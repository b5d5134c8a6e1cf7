"""Every built-in metric that asks a model, against the fake server: a reply that cannot be read
makes items ``unparsed`` with the reason (never a crash, never a label), and missing inputs are
refused before any request. (Replies that parse are tested metric by metric in the other files.)"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from evalcore.errors import MissingVariableError
from evalcore.judge import JudgeItem, MemorySink
from evalcore.judge.builtins import MetricRunner, builtin_names, get_metric
from evalcore.testing import FakeOpenAI
from tests.builtins.helpers import FAST, client_for

LLM_METRICS = [n for n in builtin_names() if get_metric(n).kind != "function"]

CONVERSATION = [
    {"role": "user", "content": "Is it open?"},
    {
        "role": "assistant",
        "content": "Yes.",
        "context": {"citations": [{"id": "d", "content": "Open daily."}]},
    },
]


def _complete_item(item_id: str) -> JudgeItem:
    """An item carrying every input any built-in reads."""
    return JudgeItem(
        item_id,
        {
            "question": f"Is it open? ({item_id})",
            "answer": "Yes, daily.",
            "response": "Yes, daily.",
            "context": "Open daily.",
            "ground_truth": "It is open every day.",
            "baseline_model_response": "Maybe.",
            "messages": json.dumps(CONVERSATION),
        },
    )


def test_every_model_metric_is_covered() -> None:
    assert len(LLM_METRICS) == 16  # 8 quality, 2 Vertex, 2 RAGAS, 4 safety


@pytest.mark.parametrize("metric", LLM_METRICS)
def test_an_unreadable_reply_is_unparsed_with_the_reason(
    fake_server: Callable[..., FakeOpenAI], metric: str
) -> None:
    fake = fake_server("Sorry, I lost my train of thought.")
    items = [_complete_item(f"row-{i}") for i in range(3)]
    sink = MemorySink()
    summary = MetricRunner(metric, client_for(fake), settings=FAST, model="m").run_sync(items, sink)
    assert (summary.unparsed, summary.ok, summary.failed) == (3, 0, 0)
    for result in sink:
        assert result.status == "unparsed"
        assert result.label is None
        assert result.error
        assert "Sorry, I lost my train of thought." in result.raw
    if get_metric(metric).kind == "pipeline":
        assert {r.error for r in sink} <= {
            "step decompose: no JSON object in the reply",
            "step keyphrases: no JSON object in the reply",
        }


@pytest.mark.parametrize("metric", LLM_METRICS)
def test_missing_inputs_are_refused_before_any_request(
    fake_server: Callable[..., FakeOpenAI], metric: str
) -> None:
    fake = fake_server("{}")
    items = [_complete_item("row-0"), JudgeItem("empty", {"note": "nothing to judge"})]
    with pytest.raises(MissingVariableError) as info:
        MetricRunner(metric, client_for(fake), settings=FAST, model="m").run_sync(items)
    message = str(info.value)
    assert message.startswith(f"metric {metric!r} cannot run: ")
    assert "('empty')" in message
    assert info.value.item_id == "empty"
    assert fake.count == 0
