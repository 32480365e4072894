"""Observers of runs: the seam through which a tracer (`agentcore.otel`) watches the loop.

An observer (`observe`) is called as each run starts, on the run's thread; its `RunTrace` sees
the run's events, each model call as sent, each tool call's work before a worker runs it, and
the run's end. With none registered a run checks an empty tuple once. The registry is a tuple
replaced under a lock; while it is not empty, the threads a run starts from a caller run in a
copy of the caller's `contextvars` context (`carry_context`), so a tracer's span carries over.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable
from typing import Protocol

import attrs

from .._core import NESTING, AbortSignal, AgentContext, AgentEvent, AgentMessage, Context, Model

__all__ = ["Observer", "RunStart", "RunTrace", "carry_context", "observe", "start_trace"]

_log = logging.getLogger(__name__)


@attrs.frozen
class RunStart:
    """What an observer learns of a run as it starts.

    `context` is the run's own context (the system prompt, the transcript before the run and
    the tools): read it at once, the run goes on appending to its messages. `prompts` are the
    run's new messages (None for a `*_continue` run). `signal` aborts when the run is stopped
    (by its caller's signal, or from inside: a dropped stream, the interpreter exiting).
    """

    model: Model
    context: AgentContext
    prompts: list[AgentMessage] | None
    signal: AbortSignal


class RunTrace(Protocol):
    """One observer's view of one run.

    Every method is called on the run's thread; what `tool_work` returns runs on the worker
    running the tool call.
    """

    def event(self, event: AgentEvent) -> None:
        """Every event of the run, before the run's sink gets it."""

    def model_call(self, model: Model, context: Context) -> None:
        """A model call is about to be sent with `context`; its reply's `message_end` ends it."""

    def tool_work(self, tool_call_id: str, work: Callable[[], None]) -> Callable[[], None]:
        """Wrap the work that runs tool call `tool_call_id` on a worker thread."""

    def end(self, error: BaseException | None) -> None:
        """The run is over; `error` is what propagates out of it, if anything does."""


Observer = Callable[[RunStart], RunTrace]
"""Called on the run's thread as each run starts; returns that run's trace."""

_lock = threading.Lock()
_observers: tuple[Observer, ...] = ()


def observe(observer: Observer) -> Callable[[], None]:
    """Register `observer` for every run started from now on; return what unregisters it."""
    global _observers
    with _lock:
        _observers = (*_observers, observer)

    def remove() -> None:
        global _observers
        with _lock:
            left = list(_observers)
            if observer in left:
                left.remove(observer)
            _observers = tuple(left)

    return remove


def carry_context(target: Callable[[], None]) -> Callable[[], None]:
    """`target` to run in a copy of this thread's context, when it matters.

    It does while anything observes runs (a span to nest under) and for a child agent's run
    (its place among agents, `NESTING`; API §25).
    """
    if not _observers and not NESTING.get().path:
        return target
    context = contextvars.copy_context()  # here, on the caller's thread
    return lambda: context.run(target)


def start_trace(start: RunStart) -> RunTrace | None:
    """The trace of a run starting now on this thread: None when nothing observes runs."""
    observers = _observers
    if not observers:
        return None
    traces = []
    for observer in observers:
        try:
            traces.append(observer(start))
        except Exception:
            _log.exception("a run observer failed; the run goes on without it")
    return _Traces(traces)


@attrs.define(eq=False)
class _Traces:
    """The traces of one run, each shielded from the others and from the run.

    An observer that raises is logged, never allowed to change the run.
    """

    traces: list[RunTrace]

    def event(self, event: AgentEvent) -> None:
        self._each(lambda trace: trace.event(event), event.type)

    def model_call(self, model: Model, context: Context) -> None:
        self._each(lambda trace: trace.model_call(model, context), "a model call")

    def tool_work(self, tool_call_id: str, work: Callable[[], None]) -> Callable[[], None]:
        for trace in self.traces:  # each wraps what the one before made
            try:
                work = trace.tool_work(tool_call_id, work)
            except Exception:
                _log.exception("a run observer failed to wrap a tool call")
        return work

    def end(self, error: BaseException | None) -> None:
        self._each(lambda trace: trace.end(error), "the end of a run", reverse=True)

    def _each(self, call: Callable[[RunTrace], None], what: str, reverse: bool = False) -> None:
        for trace in reversed(self.traces) if reverse else self.traces:
            try:
                call(trace)
            except Exception:
                _log.exception("a run observer failed on %s", what)
