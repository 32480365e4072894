"""Response bodies read in bulk: every chunk that one read of the connection brings, at once.

urllib3 reads a chunked body a chunk at a time: for each, a `readline` for its size, reads for
its payload and for its CRLF, each through several method calls; and under load, chunks already
waiting in the socket's buffer are handed up one by one, each through every layer above (the
decoder, the provider's handler). `iter_dechunked` reads whatever the connection has (one
receive at most per read), decodes every chunk in it in one tight loop and gives their payloads
as one bytes object, which a decoder (SSE: several events per feed, events cut across feeds)
takes in one call.
`iter_sized` does the same for a body of known length, or one that ends with its connection.

A chunk whose payload is cut across reads is given as it comes: one read gives at most what it
read, so a server's huge chunk still arrives in pieces no bigger than a read (a decoder can
refuse an oversized event before it is all in memory). Sizes are hexadecimal, read as urllib3
and http.client read them; chunk extensions (`;name=value`) and trailers are skipped.

Both call `end(clean)` once the body is whole, before giving its last bytes: `_transport` then
hands a clean connection back to its pool (keep-alive), and closes any other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

__all__ = ["MAX_LINE", "BodyError", "iter_dechunked", "iter_sized"]

MAX_LINE = 64 * 1024
"""The longest chunk-size or trailer line accepted, in bytes (urllib3's limit)."""


Read = Callable[[int], bytes]
"""Reads up to so many bytes of a connection: what it has, waiting only when it has none."""


class BodyError(Exception):
    """The body breaks the chunked coding, or its connection ended before the body did."""


def iter_dechunked(first: Read, read: Read, size: int,
                   end: Callable[[bool], None]) -> Iterator[bytes]:
    """Yield the payload of a chunked body as it arrives, never an empty bytes.

    `read(size)` returns what the connection has, up to `size` bytes, waiting only when it has
    nothing (b"" at its end); `first` is the same for the first read (one that gives bytes
    buffered already, then reads the connection). Each yield holds what one read brought.
    Once the last chunk and the trailers are in, `end(clean)` is called, before the last
    payload is yielded: clean when the connection ended exactly there and may carry another
    request; not clean when bytes follow the body, or the connection ended inside the
    trailers (the body is whole either way). Raises `BodyError`; errors of `read` pass through.
    """
    left = 0  # payload bytes of the current chunk still to come
    # Unparsed bytes between chunks: the CRLF ending a chunk's payload, and then the next size
    # line, either possibly cut by a read. The first chunk has no CRLF before it: one stands in.
    tail = b"\r\n"
    reader = first
    while True:
        data = reader(size)
        reader = read
        if not data:
            raise BodyError("the connection ended inside the chunked body")
        if left:
            if len(data) <= left:
                left -= len(data)
                yield data
                continue
            pieces = [data[:left]]
            pos, left = left, 0
        else:
            if tail:
                data = tail + data
            pieces = []
            pos = 0
        while True:  # at a chunk's CRLF, followed by the next chunk's size line
            line_end = data.find(b"\n", pos + 2)
            if data[pos:pos + 2] != b"\r\n" and len(data) - pos >= 2:
                raise BodyError("a chunk's payload does not end with CRLF")
            if line_end < 0:
                tail = data[pos:]
                if len(tail) > MAX_LINE + 2:
                    raise BodyError("a chunk size line is too long")
                break
            if line_end - pos > MAX_LINE + 2:
                raise BodyError("a chunk size line is too long")
            chunk = _chunk_size(data[pos + 2:line_end])
            pos = line_end + 1
            if not chunk:  # the last chunk: then the trailers, up to a blank line
                pos, found = _skip_trailers(data, pos)
                if found:
                    end(pos == len(data))
                    if pieces:
                        yield b"".join(pieces)  # one piece: itself, not a copy
                    return
                if pieces:  # the rest of the trailers may be slow to come: not the payload
                    yield b"".join(pieces)
                _read_trailers(data[pos:], read, size, end)
                return
            stop = pos + chunk
            if stop <= len(data):
                pieces.append(data[pos:stop])
                pos = stop
                continue
            if pos < len(data):
                pieces.append(data[pos:])
            left = stop - len(data)
            tail = b""
            break
        if pieces:
            yield b"".join(pieces)


def _chunk_size(line: bytes) -> int:
    """The size a chunk-size line (without its LF) gives, extensions dropped."""
    try:
        size = int(line, 16)  # the common case: no extension; int() ignores the CR
    except ValueError:
        try:
            size = int(line.split(b";", 1)[0], 16)
        except ValueError:
            raise BodyError(f"invalid chunk size line {line[:40]!r}") from None
    if size < 0:
        raise BodyError(f"invalid chunk size line {line[:40]!r}")
    return size


def _skip_trailers(data: bytes, pos: int) -> tuple[int, bool]:
    """Skip the trailer lines from `data[pos:]`; where they end, if they do.

    (past the blank line ending them, True), or (the start of the line not ended yet, False).
    """
    while (line_end := data.find(b"\n", pos)) >= 0:
        if line_end - pos > MAX_LINE:
            raise BodyError("a trailer line is too long")
        blank = line_end == pos or (line_end == pos + 1 and data[pos] == 13)
        pos = line_end + 1
        if blank:
            return pos, True
    if len(data) - pos > MAX_LINE:
        raise BodyError("a trailer line is too long")
    return pos, False


def _read_trailers(rest: bytes, read: Read, size: int,
                   end: Callable[[bool], None]) -> None:
    """Read the trailers after `rest` (a line not ended yet) to the blank line; then `end`."""
    while more := read(size):
        rest += more
        pos, found = _skip_trailers(rest, 0)
        if found:
            end(pos == len(rest))
            return
        rest = rest[pos:]
    end(False)  # urllib3 takes the body as whole: so do we, without reusing the connection


def iter_sized(first: Read, read: Read, size: int, length: int | None,
               end: Callable[[bool], None]) -> Iterator[bytes]:
    """Yield a body of `length` bytes (None: up to the end of the connection) as it arrives.

    Reads as `iter_dechunked` does, never past the body. `end(clean)` comes before the last
    bytes are yielded: clean once `length` bytes are in; not clean for a body that ends with its
    connection (that connection is spent). Raises `BodyError` when a body of known length ends
    early; what `read` raises passes through.
    """
    left = length
    reader = first
    while left is None or left > 0:
        data = reader(size if left is None or left > size else left)
        reader = read
        if not data:
            if left is not None:
                raise BodyError(f"the connection ended {left} bytes before the body's end")
            end(False)
            return
        if left is not None:
            left -= len(data)
            if not left:
                end(True)
        yield data
    if length == 0:
        end(True)
