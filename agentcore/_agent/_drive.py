"""How an `Agent` runs: the config and thread of each run, and the path of each event.

`start` (on the caller's thread, under the agent's lock) checks everything that can fail, marks
the agent busy with a new `AgentRun` and starts its thread; `prompt_here` runs one on the
calling thread instead. On the run's thread, `_main` runs the loop and `_handle` takes each
event to the agent's state, its session (`SessionWriter`; API §13), the run's log and the
listeners, in that order. These are the agent's own methods in all but name: they use its
private state, under its lock.
"""

from __future__ import annotations

import functools
import itertools
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .._core import (
    AbortController,
    AgentBusyError,
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AgentTool,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    Model,
    Session,
    TextContent,
    ToolResultMessage,
    TurnEndEvent,
    answer_interrupted,
    describe,
    error_reply,
    find_pause,
    unanswered_tool_calls,
)
from .._function_tools import output_tool
from .._loop import (
    AgentLoopConfig,
    OutputMode,
    carry_context,
    check_no_pause,
    check_run,
    in_flight,
    plan_resume,
    run_agent_loop,
)
from .._loop import run_agent_loop_continue as run_continue
from ..providers import StreamFn, require_api_key, speaks_http
from ._compact import auto_compactor
from ._input import prompt_messages
from ._run import AgentRun

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = ["NO_OUTPUT", "Output", "SessionWriter", "continue_here", "load_transcript",
           "prompt_here", "start"]

_log = logging.getLogger(__name__)
_session_log = logging.getLogger("agentcore.sessions")
_run_numbers = itertools.count(1)


@attrs.frozen
class Output:
    """What a prompt asks for its answer: `output_type`, `output_retries`, `output_mode`."""

    type: Any = None
    retries: int = 2
    mode: OutputMode = "tool"


NO_OUTPUT = Output()


def start(agent: Agent, prompts: list[AgentMessage] | None, skip_first_steering: bool,
          output: Output = NO_OUTPUT, approvals: dict[str, bool | str] | None = None,
          ) -> AgentRun:
    """Start a run of `agent` on its own thread (under the agent's lock).

    `approvals` decide the calls a `continue_` run resumes with (API §20).
    """
    run, main = _prepare(agent, prompts, skip_first_steering, output, approvals=approvals)
    try:
        run.start(main, name=f"agentcore-run-{next(_run_numbers)}")
    except BaseException:  # no thread to be had: the agent stays idle and usable
        agent._run = None
        agent._live.end()
        raise
    return run


def prompt_here(agent: Agent, input: str | AgentMessage | Sequence[AgentMessage], *,
                output_type: Any = None, output_mode: OutputMode = "tool",
                on_start: Callable[[AgentRun], object] = lambda run: None,
                http_session: Any = None) -> AgentRun:
    """`agent.prompt(input, output_type=..., output_mode=...)` run to its end on this thread.

    For pools that already give each run a thread of its own (`run_batch`, its only user): the
    run needs no thread start, which under load costs more than the rest of starting a run.
    `on_start` gets the run before it begins (to abort it from elsewhere); `http_session` (a
    batch's shared one) serves the run if the agent has no session of its own. Raises what
    `prompt` raises.
    """
    agent._check_open()
    prompts = prompt_messages(input, None)
    return _run_here(agent, prompts, Output(output_type, 2, output_mode), on_start,
                     http_session, None)


def continue_here(agent: Agent, approvals: dict[str, bool | str], *, output_type: Any = None,
                  output_mode: OutputMode = "tool",
                  on_start: Callable[[AgentRun], object] = lambda run: None,
                  http_session: Any = None) -> AgentRun:
    """`agent.continue_(approvals=...)` run to its end on this thread (see `prompt_here`).

    The batch's resume of a run that stopped for approval (`resume_batch`, its only user):
    unlike `continue_`, the resumed run keeps the batch's `output_type` and `output_mode`.
    Raises what `continue_` raises for `approvals`.
    """
    agent._check_open()
    if not agent.messages:
        raise ValueError("cannot continue: the agent has no messages")
    return _run_here(agent, None, Output(output_type, 2, output_mode), on_start, http_session,
                     approvals)


