"""The Anthropic Messages provider against the scripted server.

Fixtures are the byte-exact transcripts of `reference/pi-ai.md` §7.4 (and variants built from
§7.3); every one is replayed whole, one byte at a time, in random chunks and with CRLF framing.
Translation is tested on `mock_server` (no socket); a text reply and aborts go over real HTTP
against the local server (`sse_server`).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import attrs
import paths
import pytest
from mock_server import ScriptedServer
from sse_server import HOLD

import agentcore as ac
from agentcore import (
    AssistantMessage,
    Context,
    Cost,
    DoneEvent,
    ErrorEvent,
    ImageContent,
    StartEvent,
    StopReason,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agentcore.providers.anthropic import build_body, headers_for

FIXTURES = paths.FIXTURES / "anthropic"
WAIT_S = 5.0  # the timeout on every wait (and the HTTP read timeout)
API = "anthropic-messages"
MODEL_ID = "claude-sonnet-4-5-20250929"
KEY = "sk-ant-test"
BETAS = "fine-grained-tool-streaming-2025-05-14,interleaved-thinking-2025-05-14"
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5Er"
    "kJggg=="
)
SIGNATURE = (
    "ErUBCkYIBxgCIkB0dHlJ4n1wq8rS3mV2p5K7xY9zA1bC3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7dE9fG1hJ3kL"
    "5mN7pQ9rEgwQ2sU4wY6aC8eG0iK2GgwM4oQ6sU8wY0aC2eG4iK6IjB8mO0qS2uW4yA6cE8gI0kM2oQ4sU6wY8aC0eG2"
    "iK4mO6qS8uW0yA2cE4gI6kM8oQ0sKhA="
)
REDACTED_DATA = (
    "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB8w"
    "N1xT2yU3zA4bC5dE6fG7"
)
WEATHER = Tool(
    "get_weather",
    "Current weather for a city.",
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city."}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
EPHEMERAL = {"type": "ephemeral"}


def make_model(base_url: str, model_id: str = MODEL_ID, **changes: Any) -> ac.Model:
    model = ac.Model(
        model_id, "Claude Sonnet 4.5", API, "anthropic", base_url, reasoning=True,
        input=["text", "image"], cost=ac.ModelCost(3, 15, 0.3, 3.75), context_window=200000,
        max_tokens=64000,
    )
    return attrs.evolve(model, **changes)


def options(**changes: Any) -> StreamOptions:
    values: dict[str, Any] = {"api_key": KEY, "reasoning": "medium", "timeout": WAIT_S}
    values.update(changes)
    return StreamOptions(**values)


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def priced(inp: int, out: int, cache_read: int = 0, cache_write: int = 0) -> Usage:
    """Usage at the test model's prices ($3 / $15 / $0.30 / $3.75 per million)."""
    parts = (3 * inp / 1e6, 15 * out / 1e6, 0.3 * cache_read / 1e6, 3.75 * cache_write / 1e6)
    return Usage(inp, out, cache_read, cache_write, inp + out + cache_read + cache_write,
                 Cost(*parts, total=sum(parts)))


def reply(content: list[Any], usage: Usage, stop_reason: str, response_id: str,
          error_message: str | None = None) -> AssistantMessage:
    return AssistantMessage(content, API, "anthropic", MODEL_ID, usage, stop_reason,
                            error_message, response_id, timestamp=0)


def untimed(message: AssistantMessage) -> AssistantMessage:
    return attrs.evolve(message, timestamp=0)


def brief(event: Any) -> tuple[Any, ...]:
    """An event without its partial: its type, then its index and payload."""
    if isinstance(event, StartEvent):
        return ("start",)
    if isinstance(event, DoneEvent | ErrorEvent):
        return (event.type, event.reason.value)
    payload = [getattr(event, name) for name in ("delta", "content", "tool_call")
               if hasattr(event, name)]
    return (event.type, event.content_index, *payload)


def snapshot(event: Any) -> tuple[Any, ...]:
    """An event with a copy of the live partial's content as it was when the event came."""
    if isinstance(event, DoneEvent):
        return (*brief(event), untimed(event.message))
    if isinstance(event, ErrorEvent):
        return (*brief(event), untimed(event.error))
    return (*brief(event), list(event.partial.content))


def collect(model: ac.Model, context: Context, opts: StreamOptions) -> tuple[
        list[Any], AssistantMessage]:
    """Stream to the end; the events as they came and the final message."""
    stream = ac.stream(model, context, opts)
    events = list(stream)
    return events, stream.result(timeout=WAIT_S)


