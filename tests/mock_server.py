"""`MockServer`: `SSEServer`'s scripting API with no socket, over agentcore's `MockTransport`.

For tests whose subject is translation (the request body, headers and URL built; the events
made of a recorded stream; the text of an error body; what the retry policy does with an
answer): they script replies with `sse` and `status`, read `requests` back as
`RecordedRequest`s and build URLs on `url`, exactly as against `SSEServer`. The `mock_server`
fixture (conftest) routes every request that would go through the process's shared client to
it, so a test's calls stay as they are. `sse`'s chunkings become the body's chunks
(`split_body`), each read by the client on its own (over TCP, pieces sent apart may arrive
together: here a bytewise body really comes one byte at a time).

What needs a socket stays with `SSEServer`: slow bodies and hanging heads, aborts and timeouts
in their phases, connections cut or reused, proxies, and the chunked framing on the wire. A
request to another origin (a caller's own session or client bypasses the mock; this is the
shared client sending elsewhere) is refused like a port with nothing listening, unless the
test asked for that origin too (`also_answer`).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Mapping
from urllib.parse import urlsplit

from _internals import Outgoing, clear_pauses
from sse_server import Chunking, RecordedRequest, SSEServer, split_body

from agentcore.providers import HttpClient
from agentcore.testing import MockTransport

__all__ = ["MockServer", "ScriptedServer"]

_Reply = tuple[int, dict[str, str], list[bytes]]


class MockServer:
    """Scripted replies and recorded requests on `url`, answered by a `MockTransport`.

    Each request takes the next queued reply (an empty queue answers 418, as `SSEServer`
    does); it is recorded in `requests` before it is answered. `client` is the `HttpClient`
    over the transport. Thread-safe.
    """

    url = "http://127.0.0.1:9"
    """The base URL (append the path): a loopback host, so the providers need no key, on a
    port no test server can listen on (below 1024)."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._origins = {self.url}
        self._script: deque[_Reply] = deque()
        self._lock = threading.Lock()
        self.transport = MockTransport(self._answer)
        self.client = HttpClient(self.transport)
        clear_pauses(self.url)

    def sse(self, body: bytes, chunking: Chunking = "whole", seed: int = 0,
            headers: Mapping[str, str] | None = None) -> None:
        """Queue a 200 event stream of `body` in the chunks `chunking` makes of it.

        `headers` are added (a `Content-Type` among them replaces `text/event-stream`).
        """
        head = {"Cache-Control": "no-cache", **(headers or {})}
        if "content-type" not in {name.lower() for name in head}:
            head = {"Content-Type": "text/event-stream", **head}
        self._push((200, head, split_body(body, chunking, seed)))

    def status(self, code: int, body: bytes | str = b"",
               headers: Mapping[str, str] | None = None) -> None:
        """Queue a plain reply (JSON content type unless `headers` say otherwise)."""
        data = body.encode() if isinstance(body, str) else body
        head = dict(headers or {})
        if "content-type" not in {name.lower() for name in head}:
            head = {"Content-Type": "application/json", **head}
        head["Content-Length"] = str(len(data))
        self._push((code, head, [data]))

    def also_answer(self, url: str) -> None:
        """Answer requests to `url`'s origin too, as if sent here: a model may keep its real
        host (which decides what its body holds) while its requests are recorded here, as a
        session of the test's own redirecting them to an `SSEServer` would have them."""
        parts = urlsplit(url)
        with self._lock:
            self._origins.add(f"{parts.scheme}://{parts.netloc}")

    def pending(self) -> int:
        """How many queued replies no request has taken yet."""
        with self._lock:
            return len(self._script)

    def _push(self, reply: _Reply) -> None:
        with self._lock:
            self._script.append(reply)

    def _answer(self, request: Outgoing) -> _Reply:
        parts = urlsplit(request.url)
        if f"{parts.scheme}://{parts.netloc}" not in self._origins:
            raise ConnectionRefusedError(f"mock_server does not answer {request.url}")
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        try:
            parsed = json.loads(request.body) if request.body else None
        except ValueError:
            parsed = None
        recorded = RecordedRequest(request.method, path, dict(request.headers), request.body,
                                   parsed)
        with self._lock:
            self.requests.append(recorded)
            if self._script:
                return self._script.popleft()
        text = f"mock_server: no scripted response queued for {request.method} {path}"
        return 418, {"Content-Type": "text/plain"}, [text.encode()]


ScriptedServer = SSEServer | MockServer
"""Either server: what the helpers of a test module that uses both take."""
