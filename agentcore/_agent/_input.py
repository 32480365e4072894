"""What the `Agent` accepts: prompts and queued messages as messages, its lists and options."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from .._core import (
    AgentMessage,
    AgentTool,
    ImageContent,
    StreamOptions,
    TextContent,
    UserMessage,
)
from .._function_tools import tool

__all__ = [
    "agent_options",
    "as_message",
    "copy_list",
    "message_list",
    "prompt_messages",
    "tool_list",
]


def as_message(value: Any, name: str) -> AgentMessage:
    """A str as a `UserMessage`, a message as is; anything else is a TypeError naming `name`."""
    if isinstance(value, str):
        return UserMessage(value)
    if isinstance(getattr(value, "role", None), str):
        return value  # type: ignore[no-any-return]
    raise TypeError(f"'{name}' must be a str or a message, got {value!r}")


def prompt_messages(input: Any, images: Sequence[ImageContent] | None) -> list[AgentMessage]:
    """What `Agent.prompt` runs on: a str (with `images`), a message or a list of messages."""
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


def copy_list(_: Any, attribute: attrs.Attribute[Any], value: Any) -> Any:
    """On-setattr hook: a fresh list from a list or tuple; anything else is a TypeError."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"'{attribute.name}' must be a list, got {value!r}")
    return list(value)


def tool_list(value: Iterable[AgentTool | Callable[..., Any]]) -> list[AgentTool]:
    """A fresh list of tools; plain functions are made tools as by `@tool` (API §12).

    Anything else is left for the field's validator to refuse.
    """
    tools: list[Any] = [item if isinstance(item, AgentTool) or not inspect.isfunction(item)
                        else tool(item) for item in value]
    return tools


def message_list(value: Iterable[AgentMessage]) -> list[AgentMessage]:
    """A fresh list (typed, so `Agent(messages=[...])` type-checks for callers)."""
    return list(value)


def agent_options(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """Attrs validator of `Agent.options`: no signal (runs have their own), no reasoning."""
    if not isinstance(value, StreamOptions):
        raise TypeError(f"'{attribute.name}' must be a StreamOptions, got {value!r}")
    if value.signal is not None:
        raise ValueError(f"'{attribute.name}.signal' must be None: each run has its own "
                         "(agent.signal, run.abort())")
    if value.reasoning is not None:
        raise ValueError(f"'{attribute.name}.reasoning' must be None: set the agent's "
                         "'thinking_level' instead")
