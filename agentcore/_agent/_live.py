"""What an `Agent`'s runs change as their events arrive, and the snapshot users read."""

from __future__ import annotations

import attrs

from .._core import (
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AgentTool,
    AssistantMessage,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    Model,
    ModelFallbackEvent,
    ThinkingLevel,
    ToolCall,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    TurnEndEvent,
)

__all__ = ["AgentState", "LiveState"]


@attrs.frozen
class AgentState:
    """A consistent snapshot of an `Agent`; its lists are copies.

    `pending_approvals` are the tool calls at the end of the transcript that wait for a
    person's decision (API §20): `agent.continue_(approvals=...)` decides them.
    """

    system_prompt: str
    model: Model
    thinking_level: ThinkingLevel
    tools: list[AgentTool]
    messages: list[AgentMessage]
    is_streaming: bool
    streaming_message: AgentMessage | None
    pending_tool_calls: frozenset[str]
    error_message: str | None
    pending_approvals: list[ToolCall] = attrs.field(factory=list)  # waiting for a person (§20)


@attrs.define
class LiveState:
    """The part of an agent's state that follows its runs' events; guarded by the agent's lock.

    `apply` is the reducer: it returns the message a `message_start` brings (for the queues
    to recognise) and the message a `message_end` completes (for the transcript).
    """

    is_streaming: bool = False
    streaming_message: AgentMessage | None = None
    pending: frozenset[str] = frozenset()
    error_message: str | None = None

    def apply(self, event: AgentEvent) -> tuple[AgentMessage | None, AgentMessage | None]:
        """Update for `event`; return (message started, message ended), either may be None."""
        if isinstance(event, MessageStartEvent):
            self.streaming_message = event.message
            return event.message, None
        if isinstance(event, MessageUpdateEvent):
            self.streaming_message = event.message
        elif isinstance(event, MessageEndEvent):
            self.streaming_message = None
            return None, event.message
        elif isinstance(event, ToolExecutionStartEvent):
            self.pending = self.pending | {event.tool_call_id}
        elif isinstance(event, ToolExecutionEndEvent):
            self.pending = self.pending - {event.tool_call_id}
        elif isinstance(event, TurnEndEvent):
            message = event.message
            if isinstance(message, AssistantMessage) and message.error_message:
                self.error_message = message.error_message
        elif isinstance(event, (AgentEndEvent, ModelFallbackEvent)):  # a fallback drops it
            self.streaming_message = None
        return None, None

    def begin(self) -> None:
        """A run starts: streaming, nothing in flight, no error yet."""
        self.is_streaming, self.streaming_message, self.error_message = True, None, None

    def end(self) -> None:
        """A run has ended: nothing streams, no call is pending (the error stays)."""
        self.is_streaming, self.streaming_message, self.pending = False, None, frozenset()

    def snapshot_message(self) -> AgentMessage | None:
        """The message streaming now, the live partial frozen into a copy."""
        streaming = self.streaming_message
        if isinstance(streaming, AssistantMessage):
            return attrs.evolve(streaming, content=list(streaming.content))
        return streaming
