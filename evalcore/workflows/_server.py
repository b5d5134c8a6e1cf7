"""One database, its background worker and the server's policy: what every workflow call runs on.

A :class:`Server` is built once per process and database (the dashboard keeps it in
``st.cache_resource``; a test or a script builds its own). It holds the trusted store, which only the
workflow layer touches: each call of a workflow function checks the caller against the database and
then works through ``store.acting_as(actor)``.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from evalcore.errors import ConfigError
from evalcore.workflows._memo import Memo

if TYPE_CHECKING:
    from evalcore.runs import RunWorker
    from evalcore.store import Store
    from evalcore.workflows._session import HandOffs

__all__ = [
    "ALLOWED_HOSTS_ENV",
    "DEFAULT_IDLE_MINUTES",
    "IDLE_ENV",
    "LOOPBACK",
    "NO_ACCOUNT",
    "Server",
    "allowed_hosts",
    "any_host_notice",
    "database_url",
    "host_allowed",
    "host_name",
    "host_refusal",
    "idle_minutes",
    "is_loopback",
    "oidc_configured",
    "oidc_providers",
    "start_refusal",
]

#: Addresses (and Host names) that only this machine can reach.
LOOPBACK: Final = frozenset({"127.0.0.1", "localhost", "::1"})

IDLE_ENV: Final = "EVALCORE_SESSION_IDLE_MINUTES"
DEFAULT_IDLE_MINUTES: Final = 60.0

NO_ACCOUNT: Final = (
    "evalcore has no user account yet, so it serves only this machine (127.0.0.1) in single-user "
    "mode. To listen on {address}, add an admin first: evalcore users add NAME --role admin "
    "--password-env VAR (the password is read from the environment variable VAR), or configure "
    "OIDC in .streamlit/secrets.toml ([auth])."
)


def database_url() -> str:
    """The database this process serves: ``EVALCORE_DATABASE_URL``, else a SQLite file in the
    user's data directory."""
    from evalcore.store import DATABASE_URL_ENV, default_database_url

    return os.environ.get(DATABASE_URL_ENV) or default_database_url()


def is_loopback(address: str | None) -> bool:
    """Whether a server bound to ``address`` is reachable from this machine only (an empty address
    means every interface).

    >>> is_loopback("127.0.0.1"), is_loopback("[::1]"), is_loopback("0.0.0.0"), is_loopback(None)
    (True, True, False, False)
    """
    return (address or "").strip().strip("[]").lower() in LOOPBACK


#: The host names a server answers besides the loopback names (comma-separated).
ALLOWED_HOSTS_ENV: Final = "EVALCORE_ALLOWED_HOSTS"

HOST_REFUSED: Final = (
    "evalcore refuses this request: it was addressed to the host {host!r}, and this server "
    "answers only {allowed}. A team server names its own host names in {env} (comma-separated) "
    "or with evalcore serve --allowed-host NAME."
)

ANY_HOST: Final = (
    "evalcore answers requests addressed to any host name on {address}. Name this server's own "
    "host names so that others are refused: {env}=evals.example.org (comma-separated) or "
    "evalcore serve --allowed-host evals.example.org."
)
_NAME: Final = re.compile(r"[a-z0-9._-]+|[0-9a-f:.]*:[0-9a-f:.]*")


def host_name(header: str | None) -> str:
    """The name in a ``Host`` header, without its port, brackets or a final dot, in lower case.

    >>> host_name("LocalHost:8501"), host_name("[::1]:8501"), host_name("evil.example."), host_name("::1")
    ('localhost', '::1', 'evil.example', '::1')
    """
    raw = (header or "").strip().lower()
    if raw.startswith("["):  # [v6]:port
        return raw[1:].partition("]")[0]
    if raw.count(":") == 1:  # name:port (a bare IPv6 address has several colons)
        raw = raw.partition(":")[0]
    return raw.rstrip(".")


