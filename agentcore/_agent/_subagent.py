"""An agent as a tool of another (API §25): `Agent.as_tool()` builds the tool made here.

Each call runs a fresh copy of the agent (its model, prompt, tools, hooks and settings as they
are at the call; an empty transcript, no session, no listeners: the original is untouched) on
the call's `input`, on the worker thread the parent gave the call, and waits for it. The
result is the copy's final text, or its `output` as JSON (and `details`) with `output_type`.
The child's events reach the parent's run as they happen, each wrapped in a `SubagentEvent`
(through the call's `Nesting.emit`, which the parent's thread emits in order); aborting the
parent's tools (an abort, the tool's timeout) aborts the child; a child that fails is an error
result (`SubagentFailed: agent 'x' failed: ...`). A call that would nest more than
`max_depth` agent runs (an agent among its own tools) gets an error result naming the depth.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._core import (
    NESTING,
    AbortSignal,
    AgentEvent,
    AgentTool,
    AgentToolResult,
    Nesting,
    SubagentEvent,
    TextContent,
    ToolUpdate,
    json_ready,
    tool_nesting,
)
from .._function_tools import output_tool

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = ["DEFAULT_MAX_DEPTH", "SubagentFailed", "agent_tool"]

DEFAULT_MAX_DEPTH = 5
"""How many agent runs may nest inside one another by default (`as_tool(max_depth=...)`)."""


class SubagentFailed(Exception):
    """A child agent's run ended in error: the parent's call gets its text as an error result."""


def agent_tool(make_child: Callable[[], Agent], agent_name: str, name: str | None,
               description: str | None, output_type: Any, max_depth: int) -> AgentTool:
    """The tool that runs a fresh `make_child()` per call (see `Agent.as_tool`)."""
    tool_name = agent_name if name is None else name
    if output_type is not None:
        output_tool(output_type)  # raises TypeError naming the part it cannot describe
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
        raise ValueError(f"'max_depth' must be an int of at least 1, got {max_depth!r}")
    parameters = {
        "type": "object",
        "properties": {"input": {"type": "string",
                                 "description": f"What to ask {agent_name}, in full."}},
        "required": ["input"],
        "additionalProperties": False,
    }

    def execute(tool_call_id: str, args: Any, signal: AbortSignal,
                on_update: ToolUpdate) -> AgentToolResult:
        return _run_child(make_child(), agent_name, tool_call_id, args["input"], signal,
                          output_type, max_depth)

    return AgentTool(tool_name, description or f"Ask the agent {agent_name!r} to do a task, "
                     "and get its answer.", parameters, execute, label=agent_name)


def _run_child(child: Agent, agent_name: str, tool_call_id: str, prompt: str,
               signal: AbortSignal, output_type: Any, max_depth: int) -> AgentToolResult:
    """Run `child` on `prompt` to its end, its events sent into the parent's run."""
    parent = tool_nesting() or NESTING.get()
    depth = parent.depth + 1
    if depth > max_depth:
        raise RecursionError(f"agent {agent_name!r} would run {depth} deep, past max_depth="
                             f"{max_depth} (an agent among its own tools?)")
    path = [*parent.path, agent_name]
    emit = parent.emit
    if parent.approve is not None:  # the parent's `approve` decides its children's calls
        child.approve = parent.approve
    if emit is not None:
        def forward(event: AgentEvent, _: AbortSignal) -> None:
            emit(SubagentEvent(tool_call_id, agent_name, path, event))

        child.subscribe(forward)
    with child:
        token = NESTING.set(Nesting(tuple(path), depth))  # the child's run carries it
        try:
            run = child.prompt(prompt, output_type=output_type)
        finally:
            NESTING.reset(token)
        unlink = signal.add_listener(run.abort)
        try:
            run.wait()
        finally:
            unlink()
    if run.error is not None:
        raise SubagentFailed(f"agent {agent_name!r} failed: {run.error}")
    if run.pending_approvals:
        names = ", ".join(sorted({call.name for call in run.pending_approvals}))
        raise SubagentFailed(f"agent {agent_name!r} stopped: its calls of {names} wait for "
                             "approval, and the run that called it has no `approve` to decide "
                             "them")
    if output_type is None:
        return AgentToolResult([TextContent(run.text)])
    value = json_ready(run.output)
    return AgentToolResult([TextContent(json.dumps(value, ensure_ascii=False))], details=value)