def replay(server: ScriptedServer, body: bytes, framing: str = "lf", chunking: str = "whole",
           **opts: Any) -> tuple[list[Any], list[tuple[Any, ...]], AssistantMessage]:
    if framing == "crlf":
        body = body.replace(b"\n", b"\r\n")
    server.sse(body, chunking=chunking, seed=11)  # type: ignore[arg-type]
    context = Context("You are terse.", [UserMessage("hi")], tools=[WEATHER])
    stream = ac.stream(make_model(server.url), context, options(**opts))
    events, snaps = [], []
    for event in stream:
        events.append(event)
        snaps.append(snapshot(event))
    return events, snaps, stream.result(timeout=WAIT_S)


def check_invariants(events: list[Any], final: AssistantMessage) -> None:
    """§2: one start first, one terminal last, block events on started blocks, coherent ends."""
    assert sum(isinstance(e, StartEvent) for e in events) <= 1
    if any(isinstance(e, StartEvent) for e in events):
        assert isinstance(events[0], StartEvent)
    terminal = [e for e in events if isinstance(e, DoneEvent | ErrorEvent)]
    assert len(terminal) == 1
    assert terminal[0] is events[-1]
    kinds: dict[int, str] = {}
    ended: set[int] = set()
    for event in events[1:-1]:
        kind, _, phase = event.type.rpartition("_")
        index = event.content_index
        block = event.partial.content[index]
        assert {"text": TextContent, "thinking": ThinkingContent,
                "toolcall": ToolCall}[kind] is type(block)
        if phase == "start":
            assert index == len(kinds)  # indices are handed out in order and never reused
            kinds[index] = kind
        else:
            assert kinds.get(index) == kind, f"{event.type} on a block never started"
            assert index not in ended, f"{event.type} after the block ended"
            if phase == "end":
                ended.add(index)
    last = events[-1]
    message = last.message if isinstance(last, DoneEvent) else last.error
    assert last.reason == message.stop_reason
    assert message == final
    assert final.stop_reason in (StopReason.ERROR, StopReason.ABORTED) or ended == set(kinds)
    assert (final.error_message is None) == isinstance(last, DoneEvent)


TEXT_REPLY = reply([TextContent("Hello test successful")], priced(21, 7), "stop",
                   "msg_01HCDu5LRGeP2o7s2xGmxyx8")
PARIS = ToolCall("toolu_01A09q90qw90lq917835lq9a", "get_weather", {"city": "Paris"})
TOKYO = ToolCall("toolu_01B7xK2mN4pQ6rS8tU0vW2yZ", "get_weather", {"city": "Tokyo"})
THOUGHT = "The user asks for 15 + 27. 15 + 27 = 42."

EXPECTED: dict[str, tuple[list[tuple[Any, ...]], AssistantMessage]] = {
    "text.sse": (
        [("start",), ("text_start", 0), ("text_delta", 0, "Hello test"),
         ("text_delta", 0, " successful"), ("text_end", 0, "Hello test successful"),
         ("done", "stop")],
        TEXT_REPLY,
    ),
    "tool_calls.sse": (
        [("start",), ("text_start", 0), ("text_delta", 0, "I'll check both cities."),
         ("text_end", 0, "I'll check both cities."),
         ("toolcall_start", 1), ("toolcall_delta", 1, ""),
         ("toolcall_delta", 1, '{"city": "Pa'), ("toolcall_delta", 1, 'ris"}'),
         ("toolcall_end", 1, PARIS),
         ("toolcall_start", 2), ("toolcall_delta", 2, '{"city": "To'),
         ("toolcall_delta", 2, 'kyo"}'), ("toolcall_end", 2, TOKYO),
         ("done", "toolUse")],
        reply([TextContent("I'll check both cities."), PARIS, TOKYO], priced(612, 104),
              "toolUse", "msg_01Qk7pBv3WnZ8xR2sT5yU9cD"),
    ),
    "thinking.sse": (
        [("start",), ("thinking_start", 0), ("thinking_delta", 0, "The user asks for 15 + 27."),
         ("thinking_delta", 0, " 15 + 27 = 42."), ("thinking_end", 0, THOUGHT),
         ("text_start", 1), ("text_delta", 1, "15 + 27 = 42."),
         ("text_end", 1, "15 + 27 = 42."), ("done", "stop")],
        reply([ThinkingContent(THOUGHT, SIGNATURE), TextContent("15 + 27 = 42.")],
              priced(48, 61), "stop", "msg_01Wm3nB5vC7xZ9aS1dF3gH5j"),
    ),
    # The redacted text arrives as one delta, so that a block is empty at its start (§2).
    "redacted_thinking.sse": (
        [("start",), ("thinking_start", 0), ("thinking_delta", 0, "[Reasoning redacted]"),
         ("thinking_end", 0, "[Reasoning redacted]"), ("text_start", 1),
         ("text_delta", 1, "15 + 27 = 42."), ("text_end", 1, "15 + 27 = 42."),
         ("done", "stop")],
        reply([ThinkingContent("[Reasoning redacted]", REDACTED_DATA, redacted=True),
               TextContent("15 + 27 = 42.")],
              priced(52, 87), "stop", "msg_01Xr7dT9kQ2wE4rT6yU8iO0p"),
    ),
    "error.sse": (
        [("start",), ("text_start", 0), ("text_delta", 0, "Once upon"), ("error", "error")],
        reply([TextContent("Once upon")], priced(15, 1), "error", "msg_01Rt5yU7iO9pA1sD3fG5hJ7k",
              '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'),
    ),
    "cache_usage.sse": (
        [("start",), ("text_start", 0), ("text_delta", 0, "Cached reply."),
         ("text_end", 0, "Cached reply."), ("done", "stop")],
        reply([TextContent("Cached reply.")], priced(12, 9, cache_read=20480, cache_write=1536),
              "stop", "msg_01Cc4hE6rD8sW0qA2zX4cV6b"),
    ),
    "refusal.sse": (
        [("start",), ("text_start", 0), ("text_delta", 0, "I can't help with that."),
         ("text_end", 0, "I can't help with that."), ("error", "error")],
        reply([TextContent("I can't help with that.")], priced(30, 6), "error",
              "msg_01Rf2uS4aL6dF8gH0jK2lZ4x", "The model refused to complete the request"),
    ),
    "max_tokens.sse": (
        [("start",), ("text_start", 0), ("text_delta", 0, "The history of Rome"),
         ("text_delta", 0, " begins"), ("text_end", 0, "The history of Rome begins"),
         ("done", "length")],
        reply([TextContent("The history of Rome begins")], priced(14, 5), "length",
              "msg_01Mx8tK0nB2vC4xZ6aS8dF0g"),
    ),
}
REPLAYS = [("lf", "whole"), ("lf", "bytewise"), ("lf", "random"), ("crlf", "whole"),
           ("crlf", "bytewise"), ("crlf", "random")]


