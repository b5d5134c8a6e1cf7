"""Judges: templates, reply parsing, the OpenAI-compatible client and the async runner.

This file is the whole public surface; the implementation lives in private modules.

- :class:`JudgeTemplate` (with :class:`ModelSettings` and :class:`OutputSpec`): an immutable,
  content-hashed template version, read from and written to TOML; :func:`render` (within a
  :class:`RenderBudget` of loop iterations, characters and time),
  :func:`check_variables`, :func:`template_variables`, :func:`diff_templates`.
- :func:`parse_reply`, :func:`response_format_for`, :func:`logprob_score`,
  :func:`aggregate_samples`: reading replies; a reply that does not parse is ``unparsed`` with the
  reason, never a wrong label. :func:`label_probabilities` reads the probability of every label
  from an endpoint's logprobs (:class:`LabelProbabilities`); :func:`sample_shares` and
  :func:`vote` do it from samples. Every :class:`JudgeResult` carries ``probabilities`` and
  ``confidence`` when they are known.
- Juries (:func:`combine_verdicts`, :func:`jury_results`, :data:`JURY_METHODS`): one verdict per
  item from several judges' verdicts, by majority, mean or weights, with the members' agreement
  as its confidence.
- :class:`Endpoint`, :func:`resolve_api_key` (:func:`key_refusal`: why an endpoint cannot
  authenticate, whatever the variables hold), :func:`make_client`, :func:`client_factory`,
  :func:`estimate_cost`: where requests go; keys come from the environment or secrets by name. An
  endpoint may list several base URLs (a pool of replicas): :class:`PoolClient` spreads requests
  over a :class:`ReplicaPool` by fewest outstanding and rests failing replicas;
  :func:`endpoint_identity` is what the reply cache keys an endpoint (or pool) by. Every client
  follows a redirect only within the endpoint's own scheme, host and port; one to another host is
  a :class:`RedirectRefusedError` (:func:`same_origin_client` adds that rule to an HTTP client).
- :class:`JudgeRunner` with :class:`RunSettings`: concurrency, rate limits, retries, pairwise orders;
  results (:class:`JudgeResult`) go to a :class:`ResultSink` (:class:`MemorySink`,
  :class:`JsonlSink`) as they arrive; replies are cached by :func:`cache_key` (endpoint, model,
  parameters, messages) in a :class:`ReplyCache` (:class:`MemoryCache`, :class:`SqliteCache`, one
  shared file at :func:`default_cache_path` for the command line); :func:`estimate` prices a run
  beforehand. Batch mode (:func:`run_batch`, :class:`BatchOptions`, a :class:`BatchLedger` of the
  provider's batch ids) sends a run through a Batch API; :func:`write_batch_files` and
  :class:`BatchOutput` write and read the OpenAI batch format that ``vllm run-batch`` shares, and
  :class:`BatchReplies` hands the replies to the normal runner. :class:`Runner` is the interface every runner offers (this one and
  :class:`~evalcore.judge.builtins.MetricRunner`).
  :meth:`JudgeRunner.session` (:class:`RunnerSession`, :class:`CallReply`) sends single requests
  through the same path, for multi-step metrics.
- The built-in metric library (Azure, Vertex and RAGAS-style metrics, a registry of your own) is
  :mod:`evalcore.judge.builtins`.

>>> from evalcore.judge import JudgeTemplate, render
>>> from evalcore.labels import PASS_FAIL
>>> t = JudgeTemplate("grounded", "groundedness", PASS_FAIL, "", "Is it grounded? {{ response }}")
>>> t.label_field, render(t, {"response": "Paris."}, item_id="1")
('label', [{'role': 'user', 'content': 'Is it grounded? Paris.'}])
"""

