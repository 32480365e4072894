"""The SSE decoder, on hand-written streams, on every fixture file and on generated streams."""

from __future__ import annotations

import json
import pathlib
import random

import paths
import pytest
from _internals import ServerSentEvent, SSEDecoder, iter_sse
from hypothesis import given
from hypothesis import strategies as st

FIXTURES = paths.FIXTURES
SSE_FIXTURES = sorted(FIXTURES.glob("**/*.sse"))
JSON_FIXTURES = sorted(FIXTURES.glob("**/http_*.json"))


def E(data: str, event: str | None = None, id: str | None = None) -> ServerSentEvent:
    return ServerSentEvent(event, data, id)


def decode(*chunks: bytes) -> list[ServerSentEvent]:
    return list(iter_sse(chunks))


def bytewise(body: bytes) -> list[bytes]:
    return [body[i : i + 1] for i in range(len(body))]


def random_chunks(body: bytes, seed: int) -> list[bytes]:
    rng, out, i = random.Random(seed), [], 0
    while i < len(body):
        size = rng.randint(1, 64)
        out.append(body[i : i + size])
        i += size
    return out


def fixture_id(path: pathlib.Path) -> str:
    return str(path.relative_to(FIXTURES))


def test_sse_lf_framing() -> None:
    assert decode(b"data: one\n\ndata: two\n\n") == [E("one"), E("two")]


def test_sse_crlf_framing() -> None:
    assert decode(b"event: a\r\ndata: one\r\n\r\ndata: two\r\n\r\n") == [E("one", "a"), E("two")]


def test_sse_cr_framing() -> None:
    assert decode(b"event: a\rdata: one\r\rdata: two\r\r") == [E("one", "a"), E("two")]


@pytest.mark.parametrize("cut", range(1, len(b"data: one\r\n\r\ndata: two\r\n\r\n")))
def test_sse_crlf_split_across_reads_is_one_line_end(cut: int) -> None:
    body = b"data: one\r\n\r\ndata: two\r\n\r\n"
    assert decode(body[:cut], body[cut:]) == [E("one"), E("two")]


def test_sse_cr_at_end_of_read_then_lf_is_one_line_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: one\r") == []
    assert decoder.feed(b"\n") == []  # CRLF: one line end, the event is not complete yet
    assert decoder.feed(b"\r\n") == [E("one")]
    assert decoder.close() == []


def test_sse_cr_at_end_of_read_then_cr_is_two_line_ends() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: one\r") == []
    assert decoder.feed(b"\r") == []  # held: it may yet be the first half of a CRLF
    assert decoder.feed(b"data: two\r\r") == [E("one")]
    assert decoder.close() == [E("two")]


def test_sse_comments_are_skipped() -> None:
    body = b": OPENROUTER PROCESSING\n\n:\ndata: x\n: inside\ndata: y\n\n"
    assert decode(body) == [E("x\ny")]


def test_sse_comment_only_stream_gives_nothing() -> None:
    assert decode(b": ping\n\n: ping\n\n") == []


def test_sse_event_names_and_ids() -> None:
    body = b"event: response.created\nid: 7\ndata: {}\n\ndata: plain\n\n"
    # the name is per event; the last event id carries over, as the SSE specification says
    assert decode(body) == [E("{}", "response.created", "7"), E("plain", None, "7")]


def test_sse_event_name_without_data_is_dispatched() -> None:
    assert decode(b"event: ping\n\n") == [E("", "ping")]


def test_sse_multi_line_data_is_joined_with_newlines() -> None:
    assert decode(b"data: a\ndata:\ndata:  b\n\n") == [E("a\n\n b")]


def test_sse_no_space_after_colon() -> None:
    assert decode(b"event:x\ndata:{\"a\":1}\n\n") == [E('{"a":1}', "x")]


def test_sse_field_without_colon_has_empty_value() -> None:
    assert decode(b"data\n\n") == [E("")]


def test_sse_unknown_fields_are_ignored() -> None:
    assert decode(b"retry: 100\nfoo: bar\ndata: x\n\n") == [E("x")]


def test_sse_last_event_without_blank_line_counts_at_close() -> None:
    assert decode(b"data: one\n\ndata: two") == [E("one"), E("two")]
    assert decode(b"data: one\n\ndata: two\n") == [E("one"), E("two")]
    assert decode(b"data: one\r\n\r\ndata: two\r") == [E("one"), E("two")]


def test_sse_close_on_empty_decoder_gives_nothing() -> None:
    assert SSEDecoder().close() == []
    assert decode() == []


