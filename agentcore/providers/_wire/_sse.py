"""Server-Sent Events, parsed from bytes.

Lines may end in LF, CRLF or CR (a CR at the end of one read and an LF at the start of the next
are one line end); a multi-byte UTF-8 character may be split across reads, since only whole
lines are decoded. Comments (`:` lines) are skipped, `data:` lines are joined with newlines and
one space after the colon is dropped, as the SSE specification says. Lines that are no field
at all (a server's raw JSON error body, as Gemini sends) are kept aside as `UnframedLines`, up
to `UNFRAMED_LIMIT` characters; the rest of them is dropped.

Decoding costs time linear in the bytes, however they are split: a line cut across reads is
kept as a list of its pieces and joined once, and only new bytes are searched for line ends.
Memory is bounded too: one event, or one line, longer than the decoder's `max_event_bytes`
raises `EventTooLargeError`.

Most reads hold whole events of the commonest forms, one `data: ` line each, or an `event: `
line and a `data: ` line (Anthropic, OpenAI Responses): `feed` decodes such a run of events as
one string, split at the blank lines (CRLF line ends, Gemini's, made LF first), and falls back
to the line-by-line decoder for anything else (a comment, an id, a line cut across reads, a CR
held back), whose results it gives exactly. An event cut across reads is finished line by line,
and the whole events after it are decoded at once again.

`SSEDecoder` is the decoder a `WireApi` reads its body with unless it names another
(`decode_sse`): its `end` hands the unframed lines over as one `UnframedLines`, after the last
event; `close` gives the events only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

import attrs

from ..._core import DEFAULT_MAX_EVENT_BYTES
from ._framing import Decode, FramingError

__all__ = [
    "UNFRAMED_LIMIT",
    "EventTooLargeError",
    "SSEDecoder",
    "ServerSentEvent",
    "SseItem",
    "UnframedLines",
    "decode_sse",
    "iter_sse",
]

UNFRAMED_LIMIT = 64 * 1024
"""How many characters of lines that are no SSE field are kept (an error body is far shorter)."""


class ServerSentEvent(NamedTuple):
    """One dispatched event: its `event` name (None when unnamed) and its `data` text.

    A named tuple rather than an attrs class: one is made for every event of every reply, and
    a tuple is built in C, where a frozen attrs instance sets each field through
    `object.__setattr__` (three times the cost).
    """

    event: str | None
    data: str
    id: str | None = None


@attrs.frozen
class UnframedLines:
    """The body's lines that were no SSE field, joined by newlines: no event, but maybe an error.

    `decode_sse` gives at most one, after the last event.
    """

    text: str


_new = tuple.__new__  # a `ServerSentEvent` without the Python-level `__new__` of a named tuple

SseItem = ServerSentEvent | UnframedLines
"""What a provider's event handler reads: events, then possibly the unframed lines."""


