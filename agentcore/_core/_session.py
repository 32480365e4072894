"""Transcripts kept between processes: the `Session` protocol, and the repair after a crash.

A process that ends in the middle of a tool batch leaves tool calls without results; the
repair (`answer_interrupted`) answers them.

The stores themselves (`SqliteSession`, `JsonlSession`) live in the public module
`agentcore.sessions`; the protocol lives here, in the vocabulary, so that the `Agent` can take
any store, its own or a user's, without importing them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ._approval import denial_text
from ._content import TextContent
from ._enums import StopReason
from ._messages import AgentMessage, AssistantMessage, ToolApprovalMessage, ToolResultMessage

__all__ = ["INTERRUPTED_TEXT", "Session", "answer_interrupted"]

INTERRUPTED_TEXT = "interrupted: the process ended before this tool call finished"
"""The text of the error result a tool call left without one gets when its transcript loads."""


@runtime_checkable
class Session(Protocol):
    """A store that keeps one conversation's transcript, in order, between processes.

    `Agent(session=...)` takes any object with these five methods (`SqliteSession` and
    `JsonlSession` in `agentcore.sessions` are two), and uses nothing else: it loads the
    transcript once when constructed, appends every message as the run ends it, replaces the
    whole transcript when `agent.messages` is assigned, and clears it on `agent.reset()`.
    The agent calls `append` from its runs' threads and the others from the caller's thread,
    so a store shared between threads must guard itself.
    """

    def load(self) -> list[AgentMessage]:
        """The stored transcript, oldest message first (empty when nothing is stored)."""
        ...

    def append(self, messages: Sequence[AgentMessage]) -> None:
        """Add `messages` at the end; they are kept (durable) when this returns."""
        ...

    def replace(self, messages: Sequence[AgentMessage]) -> None:
        """Make `messages` the whole transcript, at once: a crash leaves the old or the new."""
        ...

    def clear(self) -> None:
        """Remove every message of this session."""
        ...

    def session_ids(self) -> list[str]:
        """The ids of the sessions this store holds (see each store for what an id is)."""
        ...


def answer_interrupted(messages: Sequence[AgentMessage]) -> list[AgentMessage]:
    """`messages` with an error result for every tool call that has none.

    A process killed while tools ran leaves an assistant message whose calls lack results,
    which no model accepts. Each such call gets a `ToolResultMessage` with `is_error` set and
    the text `INTERRUPTED_TEXT`, placed after the results the message does have, so that the
    transcript can be continued at once; nothing is run again. A call a person denied (its
    batch's `ToolApprovalMessage` says so; API §20) never ran: it gets its denial
    (`denied: <reason>`), as it would have had the process lived. An assistant message that
    ended in an error or an abort needs none (its calls never ran, see
    `unanswered_tool_calls`). Returns a new list.
    """
    out: list[AgentMessage] = []
    pending: dict[str, str] = {}  # id -> tool name, of the last assistant message's calls
    denied: dict[str, str] = {}  # id -> reason, of its calls a person refused

    def close_batch() -> None:
        out.extend(ToolResultMessage(call_id, name, [TextContent(
            denial_text(denied[call_id]) if call_id in denied else INTERRUPTED_TEXT)],
            is_error=True) for call_id, name in pending.items())
        pending.clear()
        denied.clear()

    for message in messages:
        if isinstance(message, ToolResultMessage):
            pending.pop(message.tool_call_id, None)
        elif isinstance(message, ToolApprovalMessage):  # decisions come before results
            denied.update(message.denied)
        else:
            close_batch()
            if isinstance(message, AssistantMessage) and message.stop_reason not in (
                    StopReason.ERROR, StopReason.ABORTED):
                pending.update((call.id, call.name) for call in message.tool_calls)
        out.append(message)
    close_batch()
    return out
