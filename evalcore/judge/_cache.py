"""Content-addressed reply caches.

The key of a request is the sha256 of exactly what is sent: the rendered messages, the model and every
model setting (temperature, max_tokens, seed, n, logprobs, top_logprobs, response_format). The cached
payload is the endpoint's reply (texts, finish reasons, logprobs) with its token counts and cost, not a
parsed label, so a change of parser re-reads cached replies without paying for them again.

:class:`MemoryCache` lives for a process; :class:`SqliteCache` is a small file for the command line.
The dashboard's database-backed cache implements the same :class:`ReplyCache` protocol.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = ["MemoryCache", "ReplyCache", "SqliteCache", "get_many"]


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
    """A cache in one SQLite file (stdlib ``sqlite3``, WAL mode), safe to share between threads.

    Writes are grouped: a transaction is committed after ``batch`` puts or ``max_delay`` seconds
    (checked at each put), and before every read and on :meth:`close`, so a crash loses at most the
    last few replies (which a later run simply asks for again), never the file.
    """

    _CHUNK = 500

    def __init__(self, path: str | Path, *, batch: int = 64, max_delay: float = 0.5) -> None:
        self.path = Path(path)
        self._batch = batch
        self._max_delay = max_delay
        self._pending = 0
        self._since = 0.0
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS replies ("
            " key TEXT PRIMARY KEY, model TEXT NOT NULL, payload TEXT NOT NULL,"
            " created_at REAL NOT NULL)"
        )

    def _commit(self) -> None:
        if self._pending:
            self._conn.execute("COMMIT")
            self._pending = 0

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            self._commit()
            row = self._conn.execute("SELECT payload FROM replies WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        keys = list(dict.fromkeys(keys))
        with self._lock:
            self._commit()
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
            if not self._pending:
                self._conn.execute("BEGIN")
                self._since = now
            self._conn.execute(
                "INSERT OR REPLACE INTO replies (key, model, payload, created_at) VALUES (?, ?, ?, ?)",
                (key, model, text, time.time()),
            )
            self._pending += 1
            if self._pending >= self._batch or now - self._since >= self._max_delay:
                self._commit()

    def flush(self) -> None:
        """Commit the replies put so far."""
        with self._lock:
            self._commit()

    def __len__(self) -> int:
        with self._lock:
            self._commit()
            return int(self._conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._commit()
            self._conn.close()

    def __enter__(self) -> SqliteCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
