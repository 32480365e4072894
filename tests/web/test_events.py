"""Agent events as AG-UI events: `ag_ui_events(run)` and its `Translator` (API §21).

Real `Agent` runs over the faux provider (or a `stream_fn` scripting the provider's events
exactly), each event round-tripped through its wire form and the protocol package's own
models; `check_stream` holds every stream to AG-UI's ordering and pairing rules.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("ag_ui")

import ag_ui.core as ag
import pydantic
from _internals import Translator
from ag_ui.core import EventType as T

import agentcore as ac
from agentcore import (
    AgentEndEvent,
    AssistantMessage,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    CompactionEndEvent,
    CompactionStartEvent,
    CompactionSummaryMessage,
    Context,
    DoneEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    Model,
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
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolResultMessage,
    Usage,
)
from agentcore.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
    register_faux_provider,
)
from agentcore.web import APPROVAL_EVENT, APPROVAL_REASON, ag_ui_events

WAIT = 5.0
EVENT = pydantic.TypeAdapter(ag.Event)


# --- helpers ---------------------------------------------------------------------------------


class EndedRun:
    """What `Translator.finish` reads of a run that has ended: its messages, no pending calls,
    no error (for translations fed by hand)."""

    def __init__(self, messages: list[ac.AgentMessage]) -> None:
        self.messages = messages
        self.pending_approvals: list[ToolCall] = []
        self.error: str | None = None

    def result(self, timeout: float | None = None) -> list[ac.AgentMessage]:
        return list(self.messages)


def wire(event: ag.BaseEvent) -> dict[str, Any]:
    """`event` as a client receives it, after checking it validates under AG-UI's models."""
    text = event.model_dump_json(by_alias=True)
    back = EVENT.validate_json(text)
    assert type(back) is type(event)
    assert back == event
    data: dict[str, Any] = json.loads(text)
    return data


def collect(events: Iterator[ag.BaseEvent] | list[ag.BaseEvent]) -> list[dict[str, Any]]:
    """Every event on the wire, checked one by one and then as a stream."""
    out = [wire(event) for event in events]
    check_stream(out)
    return out


def check_stream(events: list[dict[str, Any]]) -> None:
    """AG-UI's rules: RUN_STARTED first; RUN_FINISHED or RUN_ERROR last and only there; every
    message, reasoning span and tool call opened once, filled, and closed before the end."""
    assert events[0]["type"] == T.RUN_STARTED
    assert events[-1]["type"] in (T.RUN_FINISHED, T.RUN_ERROR)
    assert not [e for e in events[1:-1] if e["type"] in (T.RUN_STARTED, T.RUN_FINISHED,
                                                          T.RUN_ERROR)]
    seen: set[str] = set()
    text: set[str] = set()
    reasoning: dict[str, str] = {}  # id -> "span" (REASONING_START) or "message"
    tools: dict[str, str] = {}  # id -> "open" / "closed"
    for event in events[1:-1]:
        kind = event["type"]
        if kind == T.TEXT_MESSAGE_START:
            assert event["messageId"] not in seen, event
            seen.add(event["messageId"])
            text.add(event["messageId"])
            assert event["role"] == "assistant"
        elif kind == T.TEXT_MESSAGE_CONTENT:
            assert event["messageId"] in text, event
            assert event["delta"]
        elif kind == T.TEXT_MESSAGE_END:
            text.remove(event["messageId"])
        elif kind == T.REASONING_START:
            assert event["messageId"] not in seen, event
            seen.add(event["messageId"])
            reasoning[event["messageId"]] = "span"
        elif kind == T.REASONING_MESSAGE_START:
            assert reasoning[event["messageId"]] == "span"
            assert event["role"] == "reasoning"
            reasoning[event["messageId"]] = "message"
        elif kind == T.REASONING_MESSAGE_CONTENT:
            assert reasoning[event["messageId"]] == "message"
            assert event["delta"]
        elif kind == T.REASONING_MESSAGE_END:
            assert reasoning[event["messageId"]] == "message"
            reasoning[event["messageId"]] = "span"
        elif kind == T.REASONING_END:
            assert reasoning.pop(event["messageId"]) == "span"
        elif kind == T.TOOL_CALL_START:
            assert event["toolCallId"] not in tools, event
            tools[event["toolCallId"]] = "open"
        elif kind == T.TOOL_CALL_ARGS:
            assert tools[event["toolCallId"]] == "open"
            assert event["delta"]
        elif kind == T.TOOL_CALL_END:
            assert tools[event["toolCallId"]] == "open"
            tools[event["toolCallId"]] = "closed"
        elif kind == T.TOOL_CALL_RESULT:
            # a resumed run answers calls streamed by an earlier run
            assert tools.get(event["toolCallId"], "closed") == "closed"
        else:
            assert kind == T.CUSTOM, event
    assert not text, f"text messages left open: {text}"
    assert not reasoning, f"reasoning left open: {reasoning}"
    assert "open" not in tools.values(), f"tool calls left open: {tools}"


