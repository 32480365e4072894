"""HTTP for providers: the request policy (retries, rate limits, error text, redaction).

`open_stream` sends a request through its session's transport (`_transport`), retrying what
`_retry` says may be retried (in sleeps that an abort cuts short) but never once the body has
started, and signing each attempt anew when the wire API signs. A wire API whose 2xx bodies
may open with an error (AWS event streams report throttling there) reads that start first
(`HttpRequest.opening`): such an error is retried like the HTTP answer it stands for. With a
signal, an abort returns at once in any phase. `iter_events` reads the body with the wire API's
decoder (Server-Sent Events by default); an abort cuts the reply off from the aborting thread,
so a blocked read returns at once instead of draining the response. `finish_body` ends a reply
its handler stopped reading, so that its connection can be reused.
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

from .._core import ABORTED_TEXT, DEFAULT_MAX_EVENT_BYTES, AbortSignal, is_credential_header
from . import _ratelimit
from ._framing import Decode, FramingError
from ._opener import RequestAborted
from ._retry import RetryPolicy, RetryRefusal, invalid_request, server_delay

# Looked up here at call time, so that tests can make the waits instant (conftest `backoffs`).
from ._retry import backoff as _backoff
from ._sse import decode_sse
from ._transport import Outgoing, ReadError, Replayed, Response, transport_of

if TYPE_CHECKING:
    import requests

__all__ = [
    "HttpError",
    "HttpRequest",
    "Opening",
    "RequestAborted",
    "StreamedError",
    "finish_body",
    "iter_events",
    "open_stream",
    "redact",
]

_log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 10.0
DEFAULT_READ_TIMEOUT_S = 600.0
_BODY_LIMIT = 64 * 1024
_DRAIN_S = 0.1  # how long the rest of a body may take to arrive, after the handler stopped
_DRAIN_ITEMS = 8  # and how many more items it may hold, before the connection is closed instead
_CONNECT_ERRNOS = {errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.ETIMEDOUT}


class HttpError(Exception):
    """A failure before any output: a status error, a connection error or a refused retry.

    `status` is None for connection errors; `body` is the response text (API keys removed);
    `refusal` is set when the server asked for a longer retry delay than allowed, and the
    message then starts with its text; `invalid` is the gist of a server error whose body says
    the request itself was invalid (`_retry.invalid_request`), which is never retried.
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
    """One POST of a JSON body that answers with a stream, sent through `session`.

    `sign`, when given, sees each attempt as it will be sent (`Outgoing`: URL, headers, the
    exact body bytes) and returns it signed, e.g. with headers added. `opening`, when given,
    reads the start of each 2xx body; an error it finds there counts as that error's HTTP
    answer (retried, paused for and reported the same way).
    """

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
    sign: Callable[[Outgoing], Outgoing] | None = attrs.field(default=None, kw_only=True,
                                                              repr=False)
    opening: Opening | None = attrs.field(default=None, kw_only=True, repr=False)

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


