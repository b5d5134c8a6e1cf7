"""Where results go as they arrive, and how a run learns what is already done or cancelled.

A :class:`ResultSink` is told about every result the moment it exists (:meth:`~ResultSink.record`),
so nothing paid for is lost when a run is interrupted. Before starting, the runner asks it which
``(item_id, order)`` pairs are :meth:`~ResultSink.finished`; those are skipped, which is how a run
resumes. Finished means ``ok`` or ``unparsed``: a ``failed`` result is tried again by the next run.
The runner polls :meth:`~ResultSink.is_cancelled` to stop early. A sink may also offer
``record_many(results)``: the runner then hands it the results that exist all at once (cache hits at
the start of a run) in one call, so that it can write them in one transaction.

:class:`MemorySink` keeps results in a dict; :class:`JsonlSink` appends one JSON line per result to a
file (the command line's output and resume state). The dashboard's database-backed sink implements the
same protocol.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol, runtime_checkable

from evalcore.judge._result import JudgeResult

__all__ = ["FINISHED_STATUSES", "JsonlSink", "MemorySink", "ResultSink", "record_all"]

#: Statuses that end an (item, order): a later run skips them.
FINISHED_STATUSES = frozenset({"ok", "unparsed"})


@runtime_checkable
class ResultSink(Protocol):
    """Receives results as they arrive; knows what is finished; says when to stop."""

    def finished(self) -> set[tuple[str, str]]:
        """``(item_id, order)`` pairs that need no more work."""
        ...

    def record(self, result: JudgeResult) -> None:
        """Persist one result now (called once per result, in the runner's thread)."""
        ...

    def is_cancelled(self) -> bool:
        """Whether the run should stop starting new requests."""
        ...


def record_all(sink: ResultSink, results: list[JudgeResult]) -> None:
    """Hand ``results`` to ``sink`` in one ``record_many`` call when it has one, else one by one."""
    many = getattr(sink, "record_many", None)
    if many is not None:
        many(results)
    else:
        for result in results:
            sink.record(result)


class MemorySink:
    """Results in memory, latest per ``(item_id, order)``; cancel with :meth:`cancel`.

    ``cancel_event`` may be shared with another thread (a UI's stop button).
    """

    def __init__(self, cancel_event: threading.Event | None = None) -> None:
        self.results: dict[tuple[str, str], JudgeResult] = {}
        self.records = 0  #: how many times :meth:`record` was called
        self._cancel = cancel_event or threading.Event()

    def finished(self) -> set[tuple[str, str]]:
        return {k for k, r in self.results.items() if r.status in FINISHED_STATUSES}

    def record(self, result: JudgeResult) -> None:
        self.results[(result.item_id, result.order)] = result
        self.records += 1

    def record_many(self, results: list[JudgeResult]) -> None:
        for result in results:
            self.record(result)

    def is_cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        self._cancel.set()

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self) -> Iterator[JudgeResult]:
        return iter(self.results.values())


class JsonlSink:
    """One JSON line per result, appended and flushed as each result arrives.

    Opening an existing file reads it to learn what is finished. Lines of ``failed`` results, a torn
    last line (from a crash mid-write) and older duplicates are dropped by rewriting the file
    atomically, so the file always holds at most one line per ``(item_id, order)``.
    """

    def __init__(self, path: str | Path, *, cancel_event: threading.Event | None = None) -> None:
        self.path = Path(path)
        self._cancel = cancel_event or threading.Event()
        self._lock = threading.Lock()
        self._latest: dict[tuple[str, str], JudgeResult] = {}
        self._load()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("a", encoding="utf-8")

    def _load(self) -> None:
        if not self.path.exists():
            return
        kept: dict[tuple[str, str], str] = {}
        dirty = False
        with self.path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                text = line.strip()
                if not text:
                    continue
                try:
                    result = JudgeResult.from_dict(json.loads(text))
                except (ValueError, KeyError, TypeError):
                    dirty = True
                    continue
                if result.key in kept:
                    dirty = True
                if result.status in FINISHED_STATUSES:
                    kept[result.key] = text
                    self._latest[result.key] = result
                else:
                    dirty = True
                    kept.pop(result.key, None)
                    self._latest.pop(result.key, None)
        if dirty:
            temp = self.path.with_name(self.path.name + ".tmp")
            with temp.open("w", encoding="utf-8") as out:
                for text in kept.values():
                    out.write(text + "\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, self.path)

    def finished(self) -> set[tuple[str, str]]:
        with self._lock:
            return {k for k, r in self._latest.items() if r.status in FINISHED_STATUSES}

    def record(self, result: JudgeResult) -> None:
        line = json.dumps(result.to_dict(), ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()
            self._latest[result.key] = result

    def record_many(self, results: list[JudgeResult]) -> None:
        """Record results that exist all at once (cache hits) with one write."""
        dumps = json.dumps
        text = "".join(
            dumps(r.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n" for r in results
        )
        with self._lock:
            self._file.write(text)
            self._file.flush()
            for result in results:
                self._latest[result.key] = result

    def is_cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        self._cancel.set()

    def results(self) -> list[JudgeResult]:
        """The latest result per ``(item_id, order)`` known to this sink."""
        with self._lock:
            return list(self._latest.values())

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()

    def __enter__(self) -> JsonlSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
