"""The OpenAI Responses provider (`openai-responses`, spec §6) against the scripted server.

Every fixture is replayed whole, one byte at a time, in random chunks and with CRLF framing, and
must give the same events and final message. Request bodies are read back from the server.
Translation is tested on `mock_server` (no socket); one whole request and reply, a connection
cut mid-stream and aborts go over real HTTP to 127.0.0.1 (`sse_server`).
"""

from __future__ import annotations

import json
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
    AssistantMessage,
    Cost,
    DoneEvent,
    ErrorEvent,
    ImageContent,
    StartEvent,
    StopReason,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agentcore.providers.openai_responses import build_body

FIXTURES = paths.FIXTURES / "openai_responses"
SSE_NAMES = sorted(p.stem for p in FIXTURES.glob("*.sse"))
WAIT_S = 5.0  # the timeout on every wait for another thread
KEY = "sk-test"
API, PROVIDER, MODEL_ID = "openai-responses", "openai", "gpt-5-mini"
PRICES = ac.ModelCost(0.25, 2.0, 0.025)
USER_HI = [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]
WEATHER = ac.Tool("get_weather", "Get the weather for a city", {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})

Event = Any  # an AssistantMessageEvent


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def make_model(base_url: str, **changes: Any) -> ac.Model:
    fields: dict[str, Any] = {"reasoning": True, "cost": PRICES}
    fields.update(changes)
    model_id = fields.pop("id", MODEL_ID)
    return ac.Model(model_id, "GPT-5 mini", API, PROVIDER, base_url, **fields)


def make_options(**changes: Any) -> ac.StreamOptions:
    fields: dict[str, Any] = {"api_key": KEY, "reasoning": "medium"}
    fields.update(changes)
    return ac.StreamOptions(**fields)


def snapshot(event: Event) -> Event:
    """The event with its live partial frozen as it is now, and timestamps zeroed."""
    if isinstance(event, DoneEvent):
        return attrs.evolve(event, message=attrs.evolve(event.message, timestamp=0))
    if isinstance(event, ErrorEvent):
        return attrs.evolve(event, error=attrs.evolve(event.error, timestamp=0))
    partial = event.partial
    return attrs.evolve(event, partial=attrs.evolve(partial, content=list(partial.content),
                                                    timestamp=0))


def collect(stream: ac.AssistantMessageEventStream) -> list[Event]:
    return [snapshot(event) for event in stream]


def replay(server: ScriptedServer, body: bytes, *, chunking: str = "whole", seed: int = 0,
           model: ac.Model | None = None, context: ac.Context | None = None,
           options: ac.StreamOptions | None = None) -> list[Event]:
    server.sse(body, chunking=chunking, seed=seed)  # type: ignore[arg-type]
    events = collect(ac.stream(model or make_model(server.url),
                               context or ac.Context("You are terse.", [UserMessage("hi")]),
                               options or make_options()))
    check_invariants(events)
    return events


def sent_body(server: ScriptedServer, context: ac.Context, model: ac.Model | None = None,
              options: ac.StreamOptions | None = None) -> dict[str, Any]:
    """The JSON body the server received for one request (answered with the text fixture)."""
    server.sse(fixture("text.sse"))
    message = ac.complete(model or make_model(server.url), context, options or make_options())
    assert message.stop_reason is StopReason.STOP, message.error_message
    body: dict[str, Any] = server.requests[-1].json
    return body


def reply_args(server: ScriptedServer, name: str) -> tuple[ac.Model, ac.Context, ac.StreamOptions]:
    server.sse(fixture(name))
    return make_model(server.url), ac.Context(None, [UserMessage("hi")]), make_options()


def assistant(content: list[Any], model: str = MODEL_ID, provider: str = PROVIDER,
              api: str = API, stop_reason: str = "stop") -> AssistantMessage:
    return AssistantMessage(content, api, provider, model, stop_reason=stop_reason)


def sse(data: dict[str, Any]) -> bytes:
    """One Responses event, framed as OpenAI frames them."""
    return f"event: {data['type']}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def completed(status: str = "completed", **extra: Any) -> bytes:
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 2, "total_tokens": 12}
    return sse({"type": "response.completed",
                "response": {"id": "resp_x", "status": status, "usage": usage, **extra}})


def check_invariants(events: list[Event]) -> None:
    """§2: start first, one terminal last, deltas/ends refer to started blocks, dict arguments."""
    assert events, "a stream gives at least its terminal event"
    terminal = [i for i, e in enumerate(events) if isinstance(e, (DoneEvent, ErrorEvent))]
    assert terminal == [len(events) - 1]
    starts = [i for i, e in enumerate(events) if isinstance(e, StartEvent)]
    assert starts == [0] or (starts == [] and len(events) == 1 and isinstance(events[0],
                                                                              ErrorEvent))
    kinds = {TextStartEvent: "text", TextDeltaEvent: "text", TextEndEvent: "text",
             ThinkingStartEvent: "thinking", ThinkingDeltaEvent: "thinking",
             ThinkingEndEvent: "thinking", ToolCallStartEvent: "toolCall",
             ToolCallDeltaEvent: "toolCall", ToolCallEndEvent: "toolCall"}
    block_types = {"text": TextContent, "thinking": ThinkingContent, "toolCall": ToolCall}
    opened: dict[int, str] = {}
    closed: set[int] = set()
    for event in events[1:-1]:
        kind = kinds[type(event)]
        index = event.content_index
        if isinstance(event, (TextStartEvent, ThinkingStartEvent, ToolCallStartEvent)):
            assert index == len(opened), "blocks are appended in order"
            opened[index] = kind
        else:
            assert opened.get(index) == kind, f"{event.type} for a block never started"
            assert index not in closed, f"{event.type} after the block ended"
            if isinstance(event, (TextEndEvent, ThinkingEndEvent, ToolCallEndEvent)):
                closed.add(index)
        assert isinstance(event.partial.content[index], block_types[kind])
    last = events[-1]
    final = last.message if isinstance(last, DoneEvent) else last.error
    assert last.reason == final.stop_reason
    if isinstance(last, DoneEvent):
        assert last.reason in (StopReason.STOP, StopReason.LENGTH, StopReason.TOOL_USE)
        assert final.error_message is None
        assert closed == set(opened), "done closes every block"
    else:
        assert last.reason in (StopReason.ERROR, StopReason.ABORTED)
        assert final.error_message
    messages = [e.partial for e in events if hasattr(e, "partial")] + [final]
    for message in messages:
        for block in message.content:
            if isinstance(block, ToolCall):
                assert isinstance(block.arguments, dict)
    usage = final.usage
    assert usage.total_tokens == usage.input + usage.output + usage.cache_read + usage.cache_write


