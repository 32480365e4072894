"""`HttpClient`: one request through a transport, with the retry and rate-limit policy.

`HttpClient.open` sends an `HttpRequest` through the client's `Transport`, retrying what
`_policy` says may be retried (in sleeps that an abort cuts short) but never once the body has
started, and signing each attempt anew when the request has a signer. A request whose 2xx
bodies may open with an error (AWS event streams report throttling there) reads that start
first (`HttpRequest.opening`): such an error is retried like the HTTP answer it stands for.
With a signal, an abort returns at once in any phase. Errors come out as `HttpError`, with
every secret of the request redacted from their text.

`default_client()` is the client every run shares unless told otherwise: one per process
(made anew in a forked child), whose transport keeps a bounded pool of connections per origin.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import final

import attrs

from .._core import ABORTED_TEXT, AbortSignal, is_credential_header
from . import _policy
from ._invalid import invalid_request
from ._policy import RetryPolicy, RetryRefusal, server_delay

# Looked up here at call time, so that tests can make the waits instant (conftest `backoffs`).
from ._policy import backoff as _backoff
from ._redact import redact
from ._transport import (
    Outgoing,
    ReadError,
    Replayed,
    RequestAborted,
    Response,
    Timeouts,
    Transport,
    TransportBug,
    TransportError,
)

__all__ = [
    "CONNECT_TIMEOUT_S",
    "DEFAULT_READ_TIMEOUT_S",
    "HttpClient",
    "HttpError",
    "HttpRequest",
    "Opening",
    "StreamedError",
    "default_client",
]

_log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 10.0
DEFAULT_READ_TIMEOUT_S = 600.0
_BODY_LIMIT = 64 * 1024
_CONNECT_ERRNOS = {errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.ETIMEDOUT}


class HttpError(Exception):
    """A failure before any output: a status error, a connection error or a refused retry.

    `status` is None for connection errors; `body` is the response text (secrets removed);
    `refusal` is set when the server asked for a longer retry delay than allowed, and the
    message then starts with its text; `invalid` is the gist of a server error whose body says
    the request itself was invalid (`_invalid.invalid_request`), which is never retried.
    """

    def __init__(self, message: str, status: int | None = None, body: str = "",
                 headers: Mapping[str, str] | None = None, *,
                 refusal: RetryRefusal | None = None, invalid: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.headers = dict(headers or {})
        self.refusal = refusal
        self.invalid = invalid


@attrs.frozen
class StreamedError:
    """An error that a 2xx body opens with, as the HTTP answer it stands for.

    AWS event streams report throttling inside a 200 reply; read as a 429 with this `body` and
    these `headers`, it is retried, paused for and worded like one.
    """

    status: int
    body: str
    headers: Mapping[str, str] = attrs.Factory(dict)


Opening = Callable[[Iterator[bytes]], tuple[bytes, "StreamedError | None"]]
"""Reads the start of a 2xx body from its chunks: returns the bytes read (the reply's handler
reads them again) and the `StreamedError` the body opens with, if any."""


@attrs.frozen
class HttpRequest:
    """One POST of `body` that answers with a stream.

    `sign`, when given, sees each attempt as it will be sent (`Outgoing`: URL, headers, the
    exact body bytes) and returns it signed, e.g. with headers added. `opening`, when given,
    reads the start of each 2xx body; an error it finds there counts as that error's HTTP
    answer (retried, paused for and reported the same way). `secrets` are redacted from every
    error's text; `on_response(status, headers)` sees each answer's head.
    """

    url: str
    body: bytes = attrs.field(repr=False)
    headers: Mapping[str, str] = attrs.field(repr=False)
    signal: AbortSignal | None = None
    timeout: float | None = None
    max_retries: int | None = None
    max_retry_delay_ms: int | None = None
    on_response: Callable[[int, Mapping[str, str]], None] | None = None
    secrets: tuple[str, ...] = attrs.field(default=(), repr=False)
    sign: Callable[[Outgoing], Outgoing] | None = attrs.field(default=None, kw_only=True,
                                                              repr=False)
    opening: Opening | None = attrs.field(default=None, kw_only=True, repr=False)

    def pause_key(self) -> _policy.PauseKey:
        """Whose rate limit this request counts against: its origin and credentials (hashed)."""
        return _policy.PauseKey.of(self.url, self.secrets, self.headers)


@final
class HttpClient:
    """Sends requests through one `Transport` with agentcore's retry and rate-limit policy.

    Thread-safe: any number of runs share one client, and its transport's connection pools.
    Without a transport, a `Urllib3Transport` of its own. `close()` closes the transport's
    connections; the client may still be used after it (new connections are opened).
    `with HttpClient(...) as client:` closes on exit.
    """

    __slots__ = ("_transport",)

    def __init__(self, transport: Transport | None = None) -> None:
        if transport is None:
            from ._urllib3 import Urllib3Transport

            transport = Urllib3Transport()
        elif not callable(getattr(transport, "open", None)) or \
                not callable(getattr(transport, "close", None)):
            raise TypeError("'transport' must be a Transport (with open() and close()), "
                            f"got {type(transport).__name__}")
        self._transport = transport

    @property
    def transport(self) -> Transport:
        """The transport every attempt goes through."""
        return self._transport

    def __repr__(self) -> str:
        return f"HttpClient({self._transport!r})"

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the transport's connections."""
        self._transport.close()

    def open(self, request: HttpRequest) -> Response:
        """Send `request` and return its open 2xx `Response`, retrying what may be retried.

        Every attempt first waits out a rate-limit pause set by an answer to any run with the
        same origin and credentials; a 429 or other retryable answer naming a delay sets one,
        whether this request retries or not. A pause longer than the request's
        `max_retry_delay_ms` is not waited for: the request fails at once with the refusal it
        would have got from that answer itself. Each attempt is signed anew (`request.sign`),
        and credentials the signer adds are redacted from error text too. Raises
        `RequestAborted` or `HttpError`; anything else the transport raises is a bug, raised as
        a `TransportBug` naming it.
        """
        signal = request.signal
        transport = self._transport
        policy = RetryPolicy.of(request.max_retries, request.max_retry_delay_ms)
        read_timeout = request.timeout or DEFAULT_READ_TIMEOUT_S
        timeouts: Timeouts = (min(CONNECT_TIMEOUT_S, read_timeout), read_timeout)
        outgoing = Outgoing(request.url, request.headers, request.body)
        secrets = request.secrets
        key: _policy.PauseKey | None = None  # made when first needed: most requests never do
        attempt = 0
        while True:
            if signal is not None and signal.aborted:
                raise RequestAborted(ABORTED_TEXT)
            if _policy.paused():
                key = key or request.pause_key()
                refused = _policy.wait(key, signal, policy)
                if refused is not None:
                    raise HttpError(refused.refusal.text, refused.status,
                                    refusal=refused.refusal)
            sent = outgoing
            if request.sign is not None:
                sent = request.sign(outgoing)
                secrets = request.secrets + _added_credentials(outgoing, sent)
            try:
                response = transport.open(sent, timeouts, signal)
            except TransportError as exc:
                if signal is not None and signal.aborted:
                    raise RequestAborted(ABORTED_TEXT) from None
                if attempt < policy.max_retries:
                    _log.debug("retrying %s after %s", redact(request.url, secrets),
                               redact(str(exc), secrets))
                    _sleep(policy.capped(_backoff(attempt)), signal)
                    attempt += 1
                    continue
                if exc.timed_out and not exc.connecting:
                    raise HttpError("Request timed out.") from None
                raise HttpError(_unreachable(request.url, secrets, exc, timeouts[0])) from None
            except RequestAborted:
                raise
            except Exception as exc:
                if signal is not None and signal.aborted:
                    raise RequestAborted(ABORTED_TEXT) from None
                raise TransportBug(f"{type(exc).__name__}: {exc}") from exc
            status = response.status
            headers = dict(response.headers)
            if request.on_response is not None:
                try:
                    request.on_response(status, headers)
                except BaseException:
                    response.close()
                    raise
            if 200 <= status < 300:
                if request.opening is None:
                    return response
                opened = _read_opening(response, request.opening, signal)
                if not isinstance(opened, StreamedError):
                    return opened
                status, text = opened.status, opened.body
                headers.update(opened.headers)
            else:
                text = _read_body(response, signal)
            body = redact(_with_redirect(status, headers, text), secrets)
            invalid = invalid_request(body) if status >= 500 else None  # parsed once, used 3x
            asked = server_delay(headers)
            if asked and _policy.shares(status, headers, invalid is not None):
                key = key or request.pause_key()
                _policy.pause(key, asked, status)
            if policy.retries_status(attempt, status, headers, invalid is not None):
                refusal = policy.refusal(asked)
                if refusal is not None:
                    raise HttpError(f"{refusal.text} {body}".rstrip(), status, body, headers,
                                    refusal=refusal)
                if asked is None:  # else the pause just set makes the next attempt wait
                    _sleep(policy.capped(_backoff(attempt)), signal)
                attempt += 1
                continue
            raise HttpError(f"{status} {body}".rstrip(), status, body, headers,
                            invalid=invalid)


