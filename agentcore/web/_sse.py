"""The Server-Sent Events response of one run, whatever its protocol (AG-UI, the AI SDK's).

The run goes on the agent's own background thread as always; the response only reads its
events (`async for`, never blocking the event loop), translates and sends them. A client that
goes away is noticed by a task waiting on the connection, which aborts the run at once; the
response then waits for the run to end, so the agent is idle (and its session holds the
aborted reply) before the next request on that thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

from starlette.responses import Response

from .._agent import AgentRun
from .._core import AgentEvent

__all__ = ["HEARTBEAT_SECONDS", "EventStream", "Translating"]

_log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 15.0
"""An SSE comment goes out this often while a run streams, so proxies keep the stream open."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
E = TypeVar("E")
E_co = TypeVar("E_co", covariant=True)


class Translating(Protocol[E_co]):
    """What `EventStream` needs of a protocol's translator (AG-UI's, the AI SDK's)."""

    def start(self) -> Sequence[E_co]: ...

    def feed(self, event: AgentEvent) -> Sequence[E_co]: ...

    def finish(self, run: AgentRun) -> Sequence[E_co]: ...

    def error(self, message: str) -> Sequence[E_co]: ...



def _ag_ui_json(event: Any) -> bytes:
    """An AG-UI event's wire JSON (typed `Any`, to be `EventStream`'s default for any `E`)."""
    text: str = event.model_dump_json(by_alias=True)
    return text.encode()


class EventStream(Response, Generic[E]):
    """The SSE response of one run: its events, aborting the run if the client leaves.

    Two tasks share the work: this one reads the run and translates its events into a
    buffer, a writer sends whatever the buffer holds whenever the reader waits for news. The
    events a run produced while the event loop was busy elsewhere (under load, many at a time)
    thus go out in one write, not one write each. AG-UI's by default; another protocol gives
    its translator, how one of its events is encoded as JSON, its headers, and what ends the
    stream after the last event (`trailer`; not sent to a client that left).
    """

    def __init__(self, run: AgentRun, translator: Translating[E], *,
                 encode: Callable[[E], bytes] = _ag_ui_json,
                 headers: Mapping[str, str] | None = None, trailer: bytes = b"") -> None:
        super().__init__(media_type="text/event-stream", headers=headers or {
            "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        self.raw_headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]
        self.run = run
        self.translator = translator
        self._encode = encode
        self._trailer = trailer
        self.gone = False  # the client left (or a write failed): nothing more is sent
        self._buffer = bytearray()
        self._ready = asyncio.Event()  # the buffer has something, or the stream is over
        self._over = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code,
                    "headers": self.raw_headers})
        writer = asyncio.create_task(self._writer(send))
        watcher = asyncio.create_task(self._watch(receive))
        heartbeat = asyncio.create_task(self._heartbeat())
        try:
            self._put(self.translator.start())
            async for event in self.run:
                if self.gone:
                    break
                out = self.translator.feed(event)
                if out:
                    self._put(out)
            if not self.gone:
                self._put(self.translator.finish(self.run))
        except Exception as exc:  # a translation that failed: say so, end the stream
            _log.exception("streaming the run failed")
            with contextlib.suppress(Exception):
                self._put(self.translator.error(f"streaming failed: {exc}"))
        finally:
            heartbeat.cancel()
            watcher.cancel()
            if self._trailer and not self.gone:
                self._buffer += self._trailer
            self._over = True
            self._ready.set()
            with contextlib.suppress(Exception):
                await writer  # the last events go out before the body ends
            if self.gone or not self.run.done():
                self.run.abort()
            with contextlib.suppress(asyncio.CancelledError):
                await self.run.wait_async()  # the agent is idle before the next request
        if not self.gone:
            with contextlib.suppress(Exception):
                await send({"type": "http.response.body", "body": b"", "more_body": False})

    def _put(self, events: Sequence[E]) -> None:
        for event in events:
            self._buffer += b"data: " + self._encode(event) + b"\n\n"
        self._ready.set()

    async def _writer(self, send: Send) -> None:
        """Send what the buffer holds each time it fills, until the stream is over."""
        while True:
            await self._ready.wait()
            self._ready.clear()
            if self._buffer and not self.gone:
                body = bytes(self._buffer)
                self._buffer.clear()
                try:
                    await send({"type": "http.response.body", "body": body, "more_body": True})
                except Exception:  # the client is gone: the reader stops at its next event
                    self._gone()
            if self._over and (not self._buffer or self.gone):
                return

    async def _watch(self, receive: Receive) -> None:
        """Wait for the client to disconnect; then abort the run (the reader sees it)."""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self._gone()
                return

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            if not self._buffer:
                self._buffer += b": heartbeat\n\n"
                self._ready.set()

    def _gone(self) -> None:
        self.gone = True
        self._buffer.clear()
        self.run.abort()
