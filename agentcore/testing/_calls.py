"""What a scripted model was asked: `ModelCall`, and the words its assertion messages use."""

from __future__ import annotations

import attrs

from .._core import (
    AssistantMessage,
    Context,
    Message,
    Model,
    StreamOptions,
    Tool,
    ToolResultMessage,
)

__all__ = ["ModelCall", "how_often", "plural"]


@attrs.frozen
class ModelCall:
    """One request the scripted model received: the model, the context and the options."""

    model: Model
    context: Context
    options: StreamOptions

    @property
    def system_prompt(self) -> str | None:
        """The system prompt sent."""
        return self.context.system_prompt

    @property
    def messages(self) -> list[Message]:
        """The messages sent, oldest first (a copy)."""
        return list(self.context.messages)

    @property
    def tools(self) -> list[Tool]:
        """The tools offered to the model (empty when none)."""
        return list(self.context.tools or ())

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools offered."""
        return [t.name for t in self.context.tools or ()]

    @property
    def tool_results(self) -> list[ToolResultMessage]:
        """The tool results among the messages sent, oldest first."""
        return [m for m in self.context.messages if isinstance(m, ToolResultMessage)]

    def summary(self) -> str:
        """A one-line description, used in assertion messages: the last message sent."""
        if not self.context.messages:
            return "no messages"
        last = self.context.messages[-1]
        if isinstance(last, AssistantMessage):
            text = last.text
        elif isinstance(last, ToolResultMessage):
            text = f"{last.tool_name}: {last.text}"
        else:
            text = last.text
        count = plural(len(self.context.messages), "message")
        return f"{count}, last {last.role}: {_shorten(text)!r}"


def how_often(n: int) -> str:
    """`once`, or `n times`."""
    return "once" if n == 1 else f"{n} times"


def plural(count: int, word: str, words: str | None = None) -> str:
    """`1 reply`, `2 replies`: the count and the word, in the plural (`words`) unless 1."""
    return f"{count} {word if count == 1 else words or word + 's'}"


def _shorten(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
