"""Endpoints, API keys, the OpenAI-compatible client and token prices.

An :class:`Endpoint` names where a judge is sent: any OpenAI-compatible base URL (OpenAI, vLLM, Ollama,
LiteLLM, a gateway) or an Azure OpenAI resource. It stores the *name* of the environment variable (or
Streamlit secret) that holds the API key, never the key: :func:`resolve_api_key` looks it up at the last
moment and the key then lives only inside the client object. It is never logged, stored, put into an
error message or shown by ``repr``.

An endpoint built from the server's settings carries the server's key policy
(``allowed_key_names``, see :mod:`evalcore.secrets`): its key must come from an allowed name, and a
missing or refused key gives one message that does not say whether the variable exists. An
endpoint made on one's own machine (the CLI's ``--api-key-env``) has no policy: any name will do.

Clients are made with ``max_retries=0``: evalcore's runner does its own retrying so that the number of
attempts per item is exact and visible.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from openai import AsyncAzureOpenAI, AsyncOpenAI

from evalcore.errors import ConfigError, JudgeError
from evalcore.judge._pool import (
    MAX_REPLICAS,
    PoolClient,
    ReplicaPool,
    base_urls,
    endpoint_identity,
    replica_pool,
)
from evalcore.judge._redirects import same_origin_client
from evalcore.secrets import host_needs_key, key_name_allowed, lookup_secret

__all__ = [
    "DEFAULT_PRICES",
    "NO_KEY",
    "ClientFactory",
    "Endpoint",
    "client_factory",
    "estimate_cost",
    "key_refusal",
    "make_client",
    "resolve_api_key",
]

#: The key sent to servers that need none (local Ollama or vLLM): the SDK insists on some value.
NO_KEY = "no-key-needed"

#: US dollars per million (input, output) tokens. A small starting table; pass your own ``prices``
#: mapping to override it. A model not listed has an unknown cost (``None``), never a made-up one.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "o4-mini": (1.10, 4.40),
}

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
_KEY_PREFIXES = ("sk-", "sk_", "bearer ", "gsk_", "xai-", "hf_", "aiza", "pk-", "rk-")


def _looks_like_a_key(value: str) -> bool:
    lowered = value.lower()
    if lowered.startswith(_KEY_PREFIXES):
        return True
    if not _NAME.match(value):
        return True
    # A long mixed-case token with digits and no separators reads as a secret, not as a name.
    has_mixed = any(c.islower() for c in value) and any(c.isupper() for c in value)
    return len(value) >= 24 and has_mixed and any(c.isdigit() for c in value) and "_" not in value


@dataclass(frozen=True)
class Endpoint:
    """Where judge requests go. ``api_key_env`` is the NAME of a variable, never the key itself.

    ``api_key_env=None`` is for local servers that need no key. ``headers`` are extra HTTP headers
    (their values are not shown by ``repr``). ``allowed_key_names`` is the server's key policy
    (the extra names an admin allowed; see :func:`evalcore.secrets.key_name_allowed`), or
    ``None`` for an endpoint of one's own machine, which may name any variable.

    >>> Endpoint("local", base_url="http://127.0.0.1:8000/v1", api_key_env=None).kind
    'openai'
    """

    name: str
    base_url: str
    kind: Literal["openai", "azure"] = "openai"
    api_key_env: str | None = "OPENAI_API_KEY"
    api_version: str | None = None
    default_model: str = ""
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    allowed_key_names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.headers, Mapping):
            object.__setattr__(self, "headers", tuple(sorted(self.headers.items())))
        if self.kind not in ("openai", "azure"):
            raise ConfigError(f"endpoint {self.name!r}: kind must be openai or azure")
        urls = self.base_urls
        if not urls or not all(url.startswith(("http://", "https://")) for url in urls):
            raise ConfigError(
                f"endpoint {self.name!r}: base URL must start with http:// or https://"
            )
        if len(urls) > 1 and (self.kind != "openai" or len(urls) > MAX_REPLICAS):
            raise ConfigError(
                f"endpoint {self.name!r}: a pool lists at most {MAX_REPLICAS} base URLs of an "
                "OpenAI-compatible server (not Azure)"
            )
        if self.api_key_env is not None and (
            not self.api_key_env or _looks_like_a_key(self.api_key_env)
        ):
            # Never echo the value: it may be a real key pasted into the wrong box.
            raise ConfigError(
                f"endpoint {self.name!r}: api_key_env must be the NAME of an environment "
                "variable or secret (such as OPENAI_API_KEY), not the key itself"
            )
        if self.kind == "azure" and not self.api_version:
            raise ConfigError(f"endpoint {self.name!r}: an Azure endpoint needs an api_version")

    @property
    def base_urls(self) -> tuple[str, ...]:
        """The base URLs ``base_url`` lists: one, or several replicas of a pool (one per line)."""
        return base_urls(self.base_url)

    def __repr__(self) -> str:
        header_names = ", ".join(name for name, _ in self.headers)
        return (
            f"Endpoint(name={self.name!r}, kind={self.kind!r}, base_url={self.base_url!r}, "
            f"api_key_env={self.api_key_env!r}, api_version={self.api_version!r}, "
            f"default_model={self.default_model!r}, headers=[{header_names}])"
        )


def resolve_api_key(endpoint: Endpoint, secrets: Mapping[str, Any] | None = None) -> str:
    """The API key for ``endpoint``: ``os.environ[api_key_env]``, else ``secrets[api_key_env]``.

    ``secrets`` is any mapping (the dashboard passes ``st.secrets``); a dotted name such as
    ``openai.api_key`` walks nested tables. ``api_key_env=None`` gives :data:`NO_KEY`. A missing key
    raises :class:`~evalcore.errors.JudgeError`, never with any value. Without a key policy the
    message names the variable; under the server's policy (``endpoint.allowed_key_names``) a name
    the policy refuses is never looked up, and the message is the same whether the name is refused
    or the variable is missing, so it tells nobody which variables exist.
    """
    refusal = key_refusal(endpoint)
    if refusal is not None:
        raise refusal
    name = endpoint.api_key_env
    if name is None:
        return NO_KEY
    policy = endpoint.allowed_key_names
    value = os.environ.get(name)
    if not value and secrets is not None:
        found = lookup_secret(secrets, name)
        value = found if isinstance(found, str) else None
    if not value:
        if policy is not None:
            raise _unavailable(endpoint)
        where = "the environment" + (" or the app's secrets" if secrets is not None else "")
        raise JudgeError(
            f"the API key variable {name} for endpoint {endpoint.name!r} is not set in {where}"
        )
    return value


def key_refusal(endpoint: Endpoint) -> JudgeError | None:
    """Why ``endpoint``'s requests cannot authenticate, whatever the server's variables hold, or
    ``None``: its key variable is one the server's key policy refuses (the same words as a missing
    key: nobody learns which names exist), or it names no key variable while its host answers
    only requests that carry a key (:func:`evalcore.secrets.host_needs_key`).
    :func:`resolve_api_key` asks this first.

    >>> key_refusal(Endpoint("local", base_url="http://127.0.0.1:8000/v1", api_key_env=None))
    >>> print(key_refusal(Endpoint("o", base_url="https://api.openai.com/v1", api_key_env=None)))
    endpoint 'o' names no API key variable, and api.openai.com answers only requests that carry a key; ask an admin to name the endpoint's key variable
    """
    name = endpoint.api_key_env
    if name is None:
        host = next((u for u in endpoint.base_urls if host_needs_key(u, endpoint.kind)), None)
        if host is None:
            return None
        return JudgeError(
            f"endpoint {endpoint.name!r} names no API key variable, and "
            f"{urlsplit(host).hostname or host} answers only requests that carry a key; ask an "
            "admin to name the endpoint's key variable"
        )
    policy = endpoint.allowed_key_names
    if policy is not None and not key_name_allowed(name, policy):
        return _unavailable(endpoint)
    return None


def _unavailable(endpoint: Endpoint) -> JudgeError:
    return JudgeError(
        "the endpoint's API key is not available on the server; ask an admin to check endpoint "
        f"{endpoint.name!r}"
    )


def make_client(
    endpoint: Endpoint,
    *,
    timeout: float = 60.0,
    secrets: Mapping[str, Any] | None = None,
    http_client: Any = None,
    pool: ReplicaPool | None = None,
) -> AsyncOpenAI:
    """An async client for ``endpoint`` with ``max_retries=0`` (the runner retries).

    Azure endpoints get an :class:`openai.AsyncAzureOpenAI` (a subclass of ``AsyncOpenAI``) whose
    deployment is the request's model. An endpoint that lists several base URLs gets a
    :class:`~evalcore.judge.PoolClient` over ``pool`` (default: the process's pool of those URLs).
    The client's HTTP client (``http_client``, or the SDK's default) follows a redirect only within
    the endpoint's own scheme, host and port: one to another host fails the request with a
    :class:`~evalcore.judge.RedirectRefusedError` and sends nothing there.
    """
    common: dict[str, Any] = {
        "api_key": resolve_api_key(endpoint, secrets),
        "max_retries": 0,
        "timeout": timeout,
        "default_headers": dict(endpoint.headers) or None,
        # never sent on to another host by a redirect (see evalcore.judge._redirects)
        "http_client": same_origin_client(http_client),
    }
    if endpoint.kind == "azure":
        return AsyncAzureOpenAI(
            azure_endpoint=endpoint.base_url, api_version=endpoint.api_version, **common
        )
    urls = endpoint.base_urls
    if len(urls) > 1:
        return PoolClient(pool or replica_pool(urls), **common)
    return AsyncOpenAI(base_url=urls[0], **common)


class ClientFactory:
    """A zero-argument factory of clients for one endpoint (see :func:`client_factory`); it names
    the endpoint's identity in the reply cache (``base_url``: its URL, or a pool's
    :func:`~evalcore.judge.endpoint_identity`) without making a client."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        timeout: float,
        secrets: Mapping[str, Any] | None,
        pool: ReplicaPool | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.base_url = endpoint_identity(endpoint.base_urls)
        self._timeout = timeout
        self._secrets = secrets
        self._pool = pool

    def __call__(self) -> AsyncOpenAI:
        return make_client(
            self.endpoint, timeout=self._timeout, secrets=self._secrets, pool=self._pool
        )


