"""Batch files and batch runs: a run's requests sent through a provider's Batch API, or through an
offline engine (``vllm run-batch``), and their replies read back.

The files are in the OpenAI batch format, which ``vllm run-batch`` also reads and writes:

- a request line is ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}``,
  where ``custom_id`` is the request's reply-cache key (:func:`~evalcore.judge.cache_key`) and
  ``body`` exactly what a live run posts (:meth:`~evalcore.judge.Runner.batch_requests`);
  :func:`write_batch_files` splits them at :data:`MAX_BATCH_REQUESTS` requests or
  :data:`MAX_BATCH_BYTES` bytes per file;
- an output or error line is ``{"custom_id", "response": {"status_code", "body"}, "error"}``;
  :class:`BatchOutput` reads them into reply-cache payloads (a success) or the provider's error (a
  failure) by ``custom_id``, and names each line it cannot read by file and line number.

One parsing path: the replies are handed to the normal runner through a
:class:`~evalcore.judge.BatchReplies` client source, so parsing, statuses and results are those of a
live run. :func:`run_batch` is the whole batch run against an OpenAI-compatible Batch API: write
and upload the files, create the batches (their ids recorded in a :class:`BatchLedger` before
anything else can fail, so a restart resumes them and never submits one twice), poll, download the
output and error files, retry what the provider failed or let expire (live, in a follow-up batch,
or not at all), and import.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeAlias

import openai

from evalcore.errors import ConfigError
from evalcore.judge._cache import get_many
from evalcore.judge._requests import payload_from_response, summarise_status_error
from evalcore.judge._result import Progress, RunSummary
from evalcore.limits import JsonTooDeepError, load_json
from evalcore.words import plural

if TYPE_CHECKING:
    from evalcore.judge._cache import ReplyCache
    from evalcore.judge._requests import BatchReplies
    from evalcore.judge._runner import Runner
    from evalcore.judge._sink import ResultSink
    from evalcore.judge._template import JudgeItem

__all__ = [
    "BATCH_URL",
    "COMPLETION_WINDOW",
    "MAX_BATCH_BYTES",
    "MAX_BATCH_REQUESTS",
    "BatchEntry",
    "BatchFile",
    "BatchLedger",
    "BatchOptions",
    "BatchOutput",
    "BatchRequest",
    "BatchRetry",
    "JsonBatchLedger",
    "run_batch",
    "split_names",
    "write_batch_files",
]

#: The most requests one batch input file may hold (the OpenAI Batch API's limit).
MAX_BATCH_REQUESTS = 50_000
#: The largest batch input file, in bytes (the OpenAI Batch API's limit).
MAX_BATCH_BYTES = 200 * 1024 * 1024
#: The endpoint every request line names.
BATCH_URL: Final = "/v1/chat/completions"
#: How long a provider may take over a batch.
COMPLETION_WINDOW: Final = "24h"
#: What happens to requests a batch failed or let expire: sent live by the same run, sent in a
#: follow-up batch, or recorded as failed with the provider's error.
BatchRetry: TypeAlias = Literal["live", "batch", "none"]

_TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
_ERROR_CHARS = 200


@dataclass(frozen=True)
class BatchRequest:
    """One line of a batch input file: the request's cache key and its chat-completions body."""

    custom_id: str
    body: Mapping[str, Any]

    def line(self) -> str:
        """The request as one JSON line (no newline)."""
        record = {
            "custom_id": self.custom_id,
            "method": "POST",
            "url": BATCH_URL,
            "body": self.body,
        }
        return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class BatchFile:
    """A batch input file written by :func:`write_batch_files`."""

    path: Path
    requests: int
    bytes: int


def split_names(out: Path, count: int) -> list[Path]:
    """The names of ``count`` files for ``out``: ``out`` itself for one, else ``STEM-001.jsonl`` …

    >>> [p.name for p in split_names(Path("requests.jsonl"), 2)]
    ['requests-001.jsonl', 'requests-002.jsonl']
    """
    if count == 1:
        return [out]
    return [out.with_name(f"{out.stem}-{i:03d}{out.suffix}") for i in range(1, count + 1)]