from evalcore.judge._batch import (
    BATCH_URL,
    MAX_BATCH_BYTES,
    MAX_BATCH_REQUESTS,
    BatchEntry,
    BatchFile,
    BatchLedger,
    BatchOptions,
    BatchOutput,
    BatchRequest,
    BatchRetry,
    JsonBatchLedger,
    run_batch,
    write_batch_files,
)
from evalcore.judge._budget import DEFAULT_BUDGET, RenderBudget
from evalcore.judge._cache import (
    CACHE_DIR_ENV,
    MemoryCache,
    ReplyCache,
    SqliteCache,
    cache_key,
    default_cache_path,
    get_many,
    normalise_base_url,
)
from evalcore.judge._client import (
    DEFAULT_PRICES,
    NO_KEY,
    Endpoint,
    client_factory,
    estimate_cost,
    key_refusal,
    make_client,
    resolve_api_key,
)
from evalcore.judge._jury import (
    JURY_METHODS,
    JuryMethod,
    JuryVerdict,
    check_jury,
    combine_verdicts,
    jury_results,
    member_verdicts,
)
from evalcore.judge._parse import (
    MAX_JSON_STARTS,
    MAX_REPLY_CHARS,
    LabelProbabilities,
    ParsedReply,
    TokenLogprobs,
    aggregate_samples,
    label_probabilities,
    logprob_score,
    mean_probabilities,
    nearest_label,
    parse_reply,
    response_format_for,
    sample_shares,
    scale_description,
    vote,
)
from evalcore.judge._pool import (
    REST_BASE_S,
    REST_MAX_S,
    PoolClient,
    ReplicaPool,
    ReplicaStats,
    base_urls,
    endpoint_identity,
    replica_pool,
)
from evalcore.judge._redirects import REDIRECT_REFUSED, RedirectRefusedError, same_origin_client
from evalcore.judge._requests import (
    BatchReplies,
    CallReply,
    OrderMode,
    RunnerSession,
    RunSettings,
    SamplesBy,
)
from evalcore.judge._result import Estimate, JudgeResult, Order, Progress, RunSummary, Status
from evalcore.judge._runner import (
    SWAPPED_FIELDS,
    TYPICAL_REPLY_TOKENS,
    JudgeRunner,
    Runner,
    estimate,
    orders_for,
    request_params,
)
from evalcore.judge._sink import FINISHED_STATUSES, JsonlSink, MemorySink, ResultSink
from evalcore.judge._template import (
    BUILTIN_VARIABLES,
    JudgeItem,
    JudgeTemplate,
    Kind,
    ModelSettings,
    OutputSpec,
    check_item_ids,
    check_variables,
    diff_templates,
    plain_fields,
    render,
    template_variables,
)

__all__ = [
    "BATCH_URL",
    "BUILTIN_VARIABLES",
    "CACHE_DIR_ENV",
    "DEFAULT_BUDGET",
    "DEFAULT_PRICES",
    "FINISHED_STATUSES",
    "JURY_METHODS",
    "MAX_BATCH_BYTES",
    "MAX_BATCH_REQUESTS",
    "MAX_JSON_STARTS",
    "MAX_REPLY_CHARS",
    "NO_KEY",
    "REDIRECT_REFUSED",
    "REST_BASE_S",
    "REST_MAX_S",
    "SWAPPED_FIELDS",
    "TYPICAL_REPLY_TOKENS",
    "BatchEntry",
    "BatchFile",
    "BatchLedger",
    "BatchOptions",
    "BatchOutput",
    "BatchReplies",
    "BatchRequest",
    "BatchRetry",
    "CallReply",
    "Endpoint",
    "Estimate",
    "JsonBatchLedger",
    "JsonlSink",
    "JudgeItem",
    "JudgeResult",
    "JudgeRunner",
    "JudgeTemplate",
    "JuryMethod",
    "JuryVerdict",
    "Kind",
    "LabelProbabilities",
    "MemoryCache",
    "MemorySink",
    "ModelSettings",
    "Order",
    "OrderMode",
    "OutputSpec",
    "ParsedReply",
    "PoolClient",
    "Progress",
    "RedirectRefusedError",
    "RenderBudget",
    "ReplicaPool",
    "ReplicaStats",
    "ReplyCache",
    "ResultSink",
    "RunSettings",
    "RunSummary",
    "Runner",
    "RunnerSession",
    "SamplesBy",
    "SqliteCache",
    "Status",
    "TokenLogprobs",
    "aggregate_samples",
    "base_urls",
    "cache_key",
    "check_item_ids",
    "check_jury",
    "check_variables",
    "client_factory",
    "combine_verdicts",
    "default_cache_path",
    "diff_templates",
    "endpoint_identity",
    "estimate",
    "estimate_cost",
    "get_many",
    "jury_results",
    "key_refusal",
    "label_probabilities",
    "logprob_score",
    "make_client",
    "mean_probabilities",
    "member_verdicts",
    "nearest_label",
    "normalise_base_url",
    "orders_for",
    "parse_reply",
    "plain_fields",
    "render",
    "replica_pool",
    "request_params",
    "resolve_api_key",
    "response_format_for",
    "run_batch",
    "same_origin_client",
    "sample_shares",
    "scale_description",
    "template_variables",
    "vote",
    "write_batch_files",
]
