"""Running one assistant message's tool calls: preparation, execution, finalization.

Every call runs on a worker thread (the run's own daemon pool, or the config's executor);
everything else (hooks, events) happens on the run's thread, which receives the tools' progress
and completion through its inbox (see `_tool_messages`). Because no tool runs on the run's
thread, a call that outlives its timeout, or ignores an abort for `ABORT_GRACE_S`, can be
abandoned: the run goes on without it and never waits for its thread. An executor that may
run calls in another process gets a picklable work item instead (see `_remote`).
"""

from __future__ import annotations

import functools
import logging
import queue
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Protocol

import attrs

from .._core import (
    AbortController,
    AbortSignal,
    AgentContext,
    AgentEvent,
    AgentToolResult,
    AssistantMessage,
    CallLeftOpen,
    MessageEndEvent,
    MessageStartEvent,
    Nesting,
    StopReason,
    TextContent,
    ToolCall,
    ToolExecutionEndEvent,
    ToolExecutionMode,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolResultMessage,
    denial_text,
    describe,
    enter_deps,
    failure_text,
    leave_deps,
    tool_result_message,
    validate_tool_arguments,
)
from ._config import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentLoopConfig,
    BeforeToolCallContext,
    BeforeToolCallResult,
)
from ._exit import ABORT_GRACE_S
from ._remote import check_result, check_update, outcome, run_tool
from ._tool_messages import (
    ABORTED,
    Aborted,
    Call,
    Inbox,
    Nested,
    NotStarted,
    Raised,
    Returned,
    Settled,
    Update,
    served,
)
from ._workers import Work, WorkerPool

__all__ = ["Submitter", "ToolBatch"]

_log = logging.getLogger(__name__)
_tools_log = logging.getLogger("agentcore.tools")  # tool failures, for the tools' developers

CALL_ABORTED_TEXT = "Operation aborted"
_NEVER = float("inf")
_OVERRIDABLE = ("content", "details", "usage", "terminate")  # by an AfterToolCallResult
LENGTH_TEXT = (
    'Tool call "{name}" was not executed: the response hit the output token limit, so its '
    "arguments may be truncated. Re-issue the tool call with complete arguments."
)


def error_result(text: str, terminate: bool | None = None) -> AgentToolResult:
    """A tool result that reports a failure to the model."""
    return AgentToolResult([TextContent(text)], terminate=terminate)


