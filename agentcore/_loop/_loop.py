"""The agent loop: stream a reply, run the tools it asks for, feed the results back, repeat.

`run_agent_loop` is the whole algorithm, blocking on the caller's thread; `agent_loop` runs
the same on a background thread behind an `EventStream`. Every event is emitted from the run's
thread, in order. Failures of the model, tools and hooks become messages; only the caller's own
sink raising propagates.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, cast

import attrs

from .._core import (
    ABORTED_TEXT,
    LLM_TYPES,
    AbortController,
    AbortSignal,
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AgentStartEvent,
    AssistantContent,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    DoneEvent,
    ErrorEvent,
    EventSink,
    EventStream,
    Message,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    Model,
    StartEvent,
    StopReason,
    StreamOptions,
    ThinkingLevel,
    ToolResultMessage,
    TurnEndEvent,
    TurnStartEvent,
    cannot_take,
    default_convert_to_llm,
    describe,
    error_reply,
)
from ..providers import StreamFn
from ._config import (
    AgentLoopConfig,
    AgentLoopTurnUpdate,
    BeforeModelCall,
    BeforeModelCallContext,
    PrepareNextTurnContext,
)
from ._exit import in_flight
from ._limits import LimitCounter
from ._observe import RunStart, RunTrace, carry_context, start_trace
from ._output import OutputState, Verdict
from ._tool_exec import ABORT_GRACE_S, Inbox, Submitter, ToolBatch, tool_inbox
from ._workers import WorkerPool

__all__ = ["agent_loop", "agent_loop_continue", "run_agent_loop", "run_agent_loop_continue"]

_log = logging.getLogger(__name__)

class _SinkError(Exception):
    """Carries an exception raised by the caller's sink past the loop's own handlers."""

    def __init__(self, original: Exception) -> None:
        super().__init__(original)
        self.original = original


@attrs.define(eq=False)
class _Run:
    """One run of the loop; lives on one thread from start to end."""

    context: AgentContext
    config: AgentLoopConfig
    sink: EventSink
    signal: AbortSignal
    stream_fn: StreamFn
    model: Model = attrs.field(init=False)  # prepare_next_turn may swap these two for the run
    reasoning: ThinkingLevel | None = attrs.field(init=False)
    new_messages: list[AgentMessage] = attrs.field(factory=list)
    turn_open: bool = False
    turns: int = 0  # turn_start events so far
    _options: StreamOptions | None = None
    _options_for: tuple[Any, ...] = ()
    _executor: Submitter | None = None
    _pool: WorkerPool | None = None  # the run's own, when the config names no executor
    # Stops the run from inside: follows `signal` (the caller's), and is aborted when the run
    # ends early or the interpreter exits. Tools get its signal; hooks get `signal`.
    _halt: AbortController = attrs.field(factory=AbortController)
    _inbox: Inbox | None = None  # where tool calls report, once the run has any
    _output: OutputState | None = None  # with an output_type: its tool and retries
    _limits: LimitCounter | None = None  # with usage limits: what the run has used
    _llm_only: bool = False  # every message in the context is a user/assistant/tool result
    _trace: RunTrace | None = None  # what observes the run, when anything does

    def __attrs_post_init__(self) -> None:
        self.model = self.config.model
        self.reasoning = self.config.reasoning
        config = self.config
        # With none of the hooks that see the live context, the loop alone writes its
        # messages: it can then know, at O(1) a message, that all of them are plain LLM
        # messages, and spare every model call the O(n) check of default_convert_to_llm.
        sole_writer = (
            config.convert_to_llm is default_convert_to_llm
            and config.transform_context is None and config.before_tool_call is None
            and config.after_tool_call is None and config.prepare_next_turn is None
            and config.should_stop_after_turn is None
        )
        self._llm_only = sole_writer and LLM_TYPES.issuperset(
            map(type, self.context.messages))
        if config.limits is not None:
            self._limits = LimitCounter(config.limits, config.output_type is not None)

    def execute(self, prompts: list[AgentMessage] | None) -> list[AgentMessage]:
        trace = start_trace(RunStart(self.model, self.context, prompts, self._halt.signal))
        if trace is None:
            return self._execute(prompts)
        self._trace, sink = trace, self.sink

        def traced(event: AgentEvent) -> None:
            trace.event(event)
            sink(event)

        self.sink = traced
        try:
            messages = self._execute(prompts)
        except BaseException as exc:
            trace.end(exc)
            raise
        trace.end(None)
        return messages

    def _execute(self, prompts: list[AgentMessage] | None) -> list[AgentMessage]:
        signal, halt = self.signal, self._halt
        unlink = signal.add_listener(lambda: halt.abort(signal.reason))
        early = True  # the run ends by an exception: tell the tools still running, wait a bit
        try:
            with in_flight(halt.abort):
                messages = self._loop(prompts)
            early = False
            return messages
        except _SinkError as wrapped:
            raise wrapped.original from None
        except Exception as exc:
            early = False
            _log.debug("agent loop failed", exc_info=True)
            return self._fail(exc)
        finally:
            unlink()
            if early:
                halt.abort("the run ended early")
            if self._pool is not None:  # a tool ignoring its abort is left behind, not waited for
                self._pool.shutdown(wait=early, timeout=ABORT_GRACE_S)

    def _loop(self, prompts: list[AgentMessage] | None) -> list[AgentMessage]:
        self._emit(AgentStartEvent())
        self._emit(TurnStartEvent())
        for message in prompts or ():
            self._add(message)
        pending = self._poll(self.config.get_steering_messages)
        first = True
        while True:
            more_tools = True
            while more_tools or pending:
                if not first:
                    if self._halt.signal.aborted:
                        return self._end()
                    self._emit(TurnStartEvent())
                first = False
                for message in pending:
                    if self._halt.signal.aborted:
                        break  # the rest stay with their owner (the Agent requeues them)
                    self._add(message)
                reply = self._reply()
                if reply.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
                    self._emit(TurnEndEvent(reply, []))
                    return self._end()
                results, terminate = self._run_tools(reply)
                self._emit(TurnEndEvent(reply, results))
                more_tools = bool(results) and not terminate
                nudge: list[AgentMessage] = []
                if self._output is not None:  # a run with an output_type (API §14)
                    verdict = self._output.after_turn(reply, results)
                    if verdict is Verdict.DONE:
                        return self._end()
                    if verdict is Verdict.FAILED:
                        return self._end_with_error(self._output.failure_text())
                    if verdict is Verdict.NUDGE:
                        nudge.append(self._output.nudge())
                if self._between_turns(reply, results) or self._halt.signal.aborted:
                    return self._end()
                pending = nudge + self._poll(self.config.get_steering_messages)
            pending = self._poll(self.config.get_follow_up_messages)
            if not pending:
                return self._end()

    def _reply(self) -> AssistantMessage:
        """Stream one assistant reply into the context and return the final message.

        With a `before_model_call` hook, a reply that ended in an error is offered to it; if
        the hook replaces the context (compaction after an overflow), the call is made again,
        once.
        """
        final = self._model_call(None)
        assert final is not None  # only a retry may be declined
        if (final.stop_reason == StopReason.ERROR and self.config.before_model_call is not None
                and not self._halt.signal.aborted):
            final = self._model_call(final) or final
        return final

    def _model_call(self, failed: AssistantMessage | None) -> AssistantMessage | None:
        """One model call, its reply streamed into the context; None if `failed` is not retried."""
        partial: AssistantMessage | None = None
        final: AssistantMessage | None = None
        hook = self.config.before_model_call
        limits = self._limits
        try:
            if self._halt.signal.aborted:
                final = self._error_reply(ABORTED_TEXT)
            elif failed is None and limits is not None and (
                    reached := limits.before_model_call(self.turns, self.new_messages)):
                final = self._error_reply(reached)
            elif hook is not None and not self._before_call(hook, failed):
                return None
            elif failed is not None and limits is not None and (
                    reached := limits.before_model_call(self.turns, self.new_messages)):
                final = self._error_reply(reached)
            else:
                for event in self._stream_events():
                    if isinstance(event, StartEvent):
                        partial = event.partial
                        self.context.messages.append(partial)
                        self._emit(MessageStartEvent(partial))
                    elif isinstance(event, DoneEvent):
                        final = event.message
                        break
                    elif isinstance(event, ErrorEvent):
                        final = event.error
                        break
                    elif partial is not None:
                        partial = event.partial
                        self.context.messages[-1] = partial
                        self._emit(MessageUpdateEvent(partial, event))
                if final is None:
                    raise RuntimeError("the model stream ended without a done or error event")
        except _SinkError:
            raise
        except Exception as exc:
            _log.debug("model call failed", exc_info=True)
            final = self._error_reply(describe(exc), partial.content if partial else [])
        assert final is not None
        if partial is not None:
            self.context.messages[-1] = final
        else:
            self.context.messages.append(final)
            self._emit(MessageStartEvent(final))
        self._emit(MessageEndEvent(final))
        self.new_messages.append(final)
        return final

    def _before_call(self, hook: BeforeModelCall, failed: AssistantMessage | None) -> bool:
        """Run `before_model_call`; False when it leaves the `failed` reply standing."""
        messages = self.context.messages
        if failed is not None and messages and messages[-1] is failed:
            messages = messages[:-1]
        call = BeforeModelCallContext(
            AgentContext(self.context.system_prompt, list(messages), list(self.context.tools)),
            self.model, self._call_options(), failed)
        replacement = hook(call, self._emit, self.signal)
        if replacement is None:
            return failed is None
        self.context.messages = list(replacement)  # validated: a list of messages
        if not LLM_TYPES.issuperset(map(type, self.context.messages)):
            self._llm_only = False
        return True

    def _stream_events(self) -> Iterator[AssistantMessageEvent]:
        config = self.config
        messages: list[AgentMessage] = list(self.context.messages)  # hooks get their own copy
        if self._llm_only:  # known plain: nothing to convert, nothing to check
            llm_messages: Sequence[Message] = cast("list[Message]", messages)
            make_context = Context.unchecked
        else:
            if config.transform_context is not None:
                messages = list(config.transform_context(messages, self.signal))
            if config.convert_to_llm is default_convert_to_llm:  # needs no second check
                llm_messages = default_convert_to_llm(messages)
                make_context = Context.unchecked
            else:
                llm_messages = list(config.convert_to_llm(messages))
                make_context = Context
        options = self._call_options()
        tools = list(self.context.tools) or None
        context = make_context(self.context.system_prompt, llm_messages, tools)  # type: ignore[arg-type]
        if self._trace is not None:
            self._trace.model_call(self.model, context)
        stream: Any = self.stream_fn(self.model, context, options)
        if isinstance(stream, EventStream):
            if stream.done():  # all there already (a scripted reply): nothing to wait for
                return iter(stream)
            return stream.iter_until(self._halt.signal, ABORT_GRACE_S)  # closes a reply cut short
        return iter(stream)

    def _call_options(self) -> StreamOptions:
        """The provider options of the next model call."""
        key = self.config.get_api_key(self.model.provider) if self.config.get_api_key else None
        wanted = (key or self.config.api_key, self.reasoning)
        if self._options is None or self._options_for != wanted:  # rebuilt only on a change
            self._options = self.config.stream_options(self.signal, *wanted)
            self._options_for = wanted
        return self._options

    def _run_tools(self, reply: AssistantMessage) -> tuple[list[ToolResultMessage], bool]:
        if not reply.tool_calls:
            return [], False
        if self._inbox is None:
            self._inbox = tool_inbox(self._halt.signal)
        batch = ToolBatch(reply, self.context, self.config, self.signal, self._emit,
                          self._get_executor, self._halt.signal, self._inbox,
                          self._trace.tool_work if self._trace is not None else None)
        if self._limits is not None and (reached := self._limits.before_tools(reply)):
            results, terminate = batch.refuse(reached), False  # the next model call is refused
        else:
            results, terminate = batch.run()
        self.context.messages.extend(results)
        self.new_messages.extend(results)
        return results, terminate

    def _between_turns(self, reply: AssistantMessage, results: list[ToolResultMessage]) -> bool:
        """Run the between-turn hooks; True when the run should stop now."""
        config = self.config
        if config.prepare_next_turn is not None:
            turn = PrepareNextTurnContext(reply, results, self.context, list(self.new_messages))
            update = config.prepare_next_turn(turn, self.signal)
            if isinstance(update, AgentLoopTurnUpdate):
                if update.context is not None:
                    self.context = update.context
                if update.model is not None:
                    self.model = update.model
                if update.thinking_level is not None:
                    self.reasoning = update.thinking_level
        if config.should_stop_after_turn is not None:
            turn = PrepareNextTurnContext(reply, results, self.context, list(self.new_messages))
            return bool(config.should_stop_after_turn(turn))
        return False

    def _poll(self, source: Callable[[], Sequence[AgentMessage]] | None) -> list[AgentMessage]:
        if source is None or self._halt.signal.aborted:
            return []
        return list(source() or ())

    def _add(self, message: AgentMessage) -> None:
        if type(message) not in LLM_TYPES:
            self._llm_only = False
        self._emit(MessageStartEvent(message))
        self._emit(MessageEndEvent(message))
        self.context.messages.append(message)
        self.new_messages.append(message)

    def _end(self) -> list[AgentMessage]:
        self._emit(AgentEndEvent(list(self.new_messages)))
        return self.new_messages

    def _fail(self, exc: Exception) -> list[AgentMessage]:
        """End the run with an error message for an exception from a hook or the loop."""
        return self._end_with_error(describe(exc))

    def _end_with_error(self, text: str) -> list[AgentMessage]:
        """End the run with an assistant message of `stop_reason` error saying `text`."""
        message = self._error_reply(text)
        try:
            if not self.turn_open:
                self._emit(TurnStartEvent())
            self._add(message)
            self._emit(TurnEndEvent(message, []))
            return self._end()
        except _SinkError as wrapped:
            raise wrapped.original from None

    def _error_reply(self, text: str, content: Sequence[AssistantContent] = ()) -> AssistantMessage:
        return error_reply(self.model, text, aborted=self._halt.signal.aborted, content=content)

    def _emit(self, event: AgentEvent) -> None:
        if isinstance(event, TurnStartEvent):
            self.turn_open = True
            self.turns += 1
        elif isinstance(event, TurnEndEvent):
            self.turn_open = False
        try:
            self.sink(event)
        except Exception as exc:
            raise _SinkError(exc) from exc

    def _get_executor(self) -> Submitter:
        if self._executor is None:
            if self.config.tool_executor is not None:
                self._executor = self.config.tool_executor
            else:
                self._executor = self._pool = WorkerPool()
        return self._executor


def _start(
    context: AgentContext,
    config: AgentLoopConfig,
    emit: EventSink,
    signal: AbortSignal | None,
    stream_fn: StreamFn | None,
) -> _Run:
    if not isinstance(context, AgentContext):
        raise TypeError(f"'context' must be an AgentContext, got {context!r}")
    if not isinstance(config, AgentLoopConfig):
        raise TypeError(f"'config' must be an AgentLoopConfig, got {config!r}")
    if not callable(emit):
        raise TypeError(f"'emit' must be callable, got {emit!r}")
    if cannot_take(emit, 1):
        raise TypeError(f"'emit' must accept 1 argument, emit(event); got {emit!r}")
    if signal is not None and not isinstance(signal, AbortSignal):
        raise TypeError(f"'signal' must be an AbortSignal or None, got {signal!r}")
    if stream_fn is not None and (not callable(stream_fn) or cannot_take(stream_fn, 3)):
        raise TypeError(f"'stream_fn' must be None or callable as stream_fn(model, context, "
                        f"options), got {stream_fn!r}")
    if stream_fn is None:
        from ..providers import stream as default_stream

        stream_fn = default_stream
    tools = list(context.tools)
    output = None
    if config.output_type is not None:
        output = OutputState.for_type(config.output_type, config.output_retries)
        if any(tool.name == output.tool.name for tool in tools):
            raise ValueError(f"a tool is named {output.tool.name!r}, the name of the tool "
                             "that gives the output of a run with an output_type")
        tools.append(output.tool)
    snapshot = AgentContext(context.system_prompt, list(context.messages), tools)
    run = _Run(snapshot, config, emit, signal or AbortController().signal, stream_fn)
    run._output = output
    return run


def _check_prompts(prompts: object) -> list[AgentMessage]:
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Iterable):
        raise TypeError(f"'prompts' must be a list of messages, got {prompts!r}")
    checked = list(prompts)
    for i, message in enumerate(checked):
        if not isinstance(getattr(message, "role", None), str):
            raise TypeError(f"'prompts[{i}]' must be a message with a 'role', got {message!r}")
    return checked


def _check_continue(context: AgentContext) -> None:
    if isinstance(context, AgentContext):
        if not context.messages:
            raise ValueError("cannot continue: 'context.messages' is empty")
        if isinstance(context.messages[-1], AssistantMessage):
            raise ValueError("cannot continue from an assistant message: "
                             "'context.messages' must end with a user or tool-result message")


def run_agent_loop(
    prompts: Iterable[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    emit: EventSink,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> list[AgentMessage]:
    """Run the agent on `prompts` until it is done; return the messages it added.

    Blocks the calling thread, which emits every event into `emit`. `context` is not mutated.
    `stream_fn` defaults to `agentcore.stream`.
    """
    checked = _check_prompts(prompts)
    return _start(context, config, emit, signal, stream_fn).execute(checked)


def run_agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    emit: EventSink,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> list[AgentMessage]:
    """Resume from a context ending in a user or tool-result message; return the new messages.

    Raises `ValueError` when the context is empty or ends with an assistant message.
    """
    _check_continue(context)
    return _start(context, config, emit, signal, stream_fn).execute(None)


def _in_background(
    run: _Run, prompts: list[AgentMessage] | None
) -> EventStream[AgentEvent, list[AgentMessage]]:
    """Start `run` on a new thread, feeding the stream returned.

    The thread holds the stream only weakly: a consumer that drops it (or calls `close()`)
    aborts the run instead of leaving it going with nobody listening.
    """
    halt = run._halt
    out: EventStream[AgentEvent, list[AgentMessage]] = EventStream(
        on_close=lambda: halt.abort("the stream was closed"))
    weakref.finalize(out, halt.abort, "the stream was dropped").atexit = False
    ref = weakref.ref(out)

    def sink(event: AgentEvent) -> None:
        stream = ref()
        if stream is not None:
            stream.push(event)

    def main() -> None:
        try:
            messages = run.execute(prompts)
        except BaseException as exc:
            if (stream := ref()) is not None:
                stream.fail(exc)
        else:
            if (stream := ref()) is not None:
                stream.end(messages)

    run.sink = sink
    threading.Thread(target=carry_context(main), name="agentcore-loop").start()
    return out


def agent_loop(
    prompts: Iterable[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> EventStream[AgentEvent, list[AgentMessage]]:
    """Start `run_agent_loop` on a background thread; iterate the returned stream for events.

    The stream always ends: its result is the list of new messages.
    """
    checked = _check_prompts(prompts)
    run = _start(context, config, lambda _: None, signal, stream_fn)
    return _in_background(run, checked)


def agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> EventStream[AgentEvent, list[AgentMessage]]:
    """Start `run_agent_loop_continue` on a background thread (same checks, raised at once)."""
    _check_continue(context)
    run = _start(context, config, lambda _: None, signal, stream_fn)
    return _in_background(run, None)