def test_anthropic_fixture_files_are_all_covered() -> None:
    assert sorted(p.name for p in FIXTURES.glob("*.sse")) == sorted(EXPECTED)


@pytest.mark.parametrize(("framing", "chunking"), REPLAYS, ids=["-".join(r) for r in REPLAYS])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_anthropic_fixture_replays_to_the_expected_reply(mock_server, name, framing,
                                                         chunking) -> None:
    expected_events, expected_final = EXPECTED[name]
    _, baseline, _ = replay(mock_server, fixture(name))
    events, snaps, final = replay(mock_server, fixture(name), framing, chunking)
    assert [brief(e) for e in events] == expected_events
    assert untimed(final) == expected_final
    assert snaps == baseline  # every event and every partial state, not only the end
    check_invariants(events, final)


def test_anthropic_text_reply_is_priced_as_the_spec_says(sse_server) -> None:
    _, _, final = replay(sse_server, fixture("text.sse"))
    assert (final.usage.total_tokens, final.usage.cost.input, final.usage.cost.output) == (
        28, pytest.approx(6.3e-5), pytest.approx(1.05e-4))
    assert final.usage.cost.total == pytest.approx(1.68e-4)


def test_anthropic_cache_usage_keeps_values_that_message_delta_leaves_out(mock_server) -> None:
    _, _, final = replay(mock_server, fixture("cache_usage.sse"))
    assert (final.usage.input, final.usage.output, final.usage.cache_read,
            final.usage.cache_write) == (12, 9, 20480, 1536)
    cost = final.usage.cost
    assert (cost.input, cost.output, cost.cache_read, cost.cache_write, cost.total) == (
        pytest.approx(3.6e-5), pytest.approx(1.35e-4), pytest.approx(6.144e-3),
        pytest.approx(5.76e-3), pytest.approx(0.012075))


def test_anthropic_partials_grow_through_the_deltas(mock_server) -> None:
    _, snaps, _ = replay(mock_server, fixture("tool_calls.sse"))
    by_event = {repr(s[:-1]): s[-1] for s in snaps if s[0] != "done"}

    def partial(*event: Any) -> list[Any]:
        return by_event[repr(event)]

    assert partial("start") == []
    assert partial("text_start", 0) == [TextContent("")]
    assert partial("toolcall_start", 1)[1] == ToolCall(PARIS.id, "get_weather", {})
    assert partial("toolcall_delta", 1, "")[1].arguments == {}
    assert partial("toolcall_delta", 1, '{"city": "Pa')[1].arguments == {"city": "Pa"}
    assert partial("toolcall_end", 1, PARIS) == [TextContent("I'll check both cities."), PARIS]
    assert partial("toolcall_delta", 2, 'kyo"}')[2].arguments == {"city": "Tokyo"}


