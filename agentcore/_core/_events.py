"""Events: what a model stream yields and what a run emits.

Every event is a frozen value with a class-level `type` string, its tag on the wire. In
assistant-message events, `partial` is the live reply being built: one message per stream whose
`content` list grows as events arrive (so keeping every event costs memory linear in the reply,
not quadratic). Copy it, `attrs.evolve(p, content=list(p.content))`, to keep a snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

import attrs

from ._content import ToolCall
from ._enums import StopReason
from ._messages import AgentMessage, AssistantMessage, CompactionSummaryMessage, ToolResultMessage
from ._model import Model
from ._tools import AgentToolResult
from ._validators import one_of

__all__ = [
    "AgentEndEvent",
    "AgentEvent",
    "AgentStartEvent",
    "AssistantMessageEvent",
    "CompactionEndEvent",
    "CompactionStartEvent",
    "DoneEvent",
    "ErrorEvent",
    "EventSink",
    "GuardrailTrippedEvent",
    "HandoffEvent",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "ModelFallbackEvent",
    "StartEvent",
    "SubagentEvent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingStartEvent",
    "ToolApprovalRequestEvent",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "TurnEndEvent",
    "TurnStartEvent",
]


@attrs.frozen
class StartEvent:
    """The reply has begun; the first event of a stream that got a response."""

    type: ClassVar[str] = "start"
    partial: AssistantMessage


@attrs.frozen
class TextStartEvent:
    """A text block opened at `content_index`."""

    type: ClassVar[str] = "text_start"
    content_index: int
    partial: AssistantMessage


@attrs.frozen
class TextDeltaEvent:
    """More text for the block at `content_index`."""

    type: ClassVar[str] = "text_delta"
    content_index: int
    delta: str
    partial: AssistantMessage


@attrs.frozen
class TextEndEvent:
    """The text block at `content_index` is complete; `content` is its whole text."""

    type: ClassVar[str] = "text_end"
    content_index: int
    content: str
    partial: AssistantMessage


@attrs.frozen
class ThinkingStartEvent:
    """A thinking block opened at `content_index`."""

    type: ClassVar[str] = "thinking_start"
    content_index: int
    partial: AssistantMessage


@attrs.frozen
class ThinkingDeltaEvent:
    """More thinking for the block at `content_index`."""

    type: ClassVar[str] = "thinking_delta"
    content_index: int
    delta: str
    partial: AssistantMessage


@attrs.frozen
class ThinkingEndEvent:
    """The thinking block at `content_index` is complete; `content` is its whole text."""

    type: ClassVar[str] = "thinking_end"
    content_index: int
    content: str
    partial: AssistantMessage


@attrs.frozen
class ToolCallStartEvent:
    """A tool call opened at `content_index`."""

    type: ClassVar[str] = "toolcall_start"
    content_index: int
    partial: AssistantMessage


@attrs.frozen
class ToolCallDeltaEvent:
    """More argument JSON for the tool call at `content_index` (partial arguments are parsed)."""

    type: ClassVar[str] = "toolcall_delta"
    content_index: int
    delta: str
    partial: AssistantMessage


@attrs.frozen
class ToolCallEndEvent:
    """The tool call at `content_index` is complete."""

    type: ClassVar[str] = "toolcall_end"
    content_index: int
    tool_call: ToolCall
    partial: AssistantMessage


def _stop_reason(value: Any) -> StopReason:
    """`StopReason(value)`, a member passed straight through (`EnumMeta.__call__` is slow)."""
    return value if type(value) is StopReason else StopReason(value)


@attrs.frozen
class DoneEvent:
    """The reply ended normally (`stop`, `length` or `toolUse`); `message` is final."""

    type: ClassVar[str] = "done"
    reason: Literal[StopReason.STOP, StopReason.LENGTH, StopReason.TOOL_USE] = attrs.field(
        converter=_stop_reason
    )
    message: AssistantMessage


@attrs.frozen
class ErrorEvent:
    """The reply failed or was aborted; `error` is the final message with `error_message` set."""

    type: ClassVar[str] = "error"
    reason: Literal[StopReason.ERROR, StopReason.ABORTED] = attrs.field(converter=_stop_reason)
    error: AssistantMessage


AssistantMessageEvent = (
    StartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ThinkingStartEvent
    | ThinkingDeltaEvent
    | ThinkingEndEvent
    | ToolCallStartEvent
    | ToolCallDeltaEvent
    | ToolCallEndEvent
    | DoneEvent
    | ErrorEvent
)
"""Everything a stream function yields."""


@attrs.frozen
class AgentStartEvent:
    """A run has started."""

    type: ClassVar[str] = "agent_start"


@attrs.frozen
class AgentEndEvent:
    """A run has ended; `messages` are the ones it added."""

    type: ClassVar[str] = "agent_end"
    messages: list[AgentMessage]


@attrs.frozen
class TurnStartEvent:
    """A turn (one model reply and its tool calls) has started."""

    type: ClassVar[str] = "turn_start"


@attrs.frozen
class TurnEndEvent:
    """A turn has ended: its reply and its tool results in source order."""

    type: ClassVar[str] = "turn_end"
    message: AgentMessage
    tool_results: list[ToolResultMessage]


@attrs.frozen
class MessageStartEvent:
    """A message enters the transcript (for the assistant: its reply has started)."""

    type: ClassVar[str] = "message_start"
    message: AgentMessage


@attrs.frozen
class MessageUpdateEvent:
    """The assistant's reply grew; `assistant_message_event` is the provider event."""

    type: ClassVar[str] = "message_update"
    message: AssistantMessage
    assistant_message_event: AssistantMessageEvent