def _with_redirect(status: int, headers: Mapping[str, str], text: str) -> str:
    """An answer's text; for a redirect that was not followed, where it pointed first."""
    if 300 <= status < 400:
        location = next((v for k, v in headers.items() if k.lower() == "location"), None)
        if location:
            note = f"redirect to {location} (not followed: point the model's base_url there)"
            return f"{note} {text}".rstrip()
    return text


def _sleep(seconds: float, signal: AbortSignal | None) -> None:
    if signal is None:
        time.sleep(seconds)
    elif signal.wait(seconds):
        raise RequestAborted(ABORTED_TEXT)


def _read_body(response: Response, signal: AbortSignal | None) -> str:
    """Up to `_BODY_LIMIT` bytes of an error body; an abort cuts the read short."""
    remove = signal.add_listener(response.cut) if signal is not None else None
    try:
        raw = response.read(_BODY_LIMIT)
    finally:
        if remove is not None:
            remove()
        response.close()
    if signal is not None and signal.aborted:
        raise RequestAborted(ABORTED_TEXT)
    return raw.decode("utf-8", errors="replace")


def _read_opening(response: Response, opening: Opening,
                  signal: AbortSignal | None) -> Response | StreamedError:
    """What a 2xx body opens with: the error it stands for, or the response to read on.

    The response given back replays the bytes `opening` read; an abort cuts the read short.
    """
    remove = signal.add_listener(response.cut) if signal is not None else None
    chunks = response.chunks()
    try:
        head, error = opening(chunks)
    except ReadError as exc:
        response.close()
        if signal is not None and signal.aborted:
            raise RequestAborted(ABORTED_TEXT) from None
        raise HttpError(str(exc)) from None
    finally:
        if remove is not None:
            remove()
    if error is not None or (signal is not None and signal.aborted):
        response.close()
        if error is None:
            raise RequestAborted(ABORTED_TEXT)
        return error
    return Replayed(response, head, chunks)