# --- expected results, written out from §6.4 ------------------------------------------------------


def P(*blocks: Any) -> AssistantMessage:
    """A partial as events carry it (its usage and stop reason are never filled in)."""
    return AssistantMessage(list(blocks), API, PROVIDER, MODEL_ID, timestamp=0)


def final(content: list[Any], usage: Usage, reason: StopReason, response_id: str | None,
          error: str | None = None) -> AssistantMessage:
    return AssistantMessage(content, API, PROVIDER, MODEL_ID, usage=usage, stop_reason=reason,
                            error_message=error, response_id=response_id, timestamp=0)


def priced(input: int, output: int, cache_read: int = 0, factor: float = 1.0) -> Usage:
    """Usage at gpt-5-mini prices ($0.25 / $2 / $0.025 per M), times a service-tier factor."""
    parts = [0.25 * input / 1e6 * factor, 2.0 * output / 1e6 * factor,
             0.025 * cache_read / 1e6 * factor, 0.0]
    return Usage(input, output, cache_read, 0, input + output + cache_read,
                 Cost(*parts, total=sum(parts)))


def text_signature(item_id: str) -> str:
    return json.dumps({"v": 1, "id": item_id}, separators=(",", ":"))


def reasoning_item_text() -> str:
    """The reasoning item exactly as the server sent it in `response.output_item.done`."""
    for line in fixture("reasoning.sse").decode().splitlines():
        if '"response.output_item.done"' in line and '"type":"reasoning"' in line:
            return line[line.index('"item":') + len('"item":'):-1]
    raise AssertionError("no reasoning item in the fixture")


T = TextContent
SUMMARY = "**Adding numbers**\n\nI need to add 15 and 27, which gives 42."
PARIS_ID = "call_k3JH9aB2cD4eF6gH8iJ0lM1n|fc_68b0c1d2e3f40a1b000000011"
TOKYO_ID = "call_Pq2RS3tU4vW5xY6zA7bC8dE9|fc_68b0c1d2e3f40a1b000000012"


def expected_text() -> list[Event]:
    sig = text_signature("msg_68b0c1d2e3f40a1b000000002")
    done = T("Hello test successful", sig)
    return [
        StartEvent(P()),
        TextStartEvent(0, P(T(""))),
        TextDeltaEvent(0, "Hello", P(T("Hello"))),
        TextDeltaEvent(0, " test successful", P(T("Hello test successful"))),
        TextEndEvent(0, "Hello test successful", P(done)),
        DoneEvent(StopReason.STOP, final([done], priced(28, 5), StopReason.STOP,
                                         "resp_68b0c1d2e3f40a1b000000001")),
    ]


def expected_tool_calls() -> list[Event]:
    paris = ToolCall(PARIS_ID, "get_weather", {"city": "Paris"})
    tokyo = ToolCall(TOKYO_ID, "get_weather", {"city": "Tokyo"})
    return [
        StartEvent(P()),
        ToolCallStartEvent(0, P(ToolCall(PARIS_ID, "get_weather"))),
        ToolCallDeltaEvent(0, '{"city":', P(ToolCall(PARIS_ID, "get_weather"))),
        ToolCallDeltaEvent(0, '"Paris"}', P(paris)),
        ToolCallEndEvent(0, paris, P(paris)),
        ToolCallStartEvent(1, P(paris, ToolCall(TOKYO_ID, "get_weather"))),
        ToolCallDeltaEvent(1, '{"city":', P(paris, ToolCall(TOKYO_ID, "get_weather"))),
        ToolCallDeltaEvent(1, '"Tokyo"}', P(paris, tokyo)),
        ToolCallEndEvent(1, tokyo, P(paris, tokyo)),
        DoneEvent(StopReason.TOOL_USE, final([paris, tokyo], priced(58, 46), StopReason.TOOL_USE,
                                             "resp_68b0c1d2e3f40a1b000000010")),
    ]


def expected_reasoning() -> list[Event]:
    first, second = "**Adding numbers**\n\nI need to add", " 15 and 27, which gives 42."
    thought = ThinkingContent(SUMMARY, reasoning_item_text())
    answer = T("15 + 27 = 42.", text_signature("msg_68b0c1d2e3f40a1b000000022"))
    return [
        StartEvent(P()),
        ThinkingStartEvent(0, P(ThinkingContent(""))),
        ThinkingDeltaEvent(0, first, P(ThinkingContent(first))),
        ThinkingDeltaEvent(0, second, P(ThinkingContent(first + second))),
        ThinkingDeltaEvent(0, "\n\n", P(ThinkingContent(first + second + "\n\n"))),
        ThinkingEndEvent(0, SUMMARY, P(thought)),  # the item's summary is authoritative
        TextStartEvent(1, P(thought, T(""))),
        TextDeltaEvent(1, "15 + 27 = 42.", P(thought, T("15 + 27 = 42."))),
        TextEndEvent(1, "15 + 27 = 42.", P(thought, answer)),
        DoneEvent(StopReason.STOP, final([thought, answer], priced(25, 84), StopReason.STOP,
                                         "resp_68b0c1d2e3f40a1b000000020")),
    ]


def expected_mid_stream_error(message: str) -> list[Event]:
    return [
        StartEvent(P()),
        TextStartEvent(0, P(T(""))),
        TextDeltaEvent(0, "Once upon", P(T("Once upon"))),
        ErrorEvent(StopReason.ERROR, final([T("Once upon")], Usage(), StopReason.ERROR,
                                           "resp_68b0c1d2e3f40a1b000000030", message)),
    ]


