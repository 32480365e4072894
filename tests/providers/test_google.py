"""The Gemini provider (`google-generative-ai`) against the scripted server.

Every fixture in `fixtures/google/` is replayed whole, one byte at a time, in random pieces and
with LF instead of Gemini's CRLF framing, and must give the same events and the same final
message; the request tests read the JSON body the server received. Translation is tested on
`mock_server` (no socket); a text reply and aborts go over real HTTP against the local server
(`sse_server`).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from typing import Any

import attrs
import paths
import pytest
from mock_server import ScriptedServer
from sse_server import HOLD

import agentcore as ac
from agentcore import (
    AbortController,
    AssistantMessage,
    Context,
    DoneEvent,
    ErrorEvent,
    ImageContent,
    Model,
    ModelCost,
    StartEvent,
    StopReason,
    StreamOptions,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    Tool,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolResultMessage,
    Usage,
    UserMessage,
    calculate_cost,
)

FIXTURES = paths.FIXTURES / "google"
SSE_FIXTURES = sorted(p.name for p in FIXTURES.glob("*.sse"))
WAIT_S = 5.0  # the timeout on every wait (and the HTTP read timeout of every request)
KEY = "AIza-test-key"
API = "google-generative-ai"
OPTIONS = StreamOptions(api_key=KEY, reasoning="medium", timeout=WAIT_S)
CONTEXT = Context("You are terse.", [UserMessage("hi")])
SIG = "CiQB0e2Kb7xSDmZ4U0k2YzR3cWpCa1p6N0x6dGtHbXRNbmRqVGc="  # valid base64, from §8.4 (b)
SIG_THOUGHT = "EjQKMgGz3kRYbW9kZWwgdGhvdWdodCBzaWduYXR1cmU="
SIG_GEMINI3 = "CiQB0e2KZ2VtaW5pLTMgdGhvdWdodCBzaWduYXR1cmUgZm9yIHRoZSB0ZXh0IHBhcnQ="
PNG = "iVBORw0KGgo="
GENERATED_ID = re.compile(r"(?P<name>[A-Za-z_]+)_(?P<ms>\d{13})_(?P<n>\d+)")
THINKING_TEXT = (
    "**Calculating the sum**\n\nI'm adding 15 and 27. Ten plus twenty is thirty, five plus "
    "seven is twelve, so the total is 42.\n"
)
TAIL_ERROR = (
    'got status: UNAVAILABLE. {"error":{"code":503,"message":"The model is overloaded. '
    'Please try again later.","status":"UNAVAILABLE"}}'
)
FRAME_ERROR = (
    'got status: INTERNAL. {"error":{"code":500,"message":"An internal error has occurred. '
    'Please retry or report in https://developers.generativeai.google/guide/troubleshooting",'
    '"status":"INTERNAL"}}'
)
OVERLOADED_BODY = '{"error":{"code":503,"message":"Overloaded.","status":"UNAVAILABLE"}}'
OVERFLOW_BODY = (
    '{"error":{"code":400,"message":"The input token count (1196265) exceeds the maximum number '
    'of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}'
)


CATALOGUE_COMPAT = {model.id: model.compat for model in ac.get_models("google")}
GEMINI3_PRO = {"thinking_levels_family": "pro", "requires_thought_signatures": True,
               "images_in_function_responses": True}
"""The `compat` of a Gemini 3 Pro (as the catalogue's `gemini-3-pro-preview`)."""


def gemini(url: str, model_id: str = "gemini-2.5-flash", *, reasoning: bool = True,
           images: bool = True, max_tokens: int = 65536,
           compat: dict[str, Any] | None = None) -> Model:
    """A model at `url`; its `compat` is the catalogue's for `model_id` unless given."""
    return Model(model_id, model_id, API, "google", url, reasoning=reasoning,
                 input=["text", "image"] if images else ["text"],
                 cost=ModelCost(0.3, 2.5, 0.03), context_window=1048576, max_tokens=max_tokens,
                 compat=compat if compat is not None else CATALOGUE_COMPAT.get(model_id))


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def frame(*chunks: dict[str, Any]) -> bytes:
    """Gemini's framing and JSON style, for the few streams built inside a test."""
    return b"".join(b"data: " + json.dumps(c, separators=(",", ": ")).encode() + b"\r\n\r\n"
                    for c in chunks)


def text_chunk(text: str, finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": [{"text": text}], "role": "model"}}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "usageMetadata": {"promptTokenCount": 5,
                                                          "totalTokenCount": 5}}


@attrs.frozen
class Run:
    """What a consumer saw: the events, a copy of the partial's blocks at each, the result."""

    events: list[Any]
    snapshots: list[list[Any] | None]
    result: AssistantMessage


def run(model: Model, context: Context = CONTEXT, options: StreamOptions = OPTIONS,
        on_event: Callable[[Any], None] | None = None) -> Run:
    stream = ac.stream(model, context, options)
    events: list[Any] = []
    snapshots: list[list[Any] | None] = []
    for event in stream:
        events.append(event)
        partial = getattr(event, "partial", None)
        snapshots.append(list(partial.content) if partial is not None else None)
        if on_event is not None:
            on_event(event)
    return Run(events, snapshots, stream.result(timeout=WAIT_S))


