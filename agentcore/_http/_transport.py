"""The transport contract: how one attempt at a request is sent and its reply's bytes received.

`HttpClient` keeps the request policy (retries, pauses, signing, redaction) and hands each
attempt to its `Transport`: `open(request, timeouts, signal)` sends an `Outgoing` request (the
exact bytes a signer saw) and returns a `Response` once its headers are in. A transport never
sees a client or a `requests.Session`; it owns whatever connections it keeps and gives them up
in `close()`. The response gives the body as byte chunks and can be cut off from any thread,
which is how an abort wakes a blocked read.

Failures are typed here so that the policy reads them the same way from every transport:
`TransportError` when no reply came (the connection failed or timed out), `ReadError` when a
body broke off, `RequestAborted` once the request's signal aborted. Anything else a transport
raises is a bug, carried up as a `TransportBug` naming it (never as a connection error).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Protocol

import attrs

from .._core import AbortSignal

__all__ = [
    "Outgoing",
    "ReadError",
    "Replayed",
    "RequestAborted",
    "Response",
    "Timeouts",
    "Transport",
    "TransportBug",
    "TransportError",
]

Timeouts = tuple[float, float]
"""(connect, read) in seconds: how long a connection may take, and how long a read may wait."""


@attrs.frozen
class Outgoing:
    """One request as it goes out: `method` of exactly `body` to `url` with `headers`.

    What a wire API's signer sees and returns (`WireApi.sign`), on every attempt, and what a
    `MockTransport` handler receives.
    """

    url: str
    headers: Mapping[str, str] = attrs.field(repr=False)
    body: bytes = attrs.field(repr=False)
    method: str = "POST"


class RequestAborted(Exception):
    """The request was aborted through its signal."""


class TransportError(Exception):
    """No reply came: the connection could not be made, broke, or timed out before the headers.

    `timed_out`: no answer within a timeout; `connecting`: the failure came while connecting
    (nothing was sent). The underlying error is the exception's `__cause__`.
    """

    def __init__(self, message: str, *, timed_out: bool = False, connecting: bool = False
                 ) -> None:
        super().__init__(message)
        self.timed_out = timed_out
        self.connecting = connecting


class TransportBug(Exception):
    """A transport failed in a way no connection explains (it raised something else): a bug.

    Its message names the exception, which is its `__cause__`; never retried.
    """


class ReadError(Exception):
    """Reading a body failed: the connection broke, or no byte came within the read timeout."""

    def __init__(self, timed_out: bool) -> None:
        super().__init__("Request timed out." if timed_out else "Connection error.")
        self.timed_out = timed_out


class Response(Protocol):
    """A reply whose headers are in and whose body is still to read."""

    status: int
    headers: Mapping[str, str]

    def chunks(self) -> Iterator[bytes]:
        """The body's bytes as they arrive; raises `ReadError`. Calls continue one iterator."""
        ...

    def read(self, limit: int) -> bytes:
        """Up to `limit` bytes of the body at once (an error body); b"" when reading fails."""
        ...

    def set_read_timeout(self, seconds: float) -> None:
        """From now on a read waits at most `seconds` (to drain what is left of a body)."""
        ...

    def cut(self) -> None:
        """From any thread: close the reply so that a read blocked on it returns at once."""
        ...

    def close(self) -> None:
        """Close the reply; a body read to its end gives its connection back to the pool."""
        ...


class Transport(Protocol):
    """Sends one attempt at a request and receives its reply (see the module's docstring)."""

    def open(self, request: Outgoing, timeouts: Timeouts, signal: AbortSignal | None
             ) -> Response:
        """Send `request` and return its reply once the headers are in, whatever the status.

        Raises `TransportError` when no reply came, and `RequestAborted` once `signal` aborts,
        at once, in any phase.
        """
        ...

    def close(self) -> None:
        """Close the connections the transport keeps; it may open new ones if used again."""
        ...


class Replayed:
    """A `Response` whose body's first bytes were read already (`HttpClient`'s opening check).

    Its chunks give those bytes (`head`) again, then the rest of the body's `chunks`.
    """

    __slots__ = ("_chunks", "_head", "_response", "headers", "status")

    def __init__(self, response: Response, head: bytes, chunks: Iterator[bytes]) -> None:
        self._response = response
        self._head = head
        self._chunks = chunks
        self.status = response.status
        self.headers = response.headers

    def chunks(self) -> Iterator[bytes]:
        head, self._head = self._head, b""
        if head:
            yield head
        yield from self._chunks

    def read(self, limit: int) -> bytes:
        return self._response.read(limit)

    def set_read_timeout(self, seconds: float) -> None:
        self._response.set_read_timeout(seconds)

    def cut(self) -> None:
        self._response.cut()

    def close(self) -> None:
        self._response.close()