@attrs.define(eq=False)
class ToolBatch:
    """Runs the tool calls of `message` for one turn of a run (on the run's thread).

    `signal` is the run's signal for hooks (tool threads are marked as serving it, see
    `serving`); `halt` aborts the signal tools get, and follows `signal`.
    """

    message: AssistantMessage
    context: AgentContext
    config: AgentLoopConfig
    signal: AbortSignal
    emit: Callable[[AgentEvent], None]
    get_executor: Callable[[], Submitter]  # called only when a call needs one (may create it)
    halt: AbortSignal
    _inbox: Inbox  # the run's `tool_inbox`: may hold late messages of earlier batches
    # An observer's wrapper of each call's work (`RunTrace.tool_work`), when one watches the run
    wrap: Callable[[str, Callable[[], None]], Callable[[], None]] | None = None
    denied: dict[str, str] | None = None  # call id -> reason, for calls a person refused
    scope: str = ""  # the run's idempotency scope: a call's key derives from it (`enter_deps`)
    nesting: Nesting = attrs.field(factory=Nesting)  # the run's place among agents (API §25)
    paused: list[str] = attrs.field(init=False, factory=list)  # calls left open

    def run(self, tool_calls: list[ToolCall], refusal: str | None = None,
            ) -> tuple[list[ToolResultMessage], bool]:
        """Run the message's `tool_calls`; return their results in source order and whether to stop.

        With a `refusal` (a usage limit reached), every call gets it as its error result.
        """
        calls = [Call(c) for c in tool_calls]
        results: list[ToolResultMessage] = []  # in source order
        if refusal is not None or self.message.stop_reason == StopReason.LENGTH:
            for c in calls:  # none runs: refused, or its arguments may be cut short
                self._start(c)
                text = refusal or LENGTH_TEXT.format(name=c.call.name)
                self._finish(c, error_result(text), True)
                results.append(self._message(c))
        elif self._sequential(calls):
            for c in calls:
                self._start(c)
                if self._prepare(c):
                    self._pump([c])
                if not c.paused:
                    results.append(self._message(c))
        else:
            ready = []
            for c in calls:
                self._start(c)
                if self._prepare(c):
                    ready.append(c)
            if ready:
                self._pump(ready)
            for c in calls:
                if not c.paused:
                    results.append(self._message(c))
        terminate = bool(calls)
        for c in calls:
            if c.result is None or c.result.terminate is not True:
                terminate = False
                break
        return results, terminate

    def _sequential(self, calls: list[Call]) -> bool:
        if self.config.tool_execution is ToolExecutionMode.SEQUENTIAL:
            return True
        tools = self.context.tools
        for tool in tools:  # most runs have no sequential tool: one pass, no dict
            if tool.execution_mode is ToolExecutionMode.SEQUENTIAL:
                break
        else:
            return False
        by_name = {t.name: t for t in tools}
        return any((t := by_name.get(c.call.name)) is not None
                   and t.execution_mode is ToolExecutionMode.SEQUENTIAL for c in calls)

    def _start(self, c: Call) -> None:
        call = c.call
        self.emit(ToolExecutionStartEvent(call.id, call.name, call.arguments))

    def _prepare(self, c: Call) -> bool:
        """Find, reshape, validate and vet the call; False when it already has its result."""
        if self.halt.aborted:
            self._finish(c, error_result(CALL_ABORTED_TEXT), True)
            return False
        call = c.call
        if self.denied is not None and call.id in self.denied:
            self._finish(c, error_result(denial_text(self.denied[call.id])), True)
            return False
        for tool in self.context.tools:  # the first of that name
            if tool.name == call.name:
                break
        else:
            self._finish(c, error_result(f"Tool {call.name} not found"), True)
            return False
        hook = self.config.before_tool_call
        try:
            if tool.prepare_arguments is not None:
                prepared = tool.prepare_arguments(call.arguments)
                if prepared is not call.arguments:
                    call = attrs.evolve(call, arguments=prepared)
            args = validate_tool_arguments(tool, call)
            verdict = None
            if hook is not None:
                verdict = hook(BeforeToolCallContext(self.message, c.call, args, self.context),
                               self.signal)
        except Exception as exc:
            self._finish(c, error_result(describe(exc)), True)
            return False
        if self._aborted():  # the hook may have taken a while
            self._finish(c, error_result(CALL_ABORTED_TEXT), True)
            return False
        if isinstance(verdict, BeforeToolCallResult) and verdict.block:
            text = verdict.reason or "Tool execution was blocked"
            self._finish(c, error_result(text, terminate=verdict.terminate), True)
            return False
        c.tool, c.args = tool, args
        return True

    def _aborted(self) -> bool:  # a method: mypy would take a second check as unreachable
        return self.halt.aborted

    def _submit(self, c: Call) -> None:
        """Hand `c` to the executor (the run's own pool unless the config names one).

        A call with a timeout gets a signal of its own, following the tools' signal, so that
        its expiry aborts it alone. An executor that is neither the run's pool nor a
        `ThreadPoolExecutor` gets a picklable work item (`_send`).
        """
        tool, inbox, signal, owner, deps = c.tool, self._inbox, self.halt, self.signal, \
            self.config.deps
        scope, nesting, emit = self.scope, self.nesting, functools.partial(_nested, inbox, c)
        assert tool is not None
        timeout = tool.timeout if tool.timeout is not None else self.config.tool_timeout
        executor = self.get_executor()
        if isinstance(executor, Executor) and not isinstance(executor, ThreadPoolExecutor):
            self._send(c, executor, timeout)
            return
        if timeout is not None:
            c.timeout, c.deadline = timeout, time.monotonic() + timeout
            c.own = own = AbortController()
            parent = signal
            c.unlink = parent.add_listener(lambda: own.abort(parent.reason))
            signal = own.signal

        def on_update(partial: AgentToolResult) -> None:
            check_update(partial)
            if not c.finished:
                inbox.put(Update(c, partial))

        def work() -> Callable[[], None]:
            try:
                runs: list[AbortSignal] = served.runs
            except AttributeError:  # this thread's first call
                runs = served.runs = []
            runs.append(owner)
            previous = enter_deps(deps, scope, c.call.id, nesting, emit)
            message: NotStarted | Raised | Returned
            try:
                if signal.aborted:
                    message = NotStarted(c)
                else:
                    result = tool.execute(c.call.id, c.args, signal, on_update)
                    check_result(tool.name, result)
                    message = Returned(c, result)
            except BaseException as exc:
                message = Raised(c, exc)
            finally:
                leave_deps(previous)
                runs.pop()
            c.finished = True
            return functools.partial(inbox.put, message)  # the hand-back (see `WorkerPool`)

        job: Work = work
        if self.wrap is not None or not isinstance(executor, WorkerPool):
            def deliver() -> None:
                work()()

            job = deliver if self.wrap is None else self.wrap(c.call.id, deliver)
        try:
            executor.submit(job)
        except Exception as exc:  # a shut-down or saturated user executor
            inbox.put(Raised(c, exc))

    def _send(self, c: Call, executor: Executor, timeout: float | None) -> None:
        """Hand `c` to an executor that may run it in another process; wait on its future.

        The work item is `run_tool` with the tool's `execute` (not the `AgentTool`, whose
        compiled validators need not pickle), the call's arguments, the run's `deps` and its
        idempotency scope; no signal, `on_update` or observer of this run goes with it. An
        executor that refuses or cannot pickle the work gives the call an error result saying
        so (`outcome`).
        """
        tool, inbox = c.tool, self._inbox
        assert tool is not None
        if timeout is not None:
            c.timeout, c.deadline = timeout, time.monotonic() + timeout
        if self.halt.aborted:
            inbox.put(NotStarted(c))
            return
        try:
            future = executor.submit(run_tool, tool.name, tool.execute, c.call.id, c.args,
                                     self.config.deps, self.scope)
        except Exception as exc:  # shut down, or (Dask) the work item does not pickle
            future = Future()
            future.set_exception(exc)
        c.future = future
        future.add_done_callback(lambda done: inbox.put(Settled(c, done)))

    def _pump(self, calls: list[Call]) -> None:
        """Submit `calls`; handle their progress and completions here until each has its result.

        The calls are handed over last, just before the wait: a worker that wakes while this
        thread still runs Python waits for the GIL, a second sleep and wake-up. A call past its
        deadline, or still running `ABORT_GRACE_S` after the tools' signal aborted, gets its
        error result now; its thread is abandoned (whatever it sends later is ignored).
        """
        pending = {id(c): c for c in calls}  # a call's messages hold it: ids stay unique
        inbox = self._inbox
        grace_ends = time.monotonic() + ABORT_GRACE_S if self.halt.aborted else _NEVER
        for c in calls:
            self._submit(c)
        while pending:
            wake = grace_ends
            for c in pending.values():
                if c.deadline < wake:
                    wake = c.deadline
            try:
                message = inbox.get(timeout=None if wake == _NEVER
                                    else max(0.0, wake - time.monotonic()))
            except queue.Empty:
                message = None
            match message:  # the most frequent first
                case Returned(c, result) if pending.pop(id(c), None) is not None:
                    self._after(c, result, False)
                case Update(c, partial):
                    if c.result is None:  # else a late update, behind its call's result
                        self.emit(ToolExecutionUpdateEvent(c.call.id, c.call.name,
                                                           c.call.arguments, partial))
                case Nested(c, event):
                    if c.result is None:  # else late, behind its call's result: dropped
                        self.emit(event)
                case NotStarted(c) if pending.pop(id(c), None) is not None:
                    self._finish(c, error_result(CALL_ABORTED_TEXT), True)
                case Raised(c, exc) if pending.pop(id(c), None) is not None:
                    if isinstance(exc, KeyboardInterrupt):  # the user stopping the program
                        raise exc
                    if isinstance(exc, CallLeftOpen):  # its result comes in a later run
                        c.paused = c.finished = True
                        self.paused.append(c.call.id)
                        continue
                    # The model reads `KeyError: 'Rome'`; the traceback goes to the tools' log
                    _tools_log.info("tool %r raised %s", c.call.name, type(exc).__name__,
                                    exc_info=exc)
                    self._after(c, error_result(failure_text(exc)), True)
                case Settled(c, future) if pending.pop(id(c), None) is not None:
                    assert c.tool is not None
                    settled = outcome(future, c.tool, c.args, self.config.deps,
                                      self.get_executor())
                    if settled is None:  # cancelled: on abort, or by the executor's owner
                        self._finish(c, error_result(CALL_ABORTED_TEXT), True)
                    else:
                        self._after(c, *settled)
                case Aborted():
                    grace_ends = min(grace_ends, time.monotonic() + ABORT_GRACE_S)
                    for c in pending.values():
                        if c.future is not None:  # not started yet: it never will be
                            c.future.cancel()
            if message is None or (message is ABORTED and pending):
                self._expire(pending, grace_ends)

    def _expire(self, pending: dict[int, Call], grace_ends: float) -> None:
        """Give the calls past their deadline, or past the abort's grace, their error result."""
        now = time.monotonic()
        for key, c in list(pending.items()):
            if c.deadline <= now:
                del pending[key]
                c.finished = True  # drop its later updates
                text = f"tool '{c.call.name}' timed out after {c.timeout:g} s"
                if c.own is not None:
                    c.own.abort(text)
                if c.future is not None:
                    c.future.cancel()
                _log.info("%s; the run goes on without it", text)
                self._after(c, error_result(text), True)
            elif grace_ends <= now:
                del pending[key]
                c.finished = True
                _log.warning("tool %r ignored the abort for %s s; abandoning its thread",
                             c.call.name, ABORT_GRACE_S)
                self._finish(c, error_result(CALL_ABORTED_TEXT), True)

    def _after(self, c: Call, result: AgentToolResult, is_error: bool) -> None:
        hook = self.config.after_tool_call
        if hook is not None:
            try:
                override = hook(AfterToolCallContext(self.message, c.call, c.args, result,
                                                     is_error, self.context), self.signal)
            except Exception as exc:
                result, is_error = error_result(describe(exc)), True
            else:
                if isinstance(override, AfterToolCallResult):  # what it gives replaces its own
                    result = attrs.evolve(result, **{
                        k: v for k in _OVERRIDABLE if (v := getattr(override, k)) is not None})
                    if override.is_error is not None:
                        is_error = override.is_error
        self._finish(c, result, is_error)

    def _finish(self, c: Call, result: AgentToolResult, is_error: bool) -> None:
        c.result, c.is_error = result, is_error
        if c.unlink is not None:
            c.unlink()
        self.emit(ToolExecutionEndEvent(c.call.id, c.call.name, result, is_error))

    def _message(self, c: Call) -> ToolResultMessage:
        """Emit the result message of `c`, which has its result; return it."""
        result = c.result
        assert result is not None
        message = tool_result_message(c.call.id, c.call.name, result, c.is_error)
        self.emit(MessageStartEvent(message))
        self.emit(MessageEndEvent(message))
        return message


def _nested(inbox: Inbox, c: Call, event: AgentEvent) -> None:
    """What a child agent run by the call `c` sends its parent's run (`Nesting.emit`)."""
    inbox.put(Nested(c, event))


class Submitter(Protocol):
    """What runs a batch's calls: a `concurrent.futures.Executor`, or the run's `WorkerPool`."""

    def submit(self, fn: Callable[[], object], /) -> object:
        """Run `fn` on another thread of this process (see `WorkerPool` for what it returns)."""


