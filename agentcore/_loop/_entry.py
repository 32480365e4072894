"""The loop's entry points: `run_agent_loop` blocks the caller; `agent_loop` streams its events.

Each checks its arguments on the caller's thread, raising at once (`check_run`: the tool
choice and the output settings against the run's tools and model), and gives a `Run` its own
snapshot of the context. `agent_loop` runs it on a new thread behind an `EventStream`, which
the thread holds only weakly: a consumer that closes the stream or drops it aborts the run,
the provider's request included, instead of leaving it going with nobody listening.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable

from .._core import (
    AbortController,
    AbortSignal,
    AgentContext,
    AgentEvent,
    AgentMessage,
    AssistantMessage,
    EventSink,
    EventStream,
    cannot_take,
    check_messages,
)
from .._function_tools import output_tool
from ..providers import StreamFn, stream
from ._approvals import check_no_pause, plan_resume
from ._config import AgentLoopConfig
from ._loop import Run
from ._observe import carry_context
from ._output import OutputState, check_run

__all__ = ["agent_loop", "agent_loop_continue", "run_agent_loop", "run_agent_loop_continue"]


_PROMPT = object()  # `_start`'s `approvals` for a run on new prompts


def _start(context: AgentContext, config: AgentLoopConfig, emit: EventSink,
           signal: AbortSignal | None, stream_fn: StreamFn | None, detached: bool = False,
           approvals: object = _PROMPT) -> Run:
    """Check the arguments and make the run; `approvals` is a `*_continue` run's (or None)."""
    if not isinstance(context, AgentContext):
        raise TypeError(f"'context' must be an AgentContext, got {context!r}")
    if not isinstance(config, AgentLoopConfig):
        raise TypeError(f"'config' must be an AgentLoopConfig, got {config!r}")
    if not callable(emit) or cannot_take(emit, 1):
        raise TypeError(f"'emit' must be callable as emit(event), got {emit!r}")
    if signal is not None and not isinstance(signal, AbortSignal):
        raise TypeError(f"'signal' must be an AbortSignal or None, got {signal!r}")
    if stream_fn is not None and (not callable(stream_fn) or cannot_take(stream_fn, 3)):
        raise TypeError(f"'stream_fn' must be None or callable as stream_fn(model, context, "
                        f"options), got {stream_fn!r}")
    if stream_fn is None:
        stream_fn = stream
    tools = list(context.tools)
    check_run(config, config.model, tools)
    output = None
    if config.output_type is not None:
        native = config.output_mode == "native"
        output = OutputState(output_tool(config.output_type), config.output_retries, native)
        if not native:
            tools.append(output.tool)
    snapshot = AgentContext(context.system_prompt, list(context.messages), tools)
    resume = None
    if approvals is _PROMPT:
        check_no_pause(snapshot)
    else:
        resume = plan_resume(snapshot, config.approve, approvals)
        if resume is None and isinstance(snapshot.messages[-1], AssistantMessage):
            raise ValueError("cannot continue from an assistant message: 'context.messages' "
                             "must end with a user or tool-result message, or with tool "
                             "calls waiting for approval")
    return Run(snapshot, config, emit, signal or AbortController().signal, stream_fn, output,
               detached, resume)


def _check_continue(context: AgentContext) -> None:
    if isinstance(context, AgentContext) and not context.messages:
        raise ValueError("cannot continue: 'context.messages' is empty")


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
    `stream_fn` defaults to `agentcore.stream`. Raises `ValueError` before the run for a
    `tool_choice` naming no tool of the run, or `output_mode="native"` with a model that
    cannot give native output, and when the context's last tool calls wait for approval
    (resume them with `run_agent_loop_continue(approvals=...)` first).
    """
    checked = check_messages("prompts", prompts)
    return _start(context, config, emit, signal, stream_fn).execute(checked)


def run_agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    emit: EventSink,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
    *,
    approvals: dict[str, bool | str] | None = None,
) -> list[AgentMessage]:
    """Resume from a context ending in a user or tool-result message; return the new messages.

    A context whose last tool calls wait for approval (API §20) resumes with them: `approvals`
    (call id → True, False or a denial's reason) must decide every waiting call, or, without
    it, the config's `approve` is asked. Raises `ValueError` when the context is empty, ends
    with an assistant message that waits for nothing, when calls wait and nothing decides
    them, or when `approvals` names a call that does not wait or leaves one undecided.
    """
    _check_continue(context)
    return _start(context, config, emit, signal, stream_fn, approvals=approvals).execute(None)


def _in_background(
    run: Run, prompts: list[AgentMessage] | None,
) -> EventStream[AgentEvent, list[AgentMessage]]:
    """Start the `detached` `run` on a new thread, feeding the stream returned."""
    halt = run.halt
    out: EventStream[AgentEvent, list[AgentMessage]] = EventStream(
        on_close=lambda: halt.abort("the stream was closed"))
    weakref.finalize(out, halt.abort, "the stream was dropped").atexit = False
    ref = weakref.ref(out)

    def sink(event: AgentEvent) -> None:
        if (stream := ref()) is not None:
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

    The stream always ends: its result is the list of new messages. Closing or dropping it
    aborts the run: the provider's request, the hooks' and the tools' signals (never `signal`).
    """
    checked = check_messages("prompts", prompts)
    return _in_background(_start(context, config, lambda _: None, signal, stream_fn, True), checked)


def agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
    *,
    approvals: dict[str, bool | str] | None = None,
) -> EventStream[AgentEvent, list[AgentMessage]]:
    """Start `run_agent_loop_continue` on a background thread (same checks, raised at once)."""
    _check_continue(context)
    run = _start(context, config, lambda _: None, signal, stream_fn, True, approvals)
    return _in_background(run, None)
