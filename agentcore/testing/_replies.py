"""What a scripted model answers: the kinds of reply a test may script, and tool call blocks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._core import (
    AssistantContent,
    AssistantMessage,
    Context,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
)
from ..providers.faux import faux_assistant_message, faux_tool_call

__all__ = ["Reply", "ReplyContent", "describe_reply", "to_message", "tool_call"]

ReplyContent = str | TextContent | ThinkingContent | ToolCall | Sequence[
    str | TextContent | ThinkingContent | ToolCall
]
Reply = (
    ReplyContent
    | AssistantMessage
    | Callable[[Context, StreamOptions, Model], ReplyContent | AssistantMessage]
)
"""One scripted reply: text, block(s), an `AssistantMessage`, or a function of the request."""


def tool_call(name: str, args: dict[str, Any] | None = None, *, id: str | None = None) -> ToolCall:
    """A tool call block for a scripted reply (a reply holding one stops with `toolUse`).

    The same block as `faux_tool_call`, which it calls; here the arguments may be left out
    and the id is keyword-only, so that `tool_call("add", {"a": 1})` reads as the call it is.

    Args:
        name: The tool to call.
        args: Its arguments; none by default.
        id: The call id; a unique one by default.

    Returns:
        The `ToolCall` block.
    """
    return faux_tool_call(name, {} if args is None else dict(args), id)


def to_message(reply: object) -> AssistantMessage:
    """A reply (not a function) as the `AssistantMessage` the faux provider streams.

    Raises:
        TypeError: The reply is of no supported kind.
    """
    if isinstance(reply, AssistantMessage):
        return reply
    if isinstance(reply, (str, TextContent, ThinkingContent, ToolCall)):
        return faux_assistant_message(_to_block(reply))
    if isinstance(reply, (list, tuple)):
        return faux_assistant_message([_to_block(item) for item in reply])
    raise TypeError(f"a scripted reply must be a str, content block(s), an AssistantMessage or "
                    f"a function, got {reply!r}")


def _to_block(item: object) -> AssistantContent:
    if isinstance(item, str):
        return TextContent(item)
    if isinstance(item, (TextContent, ThinkingContent, ToolCall)):
        return item
    raise TypeError(f"a scripted reply's blocks must be str, TextContent, ThinkingContent or "
                    f"ToolCall, got {item!r}")


def describe_reply(reply: object) -> str:
    """A reply in a few words, for the message listing the replies no call requested."""
    if callable(reply):
        return f"<function {getattr(reply, '__qualname__', repr(reply))}>"
    message = to_message(reply)
    parts = [repr(message.text)] if message.text else []
    parts += [f"{c.name}({c.arguments!r})" for c in message.tool_calls]
    return " + ".join(parts) or repr(message)
