"""Handoffs (API §25): a tool call after which the run goes on as another agent.

A handoff tool (`agentcore.handoff`) is an ordinary `AgentTool` whose `execute` is a
`HandoffCall`: that is how the loop knows one, before any call of a reply runs. The loop knows
nothing of `Agent`s: a `HandoffCall` gives what the run switches to (`HandoffTarget`: a name, a
model, a system prompt, tools, a thinking level) through its `target()`, read on the run's
thread just before the batch, and carries its owner (the target agent) opaquely.

Before a reply's calls run, `screen` picks the one handoff that may take effect: the reply's
first call of a handoff tool, unless the run has already handed off `max_depth` times (that
tool's `max_depth`) or its target cannot run (`check`). Every other handoff call of the reply,
and a refused first one, is blocked with an error result saying why (through the batch's
`before_tool_call`, `refusing`), so that no result claims a transfer that did not happen. After
the batch the loop switches to the target if the chosen call's result is not an error (a hook
may have blocked it, a person denied it).

The chosen call's result says "Transferred to <name>." and its `details` is a `Handoff` naming
the target (`{"agent": name}`); an `Agent` finds the target agent there (`owner`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from .._core import (
    AbortSignal,
    AgentMessage,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    Model,
    TextContent,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    describe,
)
from ._config import BeforeToolCall, BeforeToolCallContext, BeforeToolCallResult

__all__ = ["Handoff", "HandoffCall", "HandoffTarget", "Screen", "handed_to", "refusing", "screen"]


@attrs.frozen
class HandoffTarget:
    """What a run switches to when it hands off: the target agent's name and settings."""

    name: str
    model: Model
    system_prompt: str
    tools: list[AgentTool]
    reasoning: ThinkingLevel | None


class Handoff(dict[str, str]):
    """The `details` of a handoff's result: `{"agent": <name>}`, the agent the run went on as.

    A dict, so that its JSON form (a session's, `to_json`'s) is just that; `owner` (the target
    `Agent`, opaque here) is an attribute, never serialized.
    """

    __slots__ = ("owner",)

    def __init__(self, agent: str, owner: Any = None) -> None:
        super().__init__(agent=agent)
        self.owner = owner


@attrs.frozen
class HandoffCall:
    """The `execute` of a handoff tool: what the loop recognises, and the call's result.

    `target()` gives the target's settings at the time of the handoff; `max_depth` bounds the
    handoffs of one run; `owner` is what the result's `Handoff` carries.
    """

    name: str
    target: Callable[[], HandoffTarget] = attrs.field(repr=False)
    max_depth: int
    owner: Any = attrs.field(default=None, repr=False, eq=False)

    def __call__(self, tool_call_id: str, args: Any, signal: AbortSignal,
                 on_update: Callable[[AgentToolResult], None]) -> AgentToolResult:
        return AgentToolResult([TextContent(f"Transferred to {self.name}.")],
                               details=Handoff(self.name, self.owner))


@attrs.frozen
class Screen:
    """A reply's handoff calls, judged: `refused` (call id -> reason) and the one `chosen`."""

    refused: dict[str, str]
    chosen: tuple[str, HandoffTarget] | None  # (call id, what the run switches to)


def screen(calls: Sequence[ToolCall], tools: Sequence[AgentTool], done: int, current: str,
           check: Callable[[HandoffTarget], None]) -> Screen | None:
    """Judge the handoff calls among `calls` (None when there are none: the common case).

    `done` is how many handoffs the run has made, `current` the name it runs as; `check`
    raises when the run cannot go on with a target (its tools, model and output settings).
    """
    for tool in tools:  # most runs have no handoff tool: one pass, no dict
        if isinstance(tool.execute, HandoffCall):
            break
    else:
        return None
    by_name: dict[str, AgentTool] = {}
    for tool in tools:  # the first of a name, as the batch finds it
        by_name.setdefault(tool.name, tool)
    refused: dict[str, str] = {}
    chosen: tuple[str, HandoffTarget] | None = None
    first = True
    for call in calls:
        found = by_name.get(call.name)
        if found is None or not isinstance(found.execute, HandoffCall):
            continue
        handoff = found.execute
        if not first:
            refused[call.id] = (f"Handoff to {handoff.name} not made: only the first handoff "
                                "of a reply counts.")
            continue
        first = False
        if done >= handoff.max_depth:
            refused[call.id] = (f"Handoff to {handoff.name} refused: max_depth {handoff.max_depth}"
                                f" reached (this run has handed off {done} times); the "
                                f"conversation stays with {current}.")
            continue
        try:
            target = handoff.target()
            check(target)
        except Exception as exc:  # the target cannot run (e.g. its tools and the tool_choice)
            refused[call.id] = f"Handoff to {handoff.name} failed: {describe(exc)}"
            continue
        chosen = (call.id, target)
    return Screen(refused, chosen)


def handed_to(messages: Sequence[AgentMessage]) -> Any:
    """The owner of the handoff the last batch of `messages` made (None: none made).

    At most one handoff call of a reply succeeds (`screen`): its result, not an error,
    carries a `Handoff`. An `Agent` reads it at the `handoff` event.
    """
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            break
        if isinstance(message, ToolResultMessage) and not message.is_error \
                and isinstance(message.details, Handoff):
            return message.details.owner
    return None


def refusing(hook: BeforeToolCall | None, refused: dict[str, str]) -> BeforeToolCall:
    """`hook` (if any), preceded by a block of each call in `refused`, with its reason."""

    def before(context: BeforeToolCallContext, signal: AbortSignal) -> BeforeToolCallResult | None:
        reason = refused.get(context.tool_call.id)
        if reason is not None:
            return BeforeToolCallResult(block=True, reason=reason)
        return None if hook is None else hook(context, signal)

    return before