def expected_incomplete() -> list[Event]:
    done = T("The history of Rome begins", text_signature("msg_68b0c1d2e3f40a1b000000041"))
    return [
        StartEvent(P()),
        TextStartEvent(0, P(T(""))),
        TextDeltaEvent(0, "The history of", P(T("The history of"))),
        TextDeltaEvent(0, " Rome begins", P(T("The history of Rome begins"))),
        TextEndEvent(0, "The history of Rome begins", P(done)),
        DoneEvent(StopReason.LENGTH, final([done], priced(14, 16), StopReason.LENGTH,
                                           "resp_68b0c1d2e3f40a1b000000040")),
    ]


def expected_cached_usage() -> list[Event]:
    done = T("Cached reply.", text_signature("msg_68b0c1d2e3f40a1b000000051"))
    return [
        StartEvent(P()),
        TextStartEvent(0, P(T(""))),
        TextDeltaEvent(0, "Cached", P(T("Cached"))),
        TextDeltaEvent(0, " reply.", P(T("Cached reply."))),
        TextEndEvent(0, "Cached reply.", P(done)),
        # input excludes the 1920 cached tokens; the flex tier halves every cost part
        DoneEvent(StopReason.STOP, final([done], priced(86, 12, 1920, factor=0.5),
                                         StopReason.STOP, "resp_68b0c1d2e3f40a1b000000050")),
    ]


EXPECTED: dict[str, Callable[[], list[Event]]] = {
    "text": expected_text,
    "tool_calls": expected_tool_calls,
    "reasoning": expected_reasoning,
    "error_event": lambda: expected_mid_stream_error(
        "Error Code server_error: The server had an error processing your request. Sorry about "
        "that! You can retry your request."),
    "failed": lambda: expected_mid_stream_error(
        "server_error: An error occurred while processing your request."),
    "incomplete": expected_incomplete,
    "cached_usage": expected_cached_usage,
}

DELIVERIES = [
    pytest.param("whole", 0, False, id="whole"),
    pytest.param("bytewise", 0, False, id="bytewise"),
    pytest.param("random", 1, False, id="random-1"),
    pytest.param("random", 2, False, id="random-2"),
    pytest.param("random", 3, False, id="random-3"),
    pytest.param("whole", 0, True, id="crlf-whole"),
    pytest.param("bytewise", 0, True, id="crlf-bytewise"),
    pytest.param("random", 4, True, id="crlf-random-4"),
]


# --- replaying the fixtures -----------------------------------------------------------------------


def test_responses_every_fixture_has_an_expectation() -> None:
    assert sorted(EXPECTED) == SSE_NAMES


@pytest.mark.parametrize(("chunking", "seed", "crlf"), DELIVERIES)
@pytest.mark.parametrize("name", SSE_NAMES)
def test_responses_fixture_gives_the_expected_events(mock_server, name, chunking, seed,
                                                     crlf) -> None:
    body = fixture(f"{name}.sse")
    if crlf:
        body = body.replace(b"\n", b"\r\n")
    assert replay(mock_server, body, chunking=chunking, seed=seed) == EXPECTED[name]()


def test_responses_reasoning_usage_and_cost_at_gpt5_mini_prices(mock_server) -> None:
    message = replay(mock_server, fixture("reasoning.sse"))[-1].message
    assert (message.usage.input, message.usage.output, message.usage.total_tokens) == (25, 84, 109)
    assert message.usage.cost.input == pytest.approx(6.25e-6)
    assert message.usage.cost.output == pytest.approx(1.68e-4)
    assert message.usage.cost.total == pytest.approx(6.25e-6 + 1.68e-4)


def test_responses_reasoning_signature_is_the_whole_item(mock_server) -> None:
    thought = replay(mock_server, fixture("reasoning.sse"))[-1].message.content[0]
    item = json.loads(thought.thinking_signature)
    assert item["type"] == "reasoning"
    assert item["id"] == "rs_68b0c1d2e3f40a1b000000021"
    assert item["encrypted_content"].startswith("gAAAAAB")
    assert item["summary"] == [{"type": "summary_text", "text": SUMMARY}]
    assert thought.thinking_signature == json.dumps(item, separators=(",", ":"))  # compact


def test_responses_flex_tier_halves_every_cost_part(mock_server) -> None:
    usage = replay(mock_server, fixture("cached_usage.sse"))[-1].message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.total_tokens) == (86, 12, 1920, 2018)
    assert usage.cost.input == pytest.approx(86 * 0.25e-6 / 2)
    assert usage.cost.output == pytest.approx(12 * 2e-6 / 2)
    assert usage.cost.cache_read == pytest.approx(1920 * 0.025e-6 / 2)
    assert usage.cost.total == pytest.approx((86 * 0.25e-6 + 12 * 2e-6 + 1920 * 0.025e-6) / 2)


def test_responses_priority_tier_doubles_the_cost(mock_server) -> None:
    body = fixture("text.sse").replace(b'"service_tier":"default"', b'"service_tier":"priority"')
    usage = replay(mock_server, body)[-1].message.usage
    assert usage == priced(28, 5, factor=2.0)


def test_responses_partial_is_one_live_message_per_reply(mock_server) -> None:
    mock_server.sse(fixture("tool_calls.sse"))
    events = list(ac.stream(make_model(mock_server.url), ac.Context(None, [UserMessage("hi")]),
                            make_options()))
    partials = {id(e.partial) for e in events if hasattr(e, "partial")}
    assert len(partials) == 1
    live, message = events[0].partial, events[-1].message
    assert message.content == live.content
    assert message.content is not live.content  # the final message is a value of its own


# --- the request ----------------------------------------------------------------------------------


def test_responses_request_url_headers_and_body(sse_server) -> None:
    model = make_model(f"{sse_server.url}/v1/")
    context = ac.Context("You are terse.", [UserMessage("hi")])
    sse_server.sse(fixture("text.sse"))
    assert ac.complete(model, context, make_options()).stop_reason is StopReason.STOP
    [seen] = sse_server.requests
    assert (seen.method, seen.path) == ("POST", "/v1/responses")
    assert seen.header("authorization") == f"Bearer {KEY}"
    assert seen.header("content-type") == "application/json"
    assert seen.json == {
        "model": MODEL_ID,
        "input": [{"role": "developer", "content": "You are terse."}, *USER_HI],
        "stream": True,
        "store": False,
        "max_output_tokens": 16_384,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
    }
    assert seen.body == json.dumps(seen.json, separators=(",", ":")).encode()  # compact JSON


