"""The Agent (API.md §6): the reference Agent catalogue, queue restoring on abort (#9340),
`AgentRun`, and the rest of the Agent's contract."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest
from _internals import drive_module

import agentcore as ac
from agentcore.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)

WAIT = 5.0
"""Upper bound for every wait; a passing test never comes close."""

SCHEMA = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}
IMAGE = ac.ImageContent("aGVsbG8=", "image/png")
OK = faux_assistant_message("ok")
LONG = "word " * 200  # 250 one-token chunks: seconds of streaming on the paced provider

ToolFn = Callable[[str, Any, ac.AbortSignal, Any], ac.AgentToolResult]


def result_of(text: str, **kwargs: Any) -> ac.AgentToolResult:
    return ac.AgentToolResult([ac.TextContent(text)], **kwargs)


def make_tool(name: str = "echo", fn: ToolFn | None = None, **kwargs: Any) -> ac.AgentTool:
    def echo(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        return result_of(f"echoed: {args['value']}")

    return ac.AgentTool(name, f"The {name} tool", SCHEMA, fn or echo, **kwargs)


def calls(*names_and_ids: tuple[str, str]) -> ac.AssistantMessage:
    """A reply asking for the tools `(name, id)` in order."""
    return faux_assistant_message([faux_tool_call(name, {"value": "x"}, id=id)
                                   for name, id in names_and_ids])


def recording(seen: list[Any], reply: ac.AssistantMessage = OK) -> Any:
    """A faux response function that records `(context, options, model)` for each model call."""

    def respond(context: ac.Context, options: ac.StreamOptions, model: ac.Model) -> Any:
        seen.append((context, options, model))
        return reply

    return respond


def roles(messages: list[Any]) -> list[str]:
    return [m.role for m in messages]


def text_of(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(c.text for c in content if isinstance(c, ac.TextContent))


def count(messages: list[Any], target: Any) -> int:
    return sum(m is target for m in messages)


def is_text_delta(event: Any) -> bool:
    return isinstance(event, ac.MessageUpdateEvent) and (
        event.assistant_message_event.type == "text_delta")


def is_assistant_end(event: Any) -> bool:
    return isinstance(event, ac.MessageEndEvent) and event.message.role == "assistant"


class Events:
    """A listener that keeps every event, with the signal and thread it arrived with."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.signals: list[ac.AbortSignal] = []
        self.threads: list[threading.Thread] = []

    def __call__(self, event: Any, signal: ac.AbortSignal) -> None:
        self.events.append(event)
        self.signals.append(signal)
        self.threads.append(threading.current_thread())

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]


class Gate:
    """A listener that holds the run's thread at the first event matching `when`.

    `with gate:` waits until the run is held there and always releases it on the way out, so a
    failing assertion never leaves the run thread blocked.
    """

    def __init__(self, when: Callable[[Any], bool]) -> None:
        self.when = when
        self.event: Any = None
        self._reached = threading.Event()
        self._release = threading.Event()

    def __call__(self, event: Any, signal: ac.AbortSignal) -> None:
        if self.event is None and self.when(event):
            self.event = event
            self._reached.set()
            self._release.wait(WAIT)

    def __enter__(self) -> Gate:
        assert self._reached.wait(WAIT), "the run never reached the gate"
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()


@pytest.fixture
def paced() -> Iterator[FauxProvider]:
    """A faux provider streaming one token every 20 ms, for aborts mid-reply."""
    provider = register_faux_provider(tokens_per_second=50, token_size=(1, 1))
    yield provider
    provider.unregister()


# --- reference catalogue (agent) -----------------------------------------------------------------


