"""`Urllib3Transport`: requests over a `urllib3.PoolManager` the transport owns.

The transport keeps one pool of connections per origin (`pool_size` idle connections kept; any
number open at once), goes through a `ProxyManager` when the environment names a proxy for the
URL (`HTTPS_PROXY`, `NO_PROXY`...: read once, when the transport is made), and verifies
certificates against `REQUESTS_CA_BUNDLE`/`CURL_CA_BUNDLE` when set, else certifi's bundle, as
requests does. Redirects are not followed (a credential header must never reach another host).

This is the one module of agentcore allowed to use other libraries' private names (each is
listed in `tests/package/test_layers.py`), and only behind `_privates_ok()`: urllib3 2.2 up
to 3 with the attributes in place. With them:

- an abort shuts the request's sockets down in every phase: a connection's socket is created
  through `_watched_socket` (urllib3 offers no hook between creating a socket and connecting
  it, so `HTTPConnection._new_conn` is overridden) and reported to the request's watch;
- a 2xx body is read in bulk straight from the socket after http.client's buffer
  (`_bulk_body`, over the sans-IO decoder of `_bodies`), and a blocked read is woken by
  shutting the socket under the response down (`_socket`).

Without them, everything still works through public API: the opening runs on a thread the
abort abandons, and the body is read with urllib3's `read_chunked`/`read1`.
"""

from __future__ import annotations

import functools
import os
import socket
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from .._core import ABORTED_TEXT, AbortSignal
from ._bodies import BodyError, iter_dechunked, iter_sized
from ._transport import Outgoing, ReadError, RequestAborted, Response, Timeouts, TransportError
from ._watch import SocketWatch, current_watch, open_abandonably, resolve, shut, watched

__all__ = ["DEFAULT_POOL_SIZE", "Urllib3Response", "Urllib3Transport"]

DEFAULT_POOL_SIZE = 512
"""Idle connections kept per origin by the shared client's transport."""

_READ_SIZE = 64 * 1024
_JOINED_BODY_LIMIT = 256 * 1024
"""The largest request body sent in one piece with its head (a larger one goes on its own)."""
_IDENTITY = frozenset({"identity", ""})


class Urllib3Transport:
    """A `Transport` over a `urllib3.PoolManager` of its own (see the module's docstring).

    `pool_size` idle connections are kept per origin. `proxies` maps a scheme (`"https"`,
    `"http"`, `"all"`, and `"no"` for hosts that bypass them) to a proxy URL; None reads them
    from the environment. `ca_certs` is a certificate bundle (file or directory); None: the
    environment's, else certifi's. Thread-safe; `close()` closes every kept connection.
    """

    def __init__(self, pool_size: int = 10, *, proxies: Mapping[str, str] | None = None,
                 ca_certs: str | None = None) -> None:
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
            raise ValueError(f"'pool_size' must be an int of at least 1, got {pool_size!r}")
        if proxies is not None and not isinstance(proxies, Mapping):
            raise TypeError(f"'proxies' must be a mapping of scheme to URL, got {proxies!r}")
        if ca_certs is not None and not isinstance(ca_certs, str):
            raise TypeError(f"'ca_certs' must be a path or None, got {ca_certs!r}")
        import urllib.request

        self.pool_size = pool_size
        self.proxies = dict(urllib.request.getproxies_environment() if proxies is None
                            else proxies)
        self._ca_certs = ca_certs if ca_certs is not None else _environment_ca_certs()
        self._lock = threading.Lock()
        self._direct: Any = None
        self._proxied: dict[str, Any] = {}

    def __repr__(self) -> str:
        proxied = ", proxied" if any(k != "no" for k in self.proxies) else ""
        return f"Urllib3Transport(pool_size={self.pool_size}{proxied})"

    def open(self, request: Outgoing, timeouts: Timeouts, signal: AbortSignal | None
             ) -> Response:
        """Send `request`; with a signal, an abort ends the opening at once in any phase."""
        manager = self._manager(request.url)
        if signal is None:
            return _send(manager, request, timeouts)
        if not _privates_ok():
            return open_abandonably(lambda: _send(manager, request, timeouts),  # type: ignore[no-any-return]
                                    signal)
        watch = SocketWatch()
        remove = signal.add_listener(watch.cut)
        try:
            with watched(watch):
                return _send(manager, request, timeouts)
        except Exception:
            if signal.aborted:
                raise RequestAborted(ABORTED_TEXT) from None
            raise
        finally:
            remove()

    def close(self) -> None:
        """Close every kept connection (in-flight replies end on their own)."""
        with self._lock:
            managers = [self._direct, *self._proxied.values()]
            self._direct, self._proxied = None, {}
        for manager in managers:
            if manager is not None:
                manager.clear()

    def _manager(self, url: str) -> Any:
        """The pool manager for `url`: the direct one, or the `ProxyManager` of its proxy."""
        proxy = self._proxy_for(url) if self.proxies else None
        manager = self._direct if proxy is None else self._proxied.get(proxy)
        if manager is not None:
            return manager
        with self._lock:
            manager = self._direct if proxy is None else self._proxied.get(proxy)
            if manager is None:
                manager = _new_manager(self.pool_size, self._ca_certs, proxy)
                if proxy is None:
                    self._direct = manager
                else:
                    self._proxied[proxy] = manager
            return manager

    def _proxy_for(self, url: str) -> str | None:
        from urllib.parse import urlsplit
        from urllib.request import proxy_bypass_environment  # type: ignore[attr-defined]

        parts = urlsplit(url)
        proxy = self.proxies.get(parts.scheme.lower()) or self.proxies.get("all")
        if not proxy or proxy_bypass_environment(parts.hostname or "",
                                                 {"no": self.proxies.get("no", "")}):
            return None
        return proxy