def write_batch_files(
    requests: Iterable[BatchRequest],
    out: str | Path,
    *,
    max_requests: int = MAX_BATCH_REQUESTS,
    max_bytes: int = MAX_BATCH_BYTES,
) -> list[BatchFile]:
    """Write ``requests`` as batch input files: ``out`` when they fit in one file, else
    ``STEM-001.jsonl``, ``STEM-002.jsonl`` … beside it, each with at most ``max_requests`` lines and
    ``max_bytes`` bytes. Streams: one request is in memory at a time. No request, no file.

    Raises :class:`~evalcore.errors.ConfigError` for a request larger than ``max_bytes`` alone.
    """
    if max_requests < 1 or max_bytes < 1:
        raise ConfigError("batch files need room for at least one request")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    parts: list[Path] = []
    counts: list[tuple[int, int]] = []
    handle = None
    lines = size = 0
    try:
        for request in requests:
            data = (request.line() + "\n").encode("utf-8")
            if len(data) > max_bytes:
                raise ConfigError(
                    f"request {request.custom_id[:12]}… is {len(data):,} bytes, more than a batch "
                    f"file may hold ({max_bytes:,})"
                )
            if handle is None or lines >= max_requests or size + len(data) > max_bytes:
                if handle is not None:
                    handle.close()
                    counts.append((lines, size))
                part = out.with_name(f"{out.name}.part{len(parts) + 1}")
                parts.append(part)
                handle = part.open("wb")
                lines = size = 0
            handle.write(data)
            lines += 1
            size += len(data)
        if handle is not None:
            handle.close()
            counts.append((lines, size))
            handle = None
    finally:
        if handle is not None:
            handle.close()
    names = split_names(out, len(parts)) if parts else []
    written: list[BatchFile] = []
    for part, name, (n, b) in zip(parts, names, counts, strict=True):
        os.replace(part, name)
        written.append(BatchFile(name, n, b))
    return written


def _short(text: str, limit: int = _ERROR_CHARS) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _line_error(status: int | None, body: Any, error: Any) -> str:
    """The provider's reason for a request without a reply, on one line."""
    if isinstance(error, Mapping) and ("code" in error or "message" in error) and not status:
        code = error.get("code") or error.get("type") or ""
        message = _short(str(error.get("message") or "no message"))
        return (
            f"the batch did not answer ({code}): {message}"
            if code
            else f"the batch did not answer: {message}"
        )
    if isinstance(error, str) and error.strip():
        head = f"HTTP {status}" if status else "the batch did not answer"
        return f"{head}: {_short(error)}"
    detail = body if isinstance(body, Mapping) else error
    if isinstance(detail, Mapping):
        return summarise_status_error(int(status or 0), detail, "application/json")
    return f"HTTP {status}: no reply body" if status else "the batch line has no reply"


