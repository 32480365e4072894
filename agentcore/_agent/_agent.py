"""`Agent`: runs the loop on a background thread and keeps the transcript between runs.

Threading: every public method may be called from any thread, including listeners and tools.
A run's events reach the state, then the run's event log, then the listeners, all on the run's
own (non-daemon) thread. State lives behind one lock, never held while user code runs.
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

import attrs
from attrs.validators import and_, ge

from .._core import (
    OPTION,
    AbortController,
    AbortSignal,
    AgentBusyError,
    AgentClosedError,
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AgentTool,
    AssistantMessage,
    CacheRetention,
    FlatAlias,
    ImageContent,
    MessageEndEvent,
    MessageStartEvent,
    Model,
    OnPayload,
    OnResponse,
    QueueMode,
    Session,
    StreamOptions,
    TextContent,
    ThinkingLevel,
    ToolExecutionMode,
    ToolResultMessage,
    Transport,
    TurnEndEvent,
    UsageLimits,
    cannot_take,
    describe,
    error_reply,
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
)
from .._loop import (
    AfterToolCall,
    AgentLoopConfig,
    BeforeToolCall,
    ConvertToLlm,
    GetApiKey,
    PrepareNextTurn,
    ShouldStopAfterTurn,
    TransformContext,
    carry_context,
    in_flight,
    run_agent_loop,
    run_agent_loop_continue,
)
from ..providers import StreamFn, new_http_session, require_api_key, speaks_http
from ._compact import CompactionSettings, auto_compactor
from ._input import agent_tools, as_message, copy_list, message_list, prompt_messages, tool_list
from ._live import AgentState, LiveState
from ._persist import SessionWriter, load_transcript
from ._queue import MessageQueue
from ._run import MAX_EVENTS, AgentRun

if TYPE_CHECKING:
    import requests

__all__ = ["Agent", "AgentState"]

_log = logging.getLogger(__name__)
_run_numbers = itertools.count(1)

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


class _ThinkingLevel(FlatAlias):
    """`Agent.thinking_level`: the agent's name for its `reasoning` option; None reads as OFF."""

    __slots__ = ()

    def convert(self, value: Any) -> Any:
        level = to_thinking_level(value)
        member_of(ThinkingLevel)(None, self, level)  # the error names 'thinking_level'
        return level

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        level = super().__get__(obj, owner)
        return ThinkingLevel.OFF if level is None else level


_THINKING_LEVEL: Any = _ThinkingLevel("reasoning")
_setters = attrs.setters.pipe(attrs.setters.convert, attrs.setters.validate)
_KEEP = attrs.setters.NO_OP


@attrs.define(eq=False, repr=False, on_setattr=_setters)
@flat_fields(AgentLoopConfig, via="_loop", positional=("model",),
             defaults={"limits": DEFAULT_LIMITS})