def of_type(events: list[dict[str, Any]], kind: T) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def joined(events: list[dict[str, Any]], kind: T, key: str, item_id: str) -> str:
    return "".join(e["delta"] for e in events if e["type"] == kind and e[key] == item_id)


def tool(name: str, execute: Callable[..., ac.AgentToolResult] | None = None,
         requires_approval: Any = False) -> ac.AgentTool:
    """A tool answering `<name> ok` (or what `execute(args)` returns)."""

    def run(call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any,
            ) -> ac.AgentToolResult:
        if execute is not None:
            return execute(args, signal)
        return ac.AgentToolResult([ac.TextContent(f"{name} ok")])

    return ac.AgentTool(name, f"The {name} tool.", {"type": "object"}, run,
                        requires_approval=requires_approval)


def expected_usage(messages: list[ac.AgentMessage]) -> list[dict[str, Any]]:
    """AG-UI's accounting of the run's replies, worked out here independently."""
    rows: dict[tuple[str, str], Usage] = {}
    for m in messages:
        if isinstance(m, AssistantMessage):
            rows[(m.provider, m.model)] = rows.get((m.provider, m.model), Usage()) + m.usage
    return [{"provider": provider, "model": model,
             "inputTokens": u.input + u.cache_read + u.cache_write, "outputTokens": u.output,
             "totalTokens": u.input + u.cache_read + u.cache_write + u.output,
             "cachedInputTokens": u.cache_read,
             "cacheWriteInputTokens": u.cache_write}
            for (provider, model), u in rows.items()]


def scripted(*replies: list[AssistantMessageEvent]) -> Callable[..., AssistantMessageEventStream]:
    """A `stream_fn` serving `replies` (each the provider's exact events) one per call."""
    queue = list(replies)

    def stream(model: Model, context: Context, options: StreamOptions,
               ) -> AssistantMessageEventStream:
        return AssistantMessageEventStream.from_iterator(queue.pop(0))

    return stream


def reply(*content: Any, stop: StopReason = StopReason.STOP) -> AssistantMessage:
    return AssistantMessage(list(content), "scripted", "scripted", "m1", stop_reason=stop)


@pytest.fixture
def slow() -> Iterator[FauxProvider]:
    """A faux provider streaming one 4-character token every 20 ms (for aborts mid-stream)."""
    provider = register_faux_provider(tokens_per_second=50, token_size=(1, 1))
    yield provider
    provider.unregister()


# --- a reply, reasoning and tool calls -------------------------------------------------------


def test_a_text_reply_streams_start_contents_end_between_run_started_and_finished(
        faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("Hello there, world")])
    agent = ac.Agent(faux.get_model())

    events = collect(ag_ui_events(agent.prompt("hi"), thread_id="t1", run_id="r1"))

    assert types(events) == [T.RUN_STARTED, T.TEXT_MESSAGE_START, *[T.TEXT_MESSAGE_CONTENT] * 5,
                             T.TEXT_MESSAGE_END, T.RUN_FINISHED]
    assert events[0] == {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
    message_id = events[1]["messageId"]
    assert {e["messageId"] for e in events[1:-1]} == {message_id}
    assert joined(events, T.TEXT_MESSAGE_CONTENT, "messageId", message_id) == "Hello there, world"
    finished = events[-1]
    assert (finished["threadId"], finished["runId"], finished["outcome"]) == (
        "t1", "r1", {"type": "success"})
    assert finished["usage"] == expected_usage(agent.messages)
    assert finished["usage"][0]["outputTokens"] > 0


def test_ag_ui_events_names_a_run_with_fresh_ids_by_default(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("a"), faux_assistant_message("b")])
    agent = ac.Agent(faux.get_model())
    first = collect(ag_ui_events(agent.prompt("1")))
    second = collect(ag_ui_events(agent.prompt("2")))

    ids = {(e[0]["threadId"], e[0]["runId"]) for e in (first, second)}
    assert len(ids) == 2
    assert all(thread and run for thread, run in ids)
    for events in (first, second):
        assert (events[-1]["threadId"], events[-1]["runId"]) == (events[0]["threadId"],
                                                                 events[0]["runId"])


