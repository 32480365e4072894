"""Asking a person at the terminal whether a tool call may run (API §20), for the chat.

The run asks its `approve` callback on one of its worker threads; the chat's main thread, which
reads every line typed, puts the question, `allow <name>(<args>)? [y/N] `, when the run
announces the call (`tool_approval_request`), on a line of its own after the streamed reply's.
`Approvals.approve` waits for that answer. So Ctrl-C at the question lands on the main thread
and aborts the run as it does during a reply, and `cancel` then releases the waiting worker.
"y" or "yes" (any case) allows the call; anything else, an empty line or end of input denies
it, with the default reason.
"""

from __future__ import annotations

import threading

from .._core import AgentTool, ToolApprovalRequestEvent, ToolCall
from ._console import format_args

__all__ = ["ALLOW_ANSWERS", "Approvals", "allowed", "question"]


ALLOW_ANSWERS = ("y", "yes")
"""The answers (any case, around spaces) that allow a call; anything else denies it."""


class Approvals:
    """The agent's `approve` callback, answered by the REPL's main thread.

    `approve` runs on a worker of the run and waits until `answer` gives the call's decision,
    or `cancel` (the run is being aborted, or the REPL stopped driving it) denies every call
    still asked about, so that no worker waits for a question nobody will ask.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._answers: dict[str, bool] = {}
        self._cancelled = False

    def approve(self, call: ToolCall, tool: AgentTool) -> bool:
        """The agent's callback: wait for the answer about `call` (False once cancelled)."""
        with self._changed:
            self._changed.wait_for(lambda: call.id in self._answers or self._cancelled)
            return self._answers.pop(call.id, False)

    def answer(self, call_id: str, allowed: bool) -> None:
        """Give the decision about `call_id` (asked now, or about to be)."""
        with self._changed:
            self._answers[call_id] = allowed
            self._changed.notify_all()

    def cancel(self) -> None:
        """Deny every call asked about from now until `reset`."""
        with self._changed:
            self._cancelled = True
            self._changed.notify_all()

    def reset(self) -> None:
        """Ready for the next run (the last one has ended)."""
        with self._changed:
            self._cancelled = False
            self._answers.clear()


def question(event: ToolApprovalRequestEvent, max_chars: int | None) -> str:
    """`allow <name>(<args>)? [y/N] `, the arguments compact JSON shortened past `max_chars`."""
    return f"allow {event.tool_name}({format_args(event.args, max_chars)})? [y/N] "


def allowed(answer: str) -> bool:
    """Whether `answer` allows the call: "y" or "yes", in any case, around any spaces."""
    return answer.strip().lower() in ALLOW_ANSWERS
