"""Writes AWS event-stream frames byte for byte, as Bedrock's servers send them, for the tests.

`frame(headers, payload)` builds one message (prelude, typed headers, payload, both CRC-32s);
`event(kind, body)` and `exception(kind, message)` build the two kinds of message a
`ConverseStream` body carries.
"""

from __future__ import annotations

import json
import struct
import uuid
from typing import Any
from zlib import crc32

__all__ = ["event", "exception", "frame"]


def _header(name: str, value: Any) -> bytes:
    encoded = name.encode("utf-8")
    out = bytes([len(encoded)]) + encoded
    if value is True or value is False:
        return out + bytes([0 if value else 1])
    if isinstance(value, uuid.UUID):
        return out + b"\x09" + value.bytes
    if isinstance(value, int):
        return out + b"\x04" + struct.pack(">i", value)
    if isinstance(value, bytes):
        return out + b"\x06" + struct.pack(">H", len(value)) + value
    text = str(value).encode("utf-8")
    return out + b"\x07" + struct.pack(">H", len(text)) + text


def frame(headers: dict[str, Any], payload: bytes) -> bytes:
    """One event-stream message: 12-byte prelude, headers, payload, message CRC-32."""
    block = b"".join(_header(name, value) for name, value in headers.items())
    total = 12 + len(block) + len(payload) + 4
    head = struct.pack(">II", total, len(block))
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
