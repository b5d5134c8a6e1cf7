"""The registry: built-ins and a user's own metrics registered and run the same way; built-in
templates copied, edited and compared as versions; specs validated."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pytest

from evalcore.errors import ConfigError, MissingVariableError
from evalcore.judge import (
    JudgeItem,
    JudgeResult,
    JudgeTemplate,
    MemorySink,
    OutputSpec,
    diff_templates,
)
from evalcore.judge.builtins import (
    MetricExample,
    MetricInput,
    MetricRunner,
    MetricSpec,
    PipelineMetric,
    StepPrompt,
    Steps,
    builtin_names,
    builtin_template,
    catalogue,
    check_inputs,
    get_metric,
    json_list,
    list_metrics,
    register_metric,
    unregister_metric,
)
from evalcore.labels import LIKERT_5, PASS_FAIL
from evalcore.testing import FakeOpenAI
from tests.builtins.helpers import FAST, by_id, client_for, route, user_text

BUILTINS = {
    "groundedness", "relevance", "relevance_conversation", "relevance_conversation_reference",
    "coherence", "fluency", "retrieval", "similarity", "f1_score", "instruction_following",
    "pairwise_instruction_following", "factual_correctness", "summarization_score",
    "hate_unfairness", "sexual", "violence", "self_harm",
}  # fmt: skip

ANSWER = MetricInput("answer", "response", "the answer")


def test_every_builtin_is_registered() -> None:
    assert set(builtin_names()) == BUILTINS
    assert {s.name for s in list_metrics()} == BUILTINS
    assert {s.name for s in list_metrics(group="safety")} == {
        "hate_unfairness", "sexual", "violence", "self_harm",
    }  # fmt: skip
    kinds = {s.name: s.kind for s in list_metrics()}
    assert kinds["f1_score"] == "function"
    assert kinds["factual_correctness"] == kinds["summarization_score"] == "pipeline"
    assert {s.kind for s in list_metrics(group="quality")} == {"template"}


def test_unknown_and_duplicate_names() -> None:
    with pytest.raises(ConfigError, match="no metric named 'groundness'; the registered metrics"):
        get_metric("groundness")
    with pytest.raises(ConfigError, match="already registered"):
        register_metric(get_metric("fluency"))
    register_metric(get_metric("fluency").with_threshold(4), replace=True)
    assert get_metric("fluency").threshold == 4.0
    unregister_metric("fluency")
    with pytest.raises(ConfigError):
        get_metric("fluency")
    assert builtin_template("fluency").name == "fluency"  # the shipped one stays available


def _politeness() -> MetricSpec:
    template = JudgeTemplate(
        name="politeness",
        criterion="politeness",
        scale=LIKERT_5,
        system="You are a politeness judge.",
        user='Reply:\n{{ response }}\nRate 1-5 as JSON {"reason": ..., "score": n}',
        output=OutputSpec(structured=True),
    )
    return MetricSpec(
        name="politeness",
        title="Politeness",
        description="How polite is the reply?",
        kind="template",
        inputs=(ANSWER,),
        scale=LIKERT_5,
        threshold=4,
        example=MetricExample({"answer": "Thanks a lot!"}, '{"reason": "warm", "score": 5}'),
        template=template,
    )


def test_a_users_template_metric_works_like_a_builtin(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    register_metric(_politeness())
    fake = fake_server(
        lambda r: json.dumps({"reason": "ok", "score": 5 if "please" in user_text(r) else 3})
    )
    items = [JudgeItem("a", {"answer": "Yes, please."}), JudgeItem("b", {"response": "No."})]
    sink = MemorySink()
    MetricRunner("politeness", client_for(fake), settings=FAST, model="m").run_sync(items, sink)
    results = by_id(sink)
    assert (results["a"].label, results["a"].details["result"]) == (5.0, "pass")
    assert (results["b"].label, results["b"].details["result"]) == (3.0, "fail")  # 3 < 4
    with pytest.raises(MissingVariableError, match="metric 'politeness' cannot run: answer"):
        check_inputs(get_metric("politeness"), [JudgeItem("c", {"question": "hi"})])
    entry = next(e for e in catalogue() if e.name == "politeness")
    assert (entry.threshold, entry.group) == ("4", "custom")


def _exact_match(items: list[JudgeItem], *, threshold: float) -> list[JudgeResult]:
    out = []
    for item in items:
        score = float(item.fields["response"].strip() == item.fields["reference"].strip())
        label = "pass" if score >= threshold else "fail"
        out.append(JudgeResult(item.item_id, "AB", "ok", label=label, score=score))
    return out


def test_a_users_function_metric(fake_server: Callable[..., FakeOpenAI]) -> None:
    register_metric(
        MetricSpec(
            name="exact_match",
            title="Exact match",
            description="Is the response the reference?",
            kind="function",
            inputs=(ANSWER, MetricInput("ground_truth", "reference")),
            scale=PASS_FAIL,
            threshold=1.0,
            function=_exact_match,
        )
    )
    items = [
        JudgeItem("1", {"answer": "Paris", "ground_truth": "Paris "}),
        JudgeItem("2", {"answer": "Lyon", "ground_truth": "Paris"}),
    ]
    sink = MemorySink()
    summary = MetricRunner("exact_match").run_sync(items, sink)
    assert (summary.ok, summary.requests) == (2, 0)
    assert {k: r.label for k, r in by_id(sink).items()} == {"1": "pass", "2": "fail"}


@dataclass(frozen=True)
class _Shout(PipelineMetric):
    """A one-step pipeline of a user's own: how much of the response is in capitals."""

    def default_prompts(self) -> dict[str, StepPrompt]:
        return {"words": StepPrompt("words", "You list loud words.", "List loud words: {{ text }}")}

    async def evaluate(self, fields: Mapping[str, Any], steps: Steps) -> tuple[float, str]:
        words = await steps.ask(
            self.prompt("words"), {"text": fields["response"]}, lambda o: json_list(o, "words")
        )
        steps.details["words"] = words
        share = len(words) / len(str(fields["response"]).split())
        return share, f"{len(words)} loud words"