def test_responses_system_role_for_a_model_without_reasoning(mock_server) -> None:
    model = make_model(mock_server.url, id="gpt-4o", reasoning=False)
    body = sent_body(mock_server, ac.Context("Be brief.", [UserMessage("hi")]), model,
                     make_options(reasoning="high"))
    assert body["input"][0] == {"role": "system", "content": "Be brief."}
    assert "reasoning" not in body
    assert "include" not in body


def test_responses_no_system_item_without_a_system_prompt(mock_server) -> None:
    body = sent_body(mock_server, ac.Context(None, [UserMessage("hi")]))
    assert body["input"] == USER_HI


def catalogued(model_id: str) -> ac.Model:
    """The catalogue's `openai` model `model_id`, at a local address (nothing is sent)."""
    return attrs.evolve(ac.get_model("openai", model_id), base_url="http://127.0.0.1:9")


@pytest.mark.parametrize(("level", "model", "effort"), [
    ("minimal", catalogued("gpt-5-mini"), "minimal"),
    ("low", catalogued("gpt-5-mini"), "low"),
    ("medium", catalogued("gpt-5-mini"), "medium"),
    ("high", catalogued("gpt-5-mini"), "high"),
    ("xhigh", catalogued("gpt-5-mini"), "high"),  # only gpt-5.2+ knows xhigh
    ("xhigh", catalogued("gpt-5.2"), "xhigh"),
    ("low", catalogued("o4-mini"), "low"),
    ("xhigh", make_model("x", id="gpt-5.4", compat={"xhighEffort": "xhigh"}), "xhigh"),
    ("xhigh", make_model("x", id="gpt-5.4"), "high"),  # the id alone says nothing
], ids=lambda value: value.id if isinstance(value, ac.Model) else value)
def test_responses_reasoning_effort_per_level(level, model, effort) -> None:
    body = build_body(model, ac.Context(None, [UserMessage("hi")]), make_options(reasoning=level))
    assert body["reasoning"] == {"effort": effort, "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]


@pytest.mark.parametrize(("model", "reasoning"), [
    # With reasoning off, gpt-5 models are asked for the least effort they accept: "minimal"
    # for gpt-5, "none" from gpt-5.1 on (the catalogue's `lowest_effort`); a model without
    # one (gpt-5-pro only reasons at "high") gets nothing.
    (catalogued("gpt-5-mini"), {"effort": "minimal"}),
    (catalogued("gpt-5"), {"effort": "minimal"}),
    (catalogued("gpt-5.1"), {"effort": "none"}),
    (catalogued("gpt-5.2"), {"effort": "none"}),
    (make_model("x", id="gpt-5.2-mini", compat={"lowest_effort": "none"}), {"effort": "none"}),
    (make_model("x", id="gpt-5-pro"), None),
    (catalogued("o4-mini"), None),
], ids=lambda value: value.id if isinstance(value, ac.Model) else str(value))
@pytest.mark.parametrize("level", [None, "off"])
def test_responses_reasoning_off(model, reasoning, level) -> None:
    body = build_body(model, ac.Context(None, [UserMessage("hi")]), make_options(reasoning=level))
    assert body.get("reasoning") == reasoning
    assert "include" not in body
    assert body["input"] == USER_HI  # no "# Juice" message


def test_responses_user_text_and_images(mock_server) -> None:
    context = ac.Context(None, [UserMessage([T("look"), ImageContent("aGk=", "image/png"),
                                             ImageContent("aG8=", "image/jpeg")])])
    body = sent_body(mock_server, context, make_model(mock_server.url, input=["text", "image"]))
    assert body["input"] == [{"role": "user", "content": [
        {"type": "input_text", "text": "look"},
        {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,aGk="},
        {"type": "input_image", "detail": "auto", "image_url": "data:image/jpeg;base64,aG8="},
    ]}]


def test_responses_user_images_become_one_note_for_a_text_only_model(mock_server) -> None:
    context = ac.Context(None, [UserMessage([T("look"), ImageContent("aGk=", "image/png"),
                                             ImageContent("aG8=", "image/jpeg")]),
                                UserMessage([ImageContent("aGk=", "image/png")])])
    body = sent_body(mock_server, context, make_model(mock_server.url, input=["text"]))
    note = {"type": "input_text", "text": "(image omitted: model does not support images)"}
    assert body["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "look"}, note]},
        {"role": "user", "content": [note]},
    ]


def test_responses_outgoing_text_is_sanitized(mock_server) -> None:
    context = ac.Context("sys\ud800", [UserMessage("a\ud83db"), UserMessage([T("\ud83d\ude00")])])
    body = sent_body(mock_server, context)
    assert body["input"] == [
        {"role": "developer", "content": "sys"},
        {"role": "user", "content": [{"type": "input_text", "text": "ab"}]},
        {"role": "user", "content": [{"type": "input_text", "text": "\U0001F600"}]},
    ]


def test_responses_same_model_reply_is_replayed_verbatim(mock_server) -> None:
    """The reasoning reply of the fixture, sent back: reasoning item, text item with its id."""
    reply = ac.complete(*reply_args(mock_server, "reasoning.sse"))
    body = sent_body(mock_server, ac.Context(None, [UserMessage("hi"), reply,
                                                    UserMessage("and 2+2?")]))
    item = reasoning_item_text()
    assert body["input"] == [
        *USER_HI,
        json.loads(item),
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "15 + 27 = 42.", "annotations": []}],
         "status": "completed", "id": "msg_68b0c1d2e3f40a1b000000022"},
        {"role": "user", "content": [{"type": "input_text", "text": "and 2+2?"}]},
    ]
    assert item.encode() in mock_server.requests[-1].body  # byte for byte, encrypted content too