def test_anthropic_signature_arrives_without_an_event(mock_server) -> None:
    _, snaps, _ = replay(mock_server, fixture("thinking.sse"))
    deltas = [s for s in snaps if s[0] == "thinking_delta"]
    assert [s[-1][0].thinking_signature for s in deltas] == [None, None]
    [end] = [s for s in snaps if s[0] == "thinking_end"]
    assert end[-1] == [ThinkingContent(THOUGHT, SIGNATURE)]


@pytest.mark.parametrize(("reason", "message"), [
    ("sensitive", "Provider stopped with: sensitive"),
    ("compaction", "Unhandled stop reason: compaction"),
])
def test_anthropic_other_stop_reasons_end_in_an_error(mock_server, reason, message) -> None:
    body = fixture("text.sse").replace(b'"stop_reason":"end_turn"', f'"stop_reason":"{reason}"'
                                       .encode())
    events, _, final = replay(mock_server, body)
    assert brief(events[-1]) == ("error", "error")
    assert untimed(final) == attrs.evolve(TEXT_REPLY, stop_reason="error", error_message=message)


def test_anthropic_stream_without_a_stop_reason_is_an_error(mock_server) -> None:
    body = fixture("text.sse")
    body = body[: body.index(b"event: message_delta")]
    events, _, final = replay(mock_server, body)
    assert [brief(e) for e in events][-2:] == [("text_end", 0, "Hello test successful"),
                                               ("error", "error")]
    assert final.error_message == "Anthropic stream ended without a stop reason"
    assert final.usage == priced(21, 2)


# --- the request -------------------------------------------------------------------------------


def sent(server: ScriptedServer, context: Context, model: ac.Model | None = None,
         **opts: Any) -> Any:
    """Stream `text.sse` for `context` over HTTP; the request the server received."""
    server.sse(fixture("text.sse"))
    model = model or make_model(server.url)
    _, final = collect(model, context, options(**opts))
    assert untimed(final) == attrs.evolve(TEXT_REPLY, model=model.id)
    return server.requests[-1]


def body_for(context: Context, model: ac.Model | None = None, **opts: Any) -> dict[str, Any]:
    return build_body(model or make_model("http://127.0.0.1:9"), context, options(**opts))


def test_anthropic_request_url_headers_and_body(mock_server) -> None:
    first = AssistantMessage(
        [ThinkingContent("Two cities.", "sig-1"), TextContent("Checking."),
         ToolCall("toolu_1", "get_weather", {"city": "Paris"}),
         ToolCall("toolu_2", "get_weather", {"city": "Tokyo"})],
        API, "anthropic", MODEL_ID, stop_reason="toolUse")
    context = Context("You are terse.", [
        UserMessage("Weather in Paris and Tokyo?"), first,
        ToolResultMessage("toolu_1", "get_weather", [TextContent("18°C")]),
        ToolResultMessage("toolu_2", "get_weather", [TextContent("unreachable")], is_error=True),
    ], tools=[WEATHER])
    request = sent(mock_server, context, temperature=0.5, metadata={"user_id": "user-42"})
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert request.header("x-api-key") == KEY
    assert request.header("authorization") is None
    assert request.header("anthropic-version") == "2023-06-01"
    assert request.header("anthropic-beta") == BETAS
    assert request.header("content-type") == "application/json"
    assert request.json == {
        "model": MODEL_ID,
        "messages": [
            {"role": "user", "content": "Weather in Paris and Tokyo?"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Two cities.", "signature": "sig-1"},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                 "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_weather",
                 "input": {"city": "Tokyo"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18°C",
                 "is_error": False},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "unreachable",
                 "is_error": True, "cache_control": EPHEMERAL},
            ]},
        ],
        "max_tokens": 40192,
        "stream": True,
        "system": [{"type": "text", "text": "You are terse.", "cache_control": EPHEMERAL}],
        "tools": [{"name": "get_weather", "description": "Current weather for a city.",
                   "input_schema": {"type": "object",
                                    "properties": {"city": {"type": "string",
                                                            "description": "The city."}},
                                    "required": ["city"]}}],
        "thinking": {"type": "enabled", "budget_tokens": 8192},
        "metadata": {"user_id": "user-42"},
    }


def test_anthropic_oauth_token_is_sent_as_a_bearer(mock_server) -> None:
    token = "sk-ant-oat01-fake"  # an obvious fake with the OAuth prefix
    request = sent(mock_server, Context(None, [UserMessage("hi")]), api_key=token)
    assert request.header("authorization") == f"Bearer {token}"
    assert request.header("x-api-key") is None


