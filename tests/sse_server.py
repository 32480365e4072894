"""A local HTTP/1.1 server for provider tests: it replays scripted responses and records requests.

Queue responses with `sse`, `status`, `slow_sse`, `hang_headers` and `custom`; each request
takes the next one (an empty queue answers 418). Every request is recorded in `requests` before
it is answered, so a client holding a response can already see its request there. Event streams
are sent with `Transfer-Encoding: chunked`, one HTTP chunk per piece, with TCP_NODELAY so that a
one-byte chunk really travels alone. `close()` stops the server, cuts open connections and joins
every thread. A new server starts with no shared rate-limit pause for its origin (an earlier
test's server on the same port may have left one).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import random
import select
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from prompt_shutdown import PromptShutdown

__all__ = ["HOLD", "Disconnect", "RecordedRequest", "SSEServer", "free_port", "split_body"]

HOLD = math.inf
"""An `interval_s` (`slow_sse`) or `seconds` (`hang_headers`) the server never reaches: it sends
nothing more by itself, so only the client closing the connection (its `Disconnect` is set) or the
server's `close()` at the test's end ends the response. A test that aborts a request held so,
with the default read timeout (ten minutes), knows that the abort is what ended it."""

Chunking = Literal["whole", "bytewise", "random"]
_Script = Callable[["_Handler"], None]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it; `json` is the parsed body (None if not JSON).

    `at` is when its headers had arrived (`time.monotonic()`).
    """

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any
    at: float = field(default_factory=time.monotonic, compare=False)

    def header(self, name: str) -> str | None:
        """A header's value, looked up case-insensitively."""
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


@dataclass
class Disconnect:
    """Set when the client closed a connection the server was holding open (`at` is monotonic)."""

    seen: threading.Event = field(default_factory=threading.Event)
    at: float | None = None

    def mark(self) -> None:
        self.at = time.monotonic()
        self.seen.set()


def split_body(body: bytes, chunking: Chunking = "whole", seed: int = 0) -> list[bytes]:
    """Cut `body` into pieces: whole, one byte each, or random sizes 1..64 (seeded)."""
    if chunking == "whole":
        return [body]
    if chunking == "bytewise":
        return [body[i : i + 1] for i in range(len(body))]
    if chunking != "random":
        raise ValueError(f"unknown chunking {chunking!r}")
    rng, pieces, i = random.Random(seed), [], 0
    while i < len(body):
        size = rng.randint(1, 64)
        pieces.append(body[i : i + size])
        i += size
    return pieces


