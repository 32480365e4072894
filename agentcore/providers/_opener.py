"""Opening a request so that an abort reaches it in every phase.

`Opener` runs one request's connect, send and wait for headers on a short-lived daemon thread
while the caller waits for it or the abort. Sessions from `new_http_session` hand every socket
a request opens or reuses to that request's `SocketWatch`, so an abort shuts the socket down:
the connect or the wait ends at once, and the server sees the close.
"""

from __future__ import annotations

import contextlib
import functools
import socket
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._core import ABORTED_TEXT

if TYPE_CHECKING:
    import requests

__all__ = ["Opener", "RequestAborted", "new_http_session", "shut"]


class RequestAborted(Exception):
    """The request was aborted through its signal."""


def new_http_session() -> requests.Session:
    """A `requests.Session` configured for agentcore: keep-alive, and abort in every phase.

    Its connections hand their sockets to the request being opened, so that `abort()` can shut
    a connect or a wait for response headers down at once. The caller owns it and closes it
    (an `Agent` closes its own in `Agent.close()`). Any other session works too; with one, an
    abort still returns at once but an abandoned connect or wait ends only at its timeout.
    """
    import requests

    session = requests.Session()
    adapter_type = _adapter_type()
    session.mount("https://", adapter_type())
    session.mount("http://", adapter_type())
    return session


class _SocketWatch:
    """The sockets one request opens or reuses, so that an abort can shut them down.

    Thread-safe. A socket added after `cut()` is shut down at once (the abort came first).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._cut = False

    def add(self, sock: socket.socket) -> None:
        with self._lock:
            if not self._cut:
                self._sockets.append(sock)
                return
        shut(sock)

    def cut(self) -> None:
        with self._lock:
            self._cut = True
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            shut(sock)


def shut(sock: socket.socket) -> None:
    """Shut `sock` down both ways: a blocked connect, send or receive on it returns at once."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class Opener(threading.Thread):
    """Runs one `send()` (connect, send, wait for headers) off the calling thread.

    The caller waits on `finished`, which `abandon()` (the abort) sets as well; `outcome()` then
    gives the response or raises what `send()` raised, or `RequestAborted`. An abandoned opener
    closes the response it may still get; it is a daemon, so an abandoned connect never keeps
    the process alive. The connections of `new_http_session` add their sockets to `watch`.
    """

    def __init__(self, send: Callable[[], Any]) -> None:
        super().__init__(name="agentcore-http-open", daemon=True)
        self.watch = _SocketWatch()
        self.finished = threading.Event()
        self._send = send
        self._lock = threading.Lock()
        self._response: Any = None
        self._error: BaseException | None = None
        self._abandoned = False

    def run(self) -> None:
        try:
            response = self._send()
        except BaseException as exc:
            with self._lock:
                self._error = exc
        else:
            with self._lock:
                abandoned = self._abandoned
                if not abandoned:
                    self._response = response
            if abandoned:
                response.close()
        finally:
            self._send = _nothing  # drop the request (and the session) as soon as possible
            self.finished.set()

    def abandon(self) -> None:
        """Give up on the request (from the aborting thread): cut its sockets, wake the caller."""
        with self._lock:
            self._abandoned = True
            response, self._response = self._response, None
        self.watch.cut()
        if response is not None:
            with contextlib.suppress(Exception):
                response.close()
        self.finished.set()

    def outcome(self) -> Any:
        """The response; raises what sending raised, or `RequestAborted` once abandoned."""
        with self._lock:
            if self._abandoned:
                raise RequestAborted(ABORTED_TEXT)
            error, self._error = self._error, None
            if error is not None:
                raise error
            return self._response


def _nothing() -> None:
    return None


def _current_watch() -> _SocketWatch | None:
    thread = threading.current_thread()
    return thread.watch if isinstance(thread, Opener) else None


def _watched_socket(conn: Any, watch: _SocketWatch) -> socket.socket:
    """A connected socket for urllib3 connection `conn`, added to `watch` before it connects.

    What `urllib3.util.connection.create_connection` and `HTTPConnection._new_conn` do (urllib3
    offers no hook between creating a socket and connecting it), with the same exceptions.
    """
    from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
    from urllib3.util.connection import allowed_gai_family

    host = str(conn.host).strip("[]")
    try:
        found = socket.getaddrinfo(host, conn.port, allowed_gai_family(), socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise NameResolutionError(conn.host, conn, exc) from exc
    error: OSError = OSError("getaddrinfo returns an empty list")
    for family, kind, proto, _, address in found:
        sock = socket.socket(family, kind, proto)
        try:
            for option in conn.socket_options or ():
                sock.setsockopt(*option)
            if conn.timeout is None or isinstance(conn.timeout, (int, float)):
                sock.settimeout(conn.timeout)
            if conn.source_address:
                sock.bind(conn.source_address)
            watch.add(sock)
            sock.connect(address)
        except OSError as exc:
            sock.close()
            error = exc
            continue
        return sock
    if isinstance(error, TimeoutError):
        raise ConnectTimeoutError(conn, f"Connection to {conn.host} timed out. "
                                        f"(connect timeout={conn.timeout})") from error
    raise NewConnectionError(conn, f"Failed to establish a new connection: {error}") from error


@functools.cache
def _adapter_type() -> type[Any]:
    """The `HTTPAdapter` of `new_http_session`, built on first use (requests loads lazily).

    Its connections create their sockets through `_watched_socket` when on an `Opener`, and
    add a reused socket to the opener's watch before sending on it.
    """
    import requests.adapters
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    class Watched(HTTPConnection):
        """A connection whose socket an `Opener`'s watch holds while a request is sent."""

        def _new_conn(self) -> socket.socket:
            watch = _current_watch()
            return super()._new_conn() if watch is None else _watched_socket(self, watch)

        def request(self, *args: Any, **kwargs: Any) -> None:
            watch = _current_watch()
            if watch is not None and self.sock is not None:
                watch.add(self.sock)
            super().request(*args, **kwargs)

    class WatchedHTTPConnection(Watched):
        pass

    class WatchedHTTPSConnection(Watched, HTTPSConnection):
        pass

    class WatchedPool(HTTPConnectionPool):
        ConnectionCls = WatchedHTTPConnection

    class WatchedTLSPool(HTTPSConnectionPool):
        ConnectionCls = WatchedHTTPSConnection

    class AgentcoreAdapter(requests.adapters.HTTPAdapter):
        """`HTTPAdapter` whose direct connections an abort can cut in any phase."""

        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = {"http": WatchedPool,
                                                       "https": WatchedTLSPool}

    return AgentcoreAdapter
