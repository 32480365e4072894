"""Agent.close(): abort, wait, release; a closed agent refuses new runs."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import agentcore as ac
from agentcore.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call


def test_agent_close_idle_then_prompt_raises(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    agent.close()
    agent.close()  # twice is fine
    with pytest.raises(ac.AgentcoreError, match="the agent is closed"):
        agent.prompt("hi")
    agent.messages = [ac.UserMessage("q")]
    with pytest.raises(ac.AgentcoreError, match="the agent is closed"):
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
    with pytest.raises(ac.AgentcoreError):
        agent.prompt("again")