ADAPTIVE = {"adaptive_thinking": True}
"""The `compat` of an adaptive-thinking model (Opus 4.6, Sonnet 4.6), which takes an effort."""


def test_anthropic_adaptive_model_gets_no_interleaved_beta(mock_server) -> None:
    model = make_model(mock_server.url, "claude-opus-4-6", compat=ADAPTIVE)
    request = sent(mock_server, Context(None, [UserMessage("hi")]), model, reasoning="high")
    assert request.header("anthropic-beta") == "fine-grained-tool-streaming-2025-05-14"
    assert (request.json["thinking"], request.json["output_config"]) == (
        {"type": "adaptive"}, {"effort": "high"})
    assert request.json["max_tokens"] == 32000
    assert headers_for(make_model("x", "claude-sonnet-4-6", compat=ADAPTIVE), KEY)[
        "anthropic-beta"] == "fine-grained-tool-streaming-2025-05-14"


def test_anthropic_model_id_alone_decides_nothing() -> None:
    # An Opus 4.6 of one's own, without `compat`, gets the defaults: a thinking budget.
    body = body_for(Context(None, [UserMessage("hi")]), make_model("x", "claude-opus-4-6"),
                    reasoning="xhigh")
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16384}
    assert "output_config" not in body


def test_anthropic_model_and_option_headers_are_merged_last(mock_server) -> None:
    model = make_model(mock_server.url, headers={"x-team": "model", "x-model-only": "1"})
    request = sent(mock_server, Context(None, [UserMessage("hi")]), model,
                   headers={"x-team": "options"})
    assert (request.header("x-team"), request.header("x-model-only")) == ("options", "1")
    assert request.header("x-api-key") == KEY


def test_anthropic_string_user_content_becomes_one_cached_block() -> None:
    body = body_for(Context("Be brief.", [UserMessage("hello")]))
    assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": EPHEMERAL}]
    assert body["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "hello", "cache_control": EPHEMERAL}]}]


def test_anthropic_cache_control_marks_only_the_last_user_message() -> None:
    context = Context(None, [
        UserMessage("one"),
        AssistantMessage([TextContent("two")], API, "anthropic", MODEL_ID),
        UserMessage([TextContent("three"), TextContent("four")]),
    ])
    assert body_for(context)["messages"] == [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": [{"type": "text", "text": "two"}]},
        {"role": "user", "content": [{"type": "text", "text": "three"},
                                     {"type": "text", "text": "four",
                                      "cache_control": EPHEMERAL}]},
    ]
    ending_with_assistant = Context(None, context.messages[:2])
    assert body_for(ending_with_assistant)["messages"] == [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": [{"type": "text", "text": "two"}]},
    ]


@pytest.mark.parametrize(("base_url", "retention", "control"), [
    ("https://api.anthropic.com", "long", {"type": "ephemeral", "ttl": "1h"}),
    ("https://api.anthropic.com", "short", EPHEMERAL),
    ("https://api.anthropic.com", None, EPHEMERAL),
    ("https://proxy.example.com", "long", EPHEMERAL),
])
def test_anthropic_cache_retention_sets_the_ttl(base_url, retention, control) -> None:
    body = body_for(Context("sys", [UserMessage("hi")]), make_model(base_url),
                    cache_retention=retention)
    assert body["system"][0]["cache_control"] == control
    assert body["messages"][-1]["content"][-1]["cache_control"] == control


def test_anthropic_cache_retention_none_sends_no_cache_control() -> None:
    body = body_for(Context("sys", [UserMessage("hi")]), make_model("https://api.anthropic.com"),
                    cache_retention="none")
    assert body["system"] == [{"type": "text", "text": "sys"}]
    assert body["messages"] == [{"role": "user", "content": "hi"}]


def test_anthropic_images_are_base64_blocks() -> None:
    context = Context(None, [UserMessage([TextContent("What is this?"),
                                          ImageContent(PNG, "image/png")])])
    assert body_for(context, cache_retention="none")["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
    ]}]


def test_anthropic_images_are_not_sent_to_a_text_only_model() -> None:
    context = Context(None, [UserMessage([TextContent("What is this?"),
                                          ImageContent(PNG, "image/png")])])
    model = make_model("http://127.0.0.1:9", input=["text"])
    assert body_for(context, model, cache_retention="none")["messages"] == [
        {"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "text", "text": "(image omitted: model does not support images)"},
        ]}]


def tool_turn(*calls: ToolCall, provider: str = "anthropic", api: str = API,
              model: str = MODEL_ID, content: list[Any] | None = None) -> AssistantMessage:
    return AssistantMessage([*(content or []), *calls], api, provider, model,
                            stop_reason="toolUse")