def check_invariants(recorded: Run) -> None:
    """The event protocol (pi-ai §2), checked on everything a test streams."""
    events, snapshots = recorded.events, recorded.snapshots
    terminal = [e for e in events if isinstance(e, (DoneEvent, ErrorEvent))]
    assert len(terminal) == 1
    assert events[-1] is terminal[0]
    final = terminal[0].message if isinstance(terminal[0], DoneEvent) else terminal[0].error
    assert recorded.result == final
    starts = [i for i, e in enumerate(events) if isinstance(e, StartEvent)]
    assert starts in ([0], [])
    if not starts:
        assert len(events) == 1
        assert isinstance(events[0], ErrorEvent)
    kinds = {TextStartEvent: "text", ThinkingStartEvent: "thinking",
             ToolCallStartEvent: "toolCall"}
    block_types = {"text": TextContent, "thinking": ThinkingContent, "toolCall": ToolCall}
    open_blocks: dict[int, str] = {}
    ended: set[int] = set()
    grown: dict[int, str] = {}
    for event, snapshot in zip(events, snapshots, strict=True):
        if type(event) in kinds:
            kind = kinds[type(event)]
            assert snapshot is not None
            assert event.content_index == len(snapshot) - 1 not in open_blocks
            assert isinstance(snapshot[event.content_index], block_types[kind])
            open_blocks[event.content_index] = kind
            grown[event.content_index] = ""
        elif isinstance(event, (TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent)):
            index = event.content_index
            assert index in open_blocks
            assert index not in ended
            grown[index] += event.delta
            block = snapshot[index]
            if isinstance(event, TextDeltaEvent):
                assert (open_blocks[index], block.text) == ("text", grown[index])
            elif isinstance(event, ThinkingDeltaEvent):
                assert (open_blocks[index], block.thinking) == ("thinking", grown[index])
            else:
                assert open_blocks[index] == "toolCall"
                assert block.arguments == json.loads(grown[index])
        elif isinstance(event, (TextEndEvent, ThinkingEndEvent, ToolCallEndEvent)):
            index = event.content_index
            assert index in open_blocks
            assert index not in ended
            ended.add(index)
            if isinstance(event, ToolCallEndEvent):
                assert event.tool_call == snapshot[index] == final.content[index]
            else:
                assert event.content == grown[index]
    for index, kind in open_blocks.items():
        block = final.content[index]
        if kind == "text":
            assert block.text == grown[index]
        elif kind == "thinking":
            assert block.thinking == grown[index]
    assert len(final.content) == len(open_blocks)
    if isinstance(terminal[0], DoneEvent):
        assert terminal[0].reason == final.stop_reason
        assert final.error_message is None
        assert ended == set(open_blocks)
    else:
        assert terminal[0].reason == final.stop_reason
        assert final.stop_reason in (StopReason.ERROR, StopReason.ABORTED)
        assert final.error_message
    usage = final.usage
    assert usage.total_tokens == usage.input + usage.output + usage.cache_read + usage.cache_write
    assert (final.api, final.provider) == (API, "google")


def generated(call_id: str, name: str, since_ms: int) -> str:
    """Check a made-up tool-call id (`<name>_<ms>_<n>`) and return its placeholder."""
    match = GENERATED_ID.fullmatch(call_id)
    assert match is not None, call_id
    assert match["name"] == name
    assert since_ms <= int(match["ms"]) <= time.time() * 1000
    return f"{name}_<ms>_<n>"


def normal_call(call: ToolCall, since_ms: int) -> ToolCall:
    if GENERATED_ID.fullmatch(call.id):
        return attrs.evolve(call, id=generated(call.id, call.name, since_ms))
    return call


def normal_message(message: AssistantMessage, since_ms: int) -> AssistantMessage:
    ids = [c.id for c in message.tool_calls]
    assert len(set(ids)) == len(ids), ids
    content = [normal_call(b, since_ms) if isinstance(b, ToolCall) else b
               for b in message.content]
    assert since_ms <= message.timestamp <= time.time() * 1000
    return attrs.evolve(message, content=content, timestamp=0)


def summary(recorded: Run, since_ms: int) -> list[tuple[Any, ...]]:
    """The events as plain tuples (made-up ids replaced by a placeholder)."""
    out: list[tuple[Any, ...]] = []
    for event in recorded.events:
        if isinstance(event, StartEvent):
            out.append(("start",))
        elif isinstance(event, (TextStartEvent, ThinkingStartEvent, ToolCallStartEvent)):
            out.append((event.type, event.content_index))
        elif isinstance(event, (TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent)):
            out.append((event.type, event.content_index, event.delta))
        elif isinstance(event, (TextEndEvent, ThinkingEndEvent)):
            out.append((event.type, event.content_index, event.content))
        elif isinstance(event, ToolCallEndEvent):
            out.append((event.type, event.content_index, normal_call(event.tool_call, since_ms)))
        elif isinstance(event, DoneEvent):
            out.append(("done", event.reason))
        else:
            out.append(("error", event.reason, event.error.error_message))
    return out


@attrs.frozen
class Expected:
    model_id: str
    events: list[tuple[Any, ...]]
    content: list[Any]
    usage: tuple[int, int, int]  # input, output, cache_read
    stop_reason: StopReason
    response_id: str
    error_message: str | None = None


def weather(city: str, call_id: str = "get_weather_<ms>_<n>", sig: str | None = None) -> ToolCall:
    return ToolCall(call_id, "get_weather", {"city": city}, sig)


