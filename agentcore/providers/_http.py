"""HTTP for providers: requests with retries, SSE streaming, abort at every phase, redaction.

`open_stream` sends the request, retrying what `_retry` says may be retried (in sleeps that an
abort cuts short) but never once the body has started. With a signal, an abort returns at once
in any phase (resolving, connecting, waiting for headers). Sessions from `new_http_session` hand
every socket a request opens or reuses to the request's `SocketWatch` before it connects, so the
abort shuts that socket down: through them (without a proxy) the request is opened on the
calling thread, with no thread started unless a host name must be looked up for a new
connection. Through any other session, the request is sent and its headers awaited on a
short-lived daemon thread (`Opener`) that the abort abandons. `iter_events` reads the body as
Server-Sent Events; an abort shuts the socket down from the aborting thread, so a blocked read
returns at once instead of draining the response.
`finish_body` ends a reply its handler stopped reading, so that its connection can be reused.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import re
import socket
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .._core import ABORTED_TEXT, DEFAULT_MAX_EVENT_BYTES, AbortSignal
from . import _ratelimit
from ._opener import (
    Opener,
    RequestAborted,
    SocketWatch,
    direct_route,
    lean_post,
    new_http_session,
    shut,
    watched,
)
from ._retry import RetryPolicy, RetryRefusal, server_delay

# Looked up here at call time, so that tests can make the waits instant (conftest `backoffs`).
from ._retry import backoff as _backoff
from ._sse import EventTooLargeError, SSEDecoder, SseItem, UnframedLines

if TYPE_CHECKING:
    import requests

__all__ = [
    "HttpError",
    "HttpRequest",
    "RequestAborted",
    "finish_body",
    "iter_events",
    "new_http_session",
    "open_stream",
    "redact",
]

_log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 10.0
DEFAULT_READ_TIMEOUT_S = 600.0
_BODY_LIMIT = 64 * 1024
_READ_SIZE = 64 * 1024
_DRAIN_S = 0.1  # how long the rest of a body may take to arrive, after the handler stopped
_DRAIN_ITEMS = 8  # and how many more items it may hold, before the connection is closed instead
_CONNECT_ERRNOS = {errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.ETIMEDOUT}


class HttpError(Exception):
    """A failure before any output: a status error, a connection error or a refused retry.

    `status` is None for connection errors; `body` is the response text (API keys removed);
    `refusal` is set when the server asked for a longer retry delay than allowed, and the
    message then starts with its text.
    """

    def __init__(self, message: str, status: int | None = None, body: str = "",
                 headers: Mapping[str, str] | None = None, *,
                 refusal: RetryRefusal | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.headers = dict(headers or {})
        self.refusal = refusal


@attrs.frozen
class HttpRequest:
    """One POST of a JSON body that answers with an event stream, sent through `session`."""

    url: str
    body: bytes
    headers: dict[str, str] = attrs.field(repr=False)
    signal: AbortSignal | None = None
    timeout: float | None = None
    max_retries: int | None = None
    max_retry_delay_ms: int | None = None
    on_response: Callable[[int, Mapping[str, str]], None] | None = None
    secrets: tuple[str, ...] = attrs.field(default=(), repr=False)
    session: requests.Session = attrs.field(kw_only=True, repr=False)

    def pause_key(self) -> _ratelimit.PauseKey:
        """Whose rate limit this request counts against: its origin and credentials (hashed)."""
        return _ratelimit.PauseKey.of(self.url, self.secrets, self.headers)


_KEY_PATTERNS = re.compile(
    r"(sk-ant-[A-Za-z0-9_\-]{6,}|sk-[A-Za-z0-9_\-*]{6,}|AIza[0-9A-Za-z_\-]{10,}"
    r"|gsk_[A-Za-z0-9]{10,}|xai-[A-Za-z0-9]{10,})"
)
_MIN_SECRET = 4
_MIN_BASE64_BYTES = 6  # shorter pieces of a key in base64 would match ordinary words
_PERCENT = re.compile(r"%[0-9A-F]{2}")


def _forms(secret: str) -> set[str]:
    """The ways `secret` can be written into text.

    Raw, stripped, escaped, percent-encoded, and the base64 of it at each of the three
    alignments it can have inside Basic credentials.
    """
    import base64  # only on an error path: kept out of the import of the wire modules
    from urllib.parse import quote, quote_plus

    forms: set[str] = set()
    for raw in {secret, secret.strip()}:
        if len(raw) < _MIN_SECRET:
            continue
        percent = {quote(raw, safe=""), quote(raw), quote_plus(raw)}
        forms |= percent | {_PERCENT.sub(lambda m: m.group().lower(), p) for p in percent}
        forms |= {raw, repr(raw)[1:-1], ascii(raw)[1:-1], json.dumps(raw)[1:-1],
                  json.dumps(raw, ensure_ascii=False)[1:-1]}
        data = raw.encode("utf-8", "surrogatepass")
        for shift in range(3):
            piece = data[shift: shift + (len(data) - shift) // 3 * 3]
            if len(piece) >= _MIN_BASE64_BYTES:
                forms.add(base64.b64encode(piece).decode("ascii"))
                forms.add(base64.urlsafe_b64encode(piece).decode("ascii"))
    return {form for form in forms if len(form) >= _MIN_SECRET}


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """Remove API keys from `text`: the given secrets in any encoding, and known key shapes.

    Every secret of at least four characters is replaced by `***` wherever it appears raw,
    without surrounding whitespace, repr-, ascii- or JSON-escaped, percent-encoded (either case
    of hex digit) or base64-encoded as inside HTTP Basic credentials (`user:key`).
    """
    forms: set[str] = set()
    for secret in secrets:
        if secret:
            forms |= _forms(secret)
    if forms:
        pattern = "|".join(re.escape(form) for form in sorted(forms, key=len, reverse=True))
        text = re.sub(pattern, "***", text)
    return _KEY_PATTERNS.sub(lambda m: m.group()[:3] + "***", text)


def _sleep(seconds: float, signal: AbortSignal | None) -> None:
    if signal is None:
        time.sleep(seconds)
    elif signal.wait(seconds):
        raise RequestAborted(ABORTED_TEXT)


def _read_body(response: Any, signal: AbortSignal | None) -> str:
    """Up to `_BODY_LIMIT` bytes of an error body; an abort cuts the read short."""
    remove = signal.add_listener(_shutdown(response)) if signal is not None else None
    try:
        raw = response.raw.read(_BODY_LIMIT, decode_content=True) or b""
    except Exception:
        raw = b""
    finally:
        if remove is not None:
            remove()
        response.close()
    if signal is not None and signal.aborted:
        raise RequestAborted(ABORTED_TEXT)
    return raw.decode("utf-8", errors="replace")


def open_stream(request: HttpRequest) -> Any:
    """Send `request` and return the open 2xx `requests.Response`, retrying what may be retried.

    Rate limits are shared (`_ratelimit`): every attempt first waits out a pause that an answer
    to any run with the same origin and credentials set, and a 429 or other retryable answer
    naming a delay sets one, whether this request retries or not. A pause longer than the
    request's `max_retry_delay_ms` is not waited for: the request fails at once with the
    refusal it would have got from that answer itself. Raises `RequestAborted` or `HttpError`.
    """
    import requests

    signal = request.signal
    policy = RetryPolicy.of(request.max_retries, request.max_retry_delay_ms)
    read_timeout = request.timeout or DEFAULT_READ_TIMEOUT_S
    timeouts = (min(CONNECT_TIMEOUT_S, read_timeout), read_timeout)
    key: _ratelimit.PauseKey | None = None  # made when first needed: most requests never need it
    attempt = 0
    while True:
        if signal is not None and signal.aborted:
            raise RequestAborted(ABORTED_TEXT)
        if _ratelimit.paused():
            key = key or request.pause_key()
            refused = _ratelimit.wait(key, signal, policy)
            if refused is not None:
                raise HttpError(refused.refusal.text, refused.status, refusal=refused.refusal)
        try:
            response = _post(request, timeouts)
        except (requests.ConnectionError, requests.Timeout) as exc:
            if signal is not None and signal.aborted:
                raise RequestAborted(ABORTED_TEXT) from None
            timed_out = isinstance(exc, requests.Timeout)
            if attempt < policy.max_retries:
                _log.debug("retrying %s after %s", redact(request.url, request.secrets),
                           type(exc).__name__)
                _sleep(policy.capped(_backoff(attempt)), signal)
                attempt += 1
                continue
            if timed_out and not isinstance(exc, requests.ConnectTimeout):
                raise HttpError("Request timed out.") from None
            raise HttpError(_unreachable(request, exc, timeouts[0])) from None
        headers = dict(response.headers)
        if request.on_response is not None:
            try:
                request.on_response(response.status_code, headers)
            except BaseException:
                response.close()
                raise
        if 200 <= response.status_code < 300:
            return response
        body = redact(_read_body(response, signal), request.secrets)
        status = response.status_code
        asked = server_delay(headers)
        if asked and _ratelimit.shares(status, headers):
            key = key or request.pause_key()
            _ratelimit.pause(key, asked, status)
        if policy.retries_status(attempt, status, headers):
            refusal = policy.refusal(asked)
            if refusal is not None:
                raise HttpError(f"{refusal.text} {body}".rstrip(), status, body, headers,
                                refusal=refusal)
            if asked is None:  # else the pause just set makes the next attempt wait `asked`
                _sleep(policy.capped(_backoff(attempt)), signal)
            attempt += 1
            continue
        raise HttpError(f"{status} {body}".rstrip(), status, body, headers)


def _unreachable(request: HttpRequest, exc: BaseException, connect_timeout: float) -> str:
    """`"cannot connect to URL (cause)"`, or `"request to URL failed (cause)"` once connected.

    The URL is shown without credentials, query or fragment (where keys may sit), and redacted;
    the cause is the first OS error in the exception's chain, in words.
    """
    from urllib.parse import urlsplit, urlunsplit

    import requests

    parts = urlsplit(request.url)
    netloc = parts.netloc.rpartition("@")[2]
    url = redact(urlunsplit((parts.scheme, netloc, parts.path, "", "")), request.secrets)
    if isinstance(exc, requests.ConnectTimeout):
        return f"cannot connect to {url} (no answer within {connect_timeout:g} s)"
    todo: list[BaseException] = [exc]
    seen: set[int] = set()
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
    cause = str(error) if error is not exc and "<" not in str(error) else ""
    return f"request to {url} failed ({_lower_first(cause) or type(exc).__name__})"


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _post(request: HttpRequest, timeouts: tuple[float, float]) -> Any:
    """POST `request` and return the response once its headers are in.

    Without a signal this happens on the calling thread. With one, an abort returns at once
    whatever the request is blocked in, and raises `RequestAborted`: through a session of
    `new_http_session` without a proxy, on the calling thread, the abort shutting the socket
    down (a host name is looked up on a thread of its own, only for a new connection); through
    any other session, on an `Opener` thread that the abort abandons.
    """
    route = direct_route(request.session, request.url)

    def send() -> Any:
        if route is not None:
            response = lean_post(request.session, route, request.url, request.body,
                                 request.headers, timeouts)
            if response is not None:
                return response
        return request.session.post(request.url, data=request.body, headers=request.headers,
                                    stream=True, timeout=timeouts)

    if request.signal is None:
        return send()
    if route is not None:  # the abort can cut it here: no thread
        watch = SocketWatch()
        remove = request.signal.add_listener(watch.cut)
        try:
            with watched(watch):
                return send()
        except Exception:
            if request.signal.aborted:
                raise RequestAborted(ABORTED_TEXT) from None
            raise
        finally:
            remove()
    opener = Opener(send)
    opener.start()
    remove = request.signal.add_listener(opener.abandon)
    try:
        opener.finished.wait()
    finally:
        remove()
    return opener.outcome()


def _socket_of(response: Any) -> socket.socket | None:
    """The socket under `response`, found through urllib3 and http.client private attributes.

    requests offers no way to interrupt a blocked read from another thread; shutting the
    socket down does. These attribute paths hold for urllib3 2.x; if they change, abort falls
    back to closing the response (which a blocked read may not notice until data arrives).
    """
    try:
        connection = getattr(response.raw, "_connection", None)
        sock = getattr(connection, "sock", None)
        if sock is None:  # fall back to the socket under http.client's response
            sock = response.raw._fp.fp.raw._sock
    except AttributeError:
        return None
    return sock  # type: ignore[no-any-return]


def _shutdown(response: Any) -> Callable[[], None]:
    """A function that cuts `response` off from any thread, waking a blocked read."""

    def cut() -> None:
        sock = _socket_of(response)
        if sock is not None:
            shut(sock)
        with contextlib.suppress(Exception):  # races the reading thread, which fails either way
            response.close()

    return cut


def finish_body(events: Iterator[SseItem], response: Any) -> None:
    """End a reply whose handler stopped reading `events` (from `iter_events(response, ...)`).

    What is left of the body is read if it comes at once (OpenAI's terminating chunk after
    `[DONE]`): a body read to its end gives its connection back to the session's pool, so the
    next request reuses it. A body with more to say, or slow to end, is closed instead, and so
    is its connection. Never raises.
    """
    deadline = time.monotonic() + _DRAIN_S
    sock = _socket_of(response)
    try:
        for _ in range(_DRAIN_ITEMS):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if sock is not None:
                sock.settimeout(left)  # urllib3 sets it afresh for the connection's next request
            next(events)
    except (StopIteration, HttpError, RequestAborted, OSError):
        pass
    finally:
        if isinstance(events, Generator):
            events.close()
        with contextlib.suppress(Exception):
            response.close()


def _body_chunks(raw: Any) -> Iterator[bytes]:
    """The body's bytes as they arrive, at most `_READ_SIZE` at a time.

    Whole HTTP chunks when the body is chunked (urllib3's chunked reader costs a third of its
    generic `read1` per call), larger ones in pieces (a server's one huge chunk must not be
    read whole before the decoder can refuse it), else whatever one read gives.
    """
    if getattr(raw, "chunked", False) and raw.supports_chunked_reads():
        yield from raw.read_chunked(_READ_SIZE, decode_content=True)
        return
    while chunk := raw.read1(_READ_SIZE, decode_content=True):
        yield chunk


def iter_events(response: Any, signal: AbortSignal | None,
                max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
                seen: list[SseItem | None] | None = None) -> Iterator[SseItem]:
    """Yield the body's events as they arrive; raises `RequestAborted` or `HttpError`.

    Lines that were no SSE field come last, as one `UnframedLines`. An event (or a line) over
    `max_event_bytes` ends the body with an `HttpError` naming the limit. `seen[0]` holds the
    last event of the latest read, for error messages (kept per read, not per event: a
    generator layer per event would cost more than the whole hot path's margin).
    """
    import requests
    import urllib3

    remove = signal.add_listener(_shutdown(response)) if signal is not None else None
    decoder = SSEDecoder(max_event_bytes)
    chunks = _body_chunks(response.raw)
    try:
        while True:
            try:
                chunk = next(chunks, b"")
            except (OSError, ValueError, AttributeError, requests.RequestException,
                    urllib3.exceptions.HTTPError) as exc:
                if signal is not None and signal.aborted:
                    raise RequestAborted(ABORTED_TEXT) from None
                timed_out = isinstance(exc, (TimeoutError, urllib3.exceptions.ReadTimeoutError))
                message = "Request timed out." if timed_out else "Connection error."
                raise HttpError(message) from None
            if signal is not None and signal.aborted:
                raise RequestAborted(ABORTED_TEXT)
            if not chunk:
                break
            events = decoder.feed(chunk)
            if events:
                if seen is not None:
                    seen[0] = events[-1]
                yield from events
        yield from decoder.close()
        if decoder.unframed:  # e.g. Gemini's raw JSON error body after the last event
            yield UnframedLines("\n".join(decoder.unframed))
    except EventTooLargeError as exc:
        raise HttpError(str(exc)) from None
    finally:
        if remove is not None:
            remove()
        response.close()
