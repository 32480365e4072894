"""The AWS event-stream decoder: against botocore's own, on broken frames, and over real HTTP.

botocore's `EventStreamBuffer` is the reference: on random messages with every header type,
split anywhere, both decoders give the same headers and payloads (a UUID header is the one
difference by design: a `uuid.UUID` here, its 16 raw bytes there). Each way a frame can be
broken ends the body with an error saying what broke.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import tracemalloc
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from _internals import (
    EventMessage,
    EventStreamDecoder,
    EventStreamError,
    FramingError,
    HttpClient,
    HttpError,
    HttpRequest,
    Urllib3Transport,
    decode_eventstream,
    iter_events,
)
from eventstream_frames import Typed, event, exception, frame
from hypothesis import given, settings
from hypothesis import strategies as st
from sse_server import SSEServer

botocore_eventstream = pytest.importorskip("botocore.eventstream")

LIMIT = 1 << 20
EVENT_STREAM = {"Content-Type": "application/vnd.amazon.eventstream"}
ID = uuid.UUID("0f8fad5b-d9cb-469f-a165-70867728950e")
EVERY_TYPE: dict[str, Any] = {
    "yes": Typed("bool", True), "no": Typed("bool", False), "b": Typed("byte", -128),
    "s": Typed("short", 32767), "i": Typed("integer", -(2**31)), "l": Typed("long", 2**63 - 1),
    "raw": Typed("bytes", b"\x00\xff"), "text": Typed("string", "héllo ✓"),
    "at": Typed("timestamp", 1_733_000_000_123), "id": Typed("uuid", ID),
}
DECODED_EVERY_TYPE = {"yes": True, "no": False, "b": -128, "s": 32767, "i": -(2**31),
                      "l": 2**63 - 1, "raw": b"\x00\xff", "text": "héllo ✓",
                      "at": 1_733_000_000_123, "id": ID}
CONVERSE = [
    event("messageStart", {"role": "assistant"}),
    event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hello"}}),
    event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": " world"}}),
    event("contentBlockStop", {"contentBlockIndex": 0}),
    event("messageStop", {"stopReason": "end_turn"}),
]
BODY = b"".join(CONVERSE)


def decode(chunks: Sequence[bytes], limit: int = LIMIT) -> list[EventMessage]:
    decoder = EventStreamDecoder(limit)
    out = [message for chunk in chunks for message in decoder.feed(chunk)]
    return out + list(decoder.end())


def botocore_decode(chunks: Sequence[bytes]) -> list[tuple[dict[str, Any], bytes]]:
    buffer = botocore_eventstream.EventStreamBuffer()
    out = []
    for chunk in chunks:
        buffer.add_data(chunk)
        out.extend((message.headers, message.payload) for message in buffer)
    return out


def typed(headers: dict[str, Any]) -> list[tuple[str, type, Any]]:
    """Headers with each value's type, so that `True` and `1` differ; UUIDs as botocore's bytes."""
    plain = {name: v.bytes if isinstance(v, uuid.UUID) else v for name, v in headers.items()}
    return [(name, type(value), value) for name, value in plain.items()]


def split(body: bytes, cuts: Sequence[int]) -> list[bytes]:
    bounds = [0, *sorted(set(cuts)), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def bytewise(body: bytes) -> list[bytes]:
    return [body[i:i + 1] for i in range(len(body))]


# --- agreement with botocore ---------------------------------------------------------------------

_HEADER_VALUES = st.one_of(
    st.booleans().map(lambda b: Typed("bool", b)),
    st.integers(-(2**7), 2**7 - 1).map(lambda v: Typed("byte", v)),
    st.integers(-(2**15), 2**15 - 1).map(lambda v: Typed("short", v)),
    st.integers(-(2**31), 2**31 - 1).map(lambda v: Typed("integer", v)),
    st.integers(-(2**63), 2**63 - 1).map(lambda v: Typed("long", v)),
    st.integers(-(2**63), 2**63 - 1).map(lambda v: Typed("timestamp", v)),
    st.binary(max_size=300).map(lambda v: Typed("bytes", v)),
    st.text(max_size=60).map(lambda v: Typed("string", v)),
    st.uuids().map(lambda v: Typed("uuid", v)),
)
_NAMES = st.text(max_size=20).filter(lambda name: len(name.encode("utf-8")) <= 255)
_MESSAGES = st.lists(st.tuples(st.dictionaries(_NAMES, _HEADER_VALUES, max_size=6),
                               st.binary(max_size=600)), min_size=1, max_size=6)


@pytest.mark.slow  # 300 examples: over a second
@settings(max_examples=150, deadline=None)
@given(messages=_MESSAGES, data=st.data())
def test_eventstream_decodes_what_botocore_decodes(messages: list[tuple[dict[str, Typed],
                                                                        bytes]],
                                                   data: st.DataObject) -> None:
    body = b"".join(frame(headers, payload) for headers, payload in messages)
    if data.draw(st.booleans(), label="one byte a read"):
        chunks = bytewise(body)
    else:
        chunks = split(body, data.draw(st.lists(st.integers(0, len(body)), max_size=12),
                                       label="cuts"))
    ours = decode(chunks)
    theirs = botocore_decode(chunks)
    assert [m.payload for m in ours] == [payload for _, payload in theirs] == [
        payload for _, payload in messages]
    assert [m.headers for m in ours] == [
        {name: value.value for name, value in headers.items()}
        for headers, _ in messages]
    assert [typed(m.headers) for m in ours] == [typed(headers) for headers, _ in theirs]


def test_eventstream_header_of_every_type_decodes_to_its_python_value() -> None:
    body = frame(EVERY_TYPE, b"{}")
    [ours] = decode([body])
    assert ours == EventMessage(DECODED_EVERY_TYPE, b"{}")
    assert typed(ours.headers) == typed(DECODED_EVERY_TYPE)
    [(theirs, payload)] = botocore_decode([body])
    assert payload == b"{}"
    # botocore gives a UUID header's 16 raw bytes, and a timestamp as the same int of ms
    assert typed(theirs) == typed(DECODED_EVERY_TYPE)
    assert theirs["id"] == ID.bytes


def test_eventstream_message_without_headers_or_payload() -> None:
    assert decode([frame({}, b"")]) == [EventMessage({}, b"")]
    assert botocore_decode([frame({}, b"")]) == [({}, b"")]


@pytest.mark.parametrize("chunking", ["whole", "bytewise", "frames", "random"])
def test_eventstream_a_converse_stream_body_split_anywhere(chunking: str) -> None:
    rng = random.Random(11)
    chunks = {"whole": [BODY], "bytewise": bytewise(BODY), "frames": CONVERSE,
              "random": split(BODY, rng.sample(range(len(BODY)), 40))}[chunking]
    messages = decode(chunks)
    assert [(m.headers[":event-type"], json.loads(m.payload)) for m in messages] == [
        ("messageStart", {"role": "assistant"}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hello"}}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": " world"}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("messageStop", {"stopReason": "end_turn"})]
    assert {m.headers[":message-type"] for m in messages} == {"event"}


def test_eventstream_messages_do_not_share_their_headers() -> None:
    first, second = decode([CONVERSE[1] + CONVERSE[2]])
    first.headers["mine"] = True
    assert "mine" not in second.headers
    assert decode([CONVERSE[1]])[0].headers == {":event-type": "contentBlockDelta",
                                                ":content-type": "application/json",
                                                ":message-type": "event"}


def test_eventstream_a_large_message_in_small_reads_costs_linear_time_and_memory() -> None:
    """8 MiB in 128-byte reads: a decoder that joined its buffer anew per read would copy
    about 270 GB and run into the test's timeout; one that kept the 65,536 reads as objects
    of their own would need over three times the message's size at its peak."""
    payload = bytes(range(256)) * 32_768
    body = frame({":event-type": "chunk"}, payload)
    chunks = [body[i:i + 128] for i in range(0, len(body), 128)]
    tracemalloc.start()
    try:
        [message] = decode(chunks, limit=len(body))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert message == EventMessage({":event-type": "chunk"}, payload)
    assert peak < 2.5 * len(body)  # the bytes read so far and one copy, or that and the payload