def _run_here(agent: Agent, prompts: list[AgentMessage] | None, output: Output,
              on_start: Callable[[AgentRun], object], http_session: Any,
              approvals: dict[str, bool | str] | None) -> AgentRun:
    with agent._lock:
        if agent._run is not None:
            raise AgentBusyError("the agent is already processing a prompt")
        run, main = _prepare(agent, prompts, False, output, http_session, approvals)
    try:
        on_start(run)
    finally:  # the agent is marked busy: only the run's own end makes it idle again
        run.run_here(main, name=f"agentcore-run-{next(_run_numbers)}")
    return run


def _prepare(agent: Agent, prompts: list[AgentMessage] | None, skip_first_steering: bool,
             output: Output, http_session: Any = None,
             approvals: dict[str, bool | str] | None = None,
             ) -> tuple[AgentRun, Callable[[], None]]:
    """Mark `agent` busy with a new run (under its lock); return the run and its main.

    Everything that can fail comes before. `http_session` serves the run when the agent has
    none of its own; without either, the run shares the process's HTTP client.
    """
    agent._check_open()
    loop, stream_fn = agent._loop, agent.stream_fn
    http = stream_fn is None and speaks_http(loop.model.api)
    if http and loop.get_api_key is None:  # a missing key raises here, not in the run
        require_api_key(loop.model.provider, loop.api_key, base_url=loop.model.base_url)
    session = loop.http_session or http_session  # None: the process's shared HTTP client
    config = _config(agent, loop, skip_first_steering, output, session)
    context = AgentContext(agent.system_prompt, list(agent.messages), list(agent.tools))
    check_run(config, config.model, context.tools)  # raises here, not in the run
    if prompts is None:  # calls waiting for approval: decided by `approvals` or `approve`
        plan_resume(context, config.approve, approvals)
    else:
        check_no_pause(context)
    run = AgentRun(AbortController(), max_events=agent.max_events)
    if config.output_mode == "native":
        run._native = output_tool(config.output_type)
    agent._run = run
    agent._live.begin()
    return run, carry_context(lambda: _main(agent, run, prompts, context, config, stream_fn,
                                            approvals))


def _config(agent: Agent, loop: AgentLoopConfig, skip_first_steering: bool, output: Output,
            http_session: Any) -> AgentLoopConfig:
    """`loop` with the parts that belong to one run: queues, compaction, output, session."""
    skip = [skip_first_steering]

    def steering() -> list[AgentMessage]:
        if skip[0]:
            skip[0] = False
            return []
        return agent._steering.take(agent.steering_mode)

    def follow_ups() -> list[AgentMessage]:
        return agent._follow_up.take(agent.follow_up_mode)

    compact = None if agent.auto_compact is None else auto_compactor(
        agent.auto_compact, agent.stream_fn, functools.partial(_replace_transcript, agent))
    return attrs.evolve(loop, get_steering_messages=steering, get_follow_up_messages=follow_ups,
                        before_model_call=compact, output_type=output.type,
                        output_retries=output.retries, output_mode=output.mode,
                        http_session=http_session)


def _replace_transcript(agent: Agent, messages: list[AgentMessage]) -> None:
    """Compaction's write, on the run's thread: the session first, so a failure keeps both."""
    if agent._writer is not None:
        agent._writer.replace(messages)
    with agent._lock:
        agent.messages[:] = messages  # in place: the setter refuses while a run is active


def _main(agent: Agent, run: AgentRun, prompts: list[AgentMessage] | None,
          context: AgentContext, config: AgentLoopConfig, stream_fn: StreamFn | None,
          approvals: dict[str, bool | str] | None) -> None:
    messages: list[AgentMessage] = []
    with in_flight(lambda _reason: run.abort()):  # Ctrl-C at exit aborts it (API §11)
        try:
            emit = functools.partial(_handle, agent, run)
            if prompts is None:
                messages = run_continue(context, config, emit, run.signal, stream_fn,
                                        approvals=approvals)
            else:
                messages = run_agent_loop(prompts, context, config, emit, run.signal, stream_fn)
        except BaseException as exc:  # the loop itself broke: report it as the run's failure
            _log.exception("agent run failed")
            messages = _fail(agent, run, config.model, exc)
        finally:
            with agent._lock:
                agent._steering.restore()
                agent._follow_up.restore()
                agent._live.end()
                agent._run = None
                transcript = list(agent.messages)
                agent._paused_output = None if config.output_type is None or not transcript \
                    else (transcript[-1], Output(config.output_type, config.output_retries,
                                                 config.output_mode))
            pause = find_pause(transcript, context.tools)  # outside the lock: user rules run
            run.finish(messages, None if pause is None else pause.calls)


