"""The transport seam: how one attempt at a request is sent and its reply's bytes received.

`_http` keeps the request policy (retries, backoff, server hints, rate-limit pauses, error text)
and hands each attempt to the `Transport` of the request's session: `open(session, request,
timeouts, signal)` sends an `Outgoing` request (URL, headers and the exact body bytes, as a
signer saw them) and returns a `Response` once its headers are in. The response gives the body
as byte chunks and can be cut off from any thread, which is how an abort wakes a blocked read.

Two transports, chosen once per session:

- `WATCHED`, for the sessions `new_http_session` makes: the request is opened on the calling
  thread, its sockets watched (`_opener.SocketWatch`) so that an abort shuts them down in any
  phase. It goes straight to urllib3 (`_lean.lean_post`) unless the session needs requests' own
  path (cookies, auth, hooks, parameters, a redirect); through a proxy, it goes as `THREADED`
  (proxied connections are not watched).
- `THREADED`, for any other `requests.Session`: `session.post`, on an `_opener.Opener` thread
  that the abort abandons (on the calling thread when there is no signal).

`new_http_session` records `WATCHED` on the session it makes (mounting another adapter there
makes the next request choose again); any other session gets `THREADED` at its first request,
remembered weakly. `use_transport` sets a session's transport (a test double, say).
"""

from __future__ import annotations

import contextlib
import functools
import socket
import weakref
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from .._core import ABORTED_TEXT, AbortSignal
from ._bodies import BodyError, iter_dechunked, iter_sized
from ._lean import lean_post
from ._opener import (
    Opener,
    RequestAborted,
    SocketWatch,
    adapter_type,
    session_type,
    shut,
    watched,
)

if TYPE_CHECKING:
    import requests

__all__ = [
    "THREADED",
    "WATCHED",
    "Outgoing",
    "ReadError",
    "Replayed",
    "Response",
    "Transport",
    "Urllib3Response",
    "new_http_session",
    "transport_of",
    "use_transport",
]

_READ_SIZE = 64 * 1024


@attrs.frozen
class Outgoing:
    """One request as it goes out: a POST of exactly `body` to `url` with `headers`.

    What a wire API's signer sees and returns (`WireApi.sign`), on every attempt.
    """

    url: str
    headers: Mapping[str, str] = attrs.field(repr=False)
    body: bytes = attrs.field(repr=False)


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
        """The body's bytes as they arrive; raises `ReadError`."""
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

    def open(self, session: requests.Session, request: Outgoing,
             timeouts: tuple[float, float], signal: AbortSignal | None) -> Response:
        """Send `request` and return its reply once the headers are in, whatever the status.

        `timeouts` are (connect, read) in seconds. Raises `requests.ConnectionError` or
        `requests.Timeout` (`requests.ConnectTimeout` for a connect) when no reply came, and
        `RequestAborted` once `signal` aborts, at once, in any phase.
        """
        ...


