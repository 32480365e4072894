"""What the `Agent` accepts: prompts and queued messages as messages, its lists."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from .._core import (
    AgentMessage,
    AgentTool,
    ImageContent,
    TextContent,
    UserMessage,
    check_messages,
    dict_message_hint,
    list_of,
    tool_hint,
    type_error,
)
from .._function_tools import tool

__all__ = [
    "agent_name",
    "agent_tools",
    "as_message",
    "copy_list",
    "message_list",
    "prompt_messages",
    "tool_list",
]


_TOOLS = "a list of AgentTool or functions"
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def agent_name(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Attrs validator of `Agent.name`: letters, digits, `_` and `-` (tools are named by it)."""
    if not isinstance(value, str):
        raise type_error(attribute.name, "a str", value)
    if not _NAME.fullmatch(value):
        raise ValueError(f"'{attribute.name}' must be 1 to 64 letters, digits, '_' or '-' (it "
                         f"names the agent's tool and events), got {value!r}")


def as_message(value: Any, name: str) -> AgentMessage:
    """A str as a `UserMessage`, a message as is; anything else is a TypeError naming `name`."""
    if isinstance(value, str):
        return UserMessage(value)
    if isinstance(getattr(value, "role", None), str):
        return value  # type: ignore[no-any-return]
    raise type_error(name, "a str or a message", value, dict_message_hint(value, many=False))


def prompt_messages(input: Any, images: Sequence[ImageContent] | None) -> list[AgentMessage]:
    """What `Agent.prompt` runs on: a str (with `images`), a message or a list of messages."""
    if images is not None:
        if not isinstance(input, str):
            raise TypeError("'images' can only be given with a str 'input'")
        for i, image in enumerate(images):
            if not isinstance(image, ImageContent):
                raise type_error(f"images[{i}]", "an ImageContent", image)
    if isinstance(input, str):
        if images:
            return [UserMessage([TextContent(input), *images])]
        return [UserMessage(input)]
    if isinstance(getattr(input, "role", None), str):
        return [input]
    if isinstance(input, (list, tuple)):
        return check_messages("input", input)
    raise type_error("input", "a str, a message or a list of messages", input,
                     dict_message_hint(input, many=False))


def copy_list(_: Any, attribute: attrs.Attribute[Any], value: Any) -> Any:
    """On-setattr hook: a fresh list from a list or tuple; anything else is a TypeError."""
    if not isinstance(value, (list, tuple)):
        raise type_error(attribute.name, "a list", value)
    return list(value)


def _is_list_like(value: object) -> bool:
    return isinstance(value, Iterable) and not isinstance(value, (str, bytes, Mapping))


def tool_list(value: Iterable[AgentTool | Callable[..., Any]]) -> list[AgentTool]:
    """A fresh list of tools; plain functions are made tools as by `@tool` (API §12).

    Anything else is left for the field's validator (`agent_tools`) to refuse.
    """
    if not _is_list_like(value):
        hint = "give a list, tools=[...]" if callable(value) else _agent_tool_hint(value)
        raise type_error("tools", _TOOLS, value, hint)
    tools: list[Any] = [item if isinstance(item, AgentTool) or not inspect.isfunction(item)
                        else tool(item) for item in value]
    return tools


def message_list(value: Iterable[AgentMessage]) -> list[AgentMessage]:
    """A fresh list (typed, so `Agent(messages=[...])` type-checks for callers)."""
    if not _is_list_like(value):
        raise type_error("messages", "a list of messages", value,
                         dict_message_hint(value, many=False))
    return list(value)


def _agent_tool_hint(value: object) -> str | None:
    if isinstance(value, str):
        return "pass the tool itself (a function, or one made with @agentcore.tool), not its name"
    return tool_hint(value)


agent_tools = list_of(AgentTool, expected="an AgentTool or a function",
                      expected_list=_TOOLS, hint=_agent_tool_hint)
"""Attrs validator of `Agent.tools`, after `tool_list` has made plain functions tools."""

