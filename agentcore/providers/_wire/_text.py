"""Small helpers every wire format needs: clean text, ids and tool results, compact JSON."""

from __future__ import annotations

import json
import json.scanner
import re
from collections.abc import Callable
from typing import Any

from ..._core import ImageContent, TextContent, ToolResultMessage

__all__ = [
    "IMAGE_NOTE",
    "decode_json",
    "dumps",
    "fitted_id",
    "safe_id",
    "sanitize",
    "short_hash",
    "tool_result_text",
]

IMAGE_NOTE = "(see attached image)"
"""The text of a tool result that holds images only: no provider accepts an empty result."""

_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]")
_SAFE_ID = re.compile(r"[A-Za-z0-9_-]+")
_SURROGATE = re.compile("[\ud800-\udfff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def sanitize(text: str) -> str:
    """Remove unpaired UTF-16 surrogates, which providers reject; valid pairs become characters."""
    if not _SURROGATE.search(text):
        return text
    text = _PAIR.sub(
        lambda m: m.group().encode("utf-16", "surrogatepass").decode("utf-16"), text
    )
    return _SURROGATE.sub("", text)


def safe_id(text: str) -> str:
    """`text` with every character but ASCII letters, digits, `_` and `-` replaced by `_`.

    Tool-call ids from another provider may hold characters the target rejects (`|`, `.`).
    """
    return _UNSAFE_ID.sub("_", text)


def fitted_id(call_id: str, limit: int = 64) -> str:
    """`call_id` as at most `limit` ASCII letters, digits, `_` and `-`; distinct ids stay distinct.

    An id that fits already is kept. Any other becomes its `safe_id`, cut short, then `_` and
    `short_hash` of the whole id: cutting or replacing alone would give one id to two calls
    that differ only past the limit or in a replaced character (`call/1`, `call#1`), and their
    results would then answer the wrong call. A call and its result carry the same id, so
    they get the same new one, the same in every request.
    """
    if len(call_id) <= limit and _SAFE_ID.fullmatch(call_id):
        return call_id
    digest = short_hash(call_id)
    return f"{safe_id(call_id)[:limit - len(digest) - 1]}_{digest}"


def tool_result_text(result: ToolResultMessage, *, note_images: bool = True) -> str:
    """A tool result's text blocks, sanitized and joined by newlines.

    With `note_images`, a result holding images but no text reads `IMAGE_NOTE`.
    """
    text = "\n".join(sanitize(b.text) for b in result.content if isinstance(b, TextContent))
    if not text and note_images and any(isinstance(b, ImageContent) for b in result.content):
        return IMAGE_NOTE
    return text


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
"""What `json.dumps(value, separators=(",", ":"), ensure_ascii=False)` builds on every call."""


def dumps(value: Any) -> str:
    r"""Compact JSON, non-ASCII kept, as JavaScript's `JSON.stringify` writes it.

    A lone surrogate (only possible inside a string) is written as a `\uXXXX` escape, as
    JavaScript does, so that the text can always be encoded as UTF-8.
    """
    text = _ENCODER.encode(value)
    if _SURROGATE.search(text):
        text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def _imul(a: int, b: int) -> int:
    return (a * b) & 0xFFFFFFFF


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if not n:
            return out


def short_hash(text: str) -> str:
    """A deterministic short hash (two 32-bit lanes, base 36) of a string's UTF-16 code units."""
    h1, h2 = 0xDEADBEEF, 0x41C6CE57
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        c = data[i] | (data[i + 1] << 8)
        h1 = _imul(h1 ^ c, 2654435761)
        h2 = _imul(h2 ^ c, 1597334677)
    h1 = _imul(h1 ^ (h1 >> 16), 2246822507) ^ _imul(h2 ^ (h2 >> 13), 3266489909)
    h2 = _imul(h2 ^ (h2 >> 16), 2246822507) ^ _imul(h1 ^ (h1 >> 13), 3266489909)
    return _base36(h2 & 0xFFFFFFFF) + _base36(h1 & 0xFFFFFFFF)


_DECODER = json.JSONDecoder()
# The C scanner when CPython has it (typeshed types make_scanner's argument oddly).
_scan: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(_DECODER)  # type: ignore[arg-type]


def decode_json(text: str) -> Any:
    """`json.loads(text)` for one SSE data field, by the C scanner straight when it can.

    The common case, a value that fills the text exactly, skips `JSONDecoder.decode`'s
    whitespace regexes and frames; anything else (padding, trailing data, an error) goes
    through `json.loads`, so results and errors are exactly its own.
    """
    try:
        value, end = _scan(text, 0)
    except (StopIteration, ValueError):
        return json.loads(text)
    if end != len(text):
        return json.loads(text)
    return value
