"""A small, real OpenAI-compatible HTTP server for tests and benchmarks.

The judge is tested through the real ``openai`` client talking HTTP to this server on ``127.0.0.1``, so
retries, time-outs, rate limits and malformed replies exercise exactly the code a user runs. Nothing of
evalcore is mocked.

Usage::

    with FakeOpenAI(latency=0.05, faults=[Fault.status(429, probability=0.1, retry_after=1)]) as fake:
        client = AsyncOpenAI(base_url=fake.base_url, api_key="test", max_retries=0)
        ...
        assert fake.count == 10

Endpoints: ``POST /v1/chat/completions``, ``GET /v1/models``, the Files API (``POST /v1/files``,
``GET /v1/files``, ``GET /v1/files/{id}``, ``GET /v1/files/{id}/content``, ``DELETE /v1/files/{id}``)
and the Batch API (``POST /v1/batches``, ``GET /v1/batches``, ``GET /v1/batches/{id}``,
``POST /v1/batches/{id}/cancel``).

**Batches.** Files are kept on disk and read line by line, so a 100,000-request batch stays cheap.
Each batch line is answered by the same code as ``/v1/chat/completions`` (reply rule, faults,
recording, with :attr:`RecordedRequest.batch_id` set) but without waiting for latency. A batch moves
only when it is retrieved: the ``batch_polls_to_complete``-th retrieve completes it (the first, by
default), earlier ones answer a proportional share of its lines. Output lines have the provider's
shape ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error": null}``;
error-file lines carry ``"error": {"code", "message"}`` and either ``"response": null`` (injected
failures, expiry) or the error reply (a status fault). Controls, all plain attributes:
``batch_fail_ids`` (custom_ids answered with a ``server_error``), ``batch_expired_ids`` (custom_ids
answered with ``batch_expired``), ``batch_expire_after`` (the batch expires after that many lines:
partial output, the rest ``batch_expired``), ``batch_fail_validation`` (the next N batches fail
validation), ``batch_max_requests`` / ``batch_max_bytes`` (the provider's 50,000 / 200 MB). A cancel
answers ``cancelling`` and the next retrieve ``cancelled`` with the lines answered so far. Input files
are validated as the provider does (JSON lines, unique ``custom_id``, ``POST`` to the batch's
endpoint, one model). Every create, retrieve, cancel and list is logged in :attr:`FakeOpenAI.batch_log`.

**Replies.** ``reply`` decides the assistant text of each choice. It is a string, a dict (sent as
JSON), or a callable ``reply(request_json) -> str | dict | list`` (a list gives one entry per choice
when ``n > 1``). The default, :func:`marker_reply`, answers with the label named by a marker
``expect=LABEL`` in the rendered prompt (several markers ``expect=4,4,5`` give one per sample), or a
label derived from a hash of the prompt when there is none. When the request asks for a JSON schema
(``response_format={"type": "json_schema", ...}``) a plain label is wrapped as
``{"reason": ..., <field>: label}`` using the schema's label property, so the structured-output path is
real. :class:`evalcore.testing.Scripted` is a rule whose judge answers depend on the prompt (rules
and examples raise its accuracy on a class) and whose optimiser model proposes such rules: the
prompt optimiser's tests use it (``--reply-rule scripted:CONFIG.json`` on the command line).

**Logprobs.** With ``logprobs=true`` every choice carries ``logprobs.content``: the reply split into
word/punctuation tokens, each with ``top_logprobs`` alternatives (5 when the request names no
number). At the label token the alternatives are the neighbouring labels with a plausible
distribution (60 % the chosen label, the rest spread over its neighbours).

A reply rule can serve log-probabilities it chooses: an entry of the rule's value may be a
:class:`ServedReply` (the text, the label as written in it, and the alternatives with their
probabilities at the label's first token, optionally with the label written in several tokens). The
server finds the label's last occurrence in the text, splits the text there into tokens, and serves
``log(p)`` of each alternative, the most likely first, cut to ``top_logprobs``.
:class:`evalcore.testing.CalibratedJudge` is such a rule with a calibration a test sets: its
top-label probability ``p`` per item and the chance ``q(p)`` that its label is right (well
calibrated when ``q = p``, over-confident when ``q < p``), seeded, so the probabilities a judge
run parses can be compared with the served ones, and calibration statistics with a known truth
(``--reply-rule calibrated:CONFIG.json`` on the command line).

**Faults** (:class:`Fault`) are chosen per request, deterministically: the random draw for a request is a
hash of the seed, the prompt and how many times that same prompt was seen before, so a given item's
second attempt always meets the same fate whatever the order of concurrent requests. A fault can also
be restricted to prompts containing a substring (``match=``), to a predicate of the request
(``when=``), or to the first N matching requests (``first=``). Kinds: ``latency`` (extra delay),
``status`` (an HTTP error, optionally with ``Retry-After`` in seconds, milliseconds or as an HTTP
date), ``timeout`` (sleep past the client's time-out), ``malformed`` (a 200 whose JSON body is cut
short), ``truncated`` (a 200 whose reply stops mid-way with ``finish_reason="length"``), and
``redirect`` (a 3xx, 307 by default, whose ``Location`` is another path of this server or the
address of another one, such as a second fake: a 307 asks the client to send the same request,
body and all, there).

**Capacity.** ``capacity=N`` serves at most N chat requests at once and queues the rest, as a
replica with a fixed batch size does: more load then means more latency, which is what spreading
requests over a pool of replicas is for.

Every request is recorded (:class:`RecordedRequest`: arrival time, body, the status answered, the fault
applied) in :attr:`FakeOpenAI.requests`, in arrival order.

Run it as a process for browser tests and benchmarks::

    python -m evalcore.testing.fake_openai --port 0 --latency 0.2 --reply-rule marker

It prints ``READY http://127.0.0.1:PORT/v1`` on stdout once it listens.
"""

