"""Content blocks: the pieces that messages are made of."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from ._validators import instance_of, optional_instance_of, string

__all__ = ["ImageContent", "TextContent", "ThinkingContent", "ToolCall"]

_str = string
_opt_str = optional_instance_of(str)


@attrs.frozen
class TextContent:
    """Plain text; `text_signature` carries provider replay metadata."""

    type: ClassVar[str] = "text"
    text: str = attrs.field(validator=_str)
    text_signature: str | None = attrs.field(default=None, validator=_opt_str)


@attrs.frozen
class ThinkingContent:
    """The model's reasoning; `thinking_signature` lets the same provider verify it on replay."""

    type: ClassVar[str] = "thinking"
    thinking: str = attrs.field(validator=_str)
    thinking_signature: str | None = attrs.field(default=None, validator=_opt_str)
    redacted: bool = attrs.field(default=False, validator=instance_of(bool))


@attrs.frozen
class ImageContent:
    """An image as base64 `data` (no `data:` prefix) with its MIME type."""

    type: ClassVar[str] = "image"
    data: str = attrs.field(validator=_str)
    mime_type: str = attrs.field(validator=_str)


@attrs.frozen
class ToolCall:
    """The model asking to run tool `name` with `arguments` (always a dict).

    `arguments_error` says why the model's arguments could not be read as a JSON object (they
    were not JSON, not an object, or nested too deeply); `arguments` is then `{}`, and the call
    is answered with that error instead of running.
    """

    type: ClassVar[str] = "toolCall"
    id: str = attrs.field(validator=_str)
    name: str = attrs.field(validator=_str)
    arguments: dict[str, Any] = attrs.field(factory=dict, validator=instance_of(dict))
    thought_signature: str | None = attrs.field(default=None, validator=_opt_str)
    arguments_error: str | None = attrs.field(default=None, validator=_opt_str)


UserContent = TextContent | ImageContent
AssistantContent = TextContent | ThinkingContent | ToolCall
