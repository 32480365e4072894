"""A thread's transcript as AG-UI messages, for the page to show after a reload.

Ids are positions in the transcript (`m3`; a reasoning span `m3-r0`), so the same transcript
always gives the same ids, the ones the run's stream gave (`message_id`). Approval decisions
are `activity` messages of type `agentcore.tool_approval` (what the stream's `CUSTOM` event of
that name carried), and so are the message kinds AG-UI has no place for (compaction summaries,
an application's own), so nothing silently disappears from the history.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import ag_ui.core as ag

from .._core import (
    AgentMessage,
    AssistantMessage,
    CompactionSummaryMessage,
    ImageContent,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolApprovalMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ._events import DECISIONS_EVENT, decisions, interrupt_for, message_id, tool_result_content

__all__ = ["history"]


def history(messages: Sequence[AgentMessage], pending: Sequence[ToolCall],
            durations: Mapping[str, float] | None = None) -> dict[str, Any]:
    """`{"messages": [...], "interrupts": [...]}` in AG-UI's JSON shapes (camelCase).

    A tool message's `metadata.agentcore` is what its `TOOL_CALL_RESULT` carried: `isError`,
    and `durationMs` when `durations` (call id -> ms, as the app's streams measured them) has
    it; an assistant message's has its `usage` and `model` (and `stopReason`, `errorMessage`
    for a failed or stopped reply), for the token lines a page shows.
    """
    out: list[Any] = []
    for index, message in enumerate(messages):
        out.extend(_convert(message, message_id(index), durations or {}))
    return {
        "messages": [m.model_dump(mode="json", by_alias=True) for m in out],
        "interrupts": [interrupt_for(call).model_dump(mode="json", by_alias=True)
                       for call in pending],
    }


def _convert(message: AgentMessage, message_id: str,
             durations: Mapping[str, float]) -> list[Any]:
    if isinstance(message, UserMessage):
        return [ag.UserMessage(id=message_id, content=_user_content(message))]
    if isinstance(message, AssistantMessage):
        return _assistant(message, message_id)
    if isinstance(message, ToolResultMessage):
        meta: dict[str, Any] = {"isError": message.is_error}
        if message.tool_call_id in durations:
            meta["durationMs"] = durations[message.tool_call_id]
        return [ag.ToolMessage(id=message_id, tool_call_id=message.tool_call_id,
                               content=tool_result_content(message),
                               error=message.text if message.is_error else None,
                               metadata={"agentcore": meta})]
    if isinstance(message, ToolApprovalMessage):
        return [ag.ActivityMessage(id=message_id, activity_type=DECISIONS_EVENT,
                                   content=decisions(message, message_id))]
    if isinstance(message, CompactionSummaryMessage):
        return [ag.ActivityMessage(id=message_id, activity_type="agentcore.compaction_summary",
                                   content={"summary": message.summary})]
    return [ag.ActivityMessage(id=message_id, activity_type=f"agentcore.{message.role}",
                               content={})]


def _user_content(message: UserMessage) -> str | list[Any]:
    if isinstance(message.content, str):
        return message.content
    return [ag.ImagePart(source=ag.DataSource(value=b.data, mime_type=b.mime_type))
            if isinstance(b, ImageContent) else ag.TextPart(text=b.text)
            for b in message.content]


def _assistant(message: AssistantMessage, message_id: str) -> list[Any]:
    out: list[Any] = [ag.ReasoningMessage(id=f"{message_id}-r{i}", content=block.thinking)
                      for i, block in enumerate(message.content)
                      if isinstance(block, ThinkingContent) and block.thinking
                      and not block.redacted]
    text = "".join(b.text for b in message.content if isinstance(b, TextContent))
    calls = [ag.ToolCall(id=call.id, function=ag.FunctionCall(
                 name=call.name, arguments=json.dumps(call.arguments, ensure_ascii=False)))
             for call in message.tool_calls]
    usage = message.usage
    meta: dict[str, Any] = {"model": f"{message.provider}/{message.model}", "usage": {
        "inputTokens": usage.input + usage.cache_read + usage.cache_write,
        "outputTokens": usage.output, "cachedInputTokens": usage.cache_read}}
    if message.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
        meta |= {"stopReason": message.stop_reason.value, "errorMessage": message.error_message}
    out.append(ag.AssistantMessage(id=message_id, content=text or None,
                                   tool_calls=calls or None, metadata={"agentcore": meta}))
    return out