# --- broken frames -------------------------------------------------------------------------------


def flip(data: bytes, index: int) -> bytes:
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1:]


GOOD = event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "hi"}})
BROKEN = {
    "prelude crc": (flip(GOOD, 9),
                    r"^event-stream prelude checksum does not match \(corrupt, or not an event "
                    r"stream\)$"),
    "total length bit": (flip(GOOD, 3), r"^event-stream prelude checksum does not match"),
    "message crc": (flip(GOOD, len(GOOD) - 1),
                    r"^event-stream message checksum does not match \(corrupt frame\)$"),
    "payload bit": (flip(GOOD, len(GOOD) - 10), r"^event-stream message checksum does not match"),
    "header bit": (flip(GOOD, 14), r"^event-stream message checksum does not match"),
    "total too small": (frame({}, b"", total=15),
                        r"^event-stream message length 15 cannot hold 0 bytes of headers "
                        r"\(at least 16 with prelude and CRC\)$"),
    "headers past the message": (frame({"a": "b"}, b"xyz", headers_length=30),
                                 r"^event-stream message length 25 cannot hold 30 bytes of "
                                 r"headers \(at least 46 with prelude and CRC\)$"),
    "headers over 128 KiB": (frame({}, b"", total=200_000, headers_length=131_073),
                             r"^event-stream headers of 131073 bytes exceed the format's "
                             r"131072$"),
    "unknown header type": (frame(b"\x04kind\x0a", b"{}"),
                            r"^event-stream header 'kind' has unknown type 10 \(known: 0-9\)$"),
    "string past the block": (frame(b"\x01s\x07\x00\x09abc", b"{}"),
                              r"^event-stream header 's': its value runs past the end of the "
                              r"header block$"),
    "string length past the block": (frame(b"\x01s\x07\x00", b""),
                                     r"^event-stream header 's': its value length runs past"),
    "long past the block": (frame(b"\x01n\x05\x00\x00\x00", b""),
                            r"^event-stream header 'n': its long value runs past the end"),
    "uuid past the block": (frame(b"\x02id\x09" + bytes(8), b""),
                            r"^event-stream header 'id': its uuid value runs past the end"),
    "name past the block": (frame(b"\x09:event", b""),
                            r"^event-stream header name or type runs past the end of the header "
                            r"block$"),
    "name not utf-8": (frame(b"\x02\xff\xfe\x00", b""),
                       r"^event-stream header name is not valid UTF-8: b'\\xff\\xfe'$"),
    "string not utf-8": (frame(b"\x01s\x07\x00\x01\xff", b""),
                         r"^event-stream header 's' is not valid UTF-8: b'\\xff'$"),
    "header twice": (frame(b"\x01a\x00\x01a\x01", b""),
                     r"^event-stream header 'a' appears twice in one message$"),
}


