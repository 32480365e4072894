"""Reading a reply's body: its items as they arrive, and the end of a body left unread.

`iter_events` reads the body with the wire API's decoder (Server-Sent Events by default); an
abort cuts the reply off from the aborting thread, so a blocked read returns at once instead of
draining the response. `finish_body` ends a reply its handler stopped reading, so that its
connection can be reused. A body that fails in any other way than a `ReadError` is a bug in
the transport: a `TransportBug` carries it up, to be reported as one.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Generator, Iterator
from typing import Any

from ..._core import ABORTED_TEXT, DEFAULT_MAX_EVENT_BYTES, AbortSignal
from ..._http import HttpError, ReadError, RequestAborted, Response, TransportBug
from ._framing import Decode, FramingError
from ._sse import decode_sse

__all__ = ["finish_body", "iter_events"]

_DRAIN_S = 0.1  # how long the rest of a body may take to arrive, after the handler stopped
_DRAIN_ITEMS = 8  # and how many more items it may hold, before the connection is closed instead


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
            except Exception as exc:
                if signal is not None and signal.aborted:
                    raise RequestAborted(ABORTED_TEXT) from None
                raise TransportBug(f"{type(exc).__name__}: {exc}") from exc
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
