"""A small, thread-safe, least-recently-used memo for results that are costly to compute.

The workflow layer keeps computed views (calibrations, loaded files, a dataset's items) here, keyed
by what they were computed from: the data's version, ids that never change, a file's digest. It holds
no access logic: every workflow call checks the caller before it asks the memo.

>>> memo = Memo(max_entries=2)
>>> memo.get(("a",), lambda: 1), memo.get(("a",), lambda: 2)
(1, 1)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

__all__ = ["Memo"]

_T = TypeVar("_T")


class Memo:
    """Keep up to ``max_entries`` values; the least recently used goes first. Two threads asking
    for the same missing key compute it once (the second waits for the first)."""

    def __init__(self, max_entries: int = 64) -> None:
        self.max_entries = max_entries
        self._values: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._making: dict[Hashable, threading.Lock] = {}

    def get(self, key: Hashable, make: Callable[[], _T]) -> _T:
        """The value kept under ``key``, made by ``make()`` when there is none (an exception from
        ``make`` is raised and nothing is kept)."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]  # type: ignore[no-any-return]
            making = self._making.setdefault(key, threading.Lock())
        with making:
            with self._lock:
                if key in self._values:
                    self._values.move_to_end(key)
                    return self._values[key]  # type: ignore[no-any-return]
            try:
                value = make()
            finally:
                with self._lock:
                    self._making.pop(key, None)
            with self._lock:
                self._values[key] = value
                self._values.move_to_end(key)
                while len(self._values) > self.max_entries:
                    self._values.popitem(last=False)
            return value

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    def __len__(self) -> int:
        return len(self._values)
