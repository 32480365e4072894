"""The loop's configuration and the values its hooks receive and return."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any

import attrs
from attrs.validators import deep_iterable, in_, instance_of, is_callable, optional

from .._core import (
    AbortSignal,
    AgentContext,
    AgentMessage,
    AgentToolResult,
    AssistantMessage,
    CacheRetention,
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
    Usage,
    default_convert_to_llm,
    member_of,
    opt_budgets,
    opt_count,
    opt_headers,
    opt_number,
    secret_str,
    to_thinking_level,
    to_tool_execution_mode,
)

__all__ = [
    "AfterToolCallContext",
    "AfterToolCallResult",
    "AgentLoopConfig",
    "AgentLoopTurnUpdate",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "PrepareNextTurnContext",
]


_opt_bool = optional(instance_of(bool))


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
    reason: str | None = attrs.field(default=None, validator=optional(instance_of(str)))
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
        validator=optional(
            deep_iterable(instance_of((TextContent, ImageContent)), instance_of(list))
        ),
    )
    details: Any = None
    is_error: bool | None = attrs.field(default=None, validator=_opt_bool)
    usage: Usage | None = attrs.field(default=None, validator=optional(instance_of(Usage)))
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
                                               validator=optional(instance_of(AgentContext)))
    model: Model | None = attrs.field(default=None, validator=optional(instance_of(Model)))
    thinking_level: ThinkingLevel | None = attrs.field(
        default=None, converter=to_thinking_level, validator=optional(member_of(ThinkingLevel))
    )


_hook = optional(is_callable())


@attrs.frozen(kw_only=True)
class AgentLoopConfig:
    """Everything a run needs besides its context: the model, hooks and provider options.

    Hooks run on the run's thread (`before_tool_call`/`after_tool_call` too); a hook that
    raises becomes an error message or an error tool result, never an exception. The provider
    options (`reasoning` … `api_key`) are passed through to the stream function;
    `get_api_key(provider)` is asked before every model call and wins over `api_key`.
    """

    model: Model = attrs.field(validator=instance_of(Model))
    convert_to_llm: Callable[[list[AgentMessage]], Sequence[Message]] = attrs.field(
        default=default_convert_to_llm, validator=is_callable()
    )
    transform_context: (
        Callable[[list[AgentMessage], AbortSignal], Sequence[AgentMessage]] | None
    ) = attrs.field(default=None, validator=_hook)
    get_api_key: Callable[[str], str | None] | None = attrs.field(default=None, validator=_hook)
    get_steering_messages: Callable[[], Sequence[AgentMessage]] | None = attrs.field(
        default=None, validator=_hook
    )
    get_follow_up_messages: Callable[[], Sequence[AgentMessage]] | None = attrs.field(
        default=None, validator=_hook
    )
    tool_execution: ToolExecutionMode = attrs.field(
        default=ToolExecutionMode.PARALLEL,
        converter=to_tool_execution_mode,
        validator=member_of(ToolExecutionMode),
    )
    tool_executor: Executor | None = attrs.field(default=None,
                                                 validator=optional(instance_of(Executor)))
    before_tool_call: (
        Callable[[BeforeToolCallContext, AbortSignal], BeforeToolCallResult | None] | None
    ) = attrs.field(default=None, validator=_hook)
    after_tool_call: (
        Callable[[AfterToolCallContext, AbortSignal], AfterToolCallResult | None] | None
    ) = attrs.field(default=None, validator=_hook)
    prepare_next_turn: (
        Callable[[PrepareNextTurnContext, AbortSignal], AgentLoopTurnUpdate | None] | None
    ) = attrs.field(default=None, validator=_hook)
    should_stop_after_turn: Callable[[PrepareNextTurnContext], bool] | None = attrs.field(
        default=None, validator=_hook
    )
    reasoning: ThinkingLevel | None = attrs.field(
        default=None, converter=to_thinking_level, validator=optional(member_of(ThinkingLevel))
    )
    session_id: str | None = attrs.field(default=None, validator=optional(instance_of(str)))
    on_payload: OnPayload | None = attrs.field(default=None, validator=_hook)
    on_response: OnResponse | None = attrs.field(default=None, validator=_hook)
    transport: str = attrs.field(default="sse", validator=instance_of(str))
    thinking_budgets: dict[str, int] | None = attrs.field(default=None, validator=opt_budgets)
    max_retry_delay_ms: int | None = attrs.field(default=None, validator=opt_count)
    max_retries: int | None = attrs.field(default=None, validator=opt_count)
    max_tokens: int | None = attrs.field(default=None, validator=opt_count)
    temperature: float | None = attrs.field(default=None, validator=opt_number)
    cache_retention: CacheRetention | None = attrs.field(
        default=None, validator=optional(in_(("none", "short", "long")))
    )
    headers: dict[str, str] | None = attrs.field(default=None, validator=opt_headers,
                                                 repr=False)
    metadata: dict[str, Any] | None = attrs.field(default=None,
                                                  validator=optional(instance_of(dict)))
    timeout: float | None = attrs.field(default=None, validator=opt_number)
    api_key: str | None = attrs.field(default=None, validator=secret_str, repr=False)

    def stream_options(
        self, signal: AbortSignal, api_key: str | None, reasoning: ThinkingLevel | None
    ) -> StreamOptions:
        """The provider options for one model call of a run."""
        return StreamOptions(
            api_key=api_key,
            signal=signal,
            reasoning=None if reasoning is ThinkingLevel.OFF else reasoning,
            thinking_budgets=self.thinking_budgets,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            session_id=self.session_id,
            cache_retention=self.cache_retention,
            headers=self.headers,
            metadata=self.metadata,
            on_payload=self.on_payload,
            on_response=self.on_response,
            max_retry_delay_ms=self.max_retry_delay_ms,
            max_retries=self.max_retries,
            transport=self.transport,
            timeout=self.timeout,
        )
