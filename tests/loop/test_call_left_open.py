"""A tool call left open (`CallLeftOpen`): answered in a later run, as a web client's tool is.

The batch gives the call no result and no `tool_execution_end`, runs the reply's other calls as
usual, and the run ends after it; a later prompt brings the call's result and the run goes on.
"""

from __future__ import annotations

from typing import Any

from _internals import CallLeftOpen

import agentcore as ac
from agentcore.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call

WAIT = 10.0


def left_open(tool_call_id: str, args: Any, signal: ac.AbortSignal,
              on_update: Any) -> ac.AgentToolResult:
    raise CallLeftOpen(tool_call_id)


def now(tool_call_id: str, args: Any, signal: ac.AbortSignal,
        on_update: Any) -> ac.AgentToolResult:
    return ac.AgentToolResult([ac.TextContent("now: ok")])


def test_a_call_left_open_ends_the_run_after_its_batch_and_a_later_prompt_answers_it(
        faux: FauxProvider) -> None:
    seen: list[list[ac.Message]] = []

    def done(context: ac.Context, options: Any, model: ac.Model) -> ac.AssistantMessage:
        seen.append(list(context.messages))
        return faux_assistant_message("done")

    faux.set_responses([faux_assistant_message([faux_tool_call("later", {}, id="l"),
                                                faux_tool_call("now", {}, id="n")]), done])
    agent = ac.Agent(faux.get_model(), tools=[
        ac.AgentTool("later", "Answered later.", {"type": "object"}, left_open),
        ac.AgentTool("now", "Answered now.", {"type": "object"}, now)])

    run = agent.prompt("go")
    run.result(WAIT)

    ends = [(type(e).__name__, getattr(e, "tool_call_id", None)) for e in run
            if isinstance(e, (ac.ToolExecutionStartEvent, ac.ToolExecutionEndEvent))]
    assert ends == [("ToolExecutionStartEvent", "l"), ("ToolExecutionStartEvent", "n"),
                    ("ToolExecutionEndEvent", "n")]
    (turn_end,) = [e for e in run if isinstance(e, ac.TurnEndEvent)]
    assert [r.tool_call_id for r in turn_end.tool_results] == ["n"]
    assert [m.role for m in agent.messages] == ["user", "assistant", "toolResult"]
    assert faux.call_count == 1  # the model is not called with the call open
    assert agent.state.pending_tool_calls == frozenset()
    assert run.pending_approvals == []

    answer = ac.ToolResultMessage("l", "later", [ac.TextContent("from outside")])
    later = agent.prompt(answer)
    later.result(WAIT)

    assert later.text == "done"

    (messages,) = seen
    assert [(m.role, getattr(m, "tool_call_id", None)) for m in messages] == [
        ("user", None), ("assistant", None), ("toolResult", "n"), ("toolResult", "l")]