def test_reasoning_text_and_a_tool_call_stream_in_order_with_their_results(
        faux: FauxProvider) -> None:
    args = {"path": "/tmp/a b", "depth": 2, "names": ["x", "ÿ"]}
    faux.set_responses([
        faux_assistant_message([faux_thinking("Let me look."), faux_text("Looking."),
                                faux_tool_call("ls", args, id="call-1")]),
        faux_assistant_message("Found it."),
    ])
    agent = ac.Agent(faux.get_model(), tools=[tool("ls")])

    events = collect(ag_ui_events(agent.prompt("find it"), thread_id="t", run_id="r"))

    kinds = types(events)
    assert kinds[:5] == [T.RUN_STARTED, T.REASONING_START, T.REASONING_MESSAGE_START,
                         T.REASONING_MESSAGE_CONTENT, T.REASONING_MESSAGE_CONTENT]
    reasoning_id = events[1]["messageId"]
    assert joined(events, T.REASONING_MESSAGE_CONTENT, "messageId", reasoning_id) == (
        "Let me look.")
    end = kinds.index(T.REASONING_MESSAGE_END)
    assert kinds[end:end + 2] == [T.REASONING_MESSAGE_END, T.REASONING_END]
    assert events[end]["messageId"] == events[end + 1]["messageId"] == reasoning_id

    first_text, final_text = of_type(events, T.TEXT_MESSAGE_START)
    assert joined(events, T.TEXT_MESSAGE_CONTENT, "messageId", first_text["messageId"]) == (
        "Looking.")
    assert joined(events, T.TEXT_MESSAGE_CONTENT, "messageId", final_text["messageId"]) == (
        "Found it.")
    assert len({reasoning_id, first_text["messageId"], final_text["messageId"]}) == 3

    (start,) = of_type(events, T.TOOL_CALL_START)
    assert (start["toolCallId"], start["toolCallName"], start["parentMessageId"]) == (
        "call-1", "ls", first_text["messageId"])
    assert json.loads(joined(events, T.TOOL_CALL_ARGS, "toolCallId", "call-1")) == args
    assert len(of_type(events, T.TOOL_CALL_ARGS)) > 1  # streamed, not sent whole at the end
    (result,) = of_type(events, T.TOOL_CALL_RESULT)
    assert kinds.index(T.TOOL_CALL_END) < kinds.index(T.TOOL_CALL_RESULT) < kinds.index(
        T.TEXT_MESSAGE_START, kinds.index(T.TOOL_CALL_RESULT))
    assert (result["toolCallId"], result["content"], result["role"]) == ("call-1", "ls ok",
                                                                         "tool")
    assert result["messageId"] not in {reasoning_id, first_text["messageId"],
                                       final_text["messageId"]}
    meta = result["metadata"]["agentcore"]
    assert meta["isError"] is False
    assert isinstance(meta["durationMs"], float)
    assert meta["durationMs"] >= 0  # its value: test_the_translator_times_a_tool_call_...
    assert events[-1]["outcome"] == {"type": "success"}


def test_usage_sums_each_provider_and_model_counting_cache_tokens_as_input(
        faux: FauxProvider) -> None:
    # the faux model reports prompt caching for a session id: writes first, then reads
    faux.set_responses([faux_assistant_message([faux_tool_call("ls", {}, id="c1")]),
                        faux_assistant_message("done")])
    agent = ac.Agent(faux.get_model(), tools=[tool("ls")], session_id="cache-me")

    events = collect(ag_ui_events(agent.prompt("go")))

    replies = [m for m in agent.messages if isinstance(m, AssistantMessage)]
    assert len(replies) == 2
    assert replies[0].usage.cache_write > 0
    assert replies[1].usage.cache_read > 0
    total = replies[0].usage + replies[1].usage
    (row,) = events[-1]["usage"]
    assert row == {"provider": "faux", "model": "faux-1",
                   "inputTokens": total.input + total.cache_read + total.cache_write,
                   "outputTokens": total.output,
                   "totalTokens": total.total_tokens,
                   "cachedInputTokens": total.cache_read,
                   "cacheWriteInputTokens": total.cache_write}


def test_usage_has_one_row_per_provider_and_model() -> None:
    def answer(provider: str, model: str, inp: int, out: int, read: int = 0, write: int = 0,
               ) -> AssistantMessage:
        return AssistantMessage([TextContent("x")], "api", provider, model,
                                usage=Usage(inp, out, read, write, inp + out + read + write))

    messages: list[ac.AgentMessage] = [
        answer("anthropic", "claude", 10, 5, read=100, write=7), ac.UserMessage("more"),
        answer("openai", "gpt", 3, 4), answer("anthropic", "claude", 1, 2, read=50),
        answer("anthropic", "haiku", 6, 1),
    ]
    translator = Translator("t", "r")

    assert translator.feed(AgentEndEvent(messages)) == []
    (finished,) = translator.finish(EndedRun(messages))  # type: ignore[arg-type]

    assert translator.finished
    assert wire(finished)["usage"] == [
        {"provider": "anthropic", "model": "claude", "inputTokens": 168, "outputTokens": 7,
         "totalTokens": 175, "cachedInputTokens": 150,
         "cacheWriteInputTokens": 7},
        {"provider": "openai", "model": "gpt", "inputTokens": 3, "outputTokens": 4,
         "totalTokens": 7, "cachedInputTokens": 0,
         "cacheWriteInputTokens": 0},
        {"provider": "anthropic", "model": "haiku", "inputTokens": 6, "outputTokens": 1,
         "totalTokens": 7, "cachedInputTokens": 0,
         "cacheWriteInputTokens": 0},
    ]


