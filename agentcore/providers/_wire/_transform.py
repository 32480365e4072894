"""Cross-provider handoff: make a transcript from any model valid for the target model.

Before converting messages to its wire format, every provider passes them through
`transform_messages`, which:

- drops assistant turns that errored or were aborted (they are never replayed);
- turns another model's thinking into plain text, and drops its signatures and redacted
  thinking, which only the model that wrote them can verify;
- rewrites tool-call ids the target would reject (`normalize_id`), and their results' ids;
- gives every tool call that has no result a synthetic error result, so the model never sees
  an unanswered call;
- replaces images with a note when the target model cannot read images.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from ..._core import (
    AssistantMessage,
    ImageContent,
    Message,
    Model,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

__all__ = ["NO_RESULT_TEXT", "is_same_model", "transform_messages"]

NO_RESULT_TEXT = "No result provided"
_USER_IMAGE_NOTE = "(image omitted: model does not support images)"
_TOOL_IMAGE_NOTE = "(tool image omitted: model does not support images)"

NormalizeId = Callable[[str, AssistantMessage], str]


def is_same_model(message: AssistantMessage, model: Model) -> bool:
    """Whether `message` was written by `model` (so its signatures are valid for it)."""
    return (message.provider == model.provider and message.api == model.api
            and message.model == model.id)


def _without_images(blocks: list[TextContent | ImageContent], note: str) -> list[
        TextContent | ImageContent]:
    """`blocks` with each run of images replaced by `note`; `blocks` itself when none is one.

    (Returning the same list spares the message a copy on every request: most hold no image.)
    """
    if not any(isinstance(block, ImageContent) for block in blocks):
        return blocks
    out: list[TextContent | ImageContent] = []
    for block in blocks:
        if isinstance(block, ImageContent):
            if not (out and isinstance(out[-1], TextContent) and out[-1].text == note):
                out.append(TextContent(note))
        else:
            out.append(block)
    return out


def _assistant(message: AssistantMessage, model: Model, normalize_id: NormalizeId | None,
               renamed: dict[str, str]) -> AssistantMessage:
    if is_same_model(message, model):
        return message
    content: list[TextContent | ThinkingContent | ToolCall] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            if not block.redacted and block.thinking.strip():
                content.append(TextContent(block.thinking))
        elif isinstance(block, TextContent):
            content.append(TextContent(block.text))
        else:
            call = attrs.evolve(block, thought_signature=None)
            if normalize_id is not None:
                new_id = normalize_id(block.id, message)
                if new_id != block.id:
                    renamed[block.id] = new_id
                    call = attrs.evolve(call, id=new_id)
            content.append(call)
    return attrs.evolve(message, content=content)


def transform_messages(
    messages: Sequence[Message], model: Model, normalize_id: NormalizeId | None = None
) -> list[Message]:
    """Return `messages` made safe to send to `model` (see the module docstring)."""
    images = "image" in model.input
    renamed: dict[str, str] = {}
    out: list[Message] = []
    pending: list[ToolCall] = []
    answered: set[str] = set()

    def settle() -> None:
        for call in pending:
            if call.id not in answered:
                out.append(ToolResultMessage(call.id, call.name, [TextContent(NO_RESULT_TEXT)],
                                             is_error=True))
        pending.clear()
        answered.clear()

    for message in messages:
        if isinstance(message, AssistantMessage):
            settle()
            if message.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
                continue
            message = _assistant(message, model, normalize_id, renamed)
            pending.extend(message.tool_calls)
            out.append(message)
        elif isinstance(message, ToolResultMessage):
            new_id = renamed.get(message.tool_call_id, message.tool_call_id)
            content = message.content if images else _without_images(message.content,
                                                                     _TOOL_IMAGE_NOTE)
            if new_id != message.tool_call_id or content is not message.content:
                message = attrs.evolve(message, tool_call_id=new_id, content=content)
            if any(c.id == new_id for c in pending):
                answered.add(new_id)
                out.append(message)
            # a result whose call is not pending (its turn was dropped) is dropped with it
        else:
            settle()
            if not images and isinstance(message, UserMessage) and not isinstance(
                    message.content, str):
                content = _without_images(message.content, _USER_IMAGE_NOTE)
                if content is not message.content:
                    message = attrs.evolve(message, content=content)
            out.append(message)
    settle()
    return out
