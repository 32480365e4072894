"""Opening a request so that an abort reaches it in every phase.

Sessions from `new_http_session` hand every socket a request opens or reuses to that request's
`SocketWatch` (the one `watched` names for the thread), so an abort shuts the socket down: the
connect or the wait ends at once, and the server sees the close. A host name is looked up on a
short-lived thread that the abort stops waiting for. Such a request needs no thread of its own.
For any other session (or through a proxy), `Opener` runs one request's connect, send and wait
for headers on a short-lived daemon thread while the caller waits for it or the abort.
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

import attrs

from .._core import ABORTED_TEXT

if TYPE_CHECKING:
    import requests

__all__ = ["DirectRoute", "LeanResponse", "Opener", "RequestAborted", "SocketWatch",
           "direct_route", "forget_environment", "lean_post", "new_http_session", "shut",
           "watched"]


class RequestAborted(Exception):
    """The request was aborted through its signal."""


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
    session = _session_type()()
    adapter_type = _adapter_type()
    session.mount("https://", adapter_type(pool_maxsize=pool_size))
    session.mount("http://", adapter_type(pool_maxsize=pool_size))
    return session


_REDIRECTS = frozenset({301, 302, 303, 307, 308})


def lean_post(session: Any, route: DirectRoute, url: str, body: bytes, headers: dict[str, str],
              timeouts: tuple[float, float]) -> Any | None:
    """`session.post(url, ..., stream=True)` for a session of `new_http_session`, made cheaper.

    The request goes from the session's adapter straight to urllib3, with what `requests` would
    send (the session's headers under ours, the environment's certificate settings), and
    urllib3's errors become the `requests` exceptions `HTTPAdapter.send` raises. It skips what
    such a session does not use per request (cookies, auth, hooks, `.netrc`, redirects), which
    costs about as much as urllib3 itself; cookies a response sets are kept, and from then on the
    session's requests take requests' own path. `route` is `direct_route(session, url)`. None,
    having sent nothing, when the session needs any of that (then use `session.post`); a
    redirect answer is closed and gives None.
    """
    if session.auth or session.params or session.cookies or any(session.hooks.values()):
        return None
    import requests
    from urllib3.util import Timeout, parse_url

    adapter, verify, cert = route.adapter, route.verify, route.cert
    target = requests.PreparedRequest()
    target.url, target.method = url, "POST"
    pool = adapter.get_connection_with_tls_context(target, verify, proxies=None, cert=cert)
    adapter.cert_verify(pool, url, verify, cert)
    ours = {name.lower() for name in headers}
    sent = {name: value for name, value in session.headers.items()
            if value is not None and name.lower() not in ours}
    sent.update(headers)
    sent["Content-Length"] = str(len(body))
    with _requests_errors():
        raw = pool.urlopen("POST", parse_url(url).request_uri, body=body, headers=sent,
                           redirect=False, assert_same_host=False, preload_content=False,
                           decode_content=False, retries=adapter.max_retries,
                           timeout=Timeout(connect=timeouts[0], read=timeouts[1]),
                           chunked=False)
    response = LeanResponse(raw)
    if "set-cookie" in raw.headers:  # kept for the next request, as requests does
        from requests import cookies, structures

        target.headers = structures.CaseInsensitiveDict(
            {name: str(value) for name, value in sent.items()})
        extract: Any = cookies.extract_cookies_to_jar
        extract(session.cookies, target, raw)
    if response.status_code in _REDIRECTS:  # requests follows these: let it
        response.close()
        return None
    return response


class LeanResponse:
    """What `lean_post` returns: the part of `requests.Response` the providers use."""

    __slots__ = ("headers", "raw", "status_code")

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.status_code: int = raw.status
        self.headers = raw.headers

    def close(self) -> None:
        """As `requests.Response.close()` of a streamed body: close it, give the connection back."""
        self.raw.close()
        self.raw.release_conn()


@contextlib.contextmanager
def _requests_errors() -> Iterator[None]:
    """Raise urllib3's errors as the `requests` exceptions `HTTPAdapter.send` makes of them."""
    import requests
    from urllib3 import exceptions as u3

    try:
        yield
    except u3.MaxRetryError as exc:
        reason = exc.reason
        if isinstance(reason, u3.ConnectTimeoutError) and \
                not isinstance(reason, u3.NewConnectionError):
            raise requests.ConnectTimeout(exc) from exc
        if isinstance(reason, u3.ResponseError):
            raise requests.exceptions.RetryError(exc) from exc
        if isinstance(reason, u3.SSLError):
            raise requests.exceptions.SSLError(exc) from exc
        raise requests.ConnectionError(exc) from exc
    except (u3.ProtocolError, u3.ClosedPoolError, OSError) as exc:
        raise requests.ConnectionError(exc) from exc
    except u3.SSLError as exc:
        raise requests.exceptions.SSLError(exc) from exc
    except u3.ReadTimeoutError as exc:
        raise requests.ReadTimeout(exc) from exc
    except u3.InvalidHeader as exc:
        raise requests.exceptions.InvalidHeader(exc) from exc


ENV_SETTINGS_TTL_S = 1.0
"""How long sessions from `new_http_session` reuse what they read from the environment."""

_ENV_SETTINGS: dict[tuple[Any, ...], tuple[float, Any]] = {}
"""Environment settings by what they depend on, shared by every session of `new_http_session`
(the environment is the process's): an agent per request reads it once a second, not once."""


def forget_environment() -> None:
    """Drop the environment settings read so far: the next request reads them afresh."""
    _ENV_SETTINGS.clear()


@functools.cache
def _session_type() -> type[requests.Session]:
    """The `requests.Session` of `new_http_session`, built on first use (requests loads lazily).

    Such sessions read proxies and certificates from the environment (`HTTPS_PROXY`,
    `NO_PROXY`, `REQUESTS_CA_BUNDLE`, ...) once per origin every `ENV_SETTINGS_TTL_S`, all
    together: requests reads them afresh for every request, walking the whole environment several
    times and looking for `~/.netrc`, which costs more than the rest of sending a request.
    """
    import requests

    class AgentcoreSession(requests.Session):
        """`requests.Session` that reuses environment settings read in the last second."""

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


@attrs.frozen
class DirectRoute:
    """How a session of `new_http_session` reaches a URL with no proxy.

    Its adapter, and the certificate settings requests would use (session and environment).
    """

    adapter: Any
    verify: Any
    cert: Any


def direct_route(session: Any, url: str) -> DirectRoute | None:
    """The route when `session` opens `url` through watched connections, directly; else None.

    Then an abort can cut every phase of opening the request by shutting its socket down (and
    stop waiting for name resolution), so the request needs no `Opener` thread, and
    `lean_post` may send it.
    """
    if type(session) is not _session_type():
        return None
    adapter = session.get_adapter(url)
    if type(adapter) is not _adapter_type():
        return None
    settings = session.merge_environment_settings(url, {}, True, None, None)
    if settings["proxies"]:
        return None
    return DirectRoute(adapter, settings["verify"], settings["cert"])


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
