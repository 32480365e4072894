"""How a reply's body is cut into the items a wire API's handler reads: the `Decoder` protocol.

A body arrives as byte chunks split anywhere; a decoder turns them into items (Server-Sent
Events by default, see `_sse.SSEDecoder`; a binary framing such as AWS event streams is another
decoder). `WireApi.decode` names the factory: given the largest item allowed
(`StreamOptions.max_event_bytes`), it returns a fresh decoder for one body.

A decoder is incremental rather than a generator over the chunks, so that the reading loop
(`_http.iter_events`) can check for an abort and note the latest item for error messages once
per read, at no cost per item.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

__all__ = ["Decode", "Decoder", "FramingError"]


class FramingError(ValueError):
    """The body cannot be decoded: an item over the size limit, or bytes that frame nothing.

    Its text becomes the reply's error message (the reply ends there).
    """


class Decoder(Protocol):
    """Incremental decoding of one body: `feed` each chunk as it arrives, `end` at its end."""

    def feed(self, chunk: bytes) -> Sequence[Any]:
        """The items that `chunk` completed (often none); raises `FramingError`."""
        ...

    def end(self) -> Sequence[Any]:
        """The items left at the end of the body; raises `FramingError` for a cut-off item."""
        ...


Decode = Callable[[int], Decoder]
"""A decoder factory: `decode(max_event_bytes)` makes the decoder of one body."""