def test_a_run_without_replies_finishes_without_usage() -> None:
    translator = Translator("t", "r")
    (finished,) = translator.finish(EndedRun([ac.UserMessage("hi")]))  # type: ignore[arg-type]
    assert "usage" not in wire(finished)
    assert wire(finished)["outcome"] == {"type": "success"}


def test_parallel_tool_calls_each_stream_and_get_their_own_result(faux: FauxProvider) -> None:
    faux.set_responses([
        faux_assistant_message([faux_tool_call("ls", {"p": 1}, id="a"),
                                faux_tool_call("ls", {"p": 2}, id="b"),
                                faux_tool_call("cat", {}, id="c")]),
        faux_assistant_message("ok"),
    ])
    agent = ac.Agent(faux.get_model(), tools=[tool("ls"), tool("cat")])

    events = collect(ag_ui_events(agent.prompt("go")))

    assert [(e["toolCallId"], e["toolCallName"]) for e in of_type(events, T.TOOL_CALL_START)] == [
        ("a", "ls"), ("b", "ls"), ("c", "cat")]
    assert {e["parentMessageId"] for e in of_type(events, T.TOOL_CALL_START)} == {
        of_type(events, T.TOOL_CALL_START)[0]["parentMessageId"]}
    for call_id, args in (("a", {"p": 1}), ("b", {"p": 2}), ("c", {})):
        assert json.loads(joined(events, T.TOOL_CALL_ARGS, "toolCallId", call_id)) == args
    assert sorted((e["toolCallId"], e["content"]) for e in of_type(events, T.TOOL_CALL_RESULT)) == [
        ("a", "ls ok"), ("b", "ls ok"), ("c", "cat ok")]


def test_a_failing_tool_gives_a_result_marked_as_an_error(faux: FauxProvider) -> None:
    def broken(args: Any, signal: ac.AbortSignal) -> ac.AgentToolResult:
        raise RuntimeError("disk full")

    faux.set_responses([faux_assistant_message([faux_tool_call("save", {}, id="s")]),
                        faux_assistant_message("sorry")])
    agent = ac.Agent(faux.get_model(), tools=[tool("save", broken)])

    events = collect(ag_ui_events(agent.prompt("save it")))

    (result,) = of_type(events, T.TOOL_CALL_RESULT)
    stored = next(m for m in agent.messages if isinstance(m, ToolResultMessage))
    assert stored.is_error
    assert "disk full" in result["content"]
    assert result["content"] == stored.text
    assert result["metadata"]["agentcore"]["isError"] is True
    assert result["metadata"]["agentcore"]["durationMs"] >= 0
    assert events[-1]["outcome"] == {"type": "success"}


def test_a_tool_result_with_an_image_is_text_and_image_parts(faux: FauxProvider) -> None:
    def snap(args: Any, signal: ac.AbortSignal) -> ac.AgentToolResult:
        return ac.AgentToolResult([ac.TextContent("here"), ac.ImageContent("aGk=", "image/png")])

    faux.set_responses([faux_assistant_message([faux_tool_call("snap", {}, id="s")]),
                        faux_assistant_message("a picture")])
    agent = ac.Agent(faux.get_model(), tools=[tool("snap", snap)])

    events = collect(ag_ui_events(agent.prompt("look")))

    (result,) = of_type(events, T.TOOL_CALL_RESULT)
    assert result["content"] == [
        {"type": "text", "text": "here"},
        {"type": "image", "source": {"type": "data", "value": "aGk=", "mimeType": "image/png"}}]


@pytest.mark.parametrize("between", [
    pytest.param([], id="adjacent"),
    pytest.param([faux_thinking("hmm")], id="around-thinking"),
])
def test_two_text_blocks_of_one_reply_are_two_messages(faux: FauxProvider,
                                                       between: list[Any]) -> None:
    faux.set_responses([faux_assistant_message([faux_text("First part."), *between,
                                                faux_text("Second part.")])])
    agent = ac.Agent(faux.get_model())

    events = collect(ag_ui_events(agent.prompt("hi")))

    starts = [e["messageId"] for e in of_type(events, T.TEXT_MESSAGE_START)]
    assert len(starts) == len(set(starts)) == 2
    assert [joined(events, T.TEXT_MESSAGE_CONTENT, "messageId", i) for i in starts] == [
        "First part.", "Second part."]
    assert not {e["messageId"] for e in of_type(events, T.REASONING_START)} & set(starts)


