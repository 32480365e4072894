"""A thread's transcript as AG-UI messages, for the page to show after a reload.

Ids are positions in the transcript (`m3`; a reasoning span `m3-r0`), so the same transcript
always gives the same ids. Approval decisions are not shown as messages: the results they lead
to are. Message kinds AG-UI has no place for (compaction summaries, an application's own) become
`activity` messages, so nothing silently disappears from the history.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
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
from ._events import interrupt_for, tool_result_content

__all__ = ["history"]


def history(messages: Sequence[AgentMessage], pending: Sequence[ToolCall]) -> dict[str, Any]:
    """`{"messages": [...], "interrupts": [...]}` in AG-UI's JSON shapes (camelCase)."""
    out: list[Any] = []
    for index, message in enumerate(messages):
        out.extend(_convert(message, f"m{index}"))
    return {
        "messages": [m.model_dump(mode="json", by_alias=True) for m in out],
        "interrupts": [interrupt_for(call).model_dump(mode="json", by_alias=True)
                       for call in pending],
    }


def _convert(message: AgentMessage, message_id: str) -> list[Any]:
    if isinstance(message, UserMessage):
        return [ag.UserMessage(id=message_id, content=_user_content(message))]
    if isinstance(message, AssistantMessage):
        return _assistant(message, message_id)
    if isinstance(message, ToolResultMessage):
        return [ag.ToolMessage(id=message_id, tool_call_id=message.tool_call_id,
                               content=tool_result_content(message),
                               error=message.text if message.is_error else None)]
    if isinstance(message, ToolApprovalMessage):
        return []
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
    meta = None
    if message.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
        meta = {"agentcore": {"stopReason": message.stop_reason.value,
                              "errorMessage": message.error_message}}
    out.append(ag.AssistantMessage(id=message_id, content=text or None,
                                   tool_calls=calls or None, metadata=meta))
    return out
