"""AgentRun's consumer API: snapshot, wait, wait_for_news, wait_for_end, add_finisher, name."""

from __future__ import annotations

import threading

import pytest
from _internals import unanswered_tool_calls

import agentcore as ac
from agentcore.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_tool_call,
)


def _blocked_run(faux: FauxProvider, started: threading.Event | None = None,
                 ) -> tuple[ac.Agent, ac.AgentRun, threading.Event]:
    """A run whose only tool waits for the returned event before it returns.

    `started` is set once the tool has started (subscribed before the run begins).
    """
    release = threading.Event()

    @ac.tool
    def wait_here() -> str:
        """Wait until the test lets go."""
        release.wait(10)
        return "done"

    faux.set_responses([faux_assistant_message([faux_tool_call("wait_here", {})],
                                               stop_reason="toolUse"),
                        faux_assistant_message([faux_text("ok")])])
    agent = ac.Agent(faux.get_model(), tools=[wait_here])
    if started is not None:
        agent.subscribe(lambda e, s: started.set() if e.type == "tool_execution_start" else None)
    return agent, agent.prompt("go"), release


def test_agent_run_snapshot_and_wait_follow_the_run(faux: FauxProvider) -> None:
    started = threading.Event()
    agent, run, release = _blocked_run(faux, started)
    assert started.wait(5)
    events, ended = run.snapshot()
    assert not ended
    assert events[0] == ac.AgentStartEvent()
    assert run.wait(0.05) is False
    assert run.wait_for_end(0.05) is False
    assert run.wait_for_news(len(events), 0.05) is False  # the tool holds the run: no news
    assert run.wait_for_news(len(events) - 1, 0) is True
    release.set()
    assert run.wait(5) is True
    events, ended = run.snapshot()
    assert ended
    assert isinstance(events[-1], ac.AgentEndEvent)
    assert run.wait_for_news(len(events), 0) is True  # finished: no news will come, no wait
    assert list(run) == events
    assert agent.wait_for_idle(5)


def test_agent_run_name_is_its_thread_name(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message([faux_text("hi")])])
    seen: list[str] = []
    agent = ac.Agent(faux.get_model())
    agent.subscribe(lambda e, s: seen.append(threading.current_thread().name))
    run = agent.prompt("hi")
    run.result(timeout=5)
    assert run.name.startswith("agentcore-run-")
    assert set(seen) == {run.name}


def test_agent_run_finishers_run_before_result_returns(faux: FauxProvider) -> None:
    agent, run, release = _blocked_run(faux)
    order: list[str] = []
    assert run.add_finisher(lambda: order.append("finisher")) is True

    def broken() -> None:
        raise RuntimeError("finisher bug")

    assert run.add_finisher(broken) is True  # logged and skipped
    release.set()
    run.result(timeout=5)
    order.append("result")
    assert order == ["finisher", "result"]
    assert run.add_finisher(lambda: order.append("late")) is False  # too late: refused
    assert order == ["finisher", "result"]
    assert agent.wait_for_idle(5)


def test_agent_run_wait_for_idle_times_out_while_running(faux: FauxProvider) -> None:
    agent, run, release = _blocked_run(faux)
    assert agent.wait_for_idle(0.05) is False
    release.set()
    assert agent.wait_for_idle(5) is True
    assert run.done()


def test_unanswered_tool_calls_finds_the_last_replys_open_calls() -> None:
    call_a = ac.ToolCall("a", "t", {})
    call_b = ac.ToolCall("b", "t", {})
    reply = faux_assistant_message([call_a, call_b], stop_reason="toolUse")
    answered = ac.ToolResultMessage("a", "t", [ac.TextContent("x")])
    assert unanswered_tool_calls([ac.UserMessage("q"), reply, answered]) == [call_b]
    assert unanswered_tool_calls([reply]) == [call_a, call_b]
    assert unanswered_tool_calls([reply, answered,
                                  ac.ToolResultMessage("b", "t", [])]) == []
    assert unanswered_tool_calls([ac.UserMessage("q")]) == []


@pytest.mark.parametrize("stop_reason", ["error", "aborted"])
def test_unanswered_tool_calls_ignores_a_failed_reply(stop_reason: str) -> None:
    reply = faux_assistant_message([ac.ToolCall("a", "t", {})], stop_reason=stop_reason,
                                   error_message="boom")
    assert unanswered_tool_calls([reply]) == []


def test_agent_run_waiting_from_a_listener_raises_instead_of_hanging(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message([faux_text("hi")])])
    agent = ac.Agent(faux.get_model())
    caught: list[BaseException] = []
    runs: list[ac.AgentRun] = []

    def listener(event: ac.AgentEvent, signal: ac.AbortSignal) -> None:
        if event.type == "turn_start":
            for attempt in (lambda: list(runs[0]), lambda: runs[0].result(),
                            lambda: agent.wait_for_idle(), lambda: runs[0].wait(5)):
                try:
                    attempt()
                except RuntimeError as exc:
                    caught.append(exc)

    agent.subscribe(listener)
    runs.append(agent.prompt("hi"))
    assert runs[0].wait(5)
    assert len(caught) == 4
    assert all("from its own thread" in str(exc) for exc in caught)


def test_agent_run_a_lone_tool_waiting_for_its_run_gets_an_error_result(
    faux: FauxProvider,
) -> None:
    holder: list[ac.Agent] = []

    @ac.tool
    def wait_for_everything() -> str:
        """Wait until the agent is idle (which can never happen from here)."""
        holder[0].wait_for_idle()
        return "unreachable"

    faux.set_responses([faux_assistant_message([faux_tool_call("wait_for_everything", {})],
                                               stop_reason="toolUse"),
                        faux_assistant_message([faux_text("done")])])
    holder.append(ac.Agent(faux.get_model(), tools=[wait_for_everything]))
    messages = holder[0].prompt("go").result(5)
    result = messages[2]
    assert isinstance(result, ac.ToolResultMessage)
    assert result.is_error
    assert "from its own thread" in result.text
    assert messages[-1].text == "done"  # type: ignore[union-attr]


def test_agent_run_finished_run_can_be_read_from_anywhere(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message([faux_text("hi")])])
    agent = ac.Agent(faux.get_model())
    run = agent.prompt("hi")
    assert run.wait(5)
    assert list(run)[-1].type == "agent_end"  # no waiting needed: never refused