EXPECTED = {
    "text.sse": Expected(
        "gemini-2.5-flash",
        [("start",), ("text_start", 0), ("text_delta", 0, "Hello test"),
         ("text_delta", 0, " successful"), ("text_end", 0, "Hello test successful"),
         ("done", "stop")],
        [TextContent("Hello test successful")], (14, 60, 0), StopReason.STOP,
        "mJq3aPKxL5ut1dkPq9fJ2Ag"),
    "function_calls.sse": Expected(
        "gemini-2.5-flash",
        [("start",), ("toolcall_start", 0), ("toolcall_delta", 0, '{"city":"Paris"}'),
         ("toolcall_end", 0, weather("Paris", sig=SIG)), ("toolcall_start", 1),
         ("toolcall_delta", 1, '{"city":"Tokyo"}'), ("toolcall_end", 1, weather("Tokyo")),
         ("done", "toolUse")],
        [weather("Paris", sig=SIG), weather("Tokyo")], (58, 93, 0), StopReason.TOOL_USE,
        "Xq9TaLm2Ka-1kdUP3pS0mAg"),
    "thinking.sse": Expected(
        "gemini-2.5-flash",
        [("start",), ("thinking_start", 0), ("thinking_delta", 0, THINKING_TEXT),
         ("thinking_end", 0, THINKING_TEXT), ("text_start", 1),
         ("text_delta", 1, "15 + 27 = 42."), ("text_delta", 1, ""),
         ("text_end", 1, "15 + 27 = 42."), ("done", "stop")],
        [ThinkingContent(THINKING_TEXT), TextContent("15 + 27 = 42.")], (12, 56, 0),
        StopReason.STOP, "b7q3aKq9Ja2rkdUPg4ek4Qs"),
    "gemini3_signature.sse": Expected(
        "gemini-3-pro-preview",
        [("start",), ("text_start", 0), ("text_delta", 0, "15 + 27"),
         ("text_delta", 0, " = 42."), ("text_delta", 0, ""), ("text_end", 0, "15 + 27 = 42."),
         ("done", "stop")],
        [TextContent("15 + 27 = 42.", SIG_GEMINI3)], (12, 106, 0), StopReason.STOP,
        "k3Q1aZyWFo2pkdUPtMGs8Ac"),
    "function_call_ids.sse": Expected(
        "gemini-2.5-flash",
        [("start",), ("thinking_start", 0),
         ("thinking_delta", 0, "The user wants the weather in two cities and the time."),
         ("thinking_end", 0, "The user wants the weather in two cities and the time."),
         ("toolcall_start", 1), ("toolcall_delta", 1, '{"city":"Paris"}'),
         ("toolcall_end", 1, weather("Paris", "call_1")), ("toolcall_start", 2),
         ("toolcall_delta", 2, '{"city":"Tokyo"}'), ("toolcall_end", 2, weather("Tokyo")),
         ("toolcall_start", 3), ("toolcall_delta", 3, "{}"),
         ("toolcall_end", 3, ToolCall("get_time_<ms>_<n>", "get_time", {})),
         ("done", "toolUse")],
        [ThinkingContent("The user wants the weather in two cities and the time.", SIG_THOUGHT),
         weather("Paris", "call_1"), weather("Tokyo"),
         ToolCall("get_time_<ms>_<n>", "get_time", {})],
        (61, 70, 0), StopReason.TOOL_USE, "i9K2aM3xN4GtkdUPp7Cv8QE"),
    "cached_usage.sse": Expected(
        "gemini-2.5-flash",
        [("start",), ("text_start", 0), ("text_delta", 0, "Cached reply."),
         ("text_end", 0, "Cached reply."), ("done", "stop")],
        [TextContent("Cached reply.")], (86, 44, 1920), StopReason.STOP,
        "Zc7vaN2mKJ2ykdUPxL6y4AU"),
    "safety.sse": Expected(
        "gemini-2.5-flash",
        [("start",), ("text_start", 0), ("text_delta", 0, "To make that"),
         ("error", "error", "Provider stopped with: SAFETY")],
        [TextContent("To make that")], (11, 2, 0), StopReason.ERROR,
        "s4F3aLbGMo6nkdUP2dWz-Qk", "Provider stopped with: SAFETY"),
    "max_tokens.sse": Expected(
        "gemini-2.5-flash",
        [("start",), ("text_start", 0), ("text_delta", 0, "The history of Rome"),
         ("text_delta", 0, " begins"), ("text_end", 0, "The history of Rome begins"),
         ("done", "length")],
        [TextContent("The history of Rome begins")], (10, 6, 0), StopReason.LENGTH,
        "t8H2aPOyB5GjkdUPw5e_kAo"),
    "error_tail.sse": Expected(
        "gemini-2.5-flash",
        [("start",), ("text_start", 0), ("text_delta", 0, "Once upon a time"),
         ("error", "error", TAIL_ERROR)],
        [TextContent("Once upon a time")], (9, 0, 0), StopReason.ERROR,
        "c2r3aOeHN7WckdUPyIvt8Q4", TAIL_ERROR),
    "error_frame.sse": Expected(
        "gemini-2.5-flash",
        [("start",), ("text_start", 0), ("text_delta", 0, "Once upon a time"),
         ("error", "error", FRAME_ERROR)],
        [TextContent("Once upon a time")], (9, 0, 0), StopReason.ERROR,
        "e1R4aJX7DKmrkdUPkJ6B6QE", FRAME_ERROR),
}


def expected_message(expected: Expected, model: Model) -> AssistantMessage:
    input_, output, cache_read = expected.usage
    usage = calculate_cost(model, Usage(input_, output, cache_read, 0,
                                        input_ + output + cache_read))
    return AssistantMessage(expected.content, API, "google", expected.model_id, usage,
                            expected.stop_reason, expected.error_message, expected.response_id,
                            timestamp=0)


def replay(server: ScriptedServer, name: str, chunking: str) -> tuple[Run, int]:
    body = fixture(name)
    if chunking == "lf":
        server.sse(body.replace(b"\r\n", b"\n"))
    else:
        server.sse(body, chunking=chunking, seed=sum(body) % 1000)  # type: ignore[arg-type]
    since_ms = int(time.time() * 1000)
    recorded = run(gemini(server.url, EXPECTED[name].model_id))
    return recorded, since_ms


# --- replaying the fixtures ---------------------------------------------------------------


def test_google_every_fixture_has_expectations() -> None:
    assert set(SSE_FIXTURES) == set(EXPECTED)
    for name in SSE_FIXTURES:  # Gemini's framing, kept byte for byte
        body = fixture(name)
        assert body.startswith(b"data: {")
        assert b"\r\n\r\n" in body
        assert b"[DONE]" not in body


@pytest.mark.parametrize("chunking", ["whole", "bytewise", "random", "lf"])
@pytest.mark.parametrize("name", SSE_FIXTURES)
def test_google_fixture_replay(mock_server, name, chunking) -> None:
    recorded, since_ms = replay(mock_server, name, chunking)
    check_invariants(recorded)
    expected = EXPECTED[name]
    assert summary(recorded, since_ms) == expected.events
    model = gemini(mock_server.url, expected.model_id)
    assert normal_message(recorded.result, since_ms) == expected_message(expected, model)