from __future__ import annotations

import argparse
import contextlib
import email.utils
import hashlib
import json
import math
import os
import re
import shutil
import socket
import sys
import threading
import time
import weakref
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from evalcore.testing._fake_batches import (
    BATCH_MAX_BYTES,
    BATCH_MAX_REQUESTS,
    ApiError,
    BatchCall,
    BatchControls,
    BatchRegistry,
    FileStore,
    LineAnswer,
    read_upload,
)

__all__ = [
    "BatchCall",
    "FakeOpenAI",
    "Fault",
    "RecordedRequest",
    "ServedReply",
    "constant_reply",
    "http_date_in",
    "marker_reply",
    "prompt_text",
]


@dataclass(frozen=True)
class ServedReply:
    """A reply whose label the server serves with chosen log-probabilities.

    ``content`` is the reply (a dict is sent as JSON); ``label`` the label as written in it (its
    last occurrence is the label's position); ``alternatives`` the ``(token, probability)`` pairs
    served at the label's first token (tokens off the scale allowed; probabilities need not sum
    to 1: what is left is the mass the top list does not show). ``tokens`` is how the label is
    written in tokens (default: one token, the label itself); they must join to ``label``.
    """

    content: str | dict[str, Any]
    label: str
    alternatives: tuple[tuple[str, float], ...]
    tokens: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.tokens and "".join(self.tokens) != self.label:
            raise ValueError(f"the tokens {self.tokens!r} do not spell the label {self.label!r}")
        for token, p in self.alternatives:
            if not 0.0 < p <= 1.0:
                raise ValueError(f"the probability of {token!r} must be in (0, 1], not {p}")

    @property
    def text(self) -> str:
        return self.content if isinstance(self.content, str) else json.dumps(self.content)


ReplyValue = str | dict[str, Any] | ServedReply | list[str | dict[str, Any]] | list[ServedReply]
ReplyRule = Callable[[dict[str, Any]], ReplyValue]
FaultKind = Literal["latency", "status", "timeout", "malformed", "truncated", "redirect"]

_MARKER = re.compile(r"expect=([A-Za-z0-9_.\-]+(?:,[A-Za-z0-9_.\-]+)*)")
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
_DEFAULT_LABELS = ("1", "2", "3", "4", "5")


# --- replies ---------------------------------------------------------------------------------------


def prompt_text(request: Mapping[str, Any]) -> str:
    """All message contents of a chat request joined by newlines (what markers are searched in)."""
    parts: list[str] = []
    for message in request.get("messages") or ():
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return "\n".join(parts)


def _schema_props(request: Mapping[str, Any]) -> tuple[str | None, list[Any] | None]:
    """The label property of a json_schema response_format and its enum (raw values), if any."""
    fmt = request.get("response_format")
    if not isinstance(fmt, Mapping) or fmt.get("type") != "json_schema":
        return None, None
    schema = (fmt.get("json_schema") or {}).get("schema") or {}
    props = schema.get("properties") or {}
    for name, spec in props.items():
        if name != "reason":
            enum = spec.get("enum") if isinstance(spec, Mapping) else None
            return str(name), list(enum) if enum else None
    return None, None


