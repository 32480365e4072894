from __future__ import annotations

import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from _internals import _registry

import agentcore as ac
from agentcore import testing
from agentcore.providers import faux
from agentcore.testing import (
    EventRecorder,
    ModelCall,
    ScriptedModel,
    record_events,
    scripted_model,
    tool_call,
)

TIMEOUT = 10


def _add(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
    return ac.AgentToolResult([ac.TextContent(str(args["a"] + args["b"]))])


ADD = ac.AgentTool(
    "add", "Add two integers.",
    {"type": "object", "required": ["a", "b"],
     "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
    _add,
)


def _ask(model: ac.Model, text: str = "hi") -> ac.AssistantMessage:
    return ac.complete(model, ac.Context(None, [ac.UserMessage(text)]))


# --- re-exports -----------------------------------------------------------------------------------


def test_testing_reexports_the_faux_provider_api() -> None:
    for name in ("register_faux_provider", "FauxProvider", "faux_text", "faux_thinking",
                 "faux_tool_call", "faux_assistant_message"):
        assert getattr(testing, name) is getattr(faux, name)
        assert name in testing.__all__


def test_testing_all_is_sorted_and_documented() -> None:
    assert testing.__all__ == sorted(testing.__all__)
    assert testing.__doc__
    for name in testing.__all__:
        assert getattr(testing, name) is not None
        if name != "Reply":
            assert getattr(testing, name).__doc__, name


def test_the_module_docstring_example_runs() -> None:
    assert testing.__doc__ is not None
    code = testing.__doc__.split("::\n\n")[1].split("\n\nA reply")[0]
    namespace: dict[str, Any] = {}
    exec(textwrap.dedent(code), namespace)
    namespace["test_the_agent_adds"]()


# --- scripted_model with an Agent -----------------------------------------------------------------


def test_scripted_model_answers_an_agent_and_records_the_request() -> None:
    with scripted_model(["Hello!"]) as fake:
        agent = ac.Agent(fake.model, system_prompt="Be brief.", tools=[ADD])
        messages = agent.prompt("hi").result(TIMEOUT)
    assert [m.role for m in messages] == ["user", "assistant"]
    reply = messages[-1]
    assert isinstance(reply, ac.AssistantMessage)
    assert reply.text == "Hello!"
    assert reply.stop_reason == ac.StopReason.STOP
    assert reply.model == "scripted-1"
    fake.assert_called(times=1)
    assert fake.sent_system_prompt == "Be brief."
    assert fake.last_context.system_prompt == "Be brief."
    assert [m.role for m in fake.sent_messages()] == ["user"]
    assert fake.last_call.tool_names == ["add"]
    assert fake.last_call.tools == [ADD]
    assert fake.last_call.model == fake.model
    fake.assert_all_replies_used()


def test_scripted_model_tool_call_round_trip_with_an_agent() -> None:
    call = tool_call("add", {"a": 1, "b": 2}, id="call-1")
    with scripted_model([call, "The answer is 3"]) as fake:
        agent = ac.Agent(fake.model, tools=[ADD])
        messages = agent.prompt("What is 1 + 2?").result(TIMEOUT)
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    first = messages[1]
    assert isinstance(first, ac.AssistantMessage)
    assert first.tool_calls == [call]
    assert first.stop_reason == ac.StopReason.TOOL_USE
    assert messages[-1].text == "The answer is 3"  # type: ignore[union-attr]
    fake.assert_called(times=2)
    assert fake.sent_tool_results(call=0) == []
    [result] = fake.sent_tool_results()
    assert (result.tool_call_id, result.tool_name, result.text, result.is_error) == (
        "call-1", "add", "3", False)
    assert [m.role for m in fake.sent_messages(call=-1)] == ["user", "assistant", "toolResult"]
    assert fake.sent_messages(call=1) == fake.calls[1].messages


def test_tool_call_defaults_to_no_arguments_and_a_unique_id() -> None:
    a, b = tool_call("now"), tool_call("now")
    assert (a.name, a.arguments) == ("now", {})
    assert a.id != b.id


# --- scripted_model with the loop -----------------------------------------------------------------


def test_scripted_model_drives_run_agent_loop_and_sees_the_options() -> None:
    events = EventRecorder()
    with scripted_model([tool_call("add", {"a": 2, "b": 40}), "42"]) as fake:
        config = ac.AgentLoopConfig(model=fake.model, temperature=0.25, max_tokens=99)
        messages = ac.run_agent_loop([ac.UserMessage("2 + 40?")],
                                     ac.AgentContext("sys", [], [ADD]), config, events)
    assert messages[-1].text == "42"  # type: ignore[union-attr]
    assert [(c.options.temperature, c.options.max_tokens) for c in fake.calls] == [
        (0.25, 99), (0.25, 99)]
    assert fake.sent_tool_results()[0].text == "42"
    assert events.types[:4] == ["agent_start", "turn_start", "message_start", "message_end"]
    assert events.types[-1] == "agent_end"
    assert events.types.count("turn_end") == 2
    [end] = events.of(ac.ToolExecutionEndEvent)
    assert (end.tool_name, end.is_error) == ("add", False)
    assert events.of(ac.AgentEndEvent)[0].messages == messages


def test_record_events_collects_an_agent_loop_stream() -> None:
    with scripted_model(["Hi there"]) as fake:
        stream = ac.agent_loop([ac.UserMessage("hi")], ac.AgentContext(),
                               ac.AgentLoopConfig(model=fake.model))
        events = record_events(stream, timeout=TIMEOUT)
    assert events.types[0] == "agent_start"
    assert events.types[-1] == "agent_end"
    assert events.streamed_text == "Hi there"
    assert stream.result(TIMEOUT)[-1].text == "Hi there"  # type: ignore[union-attr]


# --- reply kinds ----------------------------------------------------------------------------------


def test_scripted_replies_of_every_kind() -> None:
    failure = faux.faux_assistant_message([], "error", "boom")
    replies: list[testing.Reply] = [
        "plain",
        ac.TextContent("block"),
        [ac.ThinkingContent("hmm"), "then text"],
        ("a", "b"),
        faux.faux_assistant_message("a message"),
        failure,
    ]
    with scripted_model(replies) as fake:
        got = [_ask(fake.model) for _ in replies]
    assert [m.text for m in got[:5]] == ["plain", "block", "then text", "ab", "a message"]
    assert got[2].content[0] == ac.ThinkingContent("hmm")
    assert (got[5].stop_reason, got[5].error_message) == (ac.StopReason.ERROR, "boom")


def test_dynamic_replies_see_the_request() -> None:
    seen: list[tuple[str, float | None, str]] = []

    def echo(context: ac.Context, options: ac.StreamOptions, model: ac.Model) -> str:
        seen.append((context.messages[-1].text, options.temperature, model.id))
        return f"you said {context.messages[-1].text}"

    def call_tool(context: ac.Context, options: ac.StreamOptions, model: ac.Model) -> Any:
        return ["calling", tool_call("add", {"a": 1, "b": 1})]

    def whole(context: ac.Context, options: ac.StreamOptions, model: ac.Model) -> Any:
        return faux.faux_assistant_message("whole message")

    with scripted_model([echo, call_tool, whole]) as fake:
        options = ac.StreamOptions(temperature=0.5)
        first = ac.complete(fake.model, ac.Context(None, [ac.UserMessage("ping")]), options)
        second, third = _ask(fake.model), _ask(fake.model)
    assert first.text == "you said ping"
    assert seen == [("ping", 0.5, "scripted-1")]
    assert (second.text, [c.name for c in second.tool_calls]) == ("calling", ["add"])
    assert second.stop_reason == ac.StopReason.TOOL_USE
    assert third.text == "whole message"


def test_a_dynamic_reply_of_a_bad_kind_becomes_an_error_message() -> None:
    with scripted_model([lambda context, options, model: 42]) as fake:  # type: ignore[list-item,return-value]
        reply = _ask(fake.model)
    assert reply.stop_reason == ac.StopReason.ERROR
    assert "a scripted reply must be a str" in (reply.error_message or "")
    assert "42" in (reply.error_message or "")


def test_scripted_model_rejects_bad_replies_at_once() -> None:
    with scripted_model() as fake:
        with pytest.raises(TypeError, match=r"a scripted reply must be .* got 42"):
            fake.add_replies([42])  # type: ignore[list-item]
        with pytest.raises(TypeError, match="blocks must be"):
            fake.add_replies([["ok", 3]])  # type: ignore[list-item]
        with pytest.raises(TypeError, match="'replies' must be a list"):
            fake.add_replies("hello")
        assert fake.pending_replies == 0


def test_a_bad_reply_at_construction_leaves_nothing_registered() -> None:
    before = set(_registry._providers)
    with pytest.raises(TypeError, match="got None"):
        scripted_model(["fine", None])  # type: ignore[list-item]
    assert set(_registry._providers) == before


def test_add_replies_queues_after_the_pending_ones() -> None:
    with scripted_model(["one"]) as fake:
        fake.add_replies(["two", "three"])
        assert fake.pending_replies == 3
        assert [_ask(fake.model).text for _ in range(3)] == ["one", "two", "three"]
        assert fake.pending_replies == 0


def test_an_exhausted_script_fails_the_call_like_a_provider_and_records_it() -> None:
    with scripted_model(["only"]) as fake:
        agent = ac.Agent(fake.model)
        agent.prompt("1").result(TIMEOUT)
        messages = agent.prompt("2").result(TIMEOUT)
    reply = messages[-1]
    assert isinstance(reply, ac.AssistantMessage)
    assert reply.stop_reason == ac.StopReason.ERROR
    assert reply.error_message == "No more faux responses queued"
    fake.assert_called(times=2)


def test_scripted_model_keeps_a_given_models_fields_and_paces() -> None:
    base = ac.Model("mine", "Mine", "whatever", "acme", "http://x", context_window=1000,
                    cost=ac.ModelCost(input=1.0, output=2.0))
    with scripted_model(["a b c d e f g h"], model=base, tokens_per_second=1000,
                        token_size=(1, 1)) as fake:
        assert (fake.model.id, fake.model.context_window, fake.model.cost) == (
            "mine", 1000, base.cost)
        assert fake.model.api != "whatever"
        assert fake.model.provider == "acme"
        events = list(ac.stream(fake.model, ac.Context(None, [ac.UserMessage("hi")])))
    deltas = [e for e in events if isinstance(e, ac.TextDeltaEvent)]
    assert [d.delta for d in deltas] == ["a b ", "c d ", "e f ", "g h"]
    assert events[-1].message.usage.cost.total > 0  # type: ignore[union-attr]


# --- assertions -----------------------------------------------------------------------------------


def test_assert_called_passes_and_fails_with_the_calls_it_got() -> None:
    with scripted_model(["one", "two"]) as fake:
        with pytest.raises(AssertionError, match="called at least once, it was called 0 times"):
            fake.assert_called()
        fake.assert_called(times=0)
        _ask(fake.model, "first question")
        fake.assert_called()
        fake.assert_called(times=1)
        _ask(fake.model, "second question")
        with pytest.raises(AssertionError) as failed:
            fake.assert_called(times=1)
    assert str(failed.value) == (
        "expected the scripted model to be called once, it was called 2 times\n"
        "  call 0: 1 message, last user: 'first question'\n"
        "  call 1: 1 message, last user: 'second question'"
    )


def test_assert_called_marks_the_calls_that_found_no_reply() -> None:
    with scripted_model(["only"]) as fake:
        _ask(fake.model, "first")
        assert _ask(fake.model, "second").error_message == "No more faux responses queued"
        with pytest.raises(AssertionError) as failed:
            fake.assert_called(times=1)
    assert str(failed.value) == (
        "expected the scripted model to be called once, it was called 2 times\n"
        "  call 0: 1 message, last user: 'first'\n"
        "  call 1: 1 message, last user: 'second'  [no scripted reply left]"
    )


def test_assert_all_replies_used_names_the_unused_ones() -> None:
    with scripted_model(["used", "left over", tool_call("add", {"a": 1, "b": 2}),
                         lambda context, options, model: "x"]) as fake:
        _ask(fake.model)
        with pytest.raises(AssertionError) as failed:
            fake.assert_all_replies_used()
        for _ in range(3):
            _ask(fake.model)
        fake.assert_all_replies_used()
    message = str(failed.value)
    assert message.startswith("3 scripted replies were never requested (the model was called "
                              "once): 'left over', add({'a': 1, 'b': 2}), <function ")
    assert "'used'" not in message


def test_assert_all_replies_used_says_one_reply_in_the_singular() -> None:
    with scripted_model(["used", "left over"]) as fake:
        _ask(fake.model)
        assert repr(fake) == "<ScriptedModel 'scripted-1' 1 reply pending, called once>"
        with pytest.raises(AssertionError) as failed:
            fake.assert_all_replies_used()
        _ask(fake.model)
    assert str(failed.value) == ("1 scripted reply was never requested (the model was called "
                                 "once): 'left over'")


def test_assert_tool_called_finds_a_call_by_name_and_arguments() -> None:
    with scripted_model([tool_call("add", {"a": 1, "b": 2}, id="c1"), "3"]) as fake:
        with pytest.raises(AssertionError) as none_yet:
            fake.assert_tool_called("add")
        ac.Agent(fake.model, tools=[ADD]).prompt("1 + 2?").result(TIMEOUT)
        assert fake.assert_tool_called("add") == tool_call("add", {"a": 1, "b": 2}, id="c1")
        assert fake.assert_tool_called("add", {"a": 1, "b": 2}).id == "c1"
        with pytest.raises(AssertionError) as wrong_args:
            fake.assert_tool_called("add", {"a": 2, "b": 2})
        with pytest.raises(AssertionError) as wrong_name:
            fake.assert_tool_called("sub")
    assert str(none_yet.value) == "expected the model to call 'add'; the tool calls it made: none"
    assert str(wrong_args.value) == ("expected the model to call 'add' with {'a': 2, 'b': 2}; "
                                     "the tool calls it made: add({'a': 1, 'b': 2})")
    assert str(wrong_name.value) == ("expected the model to call 'sub'; the tool calls it made: "
                                     "add({'a': 1, 'b': 2})")


@pytest.mark.parametrize(
    "fail",
    [
        lambda fake: fake.assert_called(times=3),
        lambda fake: fake.assert_all_replies_used(),
        lambda fake: fake.assert_tool_called("add"),
        lambda fake: fake.call(5),
        lambda fake: fake.sent_messages(call=5),
        lambda fake: fake.sent_tool_results(call=5),
        lambda fake: fake.last_call,
        lambda fake: fake.last_context,
        lambda fake: fake.sent_system_prompt,
    ],
)
def test_assertion_helpers_hide_their_frames_from_pytest(fail: Any) -> None:
    with scripted_model(["unused"]) as fake:
        with pytest.raises(AssertionError) as failed:
            fail(fake)
        _ask(fake.model)
    tb = failed.value.__traceback__
    package = Path(testing.__file__).parent
    frames = []
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename).parent == package:  # any module of the package
            frames.append(tb.tb_frame)
        tb = tb.tb_next
    assert frames
    assert all(frame.f_locals.get("__tracebackhide__") is True for frame in frames)


def test_asking_for_a_call_that_did_not_happen_fails_clearly() -> None:
    with scripted_model(["one"]) as fake:
        with pytest.raises(AssertionError, match="has no call -1: it was called 0 times"):
            _ = fake.last_call
        with pytest.raises(AssertionError, match="no call -1"):
            _ = fake.sent_system_prompt
        _ask(fake.model)
        assert fake.call(0) == fake.call(-1) == fake.last_call
        with pytest.raises(AssertionError, match="has no call 1: it was called once"):
            fake.sent_messages(call=1)
        with pytest.raises(AssertionError, match="no call -2"):
            fake.sent_tool_results(call=-2)


def test_model_call_properties_and_summary() -> None:
    result = ac.ToolResultMessage("c1", "add", [ac.TextContent("3")])
    context = ac.Context("sys", [ac.UserMessage("hi"), result], [ADD])
    call = ModelCall(ac.Model("m", "m", "x", "y", "z"), context, ac.StreamOptions())
    assert call.system_prompt == "sys"
    assert call.messages == context.messages
    assert call.messages is not context.messages
    assert call.tool_results == [result]
    assert call.tool_names == ["add"]
    assert call.summary() == "2 messages, last toolResult: 'add: 3'"
    empty = ModelCall(call.model, ac.Context(None, []), call.options)
    assert (empty.tools, empty.tool_names, empty.summary()) == ([], [], "no messages")


# --- cleanup --------------------------------------------------------------------------------------


def test_scripted_model_unregisters_on_exit_even_after_an_error() -> None:
    with pytest.raises(RuntimeError), scripted_model(["x"]) as fake:
        raise RuntimeError
    assert fake.closed
    with pytest.raises(ac.ProviderNotFoundError):
        ac.stream(fake.model, ac.Context(None, [ac.UserMessage("hi")]))


def test_scripted_model_works_without_with_and_close_is_idempotent() -> None:
    fake = ScriptedModel(["Hello!"])
    try:
        assert _ask(fake.model).text == "Hello!"
        assert not fake.closed
        assert repr(fake) == "<ScriptedModel 'scripted-1' 0 replies pending, called once>"
    finally:
        fake.close()
    fake.close()
    fake.provider.append_responses([])  # the provider object itself stays usable
    assert repr(fake) == "<ScriptedModel 'scripted-1' closed, called once>"
    with pytest.raises(ac.ProviderNotFoundError):
        _ask(fake.model)


def _closed_text(model_id: str = "scripted-1") -> str:
    return (f"the scripted model {model_id!r} was closed while a run used it: wait for the run "
            "inside the `with scripted_model(...)` block (e.g. call run.result() there)")


def test_a_run_not_waited_for_inside_the_with_block_fails_saying_so() -> None:
    release = threading.Event()

    def wait(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        release.wait(TIMEOUT)
        return ac.AgentToolResult([ac.TextContent("done")])

    waiter = ac.AgentTool("wait", "Wait.", {"type": "object", "properties": {}}, wait)
    before = set(_registry._providers)
    with scripted_model([tool_call("wait"), "finished"]) as fake:
        run = ac.Agent(fake.model, tools=[waiter]).prompt("go")  # no run.result() in the block
    release.set()
    assert run.error == _closed_text()
    assert set(_registry._providers) == before  # the stand-in is gone once it answered


def test_close_with_replies_left_fails_the_next_call_clearly_then_unregisters() -> None:
    fake = scripted_model(["never asked for"], model="mine")
    fake.close()
    reply = _ask(fake.model)
    assert (reply.stop_reason, reply.error_message) == (ac.StopReason.ERROR, _closed_text("mine"))
    with pytest.raises(ac.ProviderNotFoundError):
        _ask(fake.model)
    fake.close()


def test_close_tolerates_a_provider_unregistered_by_hand() -> None:
    fake = scripted_model()
    fake.provider.unregister()
    fake.close()
    assert fake.closed


def test_scripted_models_are_independent() -> None:
    with scripted_model(["from a"]) as a, scripted_model(["from b"]) as b:
        assert a.model.api != b.model.api
        assert _ask(b.model).text == "from b"
        assert _ask(a.model).text == "from a"
        a.assert_called(times=1)
        b.assert_called(times=1)


# --- EventRecorder / record_events ----------------------------------------------------------------


def test_record_events_subscribes_to_an_agent_until_closed() -> None:
    with scripted_model(["one", "two"]) as fake:
        agent = ac.Agent(fake.model)
        with record_events(agent) as events:
            agent.prompt("first").result(TIMEOUT)
        agent.prompt("second").result(TIMEOUT)
    assert events.types == [
        "agent_start", "turn_start", "message_start", "message_end",
        "message_start", "message_update", "message_update", "message_update", "message_end",
        "turn_end", "agent_end",
    ]
    assert events.streamed_text == "one"
    assert len(events) == 11
    [end] = events.of(ac.MessageEndEvent)[1:]
    assert isinstance(end.message, ac.AssistantMessage)
    assert end.message.text == "one"
    events.close()  # a second close does nothing


def test_record_events_of_a_run_waits_for_it() -> None:
    release = threading.Event()

    def slow(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        release.wait(TIMEOUT)
        return ac.AgentToolResult([ac.TextContent("done")])

    waiter = ac.AgentTool("wait", "Wait.", {"type": "object", "properties": {}}, slow)
    with scripted_model([tool_call("wait"), "finished"]) as fake:
        agent = ac.Agent(fake.model, tools=[waiter])
        run = agent.prompt("go")
        try:
            with pytest.raises(TimeoutError):
                record_events(run, timeout=0.05)
        finally:
            release.set()
        events = record_events(run, timeout=TIMEOUT)
    assert events.types[-1] == "agent_end"
    assert [e.type for e in events.of(ac.ToolExecutionStartEvent)] == ["tool_execution_start"]
    assert events.events == list(run)


def test_event_recorder_as_a_listener_clear_and_repr() -> None:
    recorder = record_events()
    with scripted_model(["hi"]) as fake:
        agent = ac.Agent(fake.model)
        unsubscribe = agent.subscribe(recorder)
        agent.prompt("x").result(TIMEOUT)
        unsubscribe()
    assert recorder.types[0] == "agent_start"
    assert repr(recorder) == f"<EventRecorder {len(recorder)} events>"
    recorder.clear()
    assert (recorder.events, recorder.types, len(recorder)) == ([], [], 0)


def test_record_events_rejects_other_sources() -> None:
    with pytest.raises(TypeError, match="'source' must be an Agent"):
        record_events("agent")  # type: ignore[arg-type]
