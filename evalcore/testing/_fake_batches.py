"""The Files and Batch API of :class:`~evalcore.testing.FakeOpenAI`, kept on disk.

Uploaded files, batch outputs and error files live in one temporary directory owned by the fake; a batch
reads its input file line by line and appends its answers to its output and error files, so a
100,000-request batch costs a few file handles, never a list of request bodies in memory.

A batch advances only when it is retrieved, which makes tests deterministic: with
``polls_to_complete=N`` the k-th retrieve answers ``k/N`` of the lines (all of them on the N-th).
Each line is answered by the fake's chat-completions path (replies, faults, recording), without
waiting for its latency: a batch has no client time-out to meet.
"""

from __future__ import annotations

import contextlib
import email.message
import json
import math
import mmap
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Literal

__all__ = [
    "BATCH_ENDPOINT",
    "BATCH_MAX_BYTES",
    "BATCH_MAX_REQUESTS",
    "BatchCall",
    "BatchRegistry",
    "FileStore",
    "LineAnswer",
    "read_upload",
]

BATCH_ENDPOINT = "/v1/chat/completions"  #: the only batch endpoint the fake answers
BATCH_MAX_REQUESTS = 50_000  #: the provider's limit of requests per batch file
BATCH_MAX_BYTES = 200 * 1024 * 1024  #: the provider's limit of bytes per batch file
COMPLETION_WINDOW = "24h"
_CHUNK = 1 << 20
_MAX_VALIDATION_ERRORS = 20

BatchStatus = Literal[
    "validating",
    "failed",
    "in_progress",
    "finalizing",
    "completed",
    "expired",
    "cancelling",
    "cancelled",
]
_TERMINAL = frozenset({"failed", "completed", "expired", "cancelled"})


