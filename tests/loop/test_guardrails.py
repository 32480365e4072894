"""Guardrails (API §26): input checks beside the first model call, output checks on the last
reply, trips that end the run (or go back to the model), with scripted models and over HTTP.
Tests follow causality (a guardrail that waits for an event), never the clock."""

from __future__ import annotations

import threading
from typing import Any

import attrs
import pytest
from sse_server import HOLD, SSEServer

import agentcore as ac
from agentcore.testing import scripted_model, tool_call


def kinds(run: ac.AgentRun) -> list[str]:
    return [e.type for e in run if e.type != "message_update"]


def test_input_guardrails_that_pass_see_the_first_call_s_context() -> None:
    seen: list[list[str]] = []

    def polite(messages: list[ac.AgentMessage]) -> str | None:
        seen.append([str(getattr(m, "content", "")) for m in messages])
        return None

    with scripted_model(["hello"]) as model:
        agent = ac.Agent(model.model, input_guardrails=[polite])
        run = agent.prompt("hi there")
        assert run.text == "hello"
    assert seen == [["hi there"]]
    assert "guardrail_tripped" not in kinds(run)


def test_an_input_trip_cuts_the_streaming_call_short_and_ends_the_run() -> None:
    server = SSEServer()
    try:
        gone = server.slow_sse([b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'],
                               HOLD)
        model = ac.Model("m", "m", "openai-completions", "openai", f"{server.url}/v1")
        streaming = threading.Event()

        def no_secrets(messages: list[ac.AgentMessage]) -> str | None:
            assert streaming.wait(10)  # the model call is under way beside it
            return "the prompt holds a password"

        agent = ac.Agent(model, input_guardrails=[no_secrets])
        agent.subscribe(lambda e, s: streaming.set() if e.type == "message_update" else None)
        run = agent.prompt("my password is hunter2")
        assert run.wait(10)
        assert gone.seen.wait(10)  # the request was cut
    finally:
        server.close()
    assert run.error == "guardrail tripped: no_secrets: the prompt holds a password"
    with pytest.raises(ac.GuardrailTripped) as info:
        run.raise_for_error()
    assert isinstance(info.value, ac.RunError)
    trips = [e for e in run if isinstance(e, ac.GuardrailTrippedEvent)]
    assert [(t.kind, t.name, t.reason, t.retry) for t in trips] == [
        ("input", "no_secrets", "the prompt holds a password", False)]
    reply = agent.messages[-1]
    assert isinstance(reply, ac.AssistantMessage)
    assert reply.stop_reason == ac.StopReason.ERROR  # not an abort


def test_no_tool_starts_before_the_input_guardrails_pass() -> None:
    reply_done = threading.Event()
    ran: list[str] = []

    @ac.tool
    def look() -> str:
        """Look."""
        ran.append("look")
        return "seen"

    def slow_check(messages: list[ac.AgentMessage]) -> str | None:
        assert reply_done.wait(10)  # the model has asked for the tool by now...
        assert ran == []  # ...and the tool waits for this guardrail
        return None

    with scripted_model([tool_call("look", {}), "done"]) as model:
        agent = ac.Agent(model.model, tools=[look], input_guardrails=[slow_check])
        agent.subscribe(lambda e, s: reply_done.set() if e.type == "message_end"
                        and e.message.role == "assistant" else None)
        run = agent.prompt("go")
        assert run.text == "done"
    assert ran == ["look"]


def test_a_trip_after_the_reply_ended_ends_the_run_before_any_tool() -> None:
    reply_done = threading.Event()

    @ac.tool
    def look() -> str:
        """Look."""
        raise AssertionError("must not run")

    def late(messages: list[ac.AgentMessage]) -> str | None:
        assert reply_done.wait(10)
        return "off topic"

    with scripted_model([tool_call("look", {})]) as model:
        agent = ac.Agent(model.model, tools=[look], input_guardrails=[late])
        agent.subscribe(lambda e, s: reply_done.set() if e.type == "message_end"
                        and e.message.role == "assistant" else None)
        run = agent.prompt("go")
        assert run.error == "guardrail tripped: late: off topic"
    assert [m.role for m in agent.messages] == ["user", "assistant", "assistant"]
    assert kinds(run)[-5:] == ["guardrail_tripped", "message_start", "message_end",
                               "turn_end", "agent_end"]


def test_a_guardrail_that_raises_or_answers_oddly_trips() -> None:
    def broken(messages: list[ac.AgentMessage]) -> str | None:
        raise KeyError("rules")

    def odd(message: ac.AssistantMessage, output: Any) -> Any:
        return 42

    with scripted_model(["x"]) as model:
        run = ac.Agent(model.model, input_guardrails=[broken]).prompt("go")
        assert run.error == "guardrail tripped: broken: KeyError: 'rules'"
    with scripted_model(["x"]) as model:
        run = ac.Agent(model.model, output_guardrails=[odd]).prompt("go")
        assert run.error == "guardrail tripped: odd: returned 42, not a reason (str) or None"


def test_an_output_trip_ends_the_run_and_a_retried_one_goes_back_to_the_model() -> None:
    def no_shouting(message: ac.AssistantMessage, output: Any) -> str | None:
        return "it shouts" if message.text.isupper() else None

    with scripted_model(["HELLO"]) as model:
        agent = ac.Agent(model.model, output_guardrails=[no_shouting])
        run = agent.prompt("greet")
        assert run.error == "guardrail tripped: no_shouting: it shouts"
    with scripted_model(["HELLO", "hello"]) as model:
        agent = ac.Agent(model.model, output_guardrails=[ac.retry_guardrail(no_shouting)])
        run = agent.prompt("greet")
        assert run.text == "hello"
        sent_back = model.calls[1].context.messages[-1]
    assert sent_back.content == (  # type: ignore[union-attr]
        "Your answer did not pass the check 'no_shouting': it shouts. Answer again.")
    trips = [e for e in run if isinstance(e, ac.GuardrailTrippedEvent)]
    assert [(t.kind, t.retry) for t in trips] == [("output", True)]
    with scripted_model(["HELLO"] * 3) as model:  # past the output_retries: the trip ends it
        agent = ac.Agent(model.model, output_guardrails=[ac.retry_guardrail(no_shouting)])
        run = agent.prompt("greet")
        assert run.error == "guardrail tripped: no_shouting: it shouts"
        assert len(model.calls) == 3  # the first answer and output_retries (2) more


def test_output_guardrails_see_the_typed_output() -> None:
    @attrs.frozen
    class Answer:
        value: int

    seen: list[Any] = []

    def positive(message: ac.AssistantMessage, output: Any) -> str | None:
        seen.append(output)
        return None if output.value > 0 else "not positive"

    with scripted_model([tool_call("final_result", {"value": -1})]) as model:
        agent = ac.Agent(model.model, output_guardrails=[positive])
        run = agent.prompt("pick", output_type=Answer)
        assert run.error == "guardrail tripped: positive: not positive"
    assert seen == [Answer(-1)]


def test_guardrails_bad_input_and_the_event_round_trip() -> None:
    with scripted_model([]) as model:
        with pytest.raises(TypeError, match="'input_guardrails' must be a list"):
            ac.Agent(model.model, input_guardrails=lambda m: None)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"'output_guardrails\[0\]' must be an output"):
            ac.Agent(model.model, output_guardrails=["strict"])  # type: ignore[list-item]
        with pytest.raises(TypeError, match="'fn' must be a guardrail"):
            ac.retry_guardrail("no")  # type: ignore[arg-type]
    event = ac.GuardrailTrippedEvent("output", "tone", "too rude", True)
    assert ac.from_json(ac.AgentEvent, ac.to_json(event)) == event
    with pytest.raises(ValueError, match="'kind' must be"):
        ac.GuardrailTrippedEvent("middle", "x", "y")  # type: ignore[arg-type]