def test_agent_default_state(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    assert agent.state == ac.AgentState(
        system_prompt="", model=faux.get_model(), thinking_level=ac.ThinkingLevel.OFF, tools=[],
        messages=[], is_streaming=False, streaming_message=None,
        pending_tool_calls=frozenset(), error_message=None,
    )
    assert agent.signal is None
    assert not agent.has_queued_messages()


def test_agent_custom_initial_state_is_kept_and_lists_are_copied(faux: FauxProvider) -> None:
    model = faux.get_model()
    tools = [make_tool()]
    history: list[Any] = [ac.UserMessage("hi"), faux_assistant_message("hello")]
    agent = ac.Agent(model, system_prompt="Be brief.", thinking_level="low", tools=tools,
                     messages=history)
    state = agent.state
    assert state.model is model
    assert (state.system_prompt, state.thinking_level) == ("Be brief.", ac.ThinkingLevel.LOW)
    assert state.tools == tools
    assert state.messages == history
    assert all(a is b for a, b in zip(state.messages, history, strict=True))
    history.append(ac.UserMessage("later"))
    tools.clear()
    assert len(agent.state.messages) == 2
    assert len(agent.state.tools) == 1


def test_agent_subscribe_emits_nothing_and_unsubscribe_stops_delivery(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    seen = Events()
    unsubscribe = agent.subscribe(seen)
    agent.system_prompt = "changed"
    agent.steer("queued")
    assert agent.state.system_prompt == "changed"
    assert seen.events == []
    unsubscribe()
    unsubscribe()  # twice is harmless
    faux.set_responses([OK])
    agent.prompt("hi").result(WAIT)
    assert seen.events == []


def test_agent_subscribing_the_same_listener_twice_registers_it_once(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    seen = Events()
    agent.subscribe(seen)
    agent.subscribe(seen)
    faux.set_responses([OK])
    run = agent.prompt("hi")
    run.result(WAIT)
    assert seen.events == list(run)


def test_agent_raising_stream_fn_gives_the_full_failure_sequence(faux: FauxProvider) -> None:
    def explode(model: ac.Model, context: ac.Context, options: ac.StreamOptions) -> Any:
        raise RuntimeError("provider exploded")

    agent = ac.Agent(faux.get_model(), stream_fn=explode)
    seen = Events()
    agent.subscribe(seen)
    out = agent.prompt("hi").result(WAIT)
    assert seen.types == ["agent_start", "turn_start", "message_start", "message_end",
                          "message_start", "message_end", "turn_end", "agent_end"]
    last = agent.state.messages[-1]
    assert isinstance(last, ac.AssistantMessage)
    assert (last.stop_reason, last.error_message) == ("error", "provider exploded")
    assert agent.state.error_message == "provider exploded"
    assert out == agent.state.messages
    assert roles(out) == ["user", "assistant"]


def test_agent_listener_blocking_on_agent_end_keeps_the_run_pending(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    gate = Gate(lambda e: e.type == "agent_end")
    agent.subscribe(gate)
    faux.set_responses([OK])
    run = agent.prompt("hi")
    with gate:
        assert agent.state.is_streaming
        assert not run.done()
        with pytest.raises(TimeoutError):
            run.result(timeout=0.05)
        assert agent.wait_for_idle(timeout=0.05) is False
    assert roles(run.result(WAIT)) == ["user", "assistant"]
    assert agent.wait_for_idle(WAIT) is True
    assert run.done()
    assert not agent.state.is_streaming


def test_agent_wait_for_idle_waits_for_a_listener_on_message_end(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    gate = Gate(is_assistant_end)
    agent.subscribe(gate)
    faux.set_responses([OK])
    run = agent.prompt("hi")
    with gate:
        assert agent.wait_for_idle(timeout=0.05) is False
        assert agent.state.is_streaming
    assert agent.wait_for_idle(WAIT) is True
    assert not agent.state.is_streaming
    assert run.done()


def test_agent_listeners_get_the_active_signal_and_abort_aborts_it(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    seen = Events()
    gate = Gate(is_text_delta)
    agent.subscribe(seen)
    agent.subscribe(gate)
    faux.set_responses([faux_assistant_message("a reply streamed in several chunks")])
    run = agent.prompt("hi")
    with gate:
        signal = seen.signals[0]
        assert seen.events[0] == ac.AgentStartEvent()
        assert signal is agent.signal
        assert signal is run.signal
        assert not signal.aborted
        agent.abort()
        assert signal.aborted
    out = run.result(WAIT)
    assert all(s is signal for s in seen.signals)
    assert (out[-1].stop_reason, out[-1].error_message) == ("aborted", "Request was aborted")
    assert agent.state.error_message == "Request was aborted"
    assert agent.signal is None


@pytest.mark.parametrize("mode", list(ac.ToolExecutionMode))
def test_agent_late_tool_update_is_ignored(faux: FauxProvider, mode: ac.ToolExecutionMode) -> None:
    saved: list[Any] = []

    def reports(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        saved.append(on_update)
        on_update(result_of("halfway"))
        return result_of("done", terminate=True)

    agent = ac.Agent(faux.get_model(), tools=[make_tool("report", reports)], tool_execution=mode)
    seen = Events()
    agent.subscribe(seen)
    faux.set_responses([calls(("report", "c1"))])
    run = agent.prompt("go")
    run.result(WAIT)
    before = list(run)
    saved[0](result_of("too late"))
    assert list(run) == before
    assert seen.events == before
    assert seen.types.count("tool_execution_update") == 1
    assert faux.call_count == 1


def test_agent_settled_parallel_tool_update_is_ignored_while_another_runs(
    faux: FauxProvider,
) -> None:
    saved: dict[str, Any] = {}
    slow_released = threading.Event()
    slow_done = threading.Event()
    slow_was_running: list[bool] = []

    def settled(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        saved["on_update"] = on_update
        return result_of("settled")

    def slow(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        slow_released.wait(WAIT)
        slow_done.set()
        return result_of("slow")

    def late_update(event: Any, signal: ac.AbortSignal) -> None:
        if isinstance(event, ac.ToolExecutionEndEvent) and event.tool_name == "settled_tool":
            slow_was_running.append(not slow_done.is_set())
            saved["on_update"](result_of("late"))
            slow_released.set()

    agent = ac.Agent(faux.get_model(), tools=[make_tool("settled_tool", settled),
                                              make_tool("slow_tool", slow)])
    seen = Events()
    agent.subscribe(seen)
    agent.subscribe(late_update)
    faux.set_responses([calls(("settled_tool", "c1"), ("slow_tool", "c2")), OK])
    out = agent.prompt("go").result(WAIT)
    assert slow_was_running == [True]
    assert seen.types.count("tool_execution_update") == 0
    assert [text_of(m) for m in out if m.role == "toolResult"] == ["settled", "slow"]


def test_agent_state_mutators_copy_lists_and_messages_can_be_cleared(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    other = attrs.evolve(faux.get_model(), id="faux-2")
    agent.system_prompt = "new prompt"
    agent.model = other
    agent.thinking_level = "high"  # type: ignore[assignment]
    tools = [make_tool()]
    agent.tools = tools
    messages: list[Any] = [ac.UserMessage("a"), faux_assistant_message("b")]
    agent.messages = messages
    state = agent.state
    assert (state.system_prompt, state.model, state.thinking_level) == (
        "new prompt", other, ac.ThinkingLevel.HIGH)
    assert agent.tools == tools
    assert agent.tools is not tools
    assert agent.messages == messages
    assert agent.messages is not messages
    assert agent.messages[0] is messages[0]
    state.messages.append(ac.UserMessage("into the snapshot"))
    messages.append(ac.UserMessage("into the original"))
    assert len(agent.state.messages) == 2
    agent.messages = []
    assert agent.state.messages == []


@pytest.mark.parametrize("kind", ["steer", "follow_up"])
def test_agent_queued_message_is_not_in_the_transcript(faux: FauxProvider, kind: str) -> None:
    agent = ac.Agent(faux.get_model())
    message = ac.UserMessage("queued")
    getattr(agent, kind)(message)
    getattr(agent, kind)("a plain string")
    assert agent.state.messages == []
    assert agent.has_queued_messages()


@pytest.mark.parametrize("kind", ["steer", "follow_up"])
def test_agent_queueing_a_non_message_raises(faux: FauxProvider, kind: str) -> None:
    agent = ac.Agent(faux.get_model())
    with pytest.raises(TypeError, match="message"):
        getattr(agent, kind)(42)
    assert not agent.has_queued_messages()


def test_agent_abort_while_idle_does_nothing(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    before = agent.state
    agent.abort()
    assert agent.state == before
    faux.set_responses([OK])
    assert agent.prompt("hi").result(WAIT)[-1].stop_reason == "stop"


def test_agent_reset_is_rejected_while_running_and_leaves_state_alone(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    gate = Gate(is_text_delta)
    agent.subscribe(gate)
    faux.set_responses([faux_assistant_message("a reply in chunks")])
    run = agent.prompt("hi")
    with gate:
        before = agent.state
        assert roles(before.messages) == ["user"]
        assert before.is_streaming
        with pytest.raises(ac.AgentBusyError, match="resetting"):
            agent.reset()
        assert agent.state == before
    run.result(WAIT)
    assert not agent.state.is_streaming
    assert roles(agent.state.messages) == ["user", "assistant"]


def test_agent_reset_clears_transcript_queues_and_error(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model(), system_prompt="kept")
    faux.set_responses([faux_assistant_message("", stop_reason="error", error_message="boom")])
    agent.prompt("hi").result(WAIT)
    agent.steer("s")
    agent.follow_up("f")
    assert agent.state.error_message == "boom"
    agent.reset()
    assert agent.state == ac.AgentState("kept", faux.get_model(), ac.ThinkingLevel.OFF, [], [],
                                        False, None, frozenset(), None)
    assert not agent.has_queued_messages()


def test_agent_prompt_continue_and_messages_are_rejected_while_running(
    faux: FauxProvider,
) -> None:
    agent = ac.Agent(faux.get_model())
    gate = Gate(is_text_delta)
    agent.subscribe(gate)
    faux.set_responses([faux_assistant_message("a reply in chunks")])
    run = agent.prompt("hi")
    with gate:
        with pytest.raises(ac.AgentBusyError, match="steer"):
            agent.prompt("again")
        with pytest.raises(ac.AgentBusyError, match="continuing"):
            agent.continue_()
        with pytest.raises(ac.AgentBusyError, match="messages"):
            agent.messages = []
        assert agent.signal is run.signal
    assert roles(run.result(WAIT)) == ["user", "assistant"]
    assert faux.call_count == 1


def test_agent_continue_from_an_assistant_tail_runs_a_queued_follow_up(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model(), messages=[ac.UserMessage("hi"),
                                                 faux_assistant_message("hello")])
    follow = ac.UserMessage("and then?")
    agent.follow_up(follow)
    faux.set_responses([faux_assistant_message("then this")])
    out = agent.continue_().result(WAIT)
    assert out[0] is follow
    assert count(agent.state.messages, follow) == 1
    last = agent.state.messages[-1]
    assert isinstance(last, ac.AssistantMessage)
    assert last.text == "then this"
    assert not agent.has_queued_messages()


def test_agent_continue_from_an_assistant_tail_keeps_one_at_a_time_steering(
    faux: FauxProvider,
) -> None:
    agent = ac.Agent(faux.get_model(), messages=[ac.UserMessage("hi"),
                                                 faux_assistant_message("hello")])
    first, second = ac.UserMessage("steer 1"), ac.UserMessage("steer 2")
    agent.steer(first)
    agent.steer(second)
    faux.set_responses([OK, OK, OK])
    agent.continue_().result(WAIT)
    messages = agent.state.messages
    assert roles(messages[-4:]) == ["user", "assistant", "user", "assistant"]
    assert messages[-4] is first
    assert messages[-2] is second
    assert faux.call_count == 2


def test_agent_continue_rejects_an_empty_transcript_or_nothing_to_continue_with(
    faux: FauxProvider,
) -> None:
    agent = ac.Agent(faux.get_model())
    with pytest.raises(ValueError, match="no messages"):
        agent.continue_()
    agent.messages = [ac.UserMessage("hi"), faux_assistant_message("hello")]
    with pytest.raises(ValueError, match="assistant"):
        agent.continue_()
    assert agent.signal is None
    assert not agent.state.is_streaming
    assert faux.call_count == 0


def test_agent_continue_from_a_user_tail_calls_the_model(faux: FauxProvider) -> None:
    prompt = ac.UserMessage("answer me")
    agent = ac.Agent(faux.get_model(), messages=[prompt])
    seen: list[Any] = []
    faux.set_responses([recording(seen)])
    out = agent.continue_().result(WAIT)
    assert roles(out) == ["assistant"]
    assert seen[0][0].messages == [prompt]
    assert roles(agent.state.messages) == ["user", "assistant"]


def test_agent_should_stop_after_turn_ends_the_run(faux: FauxProvider) -> None:
    seen: list[ac.PrepareNextTurnContext] = []

    def stop(ctx: ac.PrepareNextTurnContext) -> bool:
        seen.append(ctx)
        return True

    agent = ac.Agent(faux.get_model(), tools=[make_tool()], should_stop_after_turn=stop)
    agent.follow_up("never polled")
    faux.set_responses([calls(("echo", "c1")), faux_assistant_message("never")])
    out = agent.prompt("go").result(WAIT)
    assert faux.call_count == 1
    assert roles(out) == ["user", "assistant", "toolResult"]
    [ctx] = seen
    assert roles(ctx.context.messages) == ["user", "assistant", "toolResult"]
    assert ctx.tool_results == [out[2]]
    assert agent.has_queued_messages()


def test_agent_session_id_is_forwarded_and_can_change_between_runs(faux: FauxProvider) -> None:
    seen: list[Any] = []
    agent = ac.Agent(faux.get_model(), session_id="session-abc")
    faux.set_responses([recording(seen), recording(seen)])
    agent.prompt("one").result(WAIT)
    agent.session_id = "session-def"
    agent.prompt("two").result(WAIT)
    assert [options.session_id for _, options, _ in seen] == ["session-abc", "session-def"]


def test_agent_without_stream_fn_uses_the_registered_provider(faux: FauxProvider) -> None:
    seen: list[Any] = []
    agent = ac.Agent(faux.get_model())
    assert agent.stream_fn is None
    faux.set_responses([recording(seen)])
    run = agent.prompt("hi")
    out = run.result(WAIT)
    assert faux.call_count == 1
    assert (out[-1].text, out[-1].api) == ("ok", faux.api)
    _, options, model = seen[0]
    assert model == faux.get_model()
    assert options.signal is run.signal


def test_agent_custom_stream_fn_is_called_instead(faux: FauxProvider) -> None:
    used: list[ac.Model] = []

    def via_registry(model: ac.Model, context: ac.Context, options: ac.StreamOptions) -> Any:
        used.append(model)
        return ac.stream(model, context, options)

    agent = ac.Agent(faux.get_model(), stream_fn=via_registry)
    faux.set_responses([OK])
    assert agent.prompt("hi").result(WAIT)[-1].text == "ok"
    assert used == [faux.get_model()]


def test_agent_prepare_next_turn_gets_the_turn_and_the_signal(faux: FauxProvider) -> None:
    got: list[tuple[Any, Any, list[str]]] = []

    def prepare(ctx: Any, signal: Any) -> None:
        got.append((ctx, signal, roles(ctx.context.messages)))  # the context lives on

    agent = ac.Agent(faux.get_model(), tools=[make_tool()], prepare_next_turn=prepare)
    faux.set_responses([calls(("echo", "c1")), faux_assistant_message("done")])
    run = agent.prompt("go")
    out = run.result(WAIT)
    assert faux.call_count == 2
    assert len(got) == 2
    ctx, signal, context_roles = got[0]
    assert isinstance(ctx, ac.PrepareNextTurnContext)
    assert signal is run.signal
    assert ctx.message is out[1]
    assert ctx.tool_results == [out[2]]
    assert context_roles == ["user", "assistant", "toolResult"]
    assert got[1][2] == ["user", "assistant", "toolResult", "assistant"]


# --- #9340: queued messages survive an abort -----------------------------------------------------


def queue_mode_agent(faux: FauxProvider, mode: ac.QueueMode) -> ac.Agent:
    return ac.Agent(faux.get_model(), steering_mode=mode, follow_up_mode=mode)


def seen_text(seen: list[Any], text: str) -> bool:
    return any(text_of(m) == text for context, _, _ in seen for m in context.messages
               if m.role == "user")


def injected_after(messages: list[Any], prompt_text: str) -> list[Any]:
    """The user messages that come after the user message `prompt_text`."""
    [start] = [i for i, m in enumerate(messages) if m.role == "user" and text_of(m) == prompt_text]
    return [m for m in messages[start + 1:] if m.role == "user"]


def same_objects(got: list[Any], expected: list[Any]) -> bool:
    return len(got) == len(expected) and all(a is b for a, b in zip(got, expected, strict=True))


@pytest.mark.parametrize("clear", [False, True])
@pytest.mark.parametrize("mode", list(ac.QueueMode))
@pytest.mark.parametrize("kind", ["steer", "follow_up"])
def test_agent_messages_queued_before_an_abort_in_prepare_next_turn_survive(
    faux: FauxProvider, kind: str, mode: ac.QueueMode, clear: bool,
) -> None:
    originals = [ac.UserMessage([ac.TextContent(f"queued-{i}"), IMAGE]) for i in (1, 2)]
    agent = queue_mode_agent(faux, mode)
    enqueue = getattr(agent, kind)

    def queue_at_first_turn_end(event: Any, signal: ac.AbortSignal) -> None:
        if event.type == "turn_end":
            unsubscribe()
            for message in originals:
                enqueue(message)

    def abort_between_turns(ctx: Any, signal: ac.AbortSignal) -> None:
        agent.abort()
        if clear:
            agent.clear_all_queues()

    unsubscribe = agent.subscribe(queue_at_first_turn_end)
    agent.prepare_next_turn = abort_between_turns
    seen: list[Any] = []
    faux.set_responses([recording(seen)] * 6)
    agent.prompt("old").result(WAIT)
    assert faux.call_count == 1
    assert not any(count(agent.state.messages, m) for m in originals)
    assert agent.has_queued_messages() is not clear

    agent.prepare_next_turn = None
    agent.prompt("fresh").result(WAIT)
    expected = [] if clear else originals
    assert same_objects(injected_after(agent.state.messages, "fresh"), expected)
    assert seen_text(seen, "queued-1") is not clear
    assert not agent.has_queued_messages()


@pytest.mark.parametrize("clear", [False, True])
@pytest.mark.parametrize("mode", list(ac.QueueMode))
@pytest.mark.parametrize("kind", ["steer", "follow_up"])
def test_agent_messages_polled_just_before_an_abort_go_back_to_the_front(
    faux: FauxProvider, kind: str, mode: ac.QueueMode, clear: bool,
) -> None:
    # The loop does not poll a queue once aborted, so an abort from another thread has to land
    # between a poll and the injection to strand polled messages. Wrapping the queue's `take`
    # puts the abort exactly there, every time.
    originals = [ac.UserMessage(f"queued-{i}") for i in (1, 2)]
    later = ac.UserMessage("queued later")
    agent = queue_mode_agent(faux, mode)
    enqueue = getattr(agent, kind)
    queue = agent._steering if kind == "steer" else agent._follow_up
    take = queue.take
    fired: list[bool] = []

    def take_then_abort(mode: ac.QueueMode) -> list[Any]:
        taken = take(mode)
        if taken and not fired:
            fired.append(True)
            agent.abort()
            if clear:
                agent.clear_all_queues()
            enqueue(later)
        return taken

    def queue_at_first_turn_end(event: Any, signal: ac.AbortSignal) -> None:
        if event.type == "turn_end":
            unsubscribe()
            for message in originals:
                enqueue(message)

    unsubscribe = agent.subscribe(queue_at_first_turn_end)
    queue.take = take_then_abort  # type: ignore[method-assign]
    faux.set_responses([OK] * 6)
    agent.prompt("old").result(WAIT)
    assert fired == [True]
    assert faux.call_count == 1
    assert roles(agent.state.messages) == ["user", "assistant"]
    assert agent.has_queued_messages()

    agent.prompt("fresh").result(WAIT)
    expected = [later] if clear else [*originals, later]
    assert same_objects(injected_after(agent.state.messages, "fresh"), expected)
    assert not agent.has_queued_messages()


@pytest.mark.parametrize("clear", [False, True])
@pytest.mark.parametrize("kind", ["steer", "follow_up"])
def test_agent_all_mode_batch_aborted_after_its_first_message_keeps_the_rest(
    faux: FauxProvider, kind: str, clear: bool,
) -> None:
    accepted, pending = ac.UserMessage("accepted"), ac.UserMessage("pending")
    later = ac.UserMessage("queued later")
    agent = queue_mode_agent(faux, ac.QueueMode.ALL)
    enqueue = getattr(agent, kind)
    enqueue(accepted)
    enqueue(pending)

    def abort_on_accepted(event: Any, signal: ac.AbortSignal) -> None:
        if isinstance(event, ac.MessageEndEvent) and event.message is accepted:
            agent.abort()
            if clear:
                agent.clear_all_queues()
            enqueue(later)

    unsubscribe = agent.subscribe(abort_on_accepted)
    faux.set_responses([OK] * 4)
    agent.prompt("old").result(WAIT)
    messages = agent.state.messages
    assert faux.call_count == (0 if kind == "steer" else 1)
    assert count(messages, accepted) == 1
    assert count(messages, pending) == 0
    assert (messages[-1].stop_reason, messages[-1].error_message) == (
        "aborted", "Request was aborted")

    unsubscribe()
    agent.prompt("fresh").result(WAIT)
    messages = agent.state.messages
    assert count(messages, accepted) == 1
    expected = [later] if clear else [pending, later]
    assert same_objects(injected_after(messages, "fresh"), expected)
    assert not agent.has_queued_messages()


def test_agent_steer_queued_then_aborted_at_message_end_stays_queued(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    queued = ac.UserMessage("queued")

    def steer_then_abort(event: Any, signal: ac.AbortSignal) -> None:
        if is_assistant_end(event):
            unsubscribe()
            agent.steer(queued)
            agent.abort()

    unsubscribe = agent.subscribe(steer_then_abort)
    faux.set_responses([OK, OK, OK])
    agent.prompt("hi").result(WAIT)
    assert faux.call_count == 1
    assert count(agent.state.messages, queued) == 0
    assert agent.has_queued_messages()
    agent.prompt("next").result(WAIT)
    assert same_objects(injected_after(agent.state.messages, "next"), [queued])
    assert not agent.has_queued_messages()


# --- AgentRun ------------------------------------------------------------------------------------


def test_agent_run_iterated_from_two_threads_and_again_yields_every_event(
    faux: FauxProvider,
) -> None:
    agent = ac.Agent(faux.get_model(), tools=[make_tool()])
    seen = Events()
    gate = Gate(is_assistant_end)
    agent.subscribe(seen)
    agent.subscribe(gate)
    faux.set_responses([calls(("echo", "c1")), OK])
    run = agent.prompt("go")
    collected: list[list[Any]] = [[], []]
    first_seen = [threading.Event(), threading.Event()]

    def consume(i: int) -> None:
        for event in run:
            collected[i].append(event)
            first_seen[i].set()

    threads = [threading.Thread(target=consume, args=(i,)) for i in (0, 1)]
    with gate:
        for thread in threads:
            thread.start()
        assert all(e.wait(WAIT) for e in first_seen)  # both iterate while the run is held
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive()
    run.result(WAIT)
    everything = list(run)
    assert everything[0] == ac.AgentStartEvent()
    assert isinstance(everything[-1], ac.AgentEndEvent)
    assert "tool_execution_end" in [e.type for e in everything]
    assert same_objects(seen.events, everything)
    for got in [*collected, list(run)]:
        assert same_objects(got, everything)


def test_agent_run_iteration_started_late_gets_everything(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    gate = Gate(lambda e: e.type == "agent_end")
    agent.subscribe(gate)
    faux.set_responses([OK])
    run = agent.prompt("hi")
    late: list[Any] = []
    with gate:
        consumer = threading.Thread(target=lambda: late.extend(run))
        consumer.start()
    consumer.join(WAIT)
    assert not consumer.is_alive()
    run.result(WAIT)
    assert same_objects(late, list(run))
    assert [late[0].type, late[-1].type] == ["agent_start", "agent_end"]


def test_agent_run_result_times_out_while_running(paced: FauxProvider) -> None:
    agent = ac.Agent(paced.get_model())
    paced.set_responses([faux_assistant_message(LONG)])
    run = agent.prompt("hi")
    try:
        with pytest.raises(TimeoutError):
            run.result(timeout=0.01)
        assert not run.done()
    finally:
        run.abort()
    assert run.result(WAIT)[-1].stop_reason == "aborted"
    assert run.done()


def test_agent_run_result_is_the_new_messages(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model(), messages=[ac.UserMessage("old"),
                                                 faux_assistant_message("older")])
    faux.set_responses([OK])
    run = agent.prompt("new")
    out = run.result(WAIT)
    assert roles(out) == ["user", "assistant"]
    assert out == agent.state.messages[2:]
    assert out == run.result(0)
    assert list(run)[-1] == ac.AgentEndEvent(out)


# --- the rest of the Agent's contract ------------------------------------------------------------


def test_agent_runs_on_a_named_non_daemon_thread(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    seen = Events()
    agent.subscribe(seen)
    faux.set_responses([OK])
    agent.prompt("hi").result(WAIT)
    [thread] = set(seen.threads)
    assert thread is not threading.current_thread()
    assert thread.name.startswith("agentcore-run-")
    assert not thread.daemon


def test_agent_listeners_see_the_state_already_updated(faux: FauxProvider) -> None:
    checks: list[tuple[str, bool]] = []

    def check(event: Any, signal: ac.AbortSignal) -> None:
        state = agent.state
        if isinstance(event, ac.MessageEndEvent):
            checks.append((event.type, state.messages[-1] is event.message))
        elif isinstance(event, ac.ToolExecutionStartEvent):
            checks.append((event.type, event.tool_call_id in state.pending_tool_calls))
        elif isinstance(event, ac.ToolExecutionEndEvent):
            checks.append((event.type, event.tool_call_id not in state.pending_tool_calls))
        elif isinstance(event, ac.TurnEndEvent) and event.message.error_message:
            checks.append((event.type, state.error_message == event.message.error_message))
        elif isinstance(event, ac.AgentEndEvent):
            checks.append((event.type, state.is_streaming and state.streaming_message is None))

    agent = ac.Agent(faux.get_model(), tools=[make_tool()])
    agent.subscribe(check)
    faux.set_responses([calls(("echo", "c1")),
                        faux_assistant_message("", stop_reason="error", error_message="bad")])
    agent.prompt("go").result(WAIT)
    assert [ok for _, ok in checks] == [True] * len(checks)
    assert [name for name, _ in checks] == [
        "message_end", "message_end", "tool_execution_start", "tool_execution_end",
        "message_end", "message_end", "turn_end", "agent_end"]


def test_agent_state_lists_pending_tool_calls_while_tools_run(faux: FauxProvider) -> None:
    started = {"c1": threading.Event(), "c2": threading.Event()}
    release = threading.Event()

    def waits(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        started[tool_call_id].set()
        release.wait(WAIT)
        return result_of("done")

    agent = ac.Agent(faux.get_model(), tools=[make_tool("wait", waits)])
    faux.set_responses([calls(("wait", "c1"), ("wait", "c2")), OK])
    run = agent.prompt("go")
    try:
        assert all(e.wait(WAIT) for e in started.values())
        state = agent.state
        assert state.pending_tool_calls == frozenset({"c1", "c2"})
        assert state.is_streaming
    finally:
        release.set()
    run.result(WAIT)
    assert agent.state.pending_tool_calls == frozenset()


def test_agent_streaming_message_is_a_snapshot_of_the_partial(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    gate = Gate(is_text_delta)
    agent.subscribe(gate)
    faux.set_responses([faux_assistant_message("abcdefghijklmnop")])  # four one-token chunks
    run = agent.prompt("hi")
    with gate:
        snapshot = agent.state.streaming_message
        assert isinstance(snapshot, ac.AssistantMessage)
        assert snapshot.text == "abcd"
        assert snapshot == gate.event.message
    out = run.result(WAIT)
    assert out[-1].text == "abcdefghijklmnop"
    assert gate.event.message.text == "abcdefghijklmnop"  # the faux partial is live ...
    assert snapshot.text == "abcd"  # ... the snapshot is not
    assert agent.state.streaming_message is None


def test_agent_is_not_streaming_once_result_returns(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    gate = Gate(lambda e: e.type == "agent_start")
    agent.subscribe(gate)
    faux.set_responses([OK])
    run = agent.prompt("hi")
    with gate:
        assert agent.state.is_streaming
    run.result(WAIT)
    assert not agent.state.is_streaming
    assert agent.signal is None
    assert agent.wait_for_idle(0) is True


def test_agent_settings_changed_during_a_run_apply_from_the_next(faux: FauxProvider) -> None:
    other = attrs.evolve(faux.get_model(), id="faux-2")
    seen: list[Any] = []

    def switch(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        agent.model = other
        agent.system_prompt = "new"
        agent.tools = []
        return result_of("switched")

    agent = ac.Agent(faux.get_model(), system_prompt="old", tools=[make_tool("switch", switch)])
    faux.set_responses([recording(seen, calls(("switch", "c1"))), recording(seen),
                        recording(seen)])
    out = agent.prompt("go").result(WAIT)
    assert [(c.system_prompt, m.id, len(c.tools or [])) for c, _, m in seen] == [
        ("old", "faux-1", 1), ("old", "faux-1", 1)]
    assert out[-1].model == "faux-1"
    out = agent.prompt("again").result(WAIT)
    context, _, model = seen[-1]
    assert (context.system_prompt, model.id, context.tools) == ("new", "faux-2", None)
    assert out[-1].model == "faux-2"


@pytest.mark.parametrize("how", ["init", "setattr"])
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("model", None),
        ("system_prompt", None),
        ("thinking_level", "extreme"),
        ("tools", "x"),
        ("tools", [42]),
        ("messages", ["not a message"]),
        ("steering_mode", "sometimes"),
        ("follow_up_mode", 3),
        ("tool_execution", "fast"),
        ("prepare_next_turn", "not callable"),
        ("session_id", 42),
        ("cache_retention", "forever"),
        ("tool_executor", "pool"),
    ],
)
def test_agent_bad_option_raises_naming_the_field(
    faux: FauxProvider, how: str, field: str, value: Any,
) -> None:
    named = rf"'{field}(\[\d+\])?'"  # a list's item is named by its index: 'tools[0]'
    if how == "init":
        with pytest.raises((TypeError, ValueError), match=named):
            ac.Agent(**{"model": faux.get_model(), field: value})
        return
    agent = ac.Agent(faux.get_model())
    before = getattr(agent, field)
    with pytest.raises((TypeError, ValueError), match=named):
        setattr(agent, field, value)
    assert getattr(agent, field) == before


def test_agent_enum_options_accept_their_strings(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model(), steering_mode="all", tool_execution="sequential")
    agent.follow_up_mode = "all"  # type: ignore[assignment]
    agent.thinking_level = "medium"  # type: ignore[assignment]
    assert (agent.steering_mode, agent.follow_up_mode) == (ac.QueueMode.ALL, ac.QueueMode.ALL)
    assert agent.tool_execution is ac.ToolExecutionMode.SEQUENTIAL
    assert agent.thinking_level is ac.ThinkingLevel.MEDIUM


def test_agent_prompt_with_images_builds_one_user_message(faux: FauxProvider) -> None:
    seen: list[Any] = []
    agent = ac.Agent(faux.get_model())
    faux.set_responses([recording(seen)])
    out = agent.prompt("what is this?", images=[IMAGE]).result(WAIT)
    prompt = out[0]
    assert prompt == ac.UserMessage([ac.TextContent("what is this?"), IMAGE],
                                    timestamp=prompt.timestamp)
    assert seen[0][0].messages == [prompt]


def test_agent_prompt_with_an_empty_list_runs_on_the_transcript(faux: FauxProvider) -> None:
    history = ac.UserMessage("already here")
    seen: list[Any] = []
    agent = ac.Agent(faux.get_model(), messages=[history])
    faux.set_responses([recording(seen)])
    out = agent.prompt([]).result(WAIT)
    assert roles(out) == ["assistant"]
    assert seen[0][0].messages == [history]
    assert roles(agent.state.messages) == ["user", "assistant"]


def test_agent_prompt_with_a_message_or_a_list_keeps_the_objects(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    single = ac.UserMessage("one")
    pair = [ac.UserMessage("two"), ac.UserMessage("three")]
    faux.set_responses([OK, OK])
    out = agent.prompt(single).result(WAIT)
    assert out[0] is single
    out = agent.prompt(pair).result(WAIT)
    assert same_objects(out[:2], pair)
    assert roles(agent.state.messages) == ["user", "assistant", "user", "user", "assistant"]


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((42,), {}),
        (([ac.UserMessage("ok"), "not a message"],), {}),
        ((ac.UserMessage("hi"),), {"images": [IMAGE]}),
        (("hi",), {"images": ["not an image"]}),
    ],
)
def test_agent_prompt_rejects_bad_input_without_starting(
    faux: FauxProvider, args: tuple[Any, ...], kwargs: dict[str, Any],
) -> None:
    agent = ac.Agent(faux.get_model())
    with pytest.raises(TypeError):
        agent.prompt(*args, **kwargs)
    assert agent.signal is None
    assert agent.state.messages == []


def test_agent_steer_and_follow_up_from_a_listener_and_a_tool_are_injected_once(
    faux: FauxProvider,
) -> None:
    from_listener = ac.UserMessage("from a listener")
    from_tool = ac.UserMessage("from a tool")
    follow = ac.UserMessage("a follow-up")

    def queues(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        agent.steer(from_tool)
        agent.follow_up(follow)
        return result_of("queued")

    def steer_once(event: Any, signal: ac.AbortSignal) -> None:
        if is_assistant_end(event):
            unsubscribe()
            agent.steer(from_listener)

    agent = ac.Agent(faux.get_model(), tools=[make_tool("queue", queues)],
                     steering_mode=ac.QueueMode.ALL)
    unsubscribe = agent.subscribe(steer_once)
    faux.set_responses([calls(("queue", "c1")), OK, OK, OK])
    out = agent.prompt("go").result(WAIT)
    assert roles(out) == ["user", "assistant", "toolResult", "user", "user", "assistant",
                          "user", "assistant"]
    injected = [m for m in out if m.role == "user"][1:]
    assert same_objects(injected, [from_listener, from_tool, follow])
    assert faux.call_count == 3
    assert not agent.has_queued_messages()


def test_agent_raising_listener_is_logged_and_skipped(
    faux: FauxProvider, caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(event: Any, signal: ac.AbortSignal) -> None:
        if event.type == "turn_start":
            raise RuntimeError("listener bug")

    seen = Events()
    agent = ac.Agent(faux.get_model())
    agent.subscribe(broken)
    agent.subscribe(seen)
    faux.set_responses([OK])
    with caplog.at_level(logging.ERROR, logger=drive_module.__name__):
        run = agent.prompt("hi")
        out = run.result(WAIT)
    assert roles(out) == ["user", "assistant"]
    assert out[-1].stop_reason == "stop"
    assert seen.events == list(run)
    assert agent.state.error_message is None
    [record] = [r for r in caplog.records if r.name == drive_module.__name__]
    assert record.exc_info is not None
    assert str(record.exc_info[1]) == "listener bug"
    assert "turn_start" in record.getMessage()


@pytest.mark.parametrize("aborted", [False, True])
def test_agent_exception_escaping_the_loop_becomes_a_failure_message(
    faux: FauxProvider, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
    aborted: bool,
) -> None:
    # The loop turns every failure it sees into a message, so only a broken loop raises.
    def broken_loop(*args: Any) -> Any:
        if aborted:
            agent.abort()
        raise RuntimeError("loop broke")

    monkeypatch.setattr(drive_module, "run_agent_loop", broken_loop)
    model = faux.get_model()
    agent = ac.Agent(model)
    seen = Events()
    agent.subscribe(seen)
    with caplog.at_level(logging.ERROR, logger=drive_module.__name__):
        out = agent.prompt("hi").result(WAIT)
    [failure] = out
    assert failure == ac.AssistantMessage(
        [], model.api, model.provider, model.id, stop_reason="aborted" if aborted else "error",
        error_message="loop broke", timestamp=failure.timestamp,
    )
    assert seen.events == [ac.MessageStartEvent(failure), ac.MessageEndEvent(failure),
                           ac.TurnEndEvent(failure, []), ac.AgentEndEvent([failure])]
    assert agent.state.messages == [failure]
    assert agent.state.error_message == "loop broke"
    assert not agent.state.is_streaming
    assert "agent run failed" in caplog.text


def test_agent_listener_raising_a_base_exception_fails_the_run(faux: FauxProvider) -> None:
    class Fatal(BaseException):
        pass

    def fatal_once(event: Any, signal: ac.AbortSignal) -> None:
        if isinstance(event, ac.MessageEndEvent) and event.message.role == "user":
            unsubscribe()
            raise Fatal("listener gave up")

    seen = Events()
    agent = ac.Agent(faux.get_model())
    agent.subscribe(seen)
    unsubscribe = agent.subscribe(fatal_once)
    faux.set_responses([OK])
    out = agent.prompt("hi").result(WAIT)
    assert seen.types == ["agent_start", "turn_start", "message_start", "message_end",
                          "message_start", "message_end", "turn_end", "agent_end"]
    assert [(m.stop_reason, m.error_message) for m in out] == [("error", "listener gave up")]
    assert roles(agent.state.messages) == ["user", "assistant"]
    assert faux.call_count == 0
    assert not agent.state.is_streaming


def test_agent_abort_while_streaming_ends_the_run_quickly(paced: FauxProvider) -> None:
    agent = ac.Agent(paced.get_model())
    streaming = threading.Event()
    agent.subscribe(lambda event, signal: streaming.set() if is_text_delta(event) else None)
    paced.set_responses([faux_assistant_message(LONG)])
    run = agent.prompt("hi")
    assert streaming.wait(WAIT)
    run.abort()
    out = run.result(WAIT)
    last = out[-1]  # aborted mid-reply: the abort ended it, before the reply could

    assert (last.stop_reason, last.error_message) == ("aborted", "Request was aborted")
    assert 0 < len(last.text) < len(LONG)
    assert agent.state.error_message == "Request was aborted"
    paced.set_responses([faux_assistant_message("again")])
    assert agent.prompt("again").result(WAIT)[-1].text == "again"
    assert agent.state.error_message is None


@pytest.mark.parametrize("mode", list(ac.ToolExecutionMode))
def test_agent_abort_while_a_tool_runs_gives_each_call_one_result(
    faux: FauxProvider, mode: ac.ToolExecutionMode,
) -> None:
    started = {"c1": threading.Event(), "c2": threading.Event()}
    saw_abort: list[bool] = []

    def honours_abort(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        started[tool_call_id].set()
        saw_abort.append(signal.wait(WAIT))
        return result_of("stopped")

    agent = ac.Agent(faux.get_model(), tools=[make_tool("wait", honours_abort)],
                     tool_execution=mode)
    agent.follow_up("after")
    faux.set_responses([calls(("wait", "c1"), ("wait", "c2")), faux_assistant_message("never")])
    run = agent.prompt("go")
    assert started["c1"].wait(WAIT)  # c2 may not have started: it then never runs
    agent.abort()
    out = run.result(WAIT)
    results = [m for m in out if m.role == "toolResult"]
    assert [m.tool_call_id for m in results] == ["c1", "c2"]
    assert text_of(results[0]) == "stopped"
    assert saw_abort
    assert all(saw_abort)
    assert roles(out) == ["user", "assistant", "toolResult", "toolResult"]
    assert faux.call_count == 1
    assert agent.has_queued_messages()  # the follow-up was never polled
