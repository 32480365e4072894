"""The agent loop: the reference loop scenarios and one test per numbered semantic (API.md §5)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

import attrs
import pytest
from _internals import reply_module

import agentcore as ac
from agentcore.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
)

SCHEMA = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}


def text_of(result: ac.AgentToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, ac.TextContent))


def make_tool(
    name: str = "echo",
    fn: Callable[[str, Any, ac.AbortSignal, Any], ac.AgentToolResult] | None = None,
    **kwargs: Any,
) -> ac.AgentTool:
    def echo(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        return ac.AgentToolResult([ac.TextContent(f"echoed: {args['value']}")], details=args)

    return ac.AgentTool(name, f"The {name} tool", kwargs.pop("parameters", SCHEMA), fn or echo,
                        **kwargs)


class Recorder:
    """An EventSink that keeps every event."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def __call__(self, event: Any) -> None:
        self.events.append(event)

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, cls: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, cls)]


def capture(calls: list[ac.Context], reply: ac.AssistantMessage) -> Any:
    """A faux response function that records the context the model was sent."""

    def respond(context: ac.Context, options: ac.StreamOptions, model: ac.Model) -> Any:
        calls.append(context)
        return reply

    return respond


def run(
    faux: FauxProvider,
    prompt: str | list[Any] = "hi",
    tools: list[ac.AgentTool] | None = None,
    messages: list[Any] | None = None,
    signal: ac.AbortSignal | None = None,
    **config: Any,
) -> tuple[list[Any], Recorder]:
    sink = Recorder()
    prompts = [ac.UserMessage(prompt)] if isinstance(prompt, str) else prompt
    context = ac.AgentContext("You are a test.", list(messages or []), list(tools or []))
    out = ac.run_agent_loop(prompts, context, ac.AgentLoopConfig(model=faux.get_model(), **config),
                            sink, signal=signal)
    return out, sink


def roles(messages: list[Any]) -> list[str]:
    return [m.role for m in messages]


# --- reference catalogue (agent loop) -------------------------------------------------------


def test_loop_plain_reply_emits_the_full_event_sequence(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("Hi there!")])
    out, sink = run(faux)
    assert roles(out) == ["user", "assistant"]
    assert out[1].text == "Hi there!"
    updates = len(sink.of(ac.MessageUpdateEvent))
    assert sink.types == (
        ["agent_start", "turn_start", "message_start", "message_end", "message_start"]
        + ["message_update"] * updates
        + ["message_end", "turn_end", "agent_end"]
    )
    assert sink.events[-1] == ac.AgentEndEvent(out)
    assert sink.of(ac.TurnEndEvent) == [ac.TurnEndEvent(out[1], [])]


def test_loop_custom_message_types_are_filtered_by_convert_to_llm(faux: FauxProvider) -> None:
    @attrs.frozen
    class Notification:
        role: ClassVar[str] = "notification"
        text: str

    seen: list[list[Any]] = []

    def convert(messages: list[Any]) -> list[Any]:
        converted = [m for m in messages if m.role != "notification"]
        seen.append(converted)
        return converted

    faux.set_responses([faux_assistant_message("ok")])
    out, _ = run(faux, messages=[Notification("ping")], convert_to_llm=convert)
    assert [roles(s) for s in seen] == [["user"]]
    assert roles(out) == ["user", "assistant"]


def test_loop_transform_context_runs_before_convert_to_llm(faux: FauxProvider) -> None:
    old = [ac.UserMessage(f"old {i}") for i in range(4)]
    order: list[str] = []
    received: list[list[Any]] = []

    def transform(messages: list[Any], signal: ac.AbortSignal) -> list[Any]:
        order.append("transform")
        assert isinstance(signal, ac.AbortSignal)
        return messages[-2:]

    def convert(messages: list[Any]) -> list[Any]:
        order.append("convert")
        received.append(messages)
        return list(messages)

    faux.set_responses([faux_assistant_message("ok")])
    run(faux, prompt="new", messages=old, transform_context=transform, convert_to_llm=convert)
    assert order == ["transform", "convert"]
    assert [m.content for m in received[0]] == ["old 3", "new"]


def test_loop_runs_a_tool_and_feeds_the_result_back(faux: FauxProvider) -> None:
    calls: list[ac.Context] = []
    call = faux_tool_call("echo", {"value": "hello"}, id="c1")
    faux.set_responses([faux_assistant_message([call]),
                        capture(calls, faux_assistant_message("done"))])
    out, sink = run(faux, tools=[make_tool()])
    assert roles(out) == ["user", "assistant", "toolResult", "assistant"]
    result = out[2]
    assert result == ac.ToolResultMessage("c1", "echo", [ac.TextContent("echoed: hello")],
                                          details={"value": "hello"}, timestamp=result.timestamp)
    assert sink.of(ac.ToolExecutionStartEvent) == [
        ac.ToolExecutionStartEvent("c1", "echo", {"value": "hello"})
    ]
    [end] = sink.of(ac.ToolExecutionEndEvent)
    assert (end.tool_call_id, end.is_error, text_of(end.result)) == ("c1", False, "echoed: hello")
    assert roles(calls[0].messages) == ["user", "assistant", "toolResult"]
    assert calls[0].tools is not None
    assert [t.name for t in calls[0].tools] == ["echo"]


def test_loop_length_truncated_tool_calls_are_not_run(faux: FauxProvider) -> None:
    ran: list[Any] = []

    def tool_fn(*args: Any) -> ac.AgentToolResult:
        ran.append(args)
        return ac.AgentToolResult([])

    truncated = faux_assistant_message([faux_tool_call("echo", {"value": "x"})],
                                       stop_reason="length")
    faux.set_responses([truncated, faux_assistant_message("retrying later")])
    out, sink = run(faux, tools=[make_tool(fn=tool_fn)])
    assert ran == []
    [end] = sink.of(ac.ToolExecutionEndEvent)
    assert end.is_error
    assert "output token limit" in text_of(end.result)
    assert faux.call_count == 2
    assert roles(out) == ["user", "assistant", "toolResult", "assistant"]