class Urllib3Response:
    """A `Response` over urllib3's streamed response (both transports give one).

    `headers` are the response's own unless given (requests' view of them, say).
    """

    __slots__ = ("_body", "headers", "raw", "status")

    def __init__(self, raw: Any, headers: Mapping[str, str] | None = None) -> None:
        self.raw = raw
        self.status: int = raw.status
        self.headers: Mapping[str, str] = raw.headers if headers is None else headers
        self._body: Iterator[bytes] | None = None

    def chunks(self) -> Iterator[bytes]:
        """The body's bytes, in bulk: whatever one read of the connection brings (`_bodies`).

        A chunked body comes de-chunked, all the chunks of one read as one bytes object; a read
        gives at most `_READ_SIZE` bytes, so that a decoder can refuse a server's huge chunk
        before it is all read. A body read to its end gives its connection back to the pool.
        urllib3 reads what is unusual (a content coding to undo, say). Every call continues
        the same iterator.
        """
        if self._body is None:
            self._body = self._read()
        return self._body

    def _read(self) -> Iterator[bytes]:
        raw = self.raw
        try:
            body = _bulk_body(raw)
            if body is not None:
                yield from body
            elif getattr(raw, "chunked", False) and raw.supports_chunked_reads():
                yield from raw.read_chunked(_READ_SIZE, decode_content=True)
            else:
                while chunk := raw.read1(_READ_SIZE, decode_content=True):
                    yield chunk
        except _read_errors() as exc:
            import urllib3

            timed_out = isinstance(exc, (TimeoutError, urllib3.exceptions.ReadTimeoutError))
            raise ReadError(timed_out) from None

    def read(self, limit: int) -> bytes:
        try:
            return self.raw.read(limit, decode_content=True) or b""
        except Exception:
            return b""

    def set_read_timeout(self, seconds: float) -> None:
        sock = self._socket()
        if sock is not None:
            sock.settimeout(seconds)  # urllib3 sets it afresh for the connection's next request

    def cut(self) -> None:
        sock = self._socket()
        if sock is not None:
            shut(sock)
        with contextlib.suppress(Exception):  # races the reading thread, which fails either way
            self.close()

    def close(self) -> None:
        self.raw.close()
        self.raw.release_conn()

    def _socket(self) -> socket.socket | None:
        """The socket under the reply, found through urllib3 and http.client private attributes.

        requests offers no way to interrupt a blocked read from another thread; shutting the
        socket down does. These attribute paths hold for urllib3 2.x; if they change, an abort
        falls back to closing the reply (which a blocked read may not notice until data comes).
        """
        try:
            connection = getattr(self.raw, "_connection", None)
            sock = getattr(connection, "sock", None)
            if sock is None:  # fall back to the socket under http.client's response
                sock = self.raw._fp.fp.raw._sock
        except AttributeError:
            return None
        return sock  # type: ignore[no-any-return]


class Replayed:
    """A `Response` whose body's first bytes were read already (`_http`'s opening check).

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


def _bulk_body(raw: Any) -> Iterator[bytes] | None:
    """urllib3 response `raw`'s body, read straight from its socket (`_bodies`).

    None when urllib3 should read it: a content coding to undo, no body by its status, a chunk
    begun by another reader, or not the http.client response over a socket file that urllib3 2
    makes. (http.client's `chunk_left` means something only for a chunked body: it stays a
    placeholder string for a sized one or one up to the close.) The first
    read takes what http.client's buffered file holds already past the headers (or receives,
    when it holds nothing); every later read receives from the socket itself, skipping two
    layers of Python per read. Once the body is whole, its connection goes back to the pool if
    nothing follows the body, and is closed otherwise.
    """
    import http.client  # loaded already, by urllib3
    import io

    response = getattr(raw, "_fp", None)
    file = getattr(response, "fp", None)
    if (type(file) is not io.BufferedReader or not isinstance(response, http.client.HTTPResponse)
            or not isinstance(file.raw, socket.SocketIO)
            or raw.headers.get("content-encoding", "identity").lower() not in _IDENTITY
            or raw.chunk_left is not None or (response.chunked and response.chunk_left is not None)
            or not 200 <= raw.status < 300 or raw.status in (204, 304)):
        return None
    first = file.read1
    # Once `first` has emptied the file's buffer (as a read of at least its size does), the
    # socket the file reads from is read directly
    sock = getattr(file.raw, "_sock", None)
    read = sock.recv if isinstance(sock, socket.socket) and \
        io.DEFAULT_BUFFER_SIZE <= _READ_SIZE else first

    def end(clean: bool) -> None:
        if clean:
            response.close()  # as urllib3 does at a body's end: the connection is free
            raw.release_conn()
        else:
            raw.close()

    if raw.chunked:
        return iter_dechunked(first, read, _READ_SIZE, end)
    return iter_sized(first, read, _READ_SIZE, response.length, end)


_IDENTITY = frozenset({"identity", ""})


@functools.cache
def _read_errors() -> tuple[type[BaseException], ...]:
    """What a read of a body raises when its connection fails (or an abort closed it)."""
    import requests
    import urllib3

    return (OSError, ValueError, AttributeError, BodyError, requests.RequestException,
            urllib3.exceptions.HTTPError)


class _Threaded:
    """requests' own path for any session; with a signal, on an `Opener` thread."""

    def open(self, session: requests.Session, request: Outgoing,
             timeouts: tuple[float, float], signal: AbortSignal | None) -> Response:
        if signal is None:
            return _requests_post(session, request, timeouts)
        opener = Opener(functools.partial(_requests_post, session, request, timeouts))
        opener.start()
        remove = signal.add_listener(opener.abandon)
        try:
            opener.finished.wait()
        finally:
            remove()
        return opener.outcome()  # type: ignore[no-any-return]