def _environment_ca_certs() -> str | None:
    """The certificate bundle requests would use: its variables', else certifi's."""
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        value = os.environ.get(name)
        if value:
            return value
    try:
        import certifi
    except ImportError:  # the system's certificates, through ssl's default context
        return None
    return str(certifi.where())


def _new_manager(pool_size: int, ca_certs: str | None, proxy: str | None) -> Any:
    import urllib3

    kwargs: dict[str, Any] = {"num_pools": 32, "maxsize": pool_size, "block": False}
    if ca_certs is not None:
        kwargs["ca_cert_dir" if os.path.isdir(ca_certs) else "ca_certs"] = ca_certs
    if proxy is None:
        manager: Any = urllib3.PoolManager(**kwargs)
    else:
        auth = urllib3.util.parse_url(proxy).auth
        headers = urllib3.util.make_headers(proxy_basic_auth=auth) if auth else None
        manager = urllib3.ProxyManager(proxy, proxy_headers=headers, **kwargs)
    if _privates_ok():
        manager.pool_classes_by_scheme = _watched_pools()
    return manager


def _send(manager: Any, request: Outgoing, timeouts: Timeouts) -> Urllib3Response:
    """One attempt through `manager`; urllib3's failures as `TransportError`."""
    from urllib3 import exceptions as u3

    headers = dict(request.headers)
    if not any(name.lower() == "user-agent" for name in headers):
        headers["User-Agent"] = _user_agent()
    try:
        raw = manager.urlopen(request.method, request.url, body=request.body, headers=headers,
                              redirect=False, retries=False, preload_content=False,
                              decode_content=False, timeout=_timeout(*timeouts))
    except u3.ConnectTimeoutError as exc:  # NewConnectionError is one too, but no timeout
        timed_out = not isinstance(exc, u3.NewConnectionError)
        raise TransportError(str(exc), timed_out=timed_out, connecting=True) from exc
    except u3.ProxyError as exc:
        raise TransportError(str(exc), connecting=True) from exc
    except u3.ReadTimeoutError as exc:
        raise TransportError(str(exc), timed_out=True) from exc
    except (u3.HTTPError, OSError) as exc:
        raise TransportError(str(exc)) from exc
    return Urllib3Response(raw)


@functools.cache
def _user_agent() -> str:
    from .._core import __version__

    return f"agentcore/{__version__}"


@functools.lru_cache(maxsize=64)
def _timeout(connect: float, read: float) -> Any:
    """urllib3's `Timeout` for (connect, read) seconds; urllib3 copies it before using it."""
    from urllib3.util import Timeout

    return Timeout(connect=connect, read=read)