def marker_reply(request: dict[str, Any]) -> list[str | dict[str, Any]]:
    """Answer with the label named by ``expect=LABEL`` in the prompt, else one derived from a hash.

    Several comma-separated labels (``expect=4,4,5``) give one per sample when ``n > 1``. Without a
    JSON schema the reply is prose ending in ``Score: LABEL``; with one it is the schema's object.
    """
    text = prompt_text(request)
    _, enum = _schema_props(request)
    found = _MARKER.findall(text)
    if found:
        labels = found[-1].split(",")
    else:
        choices = [str(x) for x in enum] if enum else _DEFAULT_LABELS
        digest = hashlib.sha256(text.encode()).digest()
        labels = [choices[digest[0] % len(choices)]]
    return [_render_label(label, request) for label in labels]


def constant_reply(label: str) -> ReplyRule:
    """A rule that always answers ``label`` (as prose, or as the requested JSON schema)."""

    def rule(request: dict[str, Any]) -> ReplyValue:
        return _render_label(label, request)

    return rule


def _render_label(label: str, request: Mapping[str, Any]) -> str | dict[str, Any]:
    field_name, enum = _schema_props(request)
    if field_name is None:
        return f"The response was read carefully against the rubric.\nScore: {label}"
    value: Any = label
    numeric_enum = bool(enum) and all(isinstance(x, int | float) for x in enum or ())
    if enum is None or numeric_enum:
        try:
            number = float(label)
            value = int(number) if number.is_integer() else number
        except ValueError:
            value = label
    return {"reason": "The response was read carefully against the rubric.", field_name: value}