def test_responses_same_model_tool_calls_and_results(mock_server) -> None:
    reply = ac.complete(*reply_args(mock_server, "tool_calls.sse"))
    results = [ToolResultMessage(PARIS_ID, "get_weather", [T("sunny"), T("21 C")]),
               ToolResultMessage(TOKYO_ID, "get_weather", [T("rain")], is_error=True)]
    body = sent_body(mock_server, ac.Context(None, [UserMessage("hi"), reply, *results],
                                             [WEATHER]))
    assert body["input"] == [
        *USER_HI,
        {"type": "function_call", "call_id": "call_k3JH9aB2cD4eF6gH8iJ0lM1n",
         "name": "get_weather", "arguments": '{"city":"Paris"}',
         "id": "fc_68b0c1d2e3f40a1b000000011"},
        {"type": "function_call", "call_id": "call_Pq2RS3tU4vW5xY6zA7bC8dE9",
         "name": "get_weather", "arguments": '{"city":"Tokyo"}',
         "id": "fc_68b0c1d2e3f40a1b000000012"},
        {"type": "function_call_output", "call_id": "call_k3JH9aB2cD4eF6gH8iJ0lM1n",
         "output": "sunny\n21 C"},
        {"type": "function_call_output", "call_id": "call_Pq2RS3tU4vW5xY6zA7bC8dE9",
         "output": "rain"},
    ]
    assert body["tools"] == [{
        "type": "function", "name": "get_weather", "description": "Get the weather for a city",
        "parameters": WEATHER.parameters, "strict": False}]


def test_responses_arguments_are_compact_json_with_unicode_kept(mock_server) -> None:
    call = ToolCall("call_1|fc_1", "find", {"city": "Zürich", "n": [1, 2]})
    body = sent_body(mock_server, ac.Context(None, [
        UserMessage("hi"), assistant([call], stop_reason="toolUse"),
        ToolResultMessage("call_1|fc_1", "find", [T("ok")])]))
    assert body["input"][1]["arguments"] == '{"city":"Zürich","n":[1,2]}'


def test_responses_text_item_ids(mock_server) -> None:
    long_id = "msg_" + "x" * 80
    content = [T("a", text_signature(long_id)), T("b", "msg_legacy_bare_id"),
               T("c", '{"v":1,"id":"msg_c","phase":"commentary"}'), T("d")]
    body = sent_body(mock_server, ac.Context(None, [UserMessage("hi"), assistant(content),
                                                    UserMessage("go on")]))

    def item(text: str, item_id: str, **extra: Any) -> dict[str, Any]:
        return {"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
                "status": "completed", "id": item_id, **extra}

    assert body["input"][1:5] == [
        item("a", "msg_12405yh12udpq4"),  # longer than 64: msg_<short_hash(id)>
        item("b", "msg_legacy_bare_id"),
        item("c", "msg_c", phase="commentary"),
        item("d", "msg_1"),  # no signature: msg_<index of the message>
    ]


def test_responses_foreign_model_of_the_same_api_drops_fc_item_ids(mock_server) -> None:
    other = assistant([ThinkingContent("I should look.", '{"type":"reasoning","id":"rs_1"}'),
                       T("Looking.", text_signature("msg_9")),
                       ToolCall("call_1|fc_1", "get_weather", {"city": "Oslo"}),
                       ToolCall("call.2|item/9", "get_weather", {"city": "Rome"})],
                      model="gpt-5", stop_reason="toolUse")
    body = sent_body(mock_server, ac.Context(None, [
        UserMessage("hi"), other, ToolResultMessage("call_1|fc_1", "get_weather", [T("cold")]),
        ToolResultMessage("call.2|item/9", "get_weather", [T("warm")])]))

    def text_item(text: str) -> dict[str, Any]:
        return {"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
                "status": "completed", "id": "msg_1"}

    assert body["input"][1:] == [
        text_item("I should look."),  # another model's thinking is plain text, not reasoning
        text_item("Looking."),  # its text signature is dropped
        {"type": "function_call", "call_id": "call_1", "name": "get_weather",
         "arguments": '{"city":"Oslo"}'},
        {"type": "function_call", "call_id": "call_2", "name": "get_weather",
         "arguments": '{"city":"Rome"}'},  # normalised to call_2|fc_item_9, then dropped
        {"type": "function_call_output", "call_id": "call_1", "output": "cold"},
        {"type": "function_call_output", "call_id": "call_2", "output": "warm"},
    ]


def test_responses_another_provider_keeps_normalised_item_ids(mock_server) -> None:
    other = assistant([ToolCall("call.2|item/9", "get_weather", {"city": "Rome"})],
                      provider="azure-openai-responses", stop_reason="toolUse")
    body = sent_body(mock_server, ac.Context(None, [
        UserMessage("hi"), other, ToolResultMessage("call.2|item/9", "get_weather", [T("warm")])]))
    assert body["input"][1:] == [
        {"type": "function_call", "call_id": "call_2", "name": "get_weather",
         "arguments": '{"city":"Rome"}', "id": "fc_item_9"},
        {"type": "function_call_output", "call_id": "call_2", "output": "warm"},
    ]


