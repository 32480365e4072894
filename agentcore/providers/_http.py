"""HTTP for providers: one `requests.Session` per thread, retries, SSE streaming, abort.

`open_stream` sends the request, retrying what `_retry` says may be retried (in sleeps that an
abort cuts short) but never once the body has started. `iter_events` reads the body as
Server-Sent Events; an abort shuts the socket down from the aborting thread, so a blocked read
returns at once instead of draining the response.
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from .._core import ABORTED_TEXT, AbortSignal
from ._retry import RetryPolicy, RetryRefusal, server_delay

# Looked up here at call time, so that tests can make the waits instant (conftest `backoffs`).
from ._retry import backoff as _backoff
from ._sse import SSEDecoder, SseItem, UnframedLines

__all__ = [
    "HttpError",
    "HttpRequest",
    "RequestAborted",
    "iter_events",
    "open_stream",
    "redact",
]

_log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 10.0
DEFAULT_READ_TIMEOUT_S = 600.0
_BODY_LIMIT = 64 * 1024
_READ_SIZE = 64 * 1024


class RequestAborted(Exception):
    """The request was aborted through its signal."""


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
    """One POST of a JSON body that answers with an event stream."""

    url: str
    body: bytes
    headers: dict[str, str] = attrs.field(repr=False)
    signal: AbortSignal | None = None
    timeout: float | None = None
    max_retries: int | None = None
    max_retry_delay_ms: int | None = None
    on_response: Callable[[int, Mapping[str, str]], None] | None = None
    secrets: tuple[str, ...] = attrs.field(default=(), repr=False)


_local = threading.local()


def _session() -> Any:
    """This thread's `requests.Session` (created on first use; requests is imported lazily)."""
    session = getattr(_local, "session", None)
    if session is None:
        import requests

        session = _local.session = requests.Session()
    return session


_KEY_PATTERNS = re.compile(
    r"(sk-ant-[A-Za-z0-9_\-]{6,}|sk-[A-Za-z0-9_\-*]{6,}|AIza[0-9A-Za-z_\-]{10,}"
    r"|gsk_[A-Za-z0-9]{10,}|xai-[A-Za-z0-9]{10,})"
)


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """Remove API keys from `text`: the given secrets and anything shaped like a known key."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return _KEY_PATTERNS.sub(lambda m: m.group()[:3] + "***", text)


def _sleep(seconds: float, signal: AbortSignal | None) -> None:
    if signal is None:
        time.sleep(seconds)
    elif signal.wait(seconds):
        raise RequestAborted(ABORTED_TEXT)


def _read_body(response: Any) -> str:
    try:
        raw = response.raw.read(_BODY_LIMIT, decode_content=True) or b""
    except Exception:
        raw = b""
    finally:
        response.close()
    return raw.decode("utf-8", errors="replace")


def open_stream(request: HttpRequest) -> Any:
    """Send `request` and return the open 2xx `requests.Response`, retrying what may be retried.

    Raises `RequestAborted` or `HttpError`.
    """
    import requests

    signal = request.signal
    policy = RetryPolicy.of(request.max_retries, request.max_retry_delay_ms)
    read_timeout = request.timeout or DEFAULT_READ_TIMEOUT_S
    attempt = 0
    while True:
        if signal is not None and signal.aborted:
            raise RequestAborted(ABORTED_TEXT)
        try:
            response = _session().post(
                request.url, data=request.body, headers=request.headers, stream=True,
                timeout=(min(CONNECT_TIMEOUT_S, read_timeout), read_timeout),
            )
        except (requests.ConnectionError, requests.Timeout) as exc:
            if signal is not None and signal.aborted:
                raise RequestAborted(ABORTED_TEXT) from None
            timed_out = isinstance(exc, requests.Timeout)
            if attempt < policy.max_retries:
                _log.debug("retrying %s after %s", request.url, type(exc).__name__)
                _sleep(_backoff(attempt), signal)
                attempt += 1
                continue
            raise HttpError("Request timed out." if timed_out else "Connection error.") from None
        headers = dict(response.headers)
        if request.on_response is not None:
            request.on_response(response.status_code, headers)
        if 200 <= response.status_code < 300:
            return response
        body = redact(_read_body(response), request.secrets)
        status = response.status_code
        if policy.retries_status(attempt, status, headers):
            asked = server_delay(headers)
            refusal = policy.refusal(asked)
            if refusal is not None:
                raise HttpError(f"{refusal.text} {body}".rstrip(), status, body, headers,
                                refusal=refusal)
            _sleep(asked if asked is not None else _backoff(attempt), signal)
            attempt += 1
            continue
        raise HttpError(f"{status} {body}".rstrip(), status, body, headers)


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
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(Exception):  # races the reading thread, which fails either way
            response.close()

    return cut


def _body_chunks(raw: Any) -> Iterator[bytes]:
    """The body's bytes as they arrive.

    Whole HTTP chunks when the body is chunked (urllib3's chunked reader costs a third of its
    generic `read1` per call), else whatever one read gives.
    """
    if getattr(raw, "chunked", False) and raw.supports_chunked_reads():
        yield from raw.read_chunked(None, decode_content=True)
        return
    while chunk := raw.read1(_READ_SIZE, decode_content=True):
        yield chunk


def iter_events(response: Any, signal: AbortSignal | None) -> Iterator[SseItem]:
    """Yield the body's events as they arrive; raises `RequestAborted` or `HttpError`.

    Lines that were no SSE field come last, as one `UnframedLines`.
    """
    import requests
    import urllib3

    remove = signal.add_listener(_shutdown(response)) if signal is not None else None
    decoder = SSEDecoder()
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
            yield from decoder.feed(chunk)
        yield from decoder.close()
        if decoder.unframed:  # e.g. Gemini's raw JSON error body after the last event
            yield UnframedLines("\n".join(decoder.unframed))
    finally:
        if remove is not None:
            remove()
        response.close()
