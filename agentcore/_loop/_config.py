"""The loop's configuration and the values its hooks receive and return."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, Literal

import attrs
from attrs.validators import and_, ge

from .._core import (
    OPTION,
    AbortSignal,
    AgentContext,
    AgentMessage,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    CacheRetention,
    CircuitBreaker,
    EventSink,
    ImageContent,
    Message,
    Model,
    OnPayload,
    OnResponse,
    StreamOptions,
    TextContent,
    ThinkingLevel,
    ToolCall,
    ToolExecutionMode,
    ToolResultMessage,
    Transport,
    Usage,
    UsageLimits,
    default_convert_to_llm,
    flat_fields,
    instance_of,
    is_callable,
    is_model,
    is_optional_model,
    list_of,
    member_of,
    optional_instance_of,
    seconds,
    strict_int,
    takes,
    to_thinking_level,
    to_tool_execution_mode,
)
from .._function_tools import output_tool
from ._fallback import FallbackOn, check_fallbacks, model_list
from ._guardrails import InputGuardrail, OutputGuardrail, check_guardrails

if TYPE_CHECKING:
    import requests

    from .._core import HttpClientLike

__all__ = [
    "AfterToolCall",
    "AfterToolCallContext",
    "AfterToolCallResult",
    "AgentLoopConfig",
    "AgentLoopTurnUpdate",
    "Approve",
    "BeforeModelCall",
    "BeforeModelCallContext",
    "BeforeToolCall",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "ConvertToLlm",
    "GetApiKey",
    "OutputMode",
    "PrepareNextTurn",
    "PrepareNextTurnContext",
    "ShouldStopAfterTurn",
    "TransformContext",
    "check_output_mode",
    "executor",
    "hook",
]


_opt_bool = optional_instance_of(bool)


@attrs.frozen
class BeforeToolCallContext:
    """What `before_tool_call` sees: the reply, the call, its validated `args`, the live context."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: Any
    context: AgentContext


@attrs.frozen
class BeforeToolCallResult:
    """`block=True` stops the call with an error result (`reason`, or a default text)."""

    block: bool | None = attrs.field(default=None, validator=_opt_bool)
    reason: str | None = attrs.field(default=None, validator=optional_instance_of(str))
    terminate: bool | None = attrs.field(default=None, validator=_opt_bool)


@attrs.frozen
class AfterToolCallContext:
    """What `after_tool_call` sees: the call, its args and its result before any override."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: Any
    result: AgentToolResult
    is_error: bool
    context: AgentContext


@attrs.frozen
class AfterToolCallResult:
    """Overrides for a tool's result; each non-None field replaces the original one."""

    content: list[TextContent | ImageContent] | None = attrs.field(
        default=None,
        validator=list_of(TextContent, ImageContent, optional=True),
    )
    details: Any = None
    is_error: bool | None = attrs.field(default=None, validator=_opt_bool)
    usage: Usage | None = attrs.field(default=None, validator=optional_instance_of(Usage))
    terminate: bool | None = attrs.field(default=None, validator=_opt_bool)


@attrs.frozen
class PrepareNextTurnContext:
    """What the between-turn hooks see: the turn's reply and results, and the run so far."""

    message: AssistantMessage
    tool_results: list[ToolResultMessage]
    context: AgentContext
    new_messages: list[AgentMessage]


@attrs.frozen
class AgentLoopTurnUpdate:
    """Changes `prepare_next_turn` makes for the rest of the run; None keeps the current value."""

    context: AgentContext | None = attrs.field(default=None,
                                               validator=optional_instance_of(AgentContext))
    model: Model | None = attrs.field(default=None, validator=is_optional_model)
    thinking_level: ThinkingLevel | None = attrs.field(
        default=None, converter=to_thinking_level, validator=member_of(ThinkingLevel, optional=True)
    )


@attrs.frozen
class BeforeModelCallContext:
    """What `before_model_call` sees: a copy of the run's context, and the call's model and options.

    `failed` is None before a model call. After a call whose reply ended in an error it is
    that reply, which `context.messages` then leaves out: messages returned replace the
    context (dropping it) and the call is made once more.
    """

    context: AgentContext
    model: Model
    options: StreamOptions
    failed: AssistantMessage | None = None


hook = is_callable(optional=True)
"""Attrs validator of an optional hook."""
executor = optional_instance_of(Executor)
"""Attrs validator of an optional `concurrent.futures.Executor`."""

