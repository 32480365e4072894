"""Bodies read in bulk (`_bodies`): chunked coding decoded a read at a time, sized bodies.

Pure: the reads are scripted (a body split at every byte position, one byte per read, a huge
chunk, malformed sizes, a connection that ends early), and `end` records whether the
connection would go back to its pool. `test_transport` reads the same over real HTTP.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence

import pytest
from _internals import MAX_LINE, BodyError, iter_dechunked, iter_sized

SIZE = 64 * 1024
EVENTS = [b"data: {\"n\": 1}\n\n", b"data: {\"n\": 22}\n\n", b"event: ping\ndata: x\n\n",
          b"data: " + b"y" * 300 + b"\n\n"]
PAYLOAD = b"".join(EVENTS)


def frame(payload: bytes, extension: bytes = b"", upper: bool = False) -> bytes:
    size = b"%X" % len(payload) if upper else b"%x" % len(payload)
    return size + extension + b"\r\n" + payload + b"\r\n"


BODY = b"".join(frame(event) for event in EVENTS) + b"0\r\n\r\n"
# Every shape the coding allows: extensions, upper-case hex, a bare-LF size line, trailers
FANCY = (frame(EVENTS[0], b";name=value") + frame(EVENTS[1], b" ; a=1;b=\"q\"", upper=True)
         + b"%x\n" % len(EVENTS[2]) + EVENTS[2] + b"\r\n" + frame(EVENTS[3], upper=True)
         + b"0;last\r\nX-Checksum: abc\r\nX-Other: d\r\n\r\n")


class Reads:
    """Scripted reads of a connection: each call gives the next piece (b"" once none is left).

    `log` records each read and each yield of the body under test, in order.
    """

    def __init__(self, pieces: Sequence[bytes]) -> None:
        self.pieces = list(pieces)
        self.log: list[str] = []
        self.sizes: list[int] = []
        self.ends: list[bool] = []

    def read(self, size: int) -> bytes:
        self.sizes.append(size)
        self.log.append("read")
        if not self.pieces:
            return b""
        piece = self.pieces.pop(0)
        assert len(piece) <= size, "a test piece longer than the read asked for"
        return piece

    def end(self, clean: bool) -> None:
        self.log.append(f"end {clean}")
        self.ends.append(clean)

    def dechunk(self, size: int = SIZE) -> Iterator[bytes]:
        for piece in iter_dechunked(self.read, self.read, size, self.end):
            self.log.append("yield")
            yield piece

    def sized(self, length: int | None, size: int = SIZE) -> Iterator[bytes]:
        for piece in iter_sized(self.read, self.read, size, length, self.end):
            self.log.append("yield")
            yield piece


def split(body: bytes, *cuts: int) -> list[bytes]:
    bounds = [0, *cuts, len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def read_all(reads: Reads, read: Callable[[Reads], Iterator[bytes]] = Reads.dechunk
             ) -> list[bytes]:
    pieces = list(read(reads))
    assert all(pieces), "an empty piece would end the body for its reader"
    return pieces


# --- chunked ------------------------------------------------------------------------------------


@pytest.mark.parametrize("body", [BODY, FANCY], ids=["plain", "extensions-and-trailers"])
def test_bodies_a_body_split_at_every_byte_position_gives_its_payload(body: bytes) -> None:
    for cut in range(1, len(body)):
        reads = Reads(split(body, cut))
        assert b"".join(read_all(reads)) == PAYLOAD, cut
        assert reads.ends == [True], cut
        assert reads.pieces == [], cut


@pytest.mark.parametrize("body", [BODY, FANCY], ids=["plain", "extensions-and-trailers"])
def test_bodies_a_body_split_twice_anywhere_gives_its_payload(body: bytes) -> None:
    for first in range(1, len(body), 7):
        for second in range(first + 1, len(body), 5):
            reads = Reads(split(body, first, second))
            assert b"".join(read_all(reads)) == PAYLOAD, (first, second)
            assert reads.ends == [True]


@pytest.mark.parametrize("body", [BODY, FANCY], ids=["plain", "extensions-and-trailers"])
def test_bodies_one_byte_per_read(body: bytes) -> None:
    reads = Reads([body[i:i + 1] for i in range(len(body))])
    pieces = read_all(reads)
    assert b"".join(pieces) == PAYLOAD
    assert max(map(len, pieces)) == 1
    assert reads.ends == [True]
    assert reads.log.count("read") == len(body)  # never a read past the body's end


def test_bodies_every_chunk_of_one_read_comes_as_one_piece() -> None:
    reads = Reads([BODY])
    assert read_all(reads) == [PAYLOAD]
    # The connection is handed back before the last piece: a reader may stop there
    assert reads.log == ["read", "end True", "yield"]


def test_bodies_chunks_of_a_read_come_together_and_a_cut_one_as_it_comes() -> None:
    head = len(b"%x\r\n" % len(EVENTS[3]))
    first = b"".join(map(frame, EVENTS[:3])) + frame(EVENTS[3])[:head + 100]
    reads = Reads([first, BODY[len(first):]])
    assert read_all(reads) == [EVENTS[0] + EVENTS[1] + EVENTS[2] + EVENTS[3][:100],
                               EVENTS[3][100:]]


def test_bodies_the_payload_waits_for_no_trailer() -> None:
    reads = Reads([frame(EVENTS[0]) + b"0\r\n", b"X-Late: 1\r\n", b"\r\n"])
    assert read_all(reads) == [EVENTS[0]]
    assert reads.log == ["read", "yield", "read", "read", "end True"]


def test_bodies_a_huge_chunk_comes_in_pieces_no_bigger_than_a_read() -> None:
    huge = bytes(range(256)) * 1024  # 256 KiB in one chunk
    body = frame(huge) + frame(EVENTS[0]) + b"0\r\n\r\n"
    size = 4096
    reads = Reads([body[i:i + size] for i in range(0, len(body), size)])
    pieces = list(reads.dechunk(size))
    assert b"".join(pieces) == huge + EVENTS[0]
    assert max(map(len, pieces)) <= size
    assert len(pieces) == -(-len(body) // size)  # one piece per read
    assert reads.ends == [True]


def test_bodies_the_first_read_is_the_first_readers() -> None:
    asked: list[str] = []

    def first(size: int) -> bytes:
        asked.append("first")
        return BODY[:10]

    def then(size: int) -> bytes:
        asked.append("then")
        return BODY[10:] if len(asked) == 2 else b""

    assert b"".join(iter_dechunked(first, then, SIZE, lambda clean: None)) == PAYLOAD
    assert asked == ["first", "then"]


@pytest.mark.parametrize(("after", "clean"), [(b"", True), (b"HTTP/1.1 200 OK\r\n", False)],
                         ids=["nothing", "bytes"])
def test_bodies_what_follows_the_body_decides_if_the_connection_is_clean(
    after: bytes, clean: bool
) -> None:
    for body in (BODY + after, FANCY + after):
        reads = Reads([body])
        assert b"".join(read_all(reads)) == PAYLOAD
        assert reads.ends == [clean]


def test_bodies_a_connection_that_ends_inside_the_trailers_is_whole_but_not_reused() -> None:
    reads = Reads([frame(EVENTS[0]) + b"0\r\nX-Trailer: cut"])
    assert read_all(reads) == [EVENTS[0]]
    assert reads.ends == [False]


@pytest.mark.parametrize("body", [
    b"",  # nothing at all
    frame(EVENTS[0]),  # no last chunk
    frame(EVENTS[0])[:-5],  # inside a chunk's payload
    frame(EVENTS[0])[:-1],  # inside its CRLF
    frame(EVENTS[0]) + b"1",  # inside a size line
], ids=["empty", "no-last-chunk", "in-payload", "in-crlf", "in-size"])
def test_bodies_a_connection_that_ends_early_is_an_error(body: bytes) -> None:
    reads = Reads(split(body, len(body) // 2))
    with pytest.raises(BodyError, match="the connection ended inside the chunked body"):
        read_all(reads)
    assert reads.ends == []


@pytest.mark.parametrize(("body", "message"), [
    (b"zz\r\n", "invalid chunk size line b'zz\\\\r'"),
    (b"-5\r\nhello\r\n", "invalid chunk size line b'-5\\\\r'"),
    (b"\r\n", "invalid chunk size line b'\\\\r'"),
    (b";ext\r\n", "invalid chunk size line"),
    (b"5\r\nhelloXY3\r\nabc\r\n", "a chunk's payload does not end with CRLF"),
    (b"5\r\nhelloXY", "a chunk's payload does not end with CRLF"),
    (b"5" * (MAX_LINE + 1) + b"\r\n", "a chunk size line is too long"),
    (b"5;" + b"x" * (MAX_LINE + 1), "a chunk size line is too long"),
    (b"0\r\nX: " + b"x" * (MAX_LINE + 1), "a trailer line is too long"),
    (b"0\r\nX: " + b"x" * (MAX_LINE + 1) + b"\r\n\r\n", "a trailer line is too long"),
], ids=["not-hex", "negative", "empty", "extension-only", "no-crlf", "no-crlf-no-lf",
        "long-size",
        "long-extension", "long-trailer-cut", "long-trailer"])
def test_bodies_a_malformed_body_is_an_error(body: bytes, message: str) -> None:
    whole = [[body]] if len(body) <= SIZE else []
    for pieces in [*whole, [body[i:i + 1000] for i in range(0, len(body), 1000)]]:
        with pytest.raises(BodyError, match=message):
            read_all(Reads(pieces))


def test_bodies_a_long_size_line_is_refused_before_it_is_all_read() -> None:
    endless = [b"1" * 4096] * 64  # 256 KiB of size line, no line end
    reads = Reads(endless)
    with pytest.raises(BodyError, match="a chunk size line is too long"):
        read_all(reads)
    assert len(reads.pieces) > 40  # refused at the limit, not at the end


def test_bodies_an_empty_body_ends_at_once() -> None:
    reads = Reads([b"0\r\n\r\n"])
    assert read_all(reads) == []
    assert reads.ends == [True]


# --- sized --------------------------------------------------------------------------------------


def test_bodies_a_sized_body_comes_as_it_is_read_and_ends_at_its_length() -> None:
    reads = Reads([PAYLOAD[:5], PAYLOAD[5:200], PAYLOAD[200:]])
    assert read_all(reads, lambda r: r.sized(len(PAYLOAD))) == split(PAYLOAD, 5, 200)
    assert reads.ends == [True]
    assert reads.log[-2:] == ["end True", "yield"]
    assert reads.sizes == [len(PAYLOAD), len(PAYLOAD) - 5, len(PAYLOAD) - 200]  # never past it


def test_bodies_a_sized_body_reads_at_most_a_read_at_once() -> None:
    body = b"z" * 10_000
    reads = Reads([body[i:i + 4096] for i in range(0, len(body), 4096)])
    assert b"".join(reads.sized(len(body), size=4096)) == body
    assert reads.sizes == [4096, 4096, 10_000 - 8192]


def test_bodies_an_empty_sized_body_reads_nothing() -> None:
    reads = Reads([b"more"])
    assert read_all(reads, lambda r: r.sized(0)) == []
    assert (reads.ends, reads.sizes) == ([True], [])


def test_bodies_a_sized_body_cut_short_is_an_error() -> None:
    reads = Reads([PAYLOAD[:10]])
    with pytest.raises(BodyError, match=f"the connection ended {len(PAYLOAD) - 10} bytes before"):
        read_all(reads, lambda r: r.sized(len(PAYLOAD)))
    assert reads.ends == []


def test_bodies_a_body_up_to_the_connections_end_is_whole_but_spent() -> None:
    reads = Reads(split(PAYLOAD, 1, 2, 3))
    assert b"".join(read_all(reads, lambda r: r.sized(None))) == PAYLOAD
    assert reads.ends == [False]
