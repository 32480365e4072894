"""`MockTransport`: answers requests from a function, with no socket (for tests).

`MockTransport(handler)` calls `handler(request)` for every attempt, with the `Outgoing`
request as it would go out (URL, headers, the exact body bytes), and answers with what it
returns: `(status, headers, body)`, where `body` is bytes or an iterable of byte chunks, read
lazily as the reply is streamed (a generator may wait between chunks on something the test
controls). Every attempt is kept in `requests`, in order. A handler that raises `OSError`
(`ConnectionError`, `TimeoutError`) stands for a connection that failed and is retried like
one; a body whose iterable raises it, for a connection that broke mid-reply. Anything else it
raises ends the run with an error naming the exception.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping

from .._core import ABORTED_TEXT, AbortSignal
from ._transport import Outgoing, ReadError, RequestAborted, Timeouts, TransportError

__all__ = ["MockReply", "MockTransport"]

MockReply = tuple[int, Mapping[str, str], bytes | Iterable[bytes]]
"""What a `MockTransport` handler returns: status, headers, and the body (bytes or chunks)."""


class MockTransport:
    """A `Transport` whose replies come from `handler` (see the module's docstring).

    Thread-safe: attempts from several threads are recorded in the order they came.
    """

    def __init__(self, handler: Callable[[Outgoing], MockReply]) -> None:
        if not callable(handler):
            raise TypeError(f"'handler' must be callable, got {type(handler).__name__}")
        self.handler = handler
        self.requests: list[Outgoing] = []
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MockTransport({getattr(self.handler, '__name__', self.handler)!r})"

    def open(self, request: Outgoing, timeouts: Timeouts, signal: AbortSignal | None
             ) -> MockResponse:
        """Record `request` and answer it with what the handler returns."""
        with self._lock:
            self.requests.append(request)
        if signal is not None and signal.aborted:
            raise RequestAborted(ABORTED_TEXT)
        try:
            reply = self.handler(request)
        except OSError as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}",
                                 timed_out=isinstance(exc, TimeoutError)) from exc
        return MockResponse(*_checked(reply))

    def close(self) -> None:
        """Nothing to close: there are no connections."""


def _checked(reply: object) -> tuple[int, dict[str, str], Iterable[bytes]]:
    """`reply` as (status, headers, chunks); a clear `TypeError` for anything else."""
    if not isinstance(reply, tuple) or len(reply) != 3:
        raise TypeError("a MockTransport handler must return (status, headers, body), got "
                        f"{reply!r:.200}")
    status, headers, body = reply
    if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
        raise TypeError(f"a MockTransport reply's status must be an int from 100 to 599, got "
                        f"{status!r}")
    if not isinstance(headers, Mapping):
        raise TypeError(f"a MockTransport reply's headers must be a mapping, got {headers!r}")
    if isinstance(body, (bytes, bytearray)):
        return status, dict(headers), [bytes(body)]
    if isinstance(body, str) or not isinstance(body, Iterable):
        raise TypeError("a MockTransport reply's body must be bytes or an iterable of bytes, "
                        f"got {type(body).__name__}")
    return status, dict(headers), body


class MockResponse:
    """A `Response` whose body is the chunks a `MockTransport` handler gave."""

    def __init__(self, status: int, headers: dict[str, str], body: Iterable[bytes]) -> None:
        self.status = status
        self.headers: Mapping[str, str] = headers
        self.closed = False
        self._body = body
        self._chunks: Iterator[bytes] | None = None

    def chunks(self) -> Iterator[bytes]:
        """The body's chunks; after `cut()` or `close()`, a `ReadError`."""
        if self._chunks is None:
            self._chunks = self._read()
        return self._chunks

    def _read(self) -> Iterator[bytes]:
        try:
            for chunk in self._body:
                if self.closed:
                    raise ReadError(False)
                if not isinstance(chunk, (bytes, bytearray)):
                    raise TypeError("a MockTransport reply's body chunks must be bytes, got "
                                    f"{type(chunk).__name__}")
                if chunk:
                    yield bytes(chunk)
        except OSError as exc:
            raise ReadError(isinstance(exc, TimeoutError)) from None
        if self.closed:
            raise ReadError(False)

    def read(self, limit: int) -> bytes:
        try:
            return b"".join(self.chunks())[:limit]
        except (ReadError, OSError):
            return b""

    def set_read_timeout(self, seconds: float) -> None:
        """No reads wait here."""

    def cut(self) -> None:
        self.closed = True

    def close(self) -> None:
        self.closed = True