ConvertToLlm = Callable[[list[AgentMessage]], Sequence[Message]]
TransformContext = Callable[[list[AgentMessage], AbortSignal], Sequence[AgentMessage]]
GetApiKey = Callable[[str], str | None]
BeforeToolCall = Callable[[BeforeToolCallContext, AbortSignal], BeforeToolCallResult | None]
AfterToolCall = Callable[[AfterToolCallContext, AbortSignal], AfterToolCallResult | None]
PrepareNextTurn = Callable[[PrepareNextTurnContext, AbortSignal], AgentLoopTurnUpdate | None]
ShouldStopAfterTurn = Callable[[PrepareNextTurnContext], bool]
BeforeModelCall = Callable[[BeforeModelCallContext, EventSink, AbortSignal],
                           Sequence[AgentMessage] | None]


def _listed(value: object) -> object:
    """Attrs converter: a tuple becomes a list; anything else is left for the validator."""
    return list(value) if isinstance(value, tuple) else value


def _no_signal(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, StreamOptions):
        raise TypeError(f"'{attribute.name}' must be a StreamOptions, got {value!r}")
    if value.signal is not None:
        raise ValueError(f"'{attribute.name}.signal' must be None: each run has its own "
                         "(run_agent_loop(signal=...), agent.signal)")
    if value.output_schema is not None:
        raise ValueError(f"'{attribute.name}.output_schema' must be None: a run asks for "
                         "native structured output with output_type=T, output_mode='native'")