def decode_until_error(chunks: Sequence[bytes],
                       limit: int = LIMIT) -> tuple[list[EventMessage], FramingError]:
    """The messages decoded before the body's error, and that error."""
    decoder, seen = EventStreamDecoder(limit), []
    try:
        for chunk in chunks:
            seen.extend(decoder.feed(chunk))
        decoder.end()
    except FramingError as exc:
        return seen, exc
    pytest.fail("the body decoded without an error")


@pytest.mark.parametrize("chunking", ["whole", "bytewise"])
@pytest.mark.parametrize("case", list(BROKEN))
def test_eventstream_a_broken_frame_is_an_error_saying_what_broke(case: str,
                                                                  chunking: str) -> None:
    data, message = BROKEN[case]
    body = GOOD + data + GOOD
    seen, error = decode_until_error([body] if chunking == "whole" else bytewise(body))
    assert type(error) is EventStreamError
    assert re.search(message, str(error))
    assert seen == decode([GOOD])  # the good frame before it is delivered


def test_eventstream_after_an_error_the_decoder_stays_failed() -> None:
    decoder = EventStreamDecoder(LIMIT)
    assert len(decoder.feed(GOOD + flip(GOOD, 9))) == 1
    for call in (lambda: decoder.feed(GOOD), decoder.end):
        with pytest.raises(EventStreamError, match="prelude checksum does not match"):
            call()


@pytest.mark.parametrize("case", ["prelude crc", "message crc", "payload bit", "header bit"])
def test_eventstream_botocore_rejects_the_same_checksums(case: str) -> None:
    with pytest.raises(botocore_eventstream.ChecksumMismatch):
        botocore_decode([BROKEN[case][0]])


