"""Writes AWS event-stream frames byte for byte, as Bedrock's servers send them, for the tests.

`frame(headers, payload)` builds one message (prelude, typed headers, payload, both CRC-32s);
`event(kind, body)` and `exception(kind, message)` build the two kinds of message a
`ConverseStream` body carries. A header value is written with the type its Python value implies
(`bool`, `int` as a 32-bit integer, `bytes`, `uuid.UUID`, anything else as a string), or with
the type named by `Typed` (`Typed("long", 5)`, `Typed("timestamp", ms)`, ...). For frames that
are broken on purpose, `headers` may be the raw header block, and `total` / `headers_length`
override the lengths the prelude states (its CRC still matches them).
"""

from __future__ import annotations

import json
import struct
import uuid
from typing import Any, NamedTuple
from zlib import crc32

__all__ = ["TYPES", "Typed", "event", "exception", "frame"]

TYPES = {"true": 0, "false": 1, "byte": 2, "short": 3, "integer": 4, "long": 5, "bytes": 6,
         "string": 7, "timestamp": 8, "uuid": 9}
_FIXED = {"byte": ">b", "short": ">h", "integer": ">i", "long": ">q", "timestamp": ">q"}


class Typed(NamedTuple):
    """A header value written with the wire type `kind` (a key of `TYPES`, or `bool`)."""

    kind: str
    value: Any


def _typed(kind: str, value: Any) -> bytes:
    if kind == "bool":
        kind = "true" if value else "false"
    code = bytes([TYPES[kind]])
    if kind in ("true", "false"):
        return code
    if kind in _FIXED:
        return code + struct.pack(_FIXED[kind], value)
    if kind == "uuid":
        return code + value.bytes
    data = value if kind == "bytes" else value.encode("utf-8")
    return code + struct.pack(">H", len(data)) + data


def _header(name: str, value: Any) -> bytes:
    encoded = name.encode("utf-8")
    out = bytes([len(encoded)]) + encoded
    if isinstance(value, Typed):
        return out + _typed(value.kind, value.value)
    if value is True or value is False:
        return out + _typed("bool", value)
    if isinstance(value, uuid.UUID):
        return out + _typed("uuid", value)
    if isinstance(value, int):
        return out + _typed("integer", value)
    if isinstance(value, bytes):
        return out + _typed("bytes", value)
    return out + _typed("string", str(value))


def frame(headers: dict[str, Any] | bytes, payload: bytes, *, total: int | None = None,
          headers_length: int | None = None) -> bytes:
    """One event-stream message: 12-byte prelude, headers, payload, message CRC-32."""
    block = headers if isinstance(headers, bytes) else b"".join(
        _header(name, value) for name, value in headers.items())
    size = 12 + len(block) + len(payload) + 4
    head = struct.pack(">II", size if total is None else total,
                       len(block) if headers_length is None else headers_length)
    prelude = head + struct.pack(">I", crc32(head))
    body = prelude + block + payload
    return body + struct.pack(">I", crc32(body))


def event(kind: str, body: dict[str, Any]) -> bytes:
    """An `event` message of type `kind` (`contentBlockDelta`, `messageStop`, ...)."""
    return frame({":event-type": kind, ":content-type": "application/json",
                  ":message-type": "event"}, json.dumps(body).encode("utf-8"))


def exception(kind: str, message: str) -> bytes:
    """An `exception` message of type `kind` (`throttlingException`, ...) saying `message`."""
    return frame({":exception-type": kind, ":content-type": "application/json",
                  ":message-type": "exception"}, json.dumps({"message": message}).encode("utf-8"))