class EventTooLargeError(FramingError):
    """One event, or one line, is longer than the decoder's `max_event_bytes`."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"server-sent event exceeds max_event_bytes ({limit} bytes)")
        self.limit = limit


class SSEDecoder:
    """Incremental decoder: `feed` it bytes as they arrive, `close` it at the end of the body.

    `feed` and `close` raise `EventTooLargeError` when the data lines of one event, with the
    line being received, exceed `max_event_bytes`.
    """

    __slots__ = ("_busy", "_cr", "_data", "_event", "_id", "_limit", "_pending", "_pending_size",
                 "_size", "_unframed_size", "unframed")

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self.unframed: list[str] = []
        """Lines that are no SSE field (a server's raw error body, say), in order, up to
        `UNFRAMED_LIMIT` characters in all."""
        self._limit = max_event_bytes
        self._pending: list[bytes] = []  # the pieces of a line not ended yet
        self._pending_size = 0
        self._cr = False  # the last read ended in CR: maybe the first half of a CRLF
        self._event: str | None = None
        self._data: list[str] = []
        self._size = 0  # the bytes of the current event's data lines
        self._id: str | None = None
        self._unframed_size = 0
        self._busy = False  # a line or an event under way, or a CR held back

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Consume `chunk` and return the events it completed."""
        cr = b"\r" in chunk
        if self._busy or cr:
            return self._resume(chunk, cr)
        if (chunk[:6] == b"data: " and chunk.find(b"\n") == len(chunk) - 2 and chunk[-1:] == b"\n"
                and len(chunk) - 2 <= self._limit):
            # The commonest read of all: one event of one data line (an HTTP chunk each).
            return [_new(ServerSentEvent, (None, chunk[6:-2].decode("utf-8", "replace"),
                                           self._id))]
        return self._whole(chunk)

    def _resume(self, chunk: bytes, cr: bool) -> list[ServerSentEvent]:
        """`feed` with CRs in `chunk` (`cr`) or held back, or with an event or a line under way."""
        if self._cr or chunk[-1:] == b"\r":  # a CR held back, or one to hold back
            return self._by_line(chunk)
        if cr:  # what `_by_line` would make of the line ends (Gemini's CRLF)
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if not self._busy:
                return self._whole(chunk)
        # An event is under way: its end, the first blank line, goes line by line. (A read of
        # a huge event holds no LF at all: one memchr says so, before a search for two.)
        end = chunk.find(b"\n\n") + 2 if b"\n" in chunk else 1
        if end == 1 or end == len(chunk):
            return self._by_line(chunk)
        out = self._by_line(chunk[:end])
        out += self._whole(chunk[end:])
        return out

    def _whole(self, chunk: bytes) -> list[ServerSentEvent]:
        """`_by_line(chunk)` when no event is under way and `chunk` has no CR, made cheap.

        The events `chunk` completes, its whole run up to its last blank line, are decoded as
        one string when each is one `data: ` line, or each an `event: ` line and a `data: `
        line, and split at the blank lines; the rest, a part of the next event, goes line by
        line. Any other run goes line by line from the start. Decoding before splitting
        changes nothing: UTF-8 decoding (with replacement) never runs across an LF, and a run
        no longer than the limit holds no event over it.
        """
        if chunk[-2:] == b"\n\n":
            end = len(chunk)
        else:  # a search for one LF first: the first read of a huge event holds none
            end = chunk.rfind(b"\n\n") + 2 if b"\n" in chunk else 1
        if end < 2 or end > self._limit:
            return self._by_line(chunk)
        id_ = self._id
        if chunk[:6] == b"data: ":
            # "data: A\n\ndata: B\n\n": A and B, split at "\n\ndata: ", when they hold no LF.
            datas = chunk[6:end - 2].decode("utf-8", "replace").split("\n\ndata: ")
            if [data for data in datas if "\n" in data]:
                return self._by_line(chunk)
            out = [_new(ServerSentEvent, (None, data, id_)) for data in datas]
        elif chunk[:7] == b"event: ":
            out = []
            for event in chunk[7:end - 2].decode("utf-8", "replace").split("\n\nevent: "):
                name, line, data = event.partition("\ndata: ")
                if not line or "\n" in name or "\n" in data:
                    return self._by_line(chunk)
                out.append(_new(ServerSentEvent, (name, data, id_)))
        else:  # a comment, an id, a blank line...
            return self._by_line(chunk)
        if end < len(chunk):
            out += self._by_line(chunk[end:])
        return out

    def _by_line(self, chunk: bytes) -> list[ServerSentEvent]:
        """Consume `chunk` line by line: any framing, any split, any state."""
        if self._cr or b"\r" in chunk:
            chunk = self._lf_only(chunk)
        lines = chunk.split(b"\n")
        rest = lines.pop()
        pending = self._pending
        if pending:
            if not lines:  # still no line end
                pending.append(rest)
                self._pending_size += len(rest)
                self._check(self._pending_size)
                self._busy = True
                return []
            pending.append(lines[0])
            lines[0] = b"".join(pending)
            pending.clear()
        if rest:
            pending.append(rest)
        self._pending_size = len(rest)
        out: list[ServerSentEvent] = []
        data = self._data
        size = self._size
        limit = self._limit
        for raw in lines:
            if raw[:6] == b"data: ":  # the common case, handled inline
                size += len(raw)
                if size > limit:
                    raise EventTooLargeError(limit)
                data.append(raw[6:].decode("utf-8", "replace"))
            elif not raw:  # the end of an event: the next most common case
                if data or self._event is not None:
                    out.append(ServerSentEvent(self._event, "\n".join(data), self._id))
                    self._event, data = None, []
                    self._data = data
                size = 0
            else:
                self._size = size
                self._line(raw)  # a line that is not empty dispatches nothing
                size = self._size
        self._size = size
        if rest:
            self._check(len(rest))
        self._busy = bool(pending or data or self._event is not None or self._cr)
        return out

    def _lf_only(self, chunk: bytes) -> bytes:
        """`chunk` with its line ends made LF, a CR at its end held back for the next read."""
        if self._cr:
            chunk, self._cr = b"\r" + chunk, False
        if chunk[-1:] == b"\r":  # wait for the next read: it may start with the LF
            chunk, self._cr = chunk[:-1], True
        return chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")

    def end(self) -> list[SseItem]:
        """Finish at the end of the body (a `_framing.Decoder`'s end).

        `close()`'s events, then the unframed lines as one `UnframedLines`.
        """
        out: list[SseItem] = []
        self._cr = False
        if self._pending:
            rest = b"".join(self._pending)
            self._pending.clear()
            self._pending_size = 0
            event = self._line(rest)
            if event is not None:
                out.append(event)
        event = self._line(b"")
        if event is not None:
            out.append(event)
        if self.unframed:  # e.g. Gemini's raw JSON error body after the last event
            out.append(UnframedLines("\n".join(self.unframed)))
        self._busy = False
        return out

    def close(self) -> list[ServerSentEvent]:
        """Finish at the end of the body: a last event without its blank line still counts."""
        return [item for item in self.end() if isinstance(item, ServerSentEvent)]

    def _check(self, pending: int) -> None:
        """Raise if the line being received, with the event so far, is over the limit."""
        if self._size + pending > self._limit:
            raise EventTooLargeError(self._limit)

    def _line(self, raw: bytes) -> ServerSentEvent | None:
        if not raw:
            if not self._data and self._event is None:
                return None
            event = ServerSentEvent(self._event, "\n".join(self._data), self._id)
            self._event, self._data, self._size = None, [], 0
            return event
        if len(raw) + self._size > self._limit:
            raise EventTooLargeError(self._limit)
        if raw[:6] == b"data: ":  # the common case, by far
            self._size += len(raw)
            self._data.append(raw[6:].decode("utf-8", errors="replace"))
            return None
        line = raw.decode("utf-8", errors="replace")
        if line[0] == ":":
            return None
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._size += len(raw)
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name not in ("retry", "event", "data", "id") and self._unframed_size < UNFRAMED_LIMIT:
            line = line[: UNFRAMED_LIMIT - self._unframed_size]
            self._unframed_size += len(line) + 1
            self.unframed.append(line)
        return None


def iter_sse(chunks: Iterable[bytes],
             max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> Iterator[ServerSentEvent]:
    """Decode a stream of byte chunks into events."""
    decoder = SSEDecoder(max_event_bytes)
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.close()


decode_sse: Decode = SSEDecoder
"""The decoder a `WireApi` reads its body with unless it names another (a `_framing.Decode`)."""