@pytest.mark.parametrize(("cut", "message"), [
    (5, r"^event stream ends inside a message prelude \(5 of 12 bytes\)$"),
    (12, rf"^event stream ends inside a message \(12 of its {len(GOOD)} bytes\): truncated "
         r"frame$"),
    (len(GOOD) - 1, rf"^event stream ends inside a message \({len(GOOD) - 1} of its "
                    rf"{len(GOOD)} bytes\): truncated frame$"),
])
@pytest.mark.parametrize("chunking", ["whole", "bytewise"])
def test_eventstream_a_body_cut_inside_a_frame_is_an_error_at_its_end(cut: int, message: str,
                                                                      chunking: str) -> None:
    body = BODY + GOOD[:cut]
    seen, error = decode_until_error([body] if chunking == "whole" else bytewise(body))
    assert type(error) is EventStreamError
    assert re.search(message, str(error))
    assert seen == decode([BODY])  # every whole message before the cut


def test_eventstream_a_message_over_max_event_bytes_fails_at_its_prelude() -> None:
    big = frame({":event-type": "chunk"}, b"x" * 5000)
    decoder = decode_eventstream(4096)
    with pytest.raises(FramingError, match=rf"^event-stream message of {len(big)} bytes exceeds "
                                           r"max_event_bytes \(4096 bytes\)$"):
        decoder.feed(big[:12])  # before the rest of it arrives
    assert decode([frame({":event-type": "chunk"}, b"x" * 4000)], limit=4096)[0].payload == (
        b"x" * 4000)  # at most the limit is fine


def test_eventstream_error_is_a_framing_error() -> None:
    assert issubclass(EventStreamError, FramingError)
    assert issubclass(FramingError, ValueError)


# --- over real HTTP ------------------------------------------------------------------------------


def read_events(server: SSEServer, max_event_bytes: int = LIMIT,
                seen: list[Any] | None = None) -> list[Any]:
    """The messages of one reply of `server`, read by `iter_events` with the event-stream decoder.

    Messages read before an error are in `seen`, when given.
    """
    seen = [] if seen is None else seen
    with HttpClient(Urllib3Transport(proxies={})) as client:
        request = HttpRequest(f"{server.url}/model/m/converse-stream", b"{}", {})
        for message in iter_events(client.open(request), None, max_event_bytes, None,
                                   decode_eventstream):
            seen.append(message)
    return seen


@pytest.mark.parametrize("chunking", ["whole", "bytewise", "random"])
def test_eventstream_over_http_gives_every_message(sse_server: SSEServer, chunking: str) -> None:
    body = BODY + exception("throttlingException", "Too many requests")
    sse_server.sse(body, chunking=chunking, seed=4, headers=EVENT_STREAM)
    messages = read_events(sse_server)
    assert messages == decode([body])
    assert messages[-1] == EventMessage(
        {":exception-type": "throttlingException", ":content-type": "application/json",
         ":message-type": "exception"}, b'{"message": "Too many requests"}')


@pytest.mark.parametrize("case", ["prelude crc", "message crc", "unknown header type"])
def test_eventstream_over_http_a_corrupt_frame_mid_body_ends_it_naming_the_problem(
    sse_server: SSEServer, case: str
) -> None:
    data, message = BROKEN[case]
    sse_server.sse(BODY + data + BODY, chunking="random", seed=9, headers=EVENT_STREAM)
    seen: list[Any] = []
    with pytest.raises(HttpError, match=message):
        read_events(sse_server, seen=seen)
    assert seen == decode([BODY])  # all that came before the corrupt frame


def test_eventstream_over_http_a_truncated_body_ends_it_naming_the_problem(
    sse_server: SSEServer
) -> None:
    sse_server.sse(BODY + GOOD[:-3], chunking="random", seed=2, headers=EVENT_STREAM)
    seen: list[Any] = []
    with pytest.raises(HttpError, match=rf"^event stream ends inside a message "
                                        rf"\({len(GOOD) - 3} of its {len(GOOD)} bytes\)"):
        read_events(sse_server, seen=seen)
    assert seen == decode([BODY])


def test_eventstream_over_http_a_message_over_the_limit_ends_it(sse_server: SSEServer) -> None:
    big = frame({":event-type": "chunk"}, b"x" * 70_000)
    sse_server.sse(BODY + big, chunking="random", headers=EVENT_STREAM)
    with pytest.raises(HttpError, match=rf"^event-stream message of {len(big)} bytes exceeds "
                                        r"max_event_bytes \(65536 bytes\)$"):
        read_events(sse_server, 64 * 1024)