def test_google_text_usage_and_cost(sse_server) -> None:
    recorded, _ = replay(sse_server, "text.sse", "whole")
    assert recorded.result.usage.total_tokens == 74  # the server's totalTokenCount
    cost = recorded.result.usage.cost
    assert cost.input == pytest.approx(14 * 0.3 / 1e6)
    assert cost.output == pytest.approx(60 * 2.5 / 1e6)
    assert cost.total == pytest.approx(cost.input + cost.output)


def test_google_cached_usage_subtracts_the_cached_prompt(mock_server) -> None:
    recorded, _ = replay(mock_server, "cached_usage.sse", "whole")
    usage = recorded.result.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (86, 44, 1920, 0)
    assert usage.total_tokens == 2050
    assert usage.cost.cache_read == pytest.approx(1920 * 0.03 / 1e6)


def test_google_generated_ids_are_unique_across_replies(mock_server) -> None:
    mock_server.sse(fixture("function_calls.sse"))
    mock_server.sse(fixture("function_calls.sse"))
    model = gemini(mock_server.url)
    first = ac.complete(model, CONTEXT, OPTIONS)
    second = ac.complete(model, CONTEXT, OPTIONS)
    ids = [c.id for c in first.tool_calls + second.tool_calls]
    assert len(set(ids)) == 4
    counters = [int(GENERATED_ID.fullmatch(i)["n"]) for i in ids]  # type: ignore[index]
    assert counters == sorted(counters)


def test_google_thought_signature_is_kept_on_its_part_only(mock_server) -> None:
    recorded, _ = replay(mock_server, "function_calls.sse", "whole")
    first, second = recorded.result.tool_calls
    assert (first.thought_signature, second.thought_signature) == (SIG, None)


def test_google_gemini3_final_signature_lands_on_the_text_block(mock_server) -> None:
    recorded, _ = replay(mock_server, "gemini3_signature.sse", "bytewise")
    ends = [i for i, e in enumerate(recorded.events) if isinstance(e, TextEndEvent)]
    assert recorded.snapshots[ends[0]] == [TextContent("15 + 27 = 42.", SIG_GEMINI3)]
    # a signature without `thought: true` is no thinking
    assert not any(isinstance(e, ThinkingStartEvent) for e in recorded.events)


def test_google_only_thought_true_parts_are_thinking(mock_server) -> None:
    parts = [{"text": "a", "thought": False}, {"text": "b", "thoughtSignature": SIG},
             {"text": "c", "thought": True}, {"text": "d"}]
    chunk = {"candidates": [{"content": {"parts": parts, "role": "model"},
                             "finishReason": "STOP"}]}
    mock_server.sse(frame(chunk))
    recorded = run(gemini(mock_server.url))
    check_invariants(recorded)
    assert recorded.result.content == [TextContent("ab", SIG), ThinkingContent("c"),
                                       TextContent("d")]


def test_google_text_after_a_tool_call_opens_a_new_block(mock_server) -> None:
    parts = [{"text": "Let me check."}, {"functionCall": {"name": "get_weather", "args": {}}},
             {"text": "Done."}]
    mock_server.sse(frame({"candidates": [{"content": {"parts": parts, "role": "model"},
                                           "finishReason": "STOP"}]}))
    recorded = run(gemini(mock_server.url))
    check_invariants(recorded)
    assert [type(b) for b in recorded.result.content] == [TextContent, ToolCall, TextContent]
    assert recorded.result.stop_reason == StopReason.TOOL_USE


def test_google_tool_calls_with_max_tokens_stop_with_length(mock_server) -> None:
    parts = [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]
    mock_server.sse(frame({"candidates": [{"content": {"parts": parts, "role": "model"},
                                           "finishReason": "MAX_TOKENS"}]}))
    recorded = run(gemini(mock_server.url))
    check_invariants(recorded)
    assert recorded.result.stop_reason == StopReason.LENGTH


@pytest.mark.parametrize("reason", ["RECITATION", "MALFORMED_FUNCTION_CALL", "OTHER",
                                    "FINISH_REASON_UNSPECIFIED"])
def test_google_other_finish_reasons_are_errors(mock_server, reason) -> None:
    mock_server.sse(frame(text_chunk("Partial", reason)))
    recorded = run(gemini(mock_server.url))
    check_invariants(recorded)
    assert recorded.result.error_message == f"Provider stopped with: {reason}"
    assert recorded.result.content == [TextContent("Partial")]


def test_google_stream_without_finish_reason_is_an_error(mock_server) -> None:
    mock_server.sse(frame(text_chunk("Cut short")))
    recorded = run(gemini(mock_server.url))
    check_invariants(recorded)
    assert summary(recorded, 0) == [
        ("start",), ("text_start", 0), ("text_delta", 0, "Cut short"),
        ("error", "error", "Google stream ended without a finish reason"),
    ]
    assert recorded.result.usage.input == 5


def test_google_unframed_noise_after_a_complete_reply_is_ignored(mock_server) -> None:
    mock_server.sse(fixture("text.sse") + b"<html>proxy says hi</html>\n")
    recorded = run(gemini(mock_server.url))
    check_invariants(recorded)
    assert recorded.result.stop_reason == StopReason.STOP
    assert recorded.result.text == "Hello test successful"


def test_google_invalid_json_frame_is_an_error(mock_server) -> None:
    mock_server.sse(frame(text_chunk("Hi")) + b"data: {not json\r\n\r\n")
    recorded = run(gemini(mock_server.url))
    check_invariants(recorded)
    assert recorded.result.error_message is not None
    assert recorded.result.error_message.startswith("invalid JSON from the provider: ")
    assert recorded.result.content == [TextContent("Hi")]


