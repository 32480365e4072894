"""Serialization: wire shape, round trips, union dispatch and errors of to_dict/from_dict & co."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any

import attrs
import pytest
from _internals import AssistantContent, UserContent, _serde
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore import (
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AgentStartEvent,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    AssistantMessageEvent,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionEndEvent,
    CompactionStartEvent,
    CompactionSummaryMessage,
    Context,
    Cost,
    DoneEvent,
    ErrorEvent,
    ImageContent,
    Message,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    Model,
    ModelCost,
    SerializationError,
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
    Tool,
    ToolApprovalMessage,
    ToolApprovalRequestEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolResultMessage,
    TurnEndEvent,
    TurnStartEvent,
    Usage,
    UserMessage,
    from_dict,
    from_json,
    to_dict,
    to_json,
)

TS = 1_700_000_000_000
USAGE = Usage(10, 5, 2, 1, 18, Cost(0.1, 0.2, 0.01, 0.02, 0.33))
CALL = ToolCall("call_1", "calc", {"a": 1, "b": [1.5, "x", None, {"deep": True}]}, "sig==")
REPLY = AssistantMessage(
    [TextContent("Sure.", "ts"), ThinkingContent("hmm", "th", redacted=True), CALL],
    api="openai-completions",
    provider="openai",
    model="gpt-4o",
    usage=USAGE,
    stop_reason=StopReason.TOOL_USE,
    response_id="resp_1",
    timestamp=TS,
)
FAILED = AssistantMessage(
    [], "a", "p", "m", stop_reason=StopReason.ERROR, error_message="boom", timestamp=TS
)
RESULT = ToolResultMessage(
    "call_1",
    "calc",
    [TextContent("3"), ImageContent("aGk=", "image/png")],
    details={"raw": [1, 2], "ok": True},
    is_error=False,
    usage=USAGE,
    added_tool_names=["search"],
    timestamp=TS,
)
TOOL_RESULT = AgentToolResult(
    [TextContent("done")], details={"n": 1}, usage=USAGE, added_tool_names=["x"], terminate=True
)

MESSAGES = [
    UserMessage("hi", timestamp=TS),
    UserMessage([TextContent("look"), ImageContent("aGk=", "image/jpeg")], timestamp=TS),
    REPLY,
    FAILED,
    RESULT,
    ToolResultMessage("c", "t", [], timestamp=TS),
    BashExecutionMessage("ls", "a\nb", 0, truncated=True, full_output_path="/tmp/o", timestamp=TS),
    BashExecutionMessage("sleep 9", "", None, cancelled=True, timestamp=TS),
    CompactionSummaryMessage("earlier work", 12_345, timestamp=TS),
    BranchSummaryMessage("other branch", "entry-7", timestamp=TS),
    ToolApprovalMessage(["call_1"], {"call_2": "not now", "call_3": "no"}, timestamp=TS),
    ToolApprovalMessage(timestamp=TS),
]

CONTENT = [
    TextContent("plain"),
    TextContent("signed", "sig"),
    ThinkingContent("reasoning"),
    ThinkingContent("[Reasoning redacted]", "opaque", redacted=True),
    ImageContent("aGk=", "image/png"),
    ToolCall("id", "name"),
    CALL,
]

ASSISTANT_EVENTS = [
    StartEvent(REPLY),
    TextStartEvent(0, REPLY),
    TextDeltaEvent(0, "Sur", REPLY),
    TextEndEvent(0, "Sure.", REPLY),
    ThinkingStartEvent(1, REPLY),
    ThinkingDeltaEvent(1, "hm", REPLY),
    ThinkingEndEvent(1, "hmm", REPLY),
    ToolCallStartEvent(2, REPLY),
    ToolCallDeltaEvent(2, '{"a":', REPLY),
    ToolCallEndEvent(2, CALL, REPLY),
    DoneEvent(StopReason.TOOL_USE, REPLY),
    ErrorEvent(StopReason.ERROR, FAILED),
    ErrorEvent(StopReason.ABORTED, FAILED),
]

AGENT_EVENTS = [
    AgentStartEvent(),
    AgentEndEvent(MESSAGES),
    TurnStartEvent(),
    TurnEndEvent(REPLY, [RESULT]),
    TurnEndEvent(FAILED, []),
    MessageStartEvent(UserMessage("hi", timestamp=TS)),
    MessageEndEvent(BranchSummaryMessage("s", "id", timestamp=TS)),
    *(MessageUpdateEvent(REPLY, e) for e in ASSISTANT_EVENTS),
    ToolExecutionStartEvent("call_1", "calc", {"a": 1}),
    ToolExecutionStartEvent("call_2", "calc", "not even a dict"),
    ToolExecutionUpdateEvent("call_1", "calc", {"a": 1}, AgentToolResult([TextContent("50%")])),
    ToolExecutionEndEvent("call_1", "calc", TOOL_RESULT, False),
    ToolExecutionEndEvent("call_1", "calc", AgentToolResult([TextContent("no")]), True),
    CompactionStartEvent("threshold"),
    CompactionStartEvent("overflow"),
    CompactionEndEvent(CompactionSummaryMessage("## Goals\n- ship", 52_000, timestamp=TS),
                       52_000, 9_000),
    ToolApprovalRequestEvent("call_1", "calc", {"a": 1}),
    ToolApprovalRequestEvent("call_2", "calc", "not even a dict"),
    MessageEndEvent(ToolApprovalMessage(["call_1"], {"call_2": "no"}, timestamp=TS)),
]

MODEL = Model(
    "gpt-4o",
    "GPT-4o",
    "openai-completions",
    "openai",
    "https://api.openai.com/v1",
    reasoning=True,
    input=["text", "image"],
    cost=ModelCost(2.5, 10, 1.25, 0),
    context_window=128_000,
    max_tokens=16_384,
    headers={"X-Org": "o"},
    compat={"supportsStore": False},
)
TOOL = Tool("calc", "Adds.", {"type": "object", "properties": {"a": {"type": "integer"}}})


def _name(value: object) -> str:
    return type(value).__name__


def _noop_execute(*_: Any) -> AgentToolResult:
    return AgentToolResult()


AGENT_TOOL = AgentTool("calc", "Adds.", {"type": "object"}, _noop_execute)


@pytest.mark.parametrize("message", MESSAGES, ids=_name)
def test_message_round_trips_through_dict_and_json(message: Any) -> None:
    assert from_dict(type(message), to_dict(message)) == message
    assert from_dict(AgentMessage, to_dict(message)) == message
    assert from_json(AgentMessage, to_json(message)) == message


@pytest.mark.parametrize("block", CONTENT, ids=_name)
def test_content_block_round_trips(block: Any) -> None:
    assert from_dict(type(block), to_dict(block)) == block
    assert from_json(AssistantContent | ImageContent, to_json(block)) == block


@pytest.mark.parametrize("event", ASSISTANT_EVENTS, ids=_name)
def test_assistant_message_event_round_trips(event: Any) -> None:
    assert from_dict(type(event), to_dict(event)) == event
    assert from_json(AssistantMessageEvent, to_json(event)) == event


@pytest.mark.parametrize(
    "event", AGENT_EVENTS, ids=lambda e: f"{_name(e)}-{getattr(e, 'assistant_message_event', '')}"
)
def test_agent_event_round_trips(event: Any) -> None:
    assert from_dict(type(event), to_dict(event)) == event
    assert from_json(AgentEvent, to_json(event)) == event


@pytest.mark.parametrize(
    "value",
    [MODEL, Model("m", "M", "api", "p", "http://x"), ModelCost(1, 2, 3, 4), USAGE, Usage(), Cost(),
     TOOL, TOOL_RESULT, AgentToolResult(), Context("sys", [UserMessage("x", timestamp=TS), REPLY]),
     Context(None, [], [TOOL]), AgentContext("sys", MESSAGES)],
    ids=_name,
)
def test_value_round_trips(value: Any) -> None:
    assert from_json(type(value), to_json(value)) == value


def test_tool_result_message_wire_shape() -> None:
    message = ToolResultMessage("call_1", "calc", [TextContent("hi")], timestamp=1)
    assert to_json(message) == (
        '{"role":"toolResult","toolCallId":"call_1","toolName":"calc",'
        '"content":[{"type":"text","text":"hi"}],"isError":false,"timestamp":1}'
    )


def test_assistant_message_wire_shape() -> None:
    assert to_dict(REPLY) == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Sure.", "textSignature": "ts"},
            {"type": "thinking", "thinking": "hmm", "thinkingSignature": "th", "redacted": True},
            {
                "type": "toolCall",
                "id": "call_1",
                "name": "calc",
                "arguments": {"a": 1, "b": [1.5, "x", None, {"deep": True}]},
                "thoughtSignature": "sig==",
            },
        ],
        "api": "openai-completions",
        "provider": "openai",
        "model": "gpt-4o",
        "usage": {
            "input": 10,
            "output": 5,
            "cacheRead": 2,
            "cacheWrite": 1,
            "totalTokens": 18,
            "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0.01, "cacheWrite": 0.02,
                     "total": 0.33},
        },
        "stopReason": "toolUse",
        "responseId": "resp_1",
        "timestamp": TS,
    }


def test_custom_messages_wire_shape() -> None:
    assert [to_dict(m) for m in MESSAGES[6:]] == [
        {"role": "bashExecution", "command": "ls", "output": "a\nb", "exitCode": 0,
         "cancelled": False, "truncated": True, "fullOutputPath": "/tmp/o", "timestamp": TS},
        {"role": "bashExecution", "command": "sleep 9", "output": "", "exitCode": None,
         "cancelled": True, "truncated": False, "timestamp": TS},
        {"role": "compactionSummary", "summary": "earlier work", "tokensBefore": 12_345,
         "timestamp": TS},
        {"role": "branchSummary", "summary": "other branch", "fromId": "entry-7", "timestamp": TS},
        {"role": "toolApproval", "approved": ["call_1"],
         "denied": {"call_2": "not now", "call_3": "no"}, "timestamp": TS},
        {"role": "toolApproval", "approved": [], "denied": {}, "timestamp": TS},
    ]


def test_event_wire_shape() -> None:
    text_delta = TextDeltaEvent(0, "Sur", FAILED)
    assert to_dict(MessageUpdateEvent(FAILED, text_delta)) == {
        "type": "message_update",
        "message": to_dict(FAILED),
        "assistantMessageEvent": {
            "type": "text_delta", "contentIndex": 0, "delta": "Sur", "partial": to_dict(FAILED)
        },
    }
    assert to_dict(FAILED) == {
        "role": "assistant", "content": [], "api": "a", "provider": "p", "model": "m",
        "usage": to_dict(Usage()), "stopReason": "error", "errorMessage": "boom", "timestamp": TS,
    }
    assert to_dict(ToolExecutionEndEvent("c", "calc", TOOL_RESULT, False)) == {
        "type": "tool_execution_end",
        "toolCallId": "c",
        "toolName": "calc",
        "result": {
            "content": [{"type": "text", "text": "done"}],
            "details": {"n": 1},
            "usage": to_dict(USAGE),
            "addedToolNames": ["x"],
            "terminate": True,
        },
        "isError": False,
    }
    assert to_dict(TurnEndEvent(FAILED, [])) == {
        "type": "turn_end", "message": to_dict(FAILED), "toolResults": []
    }
    assert to_dict(AgentStartEvent()) == {"type": "agent_start"}
    assert to_dict(ToolApprovalRequestEvent("c", "rm", {"path": "/x"})) == {
        "type": "tool_approval_request", "toolCallId": "c", "toolName": "rm",
        "args": {"path": "/x"},
    }
    assert to_dict(ToolExecutionUpdateEvent("c", "t", None, AgentToolResult())) == {
        "type": "tool_execution_update", "toolCallId": "c", "toolName": "t", "args": None,
        "partialResult": {"content": []},
    }


def test_model_and_context_wire_shape() -> None:
    assert to_dict(MODEL) == {
        "id": "gpt-4o",
        "name": "GPT-4o",
        "api": "openai-completions",
        "provider": "openai",
        "baseUrl": "https://api.openai.com/v1",
        "reasoning": True,
        "input": ["text", "image"],
        "cost": {"input": 2.5, "output": 10, "cacheRead": 1.25, "cacheWrite": 0},
        "contextWindow": 128_000,
        "maxTokens": 16_384,
        "headers": {"X-Org": "o"},
        "compat": {"supportsStore": False},
    }
    assert to_dict(Context(None, [], [TOOL])) == {
        "systemPrompt": None, "messages": [], "tools": [to_dict(TOOL)]
    }
    assert to_dict(TOOL) == {"name": "calc", "description": "Adds.", "parameters": TOOL.parameters}


def test_tag_comes_first() -> None:
    for value in [*MESSAGES, *CONTENT, *ASSISTANT_EVENTS, *AGENT_EVENTS]:
        key = "role" if value in MESSAGES else "type"
        assert next(iter(to_dict(value))) == key
        assert to_dict(value)[key] == type(value).__dict__[key]


def test_enums_serialize_as_plain_strings() -> None:
    data = to_dict(DoneEvent(StopReason.STOP, REPLY))
    assert type(data["reason"]) is str
    assert type(data["message"]["stopReason"]) is str
    assert data["reason"] == "stop"


def test_none_defaults_are_omitted_and_restored() -> None:
    data = to_dict(ToolResultMessage("c", "t", [TextContent("x")], timestamp=TS))
    assert set(data) == {"role", "toolCallId", "toolName", "content", "isError", "timestamp"}
    assert from_dict(ToolResultMessage, data).details is None
    assert to_dict(AgentToolResult()) == {"content": []}


def test_to_json_is_compact_and_keeps_non_ascii() -> None:
    assert to_json(TextContent("héllo → 世界")) == '{"type":"text","text":"héllo → 世界"}'


def test_to_dict_copies_json_values() -> None:
    data = to_dict(CALL)
    data["arguments"]["b"].append("mutated")
    assert CALL.arguments["b"] == [1.5, "x", None, {"deep": True}]


def test_any_fields_pass_json_values_through() -> None:
    event = ToolExecutionStartEvent("c", "t", {"a": [1, {"b": None}], "s": "x", "f": 1.5})
    assert to_dict(event)["args"] == {"a": [1, {"b": None}], "s": "x", "f": 1.5}
    assert from_dict(AgentEvent, to_dict(event)) == event


@pytest.mark.parametrize("message", MESSAGES, ids=_name)
def test_agent_message_union_dispatches_on_role(message: Any) -> None:
    assert type(from_dict(AgentMessage, to_dict(message))) is type(message)


def test_message_union_rejects_agent_only_roles() -> None:
    assert from_dict(Message, to_dict(REPLY)) == REPLY
    with pytest.raises(SerializationError, match="unknown role 'bashExecution'"):
        from_dict(Message, to_dict(MESSAGES[6]))


@pytest.mark.parametrize("event", AGENT_EVENTS, ids=_name)
def test_agent_event_union_dispatches_on_type(event: Any) -> None:
    assert type(from_dict(AgentEvent, to_dict(event))) is type(event)


def test_content_unions_dispatch_on_type() -> None:
    assert from_dict(UserContent, {"type": "image", "data": "aGk=", "mimeType": "image/png"}) == (
        ImageContent("aGk=", "image/png")
    )
    assert from_dict(AssistantContent, {"type": "toolCall", "id": "i", "name": "n"}) == (
        ToolCall("i", "n", {})
    )
    with pytest.raises(SerializationError, match="unknown type 'thinking'"):
        from_dict(UserContent, {"type": "thinking", "thinking": "x"})


def test_nested_unions_dispatch_on_tag() -> None:
    data = {
        "type": "agent_end",
        "messages": [
            {"role": "user", "content": [{"type": "image", "data": "x", "mimeType": "image/gif"}],
             "timestamp": 1},
            {"role": "compactionSummary", "summary": "s", "tokensBefore": 3, "timestamp": 2},
        ],
    }
    assert from_dict(AgentEvent, data) == AgentEndEvent([
        UserMessage([ImageContent("x", "image/gif")], timestamp=1),
        CompactionSummaryMessage("s", 3, timestamp=2),
    ])


def test_from_dict_accepts_generic_aliases() -> None:
    assert from_json(list[AgentMessage], json.dumps([to_dict(m) for m in MESSAGES])) == MESSAGES


def test_from_dict_ignores_unknown_keys_and_missing_tag_on_concrete_class() -> None:
    data = {"content": "hi", "timestamp": 1, "responseModel": "newer-field"}
    assert from_dict(UserMessage, data) == UserMessage("hi", timestamp=1)


def test_application_message_class_round_trips() -> None:
    @attrs.frozen
    class NoteMessage:
        role = "note"
        text: str
        pinned_by: str | None = None

    assert to_dict(NoteMessage("x", "me")) == {"role": "note", "text": "x", "pinnedBy": "me"}
    assert from_dict(NoteMessage, to_dict(NoteMessage("x"))) == NoteMessage("x")


def test_context_serializes_agent_tools_as_tools() -> None:
    context = Context("sys", [], [AGENT_TOOL])
    assert to_dict(context)["tools"] == [to_dict(TOOL) | {"parameters": {"type": "object"}}]
    assert from_dict(Context, to_dict(context)).tools == [Tool("calc", "Adds.", {"type": "object"})]


def test_agent_context_omits_its_tools() -> None:
    context = AgentContext("sys", [UserMessage("hi", timestamp=TS)], [AGENT_TOOL])
    data = to_dict(context)
    assert data == {"systemPrompt": "sys", "messages": [to_dict(UserMessage("hi", timestamp=TS))]}
    assert from_dict(AgentContext, data) == attrs.evolve(context, tools=[])


def _assistant(**changes: Any) -> dict[str, Any]:
    return to_dict(FAILED) | changes


DECODE_ERRORS = [
    ("unknown-role", AgentMessage, {"role": "system", "content": "x"}, r"unknown role 'system'"),
    ("missing-role", AgentMessage, {"content": "x"}, r"missing 'role' tag"),
    ("unknown-event", AgentEvent, {"type": "agent_pause"}, r"unknown type 'agent_pause'"),
    ("unknown-stream-event", AssistantMessageEvent, {"type": "text_middle"}, r"'text_middle'"),
    ("unknown-nested-type", AgentMessage, _assistant(content=[{"type": "video"}]),
     r"content\[0\]: unknown type 'video'"),
    ("unknown-nested-event", AgentEvent,
     {"type": "message_update", "message": to_dict(FAILED),
      "assistantMessageEvent": {"type": "nope"}},
     r"assistantMessageEvent: unknown type 'nope'"),
    ("tag-mismatch", UserMessage, {"role": "assistant", "content": "x"},
     r"role 'assistant' does not match UserMessage"),
    ("missing-field", ToolResultMessage, {"role": "toolResult", "toolName": "t"},
     r"toolCallId: required field is missing"),
    ("missing-nested-field", AgentEvent, {"type": "message_end", "message": {"role": "user"}},
     r"message\.content: required field is missing"),
    ("int-as-string", UserMessage, {"content": "x", "timestamp": "abc"},
     r"timestamp: expected an integer, got 'abc'"),
    ("numeric-string-not-coerced", UserMessage, {"content": "x", "timestamp": "12"},
     r"timestamp: expected an integer, got '12'"),
    ("bool-as-int", AgentMessage, _assistant(usage={"input": True}),
     r"usage\.input: expected an integer, got True"),
    ("int-as-string-field", TextContent, {"type": "text", "text": 5},
     r"text: expected a string, got 5"),
    ("string-as-bool", ToolResultMessage, {"toolCallId": "c", "toolName": "t", "isError": "no"},
     r"isError: expected a boolean, got 'no'"),
    ("string-as-float", Cost, {"input": "1.5"}, r"input: expected a number, got '1.5'"),
    ("unvalidated-event-field", AssistantMessageEvent,
     {"type": "text_delta", "contentIndex": "abc", "delta": "x", "partial": to_dict(FAILED)},
     r"contentIndex: expected an integer, got 'abc'"),
    ("string-as-list", AgentMessage, _assistant(content="abc"),
     r"content: expected a list, got 'abc'"),
    ("list-as-dict", ToolCall, {"id": "i", "name": "n", "arguments": [1]},
     r"arguments: expected an object, got \[1\]"),
    ("wrong-user-content", UserMessage, {"content": 7}, r"content: expected str or list"),
    ("bad-stop-reason", AssistantMessage, _assistant(stopReason="finished"),
     r"stopReason: expected one of .*got 'finished'"),
    ("bad-done-reason", DoneEvent, {"reason": "error", "message": to_dict(FAILED)},
     r"reason: expected one of \['stop', 'length', 'toolUse'\], got 'error'"),
    ("not-an-object", UserMessage, [1], r"expected an object for UserMessage, got \[1\]"),
    ("not-an-object-union", AgentMessage, "hi", r"expected an object with a 'role' tag, got 'hi'"),
    ("validator", Usage, {"output": -1}, r"'output' must be >= 0"),
    ("bad-header", Model, to_dict(MODEL) | {"headers": {"X": 1}}, r"headers\['X'\]"),
    ("agent-tool", AgentTool, to_dict(TOOL), r"'execute' is a function"),
]


@pytest.mark.parametrize(
    ("target", "data", "pattern"), [c[1:] for c in DECODE_ERRORS], ids=[c[0] for c in DECODE_ERRORS]
)
def test_from_dict_error_names_the_problem(target: Any, data: Any, pattern: str) -> None:
    with pytest.raises(SerializationError, match=f"^cannot decode .*{pattern}") as info:
        from_dict(target, data)
    assert isinstance(info.value.__cause__, Exception)


def test_from_dict_reports_every_problem() -> None:
    data = _assistant(content=[{"type": "text", "text": 5}], usage={"input": "abc"})
    with pytest.raises(SerializationError) as info:
        from_dict(AssistantMessage, data)
    assert str(info.value) == (
        "cannot decode AssistantMessage: content[0].text: expected a string, got 5; "
        "usage.input: expected an integer, got 'abc'"
    )


@pytest.mark.parametrize("text", ["{bad", "", "[1,", b"\xff", None], ids=repr)
def test_from_json_rejects_invalid_json(text: Any) -> None:
    with pytest.raises(SerializationError, match=r"^invalid JSON for AgentMessage: "):
        from_json(AgentMessage, text)


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        (5, r"cannot serialize 5 \(int\): expected an attrs value"),
        ({"role": "user"}, r"cannot serialize \{'role': 'user'\}"),
        (AGENT_TOOL, r"cannot serialize AgentTool 'calc': its 'execute' is a function"),
    ],
    ids=["int", "dict", "agent-tool"],
)
def test_to_dict_rejects_values_without_json_form(value: Any, pattern: str) -> None:
    with pytest.raises(SerializationError, match=pattern):
        to_dict(value)


def test_agent_tool_in_details_is_written_as_its_fields() -> None:
    # Only a value passed to `to_dict` itself is refused; inside `details` it is made JSON-ready.
    data = to_dict(ToolResultMessage("c", "t", details=AGENT_TOOL, timestamp=1))
    assert data["details"] == {
        "name": "calc",
        "description": "Adds.",
        "parameters": {"type": "object"},
        "execute": repr(_noop_execute),
        "label": None,
        "execution_mode": None,
        "prepare_arguments": None,
        "timeout": None,
        "requires_approval": False,
    }


def test_to_json_writes_non_json_details() -> None:
    message = ToolResultMessage("c", "t", details={1, 2}, timestamp=1)
    assert json.loads(to_json(message))["details"] == [1, 2]


def test_converter_is_built_once_under_concurrent_first_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    builds: list[object] = []
    real_build = _serde.build_converter

    def counting_build() -> Any:
        builds.append(object())
        return real_build()

    monkeypatch.setattr(_serde, "_converter", None)
    monkeypatch.setattr(_serde, "build_converter", counting_build)
    barrier = threading.Barrier(8, timeout=10)
    results: list[dict[str, Any]] = []

    def worker() -> None:
        barrier.wait()
        results.append(to_dict(REPLY))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert len(builds) == 1
    assert results == [to_dict(REPLY)] * 8


@pytest.mark.slow
def test_importing_agentcore_does_not_import_cattrs() -> None:
    code = "import sys, agentcore; print('cattrs' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "False", out.stderr


texts = st.text(max_size=12)
optional_texts = st.none() | texts
timestamps = st.integers(min_value=0, max_value=2**53)
counts = st.integers(min_value=0, max_value=2**40)
money = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | money | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
text_blocks = st.builds(TextContent, texts, optional_texts)
image_blocks = st.builds(ImageContent, texts, texts)
assistant_blocks = (
    text_blocks
    | st.builds(ThinkingContent, texts, optional_texts, st.booleans())
    | st.builds(ToolCall, texts, texts, st.dictionaries(texts, json_values, max_size=3),
                optional_texts)
)
usages = st.builds(Usage, counts, counts, counts, counts, counts,
                   st.builds(Cost, money, money, money, money, money))
messages = st.one_of(
    st.builds(UserMessage, texts | st.lists(text_blocks | image_blocks, max_size=3),
              timestamp=timestamps),
    st.builds(AssistantMessage, st.lists(assistant_blocks, max_size=4), texts, texts, texts,
              usages, st.sampled_from(StopReason), optional_texts, optional_texts, timestamps),
    st.builds(ToolResultMessage, texts, texts, st.lists(text_blocks | image_blocks, max_size=3),
              json_values, st.booleans(), st.none() | usages, st.none() | st.lists(texts),
              timestamps),
    st.builds(BashExecutionMessage, texts, texts, st.none() | st.integers(), st.booleans(),
              st.booleans(), optional_texts, timestamps),
    st.builds(CompactionSummaryMessage, texts, counts, timestamps),
    st.builds(BranchSummaryMessage, texts, texts, timestamps),
    st.builds(ToolApprovalMessage, st.lists(texts, max_size=3),
              st.dictionaries(texts, texts, max_size=3), timestamps),
)


@settings(deadline=None, database=None, max_examples=100)
@given(messages)
def test_generated_messages_round_trip(message: Any) -> None:
    assert from_json(AgentMessage, to_json(message)) == message
    assert from_dict(AgentMessage, to_dict(message)) == message


@settings(deadline=None, database=None, max_examples=50)
@given(st.lists(messages, max_size=4))
def test_generated_agent_end_events_round_trip(transcript: list[Any]) -> None:
    event = AgentEndEvent(transcript)
    assert from_json(AgentEvent, to_json(event)) == event