# --- faults ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """One kind of misbehaviour and when to apply it.

    A fault applies to a request when every given condition holds: ``match`` is a substring of the
    prompt, the request's path starts with ``path``, ``when(request_json)`` is true, fewer than
    ``first`` matching requests were seen before (counted per fault), and the request's
    deterministic draw is below ``probability``.
    """

    kind: FaultKind
    probability: float = 1.0
    match: str | None = None
    path: str | None = None
    when: Callable[[dict[str, Any]], bool] | None = None
    first: int | None = None
    status: int = 500
    #: seconds, an HTTP date, or a callable giving either when the reply is made
    retry_after: float | str | Callable[[], float | str] | None = None
    retry_after_ms: float | None = None
    delay: float = 0.0
    message: str = "injected fault"
    #: a raw body sent instead of the JSON error (with ``content_type``), e.g. an HTML page
    body: str | None = None
    content_type: str = "text/html; charset=utf-8"
    #: where a ``redirect`` fault points (a URL, or a path of this server)
    location: str = ""

    @classmethod
    def status_code(
        cls,
        status: int,
        *,
        retry_after: float | str | Callable[[], float | str] | None = None,
        retry_after_ms: float | None = None,
        body: str | None = None,
        **when: Any,
    ) -> Fault:
        """An HTTP error reply (429, 500, 400 ...), optionally with ``Retry-After``; ``body`` sends
        that text (as ``content_type``, HTML by default) instead of the JSON error object."""
        return cls(
            "status",
            status=status,
            retry_after=retry_after,
            retry_after_ms=retry_after_ms,
            body=body,
            **when,
        )

    @classmethod
    def timeout(cls, delay: float, **when: Any) -> Fault:
        """Hold the request for ``delay`` seconds (longer than the client's time-out) before replying."""
        return cls("timeout", delay=delay, **when)

    @classmethod
    def latency(cls, delay: float, **when: Any) -> Fault:
        """Add ``delay`` seconds before an otherwise normal reply."""
        return cls("latency", delay=delay, **when)

    @classmethod
    def redirect(cls, location: str, *, status: int = 307, **when: Any) -> Fault:
        """A redirect (``status``, 307 by default) to ``location``: another server's URL (say a
        second fake's ``base_url + "/chat/completions"``) or a path of this one."""
        return cls("redirect", status=status, location=location, **when)

    @classmethod
    def malformed(cls, **when: Any) -> Fault:
        """A 200 reply whose JSON body is cut short."""
        return cls("malformed", **when)

    @classmethod
    def truncated(cls, **when: Any) -> Fault:
        """A 200 reply whose text stops mid-way with ``finish_reason="length"``."""
        return cls("truncated", **when)


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received."""

    index: int
    t: float  #: ``time.monotonic()`` at arrival
    path: str
    body: dict[str, Any]
    status: int = 0  #: the status answered (0 until answered)
    fault: str | None = (
        None  #: the fault applied; ``"dropped"``: the server stopped before replying
    )
    attempt: int = 1  #: how many times this exact prompt has been seen, this one included
    prompt_key: str = ""  #: sha256 of the prompt text
    #: the HTTP headers received (names in lower case), so tests can check what a client sent
    headers: tuple[tuple[str, str], ...] = ()
    batch_id: str | None = None  #: the batch this request was a line of (None: a live request)

    @property
    def prompt(self) -> str:
        return prompt_text(self.body)


# --- the server ------------------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256
    fake: FakeOpenAI


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # small header and body writes must not wait for delayed ACKs
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr logging
        return

    def setup(self) -> None:
        super().setup()
        self.server.fake._open(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._close(self.connection)

    def do_GET(self) -> None:
        route = urlsplit(self.path)
        path = route.path.rstrip("/")
        if path == "/_fake/requests":
            self._send(200, json.dumps(self.server.fake.summary()).encode())
        elif path.endswith("/models"):
            body = {"object": "list", "data": [{"id": self.server.fake.model, "object": "model"}]}
            self._send(200, json.dumps(body).encode())
        elif _FILE_CONTENT.search(path) or _FILES.search(path) or _BATCHES.search(path):
            self._api(lambda: self.server.fake._get(path, parse_qs(route.query)))
        else:
            self._send(404, _error_body("not found", "not_found"))

    def do_DELETE(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        self._api(lambda: self.server.fake._delete(path))

    def do_POST(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        if _FILES.search(path) and not _FILES.search(path).group(1):  # type: ignore[union-attr]
            self._api(lambda: self.server.fake._upload(self.rfile, self.headers))
            return
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if _BATCHES.search(path):
            self._api(lambda: self.server.fake._post_batch(path, raw))
            return
        if not path.endswith("/chat/completions"):
            self._send(404, _error_body(f"no route {self.path}", "not_found"))
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send(400, _error_body("request body is not JSON", "invalid_request_error"))
            return
        fake = self.server.fake
        if not fake._admit():
            return  # stopped while the request queued for a free slot
        fake._enter()
        try:
            received = tuple((k.lower(), v) for k, v in self.headers.items())
            status, payload, headers, delay, index = fake._handle(self.path, body, received)
            if delay > 0 and fake._stopping.wait(delay):
                fake._drop(index)  # stopped while the reply was held: it is never sent
                return
            self._send(status, payload, headers)
        finally:
            fake._leave()
            fake._release()

    def _api(self, call: Callable[[], dict[str, Any] | str]) -> None:
        """Answer a Files or Batch API call: a dict as JSON, a path as the file's bytes."""
        try:
            result = call()
        except ApiError as error:
            self._send(error.status, _error_body(str(error), error.kind))
            return
        if isinstance(result, dict):
            self._send(200, json.dumps(result).encode())
            return
        try:
            with open(result, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(size))
                self.end_headers()
                shutil.copyfileobj(handle, self.wfile, 1 << 20)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send(self, status: int, payload: bytes, headers: Mapping[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            extra = dict(headers or {})
            self.send_header("Content-Type", extra.pop("Content-Type", "application/json"))
            self.send_header("Content-Length", str(len(payload)))
            for key, value in extra.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (time-out)
            self.close_connection = True


_FILES = re.compile(r"/files(?:/([^/]+))?$")
_FILE_CONTENT = re.compile(r"/files/([^/]+)/content$")
_BATCHES = re.compile(r"/batches(?:/([^/]+))?(/cancel)?$")


def _error_body(message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "code": None}}).encode()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class FakeOpenAI:
    """An OpenAI-compatible chat-completions server on ``127.0.0.1`` in a background thread.

    Use it as a context manager (or call :meth:`start` / :meth:`stop`). ``latency`` is added to every
    reply; ``faults`` are checked in order and the first that applies wins; ``seed`` drives the
    per-request draws.
    """

    def __init__(
        self,
        reply: ReplyValue | ReplyRule | None = None,
        *,
        latency: float = 0.0,
        faults: Sequence[Fault] = (),
        seed: int = 0,
        model: str = "fake-judge",
        port: int = 0,
        record_bodies: bool = True,
        capacity: int | None = None,
        batch_polls_to_complete: int = 1,
        batch_fail_ids: Collection[str] = (),
        batch_expired_ids: Collection[str] = (),
        batch_expire_after: int | None = None,
        batch_fail_validation: int = 0,
        batch_max_requests: int = BATCH_MAX_REQUESTS,
        batch_max_bytes: int = BATCH_MAX_BYTES,
    ) -> None:
        self.reply = reply if reply is not None else marker_reply
        self.latency = latency
        self.faults = tuple(faults)
        self.seed = seed
        self.model = model
        self.record_bodies = record_bodies
        self._port = port
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._seen: dict[str, int] = {}
        self._fault_counts: dict[int, int] = {}
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._ids = 0
        self._in_flight = 0
        self.max_in_flight = 0  #: the most chat requests being served at the same moment
        #: at most this many chat requests are served at once (a replica's batch size); the rest
        #: queue for a free slot, so more load means more latency (``None``: no limit)
        self.capacity = capacity
        self._slots = threading.BoundedSemaphore(capacity) if capacity else None
        self.batch_polls_to_complete = batch_polls_to_complete
        self.batch_fail_ids: Collection[str] = batch_fail_ids
        self.batch_expired_ids: Collection[str] = batch_expired_ids
        self.batch_expire_after = batch_expire_after
        self.batch_fail_validation = batch_fail_validation
        self.batch_max_requests = batch_max_requests
        self.batch_max_bytes = batch_max_bytes
        self._files = FileStore()
        self._batches = BatchRegistry(self._files, self._answer_line)
        weakref.finalize(self, self._files.close)

    # --- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> FakeOpenAI:
        """Listen (again): a server stopped and started again keeps its port, so a client that
        knew it sees an outage (connections refused) and then the same endpoint back."""
        server = _Server(("127.0.0.1", self._port or _free_port()), _Handler)
        self._port = int(server.server_address[1])
        server.fake = self
        self._server = server
        self._stopping.clear()
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and drop every open (keep-alive) connection, as a dead server would."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def outage(self, seconds: float) -> None:
        """Stop listening for ``seconds`` (every connection is refused), then listen again on the
        same port; recorded requests and fault counters are kept."""
        self.stop()
        time.sleep(seconds)
        self.start()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the fake server is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # --- what was received -------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of the requests received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def count(self) -> int:
        """How many chat-completion requests arrived (batch lines included: they carry a
        :attr:`RecordedRequest.batch_id`)."""
        with self._lock:
            return len(self._requests)

    def requests_matching(self, substring: str) -> list[RecordedRequest]:
        """Requests whose prompt contains ``substring``."""
        return [r for r in self.requests if substring in r.prompt]

    def summary(self) -> list[dict[str, Any]]:
        """The recorded requests without their bodies (served at ``GET /_fake/requests``)."""
        return [
            {
                "index": r.index,
                "t": r.t,
                "status": r.status,
                "fault": r.fault,
                "attempt": r.attempt,
                "prompt_sha256": r.prompt_key,
                "batch_id": r.batch_id,
            }
            for r in self.requests
        ]

    def reset(self) -> None:
        """Forget recorded requests, fault counters and the batch log (files and batches stay)."""
        with self._lock:
            self._requests.clear()
            self._seen.clear()
            self._fault_counts.clear()
            self.max_in_flight = 0
        self._batches.clear_log()

    @property
    def batch_log(self) -> list[BatchCall]:
        """The Batch API calls received so far (create, retrieve, cancel, list), in order."""
        return self._batches.calls()

    def batch_calls(self, kind: str) -> int:
        """How many Batch API calls of ``kind`` ("create", "retrieve", "cancel", "list") arrived."""
        return sum(1 for call in self._batches.calls() if call.kind == kind)

    def batch(self, batch_id: str) -> dict[str, Any]:
        """A batch as the API shows it, without counting as a retrieve (it does not advance)."""
        return self._batches.get(batch_id).as_object()

    def file_text(self, file_id: str) -> str:
        """The content of a stored file (an upload, or a batch's output or error file)."""
        with open(self._files.get(file_id).path, encoding="utf-8") as handle:
            return handle.read()

    @property
    def file_ids(self) -> list[str]:
        """The ids of the files stored now, oldest first."""
        return [record.id for record in self._files.all()]

    def _controls(self) -> BatchControls:
        return BatchControls(
            polls_to_complete=self.batch_polls_to_complete,
            fail_ids=self.batch_fail_ids,
            expired_ids=self.batch_expired_ids,
            expire_after=self.batch_expire_after,
            fail_validation=self.batch_fail_validation,
            max_requests=self.batch_max_requests,
            max_bytes=self.batch_max_bytes,
        )

    # --- Files and Batch API (runs in server threads) ----------------------------------------------

    def _upload(self, rfile: Any, headers: Any) -> dict[str, Any]:
        return read_upload(rfile, headers, self._files).as_object()

    def _get(self, path: str, query: Mapping[str, list[str]]) -> dict[str, Any] | str:
        if found := _FILE_CONTENT.search(path):
            return self._files.get(found.group(1)).path
        if found := _FILES.search(path):
            if found.group(1):
                return self._files.get(found.group(1)).as_object()
            purpose = next(iter(query.get("purpose") or ()), None)
            data = [f.as_object() for f in self._files.all() if purpose in (None, f.purpose)]
            return {"object": "list", "data": data, "has_more": False}
        found = _BATCHES.search(path)
        if found is None or found.group(2):
            raise ApiError(404, f"no route {path}", "not_found")
        if found.group(1):
            return self._batches.retrieve(found.group(1), self._controls())
        limit = int((query.get("limit") or ["20"])[0])
        return self._batches.list(limit=limit, after=next(iter(query.get("after") or ()), None))

    def _delete(self, path: str) -> dict[str, Any]:
        found = _FILES.search(path)
        if found is None or not found.group(1):
            raise ApiError(404, f"no route {path}", "not_found")
        self._files.delete(found.group(1))
        return {"id": found.group(1), "object": "file", "deleted": True}

    def _post_batch(self, path: str, raw: bytes) -> dict[str, Any]:
        found = _BATCHES.search(path)
        assert found is not None
        if found.group(1) and found.group(2):
            return self._batches.cancel(found.group(1))
        if found.group(1):
            raise ApiError(404, f"no route {path}", "not_found")
        try:
            request = json.loads(raw or b"{}")
        except ValueError as error:
            raise ApiError(400, "request body is not JSON") from error
        if not isinstance(request, dict):
            raise ApiError(400, "request body is not a JSON object")
        return self._batches.create(request, self._controls())

    def _answer_line(self, body: dict[str, Any], batch_id: str) -> LineAnswer:
        """Answer one batch line through the chat-completions path (its delay is not waited)."""
        status, payload, _, _, _, fault = self._serve(
            "/v1/chat/completions", body, (), batch_id=batch_id
        )
        return LineAnswer(status=status, payload=payload, fault=fault)

    # --- request handling (runs in server threads) -------------------------------------------------

    def _admit(self) -> bool:
        """Wait for a free slot under :attr:`capacity`; False when the server stopped meanwhile."""
        if self._slots is None:
            return True
        while not self._slots.acquire(timeout=0.05):
            if self._stopping.is_set():
                return False
        return True

    def _release(self) -> None:
        if self._slots is not None:
            self._slots.release()

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _open(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.add(connection)

    def _close(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.discard(connection)

    def _drop(self, index: int) -> None:
        """Record that request ``index`` got no reply (the server stopped before sending it)."""
        with self._lock:
            for position, record in enumerate(self._requests):
                if record.index == index:
                    self._requests[position] = replace(record, status=0, fault="dropped")

    def _handle(
        self, path: str, body: dict[str, Any], received: tuple[tuple[str, str], ...] = ()
    ) -> tuple[int, bytes, dict[str, str], float, int]:
        status, payload, headers, delay, index, _ = self._serve(path, body, received)
        return status, payload, headers, delay, index

    def _serve(
        self,
        path: str,
        body: dict[str, Any],
        received: tuple[tuple[str, str], ...],
        *,
        batch_id: str | None = None,
    ) -> tuple[int, bytes, dict[str, str], float, int, str | None]:
        """Answer one chat request: status, body, headers, delay, record index, fault kind."""
        arrived = time.monotonic()
        text = prompt_text(body)
        key = hashlib.sha256(text.encode()).hexdigest()
        with self._lock:
            attempt = self._seen.get(key, 0) + 1
            self._seen[key] = attempt
            index = len(self._requests)
            fault = self._pick_fault(body, text, key, attempt, path)
            self._ids += 1
            call_id = self._ids
        status, payload, headers, delay = self._respond(body, fault, call_id)
        record = RecordedRequest(
            index=index,
            t=arrived,
            path=path,
            body=body if self.record_bodies else {},
            status=status if fault is None or fault.kind != "timeout" else 0,
            fault=fault.kind if fault is not None else None,
            attempt=attempt,
            prompt_key=key,
            headers=received,
            batch_id=batch_id,
        )
        with self._lock:
            self._requests.append(record)
        return status, payload, headers, delay + self.latency, index, record.fault

    def _pick_fault(
        self, body: dict[str, Any], text: str, key: str, attempt: int, path: str
    ) -> Fault | None:
        for number, fault in enumerate(self.faults):
            if fault.match is not None and fault.match not in text:
                continue
            if fault.path is not None and not path.startswith(fault.path):
                continue
            if fault.when is not None and not fault.when(body):
                continue
            if fault.first is not None and self._fault_counts.get(number, 0) >= fault.first:
                continue
            if fault.probability < 1.0:
                draw = hashlib.sha256(f"{self.seed}|{number}|{key}|{attempt}".encode()).digest()
                if int.from_bytes(draw[:8], "big") / 2**64 >= fault.probability:
                    continue
            self._fault_counts[number] = self._fault_counts.get(number, 0) + 1
            return fault
        return None

    def _respond(
        self, body: dict[str, Any], fault: Fault | None, call_id: int
    ) -> tuple[int, bytes, dict[str, str], float]:
        if fault is not None and fault.kind == "redirect":
            return fault.status, b"", {"Location": fault.location}, 0.0
        if fault is not None and fault.kind == "status":
            headers: dict[str, str] = {}
            if fault.retry_after is not None:
                headers["Retry-After"] = _retry_after_value(fault.retry_after)
            if fault.retry_after_ms is not None:
                headers["retry-after-ms"] = f"{fault.retry_after_ms:g}"
            if fault.body is not None:
                headers["Content-Type"] = fault.content_type
                return fault.status, fault.body.encode(), headers, 0.0
            kind = "rate_limit_error" if fault.status == 429 else "server_error"
            if 400 <= fault.status < 429:
                kind = "invalid_request_error"
            return fault.status, _error_body(fault.message, kind), headers, 0.0
        delay = 0.0
        if fault is not None and fault.kind in ("timeout", "latency"):
            delay = fault.delay
        completion = self._completion(
            body, call_id, truncated=fault is not None and fault.kind == "truncated"
        )
        payload = json.dumps(completion).encode()
        if fault is not None and fault.kind == "malformed":
            payload = payload[: max(1, len(payload) // 2)]
        return 200, payload, {}, delay

    def _completion(self, body: dict[str, Any], call_id: int, *, truncated: bool) -> dict[str, Any]:
        n = int(body.get("n") or 1)
        rule = self.reply
        value: Any = rule(body) if callable(rule) else rule
        values = value if isinstance(value, list) else [value]
        _, raw_enum = _schema_props(body)
        enum = [str(x) for x in raw_enum] if raw_enum else None
        prompt_tokens = max(1, len(prompt_text(body)) // 4)
        choices: list[dict[str, Any]] = []
        completion_tokens = 0
        for index in range(n):
            item = values[index % len(values)] if values else ""
            served = item if isinstance(item, ServedReply) else None
            if served is not None:
                text = served.text
            else:
                text = item if isinstance(item, str) else json.dumps(item)
            finish = "stop"
            if truncated:
                text = text[: max(1, len(text) // 2)]
                finish = "length"
            completion_tokens += max(1, len(text) // 4)
            choice: dict[str, Any] = {
                "index": index,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "finish_reason": finish,
                "logprobs": None,
            }
            if body.get("logprobs"):
                top_n = int(body.get("top_logprobs") or 5)
                content = None
                if served is not None and not truncated:
                    content = _served_logprobs(text, served, top_n)
                choice["logprobs"] = {
                    "content": content or _token_logprobs(text, enum, top_n),
                    "refusal": None,
                }
            choices.append(choice)
        return {
            "id": f"chatcmpl-fake-{call_id}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or self.model),
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


def _retry_after_value(value: float | str | Callable[[], float | str]) -> str:
    if callable(value):
        value = value()
    if isinstance(value, str):
        return value
    return f"{value:g}"


def http_date_in(seconds: float) -> str:
    """An HTTP date ``seconds`` from now, for a ``Retry-After`` given as a date."""
    return email.utils.formatdate(time.time() + seconds, usegmt=True)


def _label_alternatives(token: str, labels: Sequence[str]) -> list[tuple[str, float]]:
    """A plausible top-logprob distribution centred on ``token`` over ``labels``."""
    position = labels.index(token)
    weights = {token: 0.6}
    rest = 0.4
    neighbours = [labels[i] for i in (position - 1, position + 1) if 0 <= i < len(labels)]
    if not neighbours:
        neighbours = [x for x in labels if x != token][:1]
    for other in neighbours:
        weights[other] = rest / len(neighbours)
    return [(tok, math.log(p)) for tok, p in sorted(weights.items(), key=lambda kv: -kv[1])]


def _token_logprobs(text: str, enum: Sequence[str] | None, top_n: int) -> list[dict[str, Any]]:
    labels = list(enum) if enum else [*_DEFAULT_LABELS]
    if enum is None:
        extra = ("A", "B", "TIE", "pass", "fail")
        tokens_all = _TOKEN.findall(text)
        if any(t in extra for t in tokens_all):
            labels = (
                [t for t in extra if t in ("A", "B", "TIE")]
                if any(t in ("A", "B", "TIE") for t in tokens_all)
                else ["pass", "fail"]
            )
    tokens = _TOKEN.findall(text)
    label_at = max((i for i, t in enumerate(tokens) if t in labels), default=-1)
    content: list[dict[str, Any]] = []
    for i, token in enumerate(tokens):
        if i == label_at:
            alternatives = _label_alternatives(token, labels)[:top_n]
        else:
            alternatives = [(token, -0.01)]
        content.append(
            {
                "token": token,
                "logprob": alternatives[0][1] if i == label_at else -0.01,
                "bytes": list(token.encode()),
                "top_logprobs": [
                    {"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in alternatives
                ],
            }
        )
    return content


def _entry(token: str, alternatives: Sequence[tuple[str, float]], logprob: float) -> dict[str, Any]:
    return {
        "token": token,
        "logprob": logprob,
        "bytes": list(token.encode()),
        "top_logprobs": [
            {"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in alternatives
        ],
    }


def _served_logprobs(text: str, served: ServedReply, top_n: int) -> list[dict[str, Any]] | None:
    """The tokens of ``text`` with ``served``'s alternatives at its label; None when the text does
    not hold the label."""
    at = text.rfind(served.label)
    if at < 0 or not served.label:
        return None
    pieces = served.tokens or (served.label,)
    ranked = sorted(served.alternatives, key=lambda kv: -kv[1])
    shown = [(token, math.log(p)) for token, p in ranked][:top_n]
    chosen = next((math.log(p) for token, p in ranked if token == pieces[0]), math.log(1e-6))
    content = [_entry(t, [(t, -0.01)], -0.01) for t in _TOKEN.findall(text[:at])]
    content.append(_entry(pieces[0], shown, chosen))
    content.extend(_entry(t, [(t, -0.01)], -0.01) for t in pieces[1:])
    content.extend(
        _entry(t, [(t, -0.01)], -0.01) for t in _TOKEN.findall(text[at + len(served.label) :])
    )
    return content


# --- command line ----------------------------------------------------------------------------------


def _rule_from_name(name: str) -> ReplyRule:
    if name == "marker":
        return marker_reply
    if name.startswith("constant:"):
        return constant_reply(name.split(":", 1)[1])
    if name.startswith("scripted:"):  # the scripted judge and optimiser of evalcore.testing
        from evalcore.testing._scripted import Scripted

        return Scripted.from_file(name.split(":", 1)[1])
    if name.startswith("calibrated:"):  # a judge of known calibration (evalcore.testing)
        from evalcore.testing._calibrated import CalibratedJudge

        return CalibratedJudge.from_file(name.split(":", 1)[1])
    raise SystemExit(
        f"unknown reply rule {name!r} (use 'marker', 'constant:LABEL', 'scripted:CONFIG.json' "
        "or 'calibrated:CONFIG.json')"
    )


def _parse_fault_specs(specs: Iterable[str]) -> list[Fault]:
    """``429:0.1:1`` (status:probability[:retry_after]), ``timeout:0.05:30``, ``malformed:0.01``."""
    faults: list[Fault] = []
    for spec in specs:
        parts = spec.split(":")
        head = parts[0]
        probability = float(parts[1]) if len(parts) > 1 else 1.0
        if head.isdigit():
            retry_after = float(parts[2]) if len(parts) > 2 else None
            faults.append(
                Fault.status_code(int(head), retry_after=retry_after, probability=probability)
            )
        elif head in ("timeout", "latency"):
            delay = float(parts[2]) if len(parts) > 2 else 30.0
            faults.append(Fault(head, probability=probability, delay=delay))  # type: ignore[arg-type]
        elif head in ("malformed", "truncated"):
            faults.append(Fault(head, probability=probability))  # type: ignore[arg-type]
        else:
            raise SystemExit(f"unknown fault {spec!r}")
    return faults


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evalcore.testing.fake_openai",
        description="Serve a fake OpenAI-compatible chat-completions API on 127.0.0.1.",
    )
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to each reply")
    parser.add_argument(
        "--reply-rule",
        default="marker",
        help="'marker', 'constant:LABEL', 'scripted:CONFIG.json' (evalcore.testing.Scripted) or "
        "'calibrated:CONFIG.json' (evalcore.testing.CalibratedJudge)",
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        help="e.g. 429:0.1:1 (status:probability:retry-after), 500:0.02, timeout:0.05:30",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-record", action="store_true", help="do not keep request bodies")
    parser.add_argument(
        "--capacity",
        type=int,
        default=None,
        help="serve at most N requests at once (queue the rest)",
    )
    parser.add_argument(
        "--batch-polls", type=int, default=1, help="retrieves until a batch completes (default 1)"
    )
    args = parser.parse_args(argv)
    fake = FakeOpenAI(
        _rule_from_name(args.reply_rule),
        latency=args.latency,
        faults=_parse_fault_specs(args.fault),
        seed=args.seed,
        port=args.port,
        record_bodies=not args.no_record,
        capacity=args.capacity,
        batch_polls_to_complete=args.batch_polls,
    )
    with fake:
        print(f"READY {fake.base_url}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
