"""Approval of tool calls in a run (API §20): asking `approve`, and resuming a paused batch.

A batch with calls needing approval either asks the config's `approve` callback, one call at
a time on a worker of the run (a person may take minutes; the run's thread keeps following
its abort), or, without one, ends the run with those calls pending. A later run resumes the
batch (`plan_resume`) with the caller's decisions, or asks `approve` then.
"""

from __future__ import annotations

import logging
import queue
from collections.abc import Callable

import attrs

from .._core import (
    DEFAULT_DENIAL,
    NESTING,
    AbortSignal,
    AgentContext,
    AgentTool,
    AssistantMessage,
    Decisions,
    ToolCall,
    ToolResultMessage,
    check_approvals,
    describe,
    find_pause,
)
from ._config import Approve
from ._workers import WorkerPool

__all__ = ["Resume", "ask", "check_no_pause", "plan_resume"]

_log = logging.getLogger(__name__)


@attrs.frozen
class Resume:
    """A run that begins with a paused batch: its reply, and the decisions (None: ask)."""

    reply: AssistantMessage
    decisions: Decisions | None
    only: frozenset[str] | None = None  # run only these calls (paused children's; API §25)


def _waiting_text(calls: list[ToolCall]) -> str:
    names = ", ".join(f"{c.name} ({c.id})" for c in calls)
    return f"{len(calls)} tool call(s) wait for approval: {names}"


def plan_resume(context: AgentContext, approve: Approve | None,
                approvals: object) -> Resume | None:
    """How a `*_continue` run starts from `context`: with a paused batch, or as usual (None).

    Raises `ValueError`/`TypeError` for `approvals` that do not decide exactly the waiting
    calls (`check_approvals`), and `ValueError` when calls wait, no `approvals` are given and
    there is no `approve` callback to ask.
    """
    children = _decided_children(context)
    if children is not None:
        return children
    pause = find_pause(context.messages, context.tools)
    if approvals is not None:
        decisions = check_approvals(pause, approvals)  # raises when nothing waits
        assert pause is not None
        return Resume(pause.reply, decisions)
    if pause is None:
        return None
    if approve is None:
        raise ValueError(f"cannot continue: {_waiting_text(pause.calls)}; decide them with "
                         "approvals={call_id: True | False | 'reason'}")
    return Resume(pause.reply, None)


def _decided_children(context: AgentContext) -> Resume | None:
    """The resume of the calls whose child agents paused and now have their decisions.

    Those are the calls of the last assistant message without a result that the running
    agent's `ChildPauses` (its `NESTING`) holds decided; the batch runs them alone.
    """
    pauses = NESTING.get().pauses
    if not pauses:
        return None
    ready = pauses.ready()
    answered: set[str] = set()
    for message in reversed(context.messages):
        if isinstance(message, ToolResultMessage):
            answered.add(message.tool_call_id)
        elif isinstance(message, AssistantMessage):
            only = frozenset(c.id for c in message.tool_calls
                             if c.id in ready and c.id not in answered)
            return Resume(message, {}, only) if only else None
    return None


def check_no_pause(context: AgentContext) -> None:
    """Raise `ValueError` if calls wait for approval: a new prompt cannot come before them."""
    pause = find_pause(context.messages, context.tools)
    if pause is not None:
        raise ValueError(f"cannot prompt: {_waiting_text(pause.calls)}; continue with "
                         "approvals={call_id: True | False | 'reason'} first")


def ask(approve: Approve, calls: list[tuple[ToolCall, AgentTool]], pool: WorkerPool,
        halt: AbortSignal) -> Decisions | None:
    """Ask `approve` about each call in turn, on `pool`; None once `halt` aborts.

    A callback that raises or returns something other than a bool or a str denies the call,
    with a reason saying so: the call never runs on a decision nobody made.
    """
    answers: queue.SimpleQueue[tuple[str, str | None] | None] = queue.SimpleQueue()
    unlink = halt.add_listener(lambda: answers.put(None))
    decisions: Decisions = {}
    try:
        for call, tool in calls:
            if halt.aborted:
                return None
            pool.submit(_asker(approve, call, tool, answers.put))
            answer = answers.get()
            if answer is None:
                return None
            decisions[answer[0]] = answer[1]
    finally:
        unlink()
    return decisions


def _asker(approve: Approve, call: ToolCall, tool: AgentTool,
           put: Callable[[tuple[str, str | None]], None]) -> Callable[[], None]:
    def work() -> None:
        try:
            verdict: object = approve(call, tool)  # typed bool | str; users return anything
        except Exception as exc:
            _log.warning("approve raised on tool call %r; the call is denied", call.id,
                         exc_info=True)
            put((call.id, f"the approval failed: {describe(exc)}"))
            return
        if verdict is True:
            put((call.id, None))
        elif verdict is False:
            put((call.id, DEFAULT_DENIAL))
        elif isinstance(verdict, str):
            put((call.id, verdict if verdict.strip() else DEFAULT_DENIAL))
        else:
            put((call.id, f"the approval failed: approve returned {verdict!r}, not True, "
                          "False or a reason (str)"))

    return work
