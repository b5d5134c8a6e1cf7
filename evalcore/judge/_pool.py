"""Endpoint pools: one endpoint served by several replicas of a self-hosted model.

An endpoint's base URL may list several URLs (one per line, or separated by spaces). Its client is
then a :class:`PoolClient`: each request goes to the replica with the fewest requests outstanding
(ties go round-robin), across every run of the process that uses the same pool. A replica that
fails (a connection error, a time-out or a 5xx reply) is rested: it gets no request for
:data:`REST_BASE_S` seconds, then one probe; a probe that fails doubles the rest (up to
:data:`REST_MAX_S`), one that gets any reply puts the replica back. The failed request itself is
retried by the runner like any other failure, and goes to another replica. When every replica is
resting, a request waits for the first to come back, at most the client's time-out per attempt;
the runner's retries bound the whole wait.

The reply cache sees the pool, never the replica: :func:`endpoint_identity` of a pool is
``pool:`` and its sorted URLs, so a reply is reused whichever replica gave it (and an endpoint of
one URL keeps the identity it always had, its URL).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import openai
from openai import AsyncOpenAI

from evalcore.errors import ConfigError
from evalcore.judge._cache import normalise_base_url
from evalcore.judge._redirects import same_origin_client

__all__ = [
    "MAX_REPLICAS",
    "REST_BASE_S",
    "REST_MAX_S",
    "PoolClient",
    "ReplicaPool",
    "ReplicaStats",
    "base_urls",
    "endpoint_identity",
    "replica_pool",
]

#: The first rest of a failed replica, in seconds; each failed probe doubles it.
REST_BASE_S = 5.0
#: The longest rest of a failed replica, in seconds.
REST_MAX_S = 60.0
#: The most base URLs one endpoint may list.
MAX_REPLICAS = 32
#: How often a request that waits for a replica looks again while only probes are out.
_PROBE_POLL_S = 0.05
#: Paths a pool spreads over its replicas; any other call (files, batches) goes to the first one.
_POOLED_SUFFIXES = ("/chat/completions", "/completions", "/embeddings")

Outcome = Literal["ok", "failed", "cancelled"]


def base_urls(text: str | Iterable[str]) -> tuple[str, ...]:
    """The base URLs an endpoint lists: one per line or separated by spaces, repeats dropped.

    >>> base_urls("http://a:8000/v1\\n http://b:8000/v1  http://a:8000/v1")
    ('http://a:8000/v1', 'http://b:8000/v1')
    """
    parts = text.split() if isinstance(text, str) else [p for t in text for p in str(t).split()]
    return tuple(dict.fromkeys(parts))


def endpoint_identity(text: str | Iterable[str]) -> str:
    """What the reply cache keys an endpoint by: its normalised URL, or for a pool ``pool:`` and
    the sorted set of its normalised URLs (the order they are listed in does not matter).

    >>> endpoint_identity("HTTP://A:1/v1/")
    'http://a:1/v1'
    >>> endpoint_identity("http://b:1/v1\\nhttp://a:1/v1") == endpoint_identity("http://a:1/v1 http://b:1/v1")
    True
    >>> endpoint_identity("http://b:1/v1\\nhttp://a:1/v1")
    'pool:http://a:1/v1,http://b:1/v1'
    """
    urls = sorted({normalise_base_url(url) for url in base_urls(text)})
    if len(urls) <= 1:
        return urls[0] if urls else ""
    return "pool:" + ",".join(urls)


@dataclass(frozen=True)
class ReplicaStats:
    """What one replica of a pool did: requests sent (probes among them), failures, and whether it
    is resting now (``rest_left_s`` until its next probe)."""

    url: str
    sent: int
    probes: int
    failures: int
    outstanding: int
    resting: bool
    rest_left_s: float


@dataclass
class _Replica:
    url: str
    outstanding: int = 0
    rest_until: float = 0.0  #: 0: healthy; else when its rest ends (then it needs a probe)
    rest_s: float = 0.0  #: the length of its next rest
    probing: bool = False
    epoch: int = 0  #: bumped when it starts or ends a rest: replies to older requests are ignored
    sent: int = 0
    probes: int = 0
    failures: int = 0


@dataclass(frozen=True)
class _Ticket:
    index: int
    epoch: int
    probe: bool


class ReplicaPool:
    """The health and load of one pool's replicas, shared by every client of it (thread-safe and
    free of any event loop, so runs in several threads can share it)."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        rest_base: float = REST_BASE_S,
        rest_max: float = REST_MAX_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not urls:
            raise ConfigError("an endpoint pool needs at least one base URL")
        self.urls = tuple(urls)
        self.rest_base = rest_base
        self.rest_max = max(rest_max, rest_base)
        self._clock = clock
        self._lock = threading.Lock()
        self._replicas = [_Replica(url, rest_s=rest_base) for url in self.urls]
        self._cursor = 0

    def acquire(self) -> tuple[_Ticket | None, float]:
        """A replica for one request (its outstanding count goes up), or ``None`` and how long to
        wait before asking again when every replica is resting or being probed."""
        now = self._clock()
        with self._lock:
            count = len(self._replicas)
            best: int | None = None
            best_rank: tuple[int, int] = (0, 0)
            for index, replica in enumerate(self._replicas):
                if replica.rest_until > now or (replica.rest_until and replica.probing):
                    continue
                rank = (replica.outstanding, (index - self._cursor) % count)
                if best is None or rank < best_rank:
                    best, best_rank = index, rank
            if best is None:
                waits = [r.rest_until - now for r in self._replicas if r.rest_until > now]
                return None, min(waits, default=_PROBE_POLL_S)
            chosen = self._replicas[best]
            probe = chosen.rest_until > 0
            chosen.probing = chosen.probing or probe
            chosen.outstanding += 1
            chosen.sent += 1
            chosen.probes += probe
            self._cursor = (best + 1) % count
            return _Ticket(best, chosen.epoch, probe), 0.0

    def release(self, ticket: _Ticket, outcome: Outcome) -> None:
        """Record how a request ended: ``ok`` (any reply, even an error that is not the
        replica's), ``failed`` (the replica's fault), or ``cancelled`` (no answer either way)."""
        now = self._clock()
        with self._lock:
            replica = self._replicas[ticket.index]
            replica.outstanding -= 1
            if ticket.probe:
                replica.probing = False
            if outcome == "cancelled" or ticket.epoch != replica.epoch:
                if outcome == "failed":
                    replica.failures += 1
                return  # sent before the replica's last change: it says nothing new
            if outcome == "failed":
                replica.failures += 1
                if replica.rest_until:  # a probe failed: rest twice as long
                    replica.rest_s = min(self.rest_max, replica.rest_s * 2)
                replica.rest_until = now + replica.rest_s
                replica.epoch += 1
            elif ticket.probe:  # the replica answered again
                replica.rest_until = 0.0
                replica.rest_s = self.rest_base
                replica.epoch += 1

    def stats(self) -> list[ReplicaStats]:
        """Every replica's counts, in the order the endpoint lists them."""
        now = self._clock()
        with self._lock:
            return [
                ReplicaStats(
                    url=r.url,
                    sent=r.sent,
                    probes=r.probes,
                    failures=r.failures,
                    outstanding=r.outstanding,
                    resting=r.rest_until > now,
                    rest_left_s=max(0.0, r.rest_until - now),
                )
                for r in self._replicas
            ]


