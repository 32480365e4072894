"""Real sockets for tests of an HTTP request's life: a listener that never accepts, a server
that counts connections, and a stream aborted once a condition holds (`test_http_lifecycle`,
and each wire API's own abort tests)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from prompt_shutdown import PromptShutdown

import agentcore as ac

__all__ = ["CONTEXT", "KEY", "WAIT_S", "CountingServer", "consume_with_abort",
           "never_accepts", "wait_until"]

WAIT_S = 5.0
KEY = "sk-test-lifecycle"
CONTEXT = ac.Context(None, [ac.UserMessage("hi")])


def wait_until(condition: Callable[[], bool], timeout: float = WAIT_S) -> bool:
    """Poll `condition` (for state another process or thread owns) until true or `timeout`."""
    tick = threading.Event()
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        tick.wait(0.005)
    return True


# --- a listener that never accepts --------------------------------------------------------------


@contextlib.contextmanager
def never_accepts() -> Iterator[str]:
    """The base URL of a listener on 127.0.0.1 whose accept queue is full: connects hang."""
    listener = socket.socket()
    fillers: list[socket.socket] = []
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        for _ in range(16):
            filler = socket.socket()
            filler.settimeout(0.2)
            try:
                filler.connect(("127.0.0.1", port))
            except TimeoutError:
                filler.close()
                break
            fillers.append(filler)
        else:
            pytest.skip("could not fill the accept queue of a local listener")
        yield f"http://127.0.0.1:{port}"
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


# --- a server that counts connections -----------------------------------------------------------


class CountingServer(PromptShutdown, ThreadingHTTPServer):
    """Answers every POST with `body` as a chunked event stream; counts connections."""

    daemon_threads = False
    block_on_close = True

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.accepted = 0
        self.closed = 0
        self.arrived = 0  # requests whose body was read
        self.hold: threading.Event | None = None  # when set here: answers wait for it
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _CountingHandler)
        self.thread = threading.Thread(target=self.serve_forever, name="counting-server")
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        self.thread.join(WAIT_S)


class _CountingHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10
    server: CountingServer

    def setup(self) -> None:
        super().setup()
        # the body's last chunk goes at once, not after the client's delayed ACK (~40 ms)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.lock:
            self.server.accepted += 1

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        with self.server.lock:
            self.server.closed += 1

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:
            self.server.arrived += 1
        hold = self.server.hold
        if hold is not None:
            hold.wait(WAIT_S)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        body = self.server.body
        self.wfile.write(b"%x\r\n%s\r\n" % (len(body), body))
        self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")  # the end of the body, after the last event

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request log lines."""


# --- abort in every phase -----------------------------------------------------------------------


def consume_with_abort(model: ac.Model, trigger: Callable[[], bool],
                       **options: Any) -> tuple[ac.AssistantMessage, float]:
    """Stream a reply, abort it once `trigger()` holds, and return it with abort → end (s)."""
    controller = ac.AbortController()
    stream = ac.stream(model, CONTEXT, ac.StreamOptions(api_key=KEY, signal=controller.signal,
                                                        **options))
    aborted_at: list[float] = []

    def abort_when_ready() -> None:
        if wait_until(trigger):
            aborted_at.append(time.monotonic())
            controller.abort()

    helper = threading.Thread(target=abort_when_ready, name="test-aborter")
    helper.start()
    try:
        result = stream.result()
        ended_at = time.monotonic()
    finally:
        helper.join(WAIT_S)
    assert aborted_at, "the trigger never held"
    return result, ended_at - aborted_at[0]