def allowed_hosts(
    address: str | None, environ: Mapping[str, str] | None = None
) -> frozenset[str] | None:
    """The host names a server bound to ``address`` answers, or ``None`` for any.

    The loopback names always; plus the names of ``EVALCORE_ALLOWED_HOSTS`` when it is set. With it
    unset, a server on a loopback address answers the loopback names only (whether or not it has
    accounts: a page on another site that resolves its own name to 127.0.0.1 must not reach it,
    and a reverse proxy in front of it names the public host in the setting), and a server on any
    other address answers any name (``evalcore serve`` says so when it starts).

    >>> sorted(allowed_hosts("127.0.0.1", {}))
    ['127.0.0.1', '::1', 'localhost']
    >>> allowed_hosts("0.0.0.0", {}) is None
    True
    >>> sorted(allowed_hosts("0.0.0.0", {"EVALCORE_ALLOWED_HOSTS": "Evals.Example.org, 10.0.0.5"}))
    ['10.0.0.5', '127.0.0.1', '::1', 'evals.example.org', 'localhost']
    >>> allowed_hosts("0.0.0.0", {"EVALCORE_ALLOWED_HOSTS": "http://evals.example.org/"})
    Traceback (most recent call last):
    ...
    evalcore.errors.ConfigError: EVALCORE_ALLOWED_HOSTS names host names such as evals.example.org, separated by commas; 'http://evals.example.org/' is not one.
    """
    raw = (os.environ if environ is None else environ).get(ALLOWED_HOSTS_ENV, "")
    named = {p.strip().strip("[]").lower().rstrip(".") for p in raw.split(",") if p.strip()}
    bad = sorted(n for n in named if not _NAME.fullmatch(n))
    if bad:
        raise ConfigError(
            f"{ALLOWED_HOSTS_ENV} names host names such as evals.example.org, separated by "
            f"commas; {bad[0]!r} is not one."
        )
    if not named and not is_loopback(address):
        return None
    return frozenset(LOOPBACK | named)