def test_anthropic_tool_result_images_become_a_block_list() -> None:
    chart = ImageContent(PNG, "image/png")
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    context = Context(None, [
        UserMessage("plot"),
        tool_turn(ToolCall("t1", "plot", {}), ToolCall("t2", "plot", {})),
        ToolResultMessage("t1", "plot", [chart]),
        ToolResultMessage("t2", "plot", [TextContent("A chart."), chart]),
    ])
    results = body_for(context, cache_retention="none")["messages"][-1]
    assert results == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "is_error": False,
         "content": [{"type": "text", "text": "(see attached image)"}, image]},
        {"type": "tool_result", "tool_use_id": "t2", "is_error": False,
         "content": [{"type": "text", "text": "A chart."}, image]},
    ]}
    text_only = body_for(context, make_model("http://127.0.0.1:9", input=["text"]),
                         cache_retention="none")["messages"][-1]
    assert [r["content"] for r in text_only["content"]] == [
        "(tool image omitted: model does not support images)",
        "A chart.\n(tool image omitted: model does not support images)",
    ]


def test_anthropic_consecutive_tool_results_share_one_user_message() -> None:
    context = Context(None, [
        UserMessage("go"),
        tool_turn(ToolCall("a", "f", {"n": 1}), ToolCall("b", "f", {"n": 2})),
        ToolResultMessage("a", "f", [TextContent("one"), TextContent("line two")]),
        ToolResultMessage("b", "f", [TextContent("boom")], is_error=True),
        AssistantMessage([TextContent("Done.")], API, "anthropic", MODEL_ID),
        UserMessage("again"),
        tool_turn(ToolCall("c", "f", {})),
        ToolResultMessage("c", "f", [TextContent("three")]),
    ])
    messages = body_for(context, cache_retention="none")["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user",
                                             "assistant", "user"]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "a", "content": "one\nline two",
         "is_error": False},
        {"type": "tool_result", "tool_use_id": "b", "content": "boom", "is_error": True},
    ]
    assert messages[6]["content"] == [
        {"type": "tool_result", "tool_use_id": "c", "content": "three", "is_error": False}]


def test_anthropic_assistant_replay_to_the_same_model() -> None:
    turn = AssistantMessage([
        ThinkingContent("signed thought", "sig-abc"),
        ThinkingContent("cut off by an abort"),
        ThinkingContent("empty signature", ""),
        ThinkingContent("[Reasoning redacted]", REDACTED_DATA, redacted=True),
        ThinkingContent("   ", "sig-blank"),
        TextContent(""),
        TextContent(" \n "),
        TextContent("Answer."),
        ToolCall("toolu_9", "get_weather", {"city": "Oslo", "days": [1, 2]}),
    ], API, "anthropic", MODEL_ID, stop_reason="toolUse")
    context = Context(None, [UserMessage("q"), turn,
                             ToolResultMessage("toolu_9", "get_weather", [TextContent("cold")])])
    assert body_for(context, cache_retention="none")["messages"][1] == {
        "role": "assistant", "content": [
            {"type": "thinking", "thinking": "signed thought", "signature": "sig-abc"},
            {"type": "text", "text": "cut off by an abort"},
            {"type": "text", "text": "empty signature"},
            {"type": "redacted_thinking", "data": REDACTED_DATA},
            {"type": "text", "text": "Answer."},
            {"type": "tool_use", "id": "toolu_9", "name": "get_weather",
             "input": {"city": "Oslo", "days": [1, 2]}},
        ]}


def test_anthropic_blank_messages_are_skipped() -> None:
    context = Context(None, [
        UserMessage("   "),
        UserMessage([TextContent(""), TextContent("kept")]),
        AssistantMessage([TextContent("  "), ThinkingContent("")], API, "anthropic", MODEL_ID),
        UserMessage([TextContent(" ")]),
        UserMessage("last"),
    ])
    assert body_for(context, cache_retention="none")["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "kept"}]},
        {"role": "user", "content": "last"},
    ]


