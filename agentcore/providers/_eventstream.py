"""AWS event-stream framing (`application/vnd.amazon.eventstream`): the body of Bedrock's replies.

A message is a 12-byte prelude (total length, headers length, CRC-32 of those 8 bytes), the
headers, the payload, and a CRC-32 of everything before it. `EventStreamDecoder` is a
`_framing.Decoder`: it cuts a body arriving in chunks split anywhere into `EventMessage`s and
checks both checksums, so that a corrupt frame ends the reply instead of being read as data.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from typing import Any
from zlib import crc32

import attrs

from .._core import DEFAULT_MAX_EVENT_BYTES
from ._framing import FramingError

__all__ = ["EventMessage", "EventStreamDecoder", "EventStreamError", "decode_eventstream"]

_PRELUDE = struct.Struct(">III")
_PRELUDE_BYTES = 12
_MIN_MESSAGE = _PRELUDE_BYTES + 4  # a message with no headers and no payload


class EventStreamError(FramingError):
    """The body is no valid event stream: a checksum that does not match, or a cut-off frame."""


@attrs.frozen(slots=True)
class EventMessage:
    """One decoded message: its headers (`:event-type`, `:message-type`, ...) and raw payload."""

    headers: dict[str, Any]
    payload: bytes


def _headers(data: bytes) -> dict[str, Any]:
    """Decode the header block of one message (names are UTF-8, values typed)."""
    out: dict[str, Any] = {}
    i, end = 0, len(data)
    try:
        while i < end:
            size = data[i]
            name = data[i + 1:i + 1 + size].decode("utf-8")
            i += 1 + size
            kind = data[i]
            i += 1
            value: Any
            if kind in (0, 1):  # bool true, false
                value = kind == 0
            elif kind == 2:
                value = struct.unpack_from(">b", data, i)[0]
                i += 1
            elif kind == 3:
                value = struct.unpack_from(">h", data, i)[0]
                i += 2
            elif kind == 4:
                value = struct.unpack_from(">i", data, i)[0]
                i += 4
            elif kind in (5, 8):  # long, timestamp (ms since the epoch)
                value = struct.unpack_from(">q", data, i)[0]
                i += 8
            elif kind in (6, 7):  # bytes, string
                length = struct.unpack_from(">H", data, i)[0]
                raw = data[i + 2:i + 2 + length]
                if len(raw) != length:
                    raise EventStreamError("event-stream header value is cut off")
                value = raw.decode("utf-8") if kind == 7 else raw
                i += 2 + length
            elif kind == 9:
                value = uuid.UUID(bytes=data[i:i + 16])
                i += 16
            else:
                raise EventStreamError(f"event-stream header {name!r} has unknown type {kind}")
            out[name] = value
    except (IndexError, struct.error, UnicodeDecodeError, ValueError) as exc:
        if isinstance(exc, EventStreamError):
            raise
        raise EventStreamError(f"event-stream headers are malformed: {exc}") from None
    if i != end:
        raise EventStreamError("event-stream headers run past their declared length")
    return out


class EventStreamDecoder:
    """Incremental decoder of an event-stream body (a `_framing.Decoder`).

    `feed` raises `EventStreamError` for a checksum mismatch or a length that cannot be, and a
    `FramingError` for a message over `max_event_bytes`; `end` raises for bytes left over (a
    truncated frame).
    """

    __slots__ = ("_buffer", "_limit")

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self._buffer = bytearray()
        self._limit = max_event_bytes

    def feed(self, chunk: bytes) -> Sequence[EventMessage]:
        buffer = self._buffer
        buffer += chunk
        out: list[EventMessage] = []
        start, size = 0, len(buffer)
        while size - start >= _PRELUDE_BYTES:
            total, header_bytes, prelude_crc = _PRELUDE.unpack_from(buffer, start)
            if crc32(buffer[start:start + 8]) != prelude_crc:
                raise EventStreamError("event-stream prelude checksum does not match "
                                       "(corrupt or not an event stream)")
            if total < _MIN_MESSAGE or header_bytes > total - _MIN_MESSAGE:
                raise EventStreamError(f"event-stream message length {total} cannot hold "
                                       f"{header_bytes} bytes of headers")
            if total > self._limit:
                raise FramingError(f"event-stream message exceeds max_event_bytes "
                                   f"({self._limit} bytes)")
            if size - start < total:
                break
            end = start + total
            (message_crc,) = struct.unpack_from(">I", buffer, end - 4)
            if crc32(buffer[start:end - 4]) != message_crc:
                raise EventStreamError("event-stream message checksum does not match "
                                       "(corrupt frame)")
            body = start + _PRELUDE_BYTES
            headers = _headers(bytes(buffer[body:body + header_bytes])) if header_bytes else {}
            out.append(EventMessage(headers, bytes(buffer[body + header_bytes:end - 4])))
            start = end
        if start:
            del buffer[:start]
        return out

    def end(self) -> Sequence[EventMessage]:
        if self._buffer:
            left = len(self._buffer)
            raise EventStreamError(f"event stream ends inside a message ({left} bytes of a "
                                   "truncated frame)")
        return ()


def decode_eventstream(max_event_bytes: int) -> EventStreamDecoder:
    """The `WireApi.decode` of an event-stream body."""
    return EventStreamDecoder(max_event_bytes)
