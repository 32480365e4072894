"""Sockets an abort can shut down, and threads it can abandon: the parts of the transports.

The sessions `new_http_session` makes (`session_type`) hand every socket a request opens or
reuses to that request's `SocketWatch` (the one `watched` names for the thread), so an abort
shuts the socket down: the connect or the wait ends at once, and the server sees the close. A
host name is looked up on a short-lived thread that the abort stops waiting for. Such a request
needs no thread of its own. For any other session (or through a proxy), `Opener` runs one
request's connect, send and wait for headers on a short-lived daemon thread while the caller
waits for it or the abort. `_transport` builds its two transports from these.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import ipaddress
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .._core import ABORTED_TEXT

if TYPE_CHECKING:
    import requests

__all__ = ["Opener", "RequestAborted", "SocketWatch", "adapter_type", "forget_environment",
           "session_type", "shut", "watched"]


class RequestAborted(Exception):
    """The request was aborted through its signal."""


JOINED_BODY_LIMIT = 256 * 1024
"""The largest request body sent in one piece with its head (a larger one goes on its own)."""

ENV_SETTINGS_TTL_S = 1.0
"""How long sessions from `new_http_session` reuse what they read from the environment."""

_ENV_SETTINGS: dict[tuple[Any, ...], tuple[float, Any]] = {}
"""Environment settings by what they depend on, shared by every session of `new_http_session`
(the environment is the process's): an agent per request reads it once a second, not once."""


def forget_environment() -> None:
    """Drop the environment settings read so far: the next request reads them afresh."""
    _ENV_SETTINGS.clear()


@functools.cache
def session_type() -> type[requests.Session]:
    """The `requests.Session` of `new_http_session`, built on first use (requests loads lazily).

    Such a session records the transport chosen for it (`agentcore_transport`); mounting an
    adapter forgets it, so that the next request chooses again. It reads proxies and
    certificates from the environment (`HTTPS_PROXY`, `NO_PROXY`, `REQUESTS_CA_BUNDLE`, ...)
    once per origin every `ENV_SETTINGS_TTL_S`, all together: requests reads them afresh for
    every request, walking the whole environment several times and looking for `~/.netrc`,
    which costs more than the rest of sending a request.
    """
    import requests

    class AgentcoreSession(requests.Session):
        """`requests.Session` that reuses environment settings read in the last second."""

        agentcore_transport: Any = None
        """The transport its requests go through (`_transport`); None: chosen at the next one."""

        def mount(self, prefix: Any, adapter: Any) -> None:
            super().mount(prefix, adapter)
            self.agentcore_transport = None  # other adapters: the transport may differ

        def merge_environment_settings(self, url: Any, proxies: Any, stream: Any, verify: Any,
                                       cert: Any) -> Any:
            if proxies or not self.trust_env or not isinstance(url, str):
                return super().merge_environment_settings(url, proxies, stream, verify, cert)
            # What the result depends on: the origin, the arguments, the session's defaults
            key = (*url.split("/", 3)[:3], stream, verify, cert, self.stream, self.verify,
                   self.cert, *self.proxies.items())
            now = time.monotonic()
            try:
                cached = _ENV_SETTINGS.get(key)
            except TypeError:  # an unhashable setting: no caching
                return super().merge_environment_settings(url, proxies, stream, verify, cert)
            if cached is None or now - cached[0] > ENV_SETTINGS_TTL_S:
                if len(_ENV_SETTINGS) > 256:
                    _ENV_SETTINGS.clear()
                settings = super().merge_environment_settings(url, proxies, stream, verify, cert)
                cached = _ENV_SETTINGS[key] = (now, settings)
            copied = dict(cached[1])
            copied["proxies"] = dict(copied["proxies"])
            return copied

    return AgentcoreSession


class SocketWatch:
    """The sockets one request opens or reuses, so that an abort can shut them down.

    Thread-safe. A socket added after `cut()` is shut down at once (the abort came first).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._cut = False
        self._wakers: list[threading.Event] = []  # set by `cut()` (waits for name lookups)

    def add(self, sock: socket.socket) -> None:
        with self._lock:
            if not self._cut:
                self._sockets.append(sock)
                return
        shut(sock)

    def wake_on_cut(self, waker: threading.Event) -> None:
        """Have `cut()` set `waker` (at once if it came already)."""
        with self._lock:
            if not self._cut:
                self._wakers.append(waker)
                return
        waker.set()

    def cut(self) -> None:
        with self._lock:
            self._cut = True
            sockets, self._sockets = self._sockets, []
            wakers = self._wakers
        for waker in wakers:
            waker.set()
        for sock in sockets:
            shut(sock)


_watching = threading.local()
"""Per thread: the `SocketWatch` of the request the thread is opening (`watched`), if any."""


@contextlib.contextmanager
def watched(watch: SocketWatch) -> Iterator[None]:
    """While inside, the connections of `new_http_session` on this thread report to `watch`."""
    previous = getattr(_watching, "watch", None)
    _watching.watch = watch
    try:
        yield
    finally:
        _watching.watch = previous


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
        self.watch = SocketWatch()
        self.finished = threading.Event()
        self._send = send
        self._lock = threading.Lock()
        self._response: Any = None
        self._error: BaseException | None = None
        self._abandoned = False

    def run(self) -> None:
        _watching.watch = self.watch
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


def _current_watch() -> SocketWatch | None:
    return getattr(_watching, "watch", None)


def _resolve(host: str, port: int, watch: SocketWatch) -> list[Any]:
    """`socket.getaddrinfo` for a connection, which an abort (`watch.cut()`) stops waiting for.

    An IP address needs no lookup and is resolved here; a name is looked up on a short-lived
    daemon thread (a lookup cannot be interrupted), abandoned when the watch is cut.
    """
    from urllib3.util.connection import allowed_gai_family

    family = allowed_gai_family()
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)
    found: list[Any] = []
    failed: list[BaseException] = []
    done, wake = threading.Event(), threading.Event()
    watch.wake_on_cut(wake)

    def look_up() -> None:
        try:
            found.extend(socket.getaddrinfo(host, port, family, socket.SOCK_STREAM))
        except BaseException as exc:
            failed.append(exc)
        finally:
            done.set()
            wake.set()

    threading.Thread(target=look_up, name="agentcore-http-resolve", daemon=True).start()
    wake.wait()
    if not done.is_set():
        raise OSError(errno.ECANCELED, "aborted while resolving the host name")
    if failed:
        raise failed[0]
    return found


def _watched_socket(conn: Any, watch: SocketWatch) -> socket.socket:
    """A connected socket for urllib3 connection `conn`, added to `watch` before it connects.

    What `urllib3.util.connection.create_connection` and `HTTPConnection._new_conn` do (urllib3
    offers no hook between creating a socket and connecting it), with the same exceptions.
    """
    from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError

    host = str(conn.host).strip("[]")
    try:
        found = _resolve(host, conn.port, watch)
    except socket.gaierror as exc:
        raise NameResolutionError(conn.host, conn, exc) from exc
    except OSError as exc:  # the abort: as a connection that could not be made
        raise NewConnectionError(conn, f"Failed to establish a new connection: {exc}") from exc
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
def adapter_type() -> type[Any]:
    """The `HTTPAdapter` of `new_http_session`, built on first use (requests loads lazily).

    Its connections create their sockets through `_watched_socket` when on an `Opener`, and
    add a reused socket to the opener's watch before sending on it.
    """
    import requests.adapters
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    class Watched(HTTPConnection):
        """A connection whose socket a request's watch holds while the request is sent.

        A body of bytes goes out with the request's head in one send: one segment, one wake
        of the server, one system call fewer than http.client's head-then-body.
        """

        _joined: bytes | None = None  # the body the head waits for, while a request is sent
        _head: bytes | None = None  # the head, waiting for it

        def _new_conn(self) -> socket.socket:
            watch = _current_watch()
            return super()._new_conn() if watch is None else _watched_socket(self, watch)

        def request(self, method: str, url: str, body: Any = None, headers: Any = None,
                    **kwargs: Any) -> None:
            watch = _current_watch()
            if watch is not None and self.sock is not None:
                watch.add(self.sock)
            if type(body) is bytes and 0 < len(body) <= JOINED_BODY_LIMIT:
                self._joined = body
            try:
                super().request(method, url, body, headers, **kwargs)
                if self._head is not None:  # no body came after all: the head alone
                    head, self._head = self._head, None
                    super().send(head)
            finally:
                self._joined = self._head = None

        def send(self, data: Any) -> None:
            joined = self._joined
            if joined is not None:
                head = self._head
                if head is None and data is not joined:
                    self._head = data  # the head (the first send): it waits for the body
                    return
                self._joined = self._head = None
                if head is not None:
                    if data is joined:
                        data = head + data
                    else:
                        super().send(head)
            super().send(data)

    class WatchedHTTPConnection(Watched):
        pass

    class WatchedHTTPSConnection(Watched, HTTPSConnection):
        pass

    class WatchedPool(HTTPConnectionPool):
        ConnectionCls = WatchedHTTPConnection

    class WatchedTLSPool(HTTPSConnectionPool):
        ConnectionCls = WatchedHTTPSConnection

    class AgentcoreAdapter(requests.adapters.HTTPAdapter):
        """`HTTPAdapter` whose direct connections an abort can cut in any phase.

        `agentcore_pools` keeps the pools `_lean` sends through, by origin and certificates;
        closing the adapter forgets them, so that their connections close with it.
        """

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.agentcore_pools: dict[Any, Any] = {}
            super().__init__(*args, **kwargs)

        def close(self) -> None:
            self.agentcore_pools.clear()
            super().close()

        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = {"http": WatchedPool,
                                                       "https": WatchedTLSPool}

    return AgentcoreAdapter