def test_loop_uses_mutated_before_tool_call_args_without_revalidating(
    faux: FauxProvider,
) -> None:
    got: list[Any] = []

    def tool_fn(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ac.AgentToolResult:
        got.append(args["value"])
        return ac.AgentToolResult([ac.TextContent("ok")])

    def before(ctx: ac.BeforeToolCallContext, signal: ac.AbortSignal) -> None:
        ctx.args["value"] = 123

    faux.set_responses([faux_assistant_message([faux_tool_call("echo", {"value": "x"})]),
                        faux_assistant_message("done")])
    run(faux, tools=[make_tool(fn=tool_fn)], before_tool_call=before)
    assert got == [123]


def test_loop_prepare_arguments_runs_before_validation(faux: FauxProvider) -> None:
    schema = {
        "type": "object",
        "properties": {"edits": {"type": "array", "items": {
            "type": "object",
            "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
            "required": ["oldText", "newText"]}}},
        "required": ["edits"],
    }
    got: list[Any] = []

    def prepare(raw: Any) -> Any:
        if "oldText" in raw:
            return {"edits": [{"oldText": raw["oldText"], "newText": raw["newText"]}]}
        return raw

    def edit(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ac.AgentToolResult:
        got.append(args["edits"])
        return ac.AgentToolResult([ac.TextContent("edited")])

    tool = make_tool("edit", edit, parameters=schema, prepare_arguments=prepare)
    legacy = faux_tool_call("edit", {"oldText": "before", "newText": "after"})
    faux.set_responses([faux_assistant_message([legacy]), faux_assistant_message("done")])
    _, sink = run(faux, tools=[tool])
    assert got == [[{"oldText": "before", "newText": "after"}]]
    [start] = sink.of(ac.ToolExecutionStartEvent)
    assert start.args == {"oldText": "before", "newText": "after"}  # the raw arguments


def test_loop_parallel_end_events_in_completion_order_results_in_source_order(
    faux: FauxProvider,
) -> None:
    fast_ended = threading.Event()

    class Sink(Recorder):
        def __call__(self, event: Any) -> None:
            super().__call__(event)
            if isinstance(event, ac.ToolExecutionEndEvent) and event.tool_call_id == "tool-2":
                fast_ended.set()

    def slow(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ac.AgentToolResult:
        # Ends only once the fast call's end is out: completion order is then certain (the
        # fast tool setting a flag before it returns would race the slow one's return)
        assert fast_ended.wait(5), "the fast tool's end never came while the slow one waited"
        return ac.AgentToolResult([ac.TextContent("slow")])

    def fast(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ac.AgentToolResult:
        return ac.AgentToolResult([ac.TextContent("fast")])

    reply = faux_assistant_message([faux_tool_call("slow", {"value": "a"}, id="tool-1"),
                                    faux_tool_call("fast", {"value": "b"}, id="tool-2")])
    faux.set_responses([reply, faux_assistant_message("done")])
    sink = Sink()
    context = ac.AgentContext("You are a test.", [],
                              [make_tool("slow", slow), make_tool("fast", fast)])
    out = ac.run_agent_loop([ac.UserMessage("hi")], context,
                            ac.AgentLoopConfig(model=faux.get_model()), sink)
    assert [e.tool_call_id for e in sink.of(ac.ToolExecutionEndEvent)] == ["tool-2", "tool-1"]
    ends = [e.message.tool_call_id for e in sink.of(ac.MessageEndEvent)
            if isinstance(e.message, ac.ToolResultMessage)]
    assert ends == ["tool-1", "tool-2"]
    [turn_end, _] = sink.of(ac.TurnEndEvent)
    assert [r.tool_call_id for r in turn_end.tool_results] == ["tool-1", "tool-2"]
    assert [m.tool_call_id for m in out if isinstance(m, ac.ToolResultMessage)] == [
        "tool-1", "tool-2"]


def test_loop_steering_is_injected_after_all_tool_calls_complete(faux: FauxProvider) -> None:
    executed: list[str] = []
    steering: list[Any] = []
    interrupt = ac.UserMessage("interrupt")

    def tool_fn(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ac.AgentToolResult:
        executed.append(args["value"])
        if len(executed) == 1:
            steering.append(interrupt)
        return ac.AgentToolResult([ac.TextContent("ok")])

    def poll() -> list[Any]:
        out, steering[:] = list(steering), []
        return out

    calls: list[ac.Context] = []
    reply = faux_assistant_message([faux_tool_call("echo", {"value": "first"}),
                                    faux_tool_call("echo", {"value": "second"})])
    faux.set_responses([reply, capture(calls, faux_assistant_message("done"))])
    _, sink = run(faux, tools=[make_tool(fn=tool_fn)], tool_execution="sequential",
                  get_steering_messages=poll)
    assert executed == ["first", "second"]
    assert [e.is_error for e in sink.of(ac.ToolExecutionEndEvent)] == [False, False]
    starts = [e.message for e in sink.of(ac.MessageStartEvent)]
    interrupt_at = starts.index(interrupt)
    result_at = [i for i, m in enumerate(starts) if isinstance(m, ac.ToolResultMessage)]
    assert len(result_at) == 2
    assert all(i < interrupt_at for i in result_at)
    assert interrupt in calls[0].messages


class ConcurrencyProbe:
    """A tool body that records how many calls ran at once."""

    def __init__(self, hold: float = 0.05) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.peak = 0
        self.order: list[str] = []
        self.hold = hold

    def __call__(self, tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
            self.order.append(args["value"])
        signal.wait(self.hold)
        with self.lock:
            self.active -= 1
        return ac.AgentToolResult([ac.TextContent(args["value"])])


def two_calls(name_a: str, name_b: str) -> ac.AssistantMessage:
    return faux_assistant_message([faux_tool_call(name_a, {"value": "a"}, id="tool-1"),
                                   faux_tool_call(name_b, {"value": "b"}, id="tool-2")])


def test_loop_sequential_tool_runs_calls_one_at_a_time(faux: FauxProvider) -> None:
    probe = ConcurrencyProbe()
    faux.set_responses([two_calls("seq", "seq"), faux_assistant_message("done")])
    out, _ = run(faux, tools=[make_tool("seq", probe, execution_mode="sequential")])
    assert probe.peak == 1
    assert [m.tool_call_id for m in out if isinstance(m, ac.ToolResultMessage)] == [
        "tool-1", "tool-2"]


def test_loop_one_sequential_tool_makes_the_whole_batch_sequential(faux: FauxProvider) -> None:
    probe = ConcurrencyProbe()
    tools = [make_tool("slow", probe, execution_mode="sequential"), make_tool("fast", probe)]
    faux.set_responses([two_calls("slow", "fast"), faux_assistant_message("done")])
    _, sink = run(faux, tools=tools)
    assert probe.peak == 1
    assert probe.order == ["a", "b"]
    # sequential: each call's result message comes before the next call starts
    types = [t for t in sink.types if t.startswith("tool_execution") or t == "message_end"]
    assert types[types.index("tool_execution_end") + 1] == "message_end"


def test_loop_parallel_tools_run_concurrently(faux: FauxProvider) -> None:
    probe = ConcurrencyProbe(hold=0.3)
    tools = [make_tool("a", probe, execution_mode="parallel"),
             make_tool("b", probe, execution_mode="parallel")]
    faux.set_responses([two_calls("a", "b"), faux_assistant_message("done")])
    run(faux, tools=tools)
    assert probe.peak == 2


def test_loop_prepare_next_turn_can_swap_the_context(faux: FauxProvider) -> None:
    calls: list[ac.Context] = []

    def prepare(turn: ac.PrepareNextTurnContext, signal: ac.AbortSignal) -> Any:
        ctx = turn.context
        return ac.AgentLoopTurnUpdate(
            context=ac.AgentContext("second prompt", list(ctx.messages), list(ctx.tools)))

    first = faux_assistant_message([faux_tool_call("echo", {"value": "x"})])
    faux.set_responses([capture(calls, first),
                        capture(calls, faux_assistant_message("done"))])
    run(faux, tools=[make_tool()], prepare_next_turn=prepare)
    assert [c.system_prompt for c in calls] == ["You are a test.", "second prompt"]


def test_loop_should_stop_after_turn_ends_the_run_at_once(faux: FauxProvider) -> None:
    polls = {"steering": 0, "follow_up": 0}
    seen: list[ac.PrepareNextTurnContext] = []

    def steering() -> list[Any]:
        polls["steering"] += 1
        return []

    def follow_up() -> list[Any]:
        polls["follow_up"] += 1
        return [ac.UserMessage("more")]

    def stop(turn: ac.PrepareNextTurnContext) -> bool:
        seen.append(turn)
        return True

    reply = faux_assistant_message([faux_tool_call("echo", {"value": "x"}, id="tool-1")])
    faux.set_responses([reply, faux_assistant_message("never")])
    out, sink = run(faux, tools=[make_tool()], get_steering_messages=steering,
                    get_follow_up_messages=follow_up, should_stop_after_turn=stop)
    assert faux.call_count == 1
    assert polls == {"steering": 1, "follow_up": 0}
    assert [r.tool_call_id for r in seen[0].tool_results] == ["tool-1"]
    assert roles(seen[0].context.messages) == ["user", "assistant", "toolResult"]
    assert roles(out) == ["user", "assistant", "toolResult"]
    core = [t for t in sink.types if t != "message_update"]
    assert core == ["agent_start", "turn_start", "message_start", "message_end", "message_start",
                    "message_end", "tool_execution_start", "tool_execution_end", "message_start",
                    "message_end", "turn_end", "agent_end"]


def terminating_tool(name: str, terminate: bool | None) -> ac.AgentTool:
    def fn(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ac.AgentToolResult:
        return ac.AgentToolResult([ac.TextContent(name)], terminate=terminate)

    return make_tool(name, fn)


def test_loop_batch_where_every_result_terminates_makes_no_more_model_calls(
    faux: FauxProvider,
) -> None:
    faux.set_responses([faux_assistant_message([faux_tool_call("finish", {"value": "x"})]),
                        faux_assistant_message("never")])
    out, sink = run(faux, tools=[terminating_tool("finish", True)])
    assert faux.call_count == 1
    assert roles(out) == ["user", "assistant", "toolResult"]
    assert len(sink.of(ac.TurnEndEvent)) == 1


def test_loop_mixed_terminate_continues(faux: FauxProvider) -> None:
    tools = [terminating_tool("a", True), terminating_tool("b", None)]
    faux.set_responses([two_calls("a", "b"), faux_assistant_message("done")])
    out, _ = run(faux, tools=tools)
    assert faux.call_count == 2
    assert roles(out) == ["user", "assistant", "toolResult", "toolResult", "assistant"]


def test_loop_after_tool_call_can_set_terminate(faux: FauxProvider) -> None:
    def after(ctx: ac.AfterToolCallContext, signal: ac.AbortSignal) -> ac.AfterToolCallResult:
        return ac.AfterToolCallResult(terminate=True)

    faux.set_responses([faux_assistant_message([faux_tool_call("echo", {"value": "x"})]),
                        faux_assistant_message("never")])
    run(faux, tools=[make_tool()], after_tool_call=after)
    assert faux.call_count == 1


# --- continue -------------------------------------------------------------------------------


def test_loop_continue_rejects_an_empty_context(faux: FauxProvider) -> None:
    config = ac.AgentLoopConfig(model=faux.get_model())
    with pytest.raises(ValueError, match="empty"):
        ac.run_agent_loop_continue(ac.AgentContext(), config, Recorder())
    with pytest.raises(ValueError, match="empty"):
        ac.agent_loop_continue(ac.AgentContext(), config)


def test_loop_continue_rejects_an_assistant_tail(faux: FauxProvider) -> None:
    tail = faux_assistant_message("hi")
    context = ac.AgentContext("", [ac.UserMessage("q"), tail])
    with pytest.raises(ValueError, match="assistant"):
        ac.run_agent_loop_continue(context, ac.AgentLoopConfig(model=faux.get_model()), Recorder())


def test_loop_continue_from_a_user_message_returns_only_new_messages(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("answer")])
    sink = Recorder()
    context = ac.AgentContext("", [ac.UserMessage("question")])
    out = ac.run_agent_loop_continue(context, ac.AgentLoopConfig(model=faux.get_model()), sink)
    assert roles(out) == ["assistant"]
    assert len(sink.of(ac.MessageEndEvent)) == 1
    assert sink.types[:3] == ["agent_start", "turn_start", "message_start"]


def test_loop_continue_accepts_a_custom_role_tail(faux: FauxProvider) -> None:
    @attrs.frozen
    class Hint:
        role: ClassVar[str] = "hint"
        text: str

    def convert(messages: list[Any]) -> list[Any]:
        return [ac.UserMessage(m.text) if m.role == "hint" else m for m in messages]

    faux.set_responses([faux_assistant_message("ok")])
    config = ac.AgentLoopConfig(model=faux.get_model(), convert_to_llm=convert)
    out = ac.run_agent_loop_continue(ac.AgentContext("", [Hint("go")]), config, Recorder())
    assert roles(out) == ["assistant"]


# --- API.md §5 semantics, one test (at least) each -------------------------------------------


def test_semantic_1_queued_steering_joins_the_first_turn(faux: FauxProvider) -> None:
    queued = [ac.UserMessage("also this")]
    calls: list[ac.Context] = []

    def poll() -> list[Any]:
        out, queued[:] = list(queued), []
        return out

    faux.set_responses([capture(calls, faux_assistant_message("ok"))])
    out, sink = run(faux, get_steering_messages=poll)
    assert [m.content for m in out[:2]] == ["hi", "also this"]
    assert sink.types.count("turn_start") == 1
    assert [m.content for m in calls[0].messages] == ["hi", "also this"]


def test_semantic_2_message_events_follow_the_provider_stream(faux: FauxProvider) -> None:
    reply = faux_assistant_message([faux_thinking("hmm"), faux_text("ok")])
    faux.set_responses([reply])
    assistant: list[tuple[Any, list[Any]]] = []  # each event with its message content then

    def sink(event: Any) -> None:
        kinds = (ac.MessageStartEvent, ac.MessageUpdateEvent, ac.MessageEndEvent)
        if isinstance(event, kinds) and isinstance(event.message, ac.AssistantMessage):
            assistant.append((event, list(event.message.content)))

    ac.run_agent_loop([ac.UserMessage("hi")], ac.AgentContext(),
                      ac.AgentLoopConfig(model=faux.get_model()), sink)
    first, content = assistant[0]
    assert isinstance(first, ac.MessageStartEvent)
    assert content == []
    updates = [e for e, _ in assistant[1:-1]]
    assert [u.assistant_message_event.type for u in updates] == [
        "thinking_start", "thinking_delta", "thinking_end", "text_start", "text_delta", "text_end"]
    assert all(u.message is u.assistant_message_event.partial for u in updates)
    assert [c for _, c in assistant[1:-1]][-1] == [ac.ThinkingContent("hmm"), ac.TextContent("ok")]
    last, _ = assistant[-1]
    assert isinstance(last, ac.MessageEndEvent)
    assert last.message.content == [ac.ThinkingContent("hmm"), ac.TextContent("ok")]


def test_semantic_2_partial_reply_is_in_the_context_while_streaming(faux: FauxProvider) -> None:
    seen: list[list[str]] = []

    def transform(messages: list[Any], signal: Any) -> list[Any]:
        seen.append(roles(messages))
        return messages

    faux.set_responses([faux_assistant_message([faux_tool_call("echo", {"value": "x"})]),
                        faux_assistant_message("done")])
    run(faux, tools=[make_tool()], transform_context=transform)
    assert seen == [["user"], ["user", "assistant", "toolResult"]]


@pytest.mark.parametrize("reason", ["error", "aborted"])
def test_semantic_3_failed_reply_ends_the_run_without_tools(
    faux: FauxProvider, reason: str
) -> None:
    ran: list[Any] = []
    reply = faux_assistant_message([faux_tool_call("echo", {"value": "x"})], stop_reason=reason,
                                   error_message="boom")
    faux.set_responses([reply])
    out, sink = run(faux, tools=[make_tool(fn=lambda *a: ran.append(a))],
                    get_follow_up_messages=lambda: [ac.UserMessage("never")])
    assert ran == []
    assert out[-1].stop_reason == reason
    assert out[-1].error_message == "boom"
    assert sink.types[-2:] == ["turn_end", "agent_end"]
    assert sink.of(ac.TurnEndEvent) == [ac.TurnEndEvent(out[-1], [])]
    assert "tool_execution_start" not in sink.types


def test_semantic_5_preparation_failures_become_error_results(faux: FauxProvider) -> None:
    def blocker(ctx: ac.BeforeToolCallContext, signal: Any) -> Any:
        if ctx.tool_call.name == "blocked":
            return ac.BeforeToolCallResult(block=True, reason="not allowed")
        if ctx.tool_call.name == "blocked_default":
            return ac.BeforeToolCallResult(block=True)
        return None

    def bad_prepare(raw: Any) -> Any:
        raise RuntimeError("cannot reshape")

    tools = [make_tool("blocked"), make_tool("blocked_default"), make_tool("echo"),
             make_tool("reshape", prepare_arguments=bad_prepare)]
    reply = faux_assistant_message([
        faux_tool_call("missing", {}, id="m"),
        faux_tool_call("echo", {"value": {"not": "a string"}}, id="v"),
        faux_tool_call("blocked", {"value": "x"}, id="b"),
        faux_tool_call("blocked_default", {"value": "x"}, id="d"),
        faux_tool_call("reshape", {"value": "x"}, id="r"),
    ])
    faux.set_responses([reply, faux_assistant_message("done")])
    out, sink = run(faux, tools=tools, before_tool_call=blocker)
    results = {m.tool_call_id: m for m in out if isinstance(m, ac.ToolResultMessage)}
    assert all(r.is_error for r in results.values())
    assert results["m"].text == "Tool missing not found"
    assert "value" in results["v"].text
    assert "validation failed" in results["v"].text
    assert results["b"].text == "not allowed"
    assert results["d"].text == "Tool execution was blocked"
    assert results["r"].text == "cannot reshape"
    # each immediate outcome ends right after its start, in source order
    tool_events = [(e.type, e.tool_call_id) for e in sink.events
                   if e.type.startswith("tool_execution")]
    assert tool_events == [(kind, i) for i in "mvbdr"
                           for kind in ("tool_execution_start", "tool_execution_end")]


def test_semantic_5_aborted_signal_during_preparation_gives_operation_aborted(
    faux: FauxProvider,
) -> None:
    controller = ac.AbortController()

    def abort_on_first(ctx: ac.BeforeToolCallContext, signal: Any) -> None:
        controller.abort()

    faux.set_responses([two_calls("echo", "echo"), faux_assistant_message("never")])
    out, _ = run(faux, tools=[make_tool()], before_tool_call=abort_on_first,
                 signal=controller.signal)
    results = [m for m in out if isinstance(m, ac.ToolResultMessage)]
    assert [(r.tool_call_id, r.text, r.is_error) for r in results] == [
        ("tool-1", "Operation aborted", True), ("tool-2", "Operation aborted", True)]
    assert faux.call_count == 1


def test_semantic_7_tool_updates_come_before_its_end_and_late_ones_are_ignored(
    faux: FauxProvider,
) -> None:
    saved: list[Any] = []

    def progress(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ac.AgentToolResult:
        on_update(ac.AgentToolResult([ac.TextContent("25%")]))
        on_update(ac.AgentToolResult([ac.TextContent("75%")]))
        saved.append(on_update)
        return ac.AgentToolResult([ac.TextContent("100%")])

    faux.set_responses([faux_assistant_message([faux_tool_call("work", {"value": "x"})]),
                        faux_assistant_message("done")])
    _, sink = run(faux, tools=[make_tool("work", progress)])
    tool_events = [e for e in sink.events if e.type.startswith("tool_execution")]
    assert [e.type for e in tool_events] == ["tool_execution_start", "tool_execution_update",
                                             "tool_execution_update", "tool_execution_end"]
    assert [text_of(e.partial_result) for e in tool_events[1:3]] == ["25%", "75%"]
    count = len(sink.events)
    saved[0](ac.AgentToolResult([ac.TextContent("late")]))
    assert len(sink.events) == count


def test_semantic_7_update_from_a_finished_parallel_tool_is_ignored(faux: FauxProvider) -> None:
    settled_update: list[Any] = []
    release = threading.Event()

    def settled(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ac.AgentToolResult:
        settled_update.append(on_update)
        return ac.AgentToolResult([ac.TextContent("settled")])

    def slow(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ac.AgentToolResult:
        assert release.wait(5)
        return ac.AgentToolResult([ac.TextContent("slow")])

    def on_event(event: Any) -> None:
        sink(event)
        if isinstance(event, ac.ToolExecutionEndEvent) and event.tool_name == "settled":
            settled_update[0](ac.AgentToolResult([ac.TextContent("late")]))
            release.set()

    sink = Recorder()
    faux.set_responses([two_calls("settled", "slow"), faux_assistant_message("done")])
    context = ac.AgentContext("", [], [make_tool("settled", settled), make_tool("slow", slow)])
    ac.run_agent_loop([ac.UserMessage("go")], context,
                      ac.AgentLoopConfig(model=faux.get_model()), on_event)
    assert sink.of(ac.ToolExecutionUpdateEvent) == []


def test_semantic_8_after_tool_call_overrides_field_by_field(faux: FauxProvider) -> None:
    seen: list[ac.AfterToolCallContext] = []

    def failing(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        raise RuntimeError("tool broke")

    def after(ctx: ac.AfterToolCallContext, signal: Any) -> ac.AfterToolCallResult | None:
        seen.append(ctx)
        if ctx.tool_call.name == "echo":
            return ac.AfterToolCallResult(content=[ac.TextContent("rewritten")])
        return ac.AfterToolCallResult(is_error=False, details={"recovered": True})

    faux.set_responses([two_calls("echo", "failing"), faux_assistant_message("done")])
    out, _ = run(faux, tools=[make_tool(), make_tool("failing", failing)], after_tool_call=after)
    by_id = {m.tool_call_id: m for m in out if isinstance(m, ac.ToolResultMessage)}
    assert (by_id["tool-1"].text, by_id["tool-1"].details, by_id["tool-1"].is_error) == (
        "rewritten", {"value": "a"}, False)
    assert (by_id["tool-2"].text, by_id["tool-2"].details, by_id["tool-2"].is_error) == (
        "RuntimeError: tool broke", {"recovered": True}, False)
    failed = next(c for c in seen if c.tool_call.name == "failing")
    assert failed.is_error
    assert text_of(failed.result) == "RuntimeError: tool broke"


def test_semantic_8_after_tool_call_raising_gives_an_error_result(faux: FauxProvider) -> None:
    def after(ctx: ac.AfterToolCallContext, signal: Any) -> None:
        raise ValueError("hook broke")

    faux.set_responses([faux_assistant_message([faux_tool_call("finish", {"value": "x"})]),
                        faux_assistant_message("done")])
    out, _ = run(faux, tools=[terminating_tool("finish", True)], after_tool_call=after)
    result = out[2]
    assert (result.text, result.is_error) == ("hook broke", True)
    assert faux.call_count == 2  # the error result lost the terminate flag


def test_semantic_9_terminating_batch_still_runs_queued_steering(faux: FauxProvider) -> None:
    queued: list[Any] = []

    def finish(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ac.AgentToolResult:
        queued.append(ac.UserMessage("one more thing"))
        return ac.AgentToolResult([ac.TextContent("finished")], terminate=True)

    def poll() -> list[Any]:
        out, queued[:] = list(queued), []
        return out

    faux.set_responses([faux_assistant_message([faux_tool_call("finish", {"value": "x"})]),
                        faux_assistant_message("sure")])
    out, _ = run(faux, tools=[make_tool("finish", finish)], get_steering_messages=poll)
    assert faux.call_count == 2
    assert roles(out) == ["user", "assistant", "toolResult", "user", "assistant"]


def test_semantic_10_hook_order_and_follow_ups(faux: FauxProvider) -> None:
    order: list[str] = []
    follow = [ac.UserMessage("follow-up")]

    def prepare(turn: Any, signal: Any) -> None:
        order.append("prepare")

    def stop(turn: Any) -> bool:
        order.append("stop?")
        return False

    def steering() -> list[Any]:
        order.append("steering")
        return []

    def follow_up() -> list[Any]:
        order.append("follow_up")
        out, follow[:] = list(follow), []
        return out

    def on_event(event: Any) -> None:
        if event.type in ("turn_end", "turn_start", "agent_end"):
            order.append(event.type)

    faux.set_responses([faux_assistant_message("first"), faux_assistant_message("second")])
    config = ac.AgentLoopConfig(model=faux.get_model(), prepare_next_turn=prepare,
                                should_stop_after_turn=stop, get_steering_messages=steering,
                                get_follow_up_messages=follow_up)
    out = ac.run_agent_loop([ac.UserMessage("hi")], ac.AgentContext(), config, on_event)
    assert order == ["turn_start", "steering",
                     "turn_end", "prepare", "stop?", "steering", "follow_up",
                     "turn_start", "turn_end", "prepare", "stop?", "steering", "follow_up",
                     "agent_end"]
    assert [m.text if m.role == "assistant" else m.content for m in out] == [
        "hi", "first", "follow-up", "second"]


def test_semantic_10_prepare_next_turn_can_swap_model_and_thinking(faux: FauxProvider) -> None:
    other = register_second_model(faux)
    seen: list[tuple[str, Any]] = []

    def respond(context: Any, options: ac.StreamOptions, model: ac.Model) -> ac.AssistantMessage:
        seen.append((model.id, options.reasoning))
        if len(seen) == 1:
            return faux_assistant_message([faux_tool_call("echo", {"value": "x"})])
        return faux_assistant_message("done")

    def prepare(turn: Any, signal: Any) -> ac.AgentLoopTurnUpdate:
        return ac.AgentLoopTurnUpdate(model=other, thinking_level="high")

    faux.set_responses([respond, respond])
    run(faux, tools=[make_tool()], prepare_next_turn=prepare, reasoning="low")
    assert seen == [("faux-1", ac.ThinkingLevel.LOW), ("faux-2", ac.ThinkingLevel.HIGH)]


def register_second_model(faux: FauxProvider) -> ac.Model:
    return attrs.evolve(faux.get_model(), id="faux-2", name="Faux Two")


def test_semantic_11_abort_while_streaming_stops_the_run(faux: FauxProvider) -> None:
    controller = ac.AbortController()
    ran: list[Any] = []

    def on_event(event: Any) -> None:
        sink(event)
        if isinstance(event, ac.MessageUpdateEvent) and event.assistant_message_event.type == (
                "text_delta"):
            controller.abort()

    sink = Recorder()
    reply = faux_assistant_message([faux_text("a long reply " * 5),
                                    faux_tool_call("echo", {"value": "x"})])
    faux.set_responses([reply, faux_assistant_message("never")])
    context = ac.AgentContext("", [], [make_tool(fn=lambda *a: ran.append(a))])
    config = ac.AgentLoopConfig(model=faux.get_model(),
                                get_follow_up_messages=lambda: [ac.UserMessage("never")])
    out = ac.run_agent_loop([ac.UserMessage("go")], context, config, on_event,
                            signal=controller.signal)
    assert out[-1].stop_reason == "aborted"
    assert out[-1].content
    assert out[-1].tool_calls == []
    assert ran == []
    assert faux.call_count == 1
    assert sink.types[-2:] == ["turn_end", "agent_end"]


def test_semantic_11_abort_during_tools_makes_no_further_model_call(faux: FauxProvider) -> None:
    controller = ac.AbortController()
    started = threading.Event()
    saw_signal: list[bool] = []

    def waits(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        started.set()
        saw_signal.append(signal.wait(5))
        return ac.AgentToolResult([ac.TextContent("stopped")])

    steering = [ac.UserMessage("never injected")]
    faux.set_responses([faux_assistant_message([faux_tool_call("wait", {"value": "x"})]),
                        faux_assistant_message("never")])
    threading.Thread(target=lambda: started.wait(5) and controller.abort()).start()
    out, sink = run(faux, tools=[make_tool("wait", waits)], signal=controller.signal,
                    get_steering_messages=lambda: steering if started.is_set() else [])
    assert saw_signal == [True]  # the tool's wait ended by the abort
    assert faux.call_count == 1
    assert roles(out) == ["user", "assistant", "toolResult"]
    assert steering[0] not in out
    assert sink.types[-2:] == ["turn_end", "agent_end"]


def test_semantic_11_abort_before_a_model_call_makes_none(faux: FauxProvider) -> None:
    controller = ac.AbortController()
    controller.abort()
    faux.set_responses([faux_assistant_message("never")])
    out, sink = run(faux, signal=controller.signal)
    assert faux.call_count == 0
    assert roles(out) == ["user", "assistant"]
    assert (out[1].stop_reason, out[1].error_message) == ("aborted", "Request was aborted")
    assert sink.types.count("turn_start") == sink.types.count("turn_end") == 1


def test_semantic_11_run_gives_up_on_a_stream_that_ignores_abort(
        faux: FauxProvider, abort_grace: Callable[[float], None]) -> None:
    abort_grace(0.05)
    controller = ac.AbortController()
    stream = ac.AssistantMessageEventStream()

    def stuck(model: ac.Model, context: ac.Context, options: ac.StreamOptions) -> Any:
        stream.push(ac.StartEvent(ac.AssistantMessage([], "x", "y", "z")))
        threading.Timer(0.05, controller.abort).start()
        return stream

    sink = Recorder()
    t0 = time.monotonic()
    out = ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext(),
                            ac.AgentLoopConfig(model=faux.get_model()), sink,
                            signal=controller.signal, stream_fn=stuck)
    assert time.monotonic() - t0 < 5
    assert out[-1].stop_reason == "aborted"
    assert sink.types[-2:] == ["turn_end", "agent_end"]


@pytest.mark.parametrize("hook", ["transform_context", "convert_to_llm", "get_api_key",
                                  "prepare_next_turn", "should_stop_after_turn",
                                  "get_steering_messages", "get_follow_up_messages"])
def test_semantic_12_raising_hook_becomes_an_error_message(faux: FauxProvider, hook: str) -> None:
    def boom(*args: Any) -> Any:
        raise RuntimeError(f"{hook} exploded")

    faux.set_responses([faux_assistant_message("fine"), faux_assistant_message("fine")])
    out, sink = run(faux, **{hook: boom})
    last = out[-1]
    assert isinstance(last, ac.AssistantMessage)
    assert (last.stop_reason, last.error_message) == ("error", f"{hook} exploded")
    assert sink.types[-4:] == ["message_start", "message_end", "turn_end", "agent_end"]
    assert sink.types.count("turn_start") == sink.types.count("turn_end")


def test_semantic_12_raising_stream_fn_becomes_an_error_message(faux: FauxProvider) -> None:
    def explode(model: Any, context: Any, options: Any) -> Any:
        raise RuntimeError("provider exploded")

    sink = Recorder()
    out = ac.run_agent_loop([ac.UserMessage("hi")], ac.AgentContext(),
                            ac.AgentLoopConfig(model=faux.get_model()), sink, stream_fn=explode)
    assert (out[-1].stop_reason, out[-1].error_message) == ("error", "provider exploded")
    assert sink.types == ["agent_start", "turn_start", "message_start", "message_end",
                          "message_start", "message_end", "turn_end", "agent_end"]


def test_semantic_12_stream_without_terminal_event_becomes_an_error(faux: FauxProvider) -> None:
    def no_end(model: Any, context: Any, options: Any) -> Any:
        stream = ac.AssistantMessageEventStream()
        stream.push(ac.StartEvent(ac.AssistantMessage([], "x", "y", "z")))
        stream.end()
        return stream

    out = ac.run_agent_loop([ac.UserMessage("hi")], ac.AgentContext(),
                            ac.AgentLoopConfig(model=faux.get_model()), Recorder(),
                            stream_fn=no_end)
    assert out[-1].stop_reason == "error"
    assert "without a done or error event" in (out[-1].error_message or "")


def test_semantic_12_agent_loop_stream_always_ends(faux: FauxProvider) -> None:
    def explode(model: Any, context: Any, options: Any) -> Any:
        raise RuntimeError("provider exploded")

    stream = ac.agent_loop([ac.UserMessage("hi")], ac.AgentContext(),
                           ac.AgentLoopConfig(model=faux.get_model()), stream_fn=explode)
    events = list(stream)
    assert events[-1].type == "agent_end"
    assert stream.result(timeout=5)[-1].error_message == "provider exploded"


def test_semantic_13_sink_exception_propagates(faux: FauxProvider) -> None:
    class SinkBroke(Exception):
        pass

    def sink(event: Any) -> None:
        if isinstance(event, ac.ToolExecutionStartEvent):
            raise SinkBroke

    faux.set_responses([two_calls("echo", "echo"), faux_assistant_message("done")])
    with pytest.raises(SinkBroke):
        ac.run_agent_loop([ac.UserMessage("hi")], ac.AgentContext("", [], [make_tool()]),
                          ac.AgentLoopConfig(model=faux.get_model()), sink)


def test_semantic_13_sink_raising_as_an_output_run_fails_propagates(faux: FauxProvider) -> None:
    """The error end of a run out of output retries is emitted once; the sink's raise escapes."""
    class SinkBroke(Exception):
        pass

    ends: list[ac.AgentEndEvent] = []

    def sink(event: Any) -> None:
        if isinstance(event, ac.AgentEndEvent):
            ends.append(event)
            if len(ends) == 1:
                raise SinkBroke

    faux.set_responses([faux_assistant_message("no tool call")])
    config = ac.AgentLoopConfig(model=faux.get_model(), output_type=int, output_retries=0)
    with pytest.raises(SinkBroke):
        ac.run_agent_loop([ac.UserMessage("n?")], ac.AgentContext(), config, sink)
    assert len(ends) == 1


def test_loop_dict_prompts_get_the_agents_error_naming_from_dict(faux: FauxProvider) -> None:
    data = {"role": "user", "content": "hi", "timestamp": 0}
    config = ac.AgentLoopConfig(model=faux.get_model())
    many = "to load dicts, use agentcore.from_dict(list[AgentMessage], data)"
    one = "to load a dict, use agentcore.from_dict(AgentMessage, data)"
    with pytest.raises(TypeError) as by_agent:
        ac.Agent(faux.get_model()).prompt([data])
    assert str(by_agent.value) == (f"'input[0]' must be a message such as UserMessage, "
                                   f"got {data!r} (dict); {many}")
    starts: list[Callable[[Any], Any]] = [
        lambda prompts: ac.run_agent_loop(prompts, ac.AgentContext(), config, lambda _: None),
        lambda prompts: ac.agent_loop(prompts, ac.AgentContext(), config),
    ]
    for start in starts:
        with pytest.raises(TypeError) as in_list:
            start([ac.UserMessage("first"), data])
        assert str(in_list.value) == (f"'prompts[1]' must be a message such as UserMessage, "
                                      f"got {data!r} (dict); {many}")
        with pytest.raises(TypeError) as alone:
            start(data)
        assert str(alone.value) == (f"'prompts' must be a list of messages, "
                                    f"got {data!r} (dict); {one}")
    context = ac.AgentContext("", [ac.UserMessage("hi")])
    context.messages.append(data)  # type: ignore[arg-type]
    for resume in (lambda: ac.run_agent_loop_continue(context, config, lambda _: None),
                   lambda: ac.agent_loop_continue(context, config)):
        with pytest.raises(TypeError) as in_context:
            resume()
        assert str(in_context.value) == (f"'messages[1]' must be a message such as UserMessage, "
                                          f"got {data!r} (dict); {many}")
    assert faux.call_count == 0


# --- other guarantees -----------------------------------------------------------------------


def test_loop_never_mutates_the_callers_context(faux: FauxProvider) -> None:
    messages: list[Any] = [ac.UserMessage("earlier")]
    tools = [make_tool()]
    context = ac.AgentContext("sys", messages, tools)
    faux.set_responses([faux_assistant_message([faux_tool_call("echo", {"value": "x"})]),
                        faux_assistant_message("done")])
    ac.run_agent_loop([ac.UserMessage("hi")], context,
                      ac.AgentLoopConfig(model=faux.get_model()), Recorder())
    assert context.messages is messages
    assert messages == [ac.UserMessage("earlier",
                                                                        messages[0].timestamp)]
    assert context.tools is tools
    assert len(tools) == 1


def test_loop_emits_every_event_from_the_run_thread(faux: FauxProvider) -> None:
    threads: set[int] = set()

    def tool_fn(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ac.AgentToolResult:
        helper = threading.Thread(target=on_update, args=(ac.AgentToolResult([]),))
        helper.start()
        helper.join()
        return ac.AgentToolResult([ac.TextContent("ok")])

    faux.set_responses([two_calls("echo", "echo"), faux_assistant_message("done")])
    ac.run_agent_loop([ac.UserMessage("hi")], ac.AgentContext("", [], [make_tool(fn=tool_fn)]),
                      ac.AgentLoopConfig(model=faux.get_model()),
                      lambda e: threads.add(threading.get_ident()))
    assert threads == {threading.get_ident()}


def test_loop_uses_the_configured_tool_executor(faux: FauxProvider) -> None:
    names: list[str] = []

    def tool_fn(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ac.AgentToolResult:
        names.append(threading.current_thread().name)
        return ac.AgentToolResult([ac.TextContent("ok")])

    faux.set_responses([two_calls("echo", "echo"), faux_assistant_message("done")])
    with ThreadPoolExecutor(2, thread_name_prefix="mine") as pool:
        run(faux, tools=[make_tool(fn=tool_fn)], tool_executor=pool)
    assert len(names) == 2
    assert all(n.startswith("mine") for n in names)


def test_loop_passes_options_and_api_key_to_the_provider(faux: FauxProvider) -> None:
    seen: list[ac.StreamOptions] = []

    def respond(context: Any, options: ac.StreamOptions, model: Any) -> ac.AssistantMessage:
        seen.append(options)
        return faux_assistant_message("ok")

    faux.set_responses([respond, respond])
    run(faux, api_key="static", session_id="s-1", reasoning="off", max_tokens=100)
    run(faux, api_key="static", get_api_key=lambda provider: f"dynamic-{provider}")
    assert (seen[0].api_key, seen[0].session_id, seen[0].reasoning, seen[0].max_tokens) == (
        "static", "s-1", None, 100)
    assert seen[1].api_key == "dynamic-faux"
    assert seen[0].signal is not None
    assert not seen[0].signal.aborted
    assert "static" not in repr(seen[0])


def test_loop_accepts_a_generator_stream_fn(faux: FauxProvider) -> None:
    final = ac.AssistantMessage([ac.TextContent("generated")], "g", "g", "g")

    def generate(model: Any, context: Any, options: Any) -> Any:
        yield ac.StartEvent(ac.AssistantMessage([], "g", "g", "g"))
        yield ac.DoneEvent("stop", final)

    out = ac.run_agent_loop([ac.UserMessage("hi")], ac.AgentContext(),
                            ac.AgentLoopConfig(model=faux.get_model()), Recorder(),
                            stream_fn=generate)
    assert out[-1] is final


def test_agent_loop_runs_in_the_background(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("bg")])
    stream = ac.agent_loop([ac.UserMessage("hi")], ac.AgentContext(),
                           ac.AgentLoopConfig(model=faux.get_model()))
    events = list(stream)
    assert events[0] == ac.AgentStartEvent()
    assert events[-1].type == "agent_end"
    assert roles(stream.result(timeout=5)) == ["user", "assistant"]


def test_agent_loop_continue_runs_in_the_background(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("bg")])
    stream = ac.agent_loop_continue(ac.AgentContext("", [ac.UserMessage("q")]),
                                    ac.AgentLoopConfig(model=faux.get_model()))
    assert roles(stream.result(timeout=5)) == ["assistant"]
    assert list(stream)[-1].type == "agent_end"


def test_loop_every_completed_tool_call_gets_exactly_one_result(faux: FauxProvider) -> None:
    controller = ac.AbortController()
    count = {"n": 0}

    def tool_fn(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ac.AgentToolResult:
        count["n"] += 1
        if count["n"] == 2:
            controller.abort()
        return ac.AgentToolResult([ac.TextContent("ok")])

    calls = [faux_tool_call("echo", {"value": str(i)}, id=f"c{i}") for i in range(5)]
    faux.set_responses([faux_assistant_message(calls)])
    out, _ = run(faux, tools=[make_tool(fn=tool_fn)], tool_execution="sequential",
                 signal=controller.signal)
    results = [m.tool_call_id for m in out if isinstance(m, ac.ToolResultMessage)]
    assert results == [f"c{i}" for i in range(5)]
    assert [m.text for m in out[2:]][2:] == ["Operation aborted"] * 3


def _aborting_sink(controller: ac.AbortController) -> Recorder:
    """A Recorder that aborts the run at the first `message_update`."""

    class Aborting(Recorder):
        def __call__(self, event: Any) -> None:
            super().__call__(event)
            if isinstance(event, ac.MessageUpdateEvent):
                controller.abort()

    return Aborting()


def test_semantic_11_abort_grace_is_a_deadline_for_a_stream_still_sending(
    faux: FauxProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reply_module, "ABORT_GRACE_S", 0.0)
    controller = ac.AbortController()
    stream = ac.AssistantMessageEventStream()
    stop = threading.Event()
    partial = ac.AssistantMessage([ac.TextContent("")], "x", "y", "z")

    def chatty() -> None:  # ignores the abort and keeps sending, paced, until the test ends
        while not stop.wait(0.001):
            stream.push(ac.TextDeltaEvent(0, "more", partial))

    def stuck(model: ac.Model, context: ac.Context, options: ac.StreamOptions) -> Any:
        stream.push(ac.StartEvent(partial))
        threading.Thread(target=chatty).start()
        return stream

    sink = _aborting_sink(controller)
    try:
        out = ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext(),
                                ac.AgentLoopConfig(model=faux.get_model()), sink,
                                signal=controller.signal, stream_fn=stuck)
    finally:
        stop.set()
    assert (out[-1].stop_reason, out[-1].error_message) == ("aborted", "Request was aborted")
    assert sink.types[-2:] == ["turn_end", "agent_end"]


def test_semantic_11_abort_closes_a_pulled_stream_that_ignores_it(
    faux: FauxProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reply_module, "ABORT_GRACE_S", 0.0)
    controller = ac.AbortController()
    closed = threading.Event()
    partial = ac.AssistantMessage([ac.TextContent("")], "x", "y", "z")

    def events() -> Any:
        try:
            yield ac.StartEvent(partial)
            while True:
                yield ac.TextDeltaEvent(0, "more", partial)
        finally:
            closed.set()

    def ignores_abort(model: ac.Model, context: ac.Context, options: ac.StreamOptions) -> Any:
        return ac.AssistantMessageEventStream.from_iterator(events())

    sink = _aborting_sink(controller)
    out = ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext(),
                            ac.AgentLoopConfig(model=faux.get_model()), sink,
                            signal=controller.signal, stream_fn=ignores_abort)
    assert closed.is_set()
    assert (out[-1].stop_reason, out[-1].error_message) == ("aborted", "Request was aborted")
    assert sink.types.count("message_update") == 1


def test_loop_closes_the_source_of_a_reply_that_raises(faux: FauxProvider) -> None:
    closed = threading.Event()

    def events() -> Any:
        try:
            yield ac.StartEvent(ac.AssistantMessage([], "x", "y", "z"))
            raise ConnectionError("connection reset")
        finally:
            closed.set()

    def broken(model: ac.Model, context: ac.Context, options: ac.StreamOptions) -> Any:
        return ac.AssistantMessageEventStream.from_iterator(events())

    out = ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext(),
                            ac.AgentLoopConfig(model=faux.get_model()), Recorder(),
                            stream_fn=broken)
    assert closed.is_set()
    assert (out[-1].stop_reason, out[-1].error_message) == ("error", "connection reset")


def test_semantic_6_a_shut_down_tool_executor_gives_each_call_an_error_result(
    faux: FauxProvider,
) -> None:
    pool = ThreadPoolExecutor(max_workers=1)
    pool.shutdown()
    calls = [faux_tool_call("echo", {"value": str(i)}, id=f"c{i}") for i in range(2)]
    faux.set_responses([faux_assistant_message(calls), faux_assistant_message("done")])
    out, sink = run(faux, tools=[make_tool()], tool_executor=pool)
    ends = sink.of(ac.ToolExecutionEndEvent)
    assert [(e.tool_call_id, e.is_error) for e in ends] == [("c0", True), ("c1", True)]
    assert {text_of(e.result) for e in ends} == {
        "RuntimeError: cannot schedule new futures after shutdown"}
    assert out[-1].text == "done"


def test_semantic_11_abort_before_a_worker_starts_a_tool_gives_operation_aborted(
    faux: FauxProvider,
) -> None:
    controller = ac.AbortController()
    ran: list[str] = []

    def aborts(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        ran.append(tool_call_id)
        controller.abort()  # the one worker is busy until now: the other call has not started
        return ac.AgentToolResult([ac.TextContent("first")])

    calls = [faux_tool_call("echo", {"value": str(i)}, id=f"c{i}") for i in range(2)]
    faux.set_responses([faux_assistant_message(calls), faux_assistant_message("never")])
    with ThreadPoolExecutor(max_workers=1) as pool:
        out, sink = run(faux, tools=[make_tool(fn=aborts)], tool_executor=pool,
                        signal=controller.signal)
    assert ran == ["c0"]
    results = [(m.tool_call_id, m.text, m.is_error) for m in out
               if isinstance(m, ac.ToolResultMessage)]
    assert results == [("c0", "first", False), ("c1", "Operation aborted", True)]
    assert faux.call_count == 1
    assert sink.types[-2:] == ["turn_end", "agent_end"]


@pytest.mark.parametrize("calls", [1, 2])
def test_loop_sink_raising_signals_running_tools_before_waiting(faux: FauxProvider,
                                                                calls: int) -> None:
    """An early end (here the sink raising) aborts the tools' signal, then waits for them."""
    all_running = threading.Barrier(calls, timeout=5)
    seen: list[bool] = []

    def slow(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        all_running.wait()
        on_update(ac.AgentToolResult([ac.TextContent("running")]))
        seen.append(signal.wait(10))  # True: told to stop, long before its 10 s
        return ac.AgentToolResult([ac.TextContent("stopped")])

    reply = (two_calls("slow", "slow") if calls == 2
             else faux_assistant_message([faux_tool_call("slow", {"value": "a"})]))
    faux.set_responses([reply, faux_assistant_message("done")])

    def sink(event: ac.AgentEvent) -> None:
        if isinstance(event, ac.ToolExecutionUpdateEvent):
            raise RuntimeError("sink broke")

    caller = ac.AbortController()
    with pytest.raises(RuntimeError, match="sink broke"):
        ac.run_agent_loop([ac.UserMessage("go")],
                          ac.AgentContext("", [], [make_tool("slow", fn=slow)]),
                          ac.AgentLoopConfig(model=faux.get_model()), sink, caller.signal)
    assert seen == [True] * calls
    assert not caller.signal.aborted  # the caller's own signal is left alone


def test_loop_converts_custom_messages_that_arrive_mid_run(faux: FauxProvider) -> None:
    """The loop skips the per-call class check only while it knows every message is plain."""
    seen: list[list[str]] = []

    def reply(context: ac.Context, options: Any, model: Any) -> ac.AssistantMessage:
        seen.append([type(m).__name__ for m in context.messages])
        if len(seen) == 1:
            return faux_assistant_message([faux_tool_call("echo", {"value": "a"})])
        return faux_assistant_message("done")

    faux.set_responses([reply, reply])
    polls: list[int] = []

    def steering() -> list[ac.AgentMessage]:
        polls.append(1)
        return [ac.BashExecutionMessage("ls", "a b", 0)] if len(polls) == 2 else []

    config = ac.AgentLoopConfig(model=faux.get_model(), get_steering_messages=steering)
    ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext("", [], [make_tool()]), config,
                      lambda e: None)
    assert seen[0] == ["UserMessage"]  # all plain so far: passed as is
    # Steered in after the tool turn, a shell run reaches the model as a user message.
    assert seen[1] == ["UserMessage", "AssistantMessage", "ToolResultMessage", "UserMessage"]


def test_loop_converts_custom_messages_already_in_the_context(faux: FauxProvider) -> None:
    seen: list[list[str]] = []

    def reply(context: ac.Context, options: Any, model: Any) -> ac.AssistantMessage:
        seen.append([type(m).__name__ for m in context.messages])
        return faux_assistant_message("done")

    faux.set_responses([reply])
    history = [ac.CompactionSummaryMessage("earlier", 10), ac.UserMessage("q")]
    ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext("", history, []),
                      ac.AgentLoopConfig(model=faux.get_model()), lambda e: None)
    assert seen == [["UserMessage", "UserMessage", "UserMessage"]]