# --- approvals -------------------------------------------------------------------------------


def test_calls_waiting_for_approval_end_the_run_with_one_interrupt_each(
        faux: FauxProvider) -> None:
    faux.set_responses([
        faux_assistant_message([faux_tool_call("rm", {"path": "a"}, id="c1"),
                                faux_tool_call("ls", {}, id="c2"),
                                faux_tool_call("rm", {"path": "b" * 300}, id="c3")]),
        faux_assistant_message("all done"),
    ])
    agent = ac.Agent(faux.get_model(), tools=[tool("rm", requires_approval=True), tool("ls")])

    paused = collect(ag_ui_events(agent.prompt("clean up"), thread_id="t", run_id="r1"))

    assert [e["value"] for e in of_type(paused, T.CUSTOM)] == [
        {"toolCallId": "c1", "toolName": "rm", "args": {"path": "a"}},
        {"toolCallId": "c3", "toolName": "rm", "args": {"path": "b" * 300}}]
    assert {e["name"] for e in of_type(paused, T.CUSTOM)} == {APPROVAL_EVENT}
    assert of_type(paused, T.TOOL_CALL_RESULT) == []
    assert types(paused).index(T.TOOL_CALL_END) < types(paused).index(T.CUSTOM)
    outcome = paused[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    first, second = outcome["interrupts"]
    assert first == {"id": "c1", "reason": APPROVAL_REASON, "toolCallId": "c1",
                     "message": 'Allow rm({"path": "a"})?',
                     "responseSchema": {
                         "type": "object", "required": ["approved"],
                         "properties": {"approved": {"type": "boolean"},
                                        "reason": {"type": "string"}}}}
    assert (second["id"], second["toolCallId"], second["reason"]) == ("c3", "c3", "tool_approval")
    assert second["message"].startswith('Allow rm({"path": "bbb')
    assert len(second["message"]) < 230  # long arguments are cut short in the question
    assert paused[-1]["usage"] == expected_usage(agent.messages)
    assert [c.id for c in agent.state.pending_approvals] == ["c1", "c3"]

    resumed = collect(ag_ui_events(agent.continue_(approvals={"c1": True, "c3": "too much"}),
                                   thread_id="t", run_id="r2"))

    results = {e["toolCallId"]: e for e in of_type(resumed, T.TOOL_CALL_RESULT)}
    assert {k: (v["content"], v["metadata"]["agentcore"]["isError"]) for k, v in
            results.items()} == {"c1": ("rm ok", False), "c2": ("ls ok", False),
                                 "c3": ("denied: too much", True)}
    assert "durationMs" in results["c1"]["metadata"]["agentcore"]
    (decided,) = of_type(resumed, T.CUSTOM)  # the decisions, as they enter the transcript
    assert decided["name"] == "agentcore.tool_approval"
    assert {k: v for k, v in decided["value"].items() if k != "messageId"} == {
        "approved": ["c1"], "denied": {"c3": "too much"}}
    assert types(resumed).index(T.CUSTOM) < types(resumed).index(T.TOOL_CALL_RESULT)
    assert of_type(resumed, T.TOOL_CALL_START) == []  # the calls streamed in the paused run
    assert resumed[-1]["outcome"] == {"type": "success"}
    assert resumed[-1]["runId"] == "r2"


def test_approve_deciding_inline_runs_the_calls_without_an_interrupt(faux: FauxProvider) -> None:
    asked: list[str] = []

    def approve(call: ToolCall, _: ac.AgentTool) -> bool | str:
        asked.append(call.id)
        return True if call.id == "c1" else "not that one"

    faux.set_responses([
        faux_assistant_message([faux_tool_call("rm", {}, id="c1"),
                                faux_tool_call("rm", {}, id="c2")]),
        faux_assistant_message("done"),
    ])
    agent = ac.Agent(faux.get_model(), tools=[tool("rm", requires_approval=True)],
                     approve=approve)

    events = collect(ag_ui_events(agent.prompt("go")))

    assert sorted(asked) == ["c1", "c2"]
    assert events[-1]["outcome"] == {"type": "success"}
    assert {e["toolCallId"]: e["content"] for e in of_type(events, T.TOOL_CALL_RESULT)} == {
        "c1": "rm ok", "c2": "denied: not that one"}
    assert agent.state.pending_approvals == []


# --- aborts and errors -----------------------------------------------------------------------


@pytest.mark.parametrize(("block", "opened", "content"), [
    pytest.param(faux_text("word " * 100), T.TEXT_MESSAGE_START, T.TEXT_MESSAGE_CONTENT,
                 id="text"),
    pytest.param(faux_thinking("hmm " * 100), T.REASONING_START, T.REASONING_MESSAGE_CONTENT,
                 id="reasoning"),
    pytest.param(faux_tool_call("ls", {"long": "x" * 400}, id="c1"), T.TOOL_CALL_START,
                 T.TOOL_CALL_ARGS, id="tool-call"),
])
def test_an_aborted_run_closes_what_it_opened_and_finishes_cancelled(
        slow: FauxProvider, block: Any, opened: T, content: T) -> None:
    slow.set_responses([faux_assistant_message([faux_text("Sure."), block])])
    agent = ac.Agent(slow.get_model(), tools=[tool("ls")])
    run = agent.prompt("go")

    out = []
    for event in ag_ui_events(run):
        out.append(event)
        if event.type == content:
            run.abort()
    events = collect(out)

    assert len(of_type(events, content)) < 5  # it stopped streaming at once
    assert len(of_type(events, opened)) == 1
    assert events[-1]["type"] == T.RUN_FINISHED
    assert events[-1]["outcome"] == {"type": "cancelled"}
    assert of_type(events, T.TOOL_CALL_RESULT) == []
    assert agent.messages[-1].stop_reason is StopReason.ABORTED


def test_a_run_aborted_while_a_tool_runs_finishes_cancelled(faux: FauxProvider) -> None:
    started = threading.Event()

    def wait(args: Any, signal: ac.AbortSignal) -> ac.AgentToolResult:
        started.set()
        signal.wait(WAIT)
        return ac.AgentToolResult([ac.TextContent("stopped")])

    faux.set_responses([faux_assistant_message([faux_tool_call("wait", {}, id="w")]),
                        faux_assistant_message("never")])
    agent = ac.Agent(faux.get_model(), tools=[tool("wait", wait)])
    run = agent.prompt("go")
    assert started.wait(WAIT)
    run.abort()

    events = collect(ag_ui_events(run))

    assert run.signal.aborted
    assert faux.call_count == 1
    assert events[-1]["outcome"] == {"type": "cancelled"}


def test_a_model_error_ends_the_run_with_run_error(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("Partial answ", stop_reason="error",
                                               error_message="the model is overloaded")])
    agent = ac.Agent(faux.get_model())

    events = collect(ag_ui_events(agent.prompt("hi")))

    assert types(events)[-2:] == [T.TEXT_MESSAGE_END, T.RUN_ERROR]
    assert events[-1]["message"] == "the model is overloaded"
    assert events[-1]["usage"] == expected_usage(agent.messages)
    assert joined(events, T.TEXT_MESSAGE_CONTENT, "messageId",
                  events[1]["messageId"]) == "Partial answ"


