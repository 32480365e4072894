"""AWS event-stream framing (`application/vnd.amazon.eventstream`): the body of Bedrock's replies.

A message is a 12-byte prelude (total length, headers length, CRC-32 of those 8 bytes), the
headers, the payload, and a CRC-32 of everything before it. `EventStreamDecoder` is a
`_framing.Decoder`: it cuts a body arriving in chunks split anywhere into `EventMessage`s and
checks both checksums of every message, so that a corrupt frame ends the reply instead of being
read as data. It decodes what botocore's `EventStreamBuffer` decodes, to the same values, except
that a UUID header is a `uuid.UUID` (botocore gives its 16 raw bytes); a timestamp is, as there,
an `int` of milliseconds since the epoch.

Speed: a read is parsed where it lies (no copy of the buffer per message), pieces of a message
that arrive in many reads are joined once, when the whole message is there, and a header block
seen before in the same body (Bedrock repeats the same three string headers) is decoded once.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from typing import Any
from zlib import crc32

import attrs

from ..._core import DEFAULT_MAX_EVENT_BYTES
from ._framing import FramingError

__all__ = ["EventMessage", "EventStreamDecoder", "EventStreamError", "decode_eventstream"]

_PRELUDE = struct.Struct(">III")
_CRC = struct.Struct(">I")
_PRELUDE_BYTES = 12
_MIN_MESSAGE = _PRELUDE_BYTES + 4  # a message with no headers and no payload
_MAX_HEADERS = 128 * 1024  # the format's own bound on a header block (botocore checks it too)
_KNOWN_BLOCKS = 64  # header blocks remembered per body (a Bedrock reply uses about five)
_KNOWN_BLOCK_BYTES = 1024  # and the longest one remembered
_COPY_BYTES = 4096  # a message checked through a copy of it rather than a memoryview

_BOOL_TRUE, _BOOL_FALSE, _BYTES, _STRING, _UUID = 0, 1, 6, 7, 9
_FIXED = {  # header type -> (struct of its value, name of the type for error messages)
    2: (struct.Struct(">b"), "byte"),
    3: (struct.Struct(">h"), "short"),
    4: (struct.Struct(">i"), "integer"),
    5: (struct.Struct(">q"), "long"),
    8: (struct.Struct(">q"), "timestamp"),
}


class EventStreamError(FramingError):
    """The body is no valid event stream: a checksum that does not match, or a cut-off frame."""


@attrs.frozen(slots=True)
class EventMessage:
    """One decoded message: its headers (`:event-type`, `:message-type`, ...) and raw payload.

    Header values are typed as on the wire: `bool`, `int` (byte, short, integer, long, and a
    timestamp in milliseconds since the epoch), `bytes`, `str` or `uuid.UUID`.
    """

    headers: dict[str, Any]
    payload: bytes


def _cut(name: str, what: str) -> EventStreamError:
    """The error for a header whose `what` would be read from past the end of its block."""
    return EventStreamError(f"event-stream header {name!r}: its {what} runs past the end of "
                            "the header block")


def _text(raw: bytes, what: str) -> str:
    """`raw` decoded as UTF-8, or an error saying which header part is not."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise EventStreamError(f"event-stream {what} is not valid UTF-8: {raw[:40]!r}") from None


def _headers(block: bytes) -> dict[str, Any]:
    """Decode one message's header block: (name length, name, type, value) after one another."""
    out: dict[str, Any] = {}
    i, end = 0, len(block)
    while i < end:
        at = i + 1 + block[i]
        if at >= end:
            raise EventStreamError("event-stream header name or type runs past the end of the "
                                   "header block")
        name = _text(block[i + 1:at], "header name")
        kind = block[at]
        i = at + 1
        value: Any
        if kind in (_STRING, _BYTES):
            if i + 2 > end:
                raise _cut(name, "value length")
            stop = i + 2 + (block[i] << 8 | block[i + 1])
            if stop > end:
                raise _cut(name, "value")
            raw = block[i + 2:stop]
            value = _text(raw, f"header {name!r}") if kind == _STRING else raw
            i = stop
        elif kind in (_BOOL_TRUE, _BOOL_FALSE):
            value = kind == _BOOL_TRUE
        elif kind == _UUID:
            if i + 16 > end:
                raise _cut(name, "uuid value")
            value = uuid.UUID(bytes=block[i:i + 16])
            i += 16
        elif kind in _FIXED:
            form, kind_name = _FIXED[kind]
            if i + form.size > end:
                raise _cut(name, f"{kind_name} value")
            (value,) = form.unpack_from(block, i)
            i += form.size
        else:
            raise EventStreamError(f"event-stream header {name!r} has unknown type {kind} "
                                   "(known: 0-9)")
        if name in out:
            raise EventStreamError(f"event-stream header {name!r} appears twice in one message")
        out[name] = value
    return out