class BatchOutput:
    """The replies of batch output and error files, by ``custom_id``.

    :meth:`read` takes a file (or its lines): a success (``status_code`` 200 with a body that has
    ``choices``) becomes a reply-cache payload priced at ``prices`` (batch prices: a model without
    one gets no cost), any other line the provider's error. A success wins over an error for the
    same id (a follow-up batch answered what an earlier one failed). A line that is not a JSON
    object with a ``custom_id`` is kept in :attr:`problems` as ``FILE line N: why`` and skipped.
    """

    def __init__(self, model: str, prices: Mapping[str, tuple[float, float]] | None = None) -> None:
        self.model = model
        self.prices: Mapping[str, tuple[float, float]] = prices or {}
        self.replies: dict[str, dict[str, Any]] = {}
        self.errors: dict[str, str] = {}
        self.problems: list[str] = []
        self.lines = 0
        #: why a request has no line at all (a batch that failed or stopped before it)
        self.missing = "no reply for this request in the batch output"

    def read(self, source: str | Path | Iterable[str | bytes], *, name: str | None = None) -> int:
        """Read one output or error file (a path, or its lines with ``name``); returns the lines
        read, problems included."""
        if isinstance(source, str | Path):
            path = Path(source)
            label = name or str(path)
            if not path.exists():
                raise ConfigError(f"batch output file {path} does not exist")
            with path.open("rb") as handle:
                return self._read_lines(handle, label)
        return self._read_lines(source, name or "batch output")

    async def read_async(self, lines: AsyncIterator[str | bytes], *, name: str) -> int:
        """:meth:`read` of lines that arrive as they are downloaded."""
        count = 0
        number = 0
        async for line in lines:
            number += 1
            count += self._take(line, number, name)
        return count

    def _read_lines(self, lines: Iterable[str | bytes], label: str) -> int:
        count = 0
        for number, line in enumerate(lines, start=1):
            count += self._take(line, number, label)
        return count

    def _take(self, line: str | bytes, number: int, label: str) -> int:
        text = (line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line).strip()
        if not text:
            return 0
        self.lines += 1
        where = f"{label} line {number}"
        problem = self.add_line(text, where=where)
        if problem:
            self.problems.append(f"{where}: {problem}")
        return 1

    def add_line(self, text: str, *, where: str = "") -> str:
        """Take one output line; returns why it could not be read ("" when it could).

        A line with a ``custom_id`` whose reply is malformed (no ``choices``, a token count that
        is not a whole number from 0 to :data:`~evalcore.limits.MAX_TOKEN_COUNT`) records that
        request as failed with the reason, prefixed by ``where`` (the file and line).
        """
        try:
            record = load_json(text)
        except JsonTooDeepError as exc:
            return f"nested deeper than {exc.limit} levels of arrays and objects"
        except json.JSONDecodeError as exc:
            return f"not JSON ({exc.msg})"
        except ValueError as exc:  # a number too long to convert, and the like
            return f"not JSON ({exc})"
        if not isinstance(record, Mapping):
            return "not a JSON object"
        custom_id = record.get("custom_id")
        if not isinstance(custom_id, str) or not custom_id:
            return "no custom_id"
        response = record.get("response")
        error = record.get("error")
        status: int | None = None
        body: Any = None
        if isinstance(response, Mapping):
            raw_status = response.get("status_code")
            status = raw_status if isinstance(raw_status, int) else None
            body = response.get("body")
        if status == 200 and isinstance(body, Mapping) and not error:
            try:
                payload = payload_from_response(body, self.model, 0.0, self.prices)
            except (ValueError, TypeError, AttributeError, OverflowError) as exc:
                at = f"{where}: " if where else ""
                self._fail(custom_id, f"{at}malformed response body: {_short(str(exc))}")
                return ""
            self.replies[custom_id] = payload
            self.errors.pop(custom_id, None)
            return ""
        self._fail(custom_id, _line_error(status, body, error))
        return ""

    def _fail(self, custom_id: str, message: str) -> None:
        if custom_id not in self.replies:
            self.errors[custom_id] = message


@dataclass
class BatchEntry:
    """One provider batch of a run, as the ledger keeps it.

    ``round`` is 0 for the run's first batches and counts follow-up batches; ``index`` numbers the
    files of a round. ``path`` is the local input file until it is uploaded (``file_id``), then the
    batch is created (``batch_id``). The rest mirrors the provider's last answer.
    """

    round: int
    index: int
    path: str
    requests: int
    file_id: str = ""
    batch_id: str = ""
    status: str = "written"
    completed: int = 0
    failed: int = 0
    output_file_id: str = ""
    error_file_id: str = ""
    error: str = ""

    @property
    def terminal(self) -> bool:
        """Whether the provider is done with the batch (completed, failed, expired, cancelled)."""
        return self.status in _TERMINAL

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BatchEntry:
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in names})


class BatchLedger(Protocol):
    """Where a run keeps its batches: written at once on every change, read on a restart."""

    def load(self) -> list[BatchEntry]:
        """The run's batches so far (none for a new run)."""
        ...

    def save(self, entries: list[BatchEntry]) -> None:
        """Keep ``entries`` (every batch of the run) durably before returning."""
        ...

    def clear(self) -> None:
        """Forget the batches once their replies are imported (a later run starts anew)."""
        ...