def test_responses_tool_result_images(mock_server) -> None:
    call = ToolCall("call_1|fc_1", "shot", {})
    call2 = ToolCall("call_2|fc_2", "shot", {})
    png = ImageContent("aGk=", "image/png")
    messages = [UserMessage("hi"), assistant([call, call2], stop_reason="toolUse"),
                ToolResultMessage("call_1|fc_1", "shot", [T("here"), png]),
                ToolResultMessage("call_2|fc_2", "shot", [png])]
    image = {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,aGk="}

    body = sent_body(mock_server, ac.Context(None, messages),
                     make_model(mock_server.url, input=["text", "image"]))
    assert body["input"][3:] == [
        {"type": "function_call_output", "call_id": "call_1",
         "output": [{"type": "input_text", "text": "here"}, image]},
        {"type": "function_call_output", "call_id": "call_2", "output": [image]},
    ]

    note = "(tool image omitted: model does not support images)"
    body = sent_body(mock_server, ac.Context(None, messages), make_model(mock_server.url))
    assert body["input"][3:] == [
        {"type": "function_call_output", "call_id": "call_1", "output": f"here\n{note}"},
        {"type": "function_call_output", "call_id": "call_2", "output": note},
    ]


def test_responses_orphaned_call_and_failed_turn(mock_server) -> None:
    failed = assistant([T("Let me"), ToolCall("call_9|fc_9", "get_weather", {})],
                       stop_reason="error")
    orphan = assistant([ToolCall("call_1|fc_1", "get_weather", {"city": "Oslo"})],
                       stop_reason="toolUse")
    body = sent_body(mock_server, ac.Context(None, [
        UserMessage("hi"), failed, ToolResultMessage("call_9|fc_9", "get_weather", [T("x")]),
        orphan, UserMessage("never mind")]))
    assert body["input"] == [
        *USER_HI,
        {"type": "function_call", "call_id": "call_1", "name": "get_weather",
         "arguments": '{"city":"Oslo"}', "id": "fc_1"},
        {"type": "function_call_output", "call_id": "call_1", "output": "No result provided"},
        {"role": "user", "content": [{"type": "input_text", "text": "never mind"}]},
    ]


@pytest.mark.parametrize(("max_tokens", "sent"), [(None, 32_000), (5, 16), (16, 16), (900, 900)])
def test_responses_max_output_tokens(max_tokens, sent) -> None:
    model = make_model("http://127.0.0.1:9", max_tokens=64_000)
    body = build_body(model, ac.Context(None, []), make_options(max_tokens=max_tokens))
    assert body["max_output_tokens"] == sent


@pytest.mark.parametrize(("base_url", "session_id", "retention", "key", "retention_sent"), [
    ("http://127.0.0.1:9", "sess-1", None, "sess-1", None),
    ("http://127.0.0.1:9", "sess-1", "short", "sess-1", None),
    ("http://127.0.0.1:9", "sess-1", "long", "sess-1", None),  # 24h only on api.openai.com
    ("http://127.0.0.1:9", "sess-1", "none", None, None),
    ("http://127.0.0.1:9", None, "long", None, None),
    ("https://api.openai.com/v1", "sess-1", "long", "sess-1", "24h"),
    ("https://api.openai.com/v1", "sess-1", "short", "sess-1", None),
    ("https://api.openai.com/v1", "sess-1", "none", None, None),
])
def test_responses_prompt_cache(base_url, session_id, retention, key, retention_sent) -> None:
    body = build_body(make_model(base_url), ac.Context(None, []),
                      make_options(session_id=session_id, cache_retention=retention))
    assert body.get("prompt_cache_key") == key
    assert body.get("prompt_cache_retention") == retention_sent


def test_responses_prompt_cache_key_is_sent(mock_server) -> None:
    body = sent_body(mock_server, ac.Context(None, [UserMessage("hi")]),
                     options=make_options(session_id="sess-42"))
    assert body["prompt_cache_key"] == "sess-42"
    assert body["store"] is False


@pytest.mark.parametrize(("temperature", "present"), [(None, False), (0.0, True), (0.7, True)])
def test_responses_temperature_only_when_given(temperature, present) -> None:
    body = build_body(make_model("http://127.0.0.1:9"), ac.Context(None, []),
                      make_options(temperature=temperature))
    assert ("temperature" in body) is present
    if present:
        assert body["temperature"] == temperature


def test_responses_no_tools_key_without_tools() -> None:
    body = build_body(make_model("http://127.0.0.1:9"), ac.Context(None, [], []), make_options())
    assert "tools" not in body


def test_responses_headers_merge_and_on_payload_replaces_the_body(mock_server) -> None:
    seen: list[dict[str, Any]] = []

    def on_payload(payload: dict[str, Any], model: ac.Model) -> dict[str, Any]:
        seen.append(payload)
        return {**payload, "service_tier": "flex"}

    model = make_model(mock_server.url, headers={"x-a": "model", "x-b": "model"})
    body = sent_body(mock_server, ac.Context(None, [UserMessage("hi")]), model,
                     make_options(headers={"x-b": "options"}, on_payload=on_payload))
    assert body == {**seen[0], "service_tier": "flex"}
    request = mock_server.requests[-1]
    assert (request.header("x-a"), request.header("x-b")) == ("model", "options")


# --- errors ---------------------------------------------------------------------------------------


def lone_error(events: list[Event]) -> AssistantMessage:
    assert len(events) == 1
    assert isinstance(events[0], ErrorEvent)
    message: AssistantMessage = events[0].error
    assert message.content == []
    assert message.usage == Usage()
    return message


def test_responses_http_400_is_a_lone_error_event(mock_server) -> None:
    mock_server.status(400, fixture("http_400.json"))
    events = collect(ac.stream(make_model(mock_server.url), ac.Context(None, [UserMessage("hi")]),
                               make_options()))
    check_invariants(events)
    message = lone_error(events)
    assert message == final([], Usage(), StopReason.ERROR, None,
                            "400 Your input exceeds the context window of this model. "
                            "Please adjust your input and try again.")
    assert len(mock_server.requests) == 1  # a 400 is not retried


@pytest.mark.parametrize(("status", "body", "headers", "message"), [
    (500, b"", {}, "500 status code (no body)"),
    (502, b"Bad gateway", {"Content-Type": "text/plain"}, "502 Bad gateway"),
    (400, b'{"error":{"code":"bad","type":"x"}}', {}, '400 {"code":"bad","type":"x"}'),
    (400, b'{"error":{"message":{"detail":"nested"},"code":"bad"}}', {}, '400 {"detail":"nested"}'),
    (401, b'{"error":{"message":"Incorrect API key provided: sk-test."}}', {},
     "401 Incorrect API key provided: ***."),
    (500, b'{"error":{"message":"","type":"internal_server_error"}}', {},
     '500 {"message":"","type":"internal_server_error"}'),  # an empty message: its object
])
def test_responses_http_error_messages(mock_server, status, body, headers, message) -> None:
    mock_server.status(status, body, headers)
    events = collect(ac.stream(make_model(mock_server.url), ac.Context(None, [UserMessage("hi")]),
                               make_options(max_retries=0)))
    assert lone_error(events).error_message == message


def test_responses_stream_without_a_terminal_event_is_an_error(mock_server) -> None:
    body = fixture("text.sse")
    body = body[:body.index(b"event: response.completed")]
    events = replay(mock_server, body)
    assert events[:-1] == expected_text()[:-1]  # the message item still ended
    assert events[-1] == ErrorEvent(StopReason.ERROR, final(
        [T("Hello test successful", text_signature("msg_68b0c1d2e3f40a1b000000002"))], Usage(),
        StopReason.ERROR, "resp_68b0c1d2e3f40a1b000000001",
        "OpenAI Responses stream ended before a terminal response event"))


def test_responses_connection_cut_mid_stream_keeps_the_content(sse_server) -> None:
    body = fixture("text.sse")
    sse_server.sse(body[:body.index(b"event: response.output_text.done")], cut=True)
    events = collect(ac.stream(make_model(sse_server.url), ac.Context(None, [UserMessage("hi")]),
                               make_options()))
    check_invariants(events)
    assert events[-1].error.content == [T("Hello test successful")]
    assert events[-1].error.error_message == "Connection error."


def test_responses_raw_json_error_body_after_the_events(mock_server) -> None:
    body = fixture("text.sse")
    head = body[:body.index(b"event: response.output_text.done")]
    events = replay(mock_server, head + b'{"error":{"message":"upstream exploded","code":500}}\n')
    assert events[-1].error.content == [T("Hello test successful")]
    assert events[-1].error.error_message == "upstream exploded"


@pytest.mark.parametrize(("raw", "message"), [
    (b'{"error":{"message":{"detail":"nested"}}}', '{"detail":"nested"}'),
    (b'{"error":{"code":"bad"}}', '{"code":"bad"}'),
    (b"upstream noise", "OpenAI Responses stream ended before a terminal response event"),
])
def test_responses_raw_error_body_message_shapes(mock_server, raw, message) -> None:
    events = replay(mock_server, sse({"type": "response.created", "response": {"id": "r"}})
                    + raw + b"\n")
    assert lone_error(events[1:]).error_message == message


def test_responses_abort_mid_stream(sse_server) -> None:
    body = fixture("text.sse")
    head = body[:body.index(b"event: response.output_text.delta")]
    delta = body[len(head):body.index(b"event: response.output_text.delta", len(head) + 1)]
    gone = sse_server.slow_sse([head + delta], interval_s=HOLD)  # then holds the stream open
    controller = ac.AbortController()
    first_delta = threading.Event()
    aborted_at: list[float] = []

    def abort_after_first_delta() -> None:
        if first_delta.wait(WAIT_S):
            aborted_at.append(time.monotonic())
            controller.abort()

    helper = threading.Thread(target=abort_after_first_delta, name="test-aborter")
    helper.start()
    events: list[Event] = []
    try:  # no timeout set: the default read timeout (ten minutes), so only the abort ends the read
        for event in ac.stream(make_model(sse_server.url), ac.Context(None, [UserMessage("hi")]),
                               make_options(signal=controller.signal)):
            events.append(snapshot(event))
            if isinstance(event, TextDeltaEvent):
                first_delta.set()
    finally:
        first_delta.set()
        helper.join(WAIT_S)
    assert not helper.is_alive()
    check_invariants(events)
    assert events[:-1] == expected_text()[:3]
    assert events[-1] == ErrorEvent(StopReason.ABORTED, final(
        [T("Hello")], Usage(), StopReason.ABORTED, "resp_68b0c1d2e3f40a1b000000001",
        "Request was aborted"))
    assert gone.seen.wait(WAIT_S)  # the client closed the connection the server held open...
    assert gone.at is not None
    assert gone.at >= aborted_at[0]  # ...after the abort


def test_responses_abort_before_the_request_sends_nothing(sse_server) -> None:
    controller = ac.AbortController()
    controller.abort()
    events = collect(ac.stream(make_model(sse_server.url), ac.Context(None, [UserMessage("hi")]),
                               make_options(signal=controller.signal)))
    check_invariants(events)
    assert events[0].reason is StopReason.ABORTED
    assert lone_error(events).stop_reason is StopReason.ABORTED
    assert sse_server.requests == []


def mutated(name: str, old: bytes, new: bytes) -> bytes:
    body = fixture(name)
    assert body.count(old) == 1
    return body.replace(old, new)


@pytest.mark.parametrize(("body", "message"), [
    (mutated("incomplete.sse", b'"incomplete_details":{"reason":"max_output_tokens"}',
             b'"incomplete_details":{"reason":"content_filter"}'),
     "Response incomplete: content_filter"),
    (mutated("failed.sse", b'"error":{"code":"server_error","message":"An error occurred while '
             b'processing your request."},"incomplete_details":null',
             b'"error":null,"incomplete_details":{"reason":"max_output_tokens"}'),
     "incomplete: max_output_tokens"),
    (mutated("failed.sse", b'"error":{"code":"server_error","message":"An error occurred while '
             b'processing your request."}', b'"error":null'),
     "Unknown error (no error details in response)"),
    (mutated("failed.sse", b'"code":"server_error",', b""), "unknown: An error occurred while "
     "processing your request."),
    (mutated("text.sse", b'"status":"completed","error":null',
             b'"status":"cancelled","error":null'), "cancelled: cancelled"),
    (mutated("text.sse", b'event: response.output_text.done\ndata: {',
             b"event: response.output_text.done\ndata: {]"), None),
])
def test_responses_failures_end_with_an_error(mock_server, body, message) -> None:
    events = replay(mock_server, body)
    assert isinstance(events[-1], ErrorEvent)
    if message is None:
        assert events[-1].error.error_message.startswith("invalid JSON from the provider")
    else:
        assert events[-1].error.error_message == message


# --- other stream shapes --------------------------------------------------------------------------


def test_responses_refusal_is_text(mock_server) -> None:
    body = b"".join([
        sse({"type": "response.output_item.added", "output_index": 0,
             "item": {"id": "msg_r", "type": "message", "content": []}}),
        sse({"type": "response.content_part.added", "output_index": 0,
             "part": {"type": "refusal", "refusal": ""}}),
        sse({"type": "response.refusal.delta", "output_index": 0, "delta": "I can't"}),
        sse({"type": "response.output_item.done", "output_index": 0, "item": {
            "id": "msg_r", "type": "message", "content": [{"type": "refusal",
                                                           "refusal": "I can't help."}]}}),
        completed(),
    ])
    events = replay(mock_server, body)
    assert [e.type for e in events] == ["start", "text_start", "text_delta", "text_end", "done"]
    assert events[-1].message.content == [T("I can't help.", text_signature("msg_r"))]


def test_responses_arguments_only_in_the_done_item(mock_server) -> None:
    item = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "f",
            "arguments": ""}
    body = b"".join([
        sse({"type": "response.output_item.added", "output_index": 0, "item": item}),
        sse({"type": "response.output_item.done", "output_index": 0,
             "item": {**item, "arguments": '{"a":1}'}}),
        completed(),
    ])
    events = replay(mock_server, body)
    assert [e.type for e in events] == ["start", "toolcall_start", "toolcall_end", "done"]
    assert events[-1].message.content == [ToolCall("call_1|fc_1", "f", {"a": 1})]
    assert events[-1].reason is StopReason.TOOL_USE