# --- the request ---------------------------------------------------------------------------


def sent(server: ScriptedServer, context: Context = CONTEXT, model: Model | None = None,
         **options: Any) -> dict[str, Any]:
    """Run one request against `text.sse` and return the JSON body the server received."""
    server.sse(fixture("text.sse"))
    message = ac.complete(model or gemini(server.url), context, attrs.evolve(OPTIONS, **options))
    assert message.stop_reason == StopReason.STOP, message.error_message
    body = server.requests[-1].json
    assert isinstance(body, dict)
    return body


def assistant(content: list[Any], model: str = "gemini-2.5-flash", provider: str = "google",
              api: str = API, stop_reason: str = "stop") -> AssistantMessage:
    return AssistantMessage(content, api, provider, model, stop_reason=stop_reason)


def model_parts(server: ScriptedServer, message: AssistantMessage,
                model: Model | None = None) -> list[dict[str, Any]]:
    body = sent(server, Context(None, [UserMessage("q"), message, UserMessage("next")]), model)
    turns = body["contents"]  # (a tool call also gets a synthetic result turn)
    assert [t["role"] for t in turns[:2]] == ["user", "model"]
    assert turns[-1] == {"role": "user", "parts": [{"text": "next"}]}
    return turns[1]["parts"]  # type: ignore[no-any-return]


def test_google_request_endpoint_and_headers(mock_server) -> None:
    model = attrs.evolve(gemini(mock_server.url), headers={"x-model": "m", "x-both": "model"})
    sent(mock_server, model=model, headers={"x-both": "options"})
    [request] = mock_server.requests
    assert request.method == "POST"
    assert request.path == "/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert request.header("x-goog-api-key") == KEY
    assert request.header("content-type") == "application/json"
    assert request.header("authorization") is None
    assert (request.header("x-model"), request.header("x-both")) == ("m", "options")


def test_google_request_base_url_with_trailing_slash(mock_server) -> None:
    model = attrs.evolve(gemini(mock_server.url, "gemini-2.5-pro"), base_url=mock_server.url + "/")
    sent(mock_server, model=model)
    assert mock_server.requests[0].path == "/models/gemini-2.5-pro:streamGenerateContent?alt=sse"


def test_google_request_body(mock_server) -> None:
    assert sent(mock_server) == {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "systemInstruction": {"parts": [{"text": "You are terse."}]},
        "generationConfig": {"maxOutputTokens": 32000,
                             "thinkingConfig": {"includeThoughts": True,
                                                "thinkingBudget": 8192}},
    }


@pytest.mark.parametrize("system_prompt", [None, ""])
def test_google_request_without_system_prompt(mock_server, system_prompt) -> None:
    body = sent(mock_server, Context(system_prompt, [UserMessage("hi")]))
    assert "systemInstruction" not in body


def test_google_request_user_text_and_images(mock_server) -> None:
    context = Context(None, [UserMessage([TextContent("What is this?"),
                                          ImageContent(PNG, "image/png")])])
    assert sent(mock_server, context)["contents"] == [
        {"role": "user", "parts": [{"text": "What is this?"},
                                   {"inlineData": {"mimeType": "image/png", "data": PNG}}]},
    ]


def test_google_request_images_are_not_sent_to_text_only_models(mock_server) -> None:
    context = Context(None, [UserMessage([TextContent("What is this?"),
                                          ImageContent(PNG, "image/png"),
                                          ImageContent(PNG, "image/jpeg")])])
    body = sent(mock_server, context, gemini(mock_server.url, images=False))
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "What is this?"},
                                   {"text": "(image omitted: model does not support images)"}]},
    ]


def test_google_request_empty_user_message_is_skipped(mock_server) -> None:
    body = sent(mock_server, Context(None, [UserMessage([]), UserMessage("hi")]))
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]


def test_google_request_same_model_turn_keeps_thoughts_and_signatures(mock_server) -> None:
    message = assistant([ThinkingContent("plan", SIG_THOUGHT), TextContent("answer", SIG),
                         ThinkingContent("unsigned"), TextContent("  "), ThinkingContent(""),
                         TextContent("more")])
    assert model_parts(mock_server, message) == [
        {"thought": True, "text": "plan", "thoughtSignature": SIG_THOUGHT},
        {"text": "answer", "thoughtSignature": SIG},
        {"thought": True, "text": "unsigned"},
        {"text": "more"},
    ]


@pytest.mark.parametrize("signature", ["abc", "ab!d", "Zm9v YmE=", "====", "Zm9vYmE\n",
                                       "Zm9vYg=", "Zm9v===="])
def test_google_request_invalid_signatures_are_dropped(mock_server, signature) -> None:
    message = assistant([ThinkingContent("plan", signature), TextContent("answer", signature),
                         ToolCall("c1", "get_weather", {"city": "Paris"}, signature)],
                        stop_reason="toolUse")
    parts = model_parts(mock_server, message)
    assert parts == [{"thought": True, "text": "plan"}, {"text": "answer"},
                     {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]


@pytest.mark.parametrize(("provider", "model_id", "api"), [
    ("anthropic", "claude-sonnet-4-5", "anthropic-messages"),
    ("google", "gemini-2.5-pro", API),  # the same provider, another model
    ("openai", "gemini-2.5-flash", "openai-completions"),  # the same id elsewhere
])
def test_google_request_foreign_turn_is_plain_text(mock_server, provider, model_id, api) -> None:
    message = assistant([ThinkingContent("plan", SIG), TextContent("answer", SIG),
                         ThinkingContent("   ", SIG),
                         ToolCall("toolu_01", "get_weather", {"city": "Paris"}, SIG)],
                        model=model_id, provider=provider, api=api, stop_reason="toolUse")
    assert model_parts(mock_server, message) == [
        {"text": "plan"}, {"text": "answer"},
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
    ]


def test_google_request_errored_turns_are_not_replayed(mock_server) -> None:
    failed = assistant([TextContent("half")], stop_reason="error")
    body = sent(mock_server, Context(None, [UserMessage("q"), failed, UserMessage("again")]))
    assert body["contents"] == [{"role": "user", "parts": [{"text": "q"}]},
                                {"role": "user", "parts": [{"text": "again"}]}]


@pytest.mark.parametrize(("signature", "sent_signature"), [
    (SIG, SIG), (None, "skip_thought_signature_validator"),
    ("not-base64!", "skip_thought_signature_validator"),
])
def test_google_request_gemini3_tool_calls_always_carry_a_signature(
        mock_server, signature, sent_signature) -> None:
    model = gemini(mock_server.url, "gemini-3-pro-preview")
    message = assistant([ToolCall("c1", "get_weather", {"city": "Paris"}, signature)],
                        model="gemini-3-pro-preview", stop_reason="toolUse")
    assert model_parts(mock_server, message, model) == [
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
         "thoughtSignature": sent_signature},
    ]


