"""`Agent`: runs the loop on a background thread and keeps the transcript between runs.

Threading: every public method may be called from any thread, including listeners and tools.
A run's events reach the state, then the run's event log, then the listeners, all on the run's
own (non-daemon) thread. State lives behind one lock, never held while user code runs.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

import attrs
from attrs.validators import and_, ge

from .._core import (
    OPTION,
    AbortSignal,
    AgentBusyError,
    AgentClosedError,
    AgentEvent,
    AgentMessage,
    AgentTool,
    AssistantMessage,
    CacheRetention,
    FlatAlias,
    ImageContent,
    Model,
    OnPayload,
    OnResponse,
    QueueMode,
    Session,
    StreamOptions,
    ThinkingLevel,
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
)
from .._loop import (
    AfterToolCall,
    AgentLoopConfig,
    Approve,
    BeforeToolCall,
    ConvertToLlm,
    GetApiKey,
    OutputMode,
    PrepareNextTurn,
    ShouldStopAfterTurn,
    TransformContext,
)
from ..providers import StreamFn
from ._compact import CompactionSettings
from ._drive import NO_OUTPUT, Output, SessionWriter, load_transcript, start
from ._input import agent_tools, as_message, copy_list, message_list, prompt_messages, tool_list
from ._live import AgentState, LiveState
from ._queue import MessageQueue
from ._run import MAX_EVENTS, AgentRun

if TYPE_CHECKING:
    import requests

    from .._core import HttpClientLike

__all__ = ["Agent", "AgentState"]

DEFAULT_LIMITS = UsageLimits(max_model_calls=50)
"""An `Agent`'s usage limits unless it is given others: a runaway model stops at 50 calls."""

Listener = Callable[[AgentEvent, AbortSignal], None]


def _idle_only(agent: Agent, attribute: attrs.Attribute[Any], value: Any) -> Any:
    if agent._run is not None:
        raise AgentBusyError(f"cannot set '{attribute.name}' while the agent is running")
    return value


def _replace_session(agent: Agent, _: attrs.Attribute[Any], value: Any) -> Any:
    """On-setattr hook of `messages`: a new transcript replaces the session's too."""
    if agent._writer is not None:
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
    The agent never closes it. See the module docstring for the threading contract.
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
    convert_to_llm: ConvertToLlm = OPTION
    transform_context: TransformContext | None = OPTION
    get_api_key: GetApiKey | None = OPTION
    tool_execution: ToolExecutionMode = OPTION
    tool_executor: Executor | None = OPTION
    tool_timeout: float | None = OPTION
    deps: Any = OPTION
    limits: UsageLimits | None = OPTION
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

    def __attrs_post_init__(self) -> None:
        self._steering = MessageQueue(self._lock)
        self._follow_up = MessageQueue(self._lock)
        if self.session is not None:
            if self.messages:
                raise ValueError("give 'messages' or 'session', not both: the agent loads its "
                                 "transcript from the session")
            check = functools.partial(list_of_messages, self, attrs.fields(Agent).messages)
            self.messages.extend(load_transcript(self.session, check, self.tools))
            self._writer = SessionWriter(self.session)

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
            state = AgentState(self.system_prompt, self.model, self.thinking_level, tools,
                               messages, live.is_streaming, live.snapshot_message(),
                               live.pending, live.error_message)
        pause = find_pause(messages, tools)  # outside the lock: it runs requires_approval
        return state if pause is None else attrs.evolve(state, pending_approvals=pause.calls)

    @property
    def signal(self) -> AbortSignal | None:
        """The active run's abort signal, or None when idle."""
        run = self._run
        return run.signal if run is not None else None

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
            return start(self, prompts, False, Output(output_type, output_retries, output_mode))

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
            if not self.messages:
                raise ValueError("cannot continue: the agent has no messages")
            if approvals is not None or find_pause(self.messages, self.tools) is not None:
                return start(self, None, False, self._resume_output(), approvals=approvals)
            if not isinstance(self.messages[-1], AssistantMessage):
                return start(self, None, False)
            for queue, mode, skip in ((self._steering, self.steering_mode, True),
                                      (self._follow_up, self.follow_up_mode, False)):
                taken = queue.take_now(mode)
                if taken:
                    try:
                        return start(self, taken, skip)
                    except BaseException:  # no run: the messages wait in their queue again
                        queue.put_back(taken)
                        raise
        raise ValueError("cannot continue from an assistant message: no steering or follow-up "
                         "message is queued")

    def close(self) -> None:
        """Abort the active run, wait for it to end, and close the agent.

        HTTP connections are not the agent's: its runs share the process's `HttpClient` (or
        the `http_client`/`http_session` you passed, which stay open). A closed agent raises
        `AgentClosedError` from every call that would start or queue work (`prompt`,
        `prompt_async`, `continue_`, `steer`, `follow_up`); closing again does nothing.
        `with Agent(...) as agent:` closes on exit.
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

    def reset(self) -> None:
        """Clear the transcript, the queues and the error; raises `AgentBusyError` if running."""
        with self._lock:
            if self._run is not None:
                raise AgentBusyError("the agent is already processing; wait for completion "
                                     "before resetting")
            if self.session is not None:  # under the lock: no run may start and append meanwhile
                self.session.clear()
            self.messages.clear()  # in place: assigning would replace the session's transcript
            self.clear_all_queues()
            self._live = LiveState()

    def _resume_output(self) -> Output:
        """The output a resumed batch answers in: its run's, if that run ended on it."""
        paused = self._paused_output
        reply = next((m for m in reversed(self.messages) if isinstance(m, AssistantMessage)),
                     None)
        return paused[1] if paused is not None and paused[0] is reply else NO_OUTPUT

    def _check_open(self) -> None:
        if self._closed:
            raise AgentClosedError("the agent is closed; create a new Agent to go on")