class Agent:
    """An agent: a model, tools and a transcript, with runs on a background thread.

    Start a run with `prompt` or `continue_`; each returns an `AgentRun` at once. Settable
    attributes (model, tools, hooks, options) apply from the next run; the queues (`steer`,
    `follow_up`) are read live. `model` may come first positionally; every other argument is
    a keyword. The loop's settings (`model`, the hooks, `tool_execution`, `tool_executor`,
    `tool_timeout`, `deps`, `limits`, `options` and each provider option) are held as one
    `AgentLoopConfig`, which every run starts from: each is an attribute standing for that
    config's field, validated on assignment as the config validates it. `thinking_level` is
    the agent's name for the `reasoning` option (`options.reasoning`). `max_events` bounds the
    events each run keeps for late iteration (see `AgentRun`); `tool_timeout` (seconds)
    bounds every tool call whose tool sets no `timeout`; `deps` reaches every `@tool` function
    with a parameter named `deps`. `limits` bounds each run, by default
    `UsageLimits(max_model_calls=50)` (None: no bound); a run that reaches a limit ends with
    an error message, and its `raise_for_error()` raises `UsageLimitExceeded`.
    `auto_compact` (a `CompactionSettings`; default None: off) compacts the
    transcript within a run, before a model call that would outgrow the model's context
    window and once after a reply refusing the context as too long (then retrying it), with
    `compaction_start`/`compaction_end` events (see `agentcore.compaction`).
    `prompt`/`continue_` raise `MissingApiKeyError` before starting a run when the
    model's provider needs a key and none is given (`api_key`, `get_api_key`) or set in the
    environment. `session` (fixed once constructed) keeps the transcript in a
    store (`agentcore.sessions`, API §13): it is loaded here, its interrupted tool calls
    answered (`messages=` may not be given too), each message is appended as its
    `message_end` is processed, before the run's iterators and listeners see it; assigning
    `messages` replaces the session's transcript, `reset()` clears it. A failed append is
    logged at ERROR on `agentcore.sessions` and the run goes on (the message stays in
    `messages`; the next message rewrites the session whole). The agent never closes it.
    See the module docstring for the threading contract.
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
    max_event_bytes: int = OPTION

    # Private state: never converted or validated on assignment (`_KEEP`); see the docstring.
    _loop: AgentLoopConfig = attrs.field(init=False, on_setattr=_KEEP)  # set by flat_fields
    _lock: threading.RLock = attrs.field(init=False, factory=threading.RLock, on_setattr=_KEEP)
    _steering: MessageQueue = attrs.field(init=False, on_setattr=_KEEP)
    _follow_up: MessageQueue = attrs.field(init=False, on_setattr=_KEEP)
    _listeners: list[Listener] = attrs.field(init=False, factory=list, on_setattr=_KEEP)
    _run: AgentRun | None = attrs.field(init=False, default=None, on_setattr=_KEEP)
    _live: LiveState = attrs.field(init=False, factory=LiveState, on_setattr=_KEEP)
    _http_session: Any = attrs.field(init=False, default=None, on_setattr=_KEEP)
    _closed: bool = attrs.field(init=False, default=False, on_setattr=_KEEP)
    _writer: SessionWriter | None = attrs.field(init=False, default=None, on_setattr=_KEEP)

    def __attrs_post_init__(self) -> None:
        self._steering = MessageQueue(self._lock)
        self._follow_up = MessageQueue(self._lock)
        if self.session is not None:
            if self.messages:
                raise ValueError("give 'messages' or 'session', not both: the agent loads its "
                                 "transcript from the session")
            check = functools.partial(list_of_messages, self, attrs.fields(Agent).messages)
            self.messages.extend(load_transcript(self.session, check))
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
            return AgentState(self.system_prompt, self.model, self.thinking_level,
                              list(self.tools), list(self.messages), live.is_streaming,
                              live.snapshot_message(), live.pending, live.error_message)

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
                self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                self._listeners = [x for x in self._listeners if x is not listener]

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
        *, output_type: Any = None, output_retries: int = 2,
    ) -> AgentRun:
        """Start a run on `input` (a str, a message or a list of messages) and return it.

        With `output_type` (an attrs class, a dataclass, a `TypedDict`, a primitive, an enum,
        a `Literal`, or lists/dicts/optionals of them) the model answers through a
        `final_result` tool, and `run.output` is its answer as that type; `output_retries`
        invalid answers (default 2: at most 3 attempts) are sent back before the run ends in
        error (API §14). Raises `AgentClosedError` once the agent is closed (before checking
        anything else), `AgentBusyError` while a run is active, `TypeError` for an
        unsupported type.
        """
        self._check_open()
        prompts = prompt_messages(input, images)
        with self._lock:
            if self._run is not None:
                raise AgentBusyError("the agent is already processing a prompt; use steer() or "
                                     "follow_up() to queue messages, or wait for completion")
            return self._start(prompts, False, output_type, output_retries)

    async def prompt_async(
        self, input: str | AgentMessage | Sequence[AgentMessage],
        images: Sequence[ImageContent] | None = None,
        *, output_type: Any = None, output_retries: int = 2,
    ) -> AgentRun:
        """`prompt`, awaited: start a run on `input` and return it once it has ended.

        The run goes on its background thread as with `prompt`; awaiting it never blocks the
        event loop (see `AgentRun.wait_async`). Cancelling the awaiting task aborts the run,
        as nothing else holds it; the agent is idle again once the run's thread has ended.
        Raises what `prompt` raises.
        """
        run = self.prompt(input, images, output_type=output_type, output_retries=output_retries)
        try:
            await run.wait_async()
        except BaseException:  # cancelled (or interrupted): stop the run nobody will await
            run.abort()
            raise
        return run

    def continue_(self) -> AgentRun:
        """Resume from the transcript.

        After an assistant message it first takes queued steering, else a follow-up, else
        raises `ValueError`. Raises `AgentClosedError` once the agent is closed (before
        anything else), `AgentBusyError` while running, `ValueError` when empty.
        """
        with self._lock:
            self._check_open()
            if self._run is not None:
                raise AgentBusyError("the agent is already processing; wait for completion "
                                     "before continuing")
            if not self.messages:
                raise ValueError("cannot continue: the agent has no messages")
            if not isinstance(self.messages[-1], AssistantMessage):
                return self._start(None, False)
            steering = self._steering.take_now(self.steering_mode)
            if steering:
                return self._start(steering, True)
            follow_ups = self._follow_up.take_now(self.follow_up_mode)
            if follow_ups:
                return self._start(follow_ups, False)
        raise ValueError("cannot continue from an assistant message: no steering or follow-up "
                         "message is queued")

    def close(self) -> None:
        """Abort the active run, wait for it to end, and release what the agent owns.

        What it owns is the HTTP session its runs share (an `http_session` you passed is
        yours, and stays open). A closed agent raises `AgentClosedError` from every call that
        would start or queue work (`prompt`, `prompt_async`, `continue_`, `steer`,
        `follow_up`); closing again does nothing. `with Agent(...) as agent:` closes on exit.
        """
        with self._lock:
            self._closed = True
            run = self._run
        if run is not None:
            run.abort()
            if not run.on_own_thread():  # from a listener or tool of the run: no wait
                run.wait()
        with self._lock:
            session, self._http_session = self._http_session, None
        if session is not None:
            session.close()

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

    def _check_open(self) -> None:
        if self._closed:
            raise AgentClosedError("the agent is closed; create a new Agent to go on")

    def _start(self, prompts: list[AgentMessage] | None, skip_first_steering: bool,
               output_type: Any = None, output_retries: int = 2) -> AgentRun:
        run, main = self._prepare(prompts, skip_first_steering, output_type, output_retries)
        try:
            run.start(main, name=f"agentcore-run-{next(_run_numbers)}")
        except BaseException:  # no thread to be had: the agent stays idle and usable
            self._run = None
            self._live.end()
            raise
        return run

    def _prepare(self, prompts: list[AgentMessage] | None, skip_first_steering: bool,
                 output_type: Any, output_retries: int, http_session: Any = None,
                 ) -> tuple[AgentRun, Callable[[], None]]:
        """Mark the agent busy with a new run (under the lock); return it and its main.

        Everything that can fail comes before. `http_session` serves the run when the agent
        has none of its own (`run_batch` shares one); without either, the agent makes one.
        """
        self._check_open()
        loop, stream_fn = self._loop, self.stream_fn
        http = stream_fn is None and speaks_http(loop.model.api)
        if http and loop.get_api_key is None:  # a missing key raises here, not in the run
            require_api_key(loop.model.provider, loop.api_key, base_url=loop.model.base_url)
        session = loop.http_session
        if http and session is None:
            if http_session is None and self._http_session is None:
                self._http_session = new_http_session()  # kept alive across runs
            session = http_session or self._http_session
        config = self._config(loop, skip_first_steering, output_type, output_retries, session)
        context = AgentContext(self.system_prompt, list(self.messages), list(self.tools))
        run = AgentRun(AbortController(), max_events=self.max_events)
        self._run = run
        self._live.begin()
        return run, carry_context(lambda: self._main(run, prompts, context, config, stream_fn))

    def _config(self, loop: AgentLoopConfig, skip_first_steering: bool, output_type: Any,
                output_retries: int, http_session: Any) -> AgentLoopConfig:
        """`loop` with the parts that belong to one run: queues, compaction, output, session."""
        skip = [skip_first_steering]

        def steering() -> list[AgentMessage]:
            if skip[0]:
                skip[0] = False
                return []
            return self._steering.take(self.steering_mode)

        def follow_ups() -> list[AgentMessage]:
            return self._follow_up.take(self.follow_up_mode)

        compact = None if self.auto_compact is None else auto_compactor(
            self.auto_compact, self.stream_fn, self._replace_transcript)
        return attrs.evolve(loop, get_steering_messages=steering,
                            get_follow_up_messages=follow_ups, before_model_call=compact,
                            output_type=output_type, output_retries=output_retries,
                            http_session=http_session)

    def _replace_transcript(self, messages: list[AgentMessage]) -> None:
        """Compaction's write, on the run's thread: the session first, so a failure keeps both."""
        if self._writer is not None:
            self._writer.replace(messages)
        with self._lock:
            self.messages[:] = messages  # in place: the setter refuses while a run is active

    def _main(
        self, run: AgentRun, prompts: list[AgentMessage] | None, context: AgentContext,
        config: AgentLoopConfig, stream_fn: StreamFn | None,
    ) -> None:
        messages: list[AgentMessage] = []
        with in_flight(lambda _reason: run.abort()):  # Ctrl-C at exit aborts it (API §11)
            try:
                emit = lambda event: self._handle(run, event)  # noqa: E731
                if prompts is None:
                    messages = run_agent_loop_continue(context, config, emit, run.signal,
                                                       stream_fn)
                else:
                    messages = run_agent_loop(prompts, context, config, emit, run.signal,
                                              stream_fn)
            except BaseException as exc:  # the loop itself broke: report it as the run's failure
                _log.exception("agent run failed")
                messages = self._fail(run, config.model, exc)
            finally:
                with self._lock:
                    self._steering.restore()
                    self._follow_up.restore()
                    self._live.end()
                    self._run = None
                run.finish(messages)

    def _fail(self, run: AgentRun, model: Model, exc: BaseException) -> list[AgentMessage]:
        text = describe(exc)
        failure = error_reply(model, text, aborted=run.signal.aborted)
        with self._lock:  # the calls the broken run left without a result get one now
            unanswered = unanswered_tool_calls(self.messages)
        added: list[AgentMessage] = [
            *(ToolResultMessage(c.id, c.name, [TextContent(f"Tool call interrupted: {text}")],
                                is_error=True) for c in unanswered),
            failure,
        ]
        for message in added:
            self._handle(run, MessageStartEvent(message))
            self._handle(run, MessageEndEvent(message))
        self._handle(run, TurnEndEvent(failure, []))
        self._handle(run, AgentEndEvent(added))
        return added

    def _handle(self, run: AgentRun, event: AgentEvent) -> None:
        """Apply `event` to the state, log it on the run, then call the listeners."""
        with self._lock:
            started, ended = self._live.apply(event)
            if started is not None and not self._steering.accept(started):
                self._follow_up.accept(started)
            if ended is not None:
                self.messages.append(ended)
            listeners = list(self._listeners)
        if ended is not None and self._writer is not None:
            self._writer.save(ended, self._transcript)  # durable before anyone hears of it
        run.publish(event)
        for listener in listeners:
            try:
                listener(event, run.signal)
            except Exception:
                _log.exception("agent listener %r raised on %s", listener, event.type)

    def _transcript(self) -> list[AgentMessage]:
        with self._lock:
            return list(self.messages)


def prompt_here(agent: Agent, input: str | AgentMessage | Sequence[AgentMessage], *,
                output_type: Any = None, on_start: Callable[[AgentRun], object] = lambda run: None,
                http_session: Any = None) -> AgentRun:
    """`agent.prompt(input, output_type=...)` run to its end on the calling thread.

    For pools that already give each run a thread of its own (`run_batch`, its only user): the
    run needs no thread start, which under load costs more than the rest of starting a run.
    `on_start` gets the run before it begins (to abort it from elsewhere); `http_session` (a
    batch's shared one) serves the run if the agent has no session of its own. Raises what
    `prompt` raises.
    """
    agent._check_open()
    prompts = prompt_messages(input, None)
    with agent._lock:
        if agent._run is not None:
            raise AgentBusyError("the agent is already processing a prompt")
        run, main = agent._prepare(prompts, False, output_type, 2, http_session)
    try:
        on_start(run)
    finally:  # the agent is marked busy: only the run's own end makes it idle again
        run.run_here(main, name=f"agentcore-run-{next(_run_numbers)}")
    return run