class Urllib3Response:
    """A `Response` over urllib3's streamed response (`headers`: its own unless given)."""

    __slots__ = ("_body", "_cut", "headers", "raw", "status")

    def __init__(self, raw: Any, headers: Mapping[str, str] | None = None) -> None:
        self.raw = raw
        self.status: int = raw.status
        self.headers: Mapping[str, str] = raw.headers if headers is None else headers
        self._body: Iterator[bytes] | None = None
        self._cut = False

    def chunks(self) -> Iterator[bytes]:
        """The body's bytes as they come: whatever one read of the connection brings.

        A chunked body comes de-chunked; a read gives at most `_READ_SIZE` bytes, so that a
        decoder can refuse a server's huge chunk before it is all read. A body read to its
        end gives its connection back to the pool. Every call continues the same iterator.
        """
        if self._body is None:
            self._body = self._read()
        return self._body

    def _read(self) -> Iterator[bytes]:
        from urllib3.exceptions import HTTPError, ReadTimeoutError

        raw = self.raw
        try:
            body = _bulk_body(raw) if _privates_ok() else None
            if body is not None:
                yield from body
            elif raw.chunked and raw.supports_chunked_reads():
                yield from raw.read_chunked(_READ_SIZE, decode_content=True)
            else:
                while chunk := raw.read1(_READ_SIZE, decode_content=True):
                    yield chunk
        except (OSError, ValueError, BodyError, HTTPError) as exc:
            raise ReadError(isinstance(exc, (TimeoutError, ReadTimeoutError))) from None
        except Exception:
            if self._cut:  # a reply closed under the read fails in any way (fp gone: None)
                raise ReadError(False) from None
            raise  # a bug, not a connection error: the caller reports it as one

    def read(self, limit: int) -> bytes:
        try:
            return self.raw.read(limit, decode_content=True) or b""
        except Exception:
            return b""

    def set_read_timeout(self, seconds: float) -> None:
        sock = _socket(self.raw)
        if sock is not None:
            sock.settimeout(seconds)  # urllib3 sets it afresh for the connection's next request

    def cut(self) -> None:
        self._cut = True
        sock = _socket(self.raw)
        if sock is not None:
            shut(sock)
        try:
            self.close()
        except Exception:  # races the reading thread, which fails either way
            return

    def close(self) -> None:
        self.raw.close()
        self.raw.release_conn()


# --- behind the version gate: other libraries' private names ----------------------------------


@functools.cache
def _privates_ok() -> bool:
    """Whether urllib3 is a version whose private names this module was tested with."""
    from importlib.metadata import PackageNotFoundError, version

    from urllib3.connection import HTTPConnection

    try:
        major, minor = (int(part) for part in version("urllib3").split(".")[:2])
    except (ValueError, PackageNotFoundError):  # a version we cannot read: the public path
        return False
    return (2, 2) <= (major, minor) < (3, 0) and callable(getattr(HTTPConnection, "_new_conn",
                                                                  None))


def _socket(raw: Any) -> socket.socket | None:
    """The socket under urllib3 response `raw`, through urllib3 and http.client's privates."""
    if not _privates_ok():
        return None
    connection = getattr(raw, "_connection", None)
    sock = getattr(connection, "sock", None)
    if sock is None:  # urllib3 let the connection go: the socket under http.client's reply
        file = getattr(getattr(raw, "_fp", None), "fp", None)
        sock = getattr(getattr(file, "raw", None), "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


def _bulk_body(raw: Any) -> Iterator[bytes] | None:
    """urllib3 response `raw`'s body, read straight from its socket (`_bodies`).

    None when urllib3 should read it: a content coding to undo, no body by its status, a chunk
    begun by another reader, or not the http.client response over a socket file that urllib3 2
    makes. (http.client's `chunk_left` means something only for a chunked body.) The first
    read takes what http.client's buffered file holds already past the headers; every later
    read receives from the socket itself. Once the body is whole, its connection goes back to
    the pool if nothing follows the body, and is closed otherwise.
    """
    import http.client
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
    # Once `first` has emptied the file's buffer (a read of at least its size does), the
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


def _watched_socket(conn: Any, watch: SocketWatch) -> socket.socket:
    """A connected socket for urllib3 connection `conn`, added to `watch` before it connects.

    What `urllib3.util.connection.create_connection` and `HTTPConnection._new_conn` do, with
    the same exceptions; the host name is looked up so that an abort stops waiting for it.
    """
    from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
    from urllib3.util.connection import allowed_gai_family

    host = str(conn.host).strip("[]")
    try:
        found = resolve(host, conn.port, allowed_gai_family(), watch)
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
def _watched_pools() -> dict[str, type[Any]]:
    """urllib3 pool classes whose connections report their sockets to the request's watch.

    A body of bytes goes out with the request's head in one send: one segment, one wake of the
    server, one system call fewer than http.client's head-then-body.
    """
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    class Watched(HTTPConnection):
        _joined: bytes | None = None  # the body the head waits for, while a request is sent
        _head: bytes | None = None  # the head, waiting for it

        def _new_conn(self) -> socket.socket:
            watch = current_watch()
            return super()._new_conn() if watch is None else _watched_socket(self, watch)

        def request(self, method: str, url: str, body: Any = None, headers: Any = None,
                    **kwargs: Any) -> None:
            watch = current_watch()
            if watch is not None and self.sock is not None:
                watch.add(self.sock)
            if type(body) is bytes and 0 < len(body) <= _JOINED_BODY_LIMIT:
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

    return {"http": WatchedPool, "https": WatchedTLSPool}
