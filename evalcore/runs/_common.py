"""What every kind of stored job reads from the store before it judges anything.

A live run, a batch run, a chunk of a run, "try it", an estimate and an optimisation all need the
dataset's items as the runner sees them (:func:`judge_items`), the stored endpoint as the client
sees it under the server's key policy (:func:`endpoint_of`, :func:`key_policy`; refused before the
first request when it could not authenticate, :func:`check_endpoint`), the price table
(:func:`store_prices`) and a runner for a stored version's content (:func:`make_runner`, which hands
the stored forms to the one runner factory, :func:`evalcore.judge.builtins.build_runner`). They
live here, below every module that carries out a job, so that the modules of ``evalcore.runs``
import each other as a tree.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

from openai import AsyncOpenAI

from evalcore.errors import ConfigError
from evalcore.judge import (
    Endpoint,
    JudgeItem,
    JudgeTemplate,
    Runner,
    RunSettings,
    key_refusal,
    plain_fields,
    resolve_api_key,
)
from evalcore.judge.builtins import Runnable, build_runner, runner_model
from evalcore.runs._versions import ContentLike, as_content, metric_of, template_of_content
from evalcore.secrets import check_headers
from evalcore.store import EndpointRecord, JudgeRunRecord, Store

__all__ = [
    "SETTING_FIELDS",
    "Client",
    "check_endpoint",
    "endpoint_of",
    "judge_items",
    "key_policy",
    "make_runner",
    "resolve_model",
    "run_settings",
    "runnable_of",
    "store_prices",
    "template_of",
]

#: Where a job's requests go instead of the endpoint's own client: an ``openai.AsyncOpenAI``, or a
#: factory of one (tests, benchmarks, a batch's replies).
Client: TypeAlias = AsyncOpenAI | Callable[[], AsyncOpenAI]

#: Settings of :class:`~evalcore.judge.RunSettings` kept in a run's ``settings`` JSON.
SETTING_FIELDS = tuple(
    f.name for f in dataclasses.fields(RunSettings) if f.name not in ("order_mode", "seed")
)

#: Other names templates may use for the canonical item fields (Azure, RAGAS and Vertex wording).
_ALIASES = {
    "question": "prompt",
    "user_input": "prompt",
    "answer": "response",
    "ground_truth": "reference",
    "baseline_model_response": "response_b",
}


def judge_items(
    store: Store, dataset_id: int, item_ids: Sequence[str] | None = None
) -> tuple[list[JudgeItem], dict[str, int]]:
    """The items of a dataset as the runner sees them, and their database ids by item id.

    Fields are the canonical ones (``prompt``, ``response``, ``context``, ``reference``,
    ``response_a``, ``response_b``), the dataset's other item fields (``DatasetRecord.item_fields``:
    the columns marked so when the file was imported; never its label columns or its metadata),
    and the aliases other systems use (``question``, ``answer``, ``ground_truth``,
    ``baseline_model_response``; for a pairwise item ``response`` is ``response_a`` when it has no
    ``response``). ``item_ids`` keeps only those items.
    """
    frame = store.items_frame(dataset_id)
    dataset = store.get_dataset(dataset_id)
    hidden = set(dataset.metadata_columns) - set(dataset.item_fields)
    frame = frame.drop(columns=[c for c in frame.columns if c in hidden])
    if item_ids is not None:
        wanted = {str(i) for i in item_ids}
        frame = frame[frame["item_id"].astype(str).isin(wanted)]
    items: list[JudgeItem] = []
    db_ids: dict[str, int] = {}
    for db_id, row in zip(frame.index.tolist(), frame.to_dict("records"), strict=True):
        external = str(row.pop("item_id"))
        fields = plain_fields(row)
        if fields.get("response") is None and fields.get("response_a") is not None:
            fields["response"] = fields["response_a"]
        for alias, source in _ALIASES.items():
            fields.setdefault(alias, fields.get(source))
        items.append(JudgeItem(external, fields))
        db_ids[external] = int(db_id)
    return items, db_ids


def template_of(store: Store, version_id: int) -> JudgeTemplate:
    """The judge template of a stored template version.

    Raises :class:`~evalcore.errors.ConfigError` for a version that records a pipeline or function
    metric (``factual_correctness``, ``f1_score`` …), which is not a judge template.
    """
    return template_of_content(store.get_template_version(version_id).parsed)


def run_settings(run: JudgeRunRecord) -> RunSettings:
    """The runner settings recorded with a run."""
    known = {k: v for k, v in run.settings.items() if k in SETTING_FIELDS}
    return RunSettings(**known, order_mode=run.order_mode, seed=run.seed or 0)


def endpoint_of(record: EndpointRecord, allowed_key_names: Sequence[str] = ()) -> Endpoint:
    """The judge client's view of a stored endpoint (the key stays in the environment).

    A stored endpoint is always under the server's key policy: its key variable must be one that
    :func:`evalcore.secrets.key_name_allowed` accepts with ``allowed_key_names`` (the server
    setting, see :func:`key_policy`), and its headers may carry no credential, even when the row
    was saved before the policy existed.
    """
    if not record.base_url:
        raise ConfigError(f"endpoint {record.name!r} has no base URL")
    check_headers(record.extra, path=f"endpoint {record.name!r}: extra")  # rows saved before
    return Endpoint(
        record.name,
        base_url=record.base_url,
        kind=record.kind,
        api_key_env=record.api_key_env,
        api_version=record.api_version,
        default_model=record.default_model or "",
        headers=tuple(sorted((record.extra.get("headers") or {}).items())),
        allowed_key_names=tuple(allowed_key_names),
    )


def key_policy(store: Store) -> tuple[str, ...]:
    """The extra key variable names an admin allowed (the server setting ``allowed_key_names``)."""
    value = store.get_server_setting("allowed_key_names", [])
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    return tuple(str(v).strip() for v in value or () if str(v).strip())


def check_endpoint(
    store: Store,
    record: EndpointRecord,
    *,
    secrets: Mapping[str, Any] | None = None,
    key_here: bool = True,
) -> Endpoint:
    """The endpoint as the judge client uses it, refused now when its requests could not
    authenticate: the reason a try, a run or an optimisation would fail with before its first
    request, in the same words (:func:`evalcore.judge.resolve_api_key`). Refused: a key variable
    the server's key policy does not allow or that is not set here (one message for both), and no
    key variable where the host needs one (:func:`evalcore.judge.key_refusal`).

    ``key_here=False`` skips looking the variable up: the requests are sent by other processes
    (``evalcore worker`` with external workers), which have keys of their own.
    """
    endpoint = endpoint_of(record, key_policy(store))
    if key_here:
        resolve_api_key(endpoint, secrets)
    else:
        refusal = key_refusal(endpoint)
        if refusal is not None:
            raise refusal
    return endpoint


def store_prices(store: Store) -> dict[str, tuple[float, float]]:
    """The model prices set on the Settings page: dollars per million input and output tokens."""
    return {m: (p.input_per_mtok, p.output_per_mtok) for m, p in store.get_model_prices().items()}


def runnable_of(content: ContentLike) -> Runnable:
    """What a stored version's content runs: its registered metric (as configured), else its judge
    template."""
    parsed = as_content(content)
    spec = metric_of(parsed)
    return spec if spec is not None else template_of_content(parsed)


def resolve_model(
    content: ContentLike, model: str | None = None, endpoint: EndpointRecord | None = None
) -> str | None:
    """The model a version's content runs with: ``model`` when given, else the template's (or
    pipeline's) own model setting, else the endpoint's default model; ``None`` for a function
    metric, which needs none. Raises :class:`~evalcore.errors.ConfigError` when none is named
    (the rule of :func:`evalcore.judge.builtins.runner_model`)."""
    default = (endpoint.default_model or "") if endpoint is not None else ""
    return runner_model(runnable_of(content), model, default=default)


def make_runner(
    content: ContentLike,
    *,
    endpoint: EndpointRecord | None,
    model: str | None,
    settings: RunSettings | None = None,
    prices: Mapping[str, tuple[float, float]] | None = None,
    secrets: Mapping[str, Any] | None = None,
    client: Client | None = None,
    allowed_key_names: Sequence[str] = (),
) -> Runner:
    """The runner of a stored version's content, from the one runner factory
    (:func:`evalcore.judge.builtins.build_runner`): a :class:`~evalcore.judge.JudgeRunner` for a
    judge template, a :class:`~evalcore.judge.builtins.MetricRunner` for a built-in metric (its
    inputs prepared and checked, its verdicts added).

    ``client`` replaces the endpoint's client (a batch's replies, tests, benchmarks). The API key is
    looked up now, under the server's key policy (``allowed_key_names``, see :func:`endpoint_of`),
    so a missing or refused key fails here, with a message that does not say whether the variable
    exists. Function metrics need no endpoint.
    """
    what = runnable_of(content)
    default = (endpoint.default_model or "") if endpoint is not None else ""
    chosen = runner_model(what, model, default=default)
    target = None
    if endpoint is not None and client is None and chosen is not None:
        target = endpoint_of(endpoint, allowed_key_names)
    return build_runner(
        what,
        endpoint=target,
        client=client,
        model=chosen,
        settings=settings,
        prices=prices,
        secrets=secrets,
    )