def test_a_model_failing_before_it_streams_is_a_run_error(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())  # nothing queued: the faux model fails the call

    events = collect(ag_ui_events(agent.prompt("hi")))

    assert types(events) == [T.RUN_STARTED, T.RUN_ERROR]
    assert events[-1]["message"] == "No more faux responses queued"


# --- provider events the faux model never sends ----------------------------------------------


def provider_events(final: AssistantMessage, deltas: Callable[[int, str], list[str]],
                    ) -> list[AssistantMessageEvent]:
    """The events a provider sends for `final`: each block started, its `deltas(index, text)`,
    ended; the partial of every event is `final` itself (all the translator reads of it)."""
    events: list[AssistantMessageEvent] = [StartEvent(final)]
    for i, block in enumerate(final.content):
        if isinstance(block, ToolCall):
            events.append(ToolCallStartEvent(i, final))
            events += [ToolCallDeltaEvent(i, d, final)
                       for d in deltas(i, json.dumps(block.arguments))]
            events.append(ToolCallEndEvent(i, block, final))
        elif isinstance(block, ThinkingContent):
            events.append(ThinkingStartEvent(i, final))
            events += [ThinkingDeltaEvent(i, d, final) for d in deltas(i, block.thinking)]
            events.append(ThinkingEndEvent(i, block.thinking, final))
        else:
            events.append(TextStartEvent(i, final))
            events += [TextDeltaEvent(i, d, final) for d in deltas(i, block.text)]
            events.append(TextEndEvent(i, block.text, final))
    events.append(DoneEvent(final.stop_reason, final))
    return events


