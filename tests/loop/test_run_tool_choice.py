"""The tool choice of each model call of a run (API §18): the option, checked when the run
starts, `reset_tool_choice`, and `"required"` for runs answering through `final_result`.

The scripted model records the `StreamOptions` of every call; how each wire API writes the
choice is tested in tests/providers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import attrs
import pytest

import agentcore as ac
from agentcore.testing import (
    ScriptedModel,
    faux_assistant_message,
    record_events,
    scripted_model,
    tool_call,
)

WAIT = 5.0


@ac.tool
def lookup(city: str) -> int:
    """Population of a city."""
    return len(city)


def choices(fake: ScriptedModel) -> list[str | None]:
    return [call.options.tool_choice for call in fake.calls]


def loop_config(fake: ScriptedModel, **kwargs: Any) -> ac.AgentLoopConfig:
    return ac.AgentLoopConfig(model=fake.model, **kwargs)


def context(*tools: ac.AgentTool) -> ac.AgentContext:
    return ac.AgentContext("", [ac.UserMessage("hi")], list(tools))


# --- checked when the run starts ----------------------------------------------------------------

ENTRIES: list[tuple[str, Callable[[ScriptedModel, ac.AgentLoopConfig], object]]] = [
    ("run_agent_loop", lambda fake, config: ac.run_agent_loop(
        [ac.UserMessage("x")], context(lookup), config, lambda e: None)),
    ("run_agent_loop_continue", lambda fake, config: ac.run_agent_loop_continue(
        context(lookup), config, lambda e: None)),
    ("agent_loop", lambda fake, config: ac.agent_loop(
        [ac.UserMessage("x")], context(lookup), config)),
    ("agent_loop_continue", lambda fake, config: ac.agent_loop_continue(
        context(lookup), config)),
]


@pytest.mark.parametrize(("name", "entry"), ENTRIES, ids=[e[0] for e in ENTRIES])
def test_tool_choice_naming_no_tool_is_refused_by_every_loop_entry(
        name: str, entry: Callable[[ScriptedModel, ac.AgentLoopConfig], object]) -> None:
    with scripted_model(["never"]) as fake:
        with pytest.raises(ValueError, match=r"'tool_choice' 'lokup' is neither .* \(its tools: "
                                             r"'lookup'\)"):
            entry(fake, loop_config(fake, tool_choice="lokup"))
        with pytest.raises(ValueError, match="'tool_choice' 'final_result'"):  # only with output
            entry(fake, loop_config(fake, tool_choice="final_result"))
        fake.assert_called(times=0)


AGENT_ENTRIES: list[tuple[str, Callable[[ac.Agent], object]]] = [
    ("prompt", lambda agent: agent.prompt("x")),
    ("prompt_async", lambda agent: asyncio.run(agent.prompt_async("x"))),
    ("continue_", lambda agent: agent.continue_()),
]


@pytest.mark.parametrize(("name", "entry"), AGENT_ENTRIES, ids=[e[0] for e in AGENT_ENTRIES])
def test_tool_choice_naming_no_tool_is_refused_by_the_agent_before_any_event(
        name: str, entry: Callable[[ac.Agent], object]) -> None:
    with scripted_model(["fine"]) as fake:
        agent = ac.Agent(fake.model, tools=[lookup], messages=[ac.UserMessage("x")],
                         tool_choice="lokup")
        with record_events(agent) as events:
            with pytest.raises(ValueError, match="'tool_choice' 'lokup'"):
                entry(agent)
            assert events.events == []
            assert not agent.state.is_streaming
            agent.tool_choice = "lookup"  # the agent is idle and usable
            agent.continue_().raise_for_error()
        fake.assert_called(times=1)


def test_tool_choice_names_final_result_only_in_tool_output_mode() -> None:
    with scripted_model([tool_call("final_result", {"response": 2})]) as fake:
        agent = ac.Agent(fake.model, tool_choice="final_result")
        assert agent.prompt("n", output_type=int).output == 2
        assert choices(fake) == ["final_result"]
        with pytest.raises(ValueError, match="'tool_choice' 'final_result' is neither"):
            agent.prompt("n", output_type=int, output_mode="native")


def test_tool_choice_none_is_refused_when_final_result_must_answer() -> None:
    with scripted_model(["never"]) as fake:
        agent = ac.Agent(fake.model, tool_choice="none")
        with pytest.raises(ValueError, match="'tool_choice' 'none' leaves the model no way"):
            agent.prompt("n", output_type=int)
        with pytest.raises(ValueError, match="'tool_choice' 'none' leaves the model no way"):
            ac.run_agent_loop([ac.UserMessage("n")], context(), loop_config(
                fake, tool_choice="none", output_type=int), lambda e: None)
        fake.assert_called(times=0)


# --- what each model call carries ----------------------------------------------------------------


def test_tool_choice_reaches_every_model_call_of_the_run() -> None:
    with scripted_model([tool_call("lookup", {"city": "Rome"}), "done"]) as fake:
        agent = ac.Agent(fake.model, tools=[lookup], tool_choice="lookup")
        agent.prompt("go").raise_for_error()
        assert choices(fake) == ["lookup", "lookup"]


def test_no_tool_choice_leaves_it_to_the_provider() -> None:
    with scripted_model([tool_call("lookup", {"city": "Rome"}), "done"]) as fake:
        ac.Agent(fake.model, tools=[lookup]).prompt("go").raise_for_error()
        assert choices(fake) == [None, None]


def test_reset_tool_choice_drops_the_choice_once_a_turn_called_tools() -> None:
    script = ["thinking first", tool_call("lookup", {"city": "Rome"}), "done", "more"]
    with scripted_model(script) as fake:
        agent = ac.Agent(fake.model, tools=[lookup], tool_choice="required",
                         reset_tool_choice=True)
        agent.follow_up("and?")  # a turn without tools: the choice stays
        agent.follow_up("again?")
        agent.prompt("go").raise_for_error()
        assert choices(fake) == ["required", "required", None, None]
        fake.add_replies(["again"])
        agent.prompt("next run").raise_for_error()  # a new run starts with the choice again
        assert choices(fake)[-1] == "required"


def test_reset_tool_choice_in_the_loop_and_its_validation() -> None:
    with scripted_model([tool_call("lookup", {"city": "Rome"}), "done"]) as fake:
        config = loop_config(fake, tool_choice="lookup", reset_tool_choice=True)
        ac.run_agent_loop([ac.UserMessage("go")], context(lookup), config, lambda e: None)
        assert choices(fake) == ["lookup", None]
    assert attrs.fields(ac.AgentLoopConfig).reset_tool_choice.default is False
    with pytest.raises(TypeError, match="'reset_tool_choice' must be a bool"):
        ac.AgentLoopConfig(model=fake.model, reset_tool_choice=1)
    agent = ac.Agent(fake.model, reset_tool_choice=True)
    assert agent.reset_tool_choice is True
    with pytest.raises(TypeError, match="'reset_tool_choice' must be a bool"):
        agent.reset_tool_choice = "yes"  # type: ignore[assignment]
    agent.reset_tool_choice = False
    assert agent.reset_tool_choice is False


def test_output_type_makes_every_call_required() -> None:
    script = ["no tool yet", tool_call("lookup", {"city": "Rome"}),
              tool_call("final_result", {"response": 4})]
    with scripted_model(script) as fake:
        run = ac.Agent(fake.model, tools=[lookup]).prompt("n", output_type=int)
        assert run.output == 4
        assert choices(fake) == ["required"] * 3  # after the nudge and after the tools too


def test_output_type_leaves_an_explicit_choice_alone_and_a_reset_goes_back_to_required(
) -> None:
    script = [tool_call("lookup", {"city": "Rome"}), tool_call("final_result", {"response": 4})]
    with scripted_model(script) as fake:
        agent = ac.Agent(fake.model, tools=[lookup], tool_choice="lookup",
                         reset_tool_choice=True)
        assert agent.prompt("n", output_type=int).output == 4
        assert choices(fake) == ["lookup", "required"]
    with scripted_model([tool_call("final_result", {"response": 4})]) as fake:
        ac.Agent(fake.model, tool_choice="auto").prompt("n", output_type=int).raise_for_error()
        assert choices(fake) == ["auto"]


def test_before_model_call_sees_the_calls_tool_choice() -> None:
    seen: list[str | None] = []

    def hook(call: ac.BeforeModelCallContext, emit: Any, signal: Any) -> None:
        seen.append(call.options.tool_choice)

    with scripted_model([tool_call("final_result", {"response": 1})]) as fake:
        config = loop_config(fake, output_type=int, before_model_call=hook)
        ac.run_agent_loop([ac.UserMessage("n")], context(), config, lambda e: None)
    assert seen == ["required"]


# --- prepare_next_turn swaps --------------------------------------------------------------------


def test_a_swapped_context_without_the_chosen_tool_ends_the_run_in_error() -> None:
    def drop_tools(turn: ac.PrepareNextTurnContext, signal: Any) -> ac.AgentLoopTurnUpdate:
        ctx = turn.context
        return ac.AgentLoopTurnUpdate(context=ac.AgentContext(ctx.system_prompt, ctx.messages))

    with scripted_model([tool_call("lookup", {"city": "Rome"}), "never"]) as fake:
        run = ac.Agent(fake.model, tools=[lookup], tool_choice="lookup",
                       prepare_next_turn=drop_tools).prompt("go")
        assert run.error is not None
        assert run.error.startswith("'tool_choice' 'lookup' is neither")
        fake.assert_called(times=1)


def test_a_swapped_context_keeping_the_output_tool_is_fine() -> None:
    def same(turn: ac.PrepareNextTurnContext, signal: Any) -> ac.AgentLoopTurnUpdate:
        ctx = turn.context
        return ac.AgentLoopTurnUpdate(context=ac.AgentContext(ctx.system_prompt, ctx.messages,
                                                               ctx.tools))

    script = [tool_call("lookup", {"city": "Rome"}), tool_call("final_result", {"response": 4})]
    with scripted_model(script) as fake:
        run = ac.Agent(fake.model, tools=[lookup], prepare_next_turn=same).prompt(
            "n", output_type=int)
        assert run.output == 4


def test_continue_refused_for_its_tool_choice_keeps_the_queued_message() -> None:
    with scripted_model(["answered"]) as fake:
        agent = ac.Agent(fake.model, tools=[lookup], tool_choice="lokup",
                         messages=[ac.UserMessage("x"), faux_assistant_message("y")])
        agent.steer("and now?")
        with pytest.raises(ValueError, match="'tool_choice' 'lokup'"):
            agent.continue_()
        assert agent.has_queued_messages()
        agent.tool_choice = None
        agent.continue_().raise_for_error()
        assert fake.last_call.messages[-1].text == "and now?"  # type: ignore[union-attr]
