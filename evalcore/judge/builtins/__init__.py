"""Built-in judge metrics and the registry your own metrics join.

This file is the whole public surface; the implementation lives in private modules, the template
metrics' prompts in the ``*.toml`` files beside them.

**Registry.** :func:`register_metric`, :func:`get_metric`, :func:`list_metrics`,
:func:`unregister_metric`, :func:`builtin_names`: a plain dict of :class:`MetricSpec` by name. A
spec says what a metric measures, the inputs it reads (:class:`MetricInput`, in the reference
system's words and as evalcore item fields), its scale, default threshold and pass rule
(:meth:`MetricSpec.passes`, :meth:`MetricSpec.verdict`, :meth:`MetricSpec.with_threshold`), an
example (:class:`MetricExample`) and how it is computed: a judge ``template``
(:func:`builtin_template` gives the shipped one to copy and edit), a multi-step ``pipeline``
(:class:`PipelineMetric`) or a ``function``.

**Running.** :func:`build_runner` is the one runner factory (a template's
:class:`~evalcore.judge.JudgeRunner` or a metric's :class:`MetricRunner`, with :func:`runner_model`
choosing the model); :class:`MetricRunner` runs any metric over items into a sink, with the judge
engine's client, retries, cache and resume; :func:`prepare_items` / :func:`check_inputs` refuse missing
inputs before any request; :func:`derive_fields` and :func:`render_conversation` make a
conversation readable to a judge (a conversation is judged as one item); :func:`configure_metric`
sets a pipeline's parameters.

**Metrics.** Azure quality (1–5 with a reason; pass = score ≥ 3): ``groundedness``, ``relevance``,
``relevance_conversation``, ``relevance_conversation_reference``, ``coherence``, ``fluency``,
``retrieval``, ``similarity``. Token F1 without a model: ``f1_score``. Vertex-style:
:func:`pointwise_metric`, :func:`pairwise_metric` (``instruction_following``,
``pairwise_instruction_following``), :func:`to_vertex_table`, :func:`results_from_vertex`,
:func:`combine_orders`. RAGAS-style pipelines: ``factual_correctness``
(:func:`factual_correctness`, :class:`FactualCorrectness`) and ``summarization_score``
(:func:`summarization`, :class:`SummarizationScore`). Safety severity (very low … high):
``hate_unfairness``, ``sexual``, ``violence``, ``self_harm``, with :func:`defect_rate`,
:func:`inject_jailbreak` and :func:`jailbreak_comparison`.

**Catalogue.** :func:`catalogue` (:class:`CatalogueEntry`) for the Judge page,
:func:`catalogue_markdown` for ``docs/metrics.md``.

>>> spec = get_metric("groundedness")
>>> spec.kind, spec.scale.display_labels, spec.passes(3.0), spec.passes(2.0)
('template', ['1', '2', '3', '4', '5'], True, False)
"""

from evalcore.judge.builtins._builtins import factual_correctness, register_builtins, summarization
from evalcore.judge.builtins._catalogue import (
    GROUP_NOTES,
    GROUP_TITLES,
    CatalogueEntry,
    catalogue,
    catalogue_markdown,
    entry_facts,
)
from evalcore.judge.builtins._factory import Runnable, build_runner, runner_model
from evalcore.judge.builtins._inputs import (
    check_inputs,
    conversation_turns,
    derive_fields,
    inject_jailbreak,
    prepare_items,
    render_conversation,
)
from evalcore.judge.builtins._pipeline import (
    PipelineMetric,
    ReplyError,
    StepPrompt,
    Steps,
    json_list,
    run_pipeline,
)
from evalcore.judge.builtins._ragas import FactualCorrectness, SummarizationScore, item_contexts
from evalcore.judge.builtins._registry import (
    builtin_names,
    builtin_template,
    get_metric,
    list_metrics,
    register_metric,
    unregister_metric,
)
from evalcore.judge.builtins._run import MetricRunner, configure_metric
from evalcore.judge.builtins._safety import (
    DefectRate,
    JailbreakComparison,
    defect_rate,
    jailbreak_comparison,
)
from evalcore.judge.builtins._spec import (
    FIELD_ALIASES,
    FunctionMetric,
    MetricExample,
    MetricInput,
    MetricKind,
    MetricSpec,
)
from evalcore.judge.builtins._text import token_f1_results
from evalcore.judge.builtins._vertex import (
    VERTEX_CHOICES,
    combine_orders,
    pairwise_metric,
    pointwise_metric,
    results_from_vertex,
    to_vertex_table,
)

__all__ = [
    "FIELD_ALIASES",
    "GROUP_NOTES",
    "GROUP_TITLES",
    "VERTEX_CHOICES",
    "CatalogueEntry",
    "DefectRate",
    "FactualCorrectness",
    "FunctionMetric",
    "JailbreakComparison",
    "MetricExample",
    "MetricInput",
    "MetricKind",
    "MetricRunner",
    "MetricSpec",
    "PipelineMetric",
    "ReplyError",
    "Runnable",
    "StepPrompt",
    "Steps",
    "SummarizationScore",
    "build_runner",
    "builtin_names",
    "builtin_template",
    "catalogue",
    "catalogue_markdown",
    "check_inputs",
    "combine_orders",
    "configure_metric",
    "conversation_turns",
    "defect_rate",
    "derive_fields",
    "entry_facts",
    "factual_correctness",
    "get_metric",
    "inject_jailbreak",
    "item_contexts",
    "jailbreak_comparison",
    "json_list",
    "list_metrics",
    "pairwise_metric",
    "pointwise_metric",
    "prepare_items",
    "register_metric",
    "render_conversation",
    "results_from_vertex",
    "run_pipeline",
    "runner_model",
    "summarization",
    "to_vertex_table",
    "token_f1_results",
    "unregister_metric",
]

register_builtins()
