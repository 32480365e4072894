"""Sockets an abort can shut down, and threads it can abandon: how a transport obeys an abort.

A transport that creates its own sockets hands each one a request opens or reuses to that
request's `SocketWatch` (the one `watched` names for the opening thread), so an abort shuts the
socket down: a connect or a wait for headers ends at once, and the server sees the close. A
host name is looked up on a short-lived thread that the abort stops waiting for (`resolve`).
A transport that cannot watch its sockets (a caller's `requests.Session`) runs the opening on
an `Opener` thread instead, which the abort abandons.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

from .._core import ABORTED_TEXT
from ._transport import RequestAborted

__all__ = [
    "Opener",
    "SocketWatch",
    "current_watch",
    "open_abandonably",
    "resolve",
    "shut",
    "watched",
]


class SocketWatch:
    """The sockets one request opens or reuses, so that an abort can shut them down.

    Thread-safe. A socket added after `cut()` is shut down at once (the abort came first), and
    `cut()` sets every `threading.Event` handed to `wake_on_cut`, then and later.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._cut = False
        self._wakers: list[threading.Event] = []

    def add(self, sock: socket.socket) -> None:
        """Watch `sock` (shut it down at once when the watch is cut already)."""
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
        """Shut every watched socket down and set every waker."""
        with self._lock:
            self._cut = True
            sockets, self._sockets = self._sockets, []
            wakers = self._wakers
        for waker in wakers:
            waker.set()
        for sock in sockets:
            shut(sock)


def shut(sock: socket.socket) -> None:
    """Shut `sock` down both ways: a blocked connect, send or receive on it returns at once."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


_watching = threading.local()
"""Per thread: the `SocketWatch` of the request the thread is opening (`watched`), if any."""


@contextlib.contextmanager
def watched(watch: SocketWatch) -> Iterator[None]:
    """While inside, the sockets this thread opens or reuses for a request report to `watch`."""
    previous = getattr(_watching, "watch", None)
    _watching.watch = watch
    try:
        yield
    finally:
        _watching.watch = previous


def current_watch() -> SocketWatch | None:
    """The watch of the request this thread is opening, if any."""
    return getattr(_watching, "watch", None)


def resolve(host: str, port: int, family: int, watch: SocketWatch) -> list[Any]:
    """`socket.getaddrinfo` for a connection, which an abort (`watch.cut()`) stops waiting for.

    An IP address needs no lookup and is resolved here; a name is looked up on a short-lived
    daemon thread (a lookup cannot be interrupted), abandoned when the watch is cut: then
    `OSError(ECANCELED)`.
    """
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


class Opener(threading.Thread):
    """Runs one opening (connect, send, wait for headers) off the calling thread.

    The caller waits on `finished`, which `abandon()` (the abort) sets as well; `outcome()` then
    gives the response or raises what `send()` raised, or `RequestAborted`. An abandoned opener
    closes the response it may still get; it is a daemon, so an abandoned connect never keeps
    the process alive.
    """

    def __init__(self, send: Callable[[], Any]) -> None:
        super().__init__(name="agentcore-http-open", daemon=True)
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
            self._send = _nothing  # drop the request as soon as possible
            self.finished.set()

    def abandon(self) -> None:
        """Give up on the opening (from the aborting thread) and wake the caller."""
        with self._lock:
            self._abandoned = True
            response, self._response = self._response, None
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


def open_abandonably(send: Callable[[], Any], signal: Any) -> Any:
    """`send()` on an `Opener` thread that an abort of `signal` abandons; its outcome."""
    opener = Opener(send)
    opener.start()
    remove = signal.add_listener(opener.abandon)
    try:
        opener.finished.wait()
    finally:
        remove()
    return opener.outcome()


def _nothing() -> None:
    return None
