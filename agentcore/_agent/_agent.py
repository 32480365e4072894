"""`Agent`: runs the loop on a background thread and keeps the transcript between runs.

Threading: every public method may be called from any thread, including listeners and tools.
A run's events reach the state, then the run's event log, then the listeners, all on the run's
own (non-daemon) thread. State lives behind one lock, never held while user code runs.

The class is whole here, its run side included (how a run starts, what each event does to the
state, how a run ends): no other module touches its private state. `prompt_here` and
`continue_here` run one on the calling thread, for `run_batch`.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

import attrs
from attrs.validators import and_, ge

from .._core import (
    NESTING,
    OPTION,
    AbortController,
    AbortSignal,
    AgentBusyError,
    AgentClosedError,
    AgentContext,
    AgentEvent,
    AgentMessage,
    AgentTool,
    AssistantMessage,
    CacheRetention,
    ChildPauses,
    CircuitBreaker,
    FlatAlias,
    HandoffEvent,
    ImageContent,
    MessageUpdateEvent,
    Model,
    Nesting,
    OnPayload,
    OnResponse,
    QueueMode,
    Session,
    StreamOptions,
    ThinkingLevel,
    ToolCall,
    ToolExecutionMode,
    Transport,
    UsageLimits,
    cannot_take,
    find_pause,
    flat_fields,
    list_of_messages,
    member_of,
    optional_instance_of,
    strict_int,
    string,
    takes,
    to_queue_mode,
    to_thinking_level,
    unanswered_tool_calls,
    wait_seconds,
)
from .._function_tools import output_tool
from .._loop import (
    AfterToolCall,
    AgentLoopConfig,
    Approve,
    BeforeToolCall,
    ConvertToLlm,
    FallbackOn,
    GetApiKey,
    InputGuardrail,
    OutputGuardrail,
    OutputMode,
    PrepareNextTurn,
    ShouldStopAfterTurn,
    TransformContext,
    carry_context,
    check_no_pause,
    check_run,
    handed_to,
    in_flight,
    plan_resume,
)
from ..providers import StreamFn, require_api_key, speaks_http
from ._compact import CompactionSettings, auto_compactor
from ._drive import NO_OUTPUT, Listener, Output, drive, notify, run_name
from ._input import (
    agent_name,
    agent_tools,
    as_message,
    copy_list,
    message_list,
    prompt_messages,
    tool_list,
)
from ._live import AgentState, LiveState
from ._queue import MessageQueue
from ._run import MAX_EVENTS, AgentRun
from ._subagent import DEFAULT_MAX_DEPTH, agent_tool
from ._transcript import SessionWriter, load_transcript, open_transcript

if TYPE_CHECKING:
    import requests

    from .._core import HttpClientLike

__all__ = ["Agent", "AgentState", "continue_here", "prompt_here"]

Adjust = Callable[[AgentLoopConfig], AgentLoopConfig]
"""Changes a batch makes to the config of each of its runs (`prompt_here`)."""

DEFAULT_LIMITS = UsageLimits(max_model_calls=50)
"""An `Agent`'s usage limits unless it is given others: a runaway model stops at 50 calls."""


def _idle_only(agent: Agent, attribute: attrs.Attribute[Any], value: Any) -> Any:
    if agent._run is not None:
        raise AgentBusyError(f"cannot set '{attribute.name}' while the agent is running")
    return value


def _replace_session(agent: Agent, _: attrs.Attribute[Any], value: Any) -> Any:
    """On-setattr hook of `messages`: a new transcript replaces the session's too."""
    if agent._writer is not None:
        with agent._writer.held(agent.lease_timeout):
            agent._writer.replace(value)
    return value


_THINKING_LEVEL: Any = FlatAlias("reasoning", converter=to_thinking_level,
                                 validator=member_of(ThinkingLevel), none=ThinkingLevel.OFF)
"""`Agent.thinking_level`: the agent's name for its `reasoning` option (None reads as OFF)."""
_setters = attrs.setters.pipe(attrs.setters.convert, attrs.setters.validate)
_KEEP = attrs.setters.NO_OP