def client_factory(
    endpoint: Endpoint,
    *,
    timeout: float = 60.0,
    secrets: Mapping[str, Any] | None = None,
    pool: ReplicaPool | None = None,
) -> ClientFactory:
    """A zero-argument factory of clients for ``endpoint``, for :class:`~evalcore.judge.JudgeRunner`.

    The key is resolved now, so a missing key fails before any run starts; a client is made per run
    (an async client belongs to the event loop it first ran on). The clients of a pool endpoint
    share ``pool`` (default: the process's pool of its URLs), so rests outlive a run.
    """
    resolve_api_key(endpoint, secrets)
    return ClientFactory(endpoint, timeout=timeout, secrets=secrets, pool=pool)


def _price(model: str, prices: Mapping[str, tuple[float, float]]) -> tuple[float, float] | None:
    if model in prices:
        return prices[model]
    # A dated snapshot ("gpt-4o-2024-08-06") takes the price of its longest listed prefix.
    best = None
    for name in prices:
        if model.startswith(name + "-") and (best is None or len(name) > len(best)):
            best = name
    return prices[best] if best is not None else None


def estimate_cost(
    model: str,
    tokens_in: int,
    tokens_out: int,
    prices: Mapping[str, tuple[float, float]] | None = None,
) -> float | None:
    """US dollars for one call, from ``prices`` (default :data:`DEFAULT_PRICES`); ``None`` if unknown.

    >>> estimate_cost("gpt-4o-mini", 1_000_000, 1_000_000)  # 0.15 + 0.60
    0.75
    >>> estimate_cost("my-local-model", 100, 10) is None
    True
    """
    price = _price(model, DEFAULT_PRICES if prices is None else prices)
    if price is None:
        return None
    return (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