_POOLS: dict[str, ReplicaPool] = {}
_POOLS_LOCK = threading.Lock()


def replica_pool(urls: Sequence[str]) -> ReplicaPool:
    """The process's one :class:`ReplicaPool` for this set of URLs (made on first use), so every
    run on the same pool shares its load counts and rests."""
    identity = endpoint_identity(urls)
    with _POOLS_LOCK:
        pool = _POOLS.get(identity)
        if pool is None:
            pool = _POOLS[identity] = ReplicaPool(urls)
        return pool


def _replica_failed(exc: BaseException) -> bool:
    """Whether an error is the replica's (it is rested) rather than the request's."""
    if isinstance(exc, openai.APIConnectionError):  # time-outs are connection errors too
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500


class PoolClient(AsyncOpenAI):
    """An ``AsyncOpenAI`` client whose requests are spread over a pool's replicas.

    It is a real client (of the first replica, for anything that is not a completion), so the
    runner and the SDK's resources use it unchanged: every ``post`` of a completion picks a
    replica from ``pool`` and sends through that replica's own client. ``kwargs`` are the client
    settings every replica shares (key, time-out, headers, ``max_retries``).
    """

    def __init__(self, pool: ReplicaPool, **kwargs: Any) -> None:
        # one HTTP client for every replica, refusing redirects to another host
        kwargs["http_client"] = same_origin_client(kwargs.get("http_client"))
        super().__init__(base_url=pool.urls[0], **kwargs)
        self.pool = pool
        self.endpoint_identity = endpoint_identity(pool.urls)
        self._replica_clients = [AsyncOpenAI(base_url=url, **kwargs) for url in pool.urls]
        self._wait_limit = float(getattr(self.timeout, "read", None) or self.timeout or 60.0)  # type: ignore[arg-type]

    async def post(self, path: str, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        if not path.rstrip("/").endswith(_POOLED_SUFFIXES):
            return await self._replica_clients[0].post(path, *args, **kwargs)
        ticket = await self._ticket()
        outcome: Outcome = "cancelled"
        try:
            reply = await self._replica_clients[ticket.index].post(path, *args, **kwargs)
        except Exception as exc:
            outcome = "failed" if _replica_failed(exc) else "ok"
            raise
        else:
            outcome = "ok"
            return reply
        finally:
            self.pool.release(ticket, outcome)

    async def _ticket(self) -> _Ticket:
        """A replica to send to, waiting (at most the time-out) while every one is resting."""
        waited = 0.0
        while True:
            ticket, wait = self.pool.acquire()
            if ticket is not None:
                return ticket
            left = self._wait_limit - waited
            if left <= 0:
                raise openai.APIConnectionError(  # the runner retries it like a refused connection
                    message=f"every replica of the pool is resting (waited {waited:.1f} s)",
                    request=cast(Any, None),  # no request was made
                )
            step = min(wait, left)
            await asyncio.sleep(step)
            waited += step

    async def close(self) -> None:
        for client in self._replica_clients:
            await client.close()
        await super().close()