def _output_type(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """Attrs validator: None, or a type `final_result` can give (its schema is built now)."""
    if value is not None:
        output_tool(value)  # raises TypeError naming the part it cannot describe


Approve = Callable[[ToolCall, AgentTool], "bool | str"]
"""Decides a tool call that needs approval: True allows it, False or a reason denies it."""

OutputMode = Literal["tool", "native"]
"""How a run with an `output_type` gets its answer: a `final_result` tool, or the reply's JSON."""


def check_output_mode(mode: object, output_type: object) -> None:
    """Raise `ValueError` unless `mode` is `"tool"` or `"native"` (the latter with a type)."""
    if mode not in ("tool", "native"):
        raise ValueError(f"'output_mode' must be 'tool' or 'native', got {mode!r}")
    if mode == "native" and output_type is None:
        raise ValueError("'output_mode' 'native' needs an 'output_type': the JSON Schema of "
                         "that type is what the model is asked to answer in")


def _output_mode(config: Any, _: attrs.Attribute[Any], value: object) -> None:
    check_output_mode(value, config.output_type if value == "native" else None)


@attrs.frozen(kw_only=True)
@flat_fields(StreamOptions, via="options")
class AgentLoopConfig:
    """Everything a run needs besides its context: the model, hooks and provider options.

    Hooks run on the run's thread, tools on worker threads (the run's own pool, or
    `tool_executor`); a hook that raises becomes an error message or an error tool result. An
    executor other than a `ThreadPoolExecutor` may run calls in another process: it gets a
    picklable work item (a tool or `deps` that cannot be pickled gives an error result), and
    such a tool's signal never aborts and its progress is dropped, though an abort or a
    timeout still ends the wait. `tool_timeout` (seconds) bounds every call whose tool sets no
    `timeout`; `deps` reaches every `@tool` function with a `deps` parameter. A tool call's
    idempotency key (a `@tool` parameter `idempotency_key`, or `tool_idempotency_key()`; API
    §24) is derived from `idempotency_scope` and the call's id: an `Agent` with a session sets
    it from the session's identity, so that a call keeps its key across processes; None (the
    default) draws a random scope for each run, so keys are unique but not stable. With an
    `output_type` the model answers through a `final_result` tool within `output_retries`
    retries (default 2: at most 3 attempts; API §14), every model call with `tool_choice`
    `"required"` unless one is set; `output_mode="native"` asks instead for a final reply whose
    text is JSON of the type's schema (the call's `output_schema`; API §18), for models that
    take one. `reset_tool_choice` sends the set `tool_choice` only until a turn has called
    tools: later calls of the run use the default. `limits` bounds the run's turns, calls,
    tokens and cost. `before_model_call(call, emit, signal)`, the seam of `auto_compact`, runs
    before every model call and once after an error reply: messages it returns replace the
    context (an error reply's call is then retried once). The provider options are one
    `options` with flat aliases (`max_tokens=...`); `get_api_key(provider)`, asked before every
    model call, wins over `api_key`. `approve(tool_call, tool)` decides each call that needs
    approval (API §20) on a worker of the run, bounded by its abort: `True` runs it, `False`
    or a reason (`str`) denies it; without `approve` the run ends with those calls pending.
    `fallback_models` take over a turn whose model call failed (API §24): the same turn is
    tried on each in order (`fallback_on(message)`, when set, decides which failures), and
    `circuit_breaker` (by default the process's) skips a model that keeps failing.
    `input_guardrails` and `output_guardrails` check the run's input and its final reply
    (API §26; `_guardrails`).
    `agent_name` is the name the run starts as (a `handoff` event's `from_agent`; an `Agent`
    sets its own; API §25).
    """

    model: Model = attrs.field(validator=is_model)
    convert_to_llm: ConvertToLlm = attrs.field(default=default_convert_to_llm,
                                               validator=takes("messages"))
    transform_context: TransformContext | None = attrs.field(
        default=None, validator=takes("messages", "signal", optional=True))
    get_api_key: GetApiKey | None = attrs.field(default=None,
                                                validator=takes("provider", optional=True))
    get_steering_messages: Callable[[], Sequence[AgentMessage]] | None = attrs.field(
        default=None, validator=takes(optional=True)
    )
    get_follow_up_messages: Callable[[], Sequence[AgentMessage]] | None = attrs.field(
        default=None, validator=takes(optional=True)
    )
    tool_execution: ToolExecutionMode = attrs.field(
        default=ToolExecutionMode.PARALLEL,
        converter=to_tool_execution_mode,
        validator=member_of(ToolExecutionMode),
    )
    tool_executor: Executor | None = attrs.field(default=None, validator=executor)
    tool_timeout: float | None = attrs.field(default=None, validator=seconds)
    deps: Any = None
    idempotency_scope: str | None = attrs.field(default=None,
                                                validator=optional_instance_of(str))
    agent_name: str = attrs.field(default="agent", validator=instance_of(str))
    output_type: Any = attrs.field(default=None, validator=_output_type)
    output_retries: int = attrs.field(default=2, validator=and_(strict_int, ge(0)))
    output_mode: OutputMode = attrs.field(default="tool", validator=_output_mode)
    reset_tool_choice: bool = attrs.field(default=False, validator=instance_of(bool))
    limits: UsageLimits | None = attrs.field(default=None,
                                             validator=optional_instance_of(UsageLimits))
    fallback_models: list[Model] = attrs.field(factory=list, converter=model_list,
                                               validator=check_fallbacks)
    fallback_on: FallbackOn | None = attrs.field(default=None,
                                                 validator=takes("message", optional=True))
    circuit_breaker: CircuitBreaker | None = attrs.field(
        default=None, validator=optional_instance_of(CircuitBreaker))
    input_guardrails: list[InputGuardrail] = attrs.field(
        factory=list, converter=_listed, validator=check_guardrails("input"))
    output_guardrails: list[OutputGuardrail] = attrs.field(
        factory=list, converter=_listed, validator=check_guardrails("output"))
    before_tool_call: BeforeToolCall | None = attrs.field(
        default=None, validator=takes("context", "signal", optional=True))
    approve: Approve | None = attrs.field(
        default=None, validator=takes("tool_call", "tool", optional=True))
    after_tool_call: AfterToolCall | None = attrs.field(
        default=None, validator=takes("context", "signal", optional=True))
    prepare_next_turn: PrepareNextTurn | None = attrs.field(
        default=None, validator=takes("context", "signal", optional=True))
    should_stop_after_turn: ShouldStopAfterTurn | None = attrs.field(
        default=None, validator=takes("context", optional=True))
    before_model_call: BeforeModelCall | None = attrs.field(
        default=None, validator=takes("call", "emit", "signal", optional=True))
    options: StreamOptions = attrs.field(factory=StreamOptions, validator=_no_signal)
    reasoning: ThinkingLevel | None = OPTION
    session_id: str | None = OPTION
    on_payload: OnPayload | None = OPTION
    on_response: OnResponse | None = OPTION
    transport: Transport = OPTION
    thinking_budgets: dict[str, int] | None = OPTION
    max_retry_delay_ms: int | None = OPTION
    max_retries: int | None = OPTION
    max_tokens: int | None = OPTION
    temperature: float | None = OPTION
    cache_retention: CacheRetention | None = OPTION
    headers: dict[str, str] | None = OPTION
    metadata: dict[str, Any] | None = OPTION
    timeout: float | None = OPTION
    http_session: requests.Session | None = OPTION
    http_client: HttpClientLike | None = OPTION
    max_event_bytes: int = OPTION
    tool_choice: str | None = OPTION
    api_key: str | None = OPTION

    def stream_options(
        self, signal: AbortSignal, api_key: str | None, reasoning: ThinkingLevel | None,
        tool_choice: str | None = None, output_schema: dict[str, Any] | None = None,
    ) -> StreamOptions:
        """The provider options for one model call of a run."""
        return attrs.evolve(self.options, signal=signal, api_key=api_key,
                            reasoning=None if reasoning is ThinkingLevel.OFF else reasoning,
                            tool_choice=tool_choice, output_schema=output_schema)
