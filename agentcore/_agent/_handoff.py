"""`handoff(agent)`: a tool that hands the conversation over to another agent (API §25).

When the model calls `transfer_to_<name>`, the run goes on, from its next turn, with the
target agent's model, system prompt, tools and thinking level, on the same transcript; a
`handoff` event names both agents. Everything else stays the run's: its hooks, limits,
provider options (API key included), output settings, stream function and queues. The loop's
side (which calls count, the depth limit) is `agentcore._loop._handoff`.

`Agent.active_agent` is the agent that answers the next prompt: the agent itself until one of
its runs hands off, then the target (the last handoff of the run). Its later prompts and
`continue_` run as that agent: its name, model, system prompt, tools and thinking level, on
the original agent's transcript (the conversation goes on where the handoff left it), with
the original agent's hooks, options, limits, stream function, session and queues. The target's
own transcript and settings are untouched. `agent.state` keeps showing the agent's own
settings (`state.model` is its own model); `active_agent.model` is the one its runs use.
`agent.active_agent = agent` (while idle) goes back, as does `reset()`; assigning another
`Agent` makes runs answer as that one.
"""

from __future__ import annotations

from typing import Any

from .._core import AgentTool
from .._loop import HandoffCall, HandoffTarget
from ._agent import Agent

__all__ = ["DEFAULT_MAX_DEPTH", "handoff"]

DEFAULT_MAX_DEPTH = 5
"""How many handoffs one run may make through a handoff tool, unless it says otherwise."""

_NO_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


def handoff(agent: Agent, description: str | None = None, *,
            max_depth: int = DEFAULT_MAX_DEPTH) -> AgentTool:
    """A tool that hands the run over to `agent`: named `transfer_to_<agent.name>`, no parameters.

    When the model calls it, the run goes on from its next turn with `agent`'s model, system
    prompt, tools and thinking level (as they are at that moment) on the same transcript, and
    emits `HandoffEvent(from_agent, to_agent)` (after the call's result, before `turn_end`).
    The run keeps its own hooks, limits, provider options (API key included), output
    settings, stream function and queues. The call's result is `"Transferred to <name>."`,
    with a `details` naming the target. An `Agent` whose run handed off answers its next
    prompts as `agent` (`Agent.active_agent`).

    Only the first handoff call of a reply can take effect: the others get an error result
    (the first one wins). A run hands off at most `max_depth` times (default 5, a cycle A -> B
    -> A ... included): the call that would go beyond gets an error result naming the depth
    and the run stays with the current agent. A target the run cannot use (its tools lack the
    run's `tool_choice`, its model cannot give the run's native output) gets an error result
    too. `description` (default "Hand the conversation over to <name>.") tells the model when
    to use it. Raises `TypeError` when `agent` is not an `Agent` or `description` not a str,
    and `ValueError` when `max_depth` is below 1.
    """
    if not isinstance(agent, Agent):
        raise TypeError(f"handoff: 'agent' must be an Agent (the agent to hand over to, with "
                        f"its model), got {agent!r}")
    if description is not None and not isinstance(description, str):
        raise TypeError(f"handoff: 'description' must be a str or None, got {description!r}")
    if isinstance(max_depth, bool) or not isinstance(max_depth, int):
        raise TypeError(f"handoff: 'max_depth' must be an int, got {max_depth!r}")
    if max_depth < 1:
        raise ValueError(f"handoff: 'max_depth' must be at least 1, got {max_depth}")
    name = agent.name

    def target() -> HandoffTarget:
        return HandoffTarget(name, agent.model, agent.system_prompt, list(agent.tools),
                             agent.thinking_level)

    return AgentTool(f"transfer_to_{name}",
                     description or f"Hand the conversation over to {name}.",
                     dict(_NO_PARAMETERS),
                     HandoffCall(name, target, max_depth, owner=agent),
                     label=f"Transfer to {name}")

