"""Running one assistant message's tool calls: preparation, execution, finalization.

Tools of a batch run on an executor's worker threads; everything else (hooks, events) happens
on the run's thread, which receives the tools' progress and completion through a queue of small
typed messages. A lone call runs on the run's thread itself (see `ToolBatch._run_one`).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, Protocol

import attrs

from .._core import (
    AbortController,
    AbortSignal,
    AgentContext,
    AgentEvent,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    MessageEndEvent,
    MessageStartEvent,
    StopReason,
    TextContent,
    ToolCall,
    ToolExecutionEndEvent,
    ToolExecutionMode,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolResultMessage,
    describe,
    validate_tool_arguments,
)
from ._config import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentLoopConfig,
    BeforeToolCallContext,
    BeforeToolCallResult,
)

__all__ = ["Submitter", "ToolBatch"]

_log = logging.getLogger(__name__)

CALL_ABORTED_TEXT = "Operation aborted"
LENGTH_TEXT = (
    'Tool call "{name}" was not executed: the response hit the output token limit, so its '
    "arguments may be truncated. Re-issue the tool call with complete arguments."
)


def error_result(text: str, terminate: bool | None = None) -> AgentToolResult:
    """A tool result that reports a failure to the model."""
    return AgentToolResult([TextContent(text)], terminate=terminate)


@attrs.define(eq=False)
class _Call:
    """One tool call on its way from preparation to its result."""

    index: int
    call: ToolCall
    tool: AgentTool | None = None
    args: Any = None
    result: AgentToolResult | None = None
    is_error: bool = False
    # Written on the thread that ran the tool (a pool worker, or the run's thread for a lone
    # call) once it is done; read by `on_update` on whichever thread the tool calls it from.
    # Benign under the GIL: a bool store and load are atomic, and an update slipping past a
    # stale False is either emitted before the call's end event or dropped (`_pump` checks
    # `c.result`), never emitted after it.
    finished: bool = False
    message: ToolResultMessage | None = None


@attrs.frozen
class _Update:
    """The tool of `c` sent a partial result through `on_update`."""

    c: _Call
    partial: AgentToolResult


@attrs.frozen
class _NotStarted:
    """The run was aborted before a worker got to start the tool of `c`."""

    c: _Call


@attrs.frozen
class _Raised:
    """The tool of `c` raised `exc`, or the executor refused the work."""

    c: _Call
    exc: BaseException


@attrs.frozen
class _Returned:
    """The tool of `c` returned `result`."""

    c: _Call
    result: AgentToolResult


_Message = _Update | _NotStarted | _Raised | _Returned
"""What reaches the run's thread through `ToolBatch`'s inbox."""


@attrs.define(eq=False)
class ToolBatch:
    """Runs the tool calls of `message` for one turn of a run (on the run's thread)."""

    message: AssistantMessage
    context: AgentContext
    config: AgentLoopConfig
    signal: AbortSignal
    emit: Callable[[AgentEvent], None]
    get_executor: Callable[[], Submitter]  # called only when a batch needs one (may create it)
    tools: Callable[[], AbortController]  # aborts the signal tools get (see _Run._tool_controller)
    _inbox: queue.SimpleQueue[_Message] = attrs.field(factory=queue.SimpleQueue)

    def run(self) -> tuple[list[ToolResultMessage], bool]:
        """Execute every call; return the results in source order and whether to terminate."""
        calls = [_Call(i, c) for i, c in enumerate(self.message.tool_calls)]
        if self.message.stop_reason == StopReason.LENGTH:
            for c in calls:
                self._start(c)
                self._finish(c, error_result(LENGTH_TEXT.format(name=c.call.name)), True)
                self._emit_message(c)
        elif self._sequential(calls):
            for c in calls:
                self._start(c)
                if self._prepare(c):
                    self._run_one(c)
                self._emit_message(c)
        else:
            ready = []
            for c in calls:
                self._start(c)
                if self._prepare(c):
                    ready.append(c)
            if len(ready) == 1:
                self._run_one(ready[0])
            else:
                for c in ready:
                    self._submit(c)
                self._pump(len(ready))
            for c in calls:
                self._emit_message(c)
        results = [c.message for c in calls if c.message is not None]
        terminate = bool(calls) and all(c.result is not None and c.result.terminate is True
                                        for c in calls)
        return results, terminate

    def _sequential(self, calls: list[_Call]) -> bool:
        if self.config.tool_execution is ToolExecutionMode.SEQUENTIAL:
            return True
        by_name = {t.name: t for t in self.context.tools}
        return any(
            (tool := by_name.get(c.call.name)) is not None
            and tool.execution_mode is ToolExecutionMode.SEQUENTIAL
            for c in calls
        )

    def _start(self, c: _Call) -> None:
        self.emit(ToolExecutionStartEvent(c.call.id, c.call.name, c.call.arguments))

    def _prepare(self, c: _Call) -> bool:
        """Find, reshape, validate and vet the call; False when it already has its result."""
        if self._aborted():
            self._finish(c, error_result(CALL_ABORTED_TEXT), True)
            return False
        tool = next((t for t in self.context.tools if t.name == c.call.name), None)
        if tool is None:
            self._finish(c, error_result(f"Tool {c.call.name} not found"), True)
            return False
        try:
            call = c.call
            if tool.prepare_arguments is not None:
                prepared = tool.prepare_arguments(call.arguments)
                if prepared is not call.arguments:
                    call = attrs.evolve(call, arguments=prepared)
            args = validate_tool_arguments(tool, call)
            verdict = None
            if self.config.before_tool_call is not None:
                verdict = self.config.before_tool_call(
                    BeforeToolCallContext(self.message, c.call, args, self.context), self.signal
                )
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

    def _aborted(self) -> bool:
        return self.signal.aborted

    def _run_one(self, c: _Call) -> None:
        """Run a lone call: on this thread unless the config names an executor.

        Why not the pool, as for a batch: a hand-off to another thread and back costs 5 µs on a
        busy 2-core VM but 35-60 µs on an idle one (waking a sleeping CPU), more than the whole
        loop's turn, and a lone call gains no concurrency from it. The price: a tool runs on the
        run's thread when called alone and on a pool thread in a batch, so a tool keeping state
        in `threading.local` (a database connection, say) sees different threads from one turn
        to the next.
        """
        if self.config.tool_executor is not None:
            self._submit(c)
            self._pump(1)
            return
        tool, run_thread = c.tool, threading.get_ident()
        assert tool is not None
        sink_error: list[BaseException] = []

        def on_update(partial: object) -> None:
            if not isinstance(partial, AgentToolResult):
                raise TypeError(f"on_update: 'partial' must be an AgentToolResult, got {partial!r}")
            if c.finished or sink_error:
                return
            if threading.get_ident() != run_thread:
                self._inbox.put(_Update(c, partial))
                return
            try:
                self.emit(ToolExecutionUpdateEvent(c.call.id, c.call.name, c.call.arguments,
                                                   partial))
            except BaseException as exc:  # re-raised once the tool returns, not into it
                sink_error.append(exc)
                self.tools().abort("the run ended early")  # so that the tool returns soon

        if self._aborted():
            self._finish(c, error_result(CALL_ABORTED_TEXT), True)
            return
        try:
            result = tool.execute(c.call.id, c.args, self.tools().signal, on_update)
            _check_result(tool, result)
        except KeyboardInterrupt:
            raise  # the user stopping the program, not a tool failure
        except BaseException as exc:  # as on a worker thread (sys.exit() included): the result
            outcome: tuple[AgentToolResult, bool] = (error_result(describe(exc)), True)
        else:
            outcome = (result, False)
        finally:
            c.finished = True
        if sink_error:
            raise sink_error[0]
        while not self._inbox.empty():  # updates the tool sent from threads of its own
            update = self._inbox.get()
            assert isinstance(update, _Update)  # nothing else is submitted for a lone call
            self.emit(ToolExecutionUpdateEvent(c.call.id, c.call.name, c.call.arguments,
                                               update.partial))
        self._after(c, *outcome)

    def _submit(self, c: _Call) -> None:
        """Hand `c` to the executor (the run's own pool unless the config names one).

        The run's thread stays free meanwhile to emit the tools' progress in order.
        """
        tool, inbox, signal = c.tool, self._inbox, self.tools().signal
        assert tool is not None

        def on_update(partial: object) -> None:
            if not isinstance(partial, AgentToolResult):
                raise TypeError(f"on_update: 'partial' must be an AgentToolResult, got {partial!r}")
            if not c.finished:
                inbox.put(_Update(c, partial))

        def work() -> None:
            try:
                if signal.aborted:
                    inbox.put(_NotStarted(c))
                    return
                result = tool.execute(c.call.id, c.args, signal, on_update)
                _check_result(tool, result)
            except BaseException as exc:
                c.finished = True
                inbox.put(_Raised(c, exc))
            else:
                c.finished = True
                inbox.put(_Returned(c, result))

        try:
            self.get_executor().submit(work)
        except Exception as exc:  # a shut-down or saturated user executor
            inbox.put(_Raised(c, exc))

    def _pump(self, count: int) -> None:
        """Handle tool progress and completions on this thread until `count` calls finished."""
        while count:
            match self._inbox.get():
                case _Update(c, partial):
                    if c.result is None:  # else a late update, behind the call's completion
                        self.emit(ToolExecutionUpdateEvent(c.call.id, c.call.name,
                                                           c.call.arguments, partial))
                    continue
                case _NotStarted(c):
                    self._finish(c, error_result(CALL_ABORTED_TEXT), True)
                case _Raised(c, exc):
                    if isinstance(exc, KeyboardInterrupt):  # the user stopping the program
                        raise exc
                    self._after(c, error_result(describe(exc)), True)
                case _Returned(c, result):
                    self._after(c, result, False)
            count -= 1

    def _after(self, c: _Call, result: AgentToolResult, is_error: bool) -> None:
        hook = self.config.after_tool_call
        if hook is not None:
            try:
                override = hook(
                    AfterToolCallContext(self.message, c.call, c.args, result, is_error,
                                         self.context),
                    self.signal,
                )
            except Exception as exc:
                result, is_error = error_result(describe(exc)), True
            else:
                if isinstance(override, AfterToolCallResult):
                    result, is_error = _apply(result, is_error, override)
        self._finish(c, result, is_error)

    def _finish(self, c: _Call, result: AgentToolResult, is_error: bool) -> None:
        c.result, c.is_error = result, is_error
        self.emit(ToolExecutionEndEvent(c.call.id, c.call.name, result, is_error))

    def _message(self, c: _Call) -> ToolResultMessage:
        result = c.result
        assert result is not None
        return ToolResultMessage(
            c.call.id,
            c.call.name,
            list(result.content or []),
            details=result.details,
            is_error=c.is_error,
            usage=result.usage,
            added_tool_names=list(result.added_tool_names) if result.added_tool_names else None,
        )

    def _emit_message(self, c: _Call) -> None:
        c.message = message = self._message(c)
        self.emit(MessageStartEvent(message))
        self.emit(MessageEndEvent(message))


def _check_result(tool: AgentTool, result: object) -> None:
    if not isinstance(result, AgentToolResult):
        raise TypeError(f"tool {tool.name!r} returned {result!r}, expected an AgentToolResult")


def _apply(
    result: AgentToolResult, is_error: bool, override: AfterToolCallResult
) -> tuple[AgentToolResult, bool]:
    result = AgentToolResult(
        content=override.content if override.content is not None else result.content,
        details=override.details if override.details is not None else result.details,
        usage=override.usage if override.usage is not None else result.usage,
        added_tool_names=result.added_tool_names,
        terminate=override.terminate if override.terminate is not None else result.terminate,
    )
    return result, override.is_error if override.is_error is not None else is_error


class Submitter(Protocol):
    """What runs a batch's calls: a `concurrent.futures.Executor`, or the run's `WorkerPool`."""

    def submit(self, fn: Callable[[], None], /) -> object:
        """Run `fn` on another thread (its return value, say a `Future`, is not used)."""