class ApiError(Exception):
    """A request the fake refuses: answered as ``status`` with an OpenAI error object."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


@dataclass(frozen=True)
class BatchCall:
    """One call of the Batch API that the fake received (``kind`` is create, retrieve, cancel or
    list; ``status`` is the batch's status in the reply, empty for a list)."""

    kind: Literal["create", "retrieve", "cancel", "list"]
    batch_id: str
    status: str
    t: float  #: ``time.monotonic()`` when it was answered


@dataclass(frozen=True)
class LineAnswer:
    """How the chat path answered one batch line: the HTTP status, the body and the fault applied."""

    status: int
    payload: bytes
    fault: str | None


# --- files ------------------------------------------------------------------------------------------


@dataclass
class _File:
    id: str
    filename: str
    purpose: str
    size: int
    created_at: int
    path: str

    def as_object(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": self.size,
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }


class FileStore:
    """Files kept in a temporary directory that is removed with the fake (or by :meth:`close`)."""

    def __init__(self) -> None:
        self.root = tempfile.mkdtemp(prefix="evalcore-fake-files-")
        self._lock = threading.Lock()
        self._files: dict[str, _File] = {}
        self._ids = 0
        self._paths = 0

    def close(self) -> None:
        """Remove every stored file."""
        shutil.rmtree(self.root, ignore_errors=True)

    def new_path(self, stem: str) -> str:
        """A fresh path in the store's directory (nothing is registered yet)."""
        with self._lock:
            self._paths += 1
            number = self._paths
        return os.path.join(self.root, f"{number:06d}-{stem}")

    def register(self, path: str, *, filename: str, purpose: str) -> _File:
        """Make the file at ``path`` (inside the store) a file the API serves."""
        with self._lock:
            self._ids += 1
            file_id = f"file-fake{self._ids:06d}"
            record = _File(
                id=file_id,
                filename=filename,
                purpose=purpose,
                size=os.path.getsize(path),
                created_at=int(time.time()),
                path=path,
            )
            self._files[file_id] = record
        return record

    def get(self, file_id: str) -> _File:
        with self._lock:
            record = self._files.get(file_id)
        if record is None:
            raise ApiError(404, f"No such File object: {file_id}")
        return record

    def delete(self, file_id: str) -> None:
        with self._lock:
            record = self._files.pop(file_id, None)
        if record is None:
            raise ApiError(404, f"No such File object: {file_id}")
        with contextlib.suppress(OSError):
            os.remove(record.path)

    def all(self) -> list[_File]:
        with self._lock:
            return list(self._files.values())


# --- multipart upload -------------------------------------------------------------------------------


def _spool_body(rfile: BinaryIO, headers: Any, sink: BinaryIO) -> None:
    """Copy a request body (``Content-Length`` or chunked) into ``sink`` in bounded chunks."""
    if "chunked" in str(headers.get("Transfer-Encoding", "")).lower():
        while True:
            size_line = rfile.readline(1024)
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailer headers
                return
            _copy_exact(rfile, sink, size)
            rfile.readline(8)  # the CRLF after each chunk
    _copy_exact(rfile, sink, int(headers.get("Content-Length") or 0))


def _copy_exact(source: BinaryIO, sink: BinaryIO, size: int) -> None:
    left = size
    while left > 0:
        chunk = source.read(min(_CHUNK, left))
        if not chunk:
            raise ApiError(400, "the request body ended early")
        sink.write(chunk)
        left -= len(chunk)


def read_upload(rfile: BinaryIO, headers: Any, store: FileStore) -> _File:
    """Read a ``multipart/form-data`` upload (fields ``purpose`` and ``file``) into ``store``.

    The body is spooled to disk and the parts are found with ``mmap``, so a 200 MB file never sits
    in memory as one Python object.
    """
    message = email.message.Message()
    message["content-type"] = str(headers.get("Content-Type") or "")
    boundary = message.get_param("boundary")
    if message.get_content_type() != "multipart/form-data" or not isinstance(boundary, str):
        raise ApiError(400, "a file upload must be multipart/form-data")
    spool = store.new_path("upload.part")
    try:
        with open(spool, "w+b") as sink:
            _spool_body(rfile, headers, sink)
            sink.flush()
            if sink.tell() == 0:
                raise ApiError(400, "the upload is empty")
            with mmap.mmap(sink.fileno(), 0, access=mmap.ACCESS_READ) as view:
                purpose, filename, stored = _split_parts(view, boundary.encode(), store)
    finally:
        with contextlib.suppress(OSError):
            os.remove(spool)
    if stored is None:
        raise ApiError(400, "the upload has no 'file' part")
    if purpose is None:
        os.remove(stored)
        raise ApiError(400, "the upload has no 'purpose' field")
    return store.register(stored, filename=filename or "upload.jsonl", purpose=purpose)


def _split_parts(
    view: mmap.mmap, boundary: bytes, store: FileStore
) -> tuple[str | None, str | None, str | None]:
    delimiter = b"--" + boundary
    purpose: str | None = None
    filename: str | None = None
    stored: str | None = None
    position = view.find(delimiter)
    while position >= 0:
        position += len(delimiter)
        if view[position : position + 2] == b"--":
            break
        header_end = view.find(b"\r\n\r\n", position)
        if header_end < 0:
            break
        part = email.message.Message()
        for line in view[position:header_end].decode("utf-8", "replace").split("\r\n"):
            name, _, value = line.partition(":")
            if name.strip():
                part[name.strip()] = value.strip()
        start = header_end + 4
        end = view.find(b"\r\n" + delimiter, start)
        if end < 0:
            raise ApiError(400, "the multipart body is cut short")
        field_name = part.get_param("name", header="content-disposition")
        if field_name == "purpose":
            purpose = view[start:end].decode("utf-8", "replace").strip()
        elif field_name == "file":
            filename = part.get_filename()
            stored = store.new_path("upload.jsonl")
            with open(stored, "wb") as out:
                for offset in range(start, end, _CHUNK):
                    out.write(view[offset : min(end, offset + _CHUNK)])
        position = end + 2
    return purpose, filename, stored


# --- batches ----------------------------------------------------------------------------------------


@dataclass
class _Batch:
    id: str
    input_file: _File
    endpoint: str
    completion_window: str
    metadata: dict[str, str] | None
    created_at: int
    total: int
    model: str | None
    errors: list[dict[str, Any]]
    output_path: str
    error_path: str
    status: BatchStatus = "validating"
    times: dict[str, int] = field(default_factory=dict)
    polls: int = 0
    done: int = 0  #: input lines processed
    offset: int = 0  #: bytes of the input file read so far
    completed: int = 0
    failed: int = 0
    output_file_id: str | None = None
    error_file_id: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def as_object(self) -> dict[str, Any]:
        stamps = {f"{name}_at": self.times.get(name) for name in _STAMPS}
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": self.endpoint,
            "model": self.model,
            "errors": {"object": "list", "data": self.errors} if self.errors else None,
            "input_file_id": self.input_file.id,
            "completion_window": self.completion_window,
            "status": self.status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": self.created_at,
            "expires_at": self.created_at + 24 * 3600,
            **stamps,
            "request_counts": {
                "total": self.total,
                "completed": self.completed,
                "failed": self.failed,
            },
            "metadata": self.metadata,
        }


