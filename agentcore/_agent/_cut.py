"""Where compaction cuts a transcript, and the token estimates it goes by.

A cut is made at a turn boundary only, so that the kept messages stand on their own: every
tool result kept has its call kept too. Tokens are estimated from characters (no tokenizer is
loaded): see `estimate_tokens`.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Iterable, Sequence

import attrs

from .._core import (
    AgentContext,
    AgentMessage,
    AssistantMessage,
    CompactionSummaryMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    default_convert_to_llm,
    type_error,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "IMAGE_TOKENS",
    "Plan",
    "context_tokens",
    "cut_points",
    "estimate_tokens",
    "find_cut",
]

CHARS_PER_TOKEN = 4
"""The estimate's ratio: English text and code average about four characters a token."""
IMAGE_TOKENS = 1_200
"""What one image counts for in an estimate, whatever its size."""


def estimate_tokens(messages: Iterable[AgentMessage]) -> int:
    """Estimate the tokens `messages` take in a model's context: characters / 4, rounded up.

    Counted per message: text, thinking, tool names and arguments (as JSON), tool results, a
    shell run's command and output, a summary's text; each image counts 1,200 tokens.
    Messages of an application's own kinds count 0 (`default_convert_to_llm` drops them). The
    estimate runs high for English prose and low for dense non-Latin text: a guide for when to
    compact, not a bill.

    Raises:
        TypeError: `messages` is not an iterable of messages (a str, a single message).
    """
    given: object = messages
    if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
        raise type_error("messages", "a list of messages", given)
    return sum(map(_tokens, messages))


def _tokens(message: AgentMessage) -> int:
    chars = 0
    images = 0
    if isinstance(message, AssistantMessage):
        for block in message.content:
            if isinstance(block, TextContent):
                chars += len(block.text)
            elif isinstance(block, ThinkingContent):
                chars += len(block.thinking)
            elif isinstance(block, ToolCall):
                chars += len(block.name) + len(json.dumps(block.arguments, default=str))
    elif isinstance(message, (UserMessage, ToolResultMessage)):
        if isinstance(message.content, str):
            chars = len(message.content)
        else:
            for item in message.content:
                if isinstance(item, TextContent):
                    chars += len(item.text)
                elif isinstance(item, ImageContent):
                    images += 1
    elif isinstance(getattr(message, "role", None), str):
        converted = default_convert_to_llm([message])  # a shell run, a summary: their text
        return sum(map(_tokens, converted))
    else:
        raise type_error("messages[...]", "a message such as UserMessage", message)
    return math.ceil(chars / CHARS_PER_TOKEN) + images * IMAGE_TOKENS


def context_tokens(context: AgentContext) -> int:
    """The estimated tokens of a whole request: system prompt, tool definitions, messages."""
    chars = len(context.system_prompt) + sum(
        len(t.name) + len(t.description) + len(json.dumps(t.parameters, default=str))
        for t in context.tools)
    return math.ceil(chars / CHARS_PER_TOKEN) + estimate_tokens(context.messages)


def cut_points(messages: Sequence[AgentMessage]) -> list[bool]:
    """Per index i: may the kept part start at message i (a turn boundary)?

    Never at a tool result, and never between a tool call and its result: a cut is refused
    while a call made before it has its result at or after it. A call no result answers
    (an interrupted one) does not hold the cut back.
    """
    results: dict[str, list[int]] = {}
    for i, message in enumerate(messages):
        if isinstance(message, ToolResultMessage):
            results.setdefault(message.tool_call_id, []).append(i)
    allowed = []
    reach = -1  # the last index a call made so far has its result at
    for i, message in enumerate(messages):
        allowed.append(i > reach and not isinstance(message, ToolResultMessage))
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                found = results.get(call.id, ())
                at = bisect.bisect_right(found, i)  # the first result after the call
                if at < len(found):
                    reach = max(reach, found[at])
    return allowed


@attrs.frozen
class Plan:
    """Where a transcript is cut: what the summary replaces, and what is kept."""

    previous: CompactionSummaryMessage | None
    older: list[AgentMessage]
    recent: list[AgentMessage]


def find_cut(messages: Sequence[AgentMessage], keep_recent_tokens: int) -> Plan | None:
    """The latest cut keeping at least `keep_recent_tokens`; None when nothing can go."""
    start = 1 if messages and isinstance(messages[0], CompactionSummaryMessage) else 0
    kept = 0
    last = None  # the latest start of the kept part that keeps enough
    for i in range(len(messages) - 1, start, -1):
        kept += _tokens(messages[i])
        if kept >= keep_recent_tokens:
            last = i
            break
    if last is None:
        return None
    allowed = cut_points(messages)
    cut = next((i for i in range(last, start, -1) if allowed[i]), None)
    if cut is None:
        return None
    previous = messages[0] if start else None
    assert previous is None or isinstance(previous, CompactionSummaryMessage)
    return Plan(previous, list(messages[start:cut]), list(messages[cut:]))