def _bad_prelude(prelude: bytes, limit: int) -> FramingError:
    """What is wrong with a prelude that failed the checks of `EventStreamDecoder.feed`."""
    total, header_bytes, prelude_crc = _PRELUDE.unpack(prelude)
    if crc32(prelude[:8]) != prelude_crc:
        return EventStreamError("event-stream prelude checksum does not match (corrupt, or not "
                                "an event stream)")
    if total > limit:
        return FramingError(f"event-stream message of {total} bytes exceeds max_event_bytes "
                            f"({limit} bytes)")
    if header_bytes > _MAX_HEADERS:
        return EventStreamError(f"event-stream headers of {header_bytes} bytes exceed the "
                                f"format's {_MAX_HEADERS}")
    return EventStreamError(f"event-stream message length {total} cannot hold {header_bytes} "
                            f"bytes of headers (at least {header_bytes + _MIN_MESSAGE} with "
                            "prelude and CRC)")


class EventStreamDecoder:
    """Incremental decoder of an event-stream body (a `_framing.Decoder`).

    `feed` raises `EventStreamError` for a checksum mismatch, a length that cannot be or a
    malformed header, and a `FramingError` for a message over `max_event_bytes` (as soon as its
    prelude arrives); `end` raises for bytes left over (a truncated prelude or message). When a
    read holds good messages before the broken one, `feed` returns those and the next call
    raises, so that a reply keeps all it got. Not thread-safe: one decoder reads one body, on
    one thread.
    """

    __slots__ = ("_failed", "_known", "_limit", "_need", "_pending")

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self._limit = max_event_bytes
        self._pending = bytearray()  # the start of the next message, as read so far
        self._need = _PRELUDE_BYTES  # bytes the next message needs before it can be parsed
        self._known: dict[bytes, dict[str, Any]] = {}  # header block -> its headers
        self._failed: FramingError | None = None  # found after messages a feed returned

    def feed(self, chunk: bytes) -> Sequence[EventMessage]:
        """The messages that `chunk` completes; raises `EventStreamError` or `FramingError`."""
        if self._failed is not None:
            raise self._failed
        pending = self._pending
        if pending:
            pending += chunk
            if len(pending) < self._need:
                return ()
            data = bytes(pending)
            pending.clear()
        else:
            data = chunk if type(chunk) is bytes else bytes(chunk)
            if len(data) < self._need:
                pending += data
                return ()
        out: list[EventMessage] = []
        known, limit, unpack = self._known, self._limit, _PRELUDE.unpack_from
        pos, size, need = 0, len(data), _PRELUDE_BYTES
        try:
            while size - pos >= _PRELUDE_BYTES:
                total, header_bytes, prelude_crc = unpack(data, pos)
                if (crc32(data[pos:pos + 8]) != prelude_crc or total > limit
                        or not _MIN_MESSAGE + header_bytes <= total
                        or header_bytes > _MAX_HEADERS):
                    raise _bad_prelude(data[pos:pos + _PRELUDE_BYTES], limit)
                if size - pos < total:
                    need = total
                    break
                end = pos + total - 4
                if total <= _COPY_BYTES:  # a copy costs less than a memoryview of a small one
                    crc = crc32(data[pos + 8:end], prelude_crc)
                else:
                    with memoryview(data) as view:
                        crc = crc32(view[pos + 8:end], prelude_crc)
                if crc != _CRC.unpack_from(data, end)[0]:
                    raise EventStreamError("event-stream message checksum does not match "
                                           "(corrupt frame)")
                body = pos + _PRELUDE_BYTES
                if header_bytes:
                    block = data[body:body + header_bytes]
                    headers = known.get(block) or self._learn(block)
                    headers = headers.copy()
                else:
                    headers = {}
                out.append(EventMessage(headers, data[body + header_bytes:end]))
                pos = end + 4
        except FramingError as exc:
            if not out:
                raise
            self._failed = exc  # raised by the next call, after the messages before it
            return out
        self._need = need
        if pos < size:
            pending += data[pos:] if pos else data
        return out

    def _learn(self, block: bytes) -> dict[str, Any]:
        """Decode a header block not seen before in this body, and remember it if short."""
        headers = _headers(block)
        if len(block) <= _KNOWN_BLOCK_BYTES:
            if len(self._known) >= _KNOWN_BLOCKS:
                self._known.clear()
            self._known[block] = headers
        return headers

    def end(self) -> Sequence[EventMessage]:
        """Nothing: a body that ends inside a message raises `EventStreamError` instead."""
        if self._failed is not None:
            raise self._failed
        left = len(self._pending)
        if left:
            if left < _PRELUDE_BYTES:
                raise EventStreamError(f"event stream ends inside a message prelude ({left} of "
                                       f"{_PRELUDE_BYTES} bytes)")
            raise EventStreamError(f"event stream ends inside a message ({left} of its "
                                   f"{self._need} bytes): truncated frame")
        return ()


def decode_eventstream(max_event_bytes: int) -> EventStreamDecoder:
    """The `WireApi.decode` of an event-stream body."""
    return EventStreamDecoder(max_event_bytes)
