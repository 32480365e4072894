"""Human approval of tool calls (API §20): which calls wait, and what a decision must say.

A run's pending approvals are never stored apart from its transcript: `find_pause` computes
them from the messages and the tools, so that an agent in memory, a session reloaded in a new
process and crash repair all agree on which calls wait. A batch waits when its assistant
message is the transcript's last, none of its calls has a result, and one of them needs
approval and has no decision yet (a `ToolApprovalMessage` after the reply records decisions).
Which calls need approval is for the tools' rules to say; a result that travels without its
tools (a batch's) keeps their verdict, the ids of the calls that needed it, as `asked`.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import attrs

from ._content import ToolCall
from ._enums import StopReason
from ._messages import AgentMessage, AssistantMessage, ToolApprovalMessage
from ._tools import AgentTool, validate_tool_arguments

__all__ = ["DEFAULT_DENIAL", "Decisions", "Pause", "call_arguments", "check_approvals",
           "decision_message", "denial_text", "find_pause", "needs_approval", "waiting_calls"]

_log = logging.getLogger(__name__)

DEFAULT_DENIAL = "the user did not allow this call"
"""The reason of a denial given as `False`."""

Decisions = dict[str, str | None]
"""Call id → None when approved, else the reason of its denial."""

_NO_ANSWER = (StopReason.ERROR, StopReason.ABORTED, StopReason.LENGTH)  # calls that never run


def call_arguments(tool: AgentTool, call: ToolCall) -> Any:
    """The arguments `tool` would run `call` with: reshaped, then validated (raises if bad)."""
    if tool.prepare_arguments is not None:
        prepared = tool.prepare_arguments(call.arguments)
        if prepared is not call.arguments:
            call = attrs.evolve(call, arguments=prepared)
    return validate_tool_arguments(tool, call)


def needs_approval(tool: AgentTool | None, call: ToolCall) -> bool:
    """Whether `call` of `tool` must wait for a person's decision before it runs.

    A call whose tool is unknown or whose arguments fail validation never runs (it gets an
    error result), so it needs none. A `requires_approval` function that raises counts as
    "yes": when in doubt, ask.
    """
    if tool is None:
        return False
    rule = tool.requires_approval
    if rule is False:
        return False
    try:
        args = call_arguments(tool, call)
    except Exception:
        return False
    if rule is True:
        return True
    try:
        return bool(rule(args))
    except Exception:
        _log.warning("requires_approval of tool %r raised; the call waits for approval",
                     tool.name, exc_info=True)
        return True


def _any_rule(tools: Iterable[AgentTool]) -> bool:
    return any(t.requires_approval is not False for t in tools)


def waiting_calls(reply: AssistantMessage, tools: Sequence[AgentTool],
                  decided: Iterable[str] = ()) -> list[ToolCall]:
    """The calls of `reply` that need approval and have no decision among `decided`."""
    if not _any_rule(tools):
        return []
    by_name = {t.name: t for t in tools}
    done = set(decided)
    return [c for c in reply.tool_calls
            if c.id not in done and needs_approval(by_name.get(c.name), c)]


@attrs.frozen
class Pause:
    """A batch of tool calls waiting for approval.

    `reply` is the assistant message that asked for them; `calls` are the ones waiting for a
    decision; `waiting` are all of the batch's calls, which run (or are refused) together
    once every one in `calls` is decided.
    """

    reply: AssistantMessage
    calls: list[ToolCall]
    waiting: list[ToolCall]


def find_pause(messages: Sequence[AgentMessage], tools: Sequence[AgentTool], *,
               asked: Collection[str] | None = None) -> Pause | None:
    """The batch at the end of `messages` that waits for approval, if one does.

    `tools`' rules say which calls need approval; with `asked` (call ids), the calls whose ids
    it holds do instead, whatever `tools` say: the verdict of the rules of a run whose tools
    are not at hand (a batch's result, read in another process or from its store).
    """
    if not messages or (not _any_rule(tools) if asked is None else not asked):
        return None
    decided: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ToolApprovalMessage):
            decided.update(message.approved)
            decided.update(message.denied)
        elif isinstance(message, AssistantMessage):
            if message.stop_reason in _NO_ANSWER or not message.tool_calls:
                return None
            if asked is None:
                calls = waiting_calls(message, tools, decided)
            else:
                calls = [c for c in message.tool_calls if c.id in asked and c.id not in decided]
            return Pause(message, calls, list(message.tool_calls)) if calls else None
        else:  # a result (the batch ran) or any other message: the transcript moved on
            return None
    return None


def denial_text(reason: str) -> str:
    """The error result a denied call gets."""
    return f"denied: {reason}"


def check_approvals(pause: Pause | None, approvals: object) -> Decisions:
    """`approvals` (call id → True, False or a reason) checked against `pause`, as decisions.

    Raises `TypeError` for a value of the wrong type and `ValueError` when nothing waits,
    for a call id that does not wait (unknown, already decided, or needing no approval), and
    when a waiting call is left undecided.
    """
    if not isinstance(approvals, Mapping):
        raise TypeError(f"'approvals' must be a dict of tool call id to True, False or a "
                        f"reason (str), got {approvals!r}")
    for key, value in approvals.items():
        if not isinstance(key, str):
            raise TypeError(f"'approvals': tool call ids are strings, got {key!r}")
        if not isinstance(value, (bool, str)):
            raise TypeError(f"'approvals[{key!r}]' must be True, False or a reason (str), "
                            f"got {value!r}")
    if pause is None:
        raise ValueError("'approvals' given, but no tool call waits for approval")
    waiting = [c.id for c in pause.calls]
    for key in approvals:
        if key not in waiting:
            raise ValueError(f"'approvals': tool call {key!r} does not wait for approval "
                             f"(waiting: {', '.join(waiting)})")
    missing = [c for c in waiting if c not in approvals]
    if missing:
        raise ValueError(f"'approvals' must decide every waiting tool call; missing: "
                         f"{', '.join(missing)}")
    return {key: _reason(approvals[key]) for key in waiting}


def _reason(value: bool | str) -> str | None:
    if value is True:
        return None
    if value is False or not value.strip():
        return DEFAULT_DENIAL
    return value


def decision_message(decisions: Decisions) -> ToolApprovalMessage:
    """The transcript's record of `decisions`."""
    return ToolApprovalMessage(
        [k for k, v in decisions.items() if v is None],
        {k: v for k, v in decisions.items() if v is not None})