def open_stream(request: HttpRequest) -> Response:
    """Send `request` and return its open 2xx `Response`, retrying what may be retried.

    Rate limits are shared (`_ratelimit`): every attempt first waits out a pause that an answer
    to any run with the same origin and credentials set, and a 429 or other retryable answer
    naming a delay sets one, whether this request retries or not. A pause longer than the
    request's `max_retry_delay_ms` is not waited for: the request fails at once with the
    refusal it would have got from that answer itself. Each attempt is signed anew
    (`request.sign`), and credentials the signer adds are redacted from error text too.
    Raises `RequestAborted` or `HttpError`.
    """
    import requests

    signal = request.signal
    session = request.session
    transport = transport_of(session)
    policy = RetryPolicy.of(request.max_retries, request.max_retry_delay_ms)
    read_timeout = request.timeout or DEFAULT_READ_TIMEOUT_S
    timeouts = (min(CONNECT_TIMEOUT_S, read_timeout), read_timeout)
    outgoing = Outgoing(request.url, request.headers, request.body)
    secrets = request.secrets
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
        sent = outgoing
        if request.sign is not None:
            sent = request.sign(outgoing)
            secrets = request.secrets + _added_credentials(outgoing, sent)
        try:
            response = transport.open(session, sent, timeouts, signal)
        except (requests.ConnectionError, requests.Timeout) as exc:
            if signal is not None and signal.aborted:
                raise RequestAborted(ABORTED_TEXT) from None
            timed_out = isinstance(exc, requests.Timeout)
            if attempt < policy.max_retries:
                _log.debug("retrying %s after %s", redact(request.url, secrets),
                           type(exc).__name__)
                _sleep(policy.capped(_backoff(attempt)), signal)
                attempt += 1
                continue
            if timed_out and not isinstance(exc, requests.ConnectTimeout):
                raise HttpError("Request timed out.") from None
            raise HttpError(_unreachable(request.url, secrets, exc, timeouts[0])) from None
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
        body = redact(text, secrets)
        invalid = invalid_request(body) if status >= 500 else None  # parsed once, used thrice
        asked = server_delay(headers)
        if asked and _ratelimit.shares(status, headers, invalid is not None):
            key = key or request.pause_key()
            _ratelimit.pause(key, asked, status)
        if policy.retries_status(attempt, status, headers, invalid is not None):
            refusal = policy.refusal(asked)
            if refusal is not None:
                raise HttpError(f"{refusal.text} {body}".rstrip(), status, body, headers,
                                refusal=refusal)
            if asked is None:  # else the pause just set makes the next attempt wait `asked`
                _sleep(policy.capped(_backoff(attempt)), signal)
            attempt += 1
            continue
        raise HttpError(f"{status} {body}".rstrip(), status, body, headers, invalid=invalid)


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


def _unreachable(url: str, secrets: tuple[str, ...], exc: BaseException,
                 connect_timeout: float) -> str:
    """`"cannot connect to URL (cause)"`, or `"request to URL failed (cause)"` once connected.

    The URL is shown without credentials, query or fragment (where keys may sit), and redacted;
    the cause is the first OS error in the exception's chain, in words.
    """
    from urllib.parse import urlsplit, urlunsplit

    import requests

    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    url = redact(urlunsplit((parts.scheme, netloc, parts.path, "", "")), secrets)
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


def finish_body(items: Iterator[Any], response: Response) -> None:
    """End a reply whose handler stopped reading `items` (from `iter_events(response, ...)`).

    What is left of the body is read if it comes at once (OpenAI's terminating chunk after
    `[DONE]`): a body read to its end gives its connection back to the session's pool, so the
    next request reuses it. A body with more to say, or slow to end, is closed instead, and so
    is its connection. Never raises.
    """
    deadline = time.monotonic() + _DRAIN_S
    try:
        for _ in range(_DRAIN_ITEMS):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            response.set_read_timeout(left)
            next(items)
    except (StopIteration, HttpError, RequestAborted, OSError):
        pass
    finally:
        if isinstance(items, Generator):
            items.close()
        with contextlib.suppress(Exception):
            response.close()


def iter_events(response: Response, signal: AbortSignal | None,
                max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
                seen: list[Any] | None = None, decode: Decode = decode_sse) -> Iterator[Any]:
    """Yield the items `decode` makes of the body as it arrives (by default `SseItem`s).

    Raises `RequestAborted`, or `HttpError` when the connection fails or the decoder refuses
    the body (`FramingError`: an item over `max_event_bytes`, say). `seen[0]` holds the last
    item of the latest read, for error messages (kept per read, not per item: a generator
    layer per item would cost more than the whole hot path's margin).
    """
    remove = signal.add_listener(response.cut) if signal is not None else None
    decoder = decode(max_event_bytes)
    feed = decoder.feed
    chunks = response.chunks()
    try:
        while True:
            try:
                chunk = next(chunks, b"")
            except ReadError as exc:
                if signal is not None and signal.aborted:
                    raise RequestAborted(ABORTED_TEXT) from None
                raise HttpError(str(exc)) from None
            if signal is not None and signal.aborted:
                raise RequestAborted(ABORTED_TEXT)
            if not chunk:
                break
            items = feed(chunk)
            if items:
                if seen is not None:
                    seen[0] = items[-1]
                yield from items
        yield from decoder.end()
    except FramingError as exc:
        raise HttpError(str(exc)) from None
    finally:
        if remove is not None:
            remove()
        response.close()
