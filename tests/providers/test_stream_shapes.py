"""Streams of every shape cost time linear in their bytes and bounded memory (API §10).

Timing belongs in `benchmarks/stream_shapes.py`; these tests count work instead: how often and
how much the partial tool-call arguments are parsed, how much the SSE decoder keeps. On the
quadratic code they ran into the test timeout.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
from sse_server import SSEServer

import agentcore as ac
from agentcore._core import DEFAULT_MAX_EVENT_BYTES
from agentcore._http import HttpError, HttpRequest, default_client
from agentcore.providers._wire import _builder, _partial_json
from agentcore.providers._wire._reading import iter_events
from agentcore.providers._wire._sse import UNFRAMED_LIMIT, ServerSentEvent, SSEDecoder

KEY = "sk-test"
CONTEXT = ac.Context(None, [ac.UserMessage("write the file")])
HAS_JITER = _partial_json._jiter() is not None


@pytest.fixture(params=["jiter", "python"])
def partial_parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test with jiter's partial mode and with the pure-Python fallback."""
    if request.param == "jiter" and not HAS_JITER:
        pytest.skip("jiter is not installed")
    if request.param == "python":
        monkeypatch.setattr(_partial_json, "_jiter", lambda: None)
    assert _partial_json.partial_parser() == request.param
    return str(request.param)


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    payload = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def tool_call_body(arguments: str, delta_size: int = 16) -> bytes:
    """A Chat Completions stream of one call whose argument text arrives in `delta_size` pieces."""
    head = {"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "write_file", "arguments": ""}}
    parts = [chunk({"role": "assistant", "content": None, "tool_calls": [head]})]
    for start in range(0, len(arguments), delta_size):
        piece = arguments[start : start + delta_size]
        parts.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    parts.append(chunk({}, "tool_calls"))
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def model(server: SSEServer) -> ac.Model:
    return ac.Model("gpt-4o-mini", "GPT-4o mini", "openai-completions", "openai",
                    base_url=f"{server.url}/v1")


def stream(server: SSEServer, **options: Any) -> Iterator[ac.AssistantMessageEvent]:
    return iter(ac.stream(model(server), CONTEXT, ac.StreamOptions(api_key=KEY, **options)))


def big_arguments(size: int) -> dict[str, Any]:
    line = 'def f(x):\n    return "\\u00e9 \\\\ caf\u00e9 \U0001f642" + x  # "quoted"\n'
    return {"path": "src/app.py", "content": (line * (size // len(line) + 1))[:size],
            "mode": "overwrite"}


@pytest.mark.slow  # a stress test: over a second on an idle 2-core machine
def test_stream_long_tool_call_arguments_are_exact_and_parsed_in_linear_work(
        sse_server, monkeypatch, partial_parser) -> None:
    value = big_arguments(256 * 1024)
    text = json.dumps(value)
    parsed: list[int] = []

    def counting(buffer: str) -> dict[str, Any]:
        parsed.append(len(buffer))
        return _partial_json.parse_partial_json(buffer)

    monkeypatch.setattr(_builder, "parse_partial_json", counting)
    sse_server.sse(tool_call_body(text, 16))
    deltas = 0
    seen = 0  # how much of the content the partial arguments showed so far
    events = []
    for event in stream(sse_server):
        events.append(event.type)
        if isinstance(event, ac.ToolCallDeltaEvent):
            deltas += 1
            call = event.partial.content[event.content_index]
            assert isinstance(call, ac.ToolCall)
            assert isinstance(call.arguments, dict)
            assert call.arguments_error is None
            content = call.arguments.get("content", "")
            assert value["content"].startswith(content[:-1])  # the last may be half a pair
            assert len(content) >= seen
            seen = len(content)
        elif isinstance(event, ac.ToolCallEndEvent):
            assert event.tool_call == ac.ToolCall("call_1", "write_file", value)
        elif isinstance(event, ac.DoneEvent):
            assert event.message.content == [ac.ToolCall("call_1", "write_file", value)]
    assert events[-1] == "done"
    assert deltas == -(-len(text) // 16) + 1  # the opening delta carries no text
    assert seen >= 0.75 * len(value["content"])  # the partial kept up with the text
    # Work: the argument text is short (parsed on every delta) for 1,024 characters, then
    # parsed once it grew by a quarter, about 5x the final text in all; every delta: 16,000+.
    assert len(parsed) < 64 + 30
    assert sum(parsed) < 6 * len(text) + 64 * 1024


def test_stream_short_tool_call_arguments_are_parsed_on_every_delta(
        sse_server, partial_parser) -> None:
    text = json.dumps({"city": "Paris", "days": [1, 2, 3]})
    sse_server.sse(tool_call_body(text, 3))
    shown = [event.partial.content[0].arguments for event in stream(sse_server)
             if isinstance(event, ac.ToolCallDeltaEvent)]
    assert shown[1:] == [_partial_json.parse_partial_json(text[:end])
                         for end in range(3, len(text) + 3, 3)]


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ('{"a": 1', "the arguments are not valid JSON (Expecting ',' delimiter: line 1 column 8 "
                    "(char 7)): '{\"a\": 1'"),
        ('{"a": 1} trailing', "the arguments are not valid JSON (Extra data: line 1 column 10 "
                              "(char 9)): '{\"a\": 1} trailing'"),
        ("[1, 2]", "the arguments are a JSON array, not an object: '[1, 2]'"),
        ('"a"', "the arguments are a JSON string, not an object: '\"a\"'"),
    ],
)
def test_stream_unreadable_tool_arguments_say_why(sse_server, arguments: str, error: str) -> None:
    sse_server.sse(tool_call_body(arguments, 4))
    events = list(stream(sse_server))
    expected = ac.ToolCall("call_1", "write_file", {}, arguments_error=error)
    [end] = [e for e in events if isinstance(e, ac.ToolCallEndEvent)]
    assert end.tool_call == expected
    assert isinstance(events[-1], ac.DoneEvent)
    assert events[-1].message.content == [expected]


def test_stream_too_deeply_nested_tool_arguments_say_so(sse_server) -> None:
    arguments = '{"a":' * 50_000 + "1" + "}" * 50_000
    sse_server.sse(tool_call_body(arguments, 4096))
    events = list(stream(sse_server))
    assert isinstance(events[-1], ac.DoneEvent)
    [call] = events[-1].message.content
    assert isinstance(call, ac.ToolCall)
    assert call.arguments == {}
    assert call.arguments_error is not None
    assert call.arguments_error.startswith("the arguments are nested too deeply to read: ")


def test_stream_empty_tool_arguments_are_no_arguments(sse_server) -> None:
    sse_server.sse(tool_call_body(""))
    events = list(stream(sse_server))
    assert isinstance(events[-1], ac.DoneEvent)
    assert events[-1].message.content == [ac.ToolCall("call_1", "write_file", {})]


def test_stream_error_keeps_the_partial_arguments_of_all_the_text(sse_server) -> None:
    value = big_arguments(64 * 1024)
    text = json.dumps(value)
    body = tool_call_body(text[:-100], 16).rpartition(b"data: {")[0]  # no finish, no [DONE]
    sse_server.sse(body, cut=True)
    events = list(stream(sse_server))
    assert isinstance(events[-1], ac.ErrorEvent)
    [call] = events[-1].error.content
    assert isinstance(call, ac.ToolCall)
    assert call.arguments == _partial_json.parse_partial_json(text[:-100])


def test_stream_text_partial_holds_the_text_so_far_and_old_blocks_never_change(
        sse_server) -> None:
    pieces = [f" w{i}" for i in range(5000)]
    sse_server.sse(b"".join(chunk({"content": piece}) for piece in pieces) + chunk({}, "stop")
                   + b"data: [DONE]\n\n")
    kept: list[tuple[ac.TextContent, str]] = []
    so_far = ""
    for event in stream(sse_server):
        if isinstance(event, ac.TextDeltaEvent):
            so_far += event.delta
            block = event.partial.content[0]
            assert block == ac.TextContent(so_far)
            if len(kept) < 50 or len(so_far) % 997 == 0:
                kept.append((block, so_far))
    assert so_far == "".join(pieces)
    assert all(block.text == text for block, text in kept)  # kept blocks are values


def read_events(server: SSEServer, max_event_bytes: int) -> list[Any]:
    request = HttpRequest(f"{server.url}/v1/chat/completions", b"{}", {}, secrets=(KEY,))
    response = default_client().open(request)
    try:
        return list(iter_events(response, None, max_event_bytes))
    finally:
        response.close()


@pytest.mark.parametrize("chunking", ["whole", "random"])
def test_http_event_over_the_limit_ends_the_body_naming_it(sse_server, chunking) -> None:
    body = b"data: small\n\n" + b"data: " + b"x" * 40_000 + b"\n\n" + b"data: never\n\n"
    sse_server.sse(body, chunking=chunking)
    with pytest.raises(HttpError, match=r"^server-sent event exceeds max_event_bytes "
                                        r"\(32768 bytes\)$"):
        read_events(sse_server, 32 * 1024)


def test_http_event_at_the_limit_is_fine(sse_server) -> None:
    data = b"x" * (32 * 1024 - len(b"data: "))
    sse_server.sse(b"data: " + data + b"\n\n")
    assert read_events(sse_server, 32 * 1024) == [ServerSentEvent(None, data.decode())]


def test_http_line_over_the_limit_fails_before_it_ends(sse_server) -> None:
    gone = sse_server.slow_sse([b"y" * 8192], interval_s=0.001)  # one line, never ended
    with pytest.raises(HttpError, match=r"exceeds max_event_bytes \(65536 bytes\)"):
        read_events(sse_server, 64 * 1024)
    assert gone.seen.wait(5.0)


def test_stream_event_over_the_default_limit_is_an_error_reply(sse_server) -> None:
    limit = DEFAULT_MAX_EVENT_BYTES
    sse_server.sse(chunk({"role": "assistant", "content": "x" * (limit + 1)}))
    events = list(stream(sse_server))
    assert [e.type for e in events] == ["start", "error"]
    assert events[-1].error.error_message == (
        f"server-sent event exceeds max_event_bytes ({limit} bytes)")


@pytest.mark.slow  # a stress test: over a second on an idle 2-core machine
def test_sse_junk_lines_are_not_accumulated() -> None:
    decoder = SSEDecoder()
    junk = b"<html>this is no event stream, just noise noise noise noise noise</html>\n" * 900
    tracemalloc.start()
    try:
        for _ in range(300):  # ~20 MB of lines that are no SSE field
            assert decoder.feed(junk) == []
        assert decoder.feed(b"data: still decoded\n\n") == [ServerSentEvent(None, "still decoded")]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sum(len(line) + 1 for line in decoder.unframed) <= UNFRAMED_LIMIT + 1
    assert decoder.unframed[0] == junk.split(b"\n")[0].decode()
    assert peak < 2 * 1024 * 1024  # the 20 MB went by; a few chunks' worth was held at once


def test_sse_long_event_in_small_reads_is_decoded() -> None:
    data = "x" * (4 * 1024 * 1024)
    body = f"event: big\ndata: {data}\n\n".encode()
    decoder = SSEDecoder()
    events = []
    for start in range(0, len(body), 64):  # 65,000 reads: quadratic joining took minutes
        events += decoder.feed(body[start : start + 64])
    assert events == [ServerSentEvent("big", data)]


def test_sse_decoder_limit_counts_the_lines_of_one_event() -> None:
    decoder = SSEDecoder(max_event_bytes=100)
    assert decoder.feed(b"data: " + b"a" * 40 + b"\n\n") == [ServerSentEvent(None, "a" * 40)]
    assert decoder.feed(b"data: " + b"b" * 40 + b"\n") == []
    with pytest.raises(ValueError, match=r"exceeds max_event_bytes \(100 bytes\)"):
        decoder.feed(b"data: " + b"c" * 60 + b"\n")  # 46 + 66 bytes


def test_stream_max_event_bytes_option_bounds_an_event(sse_server) -> None:
    sse_server.sse(chunk({"role": "assistant", "content": "x" * 5000}))
    events = list(stream(sse_server, max_event_bytes=4096))
    assert [e.type for e in events] == ["start", "error"]
    assert events[-1].error.error_message == (
        "server-sent event exceeds max_event_bytes (4096 bytes)")


@pytest.mark.parametrize("text", ['{"a": [1, 2.5, "x"]}', ' {"a": 1}', '{"a": 1} ', "[1]x",
                                  '"\\ud83d"', "", "{", "nan", "NaN", "1e400", "  ", "{}{}"])
def test_decode_json_matches_json_loads(text: str) -> None:
    import json

    from agentcore.providers._wire._text import decode_json

    try:
        expected: Any = ("ok", json.loads(text))
    except json.JSONDecodeError as exc:
        expected = ("error", str(exc))
    try:
        got: Any = ("ok", decode_json(text))
    except json.JSONDecodeError as exc:
        got = ("error", str(exc))
    if expected[0] == "ok" and isinstance(expected[1], float) and expected[1] != expected[1]:
        assert got[0] == "ok"
        assert got[1] != got[1]  # NaN
    else:
        assert got == expected