_STAMPS = ("in_progress", "finalizing", "completed", "failed", "expired", "cancelling", "cancelled")


@dataclass
class BatchControls:
    """What the tests choose about batches (the fake's ``batch_*`` attributes, read at each call)."""

    polls_to_complete: int = 1
    fail_ids: Collection[str] = ()
    expired_ids: Collection[str] = ()
    expire_after: int | None = None
    fail_validation: int = 0
    max_requests: int = BATCH_MAX_REQUESTS
    max_bytes: int = BATCH_MAX_BYTES


class BatchRegistry:
    """Every batch of one fake server, and the log of Batch API calls."""

    def __init__(self, files: FileStore, answer: Callable[[dict[str, Any], str], LineAnswer]):
        self.files = files
        self._answer = answer
        self._lock = threading.Lock()
        self._batches: dict[str, _Batch] = {}
        self._order: list[str] = []
        self._ids = 0
        self._request_ids = 0
        self._failed_validations = 0
        self.log: list[BatchCall] = []

    def calls(self) -> list[BatchCall]:
        with self._lock:
            return list(self.log)

    def clear_log(self) -> None:
        with self._lock:
            self.log.clear()

    def _record(self, kind: Any, batch_id: str, status: str) -> None:
        with self._lock:
            self.log.append(BatchCall(kind, batch_id, status, time.monotonic()))

    def get(self, batch_id: str) -> _Batch:
        with self._lock:
            batch = self._batches.get(batch_id)
        if batch is None:
            raise ApiError(404, f"No such Batch object: {batch_id}")
        return batch

    # --- the API ---------------------------------------------------------------------------------

    def create(self, request: dict[str, Any], controls: BatchControls) -> dict[str, Any]:
        """``POST /v1/batches``: check the request, validate the input file, answer ``validating``."""
        endpoint = request.get("endpoint")
        window = request.get("completion_window")
        metadata = request.get("metadata")
        file_id = request.get("input_file_id")
        if not isinstance(file_id, str):
            raise ApiError(400, "input_file_id is required")
        if endpoint != BATCH_ENDPOINT:
            raise ApiError(400, f"the fake batches only {BATCH_ENDPOINT}, not {endpoint!r}")
        if window != COMPLETION_WINDOW:
            raise ApiError(400, f"completion_window must be {COMPLETION_WINDOW!r}")
        if metadata is not None and not (
            isinstance(metadata, dict)
            and len(metadata) <= 16
            and all(isinstance(v, str) for v in metadata.values())
        ):
            raise ApiError(400, "metadata must be at most 16 string values")
        source = self.files.get(file_id)
        if source.purpose != "batch":
            raise ApiError(400, f"file {file_id} was not uploaded with purpose 'batch'")
        total, model, errors = _validate(source, endpoint, controls)
        with self._lock:
            if self._failed_validations < controls.fail_validation:
                self._failed_validations += 1
                errors = [{"code": "invalid_request", "message": "injected validation failure"}]
            self._ids += 1
            batch_id = f"batch_fake{self._ids:06d}"
        batch = _Batch(
            id=batch_id,
            input_file=source,
            endpoint=endpoint,
            completion_window=window,
            metadata=metadata,
            created_at=int(time.time()),
            total=0 if errors else total,
            model=model,
            errors=errors,
            output_path=self.files.new_path(f"{batch_id}-output.jsonl"),
            error_path=self.files.new_path(f"{batch_id}-errors.jsonl"),
        )
        with self._lock:
            self._batches[batch_id] = batch
            self._order.append(batch_id)
        reply = batch.as_object()
        self._record("create", batch_id, batch.status)
        return reply

    def retrieve(self, batch_id: str, controls: BatchControls) -> dict[str, Any]:
        """``GET /v1/batches/{id}``: advance the batch one poll and answer its state."""
        batch = self.get(batch_id)
        with batch.lock:
            batch.polls += 1
            self._advance(batch, controls)
            reply = batch.as_object()
        self._record("retrieve", batch_id, batch.status)
        return reply

    def cancel(self, batch_id: str) -> dict[str, Any]:
        """``POST /v1/batches/{id}/cancel``: ``cancelling`` now, ``cancelled`` at the next poll."""
        batch = self.get(batch_id)
        with batch.lock:
            if batch.status in _TERMINAL:
                self._record("cancel", batch_id, batch.status)
                raise ApiError(400, f"Cannot cancel a batch with status {batch.status!r}")
            if batch.status != "cancelling":
                batch.status = "cancelling"
                batch.times["cancelling"] = int(time.time())
            reply = batch.as_object()
        self._record("cancel", batch_id, batch.status)
        return reply

    def list(self, *, limit: int, after: str | None) -> dict[str, Any]:
        """``GET /v1/batches``: newest first, paged with ``after``."""
        with self._lock:
            newest_first = list(reversed(self._order))
        if after is not None and after in newest_first:
            newest_first = newest_first[newest_first.index(after) + 1 :]
        page = newest_first[: max(1, limit)]
        data = [self.get(batch_id).as_object() for batch_id in page]
        self._record("list", "", "")
        return {
            "object": "list",
            "data": data,
            "first_id": page[0] if page else None,
            "last_id": page[-1] if page else None,
            "has_more": len(newest_first) > len(page),
        }

    # --- processing ------------------------------------------------------------------------------

    def _advance(self, batch: _Batch, controls: BatchControls) -> None:
        now = int(time.time())
        if batch.status == "validating":
            if batch.errors:
                batch.status = "failed"
                batch.times["failed"] = now
                return
            batch.status = "in_progress"
            batch.times["in_progress"] = now
        if batch.status == "cancelling":
            self._finish(batch, "cancelled")
            return
        if batch.status != "in_progress":
            return
        polls = max(1, controls.polls_to_complete)
        target = (
            batch.total if batch.polls >= polls else math.ceil(batch.total * batch.polls / polls)
        )
        expire_after = controls.expire_after
        if expire_after is not None:
            target = min(target, expire_after)
        self._process(batch, target, controls)
        if batch.done >= batch.total:
            batch.times["finalizing"] = now
            self._finish(batch, "completed")
        elif expire_after is not None and batch.done >= expire_after:
            self._expire_rest(batch)
            self._finish(batch, "expired")

    def _process(self, batch: _Batch, target: int, controls: BatchControls) -> None:
        if batch.done >= target:
            return
        fail_ids, expired_ids = set(controls.fail_ids), set(controls.expired_ids)
        with (
            open(batch.input_file.path, "rb") as source,
            open(batch.output_path, "ab") as output,
            open(batch.error_path, "ab") as errors,
        ):
            source.seek(batch.offset)
            for line in _lines(source):
                custom_id, body = _request_of(line)
                if custom_id in fail_ids:
                    errors.write(self._error_line(custom_id, "server_error", "injected failure"))
                    batch.failed += 1
                elif custom_id in expired_ids:
                    errors.write(self._error_line(custom_id, "batch_expired", _EXPIRED))
                    batch.failed += 1
                else:
                    answer = self._answer(body, batch.id)
                    if answer.status == 200:
                        output.write(self._output_line(custom_id, answer))
                        batch.completed += 1
                    else:
                        errors.write(self._status_line(custom_id, answer))
                        batch.failed += 1
                batch.done += 1
                if batch.done >= target:
                    break
            batch.offset = source.tell()

    def _expire_rest(self, batch: _Batch) -> None:
        with open(batch.input_file.path, "rb") as source, open(batch.error_path, "ab") as errors:
            source.seek(batch.offset)
            for line in _lines(source):
                custom_id, _ = _request_of(line)
                errors.write(self._error_line(custom_id, "batch_expired", _EXPIRED))
                batch.failed += 1
                batch.done += 1
            batch.offset = source.tell()

    def _finish(self, batch: _Batch, status: BatchStatus) -> None:
        batch.status = status
        batch.times[status] = int(time.time())
        for path, attribute, suffix in (
            (batch.output_path, "output_file_id", "output"),
            (batch.error_path, "error_file_id", "errors"),
        ):
            if os.path.exists(path) and os.path.getsize(path) > 0:
                stored = self.files.register(
                    path, filename=f"{batch.id}_{suffix}.jsonl", purpose="batch_output"
                )
                setattr(batch, attribute, stored.id)

    def _next_ids(self) -> tuple[str, str]:
        with self._lock:
            self._request_ids += 1
            number = self._request_ids
        return f"batch_req_fake{number:08d}", f"req_fake{number:08d}"

    def _output_line(self, custom_id: str, answer: LineAnswer) -> bytes:
        line_id, request_id = self._next_ids()
        try:
            json.loads(answer.payload)
            body = answer.payload
        except ValueError:  # a malformed reply: the body is the text that came back
            body = json.dumps(answer.payload.decode("utf-8", "replace")).encode()
        head = json.dumps({"id": line_id, "custom_id": custom_id}).encode()[:-1]
        response = json.dumps({"status_code": 200, "request_id": request_id}).encode()[:-1]
        return head + b', "response": ' + response + b', "body": ' + body + b'}, "error": null}\n'

    def _status_line(self, custom_id: str, answer: LineAnswer) -> bytes:
        line_id, request_id = self._next_ids()
        try:
            body = json.loads(answer.payload)
        except ValueError:
            body = answer.payload.decode("utf-8", "replace")
        inner = body.get("error") if isinstance(body, dict) else None
        inner = inner if isinstance(inner, dict) else {}
        line = {
            "id": line_id,
            "custom_id": custom_id,
            "response": {"status_code": answer.status, "request_id": request_id, "body": body},
            "error": {
                "code": str(inner.get("code") or inner.get("type") or f"http_{answer.status}"),
                "message": str(inner.get("message") or f"HTTP {answer.status}"),
            },
        }
        return json.dumps(line).encode() + b"\n"

    def _error_line(self, custom_id: str, code: str, message: str) -> bytes:
        line_id, _ = self._next_ids()
        line = {
            "id": line_id,
            "custom_id": custom_id,
            "response": None,
            "error": {"code": code, "message": message},
        }
        return json.dumps(line).encode() + b"\n"


