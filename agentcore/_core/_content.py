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

    @classmethod
    def unchecked(cls, text: str, text_signature: str | None = None) -> TextContent:
        """A `TextContent` built without running its validators, for a streaming hot path.

        Providers rebuild the block on every text delta; only call this with a `str` and a
        `str` or None, which is what the validators would check.
        """
        block = object.__new__(cls)
        object.__setattr__(block, "text", text)
        object.__setattr__(block, "text_signature", text_signature)
        return block


@attrs.frozen
class ThinkingContent:
    """The model's reasoning; `thinking_signature` lets the same provider verify it on replay."""

    type: ClassVar[str] = "thinking"
    thinking: str = attrs.field(validator=_str)
    thinking_signature: str | None = attrs.field(default=None, validator=_opt_str)
    redacted: bool = attrs.field(default=False, validator=instance_of(bool))

    @classmethod
    def unchecked(cls, thinking: str, thinking_signature: str | None = None,
                  redacted: bool = False) -> ThinkingContent:
        """A `ThinkingContent` built without running its validators, for a streaming hot path.

        Providers rebuild the block on every thinking delta; only call this with a `str`, a
        `str` or None and a `bool`, which is what the validators would check.
        """
        block = object.__new__(cls)
        object.__setattr__(block, "thinking", thinking)
        object.__setattr__(block, "thinking_signature", thinking_signature)
        object.__setattr__(block, "redacted", redacted)
        return block


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

    @classmethod
    def unchecked(cls, id: str, name: str, arguments: dict[str, Any],
                  thought_signature: str | None = None,
                  arguments_error: str | None = None) -> ToolCall:
        """A `ToolCall` built without running its validators, for a streaming hot path.

        Providers rebuild the call as its arguments stream in; only call this with a `str`, a
        `str`, a `dict` and two `str`-or-None, which is what the validators would check.
        """
        call = object.__new__(cls)
        object.__setattr__(call, "id", id)
        object.__setattr__(call, "name", name)
        object.__setattr__(call, "arguments", arguments)
        object.__setattr__(call, "thought_signature", thought_signature)
        object.__setattr__(call, "arguments_error", arguments_error)
        return call


UserContent = TextContent | ImageContent
AssistantContent = TextContent | ThinkingContent | ToolCall
