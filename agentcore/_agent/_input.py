"""What `Agent.prompt`, `steer` and `follow_up` accept, turned into messages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._core import AgentMessage, ImageContent, TextContent, UserMessage

__all__ = ["as_message", "prompt_messages"]


def as_message(value: Any, name: str) -> AgentMessage:
    if isinstance(value, str):
        return UserMessage(value)
    if isinstance(getattr(value, "role", None), str):
        return value  # type: ignore[no-any-return]
    raise TypeError(f"'{name}' must be a str or a message, got {value!r}")


def prompt_messages(input: Any, images: Sequence[ImageContent] | None) -> list[AgentMessage]:
    if images is not None:
        if not isinstance(input, str):
            raise TypeError("'images' can only be given with a str 'input'")
        if not all(isinstance(i, ImageContent) for i in images):
            raise TypeError(f"'images' must be a list of ImageContent, got {images!r}")
    if isinstance(input, str):
        if images:
            return [UserMessage([TextContent(input), *images])]
        return [UserMessage(input)]
    if isinstance(getattr(input, "role", None), str):
        return [input]
    if isinstance(input, (list, tuple)):
        for i, message in enumerate(input):
            if not isinstance(getattr(message, "role", None), str):
                raise TypeError(f"'input[{i}]' must be a message, got {message!r}")
        return list(input)
    raise TypeError(f"'input' must be a str, a message or a list of messages, got {input!r}")