class SSEServer:
    """The server, listening on 127.0.0.1 on a free port from construction until `close()`."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.errors: list[BaseException] = []  # exceptions in the server's own code (bugs)
        self._script: deque[_Script] = deque()
        self._answer: Callable[[RecordedRequest], _Script] | None = None
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        self._httpd = _HTTPServer(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="sse-server"
        )
        self._thread.start()
        _forget_rate_limits(self.url)

    @property
    def url(self) -> str:
        """The base URL, e.g. `http://127.0.0.1:54321` (append the path)."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def sse(self, body: bytes, chunking: Chunking = "whole", seed: int = 0, delay_s: float = 0.0,
            headers: Mapping[str, str] | None = None, cut: bool = False) -> None:
        """Queue a 200 event stream of `body`, split by `chunking`, `delay_s` before each piece.

        `headers` are added (a `Content-Type` among them replaces `text/event-stream`: an AWS
        event stream is binary). With `cut`, the connection is dropped where the terminating
        chunk should be.
        """
        pieces = split_body(body, chunking, seed)

        def run(h: _Handler) -> None:
            h.start_stream(headers)
            for piece in pieces:
                if delay_s and h.idle(delay_s):
                    return
                h.send_chunk(piece)
            if cut:
                h.close_connection = True
            else:
                h.end_stream()

        self._push(run)

    def status(self, code: int, body: bytes | str = b"",
               headers: Mapping[str, str] | None = None) -> None:
        """Queue a plain response (JSON content type unless `headers` say otherwise)."""
        data = body.encode() if isinstance(body, str) else body

        def run(h: _Handler) -> None:
            h.send_response(code)
            sent = {k.lower() for k in headers or {}}
            if "content-type" not in sent:
                h.send_header("Content-Type", "application/json")
            for name, value in (headers or {}).items():
                h.send_header(name, value)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)

        self._push(run)

    def slow_sse(self, chunks: Sequence[bytes], interval_s: float) -> Disconnect:
        """Queue a stream sending `chunks` (over and over) every `interval_s` until the client
        disconnects; the returned `Disconnect` is set when the server sees the close."""
        gone = Disconnect()

        def run(h: _Handler) -> None:
            h.start_stream(None)
            for piece in itertools.cycle(chunks):
                try:
                    h.send_chunk(piece)
                except OSError:
                    gone.mark()
                    raise
                reason = h.idle(interval_s)
                if reason == "closed":
                    gone.mark()
                if reason:
                    h.close_connection = True
                    return

        self._push(run)
        return gone

    def hang_headers(self, seconds: float) -> Disconnect:
        """Queue a request that gets no answer for `seconds`, then a dropped connection.

        The returned `Disconnect` is set if the client gives up first.
        """
        gone = Disconnect()

        def run(h: _Handler) -> None:
            if h.idle(seconds) == "closed":
                gone.mark()
            h.close_connection = True

        self._push(run)
        return gone

    def custom(self, run: Callable[[Any], None]) -> None:
        """Queue a response that `run(handler)` writes, e.g. one built from its request.

        The request is `requests[-1]` by the time `run` is called.
        """
        self._push(run)

    def pending(self) -> int:
        """How many queued responses no request has taken yet."""
        with self._lock:
            return len(self._script)

    def close(self) -> None:
        """Stop serving, cut open connections and join every server thread."""
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.cut_connections()
        self._httpd.server_close()  # joins the handler threads (block_on_close)
        self._thread.join(5)
        assert not self._thread.is_alive(), "sse server thread did not stop"

    def answer_all(self, answer: Callable[[RecordedRequest], Callable[[Any], None]]) -> None:
        """Answer every request whose script queue is empty with `answer(request)(handler)`:
        a server that works out each response from its request (the chaos test's, say)."""
        self._answer = answer

    def _push(self, script: _Script) -> None:
        with self._lock:
            self._script.append(script)

    def _take(self, request: RecordedRequest) -> _Script | None:
        with self._lock:
            self.requests.append(request)
            if self._script:
                return self._script.popleft()
        return None if self._answer is None else self._answer(request)


class _HTTPServer(PromptShutdown, ThreadingHTTPServer):
    daemon_threads = False  # so that server_close() joins them
    block_on_close = True

    def __init__(self, owner: SSEServer) -> None:
        self.owner = owner
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def cut_connections(self) -> None:
        with self.connections_lock:
            for sock in self.connections:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Keep quiet about clients going away (tests do that on purpose); record anything else."""
        error = sys.exc_info()[1]
        if error is not None and not isinstance(error, OSError):
            self.owner.errors.append(error)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30  # a socket timeout, so no handler can block forever
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def do_POST(self) -> None:
        self._serve()

    do_GET = do_POST

    def _serve(self) -> None:
        at = time.monotonic()
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        request = RecordedRequest(self.command, self.path, dict(self.headers.items()), body, parsed,
                                  at)
        script = self.server.owner._take(request)
        if script is None:
            text = f"sse_server: no scripted response queued for {self.command} {self.path}"
            script = _fallback(text)
        try:
            script(self)
        except OSError:  # the client went away mid-response
            self.close_connection = True

    def start_stream(self, headers: Mapping[str, str] | None) -> None:
        self.send_response(200)
        if "content-type" not in {name.lower() for name in headers or {}}:
            self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()

    def send_chunk(self, data: bytes) -> None:
        if data:  # an empty chunk would end the body
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")

    def idle(self, seconds: float) -> Literal["closed", "stopped", None]:
        """Wait up to `seconds`; return early with why if the client closes or the server stops."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if self.server.owner.stopping.is_set():
                return "stopped"
            readable, _, _ = select.select([self.connection], [], [], min(left, 0.02))
            if readable:
                try:
                    if self.connection.recv(1, socket.MSG_PEEK) == b"":
                        return "closed"
                except OSError:
                    return "closed"
                return None  # the client sent more; not our business here
        return None

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request log lines."""


def _forget_rate_limits(url: str) -> None:
    """Drop agentcore's shared rate-limit pauses for `url`'s origin.

    A 429 with a long delay, answered by an earlier test's server on this same port, must not
    pause this server's requests.
    """
    from _internals import clear_pauses

    clear_pauses(url)


def _fallback(text: str) -> _Script:
    def run(h: _Handler) -> None:
        data = text.encode()
        h.send_response(418)
        h.send_header("Content-Type", "text/plain")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    return run


def free_port() -> int:
    """A port on 127.0.0.1 with nothing listening (for connection-refused tests)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