def test_a_tool_call_whose_arguments_never_streamed_gets_them_in_one_args_event(
        faux: FauxProvider) -> None:
    call = ToolCall("c1", "ls", {"path": "/x", "all": True})
    first = reply(TextContent("Listing."), call, stop=StopReason.TOOL_USE)
    # text streams, the call's arguments arrive only with its end (as some providers do)
    no_args = provider_events(first, lambda i, text: [text] if i == 0 else [])
    done = reply(TextContent("ok"))
    agent = ac.Agent(faux.get_model(),
                     tools=[tool("ls")],
                     stream_fn=scripted(no_args, provider_events(done, lambda i, t: [t])))

    events = collect(ag_ui_events(agent.prompt("go")))

    assert [e["delta"] for e in of_type(events, T.TOOL_CALL_ARGS)] == [json.dumps(call.arguments)]
    kinds = types(events)
    assert kinds.index(T.TOOL_CALL_START) < kinds.index(T.TOOL_CALL_ARGS) < kinds.index(
        T.TOOL_CALL_END)
    (result,) = of_type(events, T.TOOL_CALL_RESULT)
    assert result["content"] == "ls ok"


def test_empty_deltas_produce_no_content_events(faux: FauxProvider) -> None:
    call = ToolCall("c1", "ls", {"a": 1})
    first = reply(ThinkingContent("hm"), TextContent("Hi"), call, stop=StopReason.TOOL_USE)

    def with_empties(index: int, text: str) -> list[str]:
        return ["", text[:1], "", text[1:], ""]

    agent = ac.Agent(faux.get_model(),
                     tools=[tool("ls")],
                     stream_fn=scripted(provider_events(first, with_empties),
                                        provider_events(reply(TextContent("ok")),
                                                        lambda i, t: [t])))

    events = collect(ag_ui_events(agent.prompt("go")))  # check_stream refuses empty deltas

    assert [e["delta"] for e in of_type(events, T.REASONING_MESSAGE_CONTENT)] == ["h", "m"]
    assert [e["delta"] for e in of_type(events, T.TEXT_MESSAGE_CONTENT)] == ["H", "i", "ok"]
    assert [e["delta"] for e in of_type(events, T.TOOL_CALL_ARGS)] == ["{", '"a": 1}']


def test_an_empty_text_block_opens_and_closes_with_no_content(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model(),
                     stream_fn=scripted(provider_events(reply(TextContent("")),
                                                        lambda i, t: [t])))

    events = collect(ag_ui_events(agent.prompt("go")))

    assert types(events) == [T.RUN_STARTED, T.TEXT_MESSAGE_START, T.TEXT_MESSAGE_END,
                             T.RUN_FINISHED]


# --- the translator fed by hand --------------------------------------------------------------


def test_compaction_events_become_custom_events() -> None:
    translator = Translator("t", "r")
    summary = CompactionSummaryMessage("we talked about cats", 12_000)

    start = translator.feed(CompactionStartEvent("threshold"))
    end = translator.feed(CompactionEndEvent(summary, 12_000, 900))
    overflow = translator.feed(CompactionStartEvent("overflow"))

    assert [wire(e) for e in start + end + overflow] == [
        {"type": "CUSTOM", "name": "agentcore.compaction_start", "value": {"reason": "threshold"}},
        {"type": "CUSTOM", "name": "agentcore.compaction_end",
         "value": {"summary": "we talked about cats", "tokensBefore": 12_000,
                   "tokensAfter": 900}},
        {"type": "CUSTOM", "name": "agentcore.compaction_start", "value": {"reason": "overflow"}},
    ]
    assert not translator.finished


def test_the_translator_times_a_tool_call_with_its_clock() -> None:
    now = [100.0]
    translator = Translator("t", "r", clock=lambda: now[0])
    call = ToolCall("c1", "ls", {})
    final = reply(call, stop=StopReason.TOOL_USE)

    out: list[ag.BaseEvent] = [*translator.start()]
    out += translator.feed(MessageStartEvent(final))
    for event in provider_events(final, lambda i, t: [])[1:-1]:
        out += translator.feed(MessageUpdateEvent(final, event))
    out += translator.feed(MessageEndEvent(final))
    out += translator.feed(ac.ToolExecutionStartEvent("c1", "ls", {}))
    now[0] = 100.25
    result = ToolResultMessage("c1", "ls", [TextContent("a b")])
    out += translator.feed(MessageStartEvent(result))
    out += translator.feed(MessageEndEvent(result))
    out += translator.feed(AgentEndEvent([final, result]))
    out += translator.finish(EndedRun([final, result]))  # type: ignore[arg-type]

    events = collect(out)
    assert types(events) == [T.RUN_STARTED, T.TOOL_CALL_START, T.TOOL_CALL_ARGS, T.TOOL_CALL_END,
                             T.TOOL_CALL_RESULT, T.RUN_FINISHED]
    assert events[2]["delta"] == "{}"
    assert events[4]["metadata"] == {"agentcore": {"isError": False, "durationMs": 250.0}}


def test_error_closes_the_translation_with_run_error() -> None:
    translator = Translator("t", "r")
    (error,) = translator.error("streaming failed: boom")
    assert translator.finished
    assert wire(error)["message"] == "streaming failed: boom"