@attrs.frozen
class MessageEndEvent:
    """A message is complete and final."""

    type: ClassVar[str] = "message_end"
    message: AgentMessage


@attrs.frozen
class ToolExecutionStartEvent:
    """A tool call is being prepared; `args` are the model's raw arguments."""

    type: ClassVar[str] = "tool_execution_start"
    tool_call_id: str
    tool_name: str
    args: Any


@attrs.frozen
class ToolExecutionUpdateEvent:
    """A running tool reported progress."""

    type: ClassVar[str] = "tool_execution_update"
    tool_call_id: str
    tool_name: str
    args: Any
    partial_result: AgentToolResult


@attrs.frozen
class ToolExecutionEndEvent:
    """A tool call is finished, successfully or not."""

    type: ClassVar[str] = "tool_execution_end"
    tool_call_id: str
    tool_name: str
    result: AgentToolResult
    is_error: bool


@attrs.frozen
class ToolApprovalRequestEvent:
    """A tool call waits for a person's approval before it may run (API §20).

    `args` are the model's raw arguments. Without an `approve` callback the run ends after
    these events; the call stays pending until `continue_(approvals=...)` decides it.
    """

    type: ClassVar[str] = "tool_approval_request"
    tool_call_id: str
    tool_name: str
    args: Any


@attrs.frozen
class CompactionStartEvent:
    """The run is compacting its transcript before its next model call.

    `reason` is `"threshold"` (the context would exceed the model's context window less the
    reserve) or `"overflow"` (the model refused the context as too long). A
    `compaction_start` without its `compaction_end` means the compaction failed: the run
    then ends with an error message saying why, its transcript unchanged.
    """

    type: ClassVar[str] = "compaction_start"
    reason: Literal["threshold", "overflow"] = attrs.field(validator=one_of("threshold",
                                                                            "overflow"))


@attrs.frozen
class CompactionEndEvent:
    """The transcript was compacted: `summary` now stands for its older part.

    `tokens_before` and `tokens_after` are the transcript's estimated tokens
    (`agentcore.compaction.estimate_tokens`) before and after.
    """

    type: ClassVar[str] = "compaction_end"
    summary: CompactionSummaryMessage
    tokens_before: int
    tokens_after: int


@attrs.frozen
class ModelFallbackEvent:
    """A model call failed, or was skipped, and the same turn is tried on the next model (§24).

    `failed` is the error reply of the model given up (its `model` and `provider` say which),
    or None when its circuit was open and no request was made; `model` is the one tried next;
    `reason` says why, in words. When `failed` had streamed output, its `message_start` and
    updates were sent but no `message_end` follows: that partial reply is not part of the
    transcript, and listeners should drop what they showed of it. Its `usage` still counts
    in the run's.
    """

    type: ClassVar[str] = "model_fallback"
    failed: AssistantMessage | None
    model: Model
    reason: str


@attrs.frozen
class SubagentEvent:
    """An event of a child agent's run, in its parent's run (API §25).

    `tool_call_id` is the parent's call that runs the child (`agent.as_tool()`); `agent_name`
    the child's name; `path` the names of the agents from the outermost run down to that
    child; `event` the child's own event, itself a `SubagentEvent` for a grandchild's.
    """

    type: ClassVar[str] = "subagent"
    tool_call_id: str
    agent_name: str
    path: list[str]
    event: AgentEvent

    def innermost(self) -> SubagentEvent:
        """The `SubagentEvent` of the agent whose own event this is (a grandchild's, say)."""
        inner = self
        while isinstance(inner.event, SubagentEvent):
            inner = inner.event
        return inner


@attrs.frozen
class HandoffEvent:
    """The run goes on with another agent: its model, system prompt and tools (API §25)."""

    type: ClassVar[str] = "handoff"
    from_agent: str
    to_agent: str


@attrs.frozen
class GuardrailTrippedEvent:
    """A guardrail tripped (API §26): `kind` `"input"` or `"output"`, its `name` and `reason`.

    `retry` says the reason goes back to the model (a `retry_guardrail` within the run's
    `output_retries`); otherwise the run ends with `guardrail tripped: <name>: <reason>`.
    """

    type: ClassVar[str] = "guardrail_tripped"
    kind: Literal["input", "output"] = attrs.field(validator=one_of("input", "output"))
    name: str
    reason: str
    retry: bool = False


AgentEvent = (
    AgentStartEvent
    | AgentEndEvent
    | TurnStartEvent
    | TurnEndEvent
    | MessageStartEvent
    | MessageUpdateEvent
    | MessageEndEvent
    | ToolExecutionStartEvent
    | ToolExecutionUpdateEvent
    | ToolExecutionEndEvent
    | ToolApprovalRequestEvent
    | CompactionStartEvent
    | CompactionEndEvent
    | ModelFallbackEvent
    | SubagentEvent
    | HandoffEvent
    | GuardrailTrippedEvent
)
"""Everything a run emits."""

EventSink = Callable[[AgentEvent], None]
"""A callable that receives a run's events, one at a time, on the run's thread."""