def test_sse_done_marker_is_just_data() -> None:
    assert decode(b"data: {}\n\ndata: [DONE]\n\ndata: after\n\n") == [
        E("{}"), E("[DONE]"), E("after"),
    ]


def test_sse_utf8_split_across_reads() -> None:
    body = "data: héllo wörld 日本語 🙂\n\n".encode()
    expected = [E("héllo wörld 日本語 🙂")]
    for cut in range(1, len(body)):
        assert decode(body[:cut], body[cut:]) == expected
    assert decode(*bytewise(body)) == expected


def test_sse_invalid_utf8_is_replaced_not_raised() -> None:
    assert decode(b"data: a\xffb\n\n") == [E("a\ufffdb")]


def test_sse_feed_returns_events_as_they_complete() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n") == []
    assert decoder.feed(b"\ndata: b\n\nda") == [E("a"), E("b")]
    assert decoder.feed(b"ta: c\n\n") == [E("c")]
    assert decoder.close() == []


def test_sse_fixture_files_exist() -> None:
    names = {fixture_id(p) for p in SSE_FIXTURES}
    assert {"openai_completions/text.sse", "openai_responses/text.sse"} <= names
    assert len(names) >= 17


@pytest.mark.parametrize("path", SSE_FIXTURES, ids=fixture_id)
def test_sse_fixture_decodes_identically_however_split(path: pathlib.Path) -> None:
    body = path.read_bytes()
    whole = decode(body)
    assert whole
    assert decode(*bytewise(body)) == whole
    for seed in range(5):
        assert decode(*random_chunks(body, seed)) == whole
    crlf = body.replace(b"\n", b"\r\n")
    assert decode(crlf) == whole
    assert decode(*bytewise(crlf)) == whole
    assert decode(*random_chunks(crlf, 99)) == whole


@pytest.mark.parametrize("path", SSE_FIXTURES, ids=fixture_id)
def test_sse_fixture_events_are_well_formed(path: pathlib.Path) -> None:
    events = decode(path.read_bytes())
    if path.parent.name == "google":  # unnamed events, no [DONE]; a raw error tail is no event
        assert all(e.event is None for e in events)
        assert all(isinstance(json.loads(e.data), dict) for e in events)
    elif path.parent.name in ("openai_completions", "mistral") or path.name.startswith("chat_"):
        assert all(e.event is None for e in events)
        if path.name not in ("error_openai.sse", "error_openrouter.sse"):
            assert events[-1] == E("[DONE]")
        payloads = [json.loads(e.data) for e in events if e.data != "[DONE]"]
        assert all(isinstance(p, dict) for p in payloads)
    else:
        for event in events:
            assert json.loads(event.data)["type"] == event.event


def test_sse_completions_text_fixture_content() -> None:
    events = decode((FIXTURES / "openai_completions/text.sse").read_bytes())
    deltas = [json.loads(e.data)["choices"] for e in events[:-1]]
    text = "".join(c[0]["delta"].get("content", "") for c in deltas if c)
    assert text == "Hello test successful"
    assert len(events) == 7


def test_sse_responses_text_fixture_content() -> None:
    events = decode((FIXTURES / "openai_responses/text.sse").read_bytes())
    assert [e.event for e in events] == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.content_part.added", "response.output_text.delta",
        "response.output_text.delta", "response.output_text.done",
        "response.content_part.done", "response.output_item.done", "response.completed",
    ]


@pytest.mark.parametrize("path", JSON_FIXTURES, ids=fixture_id)
def test_sse_http_error_fixtures_are_openai_error_bodies(path: pathlib.Path) -> None:
    body = json.loads(path.read_bytes())
    if path.parent.name == "mistral":  # Mistral's own: `message` at the top, a dict for a 422
        assert body["object"] == "error"
        assert body["message"]
    else:
        assert isinstance(body["error"]["message"], str)
    assert 400 <= int(path.stem.split("_")[1]) < 600


line_text = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)))
events_strategy = st.lists(
    st.tuples(
        st.none() | line_text,  # event name
        st.lists(line_text, max_size=4),  # data lines
        st.none() | line_text,  # a comment line before the event
    ),
    max_size=8,
)


def serialise(events: list[tuple[str | None, list[str], str | None]], eol: str) -> bytes:
    out = []
    for name, lines, comment in events:
        if comment is not None:
            out.append(f":{comment}{eol}")
        if name is not None:
            out.append(f"event: {name}{eol}")
        out.extend(f"data: {line}{eol}" for line in lines)
        out.append(eol)
    return "".join(out).encode()