def test_google_request_gemini3_foreign_tool_call_gets_the_skip_signature(mock_server) -> None:
    model = gemini(mock_server.url, "gemini-3-flash-preview")
    message = assistant([TextContent("checking"), ToolCall("c1", "get_weather", {}, SIG)],
                        model="gemini-2.5-flash", stop_reason="toolUse")
    assert model_parts(mock_server, message, model) == [
        {"text": "checking"},
        {"functionCall": {"name": "get_weather", "args": {}},
         "thoughtSignature": "skip_thought_signature_validator"},
    ]


def conversation(call_ids: tuple[str, str], provider: str = "google",
                 model_id: str = "gemini-2.5-flash", api: str = API) -> Context:
    first, second = call_ids
    return Context(None, [
        UserMessage("Weather in Paris and Atlantis?"),
        assistant([weather("Paris", first), weather("Atlantis", second)], model=model_id,
                  provider=provider, api=api, stop_reason="toolUse"),
        ToolResultMessage(first, "get_weather", [TextContent("18°C"), TextContent("sunny")]),
        ToolResultMessage(second, "get_weather", [TextContent("unknown city")], is_error=True),
        UserMessage("Thanks"),
    ])


def test_google_request_function_calls_and_merged_responses(mock_server) -> None:
    body = sent(mock_server, conversation(("call_1", "call_2")))
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Paris and Atlantis?"}]},
        {"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
            {"functionCall": {"name": "get_weather", "args": {"city": "Atlantis"}}},
        ]},
        {"role": "user", "parts": [  # both results in one turn
            {"functionResponse": {"name": "get_weather", "response": {"output": "18°C\nsunny"}}},
            {"functionResponse": {"name": "get_weather",
                                  "response": {"error": "unknown city"}}},
        ]},
        {"role": "user", "parts": [{"text": "Thanks"}]},
    ]


CALL_IDS = {"function_call_ids": True}
"""The `compat` of a model that takes call ids (Claude or gpt-oss served through Gemini's API)."""


@pytest.mark.parametrize("model_id", ["claude-sonnet-4-5", "gpt-oss-120b"])
def test_google_request_ids_are_sent_where_compat_says(mock_server, model_id) -> None:
    long_id = "call_" + "x" * 80
    context = conversation(("call_abc|fc_123", long_id), provider="openai",
                           model_id="gpt-5", api="openai-responses")
    body = sent(mock_server, context, gemini(mock_server.url, model_id, compat=CALL_IDS))
    calls = [p["functionCall"] for p in body["contents"][1]["parts"]]
    responses = [p["functionResponse"] for p in body["contents"][2]["parts"]]
    normalized = ["call_abc_fc_123", long_id[:64]]
    assert [c["id"] for c in calls] == normalized
    assert [r["id"] for r in responses] == normalized


def test_google_request_ids_of_the_same_model_are_sent_as_they_are(mock_server) -> None:
    model = gemini(mock_server.url, "claude-sonnet-4-5", compat=CALL_IDS)
    context = conversation(("toolu_01", "toolu_02"), model_id="claude-sonnet-4-5")
    body = sent(mock_server, context, model)
    assert [p["functionCall"]["id"] for p in body["contents"][1]["parts"]] == [
        "toolu_01", "toolu_02"]


def test_google_request_no_ids_for_gemini(mock_server) -> None:
    body = sent(mock_server, conversation(("call_abc|fc_123", "x"), provider="openai",
                                          model_id="gpt-5", api="openai-responses"))
    for turn in body["contents"]:
        for part in turn["parts"]:
            assert "id" not in part.get("functionCall", {})
            assert "id" not in part.get("functionResponse", {})


def image_result_context(content: list[Any]) -> Context:
    return Context(None, [
        UserMessage("Take a screenshot"),
        assistant([ToolCall("c1", "screenshot", {})], stop_reason="toolUse"),
        ToolResultMessage("c1", "screenshot", content),
    ])


def test_google_request_tool_result_images_nested_for_gemini3(mock_server) -> None:
    model = gemini(mock_server.url, "gemini-3-pro-preview")
    body = sent(mock_server, image_result_context([ImageContent(PNG, "image/png")]), model)
    assert body["contents"][2:] == [{"role": "user", "parts": [{"functionResponse": {
        "name": "screenshot", "response": {"output": "(see attached image)"},
        "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG}}],
    }}]}]


def test_google_request_tool_result_images_follow_for_older_models(mock_server) -> None:
    content = [TextContent("Captured."), ImageContent(PNG, "image/png")]
    body = sent(mock_server, image_result_context(content))
    assert body["contents"][2:] == [
        {"role": "user", "parts": [{"functionResponse": {
            "name": "screenshot", "response": {"output": "Captured."}}}]},
        {"role": "user", "parts": [{"text": "Tool result image:"},
                                   {"inlineData": {"mimeType": "image/png", "data": PNG}}]},
    ]