def test_a_users_pipeline_metric(fake_server: Callable[..., FakeOpenAI]) -> None:
    register_metric(
        MetricSpec(
            name="shouting",
            title="Shouting",
            description="Share of words in capitals.",
            kind="pipeline",
            inputs=(ANSWER,),
            scale=PASS_FAIL,
            threshold=0.5,
            pipeline=_Shout("shouting"),
        )
    )
    fake = fake_server(route({"loud words": {"words": ["STOP", "NOW"]}}))
    sink = MemorySink()
    MetricRunner("shouting", client_for(fake), settings=FAST, model="m").run_sync(
        [JudgeItem("s", {"answer": "STOP it NOW"})], sink
    )
    result = by_id(sink)["s"]
    assert (result.score, result.label, result.details["words"]) == (2 / 3, "pass", ["STOP", "NOW"])
    assert fake.requests[0].body["response_format"] == {"type": "json_object"}


def test_copying_and_editing_a_builtin_template_makes_a_new_version(
    fake_server: Callable[..., FakeOpenAI],
) -> None:
    original = builtin_template("groundedness")
    edited = replace(
        original, system=original.system + "\nBe strict: any unsupported detail is 2 at most."
    )
    assert edited.content_hash != original.content_hash
    assert "+Be strict" in diff_templates(original, edited)
    assert JudgeTemplate.load_toml(edited.to_toml()) == edited  # saved and read back as TOML
    assert builtin_template("groundedness") == original  # the shipped one is untouched
    v2 = register_metric(
        replace(get_metric("groundedness").with_template(edited), name="groundedness_v2")
    )
    assert (v2.version, get_metric("groundedness").version) == (edited.version, original.version)

    fake = fake_server(lambda r: json.dumps(
        {"reason": "r", "score": 2 if "Be strict" in r["messages"][0]["content"] else 4}
    ))  # fmt: skip
    items = [JudgeItem("i", {"context": "The sky is blue.", "answer": "The sky is blue and warm."})]
    one, two = MemorySink(), MemorySink()
    MetricRunner("groundedness", client_for(fake), settings=FAST, model="m").run_sync(items, one)
    MetricRunner("groundedness_v2", client_for(fake), settings=FAST, model="m").run_sync(items, two)
    assert (by_id(one)["i"].label, by_id(two)["i"].label) == (4.0, 2.0)
    assert by_id(two)["i"].details["result"] == "fail"


def test_an_edited_template_must_keep_the_metrics_scale() -> None:
    original = builtin_template("fluency")
    with pytest.raises(ConfigError, match="differs from its template"):
        get_metric("fluency").with_template(replace(original, scale=PASS_FAIL, output=OutputSpec()))
    with pytest.raises(ConfigError, match="is a pipeline metric, not a template"):
        builtin_template("factual_correctness")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"name": "Bad Name"}, "lower-case letters"),
        ({"kind": "function"}, "needs its function and no other engine"),
        ({"threshold": "high"}, "threshold must be a number"),
        ({"template": None}, r"needs its template and no other engine \(it has: none\)"),
    ],
)
def test_specs_are_validated(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        replace(get_metric("coherence"), **changes)


def test_thresholds_are_checked_against_the_scale() -> None:
    with pytest.raises(ConfigError, match="pairwise choice; it has no threshold"):
        get_metric("pairwise_instruction_following").with_threshold(3)
    with pytest.raises(ConfigError, match="one of very low, low, medium, high"):
        get_metric("violence").with_threshold(3)
    assert get_metric("violence").with_threshold("LOW").threshold == "low"
    assert get_metric("f1_score").with_threshold("0.7").threshold == 0.7
    spec = get_metric("factual_correctness").with_threshold(0.8)
    assert spec.pipeline is not None
    assert spec.pipeline.threshold == 0.8  # the pipeline labels items with the spec's threshold