class _Watched:
    """The sessions of `new_http_session`: opened on the calling thread, sockets watched."""

    def open(self, session: requests.Session, request: Outgoing,
             timeouts: tuple[float, float], signal: AbortSignal | None) -> Response:
        settings = session.merge_environment_settings(request.url, {}, True, None, None)
        if settings["proxies"]:  # proxied connections are not watched
            return THREADED.open(session, request, timeouts, signal)
        if signal is None:
            return _send(session, request, timeouts, settings)
        watch = SocketWatch()
        remove = signal.add_listener(watch.cut)
        try:
            with watched(watch):
                return _send(session, request, timeouts, settings)
        except Exception:
            if signal.aborted:
                raise RequestAborted(ABORTED_TEXT) from None
            raise
        finally:
            remove()


def _send(session: requests.Session, request: Outgoing, timeouts: tuple[float, float],
          settings: Mapping[str, Any]) -> Response:
    """Straight to urllib3 when the session allows it, else through `session.post`."""
    url = request.url
    raw = lean_post(session, session.get_adapter(url), settings["verify"], settings["cert"],
                    url, request.body, request.headers, timeouts)
    return _requests_post(session, request, timeouts) if raw is None else Urllib3Response(raw)


def _requests_post(session: requests.Session, request: Outgoing,
                   timeouts: tuple[float, float]) -> Response:
    """Post through `session.post` (hooks, auth, cookies, redirects, proxies), on this thread."""
    response = session.post(request.url, data=request.body, headers=request.headers,
                            stream=True, timeout=timeouts)
    return Urllib3Response(response.raw, response.headers)


THREADED: Transport = _Threaded()
WATCHED: Transport = _Watched()

_CHOSEN: weakref.WeakKeyDictionary[Any, Transport] = weakref.WeakKeyDictionary()
"""The transports chosen for sessions not made by `new_http_session` (those hold their own)."""


def transport_of(session: requests.Session) -> Transport:
    """The transport of `session`: the one recorded for it, else chosen now and recorded."""
    try:
        chosen: Transport | None = session.agentcore_transport  # type: ignore[attr-defined]
    except AttributeError:  # not a session of `new_http_session`
        chosen = None
    if chosen is not None:
        return chosen
    try:
        chosen = _CHOSEN.get(session)
    except TypeError:  # not weakly referenceable: choose every time
        return _choose(session)
    return chosen if chosen is not None else use_transport(session, _choose(session))


def use_transport(session: requests.Session, transport: Transport) -> Transport:
    """Send `session`'s requests through `transport` from now on; returns `transport`.

    On a session of `new_http_session`, until an adapter is mounted on it.
    """
    if isinstance(session, session_type()):
        session.agentcore_transport = transport  # type: ignore[attr-defined]
    else:
        with contextlib.suppress(TypeError):
            _CHOSEN[session] = transport
    return transport


def _choose(session: requests.Session) -> Transport:
    """`WATCHED` for a session of `new_http_session` with only its own adapters, else `THREADED`."""
    if type(session) is session_type() and all(
            type(adapter) is adapter_type() for adapter in session.adapters.values()):
        return WATCHED
    return THREADED


def new_http_session(pool_size: int = 10) -> requests.Session:
    """A `requests.Session` configured for agentcore: keep-alive, and abort in every phase.

    Its connections hand their sockets to the request being opened, so that `abort()` can shut
    a connect or a wait for response headers down at once. It keeps `pool_size` idle
    connections per host. The caller owns it and closes it (an `Agent` closes its own in
    `Agent.close()`). Any other session works too; with one, an abort still returns at once but
    an abandoned connect or wait ends only at its timeout.
    """
    if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
        raise ValueError(f"'pool_size' must be an int of at least 1, got {pool_size!r}")
    session = session_type()()
    adapter = adapter_type()
    session.mount("https://", adapter(pool_maxsize=pool_size))
    session.mount("http://", adapter(pool_maxsize=pool_size))
    use_transport(session, WATCHED)
    return session