def test_google_request_image_results_do_not_split_parallel_responses(mock_server) -> None:
    # Gemini rejects a history whose function responses do not answer a call turn in one turn
    context = Context(None, [
        UserMessage("Two screenshots"),
        assistant([ToolCall("c1", "screenshot", {}), ToolCall("c2", "screenshot", {})],
                  stop_reason="toolUse"),
        ToolResultMessage("c1", "screenshot", [ImageContent(PNG, "image/png")]),
        ToolResultMessage("c2", "screenshot", [ImageContent(PNG, "image/jpeg")]),
        UserMessage("Compare them"),
    ])
    body = sent(mock_server, context)
    response = {"name": "screenshot", "response": {"output": "(see attached image)"}}
    assert body["contents"][2:] == [
        {"role": "user", "parts": [{"functionResponse": response},
                                   {"functionResponse": response}]},
        {"role": "user", "parts": [{"text": "Tool result image:"},
                                   {"inlineData": {"mimeType": "image/png", "data": PNG}}]},
        {"role": "user", "parts": [{"text": "Tool result image:"},
                                   {"inlineData": {"mimeType": "image/jpeg", "data": PNG}}]},
        {"role": "user", "parts": [{"text": "Compare them"}]},
    ]


def test_google_request_tool_result_images_for_text_only_models(mock_server) -> None:
    model = gemini(mock_server.url, images=False)
    body = sent(mock_server, image_result_context([ImageContent(PNG, "image/png")]), model)
    assert body["contents"][2:] == [{"role": "user", "parts": [{"functionResponse": {
        "name": "screenshot",
        "response": {"output": "(tool image omitted: model does not support images)"}}}]}]


def test_google_request_empty_tool_result(mock_server) -> None:
    body = sent(mock_server, image_result_context([]))
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"name": "screenshot", "response": {"output": ""}}}]


def test_google_request_missing_result_is_synthesised(mock_server) -> None:
    context = Context(None, [
        UserMessage("Take a screenshot"),
        assistant([ToolCall("c1", "screenshot", {})], stop_reason="toolUse"),
        UserMessage("never mind"),
    ])
    body = sent(mock_server, context)
    assert body["contents"][2:] == [
        {"role": "user", "parts": [{"functionResponse": {
            "name": "screenshot", "response": {"error": "No result provided"}}}]},
        {"role": "user", "parts": [{"text": "never mind"}]},
    ]


def test_google_request_tools(mock_server) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}},
              "required": ["city"], "additionalProperties": False}
    tools = [Tool("get_weather", "Current weather for a city.", schema),
             Tool("get_time", "The time now.", {"type": "object", "properties": {}})]
    body = sent(mock_server, Context(None, [UserMessage("hi")], tools))
    assert body["tools"] == [{"functionDeclarations": [
        {"name": "get_weather", "description": "Current weather for a city.",
         "parametersJsonSchema": schema},
        {"name": "get_time", "description": "The time now.",
         "parametersJsonSchema": {"type": "object", "properties": {}}},
    ]}]
    assert "toolConfig" not in body


@pytest.mark.parametrize("tools", [None, []])
def test_google_request_without_tools(mock_server, tools) -> None:
    assert "tools" not in sent(mock_server, Context(None, [UserMessage("hi")], tools))


@pytest.mark.parametrize(("options", "model_max", "expected"), [
    ({}, 65536, {"maxOutputTokens": 32000}),
    ({}, 8192, {"maxOutputTokens": 8192}),
    ({"max_tokens": 1000, "temperature": 0.2}, 65536,
     {"maxOutputTokens": 1000, "temperature": 0.2}),
    ({"temperature": 0}, 65536, {"maxOutputTokens": 32000, "temperature": 0}),
])
def test_google_request_generation_config(mock_server, options, model_max, expected) -> None:
    model = gemini(mock_server.url, max_tokens=model_max)
    body = sent(mock_server, model=model, reasoning=None, **options)
    assert body["generationConfig"] == expected


BUDGET_CASES = [
    *[("gemini-2.5-pro", level, budget) for level, budget in
      [("minimal", 128), ("low", 2048), ("medium", 8192), ("high", 32768), ("xhigh", 32768)]],
    *[("gemini-2.5-flash", level, budget) for level, budget in
      [("minimal", 128), ("low", 2048), ("medium", 8192), ("high", 24576), ("xhigh", 24576)]],
    ("gemini-2.5-flash-lite", "high", 24576),
    *[("gemini-2.0-flash-thinking-exp", level, -1)
      for level in ("minimal", "low", "medium", "high", "xhigh")],
]


@pytest.mark.parametrize(("model_id", "level", "budget"), BUDGET_CASES)
def test_google_request_thinking_budgets(mock_server, model_id, level, budget) -> None:
    body = sent(mock_server, model=gemini(mock_server.url, model_id), reasoning=level)
    assert body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True,
                                                          "thinkingBudget": budget}


@pytest.mark.parametrize(("model_id", "level", "budget"), [
    ("gemini-2.5-flash", "medium", 4096),
    ("gemini-2.5-flash", "low", 2048),  # not overridden: the default for the level
    ("gemini-2.5-pro", "minimal", 512),
    ("gemini-2.0-flash", "medium", 4096),
])
def test_google_request_custom_thinking_budgets(mock_server, model_id, level, budget) -> None:
    body = sent(mock_server, model=gemini(mock_server.url, model_id), reasoning=level,
                thinking_budgets={"minimal": 512, "medium": 4096})
    assert body["generationConfig"]["thinkingConfig"]["thinkingBudget"] == budget


GEMINI3_CASES = [
    *[("gemini-3-pro-preview", level, value) for level, value in
      [("minimal", "LOW"), ("low", "LOW"), ("medium", "HIGH"), ("high", "HIGH"),
       ("xhigh", "HIGH")]],
    *[("gemini-3-flash-preview", level, value) for level, value in
      [("minimal", "MINIMAL"), ("low", "LOW"), ("medium", "MEDIUM"), ("high", "HIGH"),
       ("xhigh", "HIGH")]],
    ("gemini-3.1-pro-preview", "medium", "HIGH"),
]