_AUTH_PARAM = re.compile(r"=([^,\s]+)")


def _added_credentials(before: Outgoing, after: Outgoing) -> tuple[str, ...]:
    """The values of the credential headers a signer set or changed, to redact like the key.

    `Authorization`, `X-Amz-Security-Token`...: whatever `is_credential_header` names; with
    the value of each `name=value` parameter in them too (SigV4's `Signature=`), which a
    server may quote by itself.
    """
    found: list[str] = []
    for name, value in after.headers.items():
        if is_credential_header(name) and before.headers.get(name) != value:
            found += [value, *_AUTH_PARAM.findall(value)]
    return tuple(found)


def _unreachable(url: str, secrets: tuple[str, ...], exc: TransportError,
                 connect_timeout: float) -> str:
    """`"cannot connect to URL (cause)"`, or `"request to URL failed (cause)"` once connected.

    The URL is shown without credentials, query or fragment (where keys may sit), and redacted;
    the cause is the first OS error in the exception's chain, in words.
    """
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    url = redact(urlunsplit((parts.scheme, netloc, parts.path, "", "")), secrets)
    if exc.timed_out:
        return f"cannot connect to {url} (no answer within {connect_timeout:g} s)"
    todo: list[BaseException] = [exc]
    seen: set[int] = set()
    error: BaseException = exc
    while todo:
        error = todo.pop(0)
        if id(error) in seen:
            continue
        seen.add(id(error))
        if isinstance(error, socket.gaierror):
            return f"cannot connect to {url} (unknown host {parts.hostname!r})"
        if isinstance(error, OSError) and isinstance(error.errno, int) and error.errno > 0:
            cause = _lower_first(error.strerror or str(error))
            if error.errno in _CONNECT_ERRNOS:
                return f"cannot connect to {url} ({cause})"
            return f"request to {url} failed ({cause})"
        linked = [error.__cause__, error.__context__, getattr(error, "reason", None),
                  *error.args]
        todo += [e for e in linked if isinstance(e, BaseException)]
    verb = "cannot connect to" if exc.connecting else "request to"
    tail = "" if exc.connecting else " failed"
    cause = str(error) if error is not exc and "<" not in str(error) else str(exc)
    return f"{verb} {url}{tail} ({redact(_lower_first(cause), secrets) or 'no reason given'})"


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


_DEFAULT_LOCK = threading.Lock()
_DEFAULT: list[tuple[int, HttpClient]] = []
"""The process's shared client and the pid it was made in (a forked child makes its own)."""


def default_client() -> HttpClient:
    """The client runs share when given none: one per process, made on first use.

    Its transport is a `Urllib3Transport` keeping up to `DEFAULT_POOL_SIZE` idle connections
    per origin; any number of requests may be open at once (a connection beyond the pool's
    size is closed when its reply ends). A forked child makes its own: sockets never cross a
    fork.
    """
    pid = os.getpid()
    found = _DEFAULT[0] if _DEFAULT else None
    if found is not None and found[0] == pid:
        return found[1]
    with _DEFAULT_LOCK:
        if _DEFAULT and _DEFAULT[0][0] == pid:
            return _DEFAULT[0][1]
        from ._urllib3 import DEFAULT_POOL_SIZE, Urllib3Transport

        client = HttpClient(Urllib3Transport(pool_size=DEFAULT_POOL_SIZE))
        _DEFAULT[:] = [(pid, client)]
        return client


def _forget_default_in_child() -> None:
    global _DEFAULT_LOCK  # the parent's lock may have been held at the fork
    _DEFAULT_LOCK = threading.Lock()
    _DEFAULT.clear()  # the parent's sockets are not this process's to use


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_default_in_child)