_EXPIRED = "This request could not be executed before the completion window expired."


def _lines(source: BinaryIO) -> Iterator[bytes]:
    """The non-blank lines of a file, read one at a time from its current position."""
    for line in source:
        if line.strip():
            yield line


def _request_of(line: bytes) -> tuple[str, dict[str, Any]]:
    """The custom_id and body of an input line that passed validation."""
    request = json.loads(line)
    return str(request["custom_id"]), dict(request["body"])


def _validate(
    source: _File, endpoint: str, controls: BatchControls
) -> tuple[int, str | None, list[dict[str, Any]]]:
    """Count the requests of an input file and list what is wrong with it, as the provider would."""
    errors: list[dict[str, Any]] = []

    def problem(code: str, message: str, line: int | None = None, param: str | None = None) -> None:
        if len(errors) < _MAX_VALIDATION_ERRORS:
            errors.append({"code": code, "message": message, "line": line, "param": param})

    if source.size > controls.max_bytes:
        problem("file_too_large", f"the input file is larger than {controls.max_bytes} bytes")
        return 0, None, errors
    seen: set[str] = set()
    model: str | None = None
    total = 0
    with open(source.path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            total += 1
            try:
                request = json.loads(raw)
            except ValueError:
                problem("invalid_json_line", "this line is not valid JSON", number)
                continue
            if not isinstance(request, dict):
                problem("invalid_json_line", "this line is not a JSON object", number)
                continue
            custom_id = request.get("custom_id")
            body = request.get("body")
            if not isinstance(custom_id, str) or not custom_id:
                problem("missing_required_parameter", "custom_id is missing", number, "custom_id")
            elif custom_id in seen:
                problem("duplicate_custom_id", f"custom_id {custom_id!r} is repeated", number)
            else:
                seen.add(custom_id)
            if request.get("method") != "POST":
                problem("invalid_method", "method must be POST", number, "method")
            if request.get("url") != endpoint:
                problem("invalid_url", f"url must be {endpoint}", number, "url")
            if not isinstance(body, dict) or not isinstance(body.get("model"), str):
                problem("missing_required_parameter", "body.model is missing", number, "body")
            elif model is None:
                model = body["model"]
            elif body["model"] != model:
                problem("mismatched_model", "every request of a batch must use one model", number)
    if total == 0:
        problem("empty_file", "the input file has no requests")
    elif total > controls.max_requests:
        problem(
            "too_many_requests",
            f"a batch holds at most {controls.max_requests} requests, this file has {total}",
        )
    return total, model, errors