def _fail(agent: Agent, run: AgentRun, model: Model, exc: BaseException) -> list[AgentMessage]:
    text = describe(exc)
    failure = error_reply(model, text, aborted=run.signal.aborted)
    with agent._lock:  # the calls the broken run left without a result get one now
        unanswered = unanswered_tool_calls(agent.messages)
    added: list[AgentMessage] = [
        *(ToolResultMessage(c.id, c.name, [TextContent(f"Tool call interrupted: {text}")],
                            is_error=True) for c in unanswered),
        failure,
    ]
    for message in added:
        _handle(agent, run, MessageStartEvent(message))
        _handle(agent, run, MessageEndEvent(message))
    _handle(agent, run, TurnEndEvent(failure, []))
    _handle(agent, run, AgentEndEvent(added))
    return added


def _handle(agent: Agent, run: AgentRun, event: AgentEvent) -> None:
    """Apply `event` to the state, log it on the run, then call the listeners.

    A `message_update` (most events by far) changes only the streaming message: one
    reference, written without the lock (a snapshot sees it before or after, both states the
    run went through).
    """
    if event.__class__ is MessageUpdateEvent:
        agent._live.streaming_message = event.message
    else:
        with agent._lock:
            started, ended = agent._live.apply(event)
            if started is not None and not agent._steering.accept(started):
                agent._follow_up.accept(started)
            if ended is not None:
                agent.messages.append(ended)
        if ended is not None and agent._writer is not None:
            agent._writer.save(ended, lambda: agent.state.messages)  # durable before heard
    run.publish(event)
    listeners = agent._listeners
    if listeners:
        signal = run.signal
        for listener in listeners:
            try:
                listener(event, signal)
            except Exception:
                _log.exception("agent listener %r raised on %s", listener, event.type)


def load_transcript(session: Session, check: Callable[[list[AgentMessage]], None],
                    tools: Sequence[AgentTool]) -> list[AgentMessage]:
    """The session's transcript, checked by `check`, its interrupted tool calls answered.

    The answers (error results saying the process ended) are stored in the session too, so
    that the transcript it holds can be continued at once. Calls waiting for approval (by
    `tools`' rules; API §20) were never interrupted: none of their batch ran, and they stay
    pending.
    """
    loaded = session.load()
    check(loaded)
    if find_pause(loaded, tools) is not None:
        return loaded
    repaired = answer_interrupted(loaded)
    if len(repaired) != len(loaded):
        _session_log.warning("%r: %d tool call(s) of the last run never got a result; they get "
                             "an 'interrupted' error result (a denied one, its denial)", session,
                             len(repaired) - len(loaded))
        if repaired[:len(loaded)] == loaded:
            session.append(repaired[len(loaded):])
        else:
            session.replace(repaired)
    return repaired


class SessionWriter:
    """Appends each message of an agent's runs to its session; never raises.

    A failed append is logged at ERROR on `agentcore.sessions` and leaves the session behind
    the transcript: the next message then replaces the session's transcript with the whole of
    it instead (until that succeeds), so the session never keeps a gap. Used on the run's
    thread only, one run at a time.
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        self._behind = False

    def save(self, message: AgentMessage, transcript: Callable[[], list[AgentMessage]]) -> None:
        """Store `message`, the last of `transcript()` (called only to catch up after a failure)."""
        try:
            if self._behind:
                self.replace(transcript())
            else:
                self.session.append([message])
        except Exception:
            self._behind = True
            _session_log.exception("%r: could not save a %r message; it stays in the agent's "
                                   "messages, and the run goes on", self.session, message.role)

    def replace(self, messages: list[AgentMessage]) -> None:
        """Replace the session's transcript by `messages` (raises what the session raises)."""
        self.session.replace(messages)
        self._behind = False