def test_anthropic_messages_from_another_model_are_handed_off() -> None:
    long_id = "call_abc|fc_def/ghi" + "x" * 80
    safe_id = ("call_abc_fc_def_ghi" + "x" * 80)[:64]
    foreign = tool_turn(
        ToolCall(long_id, "get_weather", {"city": "Paris"}, thought_signature="ts-1"),
        provider="openai", api="openai-responses", model="gpt-5",
        content=[ThinkingContent("Plan: call the tool.", "encrypted"),
                 ThinkingContent("[Reasoning redacted]", "opaque", redacted=True),
                 TextContent("Calling.", text_signature="msg_1")],
    )
    context = Context(None, [UserMessage("weather?"), foreign,
                             ToolResultMessage(long_id, "get_weather", [TextContent("18°C")])])
    messages = body_for(context, cache_retention="none")["messages"]
    assert messages[1:] == [
        {"role": "assistant", "content": [
            {"type": "text", "text": "Plan: call the tool."},
            {"type": "text", "text": "Calling."},
            {"type": "tool_use", "id": safe_id, "name": "get_weather", "input": {"city": "Paris"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": safe_id, "content": "18°C", "is_error": False},
        ]},
    ]
    assert len(safe_id) == 64


def test_anthropic_failed_turns_are_not_replayed() -> None:
    failed = AssistantMessage([TextContent("Once upon")], API, "anthropic", MODEL_ID,
                              stop_reason="error", error_message="overloaded")
    context = Context(None, [UserMessage("story"), failed, UserMessage("again")])
    assert body_for(context, cache_retention="none")["messages"] == [
        {"role": "user", "content": "story"}, {"role": "user", "content": "again"}]


@pytest.mark.parametrize(("level", "budgets", "model_max", "max_tokens", "want_max",
                          "want_budget"), [
    ("minimal", None, 64000, None, 33024, 1024),
    ("low", None, 64000, None, 34048, 2048),
    ("medium", None, 64000, None, 40192, 8192),
    ("high", None, 64000, None, 48384, 16384),
    ("xhigh", None, 64000, None, 48384, 16384),
    ("medium", {"medium": 3000}, 64000, None, 35000, 3000),
    ("high", {"medium": 3000}, 64000, None, 48384, 16384),
    ("high", None, 64000, 1000, 17384, 16384),
    ("high", None, 8000, None, 8000, 6976),
    ("medium", None, 1500, None, 1500, 476),
    ("minimal", None, 1000, None, 1000, 0),
])
def test_anthropic_thinking_budgets(level, budgets, model_max, max_tokens, want_max,
                                    want_budget) -> None:
    model = make_model("http://127.0.0.1:9", max_tokens=model_max)
    body = body_for(Context(None, [UserMessage("hi")]), model, reasoning=level,
                    thinking_budgets=budgets, max_tokens=max_tokens, temperature=0.7)
    assert (body["max_tokens"], body["thinking"]) == (
        want_max, {"type": "enabled", "budget_tokens": want_budget})
    assert "temperature" not in body
    assert "output_config" not in body


OPUS_ADAPTIVE = {"adaptiveThinking": True, "xhighEffort": "max"}  # camelCase works too


@pytest.mark.parametrize(("compat", "level", "effort"), [
    (OPUS_ADAPTIVE, "minimal", "low"),
    (OPUS_ADAPTIVE, "low", "low"),
    (OPUS_ADAPTIVE, "medium", "medium"),
    (OPUS_ADAPTIVE, "high", "high"),
    (OPUS_ADAPTIVE, "xhigh", "max"),
    (ADAPTIVE, "xhigh", "high"),
    (ADAPTIVE, "medium", "medium"),
], ids=["opus-minimal", "opus-low", "opus-medium", "opus-high", "opus-xhigh", "sonnet-xhigh",
        "sonnet-medium"])
def test_anthropic_adaptive_models_send_an_effort(compat, level, effort) -> None:
    model = make_model("http://127.0.0.1:9", "claude-x", compat=compat)
    body = body_for(Context(None, [UserMessage("hi")]), model, reasoning=level, temperature=0.7)
    assert (body["thinking"], body["output_config"]) == ({"type": "adaptive"}, {"effort": effort})
    assert "temperature" not in body


@pytest.mark.parametrize(("reasoning", "model_reasons"), [
    (None, True), ("off", True), ("high", False),
])
def test_anthropic_temperature_is_sent_without_thinking(reasoning, model_reasons) -> None:
    model = make_model("http://127.0.0.1:9", reasoning=model_reasons)
    body = body_for(Context(None, [UserMessage("hi")]), model, reasoning=reasoning,
                    temperature=0.25)
    assert body["temperature"] == 0.25
    assert "thinking" not in body
    assert body["max_tokens"] == 32000


def test_anthropic_metadata_user_id_only() -> None:
    context = Context(None, [UserMessage("hi")])
    assert body_for(context, metadata={"user_id": "u-1", "other": "x"})["metadata"] == {
        "user_id": "u-1"}
    assert "metadata" not in body_for(context, metadata={"other": "x"})
    assert "metadata" not in body_for(context)


def test_anthropic_on_payload_replaces_the_body(mock_server) -> None:
    seen: list[Any] = []

    def on_payload(payload: Any, model: ac.Model) -> Any:
        seen.append((payload["max_tokens"], model.id))
        return {**payload, "max_tokens": 123}

    request = sent(mock_server, Context(None, [UserMessage("hi")]), on_payload=on_payload)
    assert seen == [(40192, MODEL_ID)]
    assert request.json["max_tokens"] == 123


# --- errors, retries, abort ---------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 529])
def test_anthropic_http_error_is_a_lone_error_event(mock_server, status) -> None:
    body = fixture(f"http_{status}.json")
    mock_server.status(status, body)
    events, final = collect(make_model(mock_server.url), Context(None, [UserMessage("hi")]),
                            options(max_retries=0))
    assert [brief(e) for e in events] == [("error", "error")]
    assert untimed(final) == reply([], Usage(), "error", None, f"{status} {body.decode()}")
    check_invariants(events, final)
    assert len(mock_server.requests) == 1


def test_anthropic_error_with_an_empty_message_says_what_it_holds(mock_server) -> None:
    body = '{"type":"error","error":{"type":"api_error","message":""}}'
    mock_server.status(500, body)
    _, final = collect(make_model(mock_server.url), Context(None, [UserMessage("hi")]),
                       options(max_retries=0))
    assert final.error_message == f"500 {body}"  # the whole body, as the SDK words it


def test_anthropic_context_overflow_message_keeps_the_provider_text(mock_server) -> None:
    mock_server.status(400, fixture("http_400.json"))
    _, final = collect(make_model(mock_server.url), Context(None, [UserMessage("hi")]), options())
    assert final.error_message is not None
    assert final.error_message.startswith('400 {"type":"error","error":{"type":')
    assert "prompt is too long: 213462 tokens > 200000 maximum" in final.error_message
    assert len(mock_server.requests) == 1  # 400 is not retried


@pytest.mark.parametrize(("status", "body"), [
    (529, fixture("http_529.json")),
    (503, b"upstream connect error or disconnect/reset before headers"),
])
def test_anthropic_retries_then_streams(mock_server, backoffs, status, body) -> None:
    mock_server.status(status, body, {"Retry-After": "0"})
    mock_server.sse(fixture("text.sse"))
    events, final = collect(make_model(mock_server.url), Context(None, [UserMessage("hi")]),
                            options())
    assert [brief(e) for e in events] == EXPECTED["text.sse"][0]
    assert untimed(final) == TEXT_REPLY
    assert len(mock_server.requests) == 2
    assert mock_server.requests[0].json == mock_server.requests[1].json
    assert backoffs == []  # the server's delay was used


def test_anthropic_abort_mid_stream(sse_server) -> None:
    body = fixture("text.sse")
    prefix = body[: body.index(b"event: content_block_delta", body.index(b"Hello test"))]
    gone = sse_server.slow_sse([prefix], interval_s=HOLD)  # then holds the stream open
    controller = ac.AbortController()
    got_delta = threading.Event()
    aborted_at: list[float] = []

    def abort_after_first_delta() -> None:
        if got_delta.wait(WAIT_S):
            aborted_at.append(time.monotonic())
            controller.abort()

    aborter = threading.Thread(target=abort_after_first_delta, name="test-aborter")
    aborter.start()
    events: list[Any] = []
    try:
        # the default read timeout (ten minutes): only the abort can end the read
        stream = ac.stream(make_model(sse_server.url), Context(None, [UserMessage("hi")]),
                           options(signal=controller.signal, timeout=None))
        for event in stream:
            events.append(event)
            if isinstance(event, ac.TextDeltaEvent):
                got_delta.set()
        final = stream.result(timeout=WAIT_S)
    finally:
        got_delta.set()
        aborter.join(WAIT_S)
    assert not aborter.is_alive()
    assert [brief(e) for e in events] == [("start",), ("text_start", 0),
                                          ("text_delta", 0, "Hello test"), ("error", "aborted")]
    assert untimed(final) == reply([TextContent("Hello test")], priced(21, 2), "aborted",
                                   "msg_01HCDu5LRGeP2o7s2xGmxyx8", "Request was aborted")
    check_invariants(events, final)
    assert gone.seen.wait(WAIT_S)  # the client closed the connection the server held open...
    assert gone.at is not None
    assert gone.at >= aborted_at[0]  # ...after the abort


def test_anthropic_abort_before_the_request_sends_nothing(sse_server) -> None:
    controller = ac.AbortController()
    controller.abort()
    events, final = collect(make_model(sse_server.url), Context(None, [UserMessage("hi")]),
                            options(signal=controller.signal))
    assert [brief(e) for e in events] == [("error", "aborted")]
    assert final.error_message == "Request was aborted"
    assert sse_server.requests == []
