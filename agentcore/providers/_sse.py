"""Server-Sent Events, parsed from bytes.

Lines may end in LF, CRLF or CR (a CR at the end of one read and an LF at the start of the next
are one line end); a multi-byte UTF-8 character may be split across reads, since only whole
lines are decoded. Comments (`:` lines) are skipped, `data:` lines are joined with newlines and
one space after the colon is dropped, as the SSE specification says. Lines that are no field
at all (a server's raw JSON error body, as Gemini sends) are kept aside as `UnframedLines`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import attrs

__all__ = ["SSEDecoder", "ServerSentEvent", "SseItem", "UnframedLines", "iter_sse"]


@attrs.frozen
class ServerSentEvent:
    """One dispatched event: its `event` name (None when unnamed) and its `data` text."""

    event: str | None
    data: str
    id: str | None = None


@attrs.frozen
class UnframedLines:
    """The body's lines that were no SSE field, joined by newlines: no event, but maybe an error.

    `iter_events` yields at most one, after the last event.
    """

    text: str


SseItem = ServerSentEvent | UnframedLines
"""What a provider's event handler reads: events, then possibly the unframed lines."""


class SSEDecoder:
    """Incremental decoder: `feed` it bytes as they arrive, `close` it at the end of the body."""

    __slots__ = ("_data", "_event", "_id", "_rest", "unframed")

    def __init__(self) -> None:
        self.unframed: list[str] = []
        """Lines that are no SSE field (a server's raw error body, say), in order."""
        self._rest = b""
        self._event: str | None = None
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Consume `chunk` and return the events it completed."""
        buf = self._rest + chunk if self._rest else chunk
        hold = b""
        if b"\r" in buf:
            if buf.endswith(b"\r"):  # maybe the first half of a CRLF: wait for the next read
                buf, hold = buf[:-1], b"\r"
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buf.split(b"\n")
        self._rest = lines.pop() + hold
        out: list[ServerSentEvent] = []
        data = self._data
        for raw in lines:
            if raw[:6] == b"data: ":  # the common case, handled inline
                data.append(raw[6:].decode("utf-8", errors="replace"))
                continue
            event = self._line(raw)
            if event is not None:
                out.append(event)
                data = self._data
        return out

    def close(self) -> list[ServerSentEvent]:
        """Finish at the end of the body: a last event without its blank line still counts."""
        out = []
        if self._rest:
            rest, self._rest = self._rest.rstrip(b"\r"), b""
            event = self._line(rest)
            if event is not None:
                out.append(event)
        event = self._line(b"")
        if event is not None:
            out.append(event)
        return out

    def _line(self, raw: bytes) -> ServerSentEvent | None:
        if not raw:
            if not self._data and self._event is None:
                return None
            event = ServerSentEvent(self._event, "\n".join(self._data), self._id)
            self._event, self._data = None, []
            return event
        if raw[:6] == b"data: ":  # the common case, by far
            self._data.append(raw[6:].decode("utf-8", errors="replace"))
            return None
        line = raw.decode("utf-8", errors="replace")
        if line[0] == ":":
            return None
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name not in ("retry", "event", "data", "id"):
            self.unframed.append(line)
        return None


def iter_sse(chunks: Iterable[bytes]) -> Iterator[ServerSentEvent]:
    """Decode a stream of byte chunks into events."""
    decoder = SSEDecoder()
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.close()