@attrs.define(eq=False, repr=False, on_setattr=_setters)
@flat_fields(AgentLoopConfig, via="_loop", positional=("model",),
             defaults={"limits": DEFAULT_LIMITS})
class Agent:
    """An agent: a model, tools and a transcript, with runs on a background thread.

    Start a run with `prompt` or `continue_`; each returns an `AgentRun` at once. `model` may
    come first; every other argument is a keyword. The loop's settings (hooks, tool settings,
    `limits`, `options` and each provider option) are one `AgentLoopConfig` each run starts
    from, read and set as attributes of the agent (validated as the config validates them);
    `thinking_level` is its name for the `reasoning` option. Settings apply from the next run;
    the queues (`steer`, `follow_up`) are read live. `limits` defaults to
    `UsageLimits(max_model_calls=50)` (None: no bound); `max_events` bounds the events a run
    keeps (see `AgentRun`); `auto_compact` (`CompactionSettings`) compacts the transcript
    within a run when it would outgrow the context window (see `agentcore.compaction`).
    `prompt`/`continue_` raise `MissingApiKeyError` before a run when the provider needs a key
    and none is given or set in the environment. Tools with `requires_approval` make a run
    ask `approve(tool_call, tool)`, or, without it, stop with the calls in
    `state.pending_approvals` until `continue_(approvals=...)` decides them (API §20).

    `session` (fixed once constructed; API §13) stores the transcript: it is loaded here, its
    interrupted tool calls answered (calls waiting for approval by the rules of the `tools`
    given here are not interrupted: they stay pending), and each message is appended when its
    `message_end` is processed, before iterators and listeners see it. Assigning `messages`
    replaces the session's transcript, `reset()` clears it; a failed append is logged at ERROR on
    `agentcore.sessions`, the run goes on, and the next message rewrites the session whole.
    Tool calls' idempotency keys derive from the session's identity, and its journal (API §24;
    `_transcript`) tells the repair which calls finished. With a session that has a lease
    (`SqliteSession`, `PostgresSession`; API §27) one agent at a time drives it: each run
    holds the lease, first loading what other agents stored meanwhile; another agent's
    `prompt`, `continue_`, `reset()` or `messages =` raises `SessionBusyError` (after waiting
    `lease_timeout` seconds, holding this agent's lock), and one opening the session while
    another runs loads it without repairing. The agent never closes its session. `name`
    names it in events, traces and as a tool (`as_tool`; API §25). Threading: see above.
    """

    model: Model
    system_prompt: str = attrs.field(default="", validator=string, kw_only=True)
    thinking_level: ThinkingLevel = _THINKING_LEVEL
    tools: list[AgentTool] = attrs.field(
        default=(), converter=tool_list, validator=agent_tools, kw_only=True,
        on_setattr=attrs.setters.pipe(copy_list, attrs.setters.convert, attrs.setters.validate),
    )
    messages: list[AgentMessage] = attrs.field(
        default=(), converter=message_list, validator=list_of_messages, kw_only=True,
        on_setattr=attrs.setters.pipe(_idle_only, copy_list, attrs.setters.validate,
                                      _replace_session),
    )
    steering_mode: QueueMode = attrs.field(default=QueueMode.ONE_AT_A_TIME, kw_only=True,
                                           converter=to_queue_mode,
                                           validator=member_of(QueueMode))
    follow_up_mode: QueueMode = attrs.field(default=QueueMode.ONE_AT_A_TIME, kw_only=True,
                                            converter=to_queue_mode,
                                            validator=member_of(QueueMode))
    stream_fn: StreamFn | None = attrs.field(
        default=None, validator=takes("model", "context", "options", optional=True),
        kw_only=True)
    auto_compact: CompactionSettings | None = attrs.field(
        default=None, validator=optional_instance_of(CompactionSettings), kw_only=True)
    max_events: int = attrs.field(default=MAX_EVENTS, validator=and_(strict_int, ge(1)),
                                  kw_only=True)
    session: Session | None = attrs.field(
        default=None, validator=optional_instance_of(
            Session, expected="a Session (load, append, replace, clear, session_ids)"),
        kw_only=True, on_setattr=attrs.setters.frozen)
    name: str = attrs.field(default="agent", validator=agent_name, kw_only=True)
    lease_timeout: float = attrs.field(default=0.0, validator=wait_seconds, kw_only=True)
    convert_to_llm: ConvertToLlm = OPTION
    transform_context: TransformContext | None = OPTION
    get_api_key: GetApiKey | None = OPTION
    tool_execution: ToolExecutionMode = OPTION
    tool_executor: Executor | None = OPTION
    tool_timeout: float | None = OPTION
    deps: Any = OPTION
    limits: UsageLimits | None = OPTION
    fallback_models: list[Model] = OPTION
    fallback_on: FallbackOn | None = OPTION
    circuit_breaker: CircuitBreaker | None = OPTION
    input_guardrails: list[InputGuardrail] = OPTION
    output_guardrails: list[OutputGuardrail] = OPTION
    before_tool_call: BeforeToolCall | None = OPTION
    approve: Approve | None = OPTION
    after_tool_call: AfterToolCall | None = OPTION
    prepare_next_turn: PrepareNextTurn | None = OPTION
    should_stop_after_turn: ShouldStopAfterTurn | None = OPTION
    options: StreamOptions = OPTION
    on_payload: OnPayload | None = OPTION
    on_response: OnResponse | None = OPTION
    session_id: str | None = OPTION
    thinking_budgets: dict[str, int] | None = OPTION
    transport: Transport = OPTION
    max_retry_delay_ms: int | None = OPTION
    api_key: str | None = OPTION
    max_tokens: int | None = OPTION
    temperature: float | None = OPTION
    cache_retention: CacheRetention | None = OPTION
    headers: dict[str, str] | None = OPTION
    metadata: dict[str, Any] | None = OPTION
    max_retries: int | None = OPTION
    timeout: float | None = OPTION
    http_session: requests.Session | None = OPTION
    http_client: HttpClientLike | None = OPTION
    max_event_bytes: int = OPTION
    tool_choice: str | None = OPTION
    reset_tool_choice: bool = OPTION

    # Private state: never converted or validated on assignment (`_KEEP`); see the docstring.
    _loop: AgentLoopConfig = attrs.field(init=False, on_setattr=_KEEP)  # set by flat_fields
    _lock: threading.RLock = attrs.field(init=False, factory=threading.RLock, on_setattr=_KEEP)
    _steering: MessageQueue = attrs.field(init=False, on_setattr=_KEEP)
    _follow_up: MessageQueue = attrs.field(init=False, on_setattr=_KEEP)
    # Replaced, never changed in place: a run reads it once an event, without the lock
    _listeners: tuple[Listener, ...] = attrs.field(init=False, default=(), on_setattr=_KEEP)
    _run: AgentRun | None = attrs.field(init=False, default=None, on_setattr=_KEEP)
    _live: LiveState = attrs.field(init=False, factory=LiveState, on_setattr=_KEEP)
    _closed: bool = attrs.field(init=False, default=False, on_setattr=_KEEP)
    _writer: SessionWriter | None = attrs.field(init=False, default=None, on_setattr=_KEEP)
    # The reply a run with an output type ended on, and that output: a resume of its paused
    # calls (API §20) answers in the same type
    _paused_output: tuple[AgentMessage, Output] | None = attrs.field(
        init=False, default=None, on_setattr=_KEEP)
    _active: Agent | None = attrs.field(init=False, default=None, on_setattr=_KEEP)  # handoffs
    _children: ChildPauses = attrs.field(init=False, factory=ChildPauses, on_setattr=_KEEP)

    def __attrs_post_init__(self) -> None:
        self._steering = MessageQueue(self._lock)
        self._follow_up = MessageQueue(self._lock)
        if self.session is not None:
            if self.messages:
                raise ValueError("give 'messages' or 'session', not both: the agent loads its "
                                 "transcript from the session")
            self._children = ChildPauses(getattr(self.session, "child", None))
            self.messages.extend(self._load(open_transcript))
            self._writer = SessionWriter(self.session)

    def _load(self, opener: Callable[..., list[AgentMessage]]) -> list[AgentMessage]:
        """The session's transcript by `opener` (`open_transcript` or `load_transcript`)."""
        check = functools.partial(list_of_messages, self, attrs.fields(Agent).messages)
        self._children.clear()
        return opener(self.session, check, self.active_agent.tools, self._children, self.name)

    def _claimed(self) -> contextlib.AbstractContextManager[None]:
        """The session's lease, taken for a run (see `SessionWriter.claimed`; API §27)."""
        if self._writer is None:
            return contextlib.nullcontext()

        def reload() -> None:
            self.messages[:] = self._load(load_transcript)  # in place: no setter

        return self._writer.claimed(self.lease_timeout, reload)

    def __repr__(self) -> str:
        busy = "running" if self._run is not None else "idle"
        model = f"{self.model.provider}/{self.model.id}"
        return f"<Agent {model} {busy}, {len(self.messages)} messages>"

    @property
    def state(self) -> AgentState:
        """A consistent snapshot of the agent's state."""
        with self._lock:
            live = self._live
            tools, messages = list(self.tools), list(self.messages)
            judge = tools if self._active is None else list(self._active.tools)  # its calls
            state = AgentState(self.system_prompt, self.model, self.thinking_level, tools,
                               messages, live.is_streaming, live.snapshot_message(),
                               live.pending, live.error_message)
        pause = find_pause(messages, judge)  # outside the lock: it runs requires_approval
        waiting = [*(pause.calls if pause else ()), *self._children.pending()]
        return attrs.evolve(state, pending_approvals=waiting) if waiting else state

    @property
    def signal(self) -> AbortSignal | None:
        """The active run's abort signal, or None when idle."""
        run = self._run
        return run.signal if run is not None else None

    @property
    def active_agent(self) -> Agent:
        """The agent answering the next prompt: this one until a run hands off (see `_handoff`)."""
        return self._active or self

    @active_agent.setter
    def active_agent(self, agent: Agent) -> None:
        if not isinstance(agent, Agent):
            raise TypeError(f"'active_agent' must be an Agent, got {agent!r}")
        with self._lock:
            if self._run is not None:
                raise AgentBusyError("cannot set 'active_agent' while the agent is running")
            self._active = None if agent is self else agent

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener(event, signal)` for every event of every run; returns unsubscribe.

        Listeners run on the run's thread after the state was updated for the event, in
        subscription order. One that raises is logged and skipped.
        """
        if not callable(listener):
            raise TypeError(f"subscribe: 'listener' must be callable, got {listener!r}")
        if cannot_take(listener, 2):
            raise TypeError(f"subscribe: 'listener' must accept 2 arguments, "
                            f"listener(event, signal); got {listener!r}")
        with self._lock:
            if not any(existing is listener for existing in self._listeners):
                self._listeners = (*self._listeners, listener)

        def unsubscribe() -> None:
            with self._lock:
                self._listeners = tuple(x for x in self._listeners if x is not listener)

        return unsubscribe

    def steer(self, message: str | AgentMessage) -> None:
        """Queue a message for the model to see before its next turn."""
        self._check_open()
        self._steering.put(as_message(message, "message"))

    def follow_up(self, message: str | AgentMessage) -> None:
        """Queue a message to run once the agent would otherwise stop."""
        self._check_open()
        self._follow_up.put(as_message(message, "message"))

    def has_queued_messages(self) -> bool:
        """Whether either queue holds a message (in-flight ones included)."""
        return bool(self._steering) or bool(self._follow_up)

    def clear_steering_queue(self) -> None:
        """Drop every queued steering message.

        A message the run has already taken for its next turn is still delivered (it is not
        put back if the run ends first).
        """
        self._steering.clear()

    def clear_follow_up_queue(self) -> None:
        """Drop every queued follow-up message (see `clear_steering_queue`)."""
        self._follow_up.clear()

    def clear_all_queues(self) -> None:
        """Drop every queued message (see `clear_steering_queue`)."""
        self._steering.clear()
        self._follow_up.clear()

    def prompt(
        self, input: str | AgentMessage | Sequence[AgentMessage],
        images: Sequence[ImageContent] | None = None,
        *, output_type: Any = None, output_retries: int = 2, output_mode: OutputMode = "tool",
    ) -> AgentRun:
        """Start a run on `input` (a str, a message or a list of messages) and return it.

        With `output_type` (an attrs class, a dataclass, a `TypedDict`, a primitive, an enum, a
        `Literal`, or containers of them) the model answers through a `final_result` tool and
        `run.output` is that answer; `output_retries` invalid answers (default 2) are sent back
        before the run ends in error (API §14). `output_mode="native"` asks the model for the
        answer as its reply's JSON text instead (API §18). Raises `AgentClosedError` once the
        agent is closed (checked first), `AgentBusyError` while a run is active, `TypeError`
        for an unsupported type, `ValueError` for a `tool_choice` naming no tool of the run or
        a model without native output, and `ValueError` while tool calls wait for approval
        (decide them first: `continue_(approvals=...)`).
        """
        self._check_open()
        prompts = prompt_messages(input, images)
        with self._lock:
            if self._run is not None:
                raise AgentBusyError("the agent is already processing a prompt; use steer() or "
                                     "follow_up() to queue messages, or wait for completion")
            with self._claimed():
                return self._start(prompts, False,
                                   Output(output_type, output_retries, output_mode))

    async def prompt_async(
        self, input: str | AgentMessage | Sequence[AgentMessage],
        images: Sequence[ImageContent] | None = None,
        *, output_type: Any = None, output_retries: int = 2, output_mode: OutputMode = "tool",
    ) -> AgentRun:
        """`prompt`, awaited: start a run on `input` and return it once it has ended.

        The run goes on its background thread as with `prompt`; awaiting it never blocks the
        event loop (see `AgentRun.wait_async`). Cancelling the awaiting task aborts the run,
        as nothing else holds it; the agent is idle again once the run's thread has ended.
        Raises what `prompt` raises.
        """
        run = self.prompt(input, images, output_type=output_type, output_retries=output_retries,
                          output_mode=output_mode)
        try:
            await run.wait_async()
        except BaseException:  # cancelled (or interrupted): stop the run nobody will await
            run.abort()
            raise
        return run

    def continue_(self, *, approvals: dict[str, bool | str] | None = None) -> AgentRun:
        """Resume from the transcript.

        When tool calls wait for approval (`state.pending_approvals`; API §20), `approvals`
        decides every one of them (call id → `True`, `False`, or a denial's reason) and the
        batch runs: approved calls run, denied ones get the error result `denied: <reason>`.
        Without `approvals` the agent's `approve` callback is asked, if it has one. A batch
        that paused a `prompt(..., output_type=T)` run resumes with that output type, when this
        agent ran it (`run.output` is then a `T`).
        Otherwise, after an assistant message it first takes queued steering, else a
        follow-up, else raises `ValueError`. Raises `AgentClosedError` once the agent is
        closed (before anything else), `AgentBusyError` while running, `ValueError` when
        empty, when calls wait and nothing decides them, and when `approvals` is given with
        nothing waiting, names a call that does not wait or leaves one undecided.
        """
        with self._lock:
            self._check_open()
            if self._run is not None:
                raise AgentBusyError("the agent is already processing; wait for completion "
                                     "before continuing")
            with self._claimed():
                return self._continue(approvals)

    def _continue(self, approvals: dict[str, bool | str] | None) -> AgentRun:
        """`continue_` once the lease is held (under the lock)."""
        if not self.messages:
            raise ValueError("cannot continue: the agent has no messages")
        approvals = self._children.decide(approvals)  # a child agent's calls (API §25)
        if approvals is not None or self._children.ready() or \
                find_pause(self.messages, self.active_agent.tools):
            return self._start(None, False, self._resume_output(), approvals=approvals)
        if not isinstance(self.messages[-1], AssistantMessage):
            return self._start(None, False)
        for queue, mode, skip in ((self._steering, self.steering_mode, True),
                                  (self._follow_up, self.follow_up_mode, False)):
            taken = queue.take_now(mode)
            if taken:
                try:
                    return self._start(taken, skip)
                except BaseException:  # no run: the messages wait in their queue again
                    queue.put_back(taken)
                    raise
        raise ValueError("cannot continue from an assistant message: no steering or follow-up "
                         "message is queued")

    def close(self) -> None:
        """Abort the active run, wait for it to end, and close the agent.

        HTTP connections are the process's (or yours: `http_client`, `http_session`) and stay
        open. A closed agent raises `AgentClosedError` from every call that would start or
        queue work (`prompt`, `prompt_async`, `continue_`, `steer`, `follow_up`); closing
        again does nothing. `with Agent(...) as agent:` closes on exit.
        """
        with self._lock:
            self._closed = True
            run = self._run
        if run is not None:
            run.abort()
            if not run.on_own_thread():  # from a listener or tool of the run: no wait
                run.wait()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def abort(self) -> None:
        """Abort the active run; does nothing when idle."""
        run = self._run
        if run is not None:
            run.abort()

    def wait_for_idle(self, timeout: float | None = None) -> bool:
        """Wait until no run is active; False if `timeout` seconds passed first."""
        run = self._run
        return run is None or run.wait(timeout)

    def as_tool(self, name: str | None = None, description: str | None = None, *,
                output_type: Any = None, max_depth: int = DEFAULT_MAX_DEPTH) -> AgentTool:
        """This agent as a tool taking `input: str`, each call a fresh copy's run (`_subagent`)."""
        def fresh(session: Session | None) -> Agent:  # its settings as they are at the call
            with self._lock:
                child = Agent(self.model, system_prompt=self.system_prompt, name=self.name,
                              tools=list(self.tools), steering_mode=self.steering_mode,
                              follow_up_mode=self.follow_up_mode, stream_fn=self.stream_fn,
                              auto_compact=self.auto_compact, max_events=self.max_events,
                              session=session)
                child._loop = self._loop  # every loop setting: frozen, safely shared
            return child
        return agent_tool(fresh, self.name, name, description, output_type, max_depth)

    def reset(self) -> None:
        """Clear the transcript, the queues and the error; raises `AgentBusyError` if running."""
        with self._lock:
            if self._run is not None:
                raise AgentBusyError("the agent is already processing; wait for completion "
                                     "before resetting")
            if self._writer is not None:  # under the lock: no run may start and append meanwhile
                with self._writer.held(self.lease_timeout):
                    self._writer.session.clear()
            self.messages.clear()  # in place: assigning would replace the session's transcript
            self.clear_all_queues()
            self._live = LiveState()
            self._active = None
            self._children.clear()

    def reload(self) -> None:
        """Load the transcript again from the session: what other processes stored since.

        For a process serving a conversation that others may move on too (a web worker, API
        §27); a run does this itself when it takes the lease. Repairs only when no other
        agent drives the session (as when constructed). Does nothing without a session, or
        while the session lacks messages this agent could not store (its next message
        rewrites the session); raises `AgentBusyError` while a run is active.
        """
        with self._lock:
            if self._run is not None:
                raise AgentBusyError("cannot reload while the agent is running")
            if self._writer is not None and not self._writer.behind:  # else ours are newer
                self.messages[:] = self._load(open_transcript)  # in place: no setter

    def _resume_output(self) -> Output:
        """The output a resumed batch answers in: its run's, if that run ended on it."""
        paused = self._paused_output
        reply = next((m for m in reversed(self.messages) if isinstance(m, AssistantMessage)),
                     None)
        return paused[1] if paused is not None and paused[0] is reply else NO_OUTPUT

    def _check_open(self) -> None:
        if self._closed:
            raise AgentClosedError("the agent is closed; create a new Agent to go on")

    # The run side. A run starts under the lock (`_start`, `_run_here`: `_prepare` checks all
    # that can fail first), `_handle` applies each event on the run's thread, and `_end`
    # makes the agent idle again before the run's result is out.

    def _start(self, prompts: list[AgentMessage] | None, skip_first_steering: bool,
               output: Output = NO_OUTPUT, approvals: dict[str, bool | str] | None = None,
               ) -> AgentRun:
        """Start a run on its own thread (under the lock); `approvals` decide a resumed batch."""
        run, main = self._prepare(prompts, skip_first_steering, output, approvals=approvals)
        try:
            run.start(main, name=run_name())
        except BaseException:  # no thread to be had: the agent stays idle and usable
            self._run = None
            self._live.end()
            raise
        return run

    def _run_here(self, prompts: list[AgentMessage] | None, output: Output,
                  on_start: Callable[[AgentRun], object], adjust: Adjust | None,
                  approvals: dict[str, bool | str] | None) -> AgentRun:
        """A run to its end on the calling thread (see `prompt_here`)."""
        with self._lock:
            if self._run is not None:
                raise AgentBusyError("the agent is already processing a prompt")
            with self._claimed():
                run, main = self._prepare(prompts, False, output, adjust, approvals)
        try:
            on_start(run)
        finally:  # the agent is marked busy: only the run's own end makes it idle again
            run.run_here(main, name=run_name())
        return run

    def _prepare(self, prompts: list[AgentMessage] | None, skip_first_steering: bool,
                 output: Output, adjust: Adjust | None = None,
                 approvals: dict[str, bool | str] | None = None,
                 ) -> tuple[AgentRun, Callable[[], None]]:
        """Mark the agent busy with a new run (under the lock); return the run and its main.

        Everything that can fail comes before. `adjust` (a batch's) changes the run's config.
        """
        self._check_open()
        loop, stream_fn, active = self._loop, self.stream_fn, self.active_agent
        model = active.model
        http = stream_fn is None and speaks_http(model.api)
        if http and loop.get_api_key is None:  # a missing key raises here, not in the run
            require_api_key(model.provider, loop.api_key, base_url=model.base_url)
        config = self._run_config(loop, skip_first_steering, output)
        if adjust is not None:
            config = adjust(config)
        context = AgentContext(active.system_prompt, list(self.messages), list(active.tools))
        check_run(config, config.model, context.tools)  # raises here, not in the run
        if prompts is None:  # calls waiting for approval: decided by `approvals` or `approve`
            plan_resume(context, config.approve, approvals)
        else:
            check_no_pause(context)
            if self._children:  # a child agent's calls wait (API §25)
                raise ValueError("cannot prompt: a child agent's tool calls wait for approval: "
                                 "continue with approvals={call_id: ...} first")
        native = output_tool(config.output_type) if config.output_mode == "native" else None
        run = AgentRun(AbortController(), max_events=self.max_events, native=native)
        self._run = run
        self._live.begin()
        return run, carry_context(functools.partial(self._main, run, prompts, context, config,
                                                    stream_fn, approvals))

    def _run_config(self, loop: AgentLoopConfig, skip_first_steering: bool,
                    output: Output) -> AgentLoopConfig:
        """`loop` with a run's queues, compaction, output, scope and active agent (API §25)."""
        skip, active = [skip_first_steering], self.active_agent

        def steering() -> list[AgentMessage]:
            if skip[0]:
                skip[0] = False
                return []
            return self._steering.take(self.steering_mode)

        def follow_ups() -> list[AgentMessage]:
            return self._follow_up.take(self.follow_up_mode)

        compact = None if self.auto_compact is None else auto_compactor(
            self.auto_compact, self.stream_fn, self._replace_transcript)
        scope = loop.idempotency_scope if self._writer is None else self._writer.scope
        return attrs.evolve(loop, get_steering_messages=steering,
                            get_follow_up_messages=follow_ups, before_model_call=compact,
                            output_type=output.type, output_retries=output.retries,
                            output_mode=output.mode, idempotency_scope=scope,
                            agent_name=active.name, model=active.model,
                            reasoning=active.thinking_level)

    def _replace_transcript(self, messages: list[AgentMessage]) -> None:
        """Compaction's write, on the run's thread: the session first, so a failure keeps both."""
        if self._writer is not None:
            self._writer.replace(messages)
        with self._lock:
            self.messages[:] = messages  # in place: the setter refuses while a run is active

    def _main(self, run: AgentRun, prompts: list[AgentMessage] | None, context: AgentContext,
              config: AgentLoopConfig, stream_fn: StreamFn | None,
              approvals: dict[str, bool | str] | None) -> None:
        """The run's thread: the loop, then the agent idle and the run finished, come what may."""
        messages: list[AgentMessage] = []
        # Its place among agents (a run of its own: first in its children's paths), where its
        # paused children are kept; for this run only (a thread may serve others later)
        here = NESTING.get()
        token = NESTING.set(attrs.evolve(here if here.path else Nesting((self.name,)),
                                         pauses=self._children))
        with in_flight(lambda _reason: run.abort()):  # Ctrl-C at exit aborts it (API §11)
            try:
                messages = drive(prompts, context, config, functools.partial(self._handle, run),
                                 run.signal, stream_fn, approvals, self._unanswered)
            finally:
                NESTING.reset(token)
                self._end(run, config, context.tools, messages)

    def _unanswered(self) -> list[ToolCall]:
        """The transcript's tool calls without a result (a broken run's, to answer)."""
        with self._lock:
            return unanswered_tool_calls(self.messages)

    def _end(self, run: AgentRun, config: AgentLoopConfig, tools: list[AgentTool],
             messages: list[AgentMessage]) -> None:
        """Make the agent idle, then finish `run` with `messages` and the calls left waiting.

        Queued messages taken but not injected go back to their queues; a run with an output
        type remembers it with its last message, for a resume of its paused calls.
        """
        with self._lock:
            if self._writer is not None:
                self._writer.release()
            self._steering.restore()
            self._follow_up.restore()
            self._live.end()
            self._run = None
            transcript = list(self.messages)
            tools = tools if self._active is None else list(self._active.tools)  # handed off
            self._paused_output = None if config.output_type is None or not transcript \
                else (transcript[-1], Output(config.output_type, config.output_retries,
                                             config.output_mode))
        pause = find_pause(transcript, tools)  # outside the lock: user rules run
        run.finish(messages, [*(pause.calls if pause else ()), *self._children.pending()],
                   config.agent_name, self._children.paths())

    def _handle(self, run: AgentRun, event: AgentEvent) -> None:
        """Apply `event` to the state, log it on the run, then call the listeners.

        A `message_update` (most events by far) changes only the streaming message: one
        reference, written without the lock (a snapshot sees it before or after it).
        """
        if event.__class__ is MessageUpdateEvent:
            self._live.streaming_message = event.message
        else:
            with self._lock:
                started, ended = self._live.apply(event)
                if started is not None and not self._steering.accept(started):
                    self._follow_up.accept(started)
                if ended is not None:
                    self.messages.append(ended)
                elif event.__class__ is HandoffEvent:  # the run goes on as another agent
                    self._active = handed_to(self.messages)  # the target (`handoff` made it)
            if self._writer is not None:  # durable before heard: a message, a call's journal
                self._writer.handle(event, ended, lambda: self.state.messages)
        run.publish(event)
        listeners = self._listeners
        if listeners:
            notify(listeners, event, run.signal)


def prompt_here(agent: Agent, input: str | AgentMessage | Sequence[AgentMessage], *,
                output_type: Any = None, output_mode: OutputMode = "tool",
                on_start: Callable[[AgentRun], object] = lambda run: None,
                adjust: Adjust | None = None) -> AgentRun:
    """`agent.prompt(input, output_type=..., output_mode=...)` run to its end on this thread.

    For pools that already give each run a thread of its own (`run_batch`, its only user): the
    run needs no thread start, which under load costs more than the rest of starting a run.
    `on_start` gets the run before it begins (to abort it from elsewhere); `adjust` changes
    the run's config (a batch's settings: fallbacks, budget, its HTTP client). Raises what
    `prompt` raises.
    """
    agent._check_open()
    prompts = prompt_messages(input, None)
    return agent._run_here(prompts, Output(output_type, 2, output_mode), on_start, adjust,
                           None)


def continue_here(agent: Agent, approvals: dict[str, bool | str], *, output_type: Any = None,
                  output_mode: OutputMode = "tool",
                  on_start: Callable[[AgentRun], object] = lambda run: None,
                  adjust: Adjust | None = None) -> AgentRun:
    """`agent.continue_(approvals=...)` run to its end on this thread (see `prompt_here`).

    The batch's resume of a run that stopped for approval (`resume_batch`, its only user):
    unlike `continue_`, the resumed run keeps the batch's `output_type` and `output_mode`.
    Raises what `continue_` raises for `approvals`.
    """
    agent._check_open()
    if not agent.messages:
        raise ValueError("cannot continue: the agent has no messages")
    return agent._run_here(None, Output(output_type, 2, output_mode), on_start, adjust,
                           approvals)
