"""Content-addressed reply caches, and the one key function every cache uses.

The key of a request (:func:`cache_key`) is the sha256 of exactly what is sent and where: the
endpoint's base URL (normalised by :func:`normalise_base_url`, so two servers that serve a model of
the same name never share replies), the model, every request parameter (temperature, max_tokens,
seed, n, logprobs, top_logprobs, response_format …) and the rendered messages. The cached payload is
the endpoint's reply (texts, finish reasons, logprobs) with its token counts and cost, not a parsed
label, so a change of parser re-reads cached replies without paying for them again.

:class:`MemoryCache` lives for a process; :class:`SqliteCache` is one SQLite file that any number of
processes may share (the command line keeps one in the user's cache directory, see
:func:`default_cache_path`). The store's database-backed cache implements the same
:class:`ReplyCache` protocol with the same keys.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "CACHE_DIR_ENV",
    "MemoryCache",
    "ReplyCache",
    "SqliteCache",
    "cache_key",
    "default_cache_path",
    "get_many",
    "key_prefix",
    "normalise_base_url",
]

#: Environment variable naming the directory of the command line's shared reply cache.
CACHE_DIR_ENV = "EVALCORE_CACHE_DIR"


def normalise_base_url(url: str) -> str:
    """An endpoint's base URL as it enters a cache key: scheme and host lower-case, no trailing
    slash, no query or fragment.

    >>> normalise_base_url("HTTP://LocalHost:8000/v1/")
    'http://localhost:8000/v1'
    """
    parts = urlsplit(str(url).strip())
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), "", ""))


def key_prefix(
    endpoint: str,
    model: str,
    params: Mapping[str, Any],
    *,
    sample: int = 0,
    replicate: int = 0,
) -> bytes:
    """The part of a key shared by every request of a run (hashed before the messages).

    ``sample`` is the index of a sample asked for by a request of its own (sample 0 is the plain
    request) and ``replicate`` the run's replicate number: each enters the key only when it is not
    0, so the keys of a single-sample, first-replicate request are what they always were, while
    sample 2 or replicate 1 of the same request is a different key and is really sent again.

    >>> key_prefix("http://a/v1", "m", {}) == key_prefix("http://a/v1", "m", {}, sample=0)
    True
    >>> key_prefix("http://a/v1", "m", {}) == key_prefix("http://a/v1", "m", {}, replicate=1)
    False
    """
    head_fields: dict[str, Any] = {
        "endpoint": normalise_base_url(endpoint),
        "model": model,
        "params": params,
    }
    if sample:
        head_fields["sample"] = sample
    if replicate:
        head_fields["replicate"] = replicate
    head = json.dumps(
        head_fields,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return head.encode("utf-8") + b"\x00"


def messages_body(messages: Sequence[Mapping[str, str]]) -> bytes:
    """The messages as they enter a key (compact UTF-8 JSON)."""
    return json.dumps(messages, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def cache_key(
    messages: Sequence[Mapping[str, str]],
    model: str,
    params: Mapping[str, Any],
    *,
    endpoint: str,
    sample: int = 0,
    replicate: int = 0,
) -> str:
    """sha256 of what is sent and where: the endpoint, the model, every parameter, the messages,
    and the sample index and replicate number when they are not 0 (see :func:`key_prefix`).

    >>> a = cache_key([{"role": "user", "content": "hi"}], "m", {}, endpoint="http://a/v1")
    >>> a == cache_key([{"role": "user", "content": "hi"}], "m", {}, endpoint="HTTP://A/v1/")
    True
    >>> a == cache_key([{"role": "user", "content": "hi"}], "m", {}, endpoint="http://b/v1")
    False
    """
    head = key_prefix(endpoint, model, params, sample=sample, replicate=replicate)
    return hashlib.sha256(head + messages_body(messages)).hexdigest()


def default_cache_path() -> Path:
    """The command line's shared reply cache: ``replies.sqlite`` in ``$EVALCORE_CACHE_DIR``, else
    in the user's cache directory (``platformdirs.user_cache_dir("evalcore")``)."""
    folder = os.environ.get(CACHE_DIR_ENV)
    if not folder:
        import platformdirs

        folder = platformdirs.user_cache_dir("evalcore")
    return Path(folder) / "replies.sqlite"