class JsonBatchLedger:
    """A ledger in a JSON file (the command line's ``OUT.batches.json``), replaced atomically.

    ``identity`` (the endpoint, model and dataset) is written with the batches; a file written for
    another run is refused, so its batches are never imported into the wrong results.
    """

    def __init__(self, path: str | Path, identity: Mapping[str, Any]) -> None:
        self.path = Path(path)
        self.identity = dict(identity)

    def load(self) -> list[BatchEntry]:
        if not self.path.exists():
            return []
        try:
            data = load_json(self.path.read_text(encoding="utf-8"))
            entries = [BatchEntry.from_dict(e) for e in data.get("batches", [])]
        except (ValueError, TypeError, AttributeError) as exc:  # nested too deeply too
            raise ConfigError(f"cannot read the batch state {self.path}: {exc}") from None
        if data.get("identity") != self.identity:
            raise ConfigError(
                f"{self.path} records the batches of another run ({data.get('identity')}); "
                "use another --out or delete the file"
            )
        return entries

    def save(self, entries: list[BatchEntry]) -> None:
        data = {"identity": self.identity, "batches": [e.to_dict() for e in entries]}
        temp = self.path.with_name(self.path.name + ".tmp")
        with temp.open("w", encoding="utf-8") as handle:
            json.dump(data, handle, ensure_ascii=False, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, self.path)

    def clear(self) -> None:
        """Forget the batches (after their replies were imported)."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


@dataclass(frozen=True)
class BatchOptions:
    """How a batch run goes: ``poll_s`` seconds between status checks, what to do with requests
    the provider failed or let expire (``retry``; at most ``follow_ups`` follow-up batches), the
    file limits, where the input files are written (``work_dir``), the batch ``prices`` of the
    replies (a model without one gets no cost), and how long a cancelled batch may take to stop."""

    poll_s: float = 60.0
    retry: BatchRetry = "live"
    follow_ups: int = 2
    max_requests: int = MAX_BATCH_REQUESTS
    max_bytes: int = MAX_BATCH_BYTES
    work_dir: Path = field(default_factory=lambda: Path("."))
    prices: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    cancel_wait_s: float = 60.0
    metadata: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.poll_s < 0:
            raise ConfigError(f"the batch poll interval must be 0 or more, not {self.poll_s}")
        if self.retry not in ("live", "batch", "none"):
            raise ConfigError(f"batch retry must be live, batch or none, not {self.retry!r}")


Notify: TypeAlias = Callable[[str], None]


class _BatchRun:
    """The state of one :func:`run_batch` call."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        ledger: BatchLedger,
        options: BatchOptions,
        sink: ResultSink,
        notify: Notify,
        is_cancel: Callable[[], bool],
    ) -> None:
        self.client = client
        self.is_cancel = is_cancel
        #: the run was stopped without a cancel (a shutdown): the batches go on, for a resume
        self.stopped = False
        self.ledger = ledger
        self.options = options
        self.sink = sink
        self.notify = notify
        self.entries = ledger.load()
        self.cancelled = False

    def save(self) -> None:
        self.ledger.save(self.entries)

    def round_entries(self, number: int) -> list[BatchEntry]:
        return [e for e in self.entries if e.round == number]

    @staticmethod
    def lost(entries: list[BatchEntry]) -> bool:
        """Whether a round's files were written but none uploaded, and some are gone."""
        return not any(e.file_id for e in entries) and any(
            not Path(e.path).exists() for e in entries
        )

    def add_round(self, number: int, requests: Iterable[BatchRequest]) -> list[BatchEntry]:
        """Write a round's input files and record them (before anything is uploaded)."""
        out = self.options.work_dir / f"batch-round{number}.jsonl"
        files = write_batch_files(
            requests,
            out,
            max_requests=self.options.max_requests,
            max_bytes=self.options.max_bytes,
        )
        added = [BatchEntry(number, i, str(f.path), f.requests) for i, f in enumerate(files)]
        self.entries.extend(added)
        self.save()
        return added

    async def submit(self, entries: list[BatchEntry]) -> None:
        """Upload and create every batch of a round not created yet; each id is saved as soon as
        it exists, and a file uploaded before a crash is looked up among the batches first."""
        for entry in entries:
            if entry.batch_id:
                continue
            if not entry.file_id:
                path = Path(entry.path)
                if not path.exists():
                    raise ConfigError(
                        f"the batch input file {path} is gone before it was uploaded; delete "
                        "the batch state to start the batch over"
                    )
                uploaded = await self.client.files.create(file=path, purpose="batch")
                entry.file_id = uploaded.id
                entry.status = "uploaded"
                self.save()
            found = await self._batch_of_file(entry.file_id)
            if found is None:
                batch = await self.client.batches.create(
                    input_file_id=entry.file_id,
                    endpoint=BATCH_URL,
                    completion_window=COMPLETION_WINDOW,
                    metadata=dict(self.options.metadata) or None,
                )
                found = batch.id
            entry.batch_id = found
            entry.status = "submitted"
            self.save()
            self.notify(f"batch {entry.batch_id}: submitted, {plural(entry.requests, 'request')}")
        for entry in entries:
            with contextlib.suppress(OSError):
                Path(entry.path).unlink(missing_ok=True)

    async def _batch_of_file(self, file_id: str) -> str | None:
        """The batch already created for an uploaded file (a restart between the two calls)."""
        try:
            async for batch in self.client.batches.list(limit=100):
                if batch.input_file_id == file_id:
                    return str(batch.id)
        except openai.APIError:  # a provider without a batch list: create the batch
            return None
        return None

    async def wait(self, entries: list[BatchEntry]) -> None:
        """Poll a round's batches until each is over; a cancel of the run cancels them."""
        cancel_deadline: float | None = None
        while True:
            for entry in entries:
                if not entry.terminal:
                    await self._refresh(entry)
            self.save()
            if all(e.terminal for e in entries):
                return
            if not self.cancelled and self.sink.is_cancelled():
                if not self.is_cancel():
                    self.stopped = True
                    return
                self.cancelled = True
                cancel_deadline = time.monotonic() + self.options.cancel_wait_s
                for entry in entries:
                    if not entry.terminal:
                        await self.client.batches.cancel(entry.batch_id)
                        self.notify(f"batch {entry.batch_id}: cancelling")
            if cancel_deadline is not None and time.monotonic() > cancel_deadline:
                return
            await self._sleep(self.options.poll_s if not self.cancelled else 1.0)

    async def _sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self.cancelled and not self.sink.is_cancelled():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            await asyncio.sleep(min(1.0, left))
        if self.cancelled:
            left = deadline - time.monotonic()
            if left > 0:
                await asyncio.sleep(left)

    async def _refresh(self, entry: BatchEntry) -> None:
        batch = await self.client.batches.retrieve(entry.batch_id)
        counts = batch.request_counts
        before = (entry.status, entry.completed, entry.failed)
        entry.status = str(batch.status)
        entry.completed = int(counts.completed) if counts is not None else 0
        entry.failed = int(counts.failed) if counts is not None else 0
        entry.output_file_id = batch.output_file_id or ""
        entry.error_file_id = batch.error_file_id or ""
        errors = getattr(batch, "errors", None)
        data = getattr(errors, "data", None) or []
        if data:
            first = data[0]
            entry.error = _short(f"{first.code or 'error'}: {first.message or ''}")
        if (entry.status, entry.completed, entry.failed) != before:
            self.notify(
                f"batch {entry.batch_id}: {entry.status}, {entry.completed:,}/{entry.requests:,} "
                f"answered, {entry.failed:,} failed"
            )

    async def download(self, entries: list[BatchEntry], output: BatchOutput) -> None:
        """Read the output and error files of a round's finished batches into ``output``."""
        for entry in entries:
            for file_id in (entry.output_file_id, entry.error_file_id):
                if not file_id:
                    continue
                async with self.client.files.with_streaming_response.content(file_id) as response:
                    await output.read_async(response.iter_lines(), name=f"batch file {file_id}")
            if entry.status != "completed":
                reason = f": {entry.error}" if entry.error else ""
                output.missing = f"batch {entry.batch_id} ended {entry.status}{reason}"