def test_responses_truncated_arguments_give_a_dict_and_the_reason(mock_server) -> None:
    item = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "f",
            "arguments": ""}
    body = b"".join([
        sse({"type": "response.output_item.added", "output_index": 0, "item": item}),
        sse({"type": "response.function_call_arguments.delta", "output_index": 0,
             "delta": '{"city":"Par'}),
        sse({"type": "response.output_item.done", "output_index": 0,
             "item": {**item, "arguments": '{"city":"Par'}}),
        completed(status="incomplete", incomplete_details={"reason": "max_output_tokens"}),
    ])
    events = replay(mock_server, body)
    [call] = events[-1].message.content
    assert (call.id, call.name, call.arguments) == ("call_1|fc_1", "f", {})
    assert call.arguments_error is not None
    assert call.arguments_error.startswith("the arguments are not valid JSON")
    assert "'{\"city\":\"Par'" in call.arguments_error
    assert events[-1].reason is StopReason.LENGTH  # only stop is upgraded to toolUse


def test_responses_raw_reasoning_text_and_content_fallback(mock_server) -> None:
    """gpt-oss servers stream `response.reasoning_text.delta` and put the text in `content`."""
    item = {"id": "rs_1", "type": "reasoning", "summary": [],
            "content": [{"type": "reasoning_text", "text": "think hard"}]}
    body = b"".join([
        sse({"type": "response.output_item.added", "output_index": 0,
             "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
        sse({"type": "response.reasoning_text.delta", "output_index": 0, "delta": "think"}),
        sse({"type": "response.reasoning_text.delta", "output_index": 0, "delta": " hard"}),
        sse({"type": "response.output_item.done", "output_index": 0, "item": item}),
        completed(),
    ])
    events = replay(mock_server, body)
    assert [e.type for e in events] == ["start", "thinking_start", "thinking_delta",
                                        "thinking_delta", "thinking_end", "done"]
    assert events[-1].message.content == [
        ThinkingContent("think hard", json.dumps(item, separators=(",", ":")))]


def test_responses_encrypted_reasoning_without_summary_keeps_its_signature(mock_server) -> None:
    item = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAA"}
    body = b"".join([
        sse({"type": "response.output_item.added", "output_index": 0,
             "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
        sse({"type": "response.output_item.done", "output_index": 0, "item": item}),
        completed(),
    ])
    message = replay(mock_server, body)[-1].message
    assert message.content == [ThinkingContent("", json.dumps(item, separators=(",", ":")))]
    # and it is replayed to the same model even though its text is empty
    replayed = build_body(make_model("http://127.0.0.1:9"),
                          ac.Context(None, [UserMessage("hi"), message]),
                          make_options())
    assert replayed["input"][1] == item


def test_responses_usage_input_never_negative(mock_server) -> None:
    usage = {"input_tokens": 5, "input_tokens_details": {"cached_tokens": 9}, "output_tokens": 1}
    body = sse({"type": "response.completed", "response": {
        "id": "r", "status": "completed", "usage": usage}})
    message = replay(mock_server, body)[-1].message
    assert (message.usage.input, message.usage.cache_read, message.usage.total_tokens) == (0, 9,
                                                                                           10)


def test_responses_interleaved_output_items(mock_server) -> None:
    body = b"".join([
        sse({"type": "response.output_item.added", "output_index": 0,
             "item": {"id": "msg_a", "type": "message"}}),
        sse({"type": "response.output_text.delta", "output_index": 0, "delta": "A1"}),
        sse({"type": "response.output_item.added", "output_index": 1, "item": {
            "id": "fc_1", "call_id": "call_1", "type": "function_call", "name": "f",
            "arguments": ""}}),
        sse({"type": "response.output_text.delta", "output_index": 0, "delta": "A2"}),
        sse({"type": "response.function_call_arguments.delta", "output_index": 1,
             "delta": '{"a":1}'}),
        sse({"type": "response.output_item.done", "output_index": 0, "item": {
            "id": "msg_a", "type": "message", "content": [{"type": "output_text",
                                                           "text": "A1A2"}]}}),
        sse({"type": "response.output_item.done", "output_index": 1, "item": {
            "id": "fc_1", "call_id": "call_1", "type": "function_call", "name": "f",
            "arguments": '{"a":1}'}}),
        completed(),
    ])
    events = replay(mock_server, body)  # check_invariants fails here today
    ends = [e for e in events if isinstance(e, TextEndEvent)]
    assert [e.content for e in ends] == ["A1A2"]


def test_responses_invariant_checker_rejects_broken_sequences() -> None:
    """The invariant checker itself rejects what it must (so the checks above mean something)."""
    good = expected_text()
    check_invariants(good)
    bad_orders: list[list[Event]] = [
        good[1:],  # no start
        [*good, good[-1]],  # two terminals
        [good[0], good[2], *good[3:]],  # a delta before its start
        [*good[:5], good[3], good[5]],  # a delta after the end
    ]
    for events in bad_orders:
        with pytest.raises(AssertionError):
            check_invariants(events)

