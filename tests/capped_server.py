"""A chat server that serves at most `capacity` streams at once and answers 429 beyond.

The batch tests of adaptive concurrency (API §24) run against it: `tests/chat_server.py`'s
answers (`echo: <text>` for a plain prompt, paced `delay_s` apart per chunk), except that a
request arriving while `capacity` streams are open gets a 429 with an OpenAI error body and no
`Retry-After` (a server that says nothing of when to come back). It counts the requests, the
429s and the most streams open at once.
"""

from __future__ import annotations

import contextlib
import json
import socket
from http.server import BaseHTTPRequestHandler
from typing import Any

from chat_server import ChatServer, answer

_REFUSAL = json.dumps({"error": {"message": "Too many concurrent requests",
                                 "type": "rate_limit_error"}}).encode()
_DONE = b"data: [DONE]\n\n"


class CappedServer(ChatServer):
    """`ChatServer` with a capacity: at most `capacity` streams at once, 429 beyond."""

    def __init__(self, capacity: int, delay_s: float = 0.0) -> None:
        self.capacity = capacity
        self.refused = 0
        super().__init__(delay_s)
        self.RequestHandlerClass = _Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10
    server: CappedServer

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.lock:
            self.server.accepted += 1
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.lock:
            self.server.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        server = self.server
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        chunks = answer(request)
        assert chunks is not None, "the capped server answers plain prompts only"
        with server.lock:
            server.requests += 1
            full = server.streaming >= server.capacity
            if full:
                server.refused += 1
            else:
                server.streaming += 1
                server.max_streaming = max(server.max_streaming, server.streaming)
        if full:
            self.send_response(429)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(_REFUSAL)))
            self.end_headers()
            self.wfile.write(_REFUSAL)
            return
        streaming = [True]
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in chunks:
                if server.delay_s and server.stopping.wait(server.delay_s):
                    raise ConnectionAbortedError("the server is closing")
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            # The stream's place is free before its end goes out: a client that reads the end
            # and sends its next request at once must find it free.
            self._ended(streaming)
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(_DONE), _DONE))
            self.wfile.flush()
        except OSError:  # the client went away (an aborted run)
            self.close_connection = True
        finally:
            self._ended(streaming)

    def _ended(self, streaming: list[bool]) -> None:
        if streaming[0]:
            streaming[0] = False
            with self.server.lock:
                self.server.streaming -= 1
