"""Endpoints, API keys, the OpenAI-compatible client and token prices.

An :class:`Endpoint` names where a judge is sent: any OpenAI-compatible base URL (OpenAI, vLLM, Ollama,
LiteLLM, a gateway) or an Azure OpenAI resource. It stores the *name* of the environment variable (or
Streamlit secret) that holds the API key, never the key: :func:`resolve_api_key` looks it up at the last
moment and the key then lives only inside the client object. It is never logged, stored, put into an
error message or shown by ``repr``.

Clients are made with ``max_retries=0``: evalcore's runner does its own retrying so that the number of
attempts per item is exact and visible.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from openai import AsyncAzureOpenAI, AsyncOpenAI

from evalcore.errors import ConfigError, JudgeError

__all__ = [
    "DEFAULT_PRICES",
    "NO_KEY",
    "ClientFactory",
    "Endpoint",
    "client_factory",
    "estimate_cost",
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
    (their values are not shown by ``repr``).

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

    def __post_init__(self) -> None:
        if isinstance(self.headers, Mapping):
            object.__setattr__(self, "headers", tuple(sorted(self.headers.items())))
        if self.kind not in ("openai", "azure"):
            raise ConfigError(f"endpoint {self.name!r}: kind must be openai or azure")
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"endpoint {self.name!r}: base URL must start with http:// or https://"
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

    def __repr__(self) -> str:
        header_names = ", ".join(name for name, _ in self.headers)
        return (
            f"Endpoint(name={self.name!r}, kind={self.kind!r}, base_url={self.base_url!r}, "
            f"api_key_env={self.api_key_env!r}, api_version={self.api_version!r}, "
            f"default_model={self.default_model!r}, headers=[{header_names}])"
        )


def _lookup_secret(secrets: Mapping[str, Any], name: str) -> Any:
    try:
        if name in secrets:
            return secrets[name]
    except Exception:  # some mappings raise on odd keys
        pass
    node: Any = secrets
    for part in name.split("."):
        try:
            node = node[part]
        except (KeyError, TypeError, IndexError, AttributeError):
            return None
    return node


def resolve_api_key(endpoint: Endpoint, secrets: Mapping[str, Any] | None = None) -> str:
    """The API key for ``endpoint``: ``os.environ[api_key_env]``, else ``secrets[api_key_env]``.

    ``secrets`` is any mapping (the dashboard passes ``st.secrets``); a dotted name such as
    ``openai.api_key`` walks nested tables. ``api_key_env=None`` gives :data:`NO_KEY`. A missing key
    raises :class:`~evalcore.errors.JudgeError` naming the variable, not any value.
    """
    name = endpoint.api_key_env
    if name is None:
        return NO_KEY
    value = os.environ.get(name)
    if not value and secrets is not None:
        found = _lookup_secret(secrets, name)
        value = found if isinstance(found, str) else None
    if not value:
        where = "the environment" + (" or the app's secrets" if secrets is not None else "")
        raise JudgeError(
            f"the API key variable {name} for endpoint {endpoint.name!r} is not set in {where}"
        )
    return value


def make_client(
    endpoint: Endpoint,
    *,
    timeout: float = 60.0,
    secrets: Mapping[str, Any] | None = None,
    http_client: Any = None,
) -> AsyncOpenAI:
    """An async client for ``endpoint`` with ``max_retries=0`` (the runner retries).

    Azure endpoints get an :class:`openai.AsyncAzureOpenAI` (a subclass of ``AsyncOpenAI``) whose
    deployment is the request's model.
    """
    common: dict[str, Any] = {
        "api_key": resolve_api_key(endpoint, secrets),
        "max_retries": 0,
        "timeout": timeout,
        "default_headers": dict(endpoint.headers) or None,
        "http_client": http_client,
    }
    if endpoint.kind == "azure":
        return AsyncAzureOpenAI(
            azure_endpoint=endpoint.base_url, api_version=endpoint.api_version, **common
        )
    return AsyncOpenAI(base_url=endpoint.base_url, **common)


class ClientFactory:
    """A zero-argument factory of clients for one endpoint (see :func:`client_factory`); it names
    the endpoint's ``base_url`` without making a client."""

    def __init__(
        self, endpoint: Endpoint, *, timeout: float, secrets: Mapping[str, Any] | None
    ) -> None:
        self.endpoint = endpoint
        self.base_url = endpoint.base_url
        self._timeout = timeout
        self._secrets = secrets

    def __call__(self) -> AsyncOpenAI:
        return make_client(self.endpoint, timeout=self._timeout, secrets=self._secrets)


def client_factory(
    endpoint: Endpoint, *, timeout: float = 60.0, secrets: Mapping[str, Any] | None = None
) -> ClientFactory:
    """A zero-argument factory of clients for ``endpoint``, for :class:`~evalcore.judge.JudgeRunner`.

    The key is resolved now, so a missing key fails before any run starts; a client is made per run
    (an async client belongs to the event loop it first ran on).
    """
    resolve_api_key(endpoint, secrets)
    return ClientFactory(endpoint, timeout=timeout, secrets=secrets)


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
