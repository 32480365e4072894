"""What a run's thread does between its start and its end: the loop, a failure, the listeners.

The `Agent` starts and ends its runs (`Agent._start`, `Agent._main`): these are the steps in
between that need none of its state, each given what it works on. `drive` runs the loop and
turns a loop that broke into the run's failure reply; `notify` calls the listeners of an event.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from .._core import (
    AbortSignal,
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    EventSink,
    MessageEndEvent,
    MessageStartEvent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    TurnEndEvent,
    describe,
    error_reply,
)
from .._loop import AgentLoopConfig, OutputMode, run_agent_loop
from .._loop import run_agent_loop_continue as run_continue
from ..providers import StreamFn

__all__ = ["NO_OUTPUT", "Listener", "Output", "drive", "notify", "run_name"]

_log = logging.getLogger(__name__)
_run_numbers = itertools.count(1)

Listener = Callable[[AgentEvent, AbortSignal], None]


@attrs.frozen
class Output:
    """What a prompt asks for its answer: `output_type`, `output_retries`, `output_mode`."""

    type: Any = None
    retries: int = 2
    mode: OutputMode = "tool"


NO_OUTPUT = Output()


def run_name() -> str:
    """The name of a new run's thread: `agentcore-run-<n>`, numbered across the process."""
    return f"agentcore-run-{next(_run_numbers)}"


def drive(prompts: list[AgentMessage] | None, context: AgentContext, config: AgentLoopConfig,
          emit: EventSink, signal: AbortSignal, stream_fn: StreamFn | None,
          approvals: dict[str, bool | str] | None,
          unanswered: Callable[[], list[ToolCall]]) -> list[AgentMessage]:
    """Run the loop on `prompts` (None: continue, deciding `approvals`); its new messages.

    The loop turns every failure it sees into a message, so an exception out of it means the
    loop itself broke: it is logged, and the run ends as a failure all the same. The calls
    left without a result (`unanswered()`, the transcript's) get an error result, then an
    error reply (`"aborted"` if `signal` was) ends the run, each announced through `emit` as
    the loop would have.
    """
    try:
        if prompts is None:
            return run_continue(context, config, emit, signal, stream_fn, approvals=approvals)
        return run_agent_loop(prompts, context, config, emit, signal, stream_fn)
    except BaseException as exc:  # the loop itself broke: report it as the run's failure
        _log.exception("agent run failed")
        text = describe(exc)
        failure = error_reply(config.model, text, aborted=signal.aborted)
        added: list[AgentMessage] = [
            *(ToolResultMessage(c.id, c.name, [TextContent(f"Tool call interrupted: {text}")],
                                is_error=True) for c in unanswered()),
            failure,
        ]
        for message in added:
            emit(MessageStartEvent(message))
            emit(MessageEndEvent(message))
        emit(TurnEndEvent(failure, []))
        emit(AgentEndEvent(added))
        return added


def notify(listeners: Sequence[Listener], event: AgentEvent, signal: AbortSignal) -> None:
    """Call each listener with `event` in order; one that raises is logged and skipped."""
    for listener in listeners:
        try:
            listener(event, signal)
        except Exception:
            _log.exception("agent listener %r raised on %s", listener, event.type)
