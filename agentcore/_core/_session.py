"""Transcripts kept between processes: the `Session` protocol, and the repair after a crash.

A process that ends in the middle of a tool batch leaves tool calls without results; the
repair (`answer_interrupted`) answers them, from the session's journal of calls when it keeps
one (see `_journal`).

The stores themselves (`SqliteSession`, `JsonlSession`) live in the public module
`agentcore.sessions`; the protocol lives here, in the vocabulary, so that the `Agent` can take
any store, its own or a user's, without importing them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Protocol, runtime_checkable

from ._approval import denial_text
from ._content import TextContent
from ._enums import StopReason
from ._journal import JournalEntry
from ._messages import AgentMessage, AssistantMessage, ToolApprovalMessage, ToolResultMessage

__all__ = [
    "INTERRUPTED_NOT_STARTED_TEXT",
    "INTERRUPTED_RUNNING_TEXT",
    "INTERRUPTED_TEXT",
    "Session",
    "answer_interrupted",
]

INTERRUPTED_TEXT = "interrupted: the process ended before this tool call finished"
"""The text of the error result a tool call left without one gets when its transcript loads,
from a session that keeps no journal (which cannot tell whether the call ran)."""

INTERRUPTED_RUNNING_TEXT = (
    "interrupted: the process ended while this tool call was running; it may have taken "
    "effect (idempotency key {key})")
"""The error result of a call the journal saw start but not end (`{key}`: its idempotency key)."""

INTERRUPTED_NOT_STARTED_TEXT = (
    "interrupted: the process ended before this tool call started; it did not run")
"""The error result of a call the journal never saw start."""


@runtime_checkable
class Session(Protocol):
    """A store that keeps one conversation's transcript, in order, between processes.

    `Agent(session=...)` takes any object with these five methods (`SqliteSession` and
    `JsonlSession` in `agentcore.sessions` are two), and uses nothing else: it loads the
    transcript once when constructed, appends every message as the run ends it, replaces the
    whole transcript when `agent.messages` is assigned, and clears it on `agent.reset()`.
    The agent calls `append` from its runs' threads and the others from the caller's thread,
    so a store shared between threads must guard itself.

    A store may also keep a journal of tool calls (the three methods of `SessionJournal`,
    found at run time): the agent then stores the start of each call before it runs and its
    result as soon as it ends, and the repair after a crash keeps the real result of every
    call that finished and tells a call that never started ("did not run") from one that was
    running ("may have taken effect", with its idempotency key). Without one, a call left
    without a result gets `INTERRUPTED_TEXT`, whether it ran or not. The idempotency keys of
    an agent's tool calls derive from the session's identity (see `session_scope`): its
    `identity` attribute when it has one, else its type's qualified name and its
    `session_id` attribute, if any.
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


def answer_interrupted(messages: Sequence[AgentMessage],
                       journal: Iterable[JournalEntry] | None = None,
                       waiting: Collection[str] = ()) -> list[AgentMessage]:
    """`messages` with a result for every tool call that has none.

    A process killed while tools ran leaves an assistant message whose calls lack results,
    which no model accepts. Each such call gets a `ToolResultMessage`, placed after the results
    the message does have, in the order of its calls (as the loop stores a batch's results in
    that order, the batch's results then are too), so that the transcript can be continued at
    once; nothing is run again. With the session's `journal` (see `SessionJournal`), a call
    that finished keeps its real result; one that started but did not finish gets the error
    `INTERRUPTED_RUNNING_TEXT` with its idempotency key (it may have taken effect); one that
    never started gets the error `INTERRUPTED_NOT_STARTED_TEXT` (it did not run). Without a
    journal (None: a store that keeps none) every such call gets the error `INTERRUPTED_TEXT`.
    A call a person denied (its batch's `ToolApprovalMessage` says so; API §20) never ran: it
    gets its denial (`denied: <reason>`), as it would have had the process lived. An assistant
    message that ended in an error or an abort needs none (its calls never ran, see
    `unanswered_tool_calls`). The calls in `waiting` (their child agents wait for approval;
    API §25) get none: they are not interrupted. Returns a new list.
    """
    records: dict[str, JournalEntry] | None = None
    if journal is not None:
        records = {entry.call_id: entry for entry in journal}  # a later record wins
    out: list[AgentMessage] = []
    pending: dict[str, str] = {}  # id -> tool name, of the last assistant message's calls
    denied: dict[str, str] = {}  # id -> reason, of its calls a person refused

    def answer(call_id: str, name: str) -> ToolResultMessage:
        if call_id in denied:
            text = denial_text(denied[call_id])
        elif records is None:
            text = INTERRUPTED_TEXT
        elif (entry := records.get(call_id)) is None:
            text = INTERRUPTED_NOT_STARTED_TEXT
        elif entry.result is not None:
            return entry.result
        else:
            text = INTERRUPTED_RUNNING_TEXT.format(key=entry.idempotency_key)
        return ToolResultMessage(call_id, name, [TextContent(text)], is_error=True)

    def close_batch() -> None:
        out.extend(answer(call_id, name) for call_id, name in pending.items()
                   if call_id not in waiting)
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