@given(events=events_strategy, eol=st.sampled_from(["\n", "\r\n", "\r"]), data=st.data())
def test_sse_any_events_any_split_decode_exactly(events, eol, data) -> None:
    body = serialise(events, eol)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=12)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    expected = [E("\n".join(lines), name) for name, lines, _ in events
                if name is not None or lines]
    assert decode(*chunks) == expected


class LineByLine(SSEDecoder):
    """The reference: every read decoded line by line, as `feed` does for any unusual read."""

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        return self._by_line(chunk)


def outcome(decoder: SSEDecoder, chunks: list[bytes]) -> list[object]:
    """What each read gives (events, or the error it raised), then `end()`: to compare decoders."""
    out: list[object] = []
    for chunk in [*chunks, None]:
        try:
            out.append(decoder.end() if chunk is None else decoder.feed(chunk))
        except ValueError as exc:
            out.append(("raised", type(exc), str(exc)))
            break
    out.append(list(decoder.unframed))
    return out


def same_as_line_by_line(chunks: list[bytes], limit: int = 32 * 1024 * 1024) -> None:
    assert outcome(SSEDecoder(limit), chunks) == outcome(LineByLine(limit), chunks)


def event_groups(body: bytes, size: int) -> list[bytes]:
    """`body` in reads of `size` whole events each (the last read may hold fewer)."""
    events = [e + b"\n\n" for e in body.split(b"\n\n")]
    events[-1] = events[-1][:-2]
    return [b"".join(events[i : i + size]) for i in range(0, len(events), size)]


@pytest.mark.slow  # every cut decodes the whole body: for the 43 fixtures, about 3 s in all
@pytest.mark.parametrize("path", SSE_FIXTURES, ids=fixture_id)
def test_sse_feed_gives_what_line_by_line_gives_split_anywhere(path: pathlib.Path) -> None:
    body = path.read_bytes()
    for cut in range(len(body) + 1):  # two reads, cut at every byte
        same_as_line_by_line([body[:cut], body[cut:]])
    for size in (1, 2, 3, 7, 1000):  # runs of whole events per read, then cut inside them too
        groups = event_groups(body, size)
        same_as_line_by_line(groups)
        same_as_line_by_line([g[:n] for g in groups for n in (len(g) // 2,)]
                             + [g[len(g) // 2 :] for g in groups])
        joined = b"".join(groups)
        for seed in range(3):
            same_as_line_by_line(random_chunks(joined, seed))


@pytest.mark.parametrize("limit", [10, 60, 200])
@pytest.mark.parametrize("path", SSE_FIXTURES[:6], ids=fixture_id)
def test_sse_feed_raises_where_line_by_line_raises(path: pathlib.Path, limit: int) -> None:
    body = path.read_bytes()
    for size in (1, 2, 5):
        same_as_line_by_line(event_groups(body, size), limit)
    for seed in range(3):
        same_as_line_by_line(random_chunks(body, seed), limit)


raw_lines = st.lists(st.sampled_from([
    b"data: {\"a\":1}", b"data: x", b"data:", b"data:y", b"data: ", b"data", b"event: e",
    b"event:", b"event: \xc3\xa9\xe6\x97", b"id: 3", b"id: a\x00b", b": comment", b"retry: 5",
    b"noise", b"", b"", b"", b"data: caf\xc3\xa9 \xf0\x9f\x99\x82", b"data: \xff\xfe",
    b"data: \xe6\x97", b"\xe6\x97\xa5", b"id: 9",
]), max_size=24)


@given(lines=raw_lines, eol=st.sampled_from([b"\n", b"\n", b"\r\n", b"\r"]),
       limit=st.sampled_from([8, 30, 1000]), data=st.data())
def test_sse_feed_gives_what_line_by_line_gives_on_any_stream(lines, eol, limit, data) -> None:
    body = b"".join(line + eol for line in lines) + data.draw(st.sampled_from([b"", b"da"]))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=8)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    same_as_line_by_line(chunks, limit)


def test_sse_many_events_in_one_read_carry_the_last_id() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"id: 7\n\n") == []
    assert decoder.feed(b"event: a\ndata: x\n\ndata: y\n\nevent: b\ndata: z\n\ndata: pa") == [
        E("x", "a", "7"), E("y", None, "7"), E("z", "b", "7")]
    assert decoder.feed(b"rt\n\ndata: w\n\n") == [E("part", None, "7"), E("w", None, "7")]
    assert decoder.end() == []