@pytest.mark.parametrize(("model_id", "level", "value"), GEMINI3_CASES)
def test_google_request_gemini3_thinking_level(mock_server, model_id, level, value) -> None:
    compat = GEMINI3_PRO if model_id == "gemini-3.1-pro-preview" else None  # not catalogued
    model = gemini(mock_server.url, model_id, compat=compat)
    body = sent(mock_server, model=model, reasoning=level,
                thinking_budgets={"medium": 4096})  # budgets do not apply to Gemini 3
    assert body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True,
                                                          "thinkingLevel": value}


@pytest.mark.parametrize(("reasoning", "model_reasons"), [
    (None, True), ("off", True), ("high", False),
])
def test_google_request_without_thinking(mock_server, reasoning, model_reasons) -> None:
    model = gemini(mock_server.url, reasoning=model_reasons)
    body = sent(mock_server, model=model, reasoning=reasoning)
    assert body["generationConfig"] == {"maxOutputTokens": 32000}


def test_google_request_on_payload_replaces_the_body(mock_server) -> None:
    def payload(body: Any, model: Model) -> Any:
        return {**body, "safetySettings": []}

    body = sent(mock_server, on_payload=payload)
    assert body["safetySettings"] == []
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]


# --- errors, retries, abort ----------------------------------------------------------------


def lone_error(recorded: Run, reason: StopReason, message: str, model_id: str) -> None:
    check_invariants(recorded)
    assert len(recorded.events) == 1
    expected = AssistantMessage([], API, "google", model_id, Usage(), reason, message,
                                timestamp=0)
    assert attrs.evolve(recorded.result, timestamp=0) == expected


def test_google_http_400_is_a_lone_error_with_the_compact_body(mock_server, backoffs) -> None:
    mock_server.status(400, fixture("http_400.json"))
    recorded = run(gemini(mock_server.url))
    lone_error(recorded, StopReason.ERROR, OVERFLOW_BODY, "gemini-2.5-flash")
    assert len(mock_server.requests) == 1
    assert backoffs == []


def test_google_non_json_error_body_is_wrapped(mock_server) -> None:
    text = fixture("http_500_text.txt").decode()
    mock_server.status(500, text, {"Content-Type": "text/plain"})
    recorded = run(gemini(mock_server.url), options=attrs.evolve(OPTIONS, max_retries=0))
    # the status text is not known at this layer: the code sends "error" (pi sends statusText)
    wrapped = json.dumps({"error": {"message": text, "code": 500, "status": "error"}},
                         separators=(",", ":"))
    lone_error(recorded, StopReason.ERROR, wrapped, "gemini-2.5-flash")


def test_google_error_with_an_empty_message_says_what_it_holds(mock_server) -> None:
    body = '{"error":{"code":500,"message":"","status":"INTERNAL"}}'
    mock_server.status(500, body)
    recorded = run(gemini(mock_server.url), options=attrs.evolve(OPTIONS, max_retries=0))
    lone_error(recorded, StopReason.ERROR, body, "gemini-2.5-flash")  # the whole body


def test_google_retries_503_then_streams(mock_server, backoffs) -> None:
    overloaded = OVERLOADED_BODY
    mock_server.status(503, overloaded)
    mock_server.sse(fixture("text.sse"))
    recorded = run(gemini(mock_server.url))
    check_invariants(recorded)
    assert recorded.result.text == "Hello test successful"
    assert len(mock_server.requests) == 2
    assert mock_server.requests[0].json == mock_server.requests[1].json
    assert backoffs == [0]


def test_google_503_after_the_retries_is_the_error(mock_server, backoffs) -> None:
    overloaded = OVERLOADED_BODY
    for _ in range(3):
        mock_server.status(503, overloaded)
    recorded = run(gemini(mock_server.url))
    lone_error(recorded, StopReason.ERROR, overloaded, "gemini-2.5-flash")
    assert len(mock_server.requests) == 3
    assert backoffs == [0, 1]


def test_google_abort_mid_stream(sse_server, run_in_thread) -> None:
    first_frame = fixture("error_tail.sse").split(b"\r\n\r\n")[0] + b"\r\n\r\n"
    gone = sse_server.slow_sse([first_frame], interval_s=HOLD)  # then holds the stream open
    controller = AbortController()
    got_text = threading.Event()
    aborted_at: list[float] = []

    def abort_on_text() -> None:
        if got_text.wait(WAIT_S):
            aborted_at.append(time.monotonic())
            controller.abort()

    def on_event(event: Any) -> None:
        if isinstance(event, TextDeltaEvent):
            got_text.set()

    run_in_thread(abort_on_text)
    # the default read timeout (ten minutes): only the abort can end the read
    options = attrs.evolve(OPTIONS, signal=controller.signal, timeout=None)
    recorded = run(gemini(sse_server.url), options=options, on_event=on_event)
    check_invariants(recorded)
    assert summary(recorded, 0) == [
        ("start",), ("text_start", 0), ("text_delta", 0, "Once upon a time"),
        ("error", "aborted", "Request was aborted"),
    ]
    assert recorded.result.content == [TextContent("Once upon a time")]
    assert recorded.result.usage.input == 9
    assert gone.seen.wait(WAIT_S)  # the client closed the connection the server held open...
    assert gone.at is not None
    assert gone.at >= aborted_at[0]  # ...after the abort


def test_google_abort_before_the_request_sends_nothing(sse_server) -> None:
    controller = AbortController()
    controller.abort()
    recorded = run(gemini(sse_server.url), options=attrs.evolve(OPTIONS, signal=controller.signal))
    lone_error(recorded, StopReason.ABORTED, "Request was aborted", "gemini-2.5-flash")
    assert sse_server.requests == []
