"""Side effects across a crash (API §24): idempotency keys, and a session's journal of calls.

A tool call's idempotency key is the sha256 of its scope, a NUL character and its call id
(UTF-8), the first 32 digits of its hex: the same call gets the same key in every process
that sees it, so a tool can hand it to an API that deduplicates (payments, email) and a call
repeated after a crash does not take effect twice. The scope is the run's
`AgentLoopConfig.idempotency_scope`: an `Agent` with a session takes it from the session's
identity (`session_scope`); without one, each run draws a random scope.

A session that keeps a journal (`SessionJournal`) stores the start of each call before it
runs and its result as soon as it ends, so that the repair after a crash
(`answer_interrupted`) keeps a finished call's real result and tells a call that never
started from one that was running.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import attrs

from ._messages import ToolResultMessage
from ._tools import AgentToolResult
from ._validators import instance_of, optional_instance_of

__all__ = ["JournalEntry", "SessionJournal", "idempotency_key", "session_scope",
           "tool_result_message"]

KEY_DIGITS = 32
"""The hex digits of an idempotency key (128 bits)."""


def idempotency_key(scope: str, tool_call_id: str) -> str:
    """The idempotency key of call `tool_call_id` in `scope`: sha256 of both, 32 hex digits."""
    digest = hashlib.sha256(f"{scope}\0{tool_call_id}".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:KEY_DIGITS]


def session_scope(session: object) -> str:
    """The idempotency scope of a session: what names its store and which session it is.

    A session's `identity` attribute, when it is a non-empty str (`SqliteSession`: its file's
    absolute path and its `session_id`; `JsonlSession`: its file's absolute path); else its
    type's qualified name, with its `session_id` attribute when it has one. Two sessions of
    one type with neither share a scope: their keys then differ only by their call ids.
    """
    identity = getattr(session, "identity", None)
    if isinstance(identity, str) and identity:
        return identity
    kind = type(session)
    name = f"{kind.__module__}.{kind.__qualname__}"
    session_id = getattr(session, "session_id", None)
    return name if session_id is None else f"{name}\0{session_id}"


def tool_result_message(tool_call_id: str, tool_name: str, result: AgentToolResult,
                        is_error: bool) -> ToolResultMessage:
    """The transcript's message for a call that ended with `result` (the loop's, the journal's)."""
    return ToolResultMessage(
        tool_call_id, tool_name, list(result.content or []), details=result.details,
        is_error=is_error, usage=result.usage,
        added_tool_names=list(result.added_tool_names) if result.added_tool_names else None)


@attrs.frozen
class JournalEntry:
    """What a session's journal holds of one tool call: it started, and how it ended if it did.

    `result` is the call's `ToolResultMessage` once the call has ended, None while it runs
    (or when the process ended first).
    """

    call_id: str = attrs.field(validator=instance_of(str))
    tool_name: str = attrs.field(validator=instance_of(str))
    idempotency_key: str = attrs.field(validator=instance_of(str))
    result: ToolResultMessage | None = attrs.field(
        default=None, validator=optional_instance_of(ToolResultMessage))


@runtime_checkable
class SessionJournal(Protocol):
    """The optional journal of a `Session`: tool calls' starts and results, as they happen.

    A session's transcript gets a batch's tool results only once every call of the batch has
    ended (the loop emits them together), so a process killed in the middle of a batch would
    lose the results of the calls that had finished. A store with these three methods
    (`SqliteSession` and `JsonlSession` have them) keeps them: the `Agent` calls
    `journal_start` on the run's thread before a call runs and `journal_end` as soon as it
    ends, and after a crash its repair takes the journal into account (see
    `answer_interrupted`). A store without them works as before: a call left without a result
    then gets the one text `INTERRUPTED_TEXT`.

    Appending a call's `ToolResultMessage` to the transcript makes its journal record
    obsolete (a store may drop it then, in the same transaction); `replace` keeps only the
    records of calls its new transcript leaves without a result, `clear` drops them all.
    Errors raised here are logged on `agentcore.sessions`; they never stop a run.
    """

    def journal_start(self, call_id: str, tool_name: str, idempotency_key: str) -> None:
        """Record that the call is about to run (durable when this returns)."""
        ...

    def journal_end(self, result: ToolResultMessage) -> None:
        """Record the ended call's result message (durable when this returns)."""
        ...

    def load_journal(self) -> Sequence[JournalEntry] | None:
        """The recorded calls (a later record of a call id wins over an earlier one).

        Records of calls the transcript has answered since may be among them: the repair
        ignores those. None when the store cannot tell which calls started (a store written
        before it kept a journal): the repair then falls back to `INTERRUPTED_TEXT`.
        """
        ...
