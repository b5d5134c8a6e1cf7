"""What an endpoint may take from the server: which key variables, which hosts, which headers.

An endpoint stores the NAME of an environment variable or Streamlit secret; the value is looked up
on the server when a run starts and sent to the endpoint's base URL. Whoever may edit an endpoint
could therefore send any of the server's variables anywhere, so the names are checked here:

- **Key names.** A name is allowed by default when it is an environment-variable name in capitals
  that ends in ``_API_KEY`` (``OPENAI_API_KEY``). An admin may allow other names one by one (the
  server setting ``allowed_key_names``). Some names are never allowed, even when an admin lists
  them (:func:`key_name_denied`): evalcore's own settings (``EVALCORE_*``), database settings
  (``DATABASE_URL``, ``*_DATABASE_URL``, ``*_DB_URL``, ``*_DSN``, ``PG*``, ``POSTGRES*``,
  ``MYSQL*``, ``MARIADB*``, ``MONGO*``, ``REDIS*``, ``SQLALCHEMY*``), the credentials of cloud
  SDKs (every ``AWS_*`` and ``GCP_*`` name, and ``AZURE_*`` and ``GOOGLE_*`` names except those
  that end in ``_API_KEY``, such as ``AZURE_OPENAI_API_KEY`` and ``GOOGLE_API_KEY``), and any name
  that contains ``PASSWORD``, ``PASSWD``, ``SECRET``, ``SESSION_TOKEN`` or ``PRIVATE_KEY``. A
  dotted name reads a nested Streamlit secret (``openai.api_key``): its last part follows the same
  rule in any case (``api_key`` itself is allowed there), and nothing under Streamlit's own
  ``[auth]`` and ``[connections]`` tables is ever allowed.
- **Hosts.** When the server setting ``endpoint_hosts`` lists hosts, a base URL must name one of
  them (:func:`host_allowed`). Base URLs are http or https and never carry a user name or password.
- **Keys a host needs.** A hosted API (:data:`KEYED_HOSTS`, or any Azure endpoint) answers nothing
  without a key, so an endpoint there that names no key variable cannot work
  (:func:`host_needs_key`).
- **Headers.** An endpoint's extra settings (its HTTP headers among them) may not carry a
  credential: header names such as ``Authorization`` and values that look like a key are refused
  (:func:`check_headers`), with a message that says to use a key variable instead.

This module is a leaf: it imports only :mod:`evalcore.errors` and the standard library, so the judge
client, the store and the pages can all use it.

>>> key_name_allowed("OPENAI_API_KEY"), key_name_allowed("EVALCORE_DATABASE_URL")
(True, False)
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal
from urllib.parse import parse_qsl, urlsplit

from evalcore.errors import ConfigError

__all__ = [
    "KEYED_HOSTS",
    "KeyStatus",
    "check_base_url",
    "check_headers",
    "check_key_name",
    "host_allowed",
    "host_needs_key",
    "key_name_allowed",
    "key_name_denied",
    "key_status",
    "looks_secret",
    "lookup_secret",
]

KeyStatus = Literal["set", "missing", "not allowed"]

_ENV_NAME: Final = re.compile(r"[A-Z][A-Z0-9_]*")
_PART: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: Name prefixes that are never a key variable (evalcore, databases, cloud SDK credentials).
_DENIED_PREFIXES: Final = (
    "EVALCORE_",
    "PG",
    "POSTGRES",
    "MYSQL",
    "MARIADB",
    "MONGO",
    "REDIS",
    "SQLALCHEMY",
    "AWS_",
    "GCP_",
)
#: Prefixes denied unless the name ends in ``_API_KEY`` (their model keys are fine, the rest is
#: the SDK's own sign-in: ``AZURE_CLIENT_SECRET``, ``GOOGLE_APPLICATION_CREDENTIALS``…).
_CLOUD_PREFIXES: Final = ("AZURE_", "GOOGLE_")
_DENIED_SUFFIXES: Final = ("DATABASE_URL", "_DB_URL", "_DSN")
_DENIED_PARTS: Final = ("PASSWORD", "PASSWD", "SECRET", "SESSION_TOKEN", "PRIVATE_KEY")
#: Streamlit's own tables in secrets.toml: the sign-in settings and database connections.
_DENIED_TABLES: Final = frozenset({"AUTH", "CONNECTIONS"})

_RULE_TEXT: Final = (
    "names in capitals that end in _API_KEY (such as OPENAI_API_KEY, or openai.api_key for a "
    "table in the app's secrets), and never evalcore's own, a database's or a cloud credential "
    "variable"
)


def _parts(name: str) -> list[str] | None:
    parts = name.split(".")
    if len(parts) == 1:
        return parts if _ENV_NAME.fullmatch(name) else None
    return parts if all(_PART.fullmatch(p) for p in parts) else None


def key_name_denied(name: str) -> bool:
    """Whether ``name`` is never allowed as an endpoint's key variable, whoever allows it.

    Denied: evalcore's, database and cloud credential variables, and anything whose name says it
    is a password, a secret, a session token or a private key (see the module's rules).

    >>> [key_name_denied(n) for n in ("EVALCORE_DATABASE_URL", "PGPASSWORD", "AWS_ACCESS_KEY_ID")]
    [True, True, True]
    >>> [key_name_denied(n) for n in ("AZURE_CLIENT_SECRET", "AZURE_OPENAI_API_KEY")]
    [True, False]
    >>> key_name_denied("auth.client_id")  # Streamlit's sign-in table
    True
    """
    parts = _parts(name.strip())
    if parts is None:
        return True
    if len(parts) > 1 and parts[0].upper() in _DENIED_TABLES:
        return True
    last = parts[-1].upper()
    if last.startswith(_DENIED_PREFIXES) or last.endswith(_DENIED_SUFFIXES):
        return True
    if last.startswith(_CLOUD_PREFIXES) and not last.endswith("_API_KEY"):
        return True
    return any(word in last for word in _DENIED_PARTS)


def key_name_allowed(name: str, allowed: Iterable[str] = ()) -> bool:
    """Whether an endpoint may take its key from the variable or secret called ``name``.

    Allowed by default: a capitalised name ending in ``_API_KEY`` (for a dotted secret name, its
    last part in any case, ``api_key`` included). ``allowed`` lists the extra names an admin
    allowed; a denied name (:func:`key_name_denied`) stays denied.

    >>> key_name_allowed("OPENAI_API_KEY"), key_name_allowed("openai.api_key")
    (True, True)
    >>> key_name_allowed("VLLM_TOKEN"), key_name_allowed("VLLM_TOKEN", ["VLLM_TOKEN"])
    (False, True)
    >>> key_name_allowed("EVALCORE_DATABASE_URL", ["EVALCORE_DATABASE_URL"])
    False
    """
    name = name.strip()
    parts = _parts(name)
    if parts is None or key_name_denied(name):
        return False
    if name in {str(a).strip() for a in allowed}:
        return True
    last = parts[-1] if len(parts) == 1 else parts[-1].upper()
    return last.endswith("_API_KEY") or (len(parts) > 1 and last == "API_KEY")


def check_key_name(name: str, allowed: Iterable[str] = ()) -> str:
    """``name`` stripped when an endpoint may take its key from it, else a :class:`ConfigError`
    that says which names are allowed.

    >>> check_key_name(" MISTRAL_API_KEY ")
    'MISTRAL_API_KEY'
    >>> check_key_name("HOME")
    Traceback (most recent call last):
    ...
    evalcore.errors.ConfigError: The key variable 'HOME' is not allowed: endpoints take keys from
    names in capitals that end in _API_KEY (such as OPENAI_API_KEY, or openai.api_key for a table
    in the app's secrets), and never evalcore's own, a database's or a cloud credential variable.
    An admin can allow another name by adding it to the allowed key names in the server settings.
    """
    clean = name.strip()
    if key_name_allowed(clean, allowed):
        return clean
    shown = clean if _parts(clean) is not None else "given"
    if _parts(clean) is not None and key_name_denied(clean):
        raise ConfigError(
            f"The key variable {shown!r} is never allowed: it is evalcore's own, a database's or "
            "a cloud credential variable, or its name says it holds a password or a secret. "
            f"Endpoints take keys from {_RULE_TEXT}."
        )
    raise ConfigError(
        f"The key variable {shown!r} is not allowed: endpoints take keys from {_RULE_TEXT}. An "
        "admin can allow another name by adding it to the allowed key names in the server "
        "settings."
    )


# --- looking a key up -------------------------------------------------------------------------


def lookup_secret(secrets: Mapping[str, Any], name: str) -> Any:
    """``secrets[name]``, or for a dotted name the nested value (``openai.api_key``); ``None``
    when there is none.

    >>> lookup_secret({"openai": {"api_key": "x"}}, "openai.api_key")
    'x'
    """
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


def key_status(
    name: str, secrets: Mapping[str, Any] | None = None, allowed: Iterable[str] = ()
) -> KeyStatus:
    """Whether the key variable ``name`` is ``"set"``, ``"missing"`` or ``"not allowed"`` on this
    server (the environment first, then ``secrets``). For admins only: anyone else must not learn
    which variables exist. The value is never returned.

    >>> key_status("EVALCORE_DATABASE_URL")
    'not allowed'
    >>> key_status("EXAMPLE_API_KEY", {"EXAMPLE_API_KEY": "value"})
    'set'
    """
    if not key_name_allowed(name, allowed):
        return "not allowed"
    value = os.environ.get(name.strip())
    if not value and secrets is not None:
        found = lookup_secret(secrets, name.strip())
        value = found if isinstance(found, str) else None
    return "set" if value else "missing"


# --- base URLs --------------------------------------------------------------------------------


def _clean_host(host: str) -> str:
    return host.strip().lower().rstrip(".")


def host_allowed(base_url: str, hosts: Iterable[str] = ()) -> bool:
    """Whether ``base_url`` is an http(s) URL without a user name or password whose host is one
    of ``hosts`` (no hosts: any host). An entry written ``.example.com`` allows every subdomain of
    example.com (not example.com itself: list it too).

    >>> host_allowed("https://api.openai.com/v1", ["api.openai.com"])
    True
    >>> host_allowed("https://gw.corp.example.com/v1", [".example.com"])
    True
    >>> host_allowed("https://evil.test/v1", ["api.openai.com"])
    False
    >>> host_allowed("https://me:pw@api.openai.com/v1")
    False
    """
    try:
        parts = urlsplit(base_url.strip())
        host = parts.hostname
        parts.port  # noqa: B018  (raises on a port that is not a number)
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not host:
        return False
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return False
    host = _clean_host(host)
    entries = [_clean_host(h) for h in hosts if str(h).strip()]
    if not entries:
        return True
    for entry in entries:
        if entry.startswith("."):
            if host.endswith(entry) and len(host) > len(entry):
                return True
        elif host == entry:
            return True
    return False


#: Hosts of hosted model APIs, which answer no request without an API key (an entry written
#: ``.example.com`` covers the subdomains of example.com). A self-hosted server (vLLM, Ollama, a
#: gateway) is not listed: it may or may not ask for a key.
KEYED_HOSTS: Final = (
    "api.openai.com",
    ".openai.azure.com",
    ".cognitiveservices.azure.com",
    ".services.ai.azure.com",
    "api.anthropic.com",
    "api.mistral.ai",
    "api.groq.com",
    "api.together.xyz",
    "api.together.ai",
    "api.fireworks.ai",
    "api.deepseek.com",
    "api.x.ai",
    "api.perplexity.ai",
    "api.cohere.com",
    "api.cohere.ai",
    "openrouter.ai",
    "generativelanguage.googleapis.com",
    "router.huggingface.co",
    "api-inference.huggingface.co",
)


def host_needs_key(base_url: str, kind: str = "openai") -> bool:
    """Whether an endpoint at ``base_url`` cannot answer without an API key: an Azure endpoint, or
    a host of :data:`KEYED_HOSTS`.

    >>> host_needs_key("https://api.openai.com/v1"), host_needs_key("http://127.0.0.1:11434/v1")
    (True, False)
    >>> host_needs_key("https://me.openai.azure.com/"), host_needs_key("http://gw.local/v1", "azure")
    (True, True)
    """
    return kind == "azure" or host_allowed(base_url.strip(), KEYED_HOSTS)


def check_base_url(base_url: str, hosts: Iterable[str] = ()) -> str:
    """``base_url`` stripped when :func:`host_allowed`, else a :class:`ConfigError` saying why.

    A query string that carries a credential (``?api_key=…``) is refused too.

    >>> check_base_url("http://127.0.0.1:8000/v1")
    'http://127.0.0.1:8000/v1'
    """
    url = base_url.strip()
    hosts = [str(h) for h in hosts if str(h).strip()]
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ConfigError("The base URL is not a valid URL.") from None
    if parts.scheme not in ("http", "https"):
        raise ConfigError("The base URL must start with http:// or https://.")
    if "@" in parts.netloc:
        raise ConfigError(
            "The base URL may not carry a user name or password; name a key variable instead."
        )
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if _secret_name(name) or looks_secret(value):
            raise ConfigError(
                f"The base URL's query parameter {name!r} looks like a credential; name a key "
                "variable instead."
            )
    if not host_allowed(url, hosts):
        if not parts.hostname:
            raise ConfigError("The base URL names no host.")
        raise ConfigError(
            f"The base URL's host {parts.hostname!r} is not one this server allows endpoints to "
            f"use ({', '.join(hosts)}); an admin can add hosts in the server settings."
        )
    return url


# --- headers ----------------------------------------------------------------------------------

#: Header names that carry credentials, and words that make any name one.
_SECRET_HEADERS: Final = frozenset(
    {"authorization", "proxy-authorization", "api-key", "x-api-key", "cookie", "set-cookie"}
)
_SECRET_WORDS: Final = (
    "token",
    "secret",
    "password",
    "passwd",
    "key",
    "auth",
    "cookie",
    "credential",
)
_SCHEMES: Final = re.compile(r"(?i)^(bearer|basic|token|digest|negotiate|apikey)\s+\S")
_KEY_PREFIXES: Final = (
    "sk-", "sk_", "pk_live", "rk_live", "gsk_", "xai-", "hf_", "aiza", "ghp_", "gho_", "ghs_",
    "github_pat_", "glpat-", "xoxb-", "xoxp-", "akia", "asia",
)  # fmt: skip
_JWT: Final = re.compile(r"eyJ[\w-]*\.[\w-]+\.[\w-]*|[\w-]{16,}\.[\w-]{16,}\.[\w-]{16,}")
_UUID: Final = re.compile(r"(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_HEX: Final = re.compile(r"(?i)[0-9a-f]+")
#: How deep and how large extra settings may be.
MAX_DEPTH: Final = 8
MAX_ENTRIES: Final = 1000


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def looks_secret(value: str) -> bool:
    """Whether a header or setting value looks like a credential: an ``Authorization`` scheme
    (``Bearer …``, ``Basic …``), a known key prefix (``sk-…``), a JWT, or a long random token.

    >>> [looks_secret(v) for v in ("Bearer abc", "sk-123", "application/json", "evalcore/1.0")]
    [True, True, False, False]
    >>> looks_secret("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl")
    True
    >>> looks_secret("3f9a1c0e7b2d4a6f8e1c3b5d7f9a0c2e")  # 32 hex digits
    True
    """
    text = value.strip()
    if not text:
        return False
    if _SCHEMES.match(text) or text.lower().startswith(_KEY_PREFIXES) or _JWT.fullmatch(text):
        return True
    if any(c.isspace() for c in text) or len(text) < 24 or _UUID.fullmatch(text):
        return False
    if _HEX.fullmatch(text):
        return len(text) >= 32
    letters = any(c.isalpha() for c in text)
    digits = any(c.isdigit() for c in text)
    return letters and digits and len(text) >= 32 and _entropy(text) >= 4.0


def _secret_name(name: str) -> bool:
    lowered = name.strip().lower().replace("_", "-")
    return lowered in _SECRET_HEADERS or any(w in lowered for w in _SECRET_WORDS)


def check_headers(value: Any, *, path: str = "headers") -> Any:
    """Return ``value`` (an endpoint's headers or extra settings, nested dicts and lists) when no
    name or value in it carries a credential; else a :class:`ConfigError` naming the first
    offending path. Values are never repeated in the message.

    Refused names: ``Authorization``, ``Proxy-Authorization``, ``Api-Key``, ``X-Api-Key``,
    ``Cookie``, and any name with token, secret, password, key, auth, cookie or credential in it.
    Refused values: see :func:`looks_secret`. Nesting deeper than :data:`MAX_DEPTH` or more than
    :data:`MAX_ENTRIES` entries is refused too.

    >>> check_headers({"X-Team": "evals"})
    {'X-Team': 'evals'}
    >>> check_headers({"headers": {"Authorization": "x"}}, path="extra")
    Traceback (most recent call last):
    ...
    evalcore.errors.ConfigError: extra.headers.Authorization is a credential header: endpoints may
    not store secrets in their settings; name a key variable (such as OPENAI_API_KEY) for the
    key instead.
    """
    seen = [0]
    _walk(value, path, 0, seen)
    return value


def _refuse(path: str, what: str) -> ConfigError:
    return ConfigError(
        f"{path} {what}: endpoints may not store secrets in their settings; name a key "
        "variable (such as OPENAI_API_KEY) for the key instead."
    )


def _walk(value: Any, path: str, depth: int, seen: list[int]) -> None:
    seen[0] += 1
    if seen[0] > MAX_ENTRIES:
        raise ConfigError(f"{path}: an endpoint's settings may hold at most {MAX_ENTRIES} entries.")
    if depth > MAX_DEPTH:
        raise ConfigError(f"{path}: an endpoint's settings nest more than {MAX_DEPTH} levels.")
    if isinstance(value, Mapping):
        for key, inner in value.items():
            here = f"{path}.{key}"
            if _secret_name(str(key)):
                raise _refuse(here, "is a credential header")
            _walk(inner, here, depth + 1, seen)
    elif isinstance(value, list | tuple):
        for index, inner in enumerate(value):
            _walk(inner, f"{path}[{index}]", depth + 1, seen)
    elif isinstance(value, str) and looks_secret(value):
        raise _refuse(path, "looks like a key or token")