def any_host_notice(address: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """What ``evalcore serve`` says when the server on ``address`` will answer any host name."""
    if allowed_hosts(address, environ) is not None:
        return None
    shown = (address or "").strip() or "every network interface"
    return ANY_HOST.format(address=shown, env=ALLOWED_HOSTS_ENV)


def host_allowed(header: str | None, allowed: frozenset[str] | None) -> bool:
    """Whether a request with this ``Host`` header may be served (``allowed``: from
    :func:`allowed_hosts`; a request without a Host header is refused unless any name is).

    >>> only_here = allowed_hosts("127.0.0.1", {})
    >>> host_allowed("localhost:8501", only_here), host_allowed("[::1]:80", only_here)
    (True, True)
    >>> host_allowed("evil.example:8501", only_here), host_allowed(None, only_here)
    (False, False)
    """
    if allowed is None:
        return True
    return host_name(header) in allowed


def host_refusal(header: str | None, allowed: frozenset[str]) -> str:
    """What a refused request is answered (plain text, one line)."""
    names = ", ".join(sorted(allowed))
    shown = host_name(header)[:100] or "(none)"
    return HOST_REFUSED.format(host=shown, allowed=names, env=ALLOWED_HOSTS_ENV)


def idle_minutes(environ: Mapping[str, str] | None = None) -> float:
    """How long a session may stay idle before it ends (``EVALCORE_SESSION_IDLE_MINUTES``, default
    60); a :class:`ConfigError` when the variable is not a positive number of minutes.

    >>> idle_minutes({}), idle_minutes({"EVALCORE_SESSION_IDLE_MINUTES": "0.5"})
    (60.0, 0.5)
    """
    raw = (os.environ if environ is None else environ).get(IDLE_ENV, "").strip()
    if not raw:
        return DEFAULT_IDLE_MINUTES
    try:
        minutes = float(raw)
    except ValueError:
        minutes = float("nan")
    if not minutes > 0 or minutes == float("inf"):
        raise ConfigError(
            f"{IDLE_ENV} must be a positive number of minutes, such as 60; it is {raw!r}."
        )
    return minutes


def cookie_seconds(environ: Mapping[str, str] | None = None) -> int:
    """How long the browser keeps the session cookie: as long as the server keeps an ended
    session's record (a week, so that its holder is told why it ended), and never less than the
    idle limit. The server decides at each call whether the session is alive; the cookie only
    carries it, so a browser restarted within the idle time of the last click is still signed in,
    however long ago the page was loaded.

    >>> cookie_seconds({}), cookie_seconds({"EVALCORE_SESSION_IDLE_MINUTES": "20160"})
    (604800, 1209600)
    """
    from evalcore.store import KEEP_ENDED

    return math.ceil(max(idle_minutes(environ) * 60, KEEP_ENDED.total_seconds()))


def oidc_configured(secrets: Mapping[str, Any]) -> bool:
    """Whether the secrets have an ``[auth]`` section (single sign-on through OIDC)."""
    auth = secrets.get("auth")
    return isinstance(auth, Mapping) and bool(auth)


def oidc_providers(secrets: Mapping[str, Any]) -> list[str | None]:
    """The providers a sign-in can name: ``[None]`` for an ``[auth]`` section that is one provider
    itself, else the names of its ``[auth.NAME]`` sub-sections.

    >>> oidc_providers({"auth": {"client_id": "x"}}), oidc_providers({"auth": {"google": {}}})
    ([None], ['google'])
    """
    auth = secrets.get("auth")
    if not isinstance(auth, Mapping):
        return []
    named: list[str | None] = [str(k) for k, v in auth.items() if isinstance(v, Mapping)]
    return named or ([None] if "client_id" in auth else [])


def start_refusal(address: str | None, accounts: int, oidc: bool) -> str | None:
    """Why a server must not listen on ``address``: it has no account, no OIDC and is not on
    loopback (then anyone who reaches the port would be an admin); ``None`` when it may."""
    if accounts > 0 or oidc or is_loopback(address):
        return None
    return NO_ACCOUNT.format(address=(address or "").strip() or "every network interface")


def _handoffs() -> HandOffs:
    from evalcore.workflows._session import HandOffs

    return HandOffs()


@dataclass(eq=False)
class Server:
    """The database, the background worker and the policy a dashboard process serves with.

    ``address`` says where the web server listens (a function, read at each check, because single-user
    mode holds only while it is loopback); ``secrets`` are the server's secrets (API keys an endpoint
    names, the ``[auth]`` section), kept in memory only.
    """

    store: Store
    secrets: Mapping[str, Any] = field(default_factory=dict)
    address: Callable[[], str | None] = lambda: "127.0.0.1"
    worker_options: Mapping[str, Any] = field(default_factory=dict)
    memo: Memo = field(default_factory=Memo)
    handoffs: HandOffs = field(default_factory=lambda: _handoffs())
    _worker: RunWorker | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def open(
        cls,
        url: str,
        *,
        secrets: Mapping[str, Any] | None = None,
        address: Callable[[], str | None] | None = None,
        demo: bool = True,
        **worker_options: Any,
    ) -> Server:
        """Open (and migrate) the database at ``url``; an empty one gets the demo project unless
        ``demo`` is false or ``EVALCORE_NO_DEMO`` is set."""
        from evalcore.store import Store

        store = Store.open(url)
        if demo:
            from evalcore.demo.seed import ensure_demo

            ensure_demo(store)
        return cls(
            store=store,
            secrets=dict(secrets or {}),
            address=address or (lambda: "127.0.0.1"),
            worker_options=worker_options,
        )

    @property
    def oidc(self) -> bool:
        """Whether single sign-on is configured."""
        return oidc_configured(self.secrets)

    def single_user(self) -> bool:
        """No account, no OIDC, and a web server that listens on loopback only: one trusted
        person, who needs no sign-in. Asked again at every call of a single-user session."""
        return not self.oidc and is_loopback(self.address()) and self.store.count_users() == 0

    def refusal(self) -> str | None:
        """Why this server must serve nobody (no account, no OIDC, not on loopback), or None."""
        return start_refusal(self.address(), self.store.count_users(), self.oidc)

    @property
    def worker(self) -> RunWorker:
        """The background worker of this database's runs in this process (built on first use;
        runs and optimisations a stopped server left behind resume then)."""
        with self._lock:
            if self._worker is None:
                from evalcore.runs import RunWorker

                self._worker = RunWorker(self.store, secrets=self.secrets, **self.worker_options)
                self._worker.resume_stale()
            return self._worker

    def close(self) -> None:
        """Stop the worker (its runs resume at the next start) and close the database."""
        with self._lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.shutdown(wait=False)
        self.store.close()