@runtime_checkable
class ReplyCache(Protocol):
    """Where replies are kept by request key. ``get_many(keys) -> dict`` is optional (faster)."""

    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, model: str, payload: dict[str, Any]) -> None: ...


def get_many(cache: ReplyCache, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The cached payloads among ``keys``, using the cache's ``get_many`` when it has one."""
    batch = getattr(cache, "get_many", None)
    if batch is not None:
        return dict(batch(keys))
    found: dict[str, dict[str, Any]] = {}
    for key in keys:
        payload = cache.get(key)
        if payload is not None:
            found[key] = payload
    return found


class MemoryCache:
    """A dict-backed cache for one process (tests, notebooks, benchmarks)."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, Any]] = {}
        self.models: dict[str, str] = {}

    def get(self, key: str) -> dict[str, Any] | None:
        return self._data.get(key)

    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        data = self._data
        return {k: data[k] for k in keys if k in data}

    def put(self, key: str, model: str, payload: dict[str, Any]) -> None:
        self._data[key] = payload
        self.models[key] = model

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data


class SqliteCache:
    """A cache in one SQLite file (stdlib ``sqlite3``), safe to share between threads and between
    processes: WAL mode (readers never wait for a writer), a busy timeout (a writer waits for
    another process's write instead of failing) and short write transactions.

    Puts are buffered in memory and written in one ``BEGIN IMMEDIATE`` transaction after ``batch``
    puts or ``max_delay`` seconds (checked at each put), before every read and on :meth:`close`. A
    put therefore costs the caller's event loop next to nothing, and a crash loses at most the last
    few replies (which a later run simply asks for again), never the file. A key already present is
    kept: every process writes the same reply for the same key.
    """

    _CHUNK = 500

    def __init__(
        self,
        path: str | Path,
        *,
        batch: int = 64,
        max_delay: float = 0.5,
        busy_timeout: float = 30.0,
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._batch = batch
        self._max_delay = max_delay
        self._buffer: list[tuple[str, str, str, float]] = []
        self._since = 0.0
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            str(self.path), check_same_thread=False, isolation_level=None, timeout=busy_timeout
        )
        self._conn.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._setup(busy_timeout)

    def _setup(self, busy_timeout: float) -> None:
        """WAL mode and the table, retried while another process sets the same file up (switching
        the journal mode takes a lock the busy timeout does not wait for)."""
        deadline = time.monotonic() + busy_timeout
        delay = 0.005
        while True:
            try:
                mode = self._conn.execute("PRAGMA journal_mode").fetchone()[0]
                if str(mode).lower() != "wal":
                    self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS replies ("
                    " key TEXT PRIMARY KEY, model TEXT NOT NULL, payload TEXT NOT NULL,"
                    " created_at REAL NOT NULL)"
                )
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(delay)
                delay = min(0.2, delay * 2)

    def _write(self) -> None:
        """Write the buffered puts in one short transaction (called with the lock held)."""
        if not self._buffer:
            return
        rows, self._buffer = self._buffer, []
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            self._conn.executemany(
                "INSERT OR IGNORE INTO replies (key, model, payload, created_at) "
                "VALUES (?, ?, ?, ?)",
                rows,
            )
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            self._write()
            row = self._conn.execute("SELECT payload FROM replies WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        keys = list(dict.fromkeys(keys))
        with self._lock:
            self._write()
            for start in range(0, len(keys), self._CHUNK):
                chunk = keys[start : start + self._CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, payload FROM replies WHERE key IN ({marks})", chunk
                ).fetchall()
                for key, payload in rows:
                    found[key] = json.loads(payload)
        return found

    def put(self, key: str, model: str, payload: dict[str, Any]) -> None:
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        now = time.monotonic()
        with self._lock:
            if not self._buffer:
                self._since = now
            self._buffer.append((key, model, text, time.time()))
            if len(self._buffer) >= self._batch or now - self._since >= self._max_delay:
                self._write()

    def flush(self) -> None:
        """Write the replies put so far."""
        with self._lock:
            self._write()

    def __len__(self) -> int:
        with self._lock:
            self._write()
            return int(self._conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._buffer:
                self._write()
            self._conn.close()

    def __enter__(self) -> SqliteCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
