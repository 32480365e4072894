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

A child's call that needs approval is decided by the parent's `approve` when it has one.
Without one, the child's run stops with the call waiting: the tool raises `ChildPaused`, the
parent's batch leaves its call without a result and the parent's run ends with the child's
call pending (recorded in the parent agent's `ChildPauses`). `continue_(approvals=...)` hands
the child its decisions and runs that call again, which continues the child. When the parent's
session can hold children (`SqliteSession.child`), each child keeps its transcript there, so
that a pause survives the process (`load_paused_children` finds it again). A pause two levels
down (a grandchild's call) is not kept: resuming it fails the call with an error result.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .._core import (
    NESTING,
    AbortSignal,
    AgentEvent,
    AgentMessage,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    ChildPause,
    ChildPaused,
    ChildPauses,
    Nesting,
    Session,
    SubagentEvent,
    TextContent,
    ToolResultMessage,
    ToolUpdate,
    json_ready,
    tool_nesting,
)
from .._function_tools import output_tool

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = ["DEFAULT_MAX_DEPTH", "ChildCall", "SubagentFailed", "agent_tool",
           "load_paused_children"]

DEFAULT_MAX_DEPTH = 5
"""How many agent runs may nest inside one another by default (`as_tool(max_depth=...)`)."""


class SubagentFailed(Exception):
    """A child agent's run ended in error: the parent's call gets its text as an error result."""


def agent_tool(make_child: Callable[[Session | None], Agent], agent_name: str, name: str | None,
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

    return AgentTool(tool_name, description or f"Ask the agent {agent_name!r} to do a task, "
                     "and get its answer.", parameters,
                     ChildCall(make_child, agent_name, output_type, max_depth), label=agent_name)


@attrs.frozen(eq=False)
class ChildCall:
    """The `execute` of an agent's tool: runs `make_child(session)` on the call's input."""

    make_child: Callable[[Session | None], Agent]
    agent_name: str
    output_type: Any
    max_depth: int

    def __call__(self, tool_call_id: str, args: Any, signal: AbortSignal,
                 on_update: ToolUpdate) -> AgentToolResult:
        parent = tool_nesting() or NESTING.get()
        pauses = parent.pauses
        maker = None if pauses is None else pauses.child_session
        session = None if maker is None else maker(tool_call_id)
        try:
            return _run_child(self.make_child(session), parent, self.agent_name, tool_call_id,
                              args["input"], signal, self.output_type, self.max_depth,
                              session is not None)
        finally:
            _close(session)


def _close(session: object) -> None:
    """Close a child's session, when it has a `close` (a `SqliteSession` of its own)."""
    close = getattr(session, "close", None)
    if close is not None:
        close()


def load_paused_children(pauses: ChildPauses, messages: Sequence[AgentMessage],
                         tools: Sequence[AgentTool], parent_name: str) -> set[str]:
    """Record the children of `messages`' last batch that wait for approval in their sessions.

    After a restart, a call of an agent's tool without a result is a child paused for
    approval when its session (`pauses.child_session`) says so; returns those calls' ids (the
    repair leaves them waiting). Without child sessions, none.
    """
    if pauses.child_session is None:
        return set()
    by_name = {t.name: t for t in reversed(tools)}
    answered: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ToolResultMessage):
            answered.add(message.tool_call_id)
        elif isinstance(message, AssistantMessage):
            break
    else:
        return set()
    waiting: set[str] = set()
    for call in message.tool_calls:
        tool = by_name.get(call.name)
        if call.id in answered or tool is None or not isinstance(tool.execute, ChildCall):
            continue
        session = pauses.child_session(call.id)
        try:
            child = tool.execute.make_child(session)
            pending = child.state.pending_approvals
            if pending:
                name = tool.execute.agent_name
                pauses.record(ChildPause(call.id, pending, {c.id: [parent_name, name]
                                                            for c in pending},
                                         list(child.messages)))
                waiting.add(call.id)
        finally:
            _close(session)
    return waiting


def _run_child(child: Agent, parent: Nesting, agent_name: str, tool_call_id: str, prompt: str,
               signal: AbortSignal, output_type: Any, max_depth: int,
               stored: bool) -> AgentToolResult:
    """Run `child` on `prompt` to its end, its events sent into the `parent`'s run.

    A child paused for approval whose decisions have come continues with them instead (from
    its session when it is `stored`, else from the transcript kept when it paused).
    """
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
    pauses = parent.pauses
    paused = None if pauses is None else pauses.get(tool_call_id)
    with child:
        token = NESTING.set(Nesting(tuple(path), depth))  # the child's run carries it
        try:
            if paused is not None and paused.decisions is not None:  # resumed with them
                if not stored:
                    child.messages = list(paused.messages)
                run = child.continue_(approvals=paused.decisions)
            else:
                run = child.prompt(prompt, output_type=output_type)
        finally:
            NESTING.reset(token)
        unlink = signal.add_listener(run.abort)
        try:
            run.wait()
        finally:
            unlink()
        transcript = list(child.messages)
    if paused is not None:
        pauses.drop(tool_call_id)
    if run.error is not None:
        raise SubagentFailed(f"agent {agent_name!r} failed: {run.error}")
    if run.pending_approvals:
        if pauses is None:  # no agent above to keep the child's calls: nobody can decide
            names = ", ".join(sorted({call.name for call in run.pending_approvals}))
            raise SubagentFailed(f"agent {agent_name!r} stopped: its calls of {names} wait "
                                 "for approval, and the run that called it has no `approve` "
                                 "to decide them")
        paths = {k: [*parent.path, *v] for k, v in run.pending_paths.items()}
        pauses.record(ChildPause(tool_call_id, run.pending_approvals, paths, transcript))
        raise ChildPaused(tool_call_id)
    if output_type is None:
        return AgentToolResult([TextContent(run.text)])
    value = json_ready(run.output)
    return AgentToolResult([TextContent(json.dumps(value, ensure_ascii=False))], details=value)
