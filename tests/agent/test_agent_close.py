"""Agent.close(): abort, wait, release; a closed agent refuses new runs."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
from _internals import prompt_here

import agentcore as ac
from agentcore.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call


def test_agent_close_idle_then_prompt_raises(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    agent.close()
    agent.close()  # twice is fine
    with pytest.raises(ac.AgentClosedError, match="the agent is closed"):
        agent.prompt("hi")
    agent.messages = [ac.UserMessage("q")]
    with pytest.raises(ac.AgentClosedError, match="the agent is closed"):
        agent.continue_()


def test_agent_close_aborts_and_waits_for_the_run(faux: FauxProvider) -> None:
    started = threading.Event()

    def slow(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        started.set()
        signal.wait(10)
        return ac.AgentToolResult([ac.TextContent("stopped")])

    tool = ac.AgentTool("slow", "waits", {"type": "object"}, slow)
    faux.set_responses([faux_assistant_message([faux_tool_call("slow", {})],
                                               stop_reason="toolUse"),
                        faux_assistant_message("never")])
    with ac.Agent(faux.get_model(), tools=[tool]) as agent:
        run = agent.prompt("go")
        assert started.wait(5)
    assert run.done()  # close() waited for the end
    assert run.signal.aborted
    assert not agent.state.is_streaming
    assert faux.call_count == 1


def test_agent_close_from_a_listener_does_not_wait_for_itself(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("hi")])
    agent = ac.Agent(faux.get_model())
    agent.subscribe(lambda event, signal: agent.close() if event.type == "turn_start" else None)
    run = agent.prompt("hi")
    assert run.wait(5)
    with pytest.raises(ac.AgentClosedError):
        agent.prompt("again")


def _prompt_async(agent: ac.Agent, *args: Any) -> Any:
    return asyncio.run(agent.prompt_async(*args))


# Each entry point that starts or queues work, with good and with bad arguments.
ENTRIES: list[tuple[str, Callable[[ac.Agent], Any]]] = [
    ("prompt", lambda agent: agent.prompt("hi")),
    ("prompt-bad", lambda agent: agent.prompt(42)),  # type: ignore[arg-type]
    ("prompt-bad-images", lambda agent: agent.prompt(["x"], images=["y"])),  # type: ignore[list-item]
    ("prompt_async", lambda agent: _prompt_async(agent, "hi")),
    ("prompt_async-bad", lambda agent: _prompt_async(agent, {"role": "user"})),
    ("continue_", lambda agent: agent.continue_()),
    ("steer", lambda agent: agent.steer("later")),
    ("steer-bad", lambda agent: agent.steer(3)),  # type: ignore[arg-type]
    ("follow_up", lambda agent: agent.follow_up("later")),
    ("follow_up-bad", lambda agent: agent.follow_up(None)),  # type: ignore[arg-type]
    ("prompt_here", lambda agent: prompt_here(agent, "hi")),
    ("prompt_here-bad", lambda agent: prompt_here(agent, 42)),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("transcript", ["empty", "ends-with-reply"])
@pytest.mark.parametrize(("name", "entry"), ENTRIES, ids=[name for name, _ in ENTRIES])
def test_agent_closed_refuses_every_entry_before_any_other_check(
    faux: FauxProvider, name: str, entry: Callable[[ac.Agent], Any], transcript: str,
) -> None:
    messages = [] if transcript == "empty" else [ac.UserMessage("q"),
                                                 faux_assistant_message("a")]
    agent = ac.Agent(faux.get_model(), messages=messages)
    agent.close()
    with pytest.raises(ac.AgentClosedError, match=r"^the agent is closed; create a new Agent"):
        entry(agent)
    assert not agent.has_queued_messages()
    assert faux.call_count == 0
    agent.close()  # still a no-op


def test_agent_closed_error_wins_over_busy(faux: FauxProvider) -> None:
    raised: list[type[BaseException]] = []

    def close_then_start_more(tool_call_id: str, args: Any, signal: ac.AbortSignal,
                              on_update: Any) -> Any:
        agent.close()  # from the run's own tool: marks the agent closed, aborts, no wait
        for entry in (lambda: agent.prompt("again"), agent.continue_):
            try:
                entry()
            except Exception as exc:
                raised.append(type(exc))
        return ac.AgentToolResult([ac.TextContent("done")])

    tool = ac.AgentTool("close", "closes the agent", {"type": "object"}, close_then_start_more)
    faux.set_responses([faux_assistant_message([faux_tool_call("close", {})],
                                               stop_reason="toolUse")])
    agent = ac.Agent(faux.get_model(), tools=[tool])
    assert agent.prompt("go").wait(5)
    assert raised == [ac.AgentClosedError, ac.AgentClosedError]


def test_agent_closed_error_is_an_agentcore_error() -> None:
    assert issubclass(ac.AgentClosedError, ac.AgentcoreError)
    assert not issubclass(ac.AgentClosedError, ac.AgentBusyError)
