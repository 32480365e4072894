"""What a run's tool calls send its thread, and which threads serve which run.

A tool call runs on a worker thread; the run's thread hears of it only through the run's
inbox, a queue of the small typed messages below, each carrying the `Call` it is about.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import attrs

from .._core import AbortController, AbortSignal, AgentTool, AgentToolResult, ToolCall

__all__ = ["ABORTED", "Aborted", "Call", "Inbox", "Nested", "NotStarted", "Raised", "Returned",
           "Settled", "Update", "served", "serving", "tool_inbox"]


@attrs.define(eq=False)
class Call:
    """One tool call on its way from preparation to its result."""

    call: ToolCall
    tool: AgentTool | None = None
    args: Any = None
    result: AgentToolResult | None = None
    is_error: bool = False
    # Set once the tool is done, read by `on_update` on any thread: an update slipping past a
    # stale False comes before the call's end event or is dropped (see `_pump`), never after.
    finished: bool = False
    timeout: float | None = None  # seconds, when the call has a deadline
    deadline: float = float("inf")  # time.monotonic() past which the call is abandoned
    own: AbortController | None = None  # this call's own signal, when it has a timeout
    unlink: Callable[[], None] | None = None  # stops `own` following the tools' signal
    future: Future[Any] | None = None  # on an executor that may run the call elsewhere
    paused: bool = False  # left open (`CallLeftOpen`): no result in this run


@attrs.frozen
class Update:
    """The tool of `c` sent a partial result through `on_update`."""

    c: Call
    partial: AgentToolResult


@attrs.frozen
class Nested:
    """The tool of `c` runs a child agent, which sent `event` (a `SubagentEvent`; API §25)."""

    c: Call
    event: Any


@attrs.frozen
class NotStarted:
    """The run was aborted before a worker got to start the tool of `c`."""

    c: Call


@attrs.frozen
class Raised:
    """The tool of `c` raised `exc`, or the executor refused the work."""

    c: Call
    exc: BaseException


@attrs.frozen
class Returned:
    """The tool of `c` returned `result`."""

    c: Call
    result: AgentToolResult


@attrs.frozen
class Settled:
    """The `future` of `c`, on an executor that may run it in another process, is done."""

    c: Call
    future: Future[Any]


class Aborted:
    """The tools' signal was aborted: from now on, calls have `ABORT_GRACE_S` to end."""


ABORTED = Aborted()

Inbox = queue.SimpleQueue[Update | Nested | NotStarted | Raised | Returned | Settled | Aborted]
"""Where a run's tool calls report to its thread."""


def tool_inbox(halt: AbortSignal) -> Inbox:
    """The run's inbox (one for the run): it hears `halt` abort too, so a waiting run notices."""
    inbox: Inbox = queue.SimpleQueue()
    halt.add_listener(lambda: inbox.put(ABORTED))
    return inbox


served = threading.local()
"""Per thread, `runs`: the signals of the runs whose tool calls it is running, innermost last."""


def serving(signal: AbortSignal) -> bool:
    """Whether the calling thread is running a tool call of the run given `signal`.

    Such a thread must not wait for that run: the run waits for the call (see `AgentRun`).
    """
    return signal in getattr(served, "runs", ())