class _Answered:
    """A reply cache that also answers from ``replies`` (and keeps them in ``cache`` when read)."""

    def __init__(
        self, cache: ReplyCache | None, replies: Mapping[str, dict[str, Any]], model: str
    ) -> None:
        self._cache = cache
        self._replies = replies
        self._model = model

    def get(self, key: str) -> dict[str, Any] | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        keys = list(keys)
        found = {k: self._replies[k] for k in keys if k in self._replies}
        if self._cache is not None:
            for key, payload in found.items():
                self._cache.put(key, self._model, payload)
            rest = [k for k in keys if k not in found]
            if rest:
                found.update(get_many(self._cache, rest))
        return found

    def put(self, key: str, model: str, payload: dict[str, Any]) -> None:
        if self._cache is not None:
            self._cache.put(key, model, payload)

    def flush(self) -> None:
        flush = getattr(self._cache, "flush", None)
        if flush is not None:
            flush()


def _always() -> bool:
    return True


def _peek(requests: Iterator[BatchRequest]) -> Iterator[BatchRequest] | None:
    """``requests`` unchanged, or ``None`` when there is none (without reading past the first)."""
    first = next(requests, None)
    return None if first is None else itertools.chain([first], requests)


async def run_batch(
    runner: Runner,
    items: Iterable[JudgeItem],
    sink: ResultSink,
    cache: ReplyCache | None,
    *,
    replies: BatchReplies,
    ledger: BatchLedger,
    options: BatchOptions,
    progress: Callable[[Progress], None] | None = None,
    notify: Notify | None = None,
    is_cancel: Callable[[], bool] | None = None,
) -> RunSummary:
    """Judge ``items`` through the provider's Batch API, then import the replies with the normal
    runner (``runner``, built with ``replies`` as its client source).

    Every request not answered by ``cache`` nor finished in ``sink`` goes into batch files
    (:meth:`~evalcore.judge.Runner.batch_requests`), uploaded with ``files.create(purpose="batch")``
    and sent with ``batches.create``; each id is kept in ``ledger`` the moment it exists, so a
    restart resumes the recorded batches instead of creating them again. The batches are polled
    every ``options.poll_s`` seconds (``notify`` hears each change), their output and error files
    downloaded, and what they did not answer is retried as ``options.retry`` says. A cancel
    (``sink.is_cancelled()``) cancels the provider's batches and keeps what they answered, unless
    ``is_cancel()`` says the stop is not a cancel (a server shutting down): then the batches go on
    and the run returns cancelled, to be resumed from the ledger.
    """
    tell = notify or (lambda _message: None)
    pending_items = list(items)
    output = BatchOutput(runner.model, options.prices)
    live = replies.live
    replies.live = False
    state: _BatchRun | None = None
    client: openai.AsyncOpenAI | None = None
    try:
        number = 0
        while True:
            entries = [e for e in (state.entries if state else ledger.load()) if e.round == number]
            fresh: Iterator[BatchRequest] | None = None
            if not entries:
                fresh = _peek(
                    r
                    for r in runner.batch_requests(pending_items, cache, sink)
                    if r.custom_id not in output.replies
                )
                if fresh is None:
                    break
            if state is None:
                client = replies()
                state = _BatchRun(client, ledger, options, sink, tell, is_cancel or _always)
            if entries and state.lost(entries):
                # written but never uploaded, and the files are gone (another host, a cleaned
                # temporary folder): write the round again
                state.entries = [e for e in state.entries if e.round != number]
                fresh = _peek(
                    r
                    for r in runner.batch_requests(pending_items, cache, sink)
                    if r.custom_id not in output.replies
                )
                if fresh is None:
                    break
            if fresh is not None:
                if number:
                    tell("requests the batches did not answer go into a follow-up batch")
                entries = state.add_round(number, fresh)
            await state.submit(entries)
            await state.wait(entries)
            if state.stopped:
                break
            await state.download(entries, output)
            if state.cancelled or options.retry != "batch" or number >= options.follow_ups:
                break
            number += 1
    finally:
        if client is not None and not isinstance(replies.source, openai.AsyncOpenAI):
            await client.close()
    if state is not None and state.stopped:
        return await runner.run(pending_items, sink, cache, progress=progress)
    for problem in output.problems:
        tell(problem)
    cancelled = state is not None and state.cancelled
    replies.replies = output.replies
    replies.errors = output.errors
    replies.missing = output.missing
    replies.live = live and options.retry == "live" and not cancelled
    run_cache = cache
    if cancelled:
        # a cancelled run records only what the cache answers: keep what the batches answered
        run_cache = _Answered(cache, output.replies, runner.model)
    summary = await runner.run(pending_items, sink, run_cache, progress=progress)
    if not summary.cancelled:
        ledger.clear()
    return summary