def test_a_fallback_closes_the_failed_reply_and_names_it_for_the_client_to_drop() -> None:
    provider = register_faux_provider(models=["a", "b"], token_size=(1, 1))
    try:
        provider.set_responses([
            faux_assistant_message("Partial answ", stop_reason="error",
                                   error_message="the model is overloaded"),
            faux_assistant_message("Whole answer"),
        ])
        agent = ac.Agent(provider.get_model("a"), fallback_models=[provider.get_model("b")])
        run = agent.prompt("hi")
        events = collect(ag_ui_events(run))
    finally:
        provider.unregister()
    fallback = [e for e in events if e["type"] == T.CUSTOM]
    assert [e["name"] for e in fallback] == ["agentcore.model_fallback"]
    value = fallback[0]["value"]
    failed_id = events[1]["messageId"]
    assert value == {"messageId": failed_id, "model": "faux/b",
                     "reason": "faux/a failed: the model is overloaded", "circuitOpen": False}
    at = events.index(fallback[0])
    assert types(events)[at - 1] == T.TEXT_MESSAGE_END  # what it opened closed first
    assert joined(events, T.TEXT_MESSAGE_CONTENT, "messageId", failed_id) == "Partial answ"
    starts = of_type(events, T.TEXT_MESSAGE_START)
    assert len(starts) == 2
    assert starts[1]["messageId"] != failed_id
    assert joined(events, T.TEXT_MESSAGE_CONTENT, "messageId", starts[1]["messageId"]) == (
        "Whole answer")
    assert events[-1]["type"] == T.RUN_FINISHED
    # usage counts the failed reply, under its own model
    assert [row["model"] for row in events[-1]["usage"]] == ["a", "b"]


def test_a_child_agent_s_events_are_custom_events_with_its_text_as_deltas() -> None:
    from agentcore.testing import scripted_model, tool_call

    with scripted_model(["Paris is the capital."], token_size=(1, 1)) as child_model, \
            scripted_model([tool_call("researcher", {"input": "capital?"}, id="c1"),
                            "Paris."]) as parent_model:
        researcher = ac.Agent(child_model.model, name="researcher")
        parent = ac.Agent(parent_model.model, name="lead", tools=[researcher.as_tool()])
        events = collect(ag_ui_events(parent.prompt("go")))
    subs = [e for e in events if e["type"] == T.CUSTOM and e["name"] == "agentcore.subagent"]
    assert {(e["value"]["toolCallId"], e["value"]["agentName"], tuple(e["value"]["path"]))
            for e in subs} == {("c1", "researcher", ("lead", "researcher"))}
    kinds = [e["value"]["event"]["type"] for e in subs]
    assert kinds[0] == "agent_start"
    assert kinds[-1] == "agent_end"
    assert "message_update" not in kinds
    text = "".join(e["value"]["event"]["delta"] for e in subs
                   if e["value"]["event"]["type"] == "text_delta")
    assert text == "Paris is the capital."
    # the child's events come between its call's start and its result
    call_start = next(i for i, e in enumerate(events) if e["type"] == T.TOOL_CALL_START)
    call_result = next(i for i, e in enumerate(events) if e["type"] == T.TOOL_CALL_RESULT)
    assert all(call_start < events.index(e) < call_result for e in subs)


def test_a_tripped_guardrail_is_a_custom_event_before_the_run_s_error(faux: FauxProvider,
                                                                      ) -> None:
    faux.set_responses([faux_assistant_message("the password is hunter2"),
                        faux_assistant_message("I cannot say")])

    def no_secrets(message: ac.AssistantMessage, output: Any) -> str | None:
        return "a secret in the reply" if "password" in message.text else None

    agent = ac.Agent(faux.get_model(), output_guardrails=[ac.retry_guardrail(no_secrets)])
    retried = collect(ag_ui_events(agent.prompt("tell me"), thread_id="t", run_id="r"))
    (trip,) = of_type(retried, T.CUSTOM)
    assert (trip["name"], trip["value"]) == ("agentcore.guardrail_tripped", {
        "kind": "output", "name": "no_secrets", "reason": "a secret in the reply",
        "retry": True})
    assert retried[-1]["type"] == T.RUN_FINISHED  # sent back to the model, which complied

    faux.set_responses([faux_assistant_message("the password is hunter2")])
    agent = ac.Agent(faux.get_model(), output_guardrails=[no_secrets])
    ended = collect(ag_ui_events(agent.prompt("tell me"), thread_id="t", run_id="r"))
    (trip,) = of_type(ended, T.CUSTOM)
    assert trip["value"]["retry"] is False
    assert ended[-1] == {"type": T.RUN_ERROR,
                         "message": "guardrail tripped: no_secrets: a secret in the reply",
                         "usage": ended[-1]["usage"]}
    assert types(ended).index(T.CUSTOM) < len(ended) - 1
